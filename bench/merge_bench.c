/* SPDX-License-Identifier: MIT */
/*
 * merge_bench: throughput of the attribution engine (shared/attrib/merge) on one core. It generates a synthetic,
 * realistic stream for one CPU: the sampler runs ~100 us, then a 5-50 us gap holds 1-3 events (a local timer
 * irq followed by the TIMER softirq with an irq nested now and then, or a kworker thread with an irq inside);
 * an event storm of short irqs and softirqs runs while the sampler does (about 80% of all events outside any
 * gap); now and then a steal observation. Records come in kernel emission order (children before parents)
 * and are fed in batches, each followed by merge_process() at the sampler's progress. Only the merge calls
 * are timed (CLOCK_MONOTONIC). Prints figures, never pass/fail.
 *
 *   make build/bench/merge_bench && build/bench/merge_bench [events]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "attrib/merge.h"
#include "lib/benchutil.h"

#define DEFAULT_EVENTS 5000000ULL
#define BATCH \
	4096 /* records per batch at most (~2 ms of trace; a batch ends at a cycle boundary) */

struct rec {
	int is_sample;
	struct vn_event e;
	struct vn_sample s;
};

struct gen {
	uint64_t rng;
	uint64_t now; /* sampler time: no gap and no event open here */
	uint64_t events, gaps, storm; /* storm: events outside any gap */
	struct rec *r;
	size_t n;
};

static uint32_t rnd(struct gen *g, uint32_t n)
{
	return (uint32_t)((bench_xorshift64(&g->rng) >> 11) % n);
}

static void push_ev(struct gen *g, int cls, uint32_t id, uint64_t start, uint64_t end, uint64_t net,
		    int pcls, uint32_t pid, int depth)
{
	struct rec *r = &g->r[g->n++];

	memset(r, 0, sizeof(*r));
	bench_event(&r->e, cls, id, start, end, net, pcls, pid, depth);
	if (cls == VN_CLASS_THREAD)
		snprintf(r->e.comm, sizeof(r->e.comm), "kworker/0:%u", id % 64);
	g->events++;
}

static void push_sample(struct gen *g, int kind, uint64_t start, uint64_t end)
{
	struct rec *r = &g->r[g->n++];

	memset(r, 0, sizeof(*r));
	r->is_sample = 1;
	r->s.kind = (uint8_t)kind;
	r->s.start_ns = start;
	r->s.end_ns = end;
	if (kind == VN_SAMPLE_GAP)
		g->gaps++;
}

static const uint32_t storm_irq[] = { VN_VEC_BASE + VN_VEC_RESCHEDULE,
				      VN_VEC_BASE + VN_VEC_CALL_FUNCTION,
				      VN_VEC_BASE + VN_VEC_IRQ_WORK,
				      24,
				      25,
				      26,
				      27,
				      30 };

/* One cycle: a sampler window with a storm of short events, then a gap with its events. <= 24 records. */
static void cycle(struct gen *g)
{
	uint64_t t = g->now, wend = t + 80000 + rnd(g, 40000);
	uint64_t gs, ge, a;
	int k, nstorm = 6 + (int)rnd(g, 5);

	/* storm: short events below the threshold while the sampler runs, in time order */
	for (k = 0; k < nstorm; k++) {
		uint64_t s = t + (wend - t) * (uint64_t)k / (uint64_t)nstorm + rnd(g, 2000);
		uint64_t d = 300 + rnd(g, 900);

		g->storm++;
		if (rnd(g, 4))
			push_ev(g, VN_CLASS_IRQ, storm_irq[rnd(g, 8)], s, s + d, d, VN_CLASS_NONE,
				0, 0);
		else
			push_ev(g, VN_CLASS_SOFTIRQ, 2 + rnd(g, 8), s, s + d, d, VN_CLASS_NONE, 0,
				0);
	}
	push_sample(g, VN_SAMPLE_WINDOW, t, wend);
	if (rnd(g, 100) == 0) /* steal seen while the sampler ran */
		push_ev(g, VN_CLASS_STEAL, 0, t, wend + 60000, 2000 + rnd(g, 20000), VN_CLASS_NONE,
			0, 0);

	/* the gap: 5-50 us */
	gs = wend;
	ge = gs + 5000 + rnd(g, 45000);
	a = gs + 200 + rnd(g, 300);
	if (rnd(g, 4)) {
		/* timer irq, then the TIMER softirq (an irq nested in it now and then) */
		uint64_t ie = a + 1000 + rnd(g, 2000), ss = ie + 100, se = ge - 100 - rnd(g, 300);

		push_ev(g, VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_LOCAL_TIMER, a, ie, ie - a,
			VN_CLASS_NONE, 0, 0);
		if (rnd(g, 3) == 0 && se - ss > 600) {
			uint64_t ns = ss + 100, ne = ns + 400;

			push_ev(g, VN_CLASS_IRQ, storm_irq[rnd(g, 8)], ns, ne, 400,
				VN_CLASS_SOFTIRQ, 1, 1);
			push_ev(g, VN_CLASS_SOFTIRQ, 1, ss, se, se - ss - 400, VN_CLASS_NONE, 0, 0);
		} else {
			push_ev(g, VN_CLASS_SOFTIRQ, 1, ss, se, se - ss, VN_CLASS_NONE, 0, 0);
		}
	} else {
		/* a kworker preempts the sampler; an irq arrives inside it */
		uint32_t pid = 100 + rnd(g, 40);
		uint64_t te = ge - 100 - rnd(g, 100), is = a + (te - a) / 2, ie = is + 800;

		if (ie > te)
			ie = te;
		push_ev(g, VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_LOCAL_TIMER, is, ie, ie - is,
			VN_CLASS_THREAD, pid, 1);
		push_ev(g, VN_CLASS_THREAD, pid, a, te, te - a - (ie - is), VN_CLASS_NONE, 0, 0);
	}
	push_sample(g, VN_SAMPLE_GAP, gs, ge);
	g->now = ge;
}

int main(int argc, char **argv)
{
	struct gen g = { .rng = 0x9e3779b97f4a7c15ULL, .now = 1000000 };
	uint64_t target = DEFAULT_EVENTS, batches = 0, cls_sum = 0;
	struct merge *m = NULL;
	const struct merge_cpu *c;
	double t = 0, t0;
	size_t i;
	int err = 0, cl;

	if (argc > 2 || (argc == 2 && parse_count(argv[1], &target))) {
		fprintf(stderr, "usage: %s [events]  (default %llu)\n", argv[0],
			(unsigned long long)DEFAULT_EVENTS);
		return 2;
	}
	g.r = malloc(BATCH * sizeof(*g.r));
	m = merge_new(NULL, NULL);
	if (!g.r || !m) {
		fprintf(stderr, "merge_bench: out of memory\n");
		err = 1;
		goto out;
	}
	while (g.events < target) {
		g.n = 0;
		while (g.n + 24 <= BATCH && g.events < target)
			cycle(&g);
		t0 = now_s();
		for (i = 0; i < g.n && !err; i++)
			err = g.r[i].is_sample ? merge_add_sample(m, &g.r[i].s)
					       : merge_add_event(m, &g.r[i].e);
		if (!err)
			err = merge_process(m, g.now);
		t += now_s() - t0;
		batches++;
		if (err) {
			fprintf(stderr, "merge_bench: merge failed: %s\n", strerror(-err));
			err = 1;
			goto out;
		}
	}
	t0 = now_s();
	err = merge_process(m, UINT64_MAX);
	t += now_s() - t0;
	if (err) {
		fprintf(stderr, "merge_bench: merge failed: %s\n", strerror(-err));
		err = 1;
		goto out;
	}
	c = merge_cpu(m, 0);
	for (cl = 0; cl < VN_CLASS_MAX; cl++)
		cls_sum += c->class_ns[cl];
	printf("merge: %llu events, %llu gaps, %.2f M events/s (one core)\n",
	       (unsigned long long)g.events, (unsigned long long)g.gaps,
	       (double)g.events / t / 1e6);
	printf("  %.1f%% of events outside any gap\n", 100.0 * (double)g.storm / (double)g.events);
	printf("  %.3f s in merge calls, %llu batches of <= %d records, %llu sources, %llu late, "
	       "%llu clamped\n",
	       t, (unsigned long long)batches, BATCH, (unsigned long long)c->nsrc,
	       (unsigned long long)c->late, (unsigned long long)c->clamped);
	printf(
	    "  noise %.3f ms over %.3f ms runtime; class parts %s noise; unexplained %.2f%%, steal "
	    "%.2f%%\n",
	    (double)c->noise_ns / 1e6, (double)c->runtime_ns / 1e6,
	    cls_sum == c->noise_ns ? "add up to" : "DO NOT add up to",
	    100.0 * (double)c->class_ns[VN_CLASS_UNEXPLAINED] / (double)c->noise_ns,
	    100.0 * (double)c->class_ns[VN_CLASS_STEAL] / (double)c->noise_ns);
	printf("reproduce: make build/bench/merge_bench && build/bench/merge_bench %llu\n",
	       (unsigned long long)target);
out:
	merge_free(m);
	free(g.r);
	return err;
}
