/* SPDX-License-Identifier: MIT */
/*
 * collect_bench: the cluster collector's engine alone (host/clusteragg; target: >= 100 k
 * datagrams/s on one core), in one thread pinned to one CPU, without sockets. K nodes (shared/node with
 * an xmit hook into memory, as tests/unit/host/collect/check_clusteragg.c does) pre-seal M interval reports, interleaved
 * node by node as a live collector would receive them, all of one job; then clusteragg_ingest() is timed over
 * them on a fresh store per repeat (the nodes' HELLOs go in first, untimed). Datagram sizes: 4, 12 and 26
 * records from counters (a rank = its summary and 3 classes, as tests/tools/nodesim sends them; 312, 696
 * and 1368 bytes), and 26 records of a sampled interval (sources too: the top-sources table). Columns:
 *   parse     datagram_parse() alone over the same datagrams (structure checks, HMAC-SHA256, copy-out)
 *   ingest    clusteragg_ingest(): parse + sequence tracking + per-node totals + temporal and spatial stats
 *   engine    ingest - parse: what the store adds per datagram
 *   bad-mac   clusteragg_ingest() of the same datagrams sealed under another key of the same id (a forger):
 *             structure checks and one HMAC, then dropped
 * Each figure is the median of several repeats, timed by the thread's CPU clock around the timed loop only
 * (CLOCK_THREAD_CPUTIME_ID: the CPU is pinned but the machine may be shared, and time others take from the
 * CPU is not ours; the last line says how much wall time exceeded CPU time). The three run in turn within a
 * repeat, and engine is the median of the per-repeat differences. A last table repeats the 26-record row for
 * jobs of more nodes (the store's per-datagram work grows with them), and one more the /metrics text by nodes
 * (its size and render time: what the receive loop spends on it each second). First with the SHA-256
 * compression function the process would choose (SHA-NI where the CPU has it) and then portable C
 * (sha256_impl_set(), what VNOISE_SHA256=generic selects; a quarter of the datagrams). Prints figures, never pass/fail; exits 1 only when
 * the store did not count the datagrams as expected (then the figures would mean nothing).
 *
 *   make build/bench/collect_bench && build/bench/collect_bench [-c CPU] [-k NODES] [-n DATAGRAMS] [-r REPEATS]
 *                                                               [-s 4|12|26|26s] [-d]
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include "collect/clusteragg.h"
#include "collect/clusterout.h"
#include "util/bufout.h"
#include "format/keyfile.h"
#include "util/parse.h"
#include "util/sha256.h"
#include "util/sha256_priv.h"
#include "cluster/node.h"
#include "format/datagram.h"
#include "lib/benchutil.h"

#define DEFAULT_NODES 64ULL
#define DEFAULT_DGRAMS 16384ULL
#define DEFAULT_REPEATS 7ULL
#define MAX_REPEATS 101
#define TARGET 100e3 /* datagrams/s on one core */
#define KEY "3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
#define OTHER_KEY "3 ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
#define T0_NS 1700000000000000000ull /* a realtime clock for the reports */
#define PERIOD_NS 10000000ull /* interval length */

/* Datagrams sealed by the nodes, packed one after the other (each at a 64-byte boundary). */
struct wire {
	uint8_t *data;
	size_t *off, *len;
	size_t n, cap, used, size;
};

static int wire_reserve(struct wire *w, size_t n, size_t bytes)
{
	void *p;

	if (n > w->cap) {
		size_t cap = w->cap ? w->cap : 1024;

		while (cap < n)
			cap *= 2;
		if (!(p = realloc(w->off, cap * sizeof(*w->off))))
			return -ENOMEM;
		w->off = p;
		if (!(p = realloc(w->len, cap * sizeof(*w->len))))
			return -ENOMEM;
		w->len = p;
		w->cap = cap;
	}
	if (bytes > w->size) {
		size_t size = w->size ? w->size : 1 << 20;

		while (size < bytes)
			size *= 2;
		if (!(p = realloc(w->data, size)))
			return -ENOMEM;
		w->data = p;
		w->size = size;
	}
	return 0;
}

static ssize_t wire_xmit(void *ctx, const void *buf, size_t len)
{
	struct wire *w = ctx;
	size_t at = (w->used + 63) & ~(size_t)63;

	if (wire_reserve(w, w->n + 1, at + len))
		return -ENOMEM;
	memcpy(w->data + at, buf, len);
	w->off[w->n] = at;
	w->len[w->n++] = len;
	w->used = at + len;
	return (ssize_t)len;
}

static void wire_free(struct wire *w)
{
	free(w->data);
	free(w->off);
	free(w->len);
	memset(w, 0, sizeof(*w));
}

struct size {
	const char *id; /* for -s */
	const char *name;
	unsigned nrec;
	int sampled; /* detailed records (sources), kind VN_REPORT_INTERVAL */
};

static const struct size sizes[] = {
	{ "4", "4", 4, 0 },
	{ "12", "12", 12, 0 },
	{ "26", "26", 26, 0 },
	{ "26s", "26 sampled", 26, 1 },
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	return bench_xorshift64(&rng_state);
}

/*
 * nrec records of one node's interval, in nodesim's layout: per rank its summary (class NONE) and one record
 * per class (IRQ, SOFTIRQ, THREAD), each followed by its source when sampled.
 */
static void make_records(struct vn_report_rec *rec, unsigned nrec, int sampled, uint32_t node)
{
	static const uint8_t cls[3] = { VN_CLASS_IRQ, VN_CLASS_SOFTIRQ, VN_CLASS_THREAD };
	unsigned i = 0;

	for (uint32_t r = 0; i < nrec; r++) {
		struct vn_report_rec *sum = &rec[i++];

		memset(sum, 0, sizeof(*sum));
		sum->kind = VN_REPORT_REC_RANK;
		sum->id = r;
		sum->compute_ns = 9000000 + rng() % 1000000;
		for (int k = 0; k < 3 && i < nrec; k++) {
			struct vn_report_rec *x = &rec[i++];

			memset(x, 0, sizeof(*x));
			x->kind = VN_REPORT_REC_RANK;
			x->id = r;
			x->cls = cls[k];
			x->noise_ns = rng() % 50000;
			x->count = 1 + (uint32_t)(rng() % 5);
			sum->noise_ns += x->noise_ns;
			sum->count += x->count;
			if (!sampled || i >= nrec)
				continue;
			rec[i] = *x;
			x = &rec[i++];
			if (cls[k] == VN_CLASS_IRQ) {
				x->src_kind = VN_REPORT_SRC_IRQ;
				x->src_id = 11;
				snprintf(x->name, sizeof(x->name), "virtio0-input");
			} else if (cls[k] == VN_CLASS_SOFTIRQ) {
				x->src_kind = VN_REPORT_SRC_SOFTIRQ;
				x->src_id = 3;
				snprintf(x->name, sizeof(x->name), "NET_RX");
			} else {
				x->src_kind = VN_REPORT_SRC_THREAD;
				x->src_id = 1000 + node * 64 + r;
				snprintf(x->name, sizeof(x->name), "kworker/%u:1", r % 64);
			}
		}
	}
}

/*
 * Seal the nodes' HELLOs into hello and ndgrams interval reports of sz into w, node after node per
 * interval, under keys. 0 or -errno.
 */
static int seal(const struct keyfile *keys, uint32_t nnodes, uint64_t ndgrams,
		const struct size *sz, struct wire *hello, struct wire *w)
{
	struct vn_report_rec rec[VN_REPORT_MAX_RECS];
	struct node *nodes = calloc(nnodes, sizeof(*nodes));
	uint64_t iv = 0, sent = 0;
	int rc = 0;

	if (!nodes)
		return -ENOMEM;
	rng_state = 0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < nnodes; i++) {
		struct node *n = &nodes[i];

		n->fd = -1;
		n->cfg.node_id = i + 1;
		n->cfg.session_id = 1000 + i;
		n->cfg.job_id = datagram_job_id("collect-bench");
		n->cfg.keys = keys;
		n->xmit = wire_xmit;
		n->xmit_ctx = hello;
		rc = node_hello(n, T0_NS);
		if (rc)
			goto out;
		n->xmit_ctx = w;
	}
	while (sent < ndgrams) {
		uint64_t start = T0_NS + iv * PERIOD_NS;

		for (uint32_t i = 0; i < nnodes && sent < ndgrams; i++, sent++) {
			make_records(rec, sz->nrec, sz->sampled, i);
			rc = node_send(
			    &nodes[i], sz->sampled ? VN_REPORT_INTERVAL : VN_REPORT_COUNTERS, iv,
			    start, start + PERIOD_NS, rec, sz->nrec, start + PERIOD_NS + 1000);
			if (rc)
				goto out;
		}
		iv++;
	}
out:
	free(nodes);
	return rc;
}

/* This thread's CPU time in seconds: the figures do not count time other processes took from the CPU. */
static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum op { OP_PARSE, OP_INGEST };

static volatile int sink;

/*
 * One repeat: a fresh store, the HELLOs (untimed), then op over every datagram of w. Returns the seconds
 * op took, or -1 when a datagram was not counted as want (CS_OK or CS_BAD_MAC).
 */
static double run(const struct keyfile *keys, const struct wire *hello, const struct wire *w,
		  enum op op, int want)
{
	struct clusteragg_cfg cfg = { .keys = keys, .max_nodes = (unsigned)hello->n };
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons(20000) };
	struct datagram_view *v = NULL;
	struct clusteragg *cs = NULL;
	uint64_t bad = 0;
	double t0, t = -1;

	src.sin_addr.s_addr = htonl(0x7f000001);
	if (op == OP_PARSE) {
		v = malloc(sizeof(*v));
		if (!v)
			goto out;
		t0 = cpu_s();
		for (size_t i = 0; i < w->n; i++) {
			int rc = datagram_parse(w->data + w->off[i], w->len[i],
						datagram_keytab_lookup, (void *)&keys->tab, v);

			bad += rc != (want == CS_OK ? 0 : -EKEYREJECTED);
			sink += v->hdr.nrec;
		}
		t = cpu_s() - t0;
		goto out;
	}
	cs = clusteragg_new(&cfg);
	if (!cs)
		goto out;
	for (size_t i = 0; i < hello->n; i++)
		bad += clusteragg_ingest(cs, hello->data + hello->off[i], hello->len[i],
					 (struct sockaddr *)&src, sizeof(src), T0_NS) != CS_OK;
	t0 = cpu_s();
	for (size_t i = 0; i < w->n; i++)
		bad +=
		    clusteragg_ingest(cs, w->data + w->off[i], w->len[i], (struct sockaddr *)&src,
				      sizeof(src), T0_NS + i * 1000) != want;
	t = cpu_s() - t0;
out:
	clusteragg_free(cs);
	free(v);
	if (bad) {
		fprintf(stderr, "collect_bench: %llu datagrams not counted %s\n",
			(unsigned long long)bad, clusteragg_res_name(want));
		return -1;
	}
	return t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	return v[n / 2];
}

/*
 * The row of one size for the compression function in use: each repeat runs parse, ingest and bad-mac one
 * after the other (so that a disturbance of the machine hits the three alike), after one warm-up round.
 * 0, or -1 on a miscount.
 */
static int row(const struct keyfile *kf, const struct wire *hello, const struct wire *good,
	       const struct wire *forged, const char *name, int repeats)
{
	double tp[MAX_REPEATS], ti[MAX_REPEATS], tb[MAX_REPEATS], te[MAX_REPEATS];
	double n = (double)good->n, p, ok, bad;

	for (int i = -1; i < repeats; i++) {
		double a = run(kf, hello, good, OP_PARSE, CS_OK);
		double b = run(kf, hello, good, OP_INGEST, CS_OK);
		double c = run(kf, hello, forged, OP_INGEST, CS_BAD_MAC);

		if (a < 0 || b < 0 || c < 0)
			return -1;
		if (i < 0)
			continue; /* warm-up */
		tp[i] = a;
		ti[i] = b;
		tb[i] = c;
		te[i] = b - a;
	}
	p = n / median(tp, repeats);
	ok = n / median(ti, repeats);
	bad = n / median(tb, repeats);
	printf("%-10s %5zu %7.0f k %5.0f ns %7.0f k %5.0f ns %7.0f ns %7.0f k %5.0f ns\n", name,
	       good->len[0], p / 1e3, 1e9 / p, ok / 1e3, 1e9 / ok, median(te, repeats) * 1e9 / n,
	       bad / 1e3, 1e9 / bad);
	return 0;
}

/* The heading of a table whose rows are named by first (records, nodes). */
static void table_head(const char *first)
{
	printf("%-10s %5s %16s %16s %10s %16s\n", first, "bytes", "parse", "ingest", "engine",
	       "bad-mac");
}

/*
 * One row called name: ndgrams datagrams of size from nnodes nodes, sealed under kf and (the forger's) under
 * other, then timed. 0 or -1 on a miscount or no memory.
 */
static int seal_and_row(const struct keyfile *kf, const struct keyfile *other, uint32_t nnodes,
			uint64_t ndgrams, const struct size *size, const char *name, int repeats)
{
	struct wire hello = { 0 }, good = { 0 }, forged = { 0 }, junk = { 0 };
	int rc = -1;

	if (seal(kf, nnodes, ndgrams, size, &hello, &good) ||
	    seal(other, nnodes, ndgrams, size, &junk, &forged))
		fprintf(stderr, "collect_bench: out of memory\n");
	else
		rc = row(kf, &hello, &good, &forged, name, repeats);
	wire_free(&hello);
	wire_free(&good);
	wire_free(&forged);
	wire_free(&junk);
	return rc;
}

/* The table for the compression function in use (row only: NULL all); 0 or -1 on a miscount or no memory. */
static int report(const struct keyfile *kf, const struct keyfile *other, uint32_t nnodes,
		  uint64_t ndgrams, int repeats, const char *only)
{
	table_head("records");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int rc;

		if (only && strcmp(only, sizes[s].id))
			continue;
		rc = seal_and_row(kf, other, nnodes, ndgrams, &sizes[s], sizes[s].name, repeats);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * How the store's cost grows with the nodes of one job: the 26-record row for each of sweep_nodes, with
 * 16 intervals per node (a steady state: the first interval of a node costs more). 0 or -1.
 */
static const uint32_t sweep_nodes[] = { 256, 1024, 4096 };

static int sweep(const struct keyfile *kf, const struct keyfile *other, uint64_t ndgrams,
		 int repeats)
{
	table_head("nodes");
	for (size_t i = 0; i < sizeof(sweep_nodes) / sizeof(sweep_nodes[0]); i++) {
		uint64_t n = 16ull * sweep_nodes[i] > ndgrams ? 16ull * sweep_nodes[i] : ndgrams;
		char name[16];
		int rc;

		snprintf(name, sizeof(name), "%u", sweep_nodes[i]);
		rc = seal_and_row(kf, other, sweep_nodes[i], n, &sizes[2], name, repeats);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The /metrics text of a collector with K nodes (one sampled interval each: their top sources are series):
 * its size and the CPU time clusterout_prom() takes to render it, median of repeats. The receive loop
 * renders it (host/collect/collect.c publish: every second, or every 20 renders' time when that is longer);
 * scrapes only copy it. 0 or -1.
 */
static const uint32_t text_nodes[] = { 1024, 4096, 16384, 65536 };

static int exposition(const struct keyfile *kf, int repeats)
{
	printf("%-10s %12s %12s %s\n", "nodes", "text bytes", "render",
	       "receive-loop share at 1/s");
	for (size_t k = 0; k < sizeof(text_nodes) / sizeof(text_nodes[0]); k++) {
		uint32_t nn = text_nodes[k];
		struct clusteragg_cfg cfg = { .keys = kf, .max_nodes = nn };
		struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = htons(20000) };
		struct wire hello = { 0 }, w = { 0 };
		struct clusteragg *cs = NULL;
		size_t cap = 1u << 20, len = 0;
		double t[51], ms;
		char *buf = NULL;
		int rc = -1;

		src.sin_addr.s_addr = htonl(0x7f000001);
		if (seal(kf, nn, nn, &sizes[3], &hello, &w) || !(cs = clusteragg_new(&cfg)))
			goto next;
		for (size_t i = 0; i < hello.n; i++)
			(void)clusteragg_ingest(cs, hello.data + hello.off[i], hello.len[i],
						(struct sockaddr *)&src, sizeof(src), T0_NS);
		for (size_t i = 0; i < w.n; i++)
			(void)clusteragg_ingest(cs, w.data + w.off[i], w.len[i],
						(struct sockaddr *)&src, sizeof(src), T0_NS + i);
		for (int r = 0; r < repeats && r < 51; r++) {
			struct bufout o;
			double t0;

			for (;;) {
				char *nb = len ? buf : realloc(buf, cap);

				if (!nb)
					goto next;
				buf = nb;
				o = (struct bufout){ .buf = buf, .len = cap };
				t0 = cpu_s();
				if (!clusterout_prom(cs, &o) && bufout_result(&o) >= 0)
					break;
				cap *= 2;
				len = 0;
			}
			t[r] = cpu_s() - t0;
			len = o.off;
		}
		ms = median(t, repeats < 51 ? repeats : 51) * 1e3;
		printf("%-10u %12zu %9.1f ms %6.1f%%\n", nn, len, ms, ms / 10.0);
		rc = 0;
	next:
		clusteragg_free(cs);
		wire_free(&hello);
		wire_free(&w);
		free(buf);
		if (rc) {
			fprintf(stderr, "collect_bench: out of memory\n");
			return -1;
		}
	}
	return 0;
}

static void usage(const char *prog)
{
	fprintf(
	    stderr,
	    "usage: %s [-c CPU] [-k NODES] [-n DATAGRAMS] [-r REPEATS] [-s 4|12|26|26s] [-d]\n"
	    "  defaults: the last CPU this process may use, %llu nodes, %llu datagrams per "
	    "repeat, %llu repeats (at most %d)\n"
	    "  -s: that row only (records per datagram; 26s: sampled);  -d: the default SHA-256 "
	    "only (not generic too); both for profiling\n",
	    prog, (unsigned long long)DEFAULT_NODES, (unsigned long long)DEFAULT_DGRAMS,
	    (unsigned long long)DEFAULT_REPEATS, MAX_REPEATS);
	exit(2);
}

/* What the command line asks for. */
struct bench_opts {
	uint64_t nnodes, ndgrams, repeats, cpu;
	int have_cpu; /* cpu given; else the last CPU this process may use */
	int default_only; /* the default SHA-256 only */
	const char *only; /* one row (sizes[].id), or NULL */
};

/* Parse the command line into *o; exits through usage() on error. */
static void parse_args(int argc, char **argv, struct bench_opts *o)
{
	int c;

	*o = (struct bench_opts){ .nnodes = DEFAULT_NODES,
				  .ndgrams = DEFAULT_DGRAMS,
				  .repeats = DEFAULT_REPEATS };
	while ((c = getopt(argc, argv, "c:k:n:r:s:d")) != -1) {
		switch (c) {
		case 'c':
			if (parse_u64(optarg, &o->cpu) || o->cpu >= CPU_SETSIZE)
				usage(argv[0]);
			o->have_cpu = 1;
			break;
		case 'k':
			if (parse_count(optarg, &o->nnodes) || o->nnodes > (1 << 20))
				usage(argv[0]);
			break;
		case 'n':
			if (parse_count(optarg, &o->ndgrams) || o->ndgrams > 1 << 22)
				usage(argv[0]);
			break;
		case 'r':
			if (parse_count(optarg, &o->repeats) || o->repeats > MAX_REPEATS)
				usage(argv[0]);
			break;
		case 's':
			o->only = optarg;
			for (c = 0; c < (int)(sizeof(sizes) / sizeof(sizes[0])); c++)
				if (!strcmp(o->only, sizes[c].id))
					break;
			if (c == (int)(sizeof(sizes) / sizeof(sizes[0])))
				usage(argv[0]);
			break;
		case 'd':
			o->default_only = 1;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc)
		usage(argv[0]);
}

/* Run on o->cpu alone (picking the last allowed CPU when none was given); *saved gets the affinity to
 * restore. Returns 0, or 1 with a message. */
static int pin_cpu(struct bench_opts *o, cpu_set_t *saved)
{
	cpu_set_t one;

	if (sched_getaffinity(0, sizeof(*saved), saved)) {
		perror("collect_bench: sched_getaffinity");
		return 1;
	}
	if (!o->have_cpu)
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, saved))
				o->cpu = (uint64_t)i;
	CPU_ZERO(&one);
	CPU_SET((int)o->cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one)) {
		fprintf(stderr, "collect_bench: cannot run on CPU %llu: %s\n",
			(unsigned long long)o->cpu, strerror(errno));
		return 1;
	}
	return 0;
}

/* Every table: the default SHA-256, the generic one (unless -d), the sweep by nodes (unless -s); then the
 * wall/CPU ratio and the command that reproduces the run. Returns 0 or 1. */
static int run_all(const struct keyfile *kf, const struct keyfile *other,
		   const struct bench_opts *o)
{
	enum sha256_impl def = sha256_impl_get();
	double wall0 = now_s(), cpu0 = cpu_s();

	printf("sha256 %s (default here):\n", sha256_impl_name());
	if (report(kf, other, (uint32_t)o->nnodes, o->ndgrams, (int)o->repeats, o->only))
		return 1;
	if (!o->default_only && def != SHA256_IMPL_GENERIC) {
		if (sha256_impl_set(SHA256_IMPL_GENERIC))
			return 1; /* cannot happen: every CPU runs it */
		printf(
		    "sha256 generic (portable C, as with VNOISE_SHA256=generic; a quarter of the "
		    "datagrams):\n");
		if (report(kf, other, (uint32_t)o->nnodes, o->ndgrams / 4 ? o->ndgrams / 4 : 1,
			   (int)o->repeats, o->only))
			return 1;
		if (sha256_impl_set(def))
			return 1; /* cannot happen: it ran above */
	}
	if (!o->only) {
		printf("26 records, sha256 %s, by nodes in the job (16 intervals per node):\n",
		       sha256_impl_name());
		if (sweep(kf, other, o->ndgrams, (int)o->repeats))
			return 1;
		printf("/metrics text by nodes in the collector (rendered by its receive loop; a "
		       "scrape "
		       "copies it):\n");
		if (exposition(kf, (int)o->repeats))
			return 1;
	}
	printf(
	    "wall time / CPU time of the whole run: %.3f (above 1: other tasks took the CPU; the "
	    "figures count CPU time)\n",
	    (now_s() - wall0) / (cpu_s() - cpu0));
	printf("reproduce: make build/bench/collect_bench && build/bench/collect_bench -c %llu -k "
	       "%llu "
	       "-n %llu -r %llu%s%s%s\n",
	       (unsigned long long)o->cpu, (unsigned long long)o->nnodes,
	       (unsigned long long)o->ndgrams, (unsigned long long)o->repeats,
	       o->only ? " -s " : "", o->only ? o->only : "", o->default_only ? " -d" : "");
	return 0;
}

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct keyfile kf, other;
	cpu_set_t saved;
	char err[128];
	int ret;

	parse_args(argc, argv, &o);
	if (keyfile_parse(KEY, &kf, err, sizeof(err)) ||
	    keyfile_parse(OTHER_KEY, &other, err, sizeof(err))) {
		fprintf(stderr, "collect_bench: %s\n", err);
		return 1;
	}
	if (pin_cpu(&o, &saved))
		return 1;
	printf(
	    "collect_bench: clusteragg_ingest() on CPU %llu, %llu nodes (one job), %llu datagrams "
	    "per "
	    "repeat, median of %llu; datagrams/s in thousands and ns per datagram (target >= %.0f "
	    "k/s)\n",
	    (unsigned long long)o.cpu, (unsigned long long)o.nnodes, (unsigned long long)o.ndgrams,
	    (unsigned long long)o.repeats, TARGET / 1e3);
	ret = run_all(&kf, &other, &o);
	if (sched_setaffinity(0, sizeof(saved), &saved))
		perror("collect_bench: restoring the CPU affinity");
	keyfile_clear(&kf);
	keyfile_clear(&other);
	return ret;
}
