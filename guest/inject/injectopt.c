/* SPDX-License-Identifier: MIT */
/*
 * injectopt: parser of the `vnoise-guest inject` command line into struct inject_params, built on the common
 * option table (cli/cliopt.h). argv is read whole first (so --help wins over bad values), then each value is
 * checked: times by the common time rule, whole numbers by a strict helper (digits only, overflow and range
 * checked) and --level as a fixed-point decimal scaled to an integer (units of 10^-7 %), so no float rounding
 * enters the ground truth.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "inject/injectopt.h"
#include "util/parse.h"

#define NSEC_PER_SEC 1000000000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_USEC 1000ull
#define LEVEL_FRAC_DIGITS 7 /* PCT x 10^7 = busy ns per second */

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

static const char *num_problem(int r)
{
	return r == -ERANGE ? "out of range" : "not a valid number";
}

enum {
	OPT_CPU = CLIOPT_OWN,
	OPT_LEVEL,
	OPT_SPIKE,
	OPT_EVERY,
	OPT_FIFO,
	OPT_COMM,
	OPT_END, /* one past the own ids */
};

static const struct cliopt opts[] = {
	{ .id = OPT_CPU,
	  .name = "cpu",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "pin the injector to CPU N (required)" },
	{ .id = OPT_LEVEL,
	  .name = "level",
	  .has_arg = 1,
	  .arg = "PCT",
	  .help = "duty cycle: PCT% of thread CPU time in every second\n"
		  "                         (0 < PCT <= 100)" },
	{ .id = OPT_SPIKE,
	  .name = "spike",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "busy TIME of thread CPU time ..." },
	/* a bare --every was in milliseconds */
	{ .id = OPT_EVERY,
	  .name = "every",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "... every TIME (absolute times, no drift; at most 1h)",
	  .bare_unit = "ms" },
	{ .id = CLIOPT_PRIORITY,
	  .help = "other (default) or fifo:N (SCHED_FIFO at priority N,\n"
		  "                         1..99)" },
	{ .id = CLIOPT_DURATION, .help = "stop after TIME (default: until SIGINT/SIGTERM)" },
	{ .id = OPT_COMM,
	  .name = "comm",
	  .has_arg = 1,
	  .arg = "NAME",
	  .help = "thread name (default " INJECT_DEFAULT_COMM ", 15 chars at most)" },
	{ .id = CLIOPT_QUIET, .help = "no start line (the ground truth is printed anyway)" },
	{ .id = CLIOPT_HELP },
	/* one release: --fifo PRIO is -P fifo:PRIO */
	{ .id = OPT_FIFO, .name = "fifo", .has_arg = 1, .help = "" },
	{ 0 },
};

/* The values given, by option; nothing is parsed before the whole argv was read (--help wins). */
struct given {
	const char *val[OPT_END - CLIOPT_OWN];
	const char *priority, *duration;
	char duration_spelled[16]; /* "-d" or "--duration", for the time rule's line */
	int quiet, help;
};

#define VAL(g, id) ((g)->val[(id)-CLIOPT_OWN])

/* The slot of option c in g, or NULL for a flag. */
static const char **slot(struct given *g, int c)
{
	if (c == CLIOPT_PRIORITY)
		return &g->priority;
	if (c == CLIOPT_DURATION)
		return &g->duration;
	if (c >= CLIOPT_OWN && c < OPT_END)
		return &VAL(g, c);
	return NULL;
}

/* Read argv into g: unknown options, repeated ones, missing values and stray arguments fail. */
static int scan(struct cliopt_parser *ps, int argc, char **argv, struct given *g)
{
	const char **v;
	int c;

	while ((c = cliopt_next(ps)) > 0) {
		if (c == CLIOPT_HELP) {
			g->help = 1;
			continue;
		}
		if (c == CLIOPT_QUIET) {
			if (g->quiet++)
				return cliopt_fail(ps, "option %s given more than once",
						   cliopt_name(ps));
			continue;
		}
		if (c == OPT_FIFO)
			cliopt_deprecated(ps, "-P fifo:N");
		v = slot(g, c);
		if (*v)
			return cliopt_fail(ps, "option %s given more than once", cliopt_name(ps));
		*v = ps->arg;
		if (c == CLIOPT_DURATION)
			snprintf(g->duration_spelled, sizeof(g->duration_spelled), "%s",
				 ps->spelled);
	}
	if (c < 0)
		return c;
	if (optind < argc)
		return cliopt_fail(ps, "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* --level PCT: busy_ns of every second. */
static int parse_level(struct cliopt_parser *ps, const char *s, struct inject_params *p)
{
	uint64_t v;
	int r = parse_fixed(s, LEVEL_FRAC_DIGITS, &v);

	if (r)
		return cliopt_fail(ps, "--level '%s': %s (percent, e.g. 30 or 0.05)", s,
				   num_problem(r));
	if (v == 0 || v > NSEC_PER_SEC)
		return cliopt_fail(ps, "--level '%s': must be in (0, 100]", s);
	p->mode = INJECT_MODE_LEVEL;
	p->busy_ns = v;
	p->period_ns = NSEC_PER_SEC;
	return 0;
}

/* --spike TIME --every TIME: busy_ns of every period_ns. */
static int parse_spike(struct cliopt_parser *ps, const char *spike, const char *every,
		       struct inject_params *p)
{
	uint64_t busy, period;

	if (!spike || !every)
		return cliopt_fail(ps, "--spike TIME and --every TIME go together");
	if (cliopt_parse_time("--every", every, "ms", &period, ps->err, ps->errlen))
		return -EINVAL;
	if (period == 0 || period > INJECT_EVERY_MAX_MS * NSEC_PER_MSEC)
		return cliopt_fail(ps, "--every '%s': %s", every,
				   period ? "out of range (at most 1h)" : "must be > 0");
	if (cliopt_parse_time("--spike", spike, NULL, &busy, ps->err, ps->errlen))
		return -EINVAL;
	if (busy >= period)
		return cliopt_fail(ps, "--spike '%s': must be shorter than --every (%s)", spike,
				   every);
	if (busy == 0)
		return cliopt_fail(ps, "--spike '%s': must be > 0", spike);
	p->mode = INJECT_MODE_SPIKE;
	p->busy_ns = busy;
	p->period_ns = period;
	return 0;
}

/* -P other | fifo:N, or the old --fifo N. */
static int parse_policy(struct cliopt_parser *ps, const struct given *g, struct inject_params *p)
{
	uint64_t v;
	int policy;

	if (g->priority && VAL(g, OPT_FIFO))
		return cliopt_fail(ps, "-P and --fifo exclude each other (--fifo N is -P fifo:N)");
	if (VAL(g, OPT_FIFO)) {
		if (parse_uint(VAL(g, OPT_FIFO), 99, &v) || v < 1)
			return cliopt_fail(ps, "--fifo '%s': priority must be 1..99",
					   VAL(g, OPT_FIFO));
		p->fifo_prio = (int)v;
		return 0;
	}
	if (!g->priority)
		return 0;
	ps->arg = g->priority;
	if (cliopt_priority(ps, &policy, &p->fifo_prio))
		return -EINVAL;
	if (policy != SCHED_OTHER && policy != SCHED_FIFO)
		return cliopt_fail(ps, "invalid --priority '%s': inject runs other or fifo:N",
				   g->priority);
	return 0;
}

static int parse_cpu(struct cliopt_parser *ps, const char *s, struct inject_params *p)
{
	uint64_t v;
	int r;

	if (!s)
		return cliopt_fail(ps, "missing --cpu N");
	r = parse_uint(s, INJECT_CPU_MAX, &v);
	if (r)
		return cliopt_fail(ps, "--cpu '%s': %s", s, num_problem(r));
	p->cpu = (unsigned int)v;
	return 0;
}

static int parse_rest(struct cliopt_parser *ps, const struct given *g, struct inject_params *p)
{
	const char *comm = VAL(g, OPT_COMM);
	size_t n;

	if (g->duration) {
		if (cliopt_parse_time(g->duration_spelled, g->duration, "s", &p->duration_ns,
				      ps->err, ps->errlen))
			return -EINVAL;
		if (!p->duration_ns)
			return cliopt_fail(ps, "--duration '%s': must be > 0", g->duration);
	}
	if (!comm)
		comm = INJECT_DEFAULT_COMM;
	n = strlen(comm);
	if (n == 0 || n > INJECT_COMM_MAX)
		return cliopt_fail(ps, "--comm '%s': name must be 1..%d characters", comm,
				   INJECT_COMM_MAX);
	memcpy(p->comm, comm, n + 1);
	return 0;
}

int injectopt_parse(int argc, char **argv, struct inject_params *p, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	struct given g = { 0 };
	int rc;

	memset(p, 0, sizeof(*p));
	if (err && errlen)
		err[0] = '\0';
	rc = cliopt_init(&ps, opts, argc, argv, err, errlen);
	if (!rc)
		rc = scan(&ps, argc, argv, &g);
	if (rc)
		return rc;
	if (g.help) {
		p->help = 1;
		return 0;
	}
	p->quiet = g.quiet;
	rc = parse_cpu(&ps, VAL(&g, OPT_CPU), p);
	if (rc)
		return rc;
	if (VAL(&g, OPT_LEVEL) && (VAL(&g, OPT_SPIKE) || VAL(&g, OPT_EVERY)))
		return cliopt_fail(&ps, "--level and --spike/--every are exclusive");
	if (VAL(&g, OPT_LEVEL))
		rc = parse_level(&ps, VAL(&g, OPT_LEVEL), p);
	else if (VAL(&g, OPT_SPIKE) || VAL(&g, OPT_EVERY))
		rc = parse_spike(&ps, VAL(&g, OPT_SPIKE), VAL(&g, OPT_EVERY), p);
	else
		rc =
		    cliopt_fail(&ps, "one of --level PCT or --spike TIME --every TIME is required");
	if (!rc)
		rc = parse_policy(&ps, &g, p);
	if (!rc)
		rc = parse_rest(&ps, &g, p);
	return rc;
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
	} else if (p->mode == INJECT_MODE_SPIKE && p->period_ns % NSEC_PER_MSEC == 0) {
		snprintf(buf, buflen, "spike %lluus/%llums",
			 (unsigned long long)(p->busy_ns / NSEC_PER_USEC),
			 (unsigned long long)(p->period_ns / NSEC_PER_MSEC));
	} else if (p->mode == INJECT_MODE_SPIKE) {
		snprintf(buf, buflen, "spike %lluus/%lluus",
			 (unsigned long long)(p->busy_ns / NSEC_PER_USEC),
			 (unsigned long long)(p->period_ns / NSEC_PER_USEC));
	} else {
		snprintf(buf, buflen, "none");
	}
}

const char *injectopt_usage(void)
{
	static char usage[4096];
	int n;

	if (!usage[0]) {
		n = snprintf(
		    usage, sizeof(usage), "%s",
		    "usage: vnoise-guest inject --cpu N (--level PCT | --spike TIME --every TIME)\n"
		    "                           [options]\n" CLIOPT_TIME_LINE);
		n += (int)cliopt_help(opts, usage + n, sizeof(usage) - (size_t)n);
		if (n < (int)sizeof(usage))
			n += snprintf(
			    usage + n, sizeof(usage) - (size_t)n, "%s",
			    "Prints 'inject: pid P tid T ...' at start and\n"
			    "'inject: busy_ns=B wall_ns=W count=C' (ground truth) at exit.\n");
		if (n < (int)sizeof(usage))
			cliopt_exit_help(usage, sizeof(usage), (size_t)n, CLIOPT_EXITS_COMMON);
	}
	return usage;
}
