/* SPDX-License-Identifier: MIT */
/*
 * match_bench: throughput of the guest<->host matcher (host/match/match) on one core. It generates realistic
 * synthetic streams for 4 vCPUs: the sampler runs ~200 us (a short irq of the storm now and then), then a gap
 * of 5 us .. 5 ms (mostly short, a long tail); ~30% of gaps hold a host out interval (preempted by a host task,
 * or blocked with the pCPU idle) with 1-2 host runs in it; ~50% hold guest events (a timer irq followed by
 * the TIMER softirq, or a kworker with an irq nested in it), emitted in kernel order (children first). Records
 * are fed in chunks of ~10 ms per vCPU like a live host would (guest records, then the dispatch log's), each
 * chunk followed by match_process() with the guest horizon at the slowest vCPU's progress and the host
 * horizon just behind (gaps whose end + uncertainty is past it wait a round). Only the matcher calls are timed
 * (CLOCK_MONOTONIC). Intervals = gaps + events + outs + runs; sampler windows are fed but not counted. Prints
 * figures, never pass/fail.
 *
 *   make build/bench/match_bench && build/bench/match_bench [gaps]
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "match/match.h"
#include "lib/benchutil.h"

#define NVCPU 4
#define DEFAULT_GAPS 2000000ULL
#define CYCLES 50 /* cycles per vCPU and chunk (~10 ms) */
#define UNC_NS 2000 /* clock conversion uncertainty */
#define TARGET 5.0 /* M intervals/s */

enum { T_SAMPLE, T_EVENT, T_OUT, T_RUN };

struct rec {
	uint8_t type;
	uint8_t idle;
	char state;
	uint32_t vcpu;
	uint32_t pid;
	uint64_t a, b;
	const char *comm;
	struct vn_sample s;
	struct vn_event e;
};

struct buf {
	struct rec *r;
	size_t n, cap;
};

struct gen {
	uint64_t rng;
	uint64_t t[NVCPU]; /* each vCPU's sampler time */
	uint64_t gaps, events, outs, runs, windows;
	struct buf guest, host;
};

static const char *const hogs[] = { "vnhog",	   "kworker/3:1", "qemu-io",	     "ksoftirqd/3",
				    "rcu_preempt", "kvm-pit",	  "systemd-journal", "sshd" };

static uint32_t rnd(struct gen *g, uint32_t n)
{
	return (uint32_t)((bench_xorshift64(&g->rng) >> 11) % n);
}

static struct rec *push(struct buf *b, int type, uint32_t vcpu)
{
	struct rec *r;

	if (b->n == b->cap) {
		size_t ncap = b->cap ? b->cap * 2 : 4096;
		struct rec *nr = realloc(b->r, ncap * sizeof(*nr));

		if (!nr) {
			fprintf(stderr, "match_bench: out of memory\n");
			exit(1);
		}
		b->r = nr;
		b->cap = ncap;
	}
	r = &b->r[b->n++];
	memset(r, 0, sizeof(*r));
	r->type = (uint8_t)type;
	r->vcpu = vcpu;
	return r;
}

static void push_sample(struct gen *g, uint32_t v, int kind, uint64_t start, uint64_t end)
{
	struct rec *r = push(&g->guest, T_SAMPLE, v);

	r->s.kind = (uint8_t)kind;
	r->s.start_ns = start;
	r->s.end_ns = end;
	if (kind == VN_SAMPLE_GAP)
		g->gaps++;
	else
		g->windows++;
}

static void push_ev(struct gen *g, uint32_t v, int cls, uint32_t id, uint64_t start, uint64_t end,
		    int pcls, uint32_t pid, int depth)
{
	struct rec *r = push(&g->guest, T_EVENT, v);

	bench_event(&r->e, cls, id, start, end, end - start, pcls, pid, depth);
	if (cls == VN_CLASS_THREAD)
		snprintf(r->e.comm, sizeof(r->e.comm), "kworker/%u:%u", v, id % 4);
	g->events++;
}

static void push_host(struct gen *g, uint32_t v, int type, uint64_t a, uint64_t b)
{
	struct rec *r = push(&g->host, type, v);

	r->a = a;
	r->b = b;
	if (type == T_OUT)
		g->outs++;
	else
		g->runs++;
}

/* 5 us .. 5 ms: 90% below 50 us, 9% below 500 us, 1% up to 5 ms. */
static uint64_t gap_len(struct gen *g)
{
	uint32_t p = rnd(g, 100);

	if (p < 90)
		return 5000 + rnd(g, 45000);
	if (p < 99)
		return 50000 + rnd(g, 450000);
	return 500000 + rnd(g, 4500000);
}

/* The host side of a gap: an out interval inside it, with 1-2 runs. */
static void host_out(struct gen *g, uint32_t v, uint64_t gs, uint64_t ge)
{
	uint64_t os = gs + 200 + rnd(g, 800), oe = ge - 200 - rnd(g, 800), mid;
	struct rec *r;

	push_host(g, v, T_OUT, os, oe);
	r = &g->host.r[g->host.n - 1];
	r->state = rnd(g, 10) < 7 ? 'R' : 'S';
	mid = os + (oe - os) / 2 + rnd(g, (uint32_t)((oe - os) / 4 + 1));
	if (r->state == 'R') { /* a host task, then maybe a second one */
		uint32_t k = rnd(g, 8);

		push_host(g, v, T_RUN, os, rnd(g, 2) ? mid : oe);
		r = &g->host.r[g->host.n - 1];
		r->pid = 1000 + k;
		r->comm = hogs[k];
		if (r->b == mid) {
			k = rnd(g, 8);
			push_host(g, v, T_RUN, mid, oe);
			r = &g->host.r[g->host.n - 1];
			r->pid = 1000 + k;
			r->comm = hogs[k];
		}
	} else { /* blocked: the pCPU idle, a short host task now and then */
		push_host(g, v, T_RUN, os, mid);
		r = &g->host.r[g->host.n - 1];
		r->idle = 1;
		r->comm = "swapper";
		if (rnd(g, 2)) {
			push_host(g, v, T_RUN, mid, oe);
			r = &g->host.r[g->host.n - 1];
			r->pid = 1000;
			r->comm = hogs[0];
		}
	}
}

/* The guest side of a gap: timer irq + TIMER softirq, or a kworker with an irq nested in it. */
static void guest_events(struct gen *g, uint32_t v, uint64_t gs, uint64_t ge)
{
	uint64_t a = gs + 200 + rnd(g, 300), e = ge - 100 - rnd(g, 300);

	if (rnd(g, 2)) {
		uint64_t ie = a + 1000 + rnd(g, 1500);

		push_ev(g, v, VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_LOCAL_TIMER, a, ie, VN_CLASS_NONE,
			0, 0);
		push_ev(g, v, VN_CLASS_SOFTIRQ, 1, ie + 100, e, VN_CLASS_NONE, 0, 0);
	} else {
		uint32_t pid = 100 + rnd(g, 16);
		uint64_t is = a + (e - a) / 2, ie = is + 800;

		push_ev(g, v, VN_CLASS_IRQ, 24 + rnd(g, 8), is, ie, VN_CLASS_THREAD, pid, 1);
		push_ev(g, v, VN_CLASS_THREAD, pid, a, e, VN_CLASS_NONE, 0, 0);
	}
}

/* One cycle of vCPU v: a sampler window (maybe a storm irq in it), then a gap. */
static void cycle(struct gen *g, uint32_t v)
{
	uint64_t t = g->t[v], ws = t, we = t + 150000 + rnd(g, 100000), gs = we,
		 ge = gs + gap_len(g);

	if (rnd(g, 2)) {
		uint64_t s = ws + rnd(g, 100000);

		push_ev(g, v, VN_CLASS_IRQ, 24 + rnd(g, 8), s, s + 1000 + rnd(g, 2000),
			VN_CLASS_NONE, 0, 0);
	}
	push_sample(g, v, VN_SAMPLE_WINDOW, ws, we);
	if (rnd(g, 2))
		guest_events(g, v, gs, ge);
	push_sample(g, v, VN_SAMPLE_GAP, gs, ge);
	if (rnd(g, 10) < 3)
		host_out(g, v, gs, ge);
	g->t[v] = ge;
}

static int feed(struct match *m, const struct buf *b)
{
	size_t i;
	int err = 0;

	for (i = 0; i < b->n && !err; i++) {
		const struct rec *r = &b->r[i];

		switch (r->type) {
		case T_SAMPLE:
			err = match_add_sample(m, r->vcpu, &r->s, UNC_NS);
			break;
		case T_EVENT:
			err = match_add_event(m, r->vcpu, &r->e);
			break;
		case T_OUT:
			err = match_add_out(m, r->vcpu, r->a, r->b, r->state);
			break;
		default:
			err = match_add_run(m, r->vcpu, r->a, r->b, r->pid, r->comm, r->idle);
			break;
		}
	}
	return err;
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static void report(struct match *m, uint64_t target, double t, uint64_t chunks, uint64_t matched)
{
	uint64_t gaps = 0;
	uint32_t v;
	int c;

	for (v = 0; v < NVCPU; v++) {
		const struct match_stats *st = match_stats_total(m, v);
		struct match_counters cn;
		uint64_t guest = 0, sum;

		match_counters(m, v, &cn);
		for (c = 0; c < VN_CLASS_MAX; c++)
			guest += st->guest_ns[c];
		sum = guest + st->host_ns[VN_HCLASS_HOST_PREEMPT] +
		      st->host_ns[VN_HCLASS_HOST_WAIT] + st->residual_ns;
		gaps += st->gaps;
		printf("  vcpu%u: %llu gaps, %.1f ms noise in %.1f ms runtime: guest %.1f%%, "
		       "host_preempt "
		       "%.1f%%, host_wait %.1f%%, residual %.1f%% (%s); %u sources, late %llu, "
		       "dropped "
		       "%llu, clamped %llu\n",
		       v, (unsigned long long)st->gaps, (double)st->gap_ns / 1e6,
		       (double)st->runtime_ns / 1e6, pct(guest, st->gap_ns),
		       pct(st->host_ns[VN_HCLASS_HOST_PREEMPT], st->gap_ns),
		       pct(st->host_ns[VN_HCLASS_HOST_WAIT], st->gap_ns),
		       pct(st->residual_ns, st->gap_ns),
		       sum == st->gap_ns ? "parts add up" : "PARTS DO NOT ADD UP", st->nsrc,
		       (unsigned long long)cn.late, (unsigned long long)cn.dropped,
		       (unsigned long long)cn.clamped);
	}
	printf("  %.3f s in matcher calls, %llu chunks, %llu gaps matched of %llu\n", t,
	       (unsigned long long)chunks, (unsigned long long)matched, (unsigned long long)gaps);
	printf("reproduce: make build/bench/match_bench && build/bench/match_bench %llu\n",
	       (unsigned long long)target);
}

int main(int argc, char **argv)
{
	struct gen g = { .rng = 0x9e3779b97f4a7c15ULL };
	uint64_t target = DEFAULT_GAPS, chunks = 0, matched = 0, intervals, hz;
	struct match *m = NULL;
	double t = 0, t0;
	uint32_t v;
	int err = 0, k, n;

	if (argc > 2 || (argc == 2 && parse_count(argv[1], &target))) {
		fprintf(stderr, "usage: %s [gaps]  (default %llu)\n", argv[0],
			(unsigned long long)DEFAULT_GAPS);
		return 2;
	}
	m = match_new(NULL);
	if (!m) {
		fprintf(stderr, "match_bench: out of memory\n");
		return 1;
	}
	for (v = 0; v < NVCPU; v++)
		g.t[v] = 1000000000ULL + v * 50000ULL;
	while (g.gaps < target) {
		g.guest.n = g.host.n = 0;
		for (v = 0; v < NVCPU; v++)
			for (k = 0; k < CYCLES && g.gaps < target; k++)
				cycle(&g, v);
		for (hz = UINT64_MAX, v = 0; v < NVCPU; v++)
			hz = g.t[v] < hz ? g.t[v] : hz;
		t0 = now_s();
		err = feed(m, &g.guest);
		if (!err)
			err = feed(m, &g.host);
		n = err ? 0 : match_process(m, hz, hz, hz + 1000000);
		t += now_s() - t0;
		matched += (uint64_t)n;
		chunks++;
		if (err) {
			fprintf(stderr, "match_bench: matcher refused a record: %s\n",
				strerror(-err));
			goto out;
		}
	}
	t0 = now_s();
	matched += (uint64_t)match_process(m, UINT64_MAX, UINT64_MAX, UINT64_MAX);
	t += now_s() - t0;
	intervals = g.gaps + g.events + g.outs + g.runs;
	printf("matcher: %d vCPUs, %llu gaps, %llu events, %llu outs, %llu runs = %llu intervals "
	       "(+ %llu windows)\n",
	       NVCPU, (unsigned long long)g.gaps, (unsigned long long)g.events,
	       (unsigned long long)g.outs, (unsigned long long)g.runs,
	       (unsigned long long)intervals, (unsigned long long)g.windows);
	printf(
	    "matcher: %.2f M intervals/s, %.2f M gaps/s (one core; target >= %.0f M intervals/s)\n",
	    (double)intervals / t / 1e6, (double)g.gaps / t / 1e6, TARGET);
	report(m, target, t, chunks, matched);
out:
	match_free(m);
	free(g.guest.r);
	free(g.host.r);
	return err ? 1 : 0;
}
