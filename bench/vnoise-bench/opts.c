/* SPDX-License-Identifier: MIT */
/*
 * opts: the command lines of `vnoise-bench detect` and `vnoise-bench sweep`, parsed by pure functions (no
 * getopt, no output, no look at the machine) into params structs. Every number goes through the strict
 * helpers of shared/util/parse.h. detect is parsed before MPI_Init, so that bad input costs one line and exit 2
 * without an MPI job; the sweep parses its detect options with the same code, so nothing it passes on can
 * fail later.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/parse.h"
#include "vnbench.h"

const char detect_usage[] =
    "usage: mpirun -np N vnoise-bench detect [options]\n"
    "Seed 003's noise detector: time R runs of a loop of N collectives (after W\n"
    "warm-ups); a run's time is the slowest rank's. Rank 0 prints one line per run\n"
    "and a summary.\n"
    "  --op OP        barrier, allreduce or alltoall (default barrier)\n"
    "  --count N      collectives per run (default 200000)\n"
    "  --size BYTES   message size: alltoall per peer, allreduce as BYTES/8 doubles\n"
    "                 (default 2048)\n"
    "  --runs R       counted runs (default 10)\n"
    "  --warmup W     runs done first and not counted (default 2)\n"
    "  --json         one vnoise.detect/1 line instead of the text\n"
    "  --gate FILE    rank 0 waits (up to 60 s) until FILE exists before the first\n"
    "                 run (the sweep opens it once its monitor is attached)\n";

const char sweep_usage[] =
    "usage: vnoise-bench sweep [options]   (not under mpirun: it runs mpirun itself)\n"
    "Seed 003's sensitivity study: the detector at each injection level (vnoise-guest\n"
    "inject, a duty cycle on one CPU), with vnoise-guest monitor on the ranks in the\n"
    "same runs (needs root).\n"
    "  --levels LIST  injection levels in percent, 0 (the baseline) included\n"
    "                 (default 0,0.01,0.05,0.1,0.3,0.5,0.7,1)\n"
    "  --op, --count, --size, --runs, --warmup   as for detect (runs at most 1000)\n"
    "  --run-secs T   choose --count so that a run takes about T s (calibrated first)\n"
    "  --passes K     split each level's runs over K jobs, one per pass over all\n"
    "                 levels (default 1)\n"
    "  --np N         ranks (default 2)\n"
    "  --cpu C        the injector's CPU (default: the last online CPU, the last rank's)\n"
    "  --quick        CI-sized (~4 min): --runs 15 --warmup 1 --run-secs 1 --passes 3\n"
    "                 (explicit options win)\n"
    "  --mpirun CMD   launcher (default \"" SWEEP_MPIRUN_DEFAULT "\")\n"
    "  --json         one vnoise.sweep/1 document instead of the table\n"
    "  -q, --quiet    no progress lines on stderr\n";

/*
 * Quick mode. The run time is set, not the count: the same 2-rank barrier takes 0.2 us on this 2-vCPU guest
 * when it is quiet and 1.6 us when other jobs share its CPUs, so a fixed count would make the sweep's
 * length vary eightfold. Runs of 1 s, the injector's period, each hold one burst: the whole distribution
 * moves, not half of it (which a median would not see). Three passes: see sweep.c. About 4 minutes here
 * for the 8 levels (24 jobs of ~9 s).
 */
#define QUICK_RUNS 15
#define QUICK_WARMUP 1
#define QUICK_RUN_SECS 1.0
#define QUICK_PASSES 3
#define RUN_SECS_MIN 0.01
#define RUN_SECS_MAX 600.0

static const char *const op_names[] = { [VNB_OP_BARRIER] = "barrier",
					[VNB_OP_ALLREDUCE] = "allreduce",
					[VNB_OP_ALLTOALL] = "alltoall" };

const char *vnb_op_name(int op)
{
	return op >= 0 && op < 3 ? op_names[op] : "?";
}

static int opt_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int opt_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/*
 * Split argv[*i] into name and value: "--x=v", or "--x" followed by argv[*i + 1] when the option takes
 * a value. name is copied into nbuf. Returns 0 or -EINVAL (value missing, or given to a flag).
 */
static int opt_next(int argc, char **argv, int *i, int takes_value, char *nbuf, size_t nlen,
		    const char **val)
{
	const char *a = argv[*i], *eq = strchr(a, '=');
	size_t n = eq ? (size_t)(eq - a) : strlen(a);

	if (n >= nlen)
		n = nlen - 1;
	memcpy(nbuf, a, n);
	nbuf[n] = 0;
	*val = NULL;
	if (!takes_value)
		return eq ? -EINVAL : 0;
	if (eq) {
		*val = eq + 1;
		return 0;
	}
	if (*i + 1 >= argc)
		return -EINVAL;
	*val = argv[++*i];
	return 0;
}

/* Which options take a value, for opt_next(): the name without any "=value". */
static int takes_value(const char *a)
{
	static const char *const with[] = {
		"--op", "--count", "--size",   "--runs",     "--warmup", "--gate", "--levels",
		"--np", "--cpu",   "--mpirun", "--run-secs", "--passes", NULL,
	};
	size_t n = strcspn(a, "=");

	for (int k = 0; with[k]; k++)
		if (strlen(with[k]) == n && !strncmp(a, with[k], n))
			return 1;
	return 0;
}

/*
 * One option shared by detect and sweep. 1 consumed, 0 not one of them, -EINVAL (err set). *seen gets a
 * bit per option given, so the sweep's --quick can fill only what was not.
 */
enum { SEEN_COUNT = 1, SEEN_RUNS = 2, SEEN_WARMUP = 4, SEEN_PASSES = 8 };

static int detect_opt(const char *name, const char *val, struct detect_params *p, int *seen,
		      char *err, size_t errlen)
{
	int v;

	if (!strcmp(name, "--op")) {
		for (v = 0; v < 3; v++)
			if (!strcmp(val, op_names[v]))
				break;
		if (v == 3)
			return opt_err(err, errlen, "--op '%s': not barrier, allreduce or alltoall",
				       val);
		p->op = v;
	} else if (!strcmp(name, "--count")) {
		if (parse_int(val, 1, 2000000000, &p->count))
			return opt_err(err, errlen, "--count '%s': not an integer in 1..2000000000",
				       val);
		*seen |= SEEN_COUNT;
	} else if (!strcmp(name, "--size")) {
		if (parse_int(val, 1, VNB_SIZE_MAX, &p->size))
			return opt_err(err, errlen, "--size '%s': not a byte count in 1..%d", val,
				       VNB_SIZE_MAX);
	} else if (!strcmp(name, "--runs")) {
		if (parse_int(val, 1, NSTATS_MAX, &p->runs))
			return opt_err(err, errlen, "--runs '%s': not an integer in 1..%d", val,
				       NSTATS_MAX);
		*seen |= SEEN_RUNS;
	} else if (!strcmp(name, "--warmup")) {
		if (parse_int(val, 0, VNB_WARMUP_MAX, &p->warmup))
			return opt_err(err, errlen, "--warmup '%s': not an integer in 0..%d", val,
				       VNB_WARMUP_MAX);
		*seen |= SEEN_WARMUP;
	} else {
		return 0;
	}
	return 1;
}

static void detect_defaults(struct detect_params *p)
{
	memset(p, 0, sizeof(*p));
	p->op = VNB_OP_BARRIER;
	p->count = VNB_COUNT_DEFAULT;
	p->size = VNB_SIZE_DEFAULT;
	p->runs = VNB_RUNS_DEFAULT;
	p->warmup = VNB_WARMUP_DEFAULT;
}

int detect_parse(int argc, char **argv, struct detect_params *p, char *err, size_t errlen)
{
	char name[32];
	int seen = 0;

	detect_defaults(p);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val;
		int r;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			p->help = 1;
			return 0;
		}
		if (strncmp(a, "--", 2))
			return opt_err(err, errlen, "unexpected argument '%s' (see --help)", a);
		if (opt_next(argc, argv, &i, takes_value(a), name, sizeof(name), &val))
			return opt_err(err, errlen, "%s: %s", name,
				       takes_value(a) ? "missing value" : "takes no value");
		r = detect_opt(name, val, p, &seen, err, errlen);
		if (r < 0)
			return r;
		if (r)
			continue;
		if (!strcmp(name, "--json")) {
			p->json = 1;
		} else if (!strcmp(name, "--gate")) {
			if (!*val || strlen(val) >= sizeof(p->gate))
				return opt_err(err, errlen, "--gate: bad path");
			strcpy(p->gate, val);
		} else {
			return opt_err(err, errlen, "unknown option '%s' (see --help)", name);
		}
	}
	return 0;
}

/*
 * A level: a plain decimal percent in [0, 100] with at most 7 decimals, as `vnoise-guest inject --level`
 * takes it (there 0 is refused: level 0 runs no injector).
 */
static int level_parse(const char *tok, double *v)
{
	const char *dot = strchr(tok, '.');

	if (strspn(tok, "0123456789.") != strlen(tok) || strlen(tok) >= SWEEP_LEVEL_TXT)
		return -EINVAL;
	if (dot && (strchr(dot + 1, '.') || strlen(dot + 1) > 7 || !dot[1]))
		return -EINVAL;
	if (parse_double(tok, v) || *v > 100.0)
		return -EINVAL;
	return 0;
}

static int levels_parse(const char *s, struct sweep_params *p, char *err, size_t errlen)
{
	const char *q = s;

	p->nlevels = 0;
	for (;;) {
		size_t n = strcspn(q, ",");
		char tok[SWEEP_LEVEL_TXT + 8];
		double v;
		int k;

		if (n == 0 || n >= sizeof(tok))
			return opt_err(err, errlen, "--levels '%s': empty or too long element", s);
		memcpy(tok, q, n);
		tok[n] = 0;
		if (level_parse(tok, &v))
			return opt_err(
			    err, errlen,
			    "--levels '%s': '%s' is not a percent in [0, 100] with at most 7 "
			    "decimals",
			    s, tok);
		for (k = 0; k < p->nlevels; k++)
			if (p->level[k] == v)
				return opt_err(err, errlen, "--levels '%s': %s twice", s, tok);
		if (p->nlevels == SWEEP_LEVELS_MAX)
			return opt_err(err, errlen, "--levels '%s': more than %d levels", s,
				       SWEEP_LEVELS_MAX);
		/* insert in ascending order */
		for (k = p->nlevels; k > 0 && p->level[k - 1] > v; k--) {
			p->level[k] = p->level[k - 1];
			memcpy(p->level_txt[k], p->level_txt[k - 1], SWEEP_LEVEL_TXT);
		}
		p->level[k] = v;
		snprintf(p->level_txt[k], SWEEP_LEVEL_TXT, "%s", tok);
		p->nlevels++;
		if (!q[n])
			break;
		q += n + 1;
	}
	if (p->level[0] != 0.0)
		return opt_err(err, errlen, "--levels '%s': 0 (the baseline) is missing", s);
	return 0;
}

int sweep_parse(int argc, char **argv, struct sweep_params *p, char *err, size_t errlen)
{
	char name[32];
	int seen = 0, r;

	memset(p, 0, sizeof(*p));
	detect_defaults(&p->d);
	r = levels_parse("0,0.01,0.05,0.1,0.3,0.5,0.7,1", p, err, errlen);
	if (r)
		return r;
	p->np = 2;
	p->passes = 1;
	p->cpu = -1;
	snprintf(p->mpirun, sizeof(p->mpirun), "%s", SWEEP_MPIRUN_DEFAULT);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			p->help = 1;
			return 0;
		}
		if (!strcmp(a, "-q")) {
			p->quiet = 1;
			continue;
		}
		if (strncmp(a, "--", 2))
			return opt_err(err, errlen, "unexpected argument '%s' (see --help)", a);
		if (opt_next(argc, argv, &i, takes_value(a), name, sizeof(name), &val))
			return opt_err(err, errlen, "%s: %s", name,
				       takes_value(a) ? "missing value" : "takes no value");
		r = detect_opt(name, val, &p->d, &seen, err, errlen);
		if (r < 0)
			return r;
		if (r)
			continue;
		if (!strcmp(name, "--levels")) {
			r = levels_parse(val, p, err, errlen);
			if (r)
				return r;
		} else if (!strcmp(name, "--np")) {
			if (parse_int(val, 1, SWEEP_NP_MAX, &p->np))
				return opt_err(err, errlen, "--np '%s': not an integer in 1..%d",
					       val, SWEEP_NP_MAX);
		} else if (!strcmp(name, "--cpu")) {
			if (parse_int(val, 0, 65535, &p->cpu))
				return opt_err(err, errlen, "--cpu '%s': not a CPU number", val);
		} else if (!strcmp(name, "--mpirun")) {
			if (!val[strspn(val, " \t")] || strlen(val) >= sizeof(p->mpirun))
				return opt_err(err, errlen, "--mpirun: empty or too long command");
			snprintf(p->mpirun, sizeof(p->mpirun), "%s", val);
		} else if (!strcmp(name, "--passes")) {
			if (parse_int(val, 1, SWEEP_LEVELS_MAX, &p->passes))
				return opt_err(err, errlen,
					       "--passes '%s': not an integer in 1..%d", val,
					       SWEEP_LEVELS_MAX);
			seen |= SEEN_PASSES;
		} else if (!strcmp(name, "--run-secs")) {
			if (parse_double(val, &p->run_secs) || p->run_secs < RUN_SECS_MIN ||
			    p->run_secs > RUN_SECS_MAX)
				return opt_err(err, errlen,
					       "--run-secs '%s': not a time in %g..%g s", val,
					       RUN_SECS_MIN, RUN_SECS_MAX);
		} else if (!strcmp(name, "--quick")) {
			p->quick = 1;
		} else if (!strcmp(name, "--json")) {
			p->json = 1;
		} else if (!strcmp(name, "--quiet")) {
			p->quiet = 1;
		} else {
			return opt_err(err, errlen, "unknown option '%s' (see --help)", name);
		}
	}
	if (p->d.runs > SWEEP_RUNS_MAX)
		return opt_err(err, errlen, "--runs %d: at most %d in a sweep", p->d.runs,
			       SWEEP_RUNS_MAX);
	if ((seen & SEEN_COUNT) && p->run_secs > 0)
		return opt_err(err, errlen, "--count and --run-secs exclude each other");
	if (p->quick) {
		if (!(seen & SEEN_RUNS))
			p->d.runs = QUICK_RUNS;
		if (!(seen & SEEN_WARMUP))
			p->d.warmup = QUICK_WARMUP;
		if (!(seen & SEEN_COUNT) && p->run_secs == 0)
			p->run_secs = QUICK_RUN_SECS;
		if (!(seen & SEEN_PASSES))
			p->passes = QUICK_PASSES;
	}
	if (p->passes > p->d.runs)
		return opt_err(err, errlen, "--passes %d: more than the %d runs", p->passes,
			       p->d.runs);
	return 0;
}
