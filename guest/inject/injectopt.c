/* SPDX-License-Identifier: MIT */
/*
 * injectopt: pure parser of the `vnoise-guest inject` command line into struct inject_params. A small
 * hand-written loop (no getopt, so no global state and no messages of its own) walks argv; numbers are
 * parsed by two strict helpers: whole numbers (digits only, overflow and range checked) and fixed-point
 * decimals scaled to an integer (for --level in units of 10^-7 % and --duration in ns), so no float
 * rounding enters the ground truth.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "inject/injectopt.h"
#include "util/parse.h"
#include "util/log.h"

#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_USEC 1000ull
#define LEVEL_FRAC_DIGITS 7 /* PCT x 10^7 = busy ns per second */
#define SECONDS_FRAC_DIGITS 9

/* Strict unsigned decimal (shared parse_u64) no larger than max. 0 or -EINVAL/-ERANGE. */
static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v;
	int r = parse_u64(s, &v);

	if (r)
		return r;
	if (v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/*
 * Strict fixed-point decimal "D+[.D+]" scaled by 10^frac: "0.05" with frac 7 gives 500000. More fractional
 * digits than frac is -EINVAL (the value is not representable); overflow of u64 is -ERANGE.
 */
static int parse_fixed(const char *s, unsigned int frac, uint64_t *out)
{
	uint64_t v = 0;
	unsigned int nint = 0, nfrac = 0;
	int in_frac = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d;

		if (*s == '.' && !in_frac) {
			if (!nint)
				return -EINVAL;
			in_frac = 1;
			continue;
		}
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (in_frac && ++nfrac > frac)
			return -EINVAL;
		if (!in_frac)
			nint++;
		d = (unsigned int)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (!nint || (in_frac && !nfrac))
		return -EINVAL;
	for (; nfrac < frac; nfrac++) {
		if (v > UINT64_MAX / 10)
			return -ERANGE;
		v *= 10;
	}
	*out = v;
	return 0;
}

enum opt_id {
	OPT_CPU,
	OPT_LEVEL,
	OPT_SPIKE,
	OPT_EVERY,
	OPT_FIFO,
	OPT_DURATION,
	OPT_COMM,
	OPT_QUIET,
	OPT_HELP,
	OPT_MAX,
};

static const struct {
	const char *name;
	int has_arg;
} opt_table[OPT_MAX] = {
	[OPT_CPU] = { "--cpu", 1 },	[OPT_LEVEL] = { "--level", 1 },
	[OPT_SPIKE] = { "--spike", 1 }, [OPT_EVERY] = { "--every", 1 },
	[OPT_FIFO] = { "--fifo", 1 },	[OPT_DURATION] = { "--duration", 1 },
	[OPT_COMM] = { "--comm", 1 },	[OPT_QUIET] = { "--quiet", 0 },
	[OPT_HELP] = { "--help", 0 },
};

/* Find the option named by arg ("--x" or "--x=value"); *val points after '=' or is NULL. -1 if unknown. */
static int opt_lookup(const char *arg, const char **val)
{
	size_t n = strcspn(arg, "=");
	int i;

	*val = arg[n] == '=' ? arg + n + 1 : NULL;
	if (!strcmp(arg, "-h"))
		return OPT_HELP;
	if (!strcmp(arg, "-q"))
		return OPT_QUIET;
	for (i = 0; i < OPT_MAX; i++) {
		if (strlen(opt_table[i].name) == n && !strncmp(arg, opt_table[i].name, n))
			return i;
	}
	return -1;
}

static const char *num_problem(int r)
{
	return r == -ERANGE ? "out of range" : "not a valid number";
}

int injectopt_parse(int argc, char **argv, struct inject_params *p, char *err, size_t errlen)
{
	const char *vals[OPT_MAX] = { NULL };
	int seen[OPT_MAX] = { 0 };
	uint64_t v, spike_us = 0, every_ms = 0;
	int i, r, err_ret = -EINVAL;

	memset(p, 0, sizeof(*p));
	if (err && errlen)
		err[0] = '\0';

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *val;
		int id = opt_lookup(arg, &val);

		if (id < 0) {
			log_reason(err, errlen, "%s '%s'",
				   arg[0] == '-' ? "unknown option" : "unexpected argument", arg);
			goto out;
		}
		if (seen[id]) {
			log_reason(err, errlen, "option %s given more than once",
				   opt_table[id].name);
			goto out;
		}
		seen[id] = 1;
		if (!opt_table[id].has_arg) {
			if (val) {
				log_reason(err, errlen, "option %s takes no value",
					   opt_table[id].name);
				goto out;
			}
			continue;
		}
		if (!val) {
			if (i + 1 >= argc) {
				log_reason(err, errlen, "option %s needs a value",
					   opt_table[id].name);
				goto out;
			}
			val = argv[++i];
		}
		vals[id] = val;
	}

	if (seen[OPT_HELP]) {
		p->help = 1;
		return 0;
	}
	p->quiet = seen[OPT_QUIET];

	if (!vals[OPT_CPU]) {
		log_reason(err, errlen, "missing --cpu N");
		goto out;
	}
	r = parse_uint(vals[OPT_CPU], INJECT_CPU_MAX, &v);
	if (r) {
		log_reason(err, errlen, "--cpu '%s': %s", vals[OPT_CPU], num_problem(r));
		goto out;
	}
	p->cpu = (unsigned int)v;

	if (vals[OPT_LEVEL] && (vals[OPT_SPIKE] || vals[OPT_EVERY])) {
		log_reason(err, errlen, "--level and --spike/--every are exclusive");
		goto out;
	}
	if (vals[OPT_LEVEL]) {
		r = parse_fixed(vals[OPT_LEVEL], LEVEL_FRAC_DIGITS, &v);
		if (r) {
			log_reason(err, errlen, "--level '%s': %s (percent, e.g. 30 or 0.05)",
				   vals[OPT_LEVEL], num_problem(r));
			goto out;
		}
		if (v == 0 || v > NSEC_PER_SEC) {
			log_reason(err, errlen, "--level '%s': must be in (0, 100]",
				   vals[OPT_LEVEL]);
			goto out;
		}
		p->mode = INJECT_MODE_LEVEL;
		p->busy_ns = v;
		p->period_ns = NSEC_PER_SEC;
	} else if (vals[OPT_SPIKE] || vals[OPT_EVERY]) {
		if (!vals[OPT_SPIKE] || !vals[OPT_EVERY]) {
			log_reason(err, errlen, "--spike US and --every MS go together");
			goto out;
		}
		r = parse_uint(vals[OPT_EVERY], INJECT_EVERY_MAX_MS, &every_ms);
		if (r || every_ms == 0) {
			log_reason(err, errlen, "--every '%s': %s (milliseconds, 1..%d)",
				   vals[OPT_EVERY], r ? num_problem(r) : "must be > 0",
				   INJECT_EVERY_MAX_MS);
			goto out;
		}
		r = parse_uint(vals[OPT_SPIKE], every_ms * 1000, &spike_us);
		if (r == -ERANGE || (!r && spike_us == every_ms * 1000)) {
			log_reason(err, errlen,
				   "--spike '%s': must be shorter than --every (%llu ms)",
				   vals[OPT_SPIKE], (unsigned long long)every_ms);
			goto out;
		}
		if (r || spike_us == 0) {
			log_reason(err, errlen, "--spike '%s': %s (microseconds, > 0)",
				   vals[OPT_SPIKE], r ? num_problem(r) : "must be > 0");
			goto out;
		}
		p->mode = INJECT_MODE_SPIKE;
		p->busy_ns = spike_us * NSEC_PER_USEC;
		p->period_ns = every_ms * NSEC_PER_MSEC;
	} else {
		log_reason(err, errlen, "one of --level PCT or --spike US --every MS is required");
		goto out;
	}

	if (vals[OPT_FIFO]) {
		r = parse_uint(vals[OPT_FIFO], 99, &v);
		if (r || v < 1) {
			log_reason(err, errlen, "--fifo '%s': priority must be 1..99",
				   vals[OPT_FIFO]);
			goto out;
		}
		p->fifo_prio = (int)v;
	}

	if (vals[OPT_DURATION]) {
		r = parse_fixed(vals[OPT_DURATION], SECONDS_FRAC_DIGITS, &v);
		if (r || v == 0) {
			log_reason(err, errlen, "--duration '%s': %s (seconds, > 0)",
				   vals[OPT_DURATION], r ? num_problem(r) : "must be > 0");
			goto out;
		}
		p->duration_ns = v;
	}

	if (vals[OPT_COMM]) {
		size_t n = strlen(vals[OPT_COMM]);

		if (n == 0 || n > INJECT_COMM_MAX) {
			log_reason(err, errlen, "--comm '%s': name must be 1..%d characters",
				   vals[OPT_COMM], INJECT_COMM_MAX);
			goto out;
		}
		memcpy(p->comm, vals[OPT_COMM], n + 1);
	} else {
		memcpy(p->comm, INJECT_DEFAULT_COMM, sizeof(INJECT_DEFAULT_COMM));
	}
	err_ret = 0;
out:
	return err_ret;
}

void injectopt_describe(const struct inject_params *p, char *buf, size_t buflen)
{
	if (!buflen)
		return;
	if (p->mode == INJECT_MODE_LEVEL) {
		/* busy_ns is PCT x 10^7: print the integer part and the significant decimals. */
		uint64_t ip = p->busy_ns / 10000000ull, fp = p->busy_ns % 10000000ull;
		char frac[16] = "";

		if (fp) {
			int n = snprintf(frac, sizeof(frac), ".%07llu", (unsigned long long)fp);

			while (n > 1 && frac[n - 1] == '0')
				frac[--n] = '\0';
		}
		snprintf(buf, buflen, "level %llu%s%%", (unsigned long long)ip, frac);
	} else if (p->mode == INJECT_MODE_SPIKE) {
		snprintf(buf, buflen, "spike %lluus/%llums",
			 (unsigned long long)(p->busy_ns / NSEC_PER_USEC),
			 (unsigned long long)(p->period_ns / NSEC_PER_MSEC));
	} else {
		snprintf(buf, buflen, "none");
	}
}

const char *injectopt_usage(void)
{
	return "usage: vnoise-guest inject --cpu N (--level PCT | --spike US --every MS) "
	       "[options]\n"
	       "  --cpu N          pin the injector to CPU N (required)\n"
	       "  --level PCT      duty cycle: PCT% of thread CPU time in every second, 0 < PCT <= "
	       "100\n"
	       "  --spike US       busy US microseconds of thread CPU time ...\n"
	       "  --every MS       ... every MS milliseconds (absolute times, no drift)\n"
	       "  --fifo PRIO      run SCHED_FIFO at priority 1..99 (default SCHED_OTHER)\n"
	       "  --duration S     stop after S seconds (default: until SIGINT/SIGTERM)\n"
	       "  --comm NAME      thread name, up to 15 characters (default " INJECT_DEFAULT_COMM
	       ")\n"
	       "  --quiet          no start line (the ground-truth summary is always printed)\n"
	       "Prints 'inject: pid P tid T ...' at start and\n"
	       "'inject: busy_ns=B wall_ns=W count=C' (ground truth) at exit.\n";
}
