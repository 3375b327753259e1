/* SPDX-License-Identifier: MIT */
/*
 * opts: the command lines of `vnoise-bench detect` and `vnoise-bench sweep`, parsed by pure functions (no
 * output but the warning line of a deprecated spelling, no look at the machine) into params structs, on the
 * common option table (shared/cli/cliopt.h, docs/CLI.md). Every number goes through the strict helpers of
 * shared/util/parse.h. detect is parsed before MPI_Init, so that bad input costs one line and exit 2 without
 * an MPI job; the sweep parses its detect options with the same code, so nothing it passes on can fail later.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cli/cliopt.h"
#include "util/parse.h"
#include "vnbench.h"

/* The help (detect.c and sweep.c print these arrays); the option tables below list the same options. */
const char detect_usage[] =
    "usage: mpirun -np N vnoise-bench detect [options]\n"
    "A collective noise detector: time R runs of a loop of N collectives (after W\n"
    "warm-ups); a run's time is the slowest rank's. Rank 0 prints one line per run\n"
    "and a summary.\n"
    "      --op OP            barrier, allreduce or alltoall (default barrier)\n"
    "      --count N          collectives per run (default 200000)\n"
    "      --size BYTES       message size: alltoall per peer, allreduce as BYTES/8\n"
    "                         doubles (default 2048)\n"
    "      --runs R           counted runs (default 10)\n"
    "      --warmup W         runs done first and not counted (default 2)\n"
    "      --gate FILE        rank 0 waits (up to 60 s) until FILE exists before the\n"
    "                         first run (the sweep makes it once its monitor is\n"
    "                         attached)\n"
    "  -j, --json             one vnoise.detect/1 line instead of the text\n"
    "  -h, --help             this help\n"
    "  -V, --version          print the version and exit\n";

const char sweep_usage[] =
    "usage: vnoise-bench sweep [options]   (not under mpirun: it runs mpirun itself)\n"
    "The detector's sensitivity study: the detector at each injection level\n"
    "(vnoise-guest inject, a duty cycle on one CPU), with vnoise-guest monitor on the\n"
    "ranks in the same runs (needs root).\n"
    "      --levels LIST      injection levels in percent, 0 (the baseline) included\n"
    "                         (default 0,0.01,0.05,0.1,0.3,0.5,0.7,1)\n"
    "      --op, --count, --size, --runs, --warmup\n"
    "                         as for detect (runs at most 1000)\n"
    "      --run-length TIME  choose --count so that a run takes about TIME\n"
    "                         (calibrated first; 10ms..10m)\n"
    "      --passes K         split each level's runs over K jobs, one per pass over\n"
    "                         all levels (default 1)\n"
    "      --np N             ranks (default 2)\n"
    "      --cpu C            the injector's CPU (default: the last online CPU, the\n"
    "                         last rank's)\n"
    "      --quick            CI-sized (~4 min): --runs 15 --warmup 1 --run-length 1s\n"
    "                         --passes 3 (explicit options win)\n"
    "      --mpirun CMD       launcher\n"
    "                         (default \"" SWEEP_MPIRUN_DEFAULT "\")\n"
    "  -j, --json             one vnoise.sweep/1 document instead of the table\n"
    "  -q, --quiet            no progress lines on stderr\n"
    "  -h, --help             this help\n"
    "  -V, --version          print the version and exit\n" CLIOPT_TIME_LINE;

/*
 * Quick mode. The run time is set, not the count: the same 2-rank barrier takes 0.2 us on this 2-vCPU guest
 * when it is quiet and 1.6 us when other jobs share its CPUs, so a fixed count would make the sweep's
 * length vary eightfold. Runs of 1 s, the injector's period, each hold one burst: the whole distribution
 * moves, not half of it (which a median would not see). Three passes: see sweep.c. About 4 minutes here
 * for the 8 levels (24 jobs of ~9 s).
 */
#define QUICK_RUNS 15
#define QUICK_WARMUP 1
#define QUICK_RUN_SECS 1.0 /* s */
#define QUICK_PASSES 3
#define RUN_SECS_MIN 0.01
#define RUN_SECS_MAX 600.0

static const char *const op_names[] = { [VNB_OP_BARRIER] = "barrier",
					[VNB_OP_ALLREDUCE] = "allreduce",
					[VNB_OP_ALLTOALL] = "alltoall" };

const char *opts_op_name(int op)
{
	return op >= 0 && op < 3 ? op_names[op] : "?";
}

enum {
	O_OP = CLIOPT_OWN,
	O_COUNT,
	O_SIZE,
	O_RUNS,
	O_WARMUP,
	O_GATE,
	O_LEVELS,
	O_RUN_LENGTH,
	O_RUN_SECS,
	O_PASSES,
	O_NP,
	O_CPU,
	O_QUICK,
	O_MPIRUN,
};

/* The options of the detector, in both tables (the help is detect_usage / sweep_usage). */
#define DETECT_OPTS                                                                                \
	{ .id = O_OP, .name = "op", .has_arg = 1, .arg = "OP" },                                   \
	    { .id = O_COUNT, .name = "count", .has_arg = 1, .arg = "N" },                          \
	    { .id = O_SIZE, .name = "size", .has_arg = 1, .arg = "BYTES" },                        \
	    { .id = O_RUNS, .name = "runs", .has_arg = 1, .arg = "R" },                            \
	    { .id = O_WARMUP, .name = "warmup", .has_arg = 1, .arg = "W" }, { .id = CLIOPT_JSON }, \
	{                                                                                          \
		.id = CLIOPT_HELP                                                                  \
	}

static const struct cliopt detect_opts[] = {
	DETECT_OPTS,
	{ .id = O_GATE, .name = "gate", .has_arg = 1, .arg = "FILE" },
	{ 0 },
};

static const struct cliopt sweep_opts[] = {
	DETECT_OPTS,
	{ .id = O_LEVELS, .name = "levels", .has_arg = 1, .arg = "LIST" },
	{ .id = O_RUN_LENGTH, .name = "run-length", .has_arg = 1, .arg = "TIME", .bare_unit = "s" },
	{ .id = O_PASSES, .name = "passes", .has_arg = 1, .arg = "K" },
	{ .id = O_NP, .name = "np", .has_arg = 1, .arg = "N" },
	{ .id = O_CPU, .name = "cpu", .has_arg = 1, .arg = "C" },
	{ .id = O_QUICK, .name = "quick" },
	{ .id = O_MPIRUN, .name = "mpirun", .has_arg = 1, .arg = "CMD" },
	{ .id = CLIOPT_QUIET },
	/* hidden, one release: seconds as a bare number (--run-length takes a unit) */
	{ .id = O_RUN_SECS, .name = "run-secs", .has_arg = 1, .arg = "SECONDS" },
	{ 0 },
};

/*
 * One option of the detector's loop, shared by detect and sweep: 1 consumed, 0 not one of them, -EINVAL
 * (err set).
 * *seen gets a bit per option given, so the sweep's --quick can fill only what was not.
 */
enum { SEEN_COUNT = 1, SEEN_RUNS = 2, SEEN_WARMUP = 4, SEEN_PASSES = 8 };

static int detect_opt(struct cliopt_parser *ps, int c, struct detect_params *p, int *seen)
{
	const char *val = ps->arg;
	int v;

	switch (c) {
	case O_OP:
		for (v = 0; v < 3; v++)
			if (!strcmp(val, op_names[v]))
				break;
		if (v == 3)
			return cliopt_fail(ps, "--op '%s': not barrier, allreduce or alltoall",
					   val);
		p->op = v;
		return 1;
	case O_COUNT:
		if (parse_int(val, 1, 2000000000, &p->count))
			return cliopt_fail(ps, "--count '%s': not an integer in 1..2000000000",
					   val);
		*seen |= SEEN_COUNT;
		return 1;
	case O_SIZE:
		if (parse_int(val, 1, VNB_SIZE_MAX, &p->size))
			return cliopt_fail(ps, "--size '%s': not a byte count in 1..%d", val,
					   VNB_SIZE_MAX);
		return 1;
	case O_RUNS:
		if (parse_int(val, 1, NSTATS_MAX, &p->runs))
			return cliopt_fail(ps, "--runs '%s': not an integer in 1..%d", val,
					   NSTATS_MAX);
		*seen |= SEEN_RUNS;
		return 1;
	case O_WARMUP:
		if (parse_int(val, 0, VNB_WARMUP_MAX, &p->warmup))
			return cliopt_fail(ps, "--warmup '%s': not an integer in 0..%d", val,
					   VNB_WARMUP_MAX);
		*seen |= SEEN_WARMUP;
		return 1;
	}
	return 0;
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

/* After the options: nothing (the detector and the sweep take no argument). */
static int end_of_options(struct cliopt_parser *ps, int c, int argc, char **argv)
{
	if (c < 0)
		return c;
	if (optind < argc)
		return cliopt_fail(ps, "unexpected argument '%s' (see --help)", argv[optind]);
	return 0;
}

int opts_detect_parse(int argc, char **argv, struct detect_params *p, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	int c, r, seen = 0;

	detect_defaults(p);
	r = cliopt_init(&ps, detect_opts, argc, argv, err, errlen);
	if (r)
		return r;
	while ((c = cliopt_next(&ps)) > 0) {
		r = detect_opt(&ps, c, p, &seen);
		if (r < 0)
			return r;
		if (r)
			continue;
		if (c == CLIOPT_HELP) {
			p->help = 1;
			return 0;
		}
		if (c == CLIOPT_JSON) {
			p->json = 1;
			continue;
		}
		/* --gate */
		if (!*ps.arg || strlen(ps.arg) >= sizeof(p->gate))
			return cliopt_fail(&ps, "--gate: bad path");
		strcpy(p->gate, ps.arg);
	}
	return end_of_options(&ps, c, argc, argv);
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

/* One level of the list s into p, kept in ascending order. 0 or -EINVAL (err set). */
static int level_add(const char *s, const char *tok, struct sweep_params *p, char *err,
		     size_t errlen)
{
	double v;
	int k;

	if (level_parse(tok, &v)) {
		log_reason(
		    err, errlen,
		    "--levels '%s': '%s' is not a percent in [0, 100] with at most 7 decimals", s,
		    tok);
		return -EINVAL;
	}
	for (k = 0; k < p->nlevels; k++)
		if (p->level[k] == v) {
			log_reason(err, errlen, "--levels '%s': %s twice", s, tok);
			return -EINVAL;
		}
	if (p->nlevels == SWEEP_LEVELS_MAX) {
		log_reason(err, errlen, "--levels '%s': more than %d levels", s, SWEEP_LEVELS_MAX);
		return -EINVAL;
	}
	for (k = p->nlevels; k > 0 && p->level[k - 1] > v; k--) {
		p->level[k] = p->level[k - 1];
		memcpy(p->level_txt[k], p->level_txt[k - 1], SWEEP_LEVEL_TXT);
	}
	p->level[k] = v;
	snprintf(p->level_txt[k], SWEEP_LEVEL_TXT, "%s", tok);
	p->nlevels++;
	return 0;
}

static int levels_parse(const char *s, struct sweep_params *p, char *err, size_t errlen)
{
	const char *q = s;
	int rc;

	p->nlevels = 0;
	for (;;) {
		size_t n = strcspn(q, ",");
		char tok[SWEEP_LEVEL_TXT + 8];

		if (n == 0 || n >= sizeof(tok)) {
			log_reason(err, errlen, "--levels '%s': empty or too long element", s);
			return -EINVAL;
		}
		memcpy(tok, q, n);
		tok[n] = 0;
		rc = level_add(s, tok, p, err, errlen);
		if (rc)
			return rc;
		if (!q[n])
			break;
		q += n + 1;
	}
	if (p->level[0] != 0.0) {
		log_reason(err, errlen, "--levels '%s': 0 (the baseline) is missing", s);
		return -EINVAL;
	}
	return 0;
}

/* --run-length TIME, or the deprecated --run-length SECONDS: the calibrated run's length in s. */
static int run_length(struct cliopt_parser *ps, int c, double *secs)
{
	uint64_t ns;

	if (c == O_RUN_SECS) {
		cliopt_deprecated(ps, "--run-length TIME");
		if (parse_double(ps->arg, secs) || *secs < RUN_SECS_MIN || *secs > RUN_SECS_MAX)
			return cliopt_fail(ps, "--run-secs '%s': not a time in %g..%g s", ps->arg,
					   RUN_SECS_MIN, RUN_SECS_MAX);
		return 0;
	}
	if (cliopt_time(ps, &ns))
		return -EINVAL;
	*secs = (double)ns / 1e9;
	if (*secs < RUN_SECS_MIN || *secs > RUN_SECS_MAX)
		return cliopt_fail(ps, "--run-length '%s': not a time in 10ms..10m", ps->arg);
	return 0;
}

/* One of the sweep's own options: 0 or -EINVAL (err set). */
static int sweep_opt(struct cliopt_parser *ps, int c, struct sweep_params *p, int *seen)
{
	const struct cliopt_flags flags = { .json = &p->json, .quiet = &p->quiet };
	const char *val = ps->arg;

	if (cliopt_flag(c, &flags))
		return 0;

	switch (c) {
	case O_LEVELS:
		return levels_parse(val, p, ps->err, ps->errlen);
	case O_NP:
		if (parse_int(val, 1, SWEEP_NP_MAX, &p->np))
			return cliopt_fail(ps, "--np '%s': not an integer in 1..%d", val,
					   SWEEP_NP_MAX);
		return 0;
	case O_CPU:
		if (parse_int(val, 0, 65535, &p->cpu))
			return cliopt_fail(ps, "--cpu '%s': not a CPU number", val);
		return 0;
	case O_MPIRUN:
		if (!val[strspn(val, " \t")] || strlen(val) >= sizeof(p->mpirun))
			return cliopt_fail(ps, "--mpirun: empty or too long command");
		snprintf(p->mpirun, sizeof(p->mpirun), "%s", val);
		return 0;
	case O_PASSES:
		if (parse_int(val, 1, SWEEP_LEVELS_MAX, &p->passes))
			return cliopt_fail(ps, "--passes '%s': not an integer in 1..%d", val,
					   SWEEP_LEVELS_MAX);
		*seen |= SEEN_PASSES;
		return 0;
	case O_RUN_LENGTH:
	case O_RUN_SECS:
		return run_length(ps, c, &p->run_secs);
	case O_QUICK:
		p->quick = 1;
		return 0;
	}
	return cliopt_fail(ps, "sweep: option %d not handled", c);
}

static int sweep_defaults(struct sweep_params *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	detect_defaults(&p->d);
	p->np = 2;
	p->passes = 1;
	p->cpu = -1;
	snprintf(p->mpirun, sizeof(p->mpirun), "%s", SWEEP_MPIRUN_DEFAULT);
	return levels_parse("0,0.01,0.05,0.1,0.3,0.5,0.7,1", p, err, errlen);
}

/* The options together: the sweep's bounds, --quick filling what was not given. */
static int sweep_check(struct cliopt_parser *ps, struct sweep_params *p, int seen)
{
	if (p->d.runs > SWEEP_RUNS_MAX)
		return cliopt_fail(ps, "--runs %d: at most %d in a sweep", p->d.runs,
				   SWEEP_RUNS_MAX);
	if ((seen & SEEN_COUNT) && p->run_secs > 0)
		return cliopt_fail(ps, "--count and --run-length exclude each other");
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
		return cliopt_fail(ps, "--passes %d: more than the %d runs", p->passes, p->d.runs);
	return 0;
}

int opts_sweep_parse(int argc, char **argv, struct sweep_params *p, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	int c, r, seen = 0;

	r = sweep_defaults(p, err, errlen);
	if (!r)
		r = cliopt_init(&ps, sweep_opts, argc, argv, err, errlen);
	if (r)
		return r;
	while ((c = cliopt_next(&ps)) > 0) {
		if (c == CLIOPT_HELP) {
			p->help = 1;
			return 0;
		}
		r = detect_opt(&ps, c, &p->d, &seen);
		if (!r)
			r = sweep_opt(&ps, c, p, &seen);
		if (r < 0)
			return r;
	}
	r = end_of_options(&ps, c, argc, argv);
	return r ? r : sweep_check(&ps, p, seen);
}
