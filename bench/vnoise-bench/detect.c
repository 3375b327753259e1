/* SPDX-License-Identifier: MIT */
/*
 * detect: seed 003's noise detector (its Fig. 1): start timer, N collectives, stop timer. Every run starts
 * at a barrier; its time is the slowest rank's (MPI_Reduce MAX to rank 0), because a collective program runs
 * at the pace of its latest process. W warm-up runs are not counted. Rank 0 prints a line per run and the
 * summary of bench/lib/nstats (median with nonparametric CIs, mean, sd), or one vnoise.detect/1 JSON line.
 * The command line is parsed before MPI_Init: bad input is one line from rank 0 and exit 2 on every rank,
 * with no MPI job started.
 */
#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "util/json.h"
#include "util/log.h"
#include "util/monotime.h"
#include "lib/nstats.h"
#include "vnbench.h"

/*
 * Under AddressSanitizer (make SANITIZE=...), OpenMPI never frees much of what it allocates at MPI_Init, in
 * its components and in its progress thread, and LeakSanitizer would fail every rank for it: the main
 * thread's MPI_Init and MPI_Finalize are not tracked, and leaks with OpenMPI's libraries (the progress
 * thread runs libevent) on their stack are suppressed. Ours are still reported.
 */
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#define MPI_UNTRACKED(call)       \
	do {                      \
		__lsan_disable(); \
		call;             \
		__lsan_enable();  \
	} while (0)
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	/* The frame-pointer unwinder stops in OpenMPI's components, short of the library to match. */
	return "fast_unwind_on_malloc=0";
}
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libevent_core\n"
	       "leak:libpmix.so\n";
}
#else
#define MPI_UNTRACKED(call) call
#endif

#define GATE_TIMEOUT_NS (60 * 1000000000ULL)
#define GATE_POLL_NS 1000000L /* 1 ms: only before the first run */

/* Whether the launcher says (before MPI_Init) that this is rank 0 (OpenMPI, PMIx, MPICH); run alone: yes. */
static int launcher_rank0(void)
{
	static const char *const vars[] = { "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK" };

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v)
			return !strcmp(v, "0");
	}
	return 1;
}

/* Buffers of one collective; barrier needs none. */
struct detect_bufs {
	void *send, *recv;
	int n; /* elements per peer (alltoall: bytes) or in total (allreduce: doubles) */
};

static int bufs_alloc(struct detect_bufs *b, const struct detect_params *p, int nranks)
{
	size_t bytes;

	memset(b, 0, sizeof(*b));
	if (p->op == VNB_OP_BARRIER)
		return 0;
	if (p->op == VNB_OP_ALLREDUCE) {
		b->n = p->size / 8 ? p->size / 8 : 1;
		bytes = (size_t)b->n * sizeof(double);
	} else {
		b->n = p->size;
		bytes = (size_t)p->size * (size_t)nranks;
	}
	b->send = calloc(1, bytes);
	b->recv = calloc(1, bytes);
	if (!b->send || !b->recv)
		return -ENOMEM;
	if (p->op == VNB_OP_ALLREDUCE)
		for (int i = 0; i < b->n; i++)
			((double *)b->send)[i] = 1.0;
	return 0;
}

static void bufs_free(struct detect_bufs *b)
{
	free(b->send);
	free(b->recv);
}

/* One run: N collectives between a barrier and the clock; this rank's time in seconds. */
static double detect_run(const struct detect_params *p, struct detect_bufs *b)
{
	uint64_t t0, t1;
	int i;

	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now_ns();
	switch (p->op) {
	case VNB_OP_BARRIER:
		for (i = 0; i < p->count; i++)
			MPI_Barrier(MPI_COMM_WORLD);
		break;
	case VNB_OP_ALLREDUCE:
		for (i = 0; i < p->count; i++)
			MPI_Allreduce(b->send, b->recv, b->n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		break;
	default:
		for (i = 0; i < p->count; i++)
			MPI_Alltoall(b->send, b->n, MPI_BYTE, b->recv, b->n, MPI_BYTE,
				     MPI_COMM_WORLD);
		break;
	}
	t1 = now_ns();
	return (double)(t1 - t0) / 1e9;
}

/* Rank 0: wait until the gate file exists. 0 or -ETIMEDOUT. */
static int gate_wait(const char *path)
{
	const struct timespec ts = { 0, GATE_POLL_NS };
	uint64_t end = now_ns() + GATE_TIMEOUT_NS;

	while (access(path, F_OK)) {
		if (now_ns() > end)
			return -ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* "key":[lo,hi], or null when the interval is not usable (too few runs). Shared with the sweep's JSON. */
void detect_json_ci(struct json_writer *w, const char *key, int ok, double lo, double hi)
{
	json_key(w, key);
	if (!ok) {
		json_null(w);
		return;
	}
	json_arr_begin(w);
	json_double(w, lo);
	json_double(w, hi);
	json_arr_end(w);
}

static int print_json(const struct detect_params *p, int nranks, const double *runs,
		      const struct nstats_summary *s)
{
	struct json_writer w;

	json_init(&w, stdout, 0);
	json_obj_begin(&w);
	json_kv_str(&w, "schema", "vnoise.detect/1");
	json_kv_str(&w, "op", opts_op_name(p->op));
	json_kv_i64(&w, "count", p->count);
	json_kv_i64(&w, "size", p->op == VNB_OP_BARRIER ? 0 : p->size);
	json_kv_i64(&w, "ranks", nranks);
	json_kv_i64(&w, "warmup", p->warmup);
	json_key(&w, "runs_s");
	json_arr_begin(&w);
	for (int i = 0; i < p->runs; i++)
		json_double(&w, runs[i]);
	json_arr_end(&w);
	json_key(&w, "summary");
	json_obj_begin(&w);
	json_kv_u64(&w, "n", s->n);
	json_kv_double(&w, "mean_s", s->mean);
	json_kv_double(&w, "sd_s", s->sd);
	json_kv_double(&w, "median_s", s->median);
	detect_json_ci(&w, "median95_s", s->med95_ok, s->med95_lo, s->med95_hi);
	detect_json_ci(&w, "median99_s", s->med99_ok, s->med99_lo, s->med99_hi);
	detect_json_ci(&w, "mean95_s", s->mean_ok, s->mean95_lo, s->mean95_hi);
	detect_json_ci(&w, "mean99_s", s->mean_ok, s->mean99_lo, s->mean99_hi);
	json_kv_double(&w, "min_s", s->min);
	json_kv_double(&w, "max_s", s->max);
	json_obj_end(&w);
	json_obj_end(&w);
	return json_finish(&w);
}

static void print_ci(const char *what, int ok, double lo, double hi)
{
	if (ok)
		printf("  %s [%.6f, %.6f]", what, lo, hi);
	else
		printf("  %s n/a (too few runs)", what);
}

static void print_text(const struct detect_params *p, const struct nstats_summary *s)
{
	printf("summary: n %zu, mean %.6f s, sd %.6f s (%.2f%%), min %.6f s, max %.6f s\n", s->n,
	       s->mean, s->sd, s->mean > 0 ? 100.0 * s->sd / s->mean : 0.0, s->min, s->max);
	printf("median %.6f s:", s->median);
	print_ci("95% CI", s->med95_ok, s->med95_lo, s->med95_hi);
	print_ci("99% CI", s->med99_ok, s->med99_lo, s->med99_hi);
	printf("\n");
	if (s->mean_ok)
		printf("mean 95%% CI [%.6f, %.6f], 99%% CI [%.6f, %.6f]\n", s->mean95_lo,
		       s->mean95_hi, s->mean99_lo, s->mean99_hi);
	printf("per collective: %.3f us (median run / %d)\n", 1e6 * s->median / p->count, p->count);
	fflush(stdout);
}

int detect_main(int argc, char **argv)
{
	struct detect_params p;
	struct detect_bufs b = { 0 };
	struct nstats_summary s;
	double *runs = NULL;
	char msg[256];
	int rank = 0, nranks = 1, ok = 1, ret = EXIT_FAIL;

	log_set_prog("vnoise-bench detect");
	if (opts_detect_parse(argc, argv, &p, msg, sizeof(msg))) {
		if (launcher_rank0())
			log_err("%s", msg);
		return EXIT_USAGE;
	}
	if (p.help) {
		if (launcher_rank0())
			fputs(detect_usage, stdout);
		cliopt_exit_print(stdout, CLIOPT_EXITS_COMMON);
		return EXIT_OK;
	}
	MPI_UNTRACKED(MPI_Init(&argc, &argv));
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);

	runs = calloc((size_t)p.runs, sizeof(*runs));
	if (!runs || bufs_alloc(&b, &p, nranks))
		ok = 0;
	/* Every rank must agree to go on, or all would hang in the first collective. */
	MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!ok) {
		if (!rank)
			log_err("out of memory for %d runs of %d-byte messages", p.runs, p.size);
		goto out;
	}
	if (!rank && p.gate[0] && gate_wait(p.gate)) {
		log_err("--gate: %s did not appear within 60 s", p.gate);
		ok = 0;
	}
	MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (!ok)
		goto out;
	if (!rank && !p.json) {
		printf("vnoise-bench detect: %s x %d", opts_op_name(p.op), p.count);
		if (p.op != VNB_OP_BARRIER)
			printf(", %d bytes", p.size);
		printf(", %d ranks, %d warm-up + %d runs\n", nranks, p.warmup, p.runs);
		fflush(stdout);
	}
	for (int i = 0; i < p.warmup + p.runs; i++) {
		double t = detect_run(&p, &b), tmax = 0;

		MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
		if (rank)
			continue;
		if (i >= p.warmup)
			runs[i - p.warmup] = tmax;
		if (!p.json) {
			if (i < p.warmup)
				printf("warm-up %d: %.6f s\n", i + 1, tmax);
			else
				printf("run %d: %.6f s\n", i - p.warmup + 1, tmax);
			fflush(stdout);
		}
	}
	if (!rank) {
		if (nstats_summarize(runs, (size_t)p.runs, &s)) {
			log_err("cannot summarize %d runs", p.runs);
			goto out;
		}
		if (p.json) {
			if (print_json(&p, nranks, runs, &s)) {
				log_err("writing the JSON line failed");
				goto out;
			}
		} else {
			print_text(&p, &s);
		}
	}
	ret = EXIT_OK;
out:
	bufs_free(&b);
	free(runs);
	MPI_UNTRACKED(MPI_Finalize());
	return ret;
}
