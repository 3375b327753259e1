/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/match, the guest<->host matcher: a gap split into host_preempt by task, host_wait by
 * state and residual; guest events net of host out-time (reduced_ns) and nested events (net semantics);
 * out intervals only partly covered by runs, idle runs, overlapping outs, clipping at gap edges; horizons
 * (guest, host minus uncertainty), late, bad and ignored records, the queue cap; aggregates taking from the
 * residual; period reset and latency; a full sources table folding into "other"; overlapping top-level
 * events (clamped); and a seeded randomized property test against a brute-force reference. Every numeric
 * check is exact, and every gap's parts must add up to its duration.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "match/match_priv.h"
#include "match/match.h"

#define US 1000ULL
#define MS 1000000ULL
#define MAX_GAPS 8192

/* ---- helpers ---- */

struct gaprec {
	uint32_t vcpu;
	uint64_t start, end, residual;
	uint64_t guest[VN_CLASS_MAX];
	uint64_t host[VN_HCLASS_MAX];
};

struct gaplog {
	size_t n;
	struct gaprec g[MAX_GAPS];
};

static void gap_cb(void *ctx, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
		   const uint64_t guest_ns[VN_CLASS_MAX], const uint64_t host_ns[VN_HCLASS_MAX],
		   uint64_t residual_ns)
{
	struct gaplog *log = ctx;
	struct gaprec *r;
	uint64_t sum = residual_ns;
	int c;

	ck_assert_uint_lt(log->n, MAX_GAPS);
	r = &log->g[log->n++];
	r->vcpu = vcpu;
	r->start = start_ns;
	r->end = end_ns;
	r->residual = residual_ns;
	memcpy(r->guest, guest_ns, sizeof(r->guest));
	memcpy(r->host, host_ns, sizeof(r->host));
	for (c = 0; c < VN_CLASS_MAX; c++)
		sum += guest_ns[c];
	for (c = 0; c < VN_HCLASS_MAX; c++)
		sum += host_ns[c];
	ck_assert_uint_eq(sum, end_ns - start_ns); /* parts add up, always */
	ck_assert_uint_eq(guest_ns[VN_CLASS_NONE], 0);
	ck_assert_uint_eq(guest_ns[VN_CLASS_STEAL], 0);
	ck_assert_uint_eq(guest_ns[VN_CLASS_UNEXPLAINED], 0);
	ck_assert_uint_eq(host_ns[VN_HCLASS_VMEXIT], 0);
	ck_assert_uint_eq(host_ns[VN_HCLASS_HOST_IRQ], 0);
}

static struct match *new_matcher(struct gaplog **log)
{
	struct match *m = match_new(NULL);

	ck_assert_ptr_nonnull(m);
	if (log) {
		*log = calloc(1, sizeof(**log));
		ck_assert_ptr_nonnull(*log);
		match_set_gap_cb(m, gap_cb, *log);
	}
	return m;
}

static int sample(struct match *m, uint32_t vcpu, int kind, uint64_t start, uint64_t end,
		  uint64_t unc)
{
	struct vn_sample s;

	memset(&s, 0, sizeof(s));
	s.start_ns = start;
	s.end_ns = end;
	s.kind = (__u8)kind;
	s.cpu = 99; /* ignored */
	return match_add_sample(m, vcpu, &s, unc);
}

static void gap(struct match *m, uint32_t vcpu, uint64_t start, uint64_t end, uint64_t unc)
{
	ck_assert_int_eq(sample(m, vcpu, VN_SAMPLE_GAP, start, end, unc), 0);
}

static struct vn_event mkev(int cls, uint32_t id, uint64_t start, uint64_t end, int pcls,
			    uint32_t pid, int depth, const char *comm)
{
	struct vn_event e;

	memset(&e, 0, sizeof(e));
	e.cls = (__u8)cls;
	e.id = id;
	e.start_ns = start;
	e.end_ns = end;
	e.net_ns = (__u32)(end - start);
	e.parent_cls = (__u8)pcls;
	e.parent_id = pid;
	e.depth = (__u8)depth;
	e.cpu = 77; /* ignored */
	if (comm)
		memcpy(e.comm, comm, strnlen(comm, sizeof(e.comm)));
	return e;
}

static void ev(struct match *m, uint32_t vcpu, struct vn_event e)
{
	ck_assert_int_eq(match_add_event(m, vcpu, &e), 0);
}

static void out(struct match *m, uint32_t vcpu, uint64_t start, uint64_t end, char state)
{
	ck_assert_int_eq(match_add_out(m, vcpu, start, end, state), 0);
}

static void run(struct match *m, uint32_t vcpu, uint64_t start, uint64_t end, uint32_t pid,
		const char *comm, int idle)
{
	ck_assert_int_eq(match_add_run(m, vcpu, start, end, pid, comm, idle), 0);
}

static const struct match_source *find_src(const struct match_stats *st, int kind, int cls,
					   uint32_t id)
{
	uint32_t i;

	for (i = 0; i < st->nsrc; i++)
		if (st->src[i].kind == kind && st->src[i].cls == cls && st->src[i].id == id)
			return &st->src[i];
	return NULL;
}

static void src_is(const struct match_stats *st, int kind, int cls, uint32_t id, const char *comm,
		   uint64_t total, uint64_t count, uint64_t max)
{
	const struct match_source *s = find_src(st, kind, cls, id);

	ck_assert_msg(s != NULL, "no source kind %d cls %d id %u", kind, cls, id);
	if (comm)
		ck_assert_str_eq(s->comm, comm);
	ck_assert_uint_eq(s->total_ns, total);
	ck_assert_uint_eq(s->count, count);
	ck_assert_uint_eq(s->max_ns, max);
}

/* Stats invariants: parts add up to the gaps; sources add up to the classes; sorted by total. */
static const struct match_stats *stats_ok(const struct match_stats *st)
{
	uint64_t sum = st->residual_ns, cls = 0, src = st->other.total_ns;
	uint32_t i;
	int c;

	ck_assert_ptr_nonnull(st);
	for (c = 0; c < VN_CLASS_MAX; c++)
		cls += st->guest_ns[c];
	for (c = 0; c < VN_HCLASS_MAX; c++)
		cls += st->host_ns[c];
	sum += cls;
	ck_assert_uint_eq(sum, st->gap_ns);
	ck_assert_uint_le(st->nsrc, MATCH_MAX_SOURCES);
	for (i = 0; i < st->nsrc; i++) {
		src += st->src[i].total_ns;
		if (i)
			ck_assert_uint_ge(st->src[i - 1].total_ns, st->src[i].total_ns);
	}
	ck_assert_uint_eq(src, cls);
	ck_assert_uint_eq(st->other.kind, MATCH_K_OTHER);
	return st;
}

static const struct match_stats *total(struct match *m, uint32_t vcpu)
{
	return stats_ok(match_stats_total(m, vcpu));
}

static const struct match_stats *period(struct match *m, uint32_t vcpu)
{
	return stats_ok(match_stats_period(m, vcpu));
}

static struct match_counters counters(struct match *m, uint32_t vcpu)
{
	struct match_counters c;

	match_counters(m, vcpu, &c);
	return c;
}

/* The brief's reference gap: [0, 10 ms), out [2, 7 ms) 'R' while pid 42 "vnhog42" ran [1, 8 ms). */
static void ref_gap(struct match *m)
{
	gap(m, 0, 0, 10 * MS, 0);
	out(m, 0, 2 * MS, 7 * MS, 'R');
	run(m, 0, 1 * MS, 8 * MS, 42, "vnhog42", 0);
}

/* ---- host side ---- */

START_TEST(test_host_preempt)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;
	struct match_counters c;

	ref_gap(m);
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 12 * MS), 1);
	ck_assert_uint_eq(log->n, 1);
	ck_assert_uint_eq(log->g[0].vcpu, 0);
	ck_assert_uint_eq(log->g[0].start, 0);
	ck_assert_uint_eq(log->g[0].end, 10 * MS);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_PREEMPT], 5 * MS);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_WAIT], 0);
	ck_assert_uint_eq(log->g[0].residual, 5 * MS);
	st = total(m, 0);
	ck_assert_uint_eq(st->gaps, 1);
	ck_assert_uint_eq(st->gap_ns, 10 * MS);
	ck_assert_uint_eq(st->max_gap_ns, 10 * MS);
	ck_assert_uint_eq(st->host_ns[VN_HCLASS_HOST_PREEMPT], 5 * MS);
	ck_assert_uint_eq(st->residual_ns, 5 * MS);
	ck_assert_uint_eq(st->reduced_ns, 0);
	ck_assert_uint_eq(st->big_gaps, 1);
	ck_assert_uint_eq(st->big_matched, 1);
	ck_assert_uint_eq(st->big_explained, 0);
	ck_assert_uint_eq(st->latency_max_ns, 2 * MS);
	ck_assert_uint_eq(st->latency_sum_ns, 2 * MS);
	ck_assert_uint_eq(st->nsrc, 1);
	ck_assert_uint_eq(st->src[0].kind, MATCH_K_HOST);
	ck_assert_uint_eq(st->src[0].cls, VN_HCLASS_HOST_PREEMPT);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 42, "vnhog42", 5 * MS, 1, 5 * MS);
	c = counters(m, 0);
	ck_assert_uint_eq(c.gaps_in, 1);
	ck_assert_uint_eq(c.outs_in, 1);
	ck_assert_uint_eq(c.runs_in, 1);
	ck_assert_uint_eq(c.queued, 0); /* everything ended by the gap's end */
	ck_assert_uint_eq(c.late + c.bad + c.dropped + c.clamped, 0);
	match_free(m);
	free(log);
}
END_TEST

START_TEST(test_blocked_idle)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 0, 10 * MS, 0);
	out(m, 0, 1 * MS, 5 * MS, 'S');
	run(m, 0, 1 * MS, 5 * MS, 0, "swapper/3", 1);
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 10 * MS), 1);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_WAIT], 4 * MS);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_PREEMPT], 0);
	ck_assert_uint_eq(log->g[0].residual, 6 * MS);
	st = total(m, 0);
	ck_assert_uint_eq(st->nsrc, 1);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, 'S', "", 4 * MS, 1, 4 * MS);
	ck_assert_uint_eq(st->big_matched, 0); /* 4 of 10 ms */
	ck_assert_uint_eq(st->latency_max_ns, 0);
	match_free(m);
	free(log);
}
END_TEST

/* Runs cover part of an out interval: the rest is host_wait under the state, 'R' included. */
START_TEST(test_partial_runs)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 0, 10 * MS, 0);
	out(m, 0, 1 * MS, 9 * MS, 'R');
	run(m, 0, 2 * MS, 4 * MS, 42, "hog", 0);
	run(m, 0, 4 * MS, 5 * MS, 0, "swapper", 1);
	run(m, 0, 6 * MS, 7 * MS, 43, "kworker", 0);
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 10 * MS), 1);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_PREEMPT], 3 * MS);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_WAIT], 5 * MS);
	ck_assert_uint_eq(log->g[0].residual, 2 * MS);
	st = total(m, 0);
	ck_assert_uint_eq(st->nsrc, 3);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, 'R', "", 5 * MS, 1, 5 * MS);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 42, "hog", 2 * MS, 1, 2 * MS);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 43, "kworker", 1 * MS, 1, 1 * MS);
	ck_assert_uint_eq(st->src[0].cls, VN_HCLASS_HOST_WAIT); /* sorted, largest first */
	ck_assert_uint_eq(st->src[1].id, 42);
	ck_assert_uint_eq(st->src[2].id, 43);
	ck_assert_uint_eq(st->big_matched, 1);
	ck_assert_uint_eq(st->big_explained, 0); /* 20% residual */
	match_free(m);
	free(log);
}
END_TEST

/* Out intervals clipped at the gap's edges and to each other; runs clipped to their out interval. */
START_TEST(test_clipping)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 2 * MS, 10 * MS, 0);
	out(m, 0, 1 * MS, 4 * MS, 'S'); /* 2 ms inside */
	run(m, 0, 1 * MS, 3 * MS, 50, "a", 0); /* 1 ms inside */
	out(m, 0, 5 * MS, 8 * MS, 'R');
	out(m, 0, 7 * MS, 9 * MS, 'R'); /* overlaps the previous one: 1 ms new */
	run(m, 0, 6 * MS, 9 * MS, 51, "b", 0); /* 6..9 inside the outs' union */
	run(m, 0, 6500 * US, 7 * MS, 52, "c",
	    0); /* overlaps b's run (bad data): not counted twice */
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 10 * MS), 1);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_PREEMPT], 4 * MS);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_WAIT], 2 * MS); /* 3..4 'S', 5..6 'R' */
	ck_assert_uint_eq(log->g[0].residual, 2 * MS);
	st = total(m, 0);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 50, "a", 1 * MS, 1, 1 * MS);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 51, "b", 3 * MS, 1, 3 * MS);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, 'S', "", 1 * MS, 1, 1 * MS);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, 'R', "", 1 * MS, 1, 1 * MS);
	ck_assert_ptr_null(find_src(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 52));
	match_free(m);
	free(log);
}
END_TEST

/* ---- guest side ---- */

START_TEST(test_guest_thread_net)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	ref_gap(m);
	ev(m, 0, mkev(VN_CLASS_THREAD, 1234, 1 * MS, 4 * MS, VN_CLASS_NONE, 0, 0, "inj"));
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 10 * MS), 1);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_THREAD], 1 * MS);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_PREEMPT], 5 * MS);
	ck_assert_uint_eq(log->g[0].residual, 4 * MS);
	st = total(m, 0);
	ck_assert_uint_eq(st->guest_ns[VN_CLASS_THREAD], 1 * MS);
	ck_assert_uint_eq(st->reduced_ns, 2 * MS);
	ck_assert_uint_eq(st->residual_ns, 4 * MS);
	src_is(st, MATCH_K_GUEST, VN_CLASS_THREAD, 1234, "inj", 1 * MS, 1, 1 * MS);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 42, "vnhog42", 5 * MS, 1, 5 * MS);
	ck_assert_uint_eq(counters(m, 0).events_in, 1);
	ck_assert_uint_eq(st->big_matched, 1);
	ck_assert_uint_eq(st->big_guest, 0);
	match_free(m);
	free(log);
}
END_TEST

/* The period's worst gap by source: the longest one, its parts adding up with the residual; reset with the
 * period. */
START_TEST(test_worst)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct vn_host_worst *w;
	uint64_t sum;
	uint32_t k;

	ck_assert_ptr_null(match_worst_period(m, 0));
	gap(m, 0, 20 * MS, 21 * MS, 0); /* a short one first ... */
	ref_gap(m); /* ... and the reference gap: 10 ms, 5 ms the hog, 1 ms the thread, 4 ms hw */
	ev(m, 0, mkev(VN_CLASS_THREAD, 1234, 1 * MS, 4 * MS, VN_CLASS_NONE, 0, 0, "inj"));
	ck_assert_int_eq(match_process(m, 30 * MS, 30 * MS, 30 * MS), 2);
	w = match_worst_period(m, 0);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(w->host_start_ns, 0);
	ck_assert_uint_eq(w->duration_ns, 10 * MS);
	ck_assert_uint_eq(w->nparts, 2);
	ck_assert_uint_eq(w->part[0].kind, VN_HOST_MSRC_HOST);
	ck_assert_uint_eq(w->part[0].cls, VN_HCLASS_HOST_PREEMPT);
	ck_assert_uint_eq(w->part[0].id, 42);
	ck_assert_str_eq(w->part[0].comm, "vnhog42");
	ck_assert_uint_eq(w->part[0].ns, 5 * MS);
	ck_assert_uint_eq(w->part[1].kind, VN_HOST_MSRC_GUEST);
	ck_assert_uint_eq(w->part[1].cls, VN_CLASS_THREAD);
	ck_assert_uint_eq(w->part[1].ns, 1 * MS);
	ck_assert_uint_eq(w->residual_ns, 4 * MS);
	for (k = 0, sum = w->other_ns + w->residual_ns; k < w->nparts; k++)
		sum += w->part[k].ns;
	ck_assert_uint_eq(sum, w->duration_ns);
	match_period_reset(m);
	ck_assert_ptr_null(match_worst_period(m, 0));
	match_free(m);
	free(log);
}
END_TEST

/* A big gap that a guest thread fills is counted as guest noise, not as matched. */
START_TEST(test_big_guest)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 0, 2 * MS, 0);
	ev(m, 0, mkev(VN_CLASS_THREAD, 7, 0, 1500 * US, VN_CLASS_NONE, 0, 0, "inj"));
	gap(m, 0, 3 * MS, 3500 * US, 0); /* small: not counted */
	ev(m, 0, mkev(VN_CLASS_THREAD, 7, 3 * MS, 3500 * US, VN_CLASS_NONE, 0, 0, "inj"));
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 10 * MS), 2);
	st = total(m, 0);
	ck_assert_uint_eq(st->big_gaps, 1);
	ck_assert_uint_eq(st->big_guest, 1);
	ck_assert_uint_eq(st->big_matched, 0);
	ck_assert_uint_eq(st->big_explained, 0); /* 0.5 of 2 ms unexplained */
	match_free(m);
	free(log);
}
END_TEST

/* An IRQ nested in a THREAD event, an out interval across the IRQ: each is net of its child and of host. */
START_TEST(test_nested)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 0, 10 * MS, 0);
	/* kernel emission order: the child ends (and is emitted) first */
	ev(m, 0, mkev(VN_CLASS_IRQ, 30, 2 * MS, 3 * MS, VN_CLASS_THREAD, 7, 1, NULL));
	ev(m, 0, mkev(VN_CLASS_THREAD, 7, 1 * MS, 6 * MS, VN_CLASS_NONE, 0, 0, "kworker/1"));
	out(m, 0, 2500 * US, 4 * MS, 'R'); /* no runs: all wait 'R' */
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 10 * MS), 1);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_IRQ], 500 * US);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_THREAD], 3 * MS);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_WAIT], 1500 * US);
	ck_assert_uint_eq(log->g[0].residual, 5 * MS);
	st = total(m, 0);
	ck_assert_uint_eq(st->reduced_ns,
			  1500 * US); /* top level only: the irq's 0.5 ms not twice */
	src_is(st, MATCH_K_GUEST, VN_CLASS_THREAD, 7, "kworker/1", 3 * MS, 1, 3 * MS);
	src_is(st, MATCH_K_GUEST, VN_CLASS_IRQ, 30, "", 500 * US, 1, 500 * US);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, 'R', "", 1500 * US, 1, 1500 * US);
	match_free(m);
	free(log);
}
END_TEST

/* thread > softirq > irq with the same start (enclosing first), and a second thread of the same pid. */
START_TEST(test_nested_deep)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 0, 100 * US, 0);
	ev(m, 0, mkev(VN_CLASS_IRQ, 5, 10 * US, 12 * US, VN_CLASS_SOFTIRQ, 3, 2, NULL));
	ev(m, 0, mkev(VN_CLASS_SOFTIRQ, 3, 10 * US, 20 * US, VN_CLASS_THREAD, 9, 1, NULL));
	ev(m, 0, mkev(VN_CLASS_THREAD, 9, 10 * US, 40 * US, VN_CLASS_NONE, 0, 0, "t"));
	ev(m, 0, mkev(VN_CLASS_IRQ, 5, 50 * US, 51 * US, VN_CLASS_THREAD, 9, 1, NULL));
	ev(m, 0, mkev(VN_CLASS_THREAD, 9, 45 * US, 60 * US, VN_CLASS_NONE, 0, 0, "t"));
	ck_assert_int_eq(match_process(m, 100 * US, 100 * US, 100 * US), 1);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_IRQ], 3 * US);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_SOFTIRQ], 8 * US);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_THREAD], 34 * US);
	ck_assert_uint_eq(log->g[0].residual, 55 * US);
	st = total(m, 0);
	src_is(st, MATCH_K_GUEST, VN_CLASS_THREAD, 9, "t", 34 * US, 1, 34 * US);
	ck_assert_uint_eq(st->reduced_ns, 0);
	match_free(m);
	free(log);
}
END_TEST

/* An event across two gaps counts in both, by its overlap; counts are per gap. */
START_TEST(test_event_two_gaps)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 0, 10 * US, 0);
	gap(m, 0, 20 * US, 30 * US, 0);
	ev(m, 0, mkev(VN_CLASS_THREAD, 1, 4 * US, 27 * US, VN_CLASS_NONE, 0, 0, "long"));
	ev(m, 0, mkev(VN_CLASS_IRQ, 2, 5 * US, 6 * US, VN_CLASS_THREAD, 1, 1, NULL));
	ev(m, 0, mkev(VN_CLASS_IRQ, 2, 12 * US, 14 * US, VN_CLASS_THREAD, 1, 1, NULL)); /* no gap */
	ck_assert_int_eq(match_process(m, 30 * US, 30 * US, 30 * US), 2);
	ck_assert_uint_eq(log->n, 2);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_THREAD], 5 * US);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_IRQ], 1 * US);
	ck_assert_uint_eq(log->g[1].guest[VN_CLASS_THREAD], 7 * US);
	ck_assert_uint_eq(log->g[1].guest[VN_CLASS_IRQ], 0);
	st = total(m, 0);
	src_is(st, MATCH_K_GUEST, VN_CLASS_THREAD, 1, "long", 12 * US, 2, 7 * US);
	src_is(st, MATCH_K_GUEST, VN_CLASS_IRQ, 2, "", 1 * US, 1, 1 * US);
	ck_assert_uint_eq(counters(m, 0).queued, 0);
	match_free(m);
	free(log);
}
END_TEST

START_TEST(test_steal_ignored)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 0, 0, 10 * US, 0);
	ev(m, 0, mkev(VN_CLASS_STEAL, 0, 0, 10 * US, VN_CLASS_NONE, 0, 0, NULL));
	ck_assert_uint_eq(counters(m, 0).queued, 1); /* the gap only */
	ck_assert_int_eq(match_process(m, 10 * US, 10 * US, 10 * US), 1);
	ck_assert_uint_eq(log->g[0].residual, 10 * US);
	ck_assert_uint_eq(total(m, 0)->nsrc, 0);
	ck_assert_uint_eq(counters(m, 0).events_in, 1);
	match_free(m);
	free(log);
}
END_TEST

/* Overlapping top-level events exceed the room the host leaves: scaled down, counted. */
START_TEST(test_clamped)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const struct match_stats *st;

	gap(m, 0, 0, 8 * US, 0);
	out(m, 0, 0, 2 * US, 'S');
	ev(m, 0, mkev(VN_CLASS_THREAD, 1, 0, 6 * US, VN_CLASS_NONE, 0, 0, "a")); /* 4 own */
	ev(m, 0, mkev(VN_CLASS_IRQ, 2, 2 * US, 8 * US, VN_CLASS_NONE, 0, 0, NULL)); /* 6 own */
	ck_assert_int_eq(match_process(m, 8 * US, 8 * US, 8 * US), 1);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_WAIT], 2 * US);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_THREAD] + log->g[0].guest[VN_CLASS_IRQ], 6 * US);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_IRQ], 3600); /* 6 * 6 / 10 */
	ck_assert_uint_eq(log->g[0].residual, 0);
	ck_assert_uint_eq(counters(m, 0).clamped, 1);
	st = total(m, 0);
	src_is(st, MATCH_K_GUEST, VN_CLASS_THREAD, 1, "a", 2400, 1, 2400);
	match_free(m);
	free(log);
}
END_TEST

/* A child not inside its parent (skew), a child whose parent never came: parts still add up. */
START_TEST(test_skew)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 0, 0, 20 * US, 0);
	ev(m, 0, mkev(VN_CLASS_THREAD, 1, 0, 10 * US, VN_CLASS_NONE, 0, 0, "p"));
	ev(m, 0, mkev(VN_CLASS_IRQ, 2, 5 * US, 12 * US, VN_CLASS_THREAD, 1, 1, NULL));
	ev(m, 0, mkev(VN_CLASS_IRQ, 3, 14 * US, 15 * US, VN_CLASS_SOFTIRQ, 4, 1, NULL));
	ck_assert_int_eq(match_process(m, 20 * US, 20 * US, 20 * US), 1);
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_THREAD],
			  10 * US); /* nothing found to subtract */
	ck_assert_uint_eq(log->g[0].guest[VN_CLASS_IRQ], 8 * US);
	ck_assert_uint_eq(log->g[0].residual, 2 * US);
	total(m, 0);
	match_free(m);
	free(log);
}
END_TEST

/* Hostile times: spans near the full 64-bit range, overlapping sources; no overflow, parts add up. */
START_TEST(test_hostile_huge)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const uint64_t top = UINT64_MAX;
	int k;

	gap(m, 0, 0, top, 0);
	for (k = 0; k < 4; k++) {
		ev(m, 0, mkev(VN_CLASS_THREAD, 1, 0, top, VN_CLASS_NONE, 0, 0, "a"));
		ev(m, 0, mkev(VN_CLASS_IRQ, 2, 1, top - 1, VN_CLASS_THREAD, 1, 1, NULL));
		ev(m, 0, mkev(VN_CLASS_IRQ, 3, 0, top, VN_CLASS_NMI, 0, 1, NULL));
	}
	out(m, 0, 5, top / 2, 'R');
	run(m, 0, 0, top, 9, "big", 0);
	out(m, 0, top / 3, top - 5, 'S');
	ck_assert_int_eq(match_process(m, top, top, top), 1);
	ck_assert_uint_eq(log->n, 1);
	ck_assert_uint_eq(
	    log->g[0].host[VN_HCLASS_HOST_PREEMPT] + log->g[0].host[VN_HCLASS_HOST_WAIT], top - 10);
	ck_assert_uint_eq(counters(m, 0).clamped, 1);
	ck_assert_uint_eq(total(m, 0)->gaps, 1);
	match_free(m);
	free(log);
}
END_TEST

/*
 * Hostile sums: runtime windows that each claim most of the 64-bit range, and overlapping gaps matched in one
 * call, add up past UINT64_MAX. The whole run's figures stop there; they never wrap (go backwards).
 */
START_TEST(test_hostile_sums)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	const uint64_t half = UINT64_MAX / 2;
	uint64_t before;
	int k;

	ck_assert_int_eq(sample(m, 0, VN_SAMPLE_WINDOW, 0, half, 0), 0);
	ck_assert_int_eq(sample(m, 0, VN_SAMPLE_WINDOW, 0, half, 0), 0);
	before = total(m, 0)->runtime_ns;
	ck_assert_uint_eq(before, 2 * half);
	ck_assert_int_eq(sample(m, 0, VN_SAMPLE_WINDOW, 0, half, 0), 0);
	ck_assert_uint_eq(total(m, 0)->runtime_ns, UINT64_MAX);
	ck_assert_uint_eq(match_stats_period(m, 0)->runtime_ns, UINT64_MAX);
	for (k = 0; k < 3; k++)
		gap(m, 1, 1 + (uint64_t)k, half, 0);
	ck_assert_int_eq(match_process(m, UINT64_MAX, UINT64_MAX, 0), 3);
	ck_assert_uint_eq(total(m, 1)->gaps, 3);
	ck_assert_uint_eq(total(m, 1)->gap_ns, UINT64_MAX);
	ck_assert_uint_eq(total(m, 1)->residual_ns, UINT64_MAX);
	match_free(m);
	free(log);
}
END_TEST

/* ---- order, horizons, anomalies ---- */

START_TEST(test_horizons)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 0, 0, 10 * MS, 1 * MS);
	ck_assert_int_eq(match_process(m, 10 * MS - 1, 100 * MS, 0), 0); /* guest horizon short */
	ck_assert_int_eq(match_process(m, 10 * MS, 11 * MS - 1, 0), 0); /* host < end + unc */
	ck_assert_uint_eq(counters(m, 0).queued, 1);
	ck_assert_ptr_nonnull(match_stats_total(m, 0));
	ck_assert_uint_eq(match_stats_total(m, 0)->gaps, 0);
	ck_assert_int_eq(match_process(m, 10 * MS, 11 * MS, 15 * MS), 1);
	ck_assert_uint_eq(total(m, 0)->uncertainty_max_ns, 1 * MS);
	ck_assert_uint_eq(total(m, 0)->latency_max_ns, 5 * MS);
	ck_assert_int_eq(match_process(m, 20 * MS, 20 * MS, 20 * MS), 0);
	/* a huge uncertainty is waited for MATCH_MAX_UNC_WAIT_NS at most */
	gap(m, 0, 30 * MS, 31 * MS, UINT64_MAX);
	ck_assert_int_eq(match_process(m, 31 * MS, 31 * MS + MATCH_MAX_UNC_WAIT_NS - 1, 0), 0);
	ck_assert_int_eq(match_process(m, 31 * MS, 31 * MS + MATCH_MAX_UNC_WAIT_NS, 0), 1);
	/* and end + wait does not wrap around */
	gap(m, 0, UINT64_MAX - 2 * MS, UINT64_MAX - 1 * MS, UINT64_MAX);
	ck_assert_int_eq(match_process(m, UINT64_MAX - 1, UINT64_MAX - 1, 0), 0);
	ck_assert_int_eq(match_process(m, UINT64_MAX, UINT64_MAX, 0), 1);
	match_free(m);
	free(log);
}
END_TEST

/*
 * A guest that never moves its horizon (or one whose epoch is held off): the host's records are kept at most
 * 10 s behind the host horizon, not for ever; a gap still waiting that started before that is counted late,
 * not matched with half its host records; match_host_trim keeps them under a byte budget.
 */
START_TEST(test_host_records_bounded)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	uint64_t t;

	gap(m, 0, 1000 * MS, 1010 * MS, 1 * MS);
	for (t = 0; t < 60000 * MS; t += 10 * MS) {
		out(m, 0, t, t + 1 * MS, 'R');
		run(m, 0, t, t + 1 * MS, 42, "hog", 0);
		if (t % (1000 * MS) == 0)
			ck_assert_int_eq(match_process(m, 0, t, 0), 0);
	}
	/* 10 s of 100 outs and runs a second, the gap: about 2001 records, not 12001 */
	ck_assert_uint_le(counters(m, 0).queued, 1 + 2 * 1100);
	ck_assert_uint_ge(counters(m, 0).queued, 1 + 2 * 900);
	ck_assert_int_eq(match_process(m, 60000 * MS, 60000 * MS, 0), 0);
	ck_assert_uint_eq(counters(m, 0).late, 1);
	/* a tighter budget: kept less far behind, in 1 s steps, until they fit */
	{
		size_t all = match_host_held(m);

		ck_assert_uint_gt(all, 0);
		match_host_trim(m, all / 3, 60000 * MS);
		ck_assert_uint_le(match_host_held(m), all / 3);
		ck_assert_uint_ge(match_host_held(m), all / 3 - all / 10 - 1);
	}
	match_free(m);
	free(log);
}
END_TEST

/*
 * Back-to-back gaps, the first ending (by the clock model) 20 us before the host's out piece over it ends:
 * the piece is delivered only when it ends, so while the dispatch log holds it open the gap waits for it,
 * whatever the host horizon; then the gap gets its host time instead of none.
 */
START_TEST(test_open_out_waits)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 0, 1000 * US, 1450 * US, 10 * US);
	match_host_open(m, 0, 1010 * US);
	ck_assert_int_eq(match_process(m, 5 * MS, 5 * MS, 0), 0);
	out(m, 0, 1010 * US, 1470 * US, 'R');
	match_host_open(m, 0, UINT64_MAX);
	ck_assert_int_eq(match_process(m, 5 * MS, 5 * MS, 0), 1);
	ck_assert_uint_eq(log->n, 1);
	ck_assert_uint_eq(
	    log->g[0].host[VN_HCLASS_HOST_PREEMPT] + log->g[0].host[VN_HCLASS_HOST_WAIT], 440 * US);
	ck_assert_uint_eq(counters(m, 0).late, 0);
	/* a piece open since after the gap's end (and its margin) does not hold it */
	gap(m, 0, 2000 * US, 2100 * US, 10 * US);
	match_host_open(m, 0, 2200 * US);
	ck_assert_int_eq(match_process(m, 5 * MS, 5 * MS, 0), 1);
	/* without the hold (a piece the log never said was open) the gap goes without it: the piece reaching
	 * back before what was matched is counted late */
	gap(m, 0, 3000 * US, 3450 * US, 10 * US);
	match_host_open(m, 0, UINT64_MAX);
	ck_assert_int_eq(match_process(m, 5 * MS, 5 * MS, 0), 1);
	out(m, 0, 3010 * US, 3470 * US, 'R');
	ck_assert_uint_eq(counters(m, 0).host_late, 1);
	ck_assert_uint_eq(
	    log->g[2].host[VN_HCLASS_HOST_PREEMPT] + log->g[2].host[VN_HCLASS_HOST_WAIT], 0);
	/* an unknown vCPU with nothing open is not created */
	match_host_open(m, 7, UINT64_MAX);
	ck_assert_uint_eq(counters(m, 7).gaps_in, 0);
	match_free(m);
	free(log);
}
END_TEST

/* Gaps out of order are matched in time order; a later gap waits for an earlier one's host horizon. */
START_TEST(test_gap_order)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 0, 20 * US, 30 * US, 0);
	gap(m, 0, 0, 10 * US, 50 * US);
	gap(m, 0, 40 * US, 45 * US, 0);
	ck_assert_int_eq(match_process(m, 100 * US, 59 * US, 0), 0);
	ck_assert_int_eq(match_process(m, 100 * US, 60 * US, 0), 3);
	ck_assert_uint_eq(log->n, 3);
	ck_assert_uint_eq(log->g[0].start, 0);
	ck_assert_uint_eq(log->g[1].start, 20 * US);
	ck_assert_uint_eq(log->g[2].start, 40 * US);
	match_free(m);
	free(log);
}
END_TEST

START_TEST(test_late)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	struct match_counters c;

	gap(m, 0, 0, 10 * US, 0);
	ck_assert_int_eq(match_process(m, 10 * US, 10 * US, 0), 1);
	gap(m, 0, 5 * US, 8 * US, 0); /* older than what was matched */
	gap(m, 0, 2 * US, 12 * US, 0); /* overlaps it */
	gap(m, 0, 10 * US, 12 * US, 0);
	/* host and guest records that ended by then can no longer matter: not queued */
	out(m, 0, 3 * US, 4 * US, 'R');
	run(m, 0, 3 * US, 4 * US, 1, "x", 0);
	ev(m, 0, mkev(VN_CLASS_IRQ, 1, 9 * US, 10 * US, VN_CLASS_NONE, 0, 0, NULL));
	c = counters(m, 0);
	ck_assert_uint_eq(c.late, 2);
	ck_assert_uint_eq(c.gaps_in, 4);
	ck_assert_uint_eq(c.queued, 1);
	ck_assert_uint_eq(c.outs_in, 1);
	ck_assert_int_eq(match_process(m, 12 * US, 12 * US, 0), 1);
	ck_assert_uint_eq(total(m, 0)->gaps, 2);
	match_free(m);
	free(log);
}
END_TEST

/* Records beyond the last matched gap stay queued; with no gap pending, the sampler's progress and the
 * guest horizon let old records go. */
START_TEST(test_retention)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 0, 0, 10 * US, 0);
	ev(m, 0, mkev(VN_CLASS_IRQ, 1, 2 * US, 3 * US, VN_CLASS_NONE, 0, 0, NULL));
	ev(m, 0, mkev(VN_CLASS_THREAD, 2, 9 * US, 25 * US, VN_CLASS_NONE, 0, 0, "long"));
	ev(m, 0, mkev(VN_CLASS_IRQ, 1, 12 * US, 13 * US, VN_CLASS_NONE, 0, 0, NULL));
	out(m, 0, 22 * US, 23 * US, 'S');
	ck_assert_uint_eq(counters(m, 0).queued, 5);
	ck_assert_int_eq(match_process(m, 10 * US, 10 * US, 0), 1);
	ck_assert_uint_eq(counters(m, 0).queued, 3); /* long thread, irq at 12, the out */
	ck_assert_int_eq(sample(m, 0, VN_SAMPLE_WINDOW, 10 * US, 20 * US, 0), 0);
	ck_assert_int_eq(match_process(m, 30 * US, 30 * US, 0), 0);
	ck_assert_uint_eq(counters(m, 0).queued, 2); /* the irq at 12 can no longer matter */
	gap(m, 0, 20 * US, 24 * US, 0);
	ck_assert_int_eq(match_process(m, 30 * US, 30 * US, 0), 1);
	ck_assert_uint_eq(log->g[1].guest[VN_CLASS_THREAD], 3 * US);
	ck_assert_uint_eq(log->g[1].host[VN_HCLASS_HOST_WAIT], 1 * US);
	ck_assert_uint_eq(counters(m, 0).queued, 1); /* the thread ends at 25 */
	ck_assert_uint_eq(total(m, 0)->runtime_ns, 10 * US);
	match_free(m);
	free(log);
}
END_TEST

/* A long out interval stays queued while thousands of short records before and after it are dropped (and the
 * queue's room is taken back many times): the gap at its end still gets it. */
START_TEST(test_retention_long)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	uint64_t t;
	int k, n = 0;

	out(m, 0, 5 * US, 100000 * US, 'R');
	for (k = 0; k < 5000; k++) {
		t = (uint64_t)k * 20 * US;
		out(m, 0, t + 2 * US, t + 3 * US, 'S');
		gap(m, 0, t, t + 4 * US, 0);
		if (k % 7 == 6)
			n += match_process(m, t + 10 * US, t + 10 * US, 0);
	}
	n += match_process(m, 100000 * US, 100000 * US, 0);
	ck_assert_int_eq(n, 5000);
	ck_assert_uint_eq(log->n, 5000);
	/* the gaps from 5 us on lie inside the long out: each is all host time */
	ck_assert_uint_eq(log->g[4999].host[VN_HCLASS_HOST_PREEMPT] +
			      log->g[4999].host[VN_HCLASS_HOST_WAIT],
			  4 * US);
	ck_assert_uint_eq(total(m, 0)->residual_ns,
			  3 * US); /* gap 0 before the long out: 0..2, 3..4 us */
	ck_assert_uint_eq(counters(m, 0).dropped, 0);
	ck_assert_uint_le(counters(m, 0).queued, 2);
	match_free(m);
	free(log);
}
END_TEST

START_TEST(test_bad)
{
	struct match *m = new_matcher(NULL);
	struct vn_event e;
	struct match_counters c;

	ck_assert_int_eq(sample(m, 1, VN_SAMPLE_GAP, 10, 5, 0), -EINVAL);
	ck_assert_int_eq(sample(m, 1, 7, 0, 5, 0), -EINVAL);
	ck_assert_int_eq(match_add_out(m, 1, 10, 5, 'R'), -EINVAL);
	ck_assert_int_eq(match_add_run(m, 1, 10, 5, 1, "x", 0), -EINVAL);
	e = mkev(VN_CLASS_IRQ, 1, 10, 5, VN_CLASS_NONE, 0, 0, NULL);
	ck_assert_int_eq(match_add_event(m, 1, &e), -EINVAL);
	e = mkev(VN_CLASS_NONE, 1, 0, 5, VN_CLASS_NONE, 0, 0, NULL);
	ck_assert_int_eq(match_add_event(m, 1, &e), -EINVAL);
	e = mkev(VN_CLASS_UNEXPLAINED, 1, 0, 5, VN_CLASS_NONE, 0, 0, NULL);
	ck_assert_int_eq(match_add_event(m, 1, &e), -EINVAL);
	e = mkev(200, 1, 0, 5, VN_CLASS_NONE, 0, 0, NULL);
	ck_assert_int_eq(match_add_event(m, 1, &e), -EINVAL);
	e = mkev(VN_CLASS_IRQ, 1, 0, 5, 200, 0, 0, NULL);
	ck_assert_int_eq(match_add_event(m, 1, &e), -EINVAL);
	ck_assert_int_eq(match_add_agg(m, 1, VN_HCLASS_HOST_PREEMPT, 1, "x", 5), -EINVAL);
	c = counters(m, 1);
	ck_assert_uint_eq(c.bad, 10);
	ck_assert_uint_eq(c.queued, 0);
	/* out-of-range vCPU: refused, counted apart */
	ck_assert_int_eq(sample(m, MATCH_MAX_VCPUS, VN_SAMPLE_GAP, 0, 5, 0), -EINVAL);
	ck_assert_int_eq(match_add_out(m, UINT32_MAX, 0, 5, 'R'), -EINVAL);
	ck_assert_int_eq(match_add_agg(m, MATCH_MAX_VCPUS, VN_HCLASS_HOST_IRQ, 1, "x", 5), -EINVAL);
	ck_assert_uint_eq(counters(m, MATCH_MAX_VCPUS).bad, 3);
	ck_assert_uint_eq(match_nvcpus(m), 2);
	ck_assert_ptr_null(match_stats_total(m, 0));
	ck_assert_ptr_null(match_stats_period(m, MATCH_MAX_VCPUS));
	c = counters(m, 0);
	ck_assert_uint_eq(c.bad + c.gaps_in + c.queued, 0);
	ck_assert_int_eq(match_process(m, UINT64_MAX, UINT64_MAX, 0), 0);
	match_free(m);
	match_free(NULL);
}
END_TEST

START_TEST(test_queue_cap)
{
	struct match *m = new_matcher(NULL);
	uint64_t i;

	for (i = 0; i < MATCH_QUEUE_CAP; i++)
		ck_assert_int_eq(match_add_out(m, 0, i * 10, i * 10 + 5, 'R'), 0);
	ck_assert_int_eq(match_add_out(m, 0, i * 10, i * 10 + 5, 'R'), -ENOBUFS);
	ck_assert_uint_eq(counters(m, 0).dropped, 1);
	ck_assert_uint_eq(counters(m, 0).queued, MATCH_QUEUE_CAP);
	gap(m, 0, 0, 100, 0); /* other streams still have room */
	ck_assert_int_eq(match_process(m, 100, 100, 0), 1);
	ck_assert_uint_eq(match_stats_total(m, 0)->host_ns[VN_HCLASS_HOST_WAIT], 50);
	ck_assert_uint_eq(counters(m, 0).queued, MATCH_QUEUE_CAP - 10);
	ck_assert_int_eq(match_add_out(m, 0, i * 10, i * 10 + 5, 'R'), 0);
	match_free(m);
}
END_TEST

/* A vCPU no sampler measures (no sample ever): its records go one second behind the guest horizon instead
 * of piling up to the queue cap (they can never meet a gap older than that). */
START_TEST(test_unmeasured_vcpu)
{
	struct match *m = new_matcher(NULL);
	const uint64_t S = 1000000000ULL;
	uint64_t i;

	for (i = 0; i < 100; i++) {
		ck_assert_int_eq(match_add_out(m, 1, i * S / 10, i * S / 10 + 5, 'R'), 0);
		ck_assert_int_eq(match_add_run(m, 1, i * S / 10, i * S / 10 + 5, 7, "x", 0), 0);
	}
	ck_assert_uint_eq(counters(m, 1).queued, 200);
	ck_assert_int_eq(match_process(m, 5 * S, 10 * S, 0), 0);
	/* kept: what starts at or after 4 s (the horizon 5 s less one second): 60 outs and 60 runs */
	ck_assert_uint_eq(counters(m, 1).queued, 120);
	ck_assert_int_eq(match_process(m, 20 * S, 20 * S, 0), 0);
	ck_assert_uint_eq(counters(m, 1).queued, 0);
	ck_assert_uint_eq(counters(m, 1).dropped, 0);
	/* a sampler that starts later still gets its gap matched with what came after */
	ck_assert_int_eq(match_add_out(m, 1, 21 * S, 21 * S + 100, 'R'), 0);
	gap(m, 1, 21 * S, 21 * S + 1000, 0);
	ck_assert_int_eq(match_process(m, 22 * S, 22 * S, 0), 1);
	ck_assert_uint_eq(match_stats_total(m, 1)->host_ns[VN_HCLASS_HOST_WAIT], 100);
	match_free(m);
}
END_TEST

/*
 * A vCPU whose gap queue was never used (only windows and host records so far) is processed: nothing to
 * match, and no arithmetic on the queue's absent array (undefined behaviour, which clang's UBSan reports).
 */
START_TEST(test_no_gap_yet)
{
	struct match *m = new_matcher(NULL);

	ck_assert_int_eq(sample(m, 2, VN_SAMPLE_WINDOW, 10, 20, 0), 0);
	ck_assert_int_eq(match_add_out(m, 3, 10, 20, 'R'), 0);
	ck_assert_int_eq(match_process(m, 100, 100, 100), 0);
	ck_assert_uint_eq(counters(m, 2).queued, 0);
	ck_assert_uint_eq(counters(m, 3).queued, 1); /* kept for a gap still to come */
	ck_assert_uint_eq(match_gaps_waiting(m), 0);
	match_free(m);
}
END_TEST

START_TEST(test_vcpus)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 3, 0, 10 * US, 0);
	out(m, 3, 1 * US, 2 * US, 'R');
	gap(m, 1, 5 * US, 6 * US, 0);
	out(m, 1, 0, 10 * US, 'S'); /* clipped to vCPU 1's gap only */
	ck_assert_uint_eq(match_nvcpus(m), 4);
	ck_assert_ptr_null(match_stats_total(m, 0));
	ck_assert_ptr_null(match_stats_total(m, 2));
	ck_assert_uint_eq(counters(m, 2).gaps_in, 0);
	ck_assert_int_eq(match_process(m, 10 * US, 10 * US, 0), 2);
	ck_assert_uint_eq(log->g[0].vcpu, 1);
	ck_assert_uint_eq(log->g[0].host[VN_HCLASS_HOST_WAIT], 1 * US);
	ck_assert_uint_eq(log->g[1].vcpu, 3);
	ck_assert_uint_eq(log->g[1].host[VN_HCLASS_HOST_WAIT], 1 * US);
	ck_assert_uint_eq(log->g[1].residual, 9 * US);
	match_free(m);
	free(log);
}
END_TEST

/* ---- aggregates, periods, sources ---- */

START_TEST(test_agg)
{
	struct match *m = new_matcher(NULL);
	const struct match_stats *st;
	int k;

	ref_gap(m);
	ck_assert_int_eq(match_process(m, 10 * MS, 10 * MS, 10 * MS), 1);
	ck_assert_int_eq(match_add_agg(m, 0, VN_HCLASS_VMEXIT, 48, "EPT_VIOLATION", 3 * MS), 0);
	ck_assert_int_eq(
	    match_add_agg(m, 0, VN_HCLASS_HOST_IRQ, 7, "nvme0q3_and_a_long_name", 4 * MS), 0);
	ck_assert_int_eq(match_add_agg(m, 0, VN_HCLASS_HOST_IRQ, 8, "eth0", 1 * MS),
			 0); /* nothing left */
	for (k = 0; k < 2; k++) {
		st = k ? period(m, 0) : total(m, 0);
		ck_assert_uint_eq(st->host_ns[VN_HCLASS_VMEXIT], 3 * MS);
		ck_assert_uint_eq(st->host_ns[VN_HCLASS_HOST_IRQ], 2 * MS);
		ck_assert_uint_eq(st->residual_ns, 0);
		ck_assert_uint_eq(st->nsrc, 3);
		src_is(st, MATCH_K_HOST, VN_HCLASS_VMEXIT, 48, "EPT_VIOLATION", 3 * MS, 1, 3 * MS);
		src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_IRQ, 7, "nvme0q3_and_a_l", 2 * MS, 1,
		       2 * MS);
		ck_assert_ptr_null(find_src(st, MATCH_K_HOST, VN_HCLASS_HOST_IRQ, 8));
	}
	ck_assert_uint_eq(counters(m, 0).aggs_in, 3);
	match_free(m);
}
END_TEST

START_TEST(test_period)
{
	struct match *m = new_matcher(NULL);
	const struct match_stats *st;

	ck_assert_int_eq(sample(m, 0, VN_SAMPLE_WINDOW, 0, 1 * MS, 0), 0);
	gap(m, 0, 1 * MS, 2 * MS, 10 * US);
	out(m, 0, 1 * MS, 2 * MS, 'R');
	ck_assert_int_eq(match_process(m, 2 * MS, 3 * MS, 5 * MS), 1);
	match_period_reset(m);
	st = period(m, 0);
	ck_assert_uint_eq(st->gaps + st->gap_ns + st->runtime_ns + st->nsrc, 0);
	ck_assert_uint_eq(st->latency_max_ns + st->uncertainty_max_ns, 0);
	ck_assert_int_eq(sample(m, 0, VN_SAMPLE_WINDOW, 2 * MS, 4 * MS, 0), 0);
	gap(m, 0, 4 * MS, 4500 * US, 20 * US);
	out(m, 0, 4 * MS, 4100 * US, 'R');
	ck_assert_int_eq(match_process(m, 5 * MS, 5 * MS, 5 * MS), 1);
	st = period(m, 0);
	ck_assert_uint_eq(st->gaps, 1);
	ck_assert_uint_eq(st->gap_ns, 500 * US);
	ck_assert_uint_eq(st->runtime_ns, 2 * MS);
	ck_assert_uint_eq(st->latency_max_ns, 500 * US);
	ck_assert_uint_eq(st->latency_sum_ns, 500 * US);
	ck_assert_uint_eq(st->uncertainty_max_ns, 20 * US);
	ck_assert_uint_eq(st->big_gaps, 0);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, 'R', "", 100 * US, 1, 100 * US);
	st = total(m, 0);
	ck_assert_uint_eq(st->gaps, 2);
	ck_assert_uint_eq(st->gap_ns, 1500 * US);
	ck_assert_uint_eq(st->runtime_ns, 3 * MS);
	ck_assert_uint_eq(st->latency_max_ns, 3 * MS);
	ck_assert_uint_eq(st->latency_sum_ns, 3500 * US);
	ck_assert_uint_eq(st->uncertainty_max_ns, 20 * US);
	ck_assert_uint_eq(st->big_gaps, 1);
	ck_assert_uint_eq(st->big_matched, 1);
	ck_assert_uint_eq(st->big_explained, 1);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, 'R', "", 1100 * US, 2, 1 * MS);
	/* an aggregate after the reset takes only from the new period's residual */
	ck_assert_int_eq(match_add_agg(m, 0, VN_HCLASS_VMEXIT, 1, "HLT", 1 * MS), 0);
	ck_assert_uint_eq(period(m, 0)->host_ns[VN_HCLASS_VMEXIT], 400 * US);
	ck_assert_uint_eq(total(m, 0)->host_ns[VN_HCLASS_VMEXIT], 400 * US);
	match_free(m);
}
END_TEST

/* More sources than the table holds: the rest folds into "other", sums still hold, sorted. */
START_TEST(test_sources_full)
{
	struct match *m = new_matcher(NULL);
	const struct match_stats *st;
	uint64_t t = 0, want = 0, sum;
	uint32_t i, n = MATCH_MAX_SOURCES + 44;
	char comm[VN_COMM_LEN];

	for (i = 0; i < n; i++) {
		uint64_t d = 1000 + (i * 7919) % 5000;

		snprintf(comm, sizeof(comm), "task%u", i);
		gap(m, 0, t, t + d + 100, 0);
		out(m, 0, t, t + d, 'R');
		run(m, 0, t, t + d, 1000 + i, comm, 0);
		want += d;
		t += d + 1000;
	}
	/* the same pid with another comm is another source */
	gap(m, 0, t, t + 10, 0);
	out(m, 0, t, t + 10, 'R');
	run(m, 0, t, t + 10, 1000, "renamed", 0);
	want += 10;
	ck_assert_int_eq(match_process(m, UINT64_MAX, UINT64_MAX, 0), (int)n + 1);
	st = total(m, 0);
	ck_assert_uint_eq(st->nsrc, MATCH_MAX_SOURCES);
	ck_assert_uint_eq(st->host_ns[VN_HCLASS_HOST_PREEMPT], want);
	ck_assert_uint_gt(st->other.total_ns, 0);
	ck_assert_uint_eq(st->other.count, n + 1 - MATCH_MAX_SOURCES);
	ck_assert_str_eq(st->other.comm, "other");
	for (sum = st->other.total_ns, i = 0; i < st->nsrc; i++)
		sum += st->src[i].total_ns;
	ck_assert_uint_eq(sum, want);
	/* sorting twice (the index is rebuilt) still finds existing sources */
	gap(m, 0, t + 100, t + 200, 0);
	out(m, 0, t + 100, t + 200, 'R');
	run(m, 0, t + 100, t + 200, 1000, "task0", 0);
	ck_assert_int_eq(match_process(m, UINT64_MAX, UINT64_MAX, 0), 1);
	st = total(m, 0);
	ck_assert_uint_eq(st->nsrc, MATCH_MAX_SOURCES);
	src_is(st, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, 1000, "task0", 1000 + 100, 2, 1000);
	match_free(m);
}
END_TEST

/* ---- randomized property test ---- */

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r, uint64_t n)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (r->s >> 11) % n;
}

enum { R_GAP, R_EV, R_OUT, R_RUN };

struct rrec {
	int type;
	uint32_t vcpu;
	uint64_t start, end, unc, key; /* key: arrival position in the feed */
	struct vn_event e;
	uint32_t pid;
	int idle;
	char state;
};

struct world {
	struct rrec *r;
	size_t n, cap;
};

static struct rrec *push(struct world *w, int type, uint32_t vcpu, uint64_t start, uint64_t end)
{
	struct rrec *r;

	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 1024;
		w->r = realloc(w->r, w->cap * sizeof(*w->r));
		ck_assert_ptr_nonnull(w->r);
	}
	r = &w->r[w->n++];
	memset(r, 0, sizeof(*r));
	r->type = type;
	r->vcpu = vcpu;
	r->start = start;
	r->end = end;
	return r;
}

static uint64_t ov(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
	uint64_t lo = a > c ? a : c, hi = b < d ? b : d;

	return hi > lo ? hi - lo : 0;
}

/* One vCPU's synthetic streams: gaps, outs inside gaps with runs inside outs, and top-level events laid
 * independently (crossing gap edges), each maybe with one or two children. */
static void gen_vcpu(struct world *w, struct rng *g, uint32_t vcpu, size_t ngaps)
{
	uint64_t t = 1000, u = 1000;
	size_t k;

	for (k = 0; k < ngaps; k++) {
		uint64_t gs = t + 1 + rnd(g, 3000), ge = gs + rnd(g, 2000), o, j;
		struct rrec *r = push(w, R_GAP, vcpu, gs, ge);

		r->unc = rnd(g, 500);
		o = gs;
		for (j = rnd(g, 3); j > 0 && o < ge; j--) { /* outs, inside the gap */
			uint64_t os = o + rnd(g, ge - o), oe = os + rnd(g, ge - os + 1), rs = os;

			r = push(w, R_OUT, vcpu, os, oe);
			r->state = "RSD"[rnd(g, 3)];
			while (rs < oe && rnd(g, 4)) { /* runs inside the out */
				uint64_t a = rs + rnd(g, oe - rs), b = a + 1 + rnd(g, oe - a);

				r = push(w, R_RUN, vcpu, a, b);
				r->pid = (uint32_t)rnd(g, 20);
				r->idle = r->pid == 0;
				rs = b;
			}
			o = oe + 1;
		}
		t = ge;
	}
	while (u < t) { /* top-level events, non-overlapping */
		uint64_t s = u + rnd(g, 4000), d = rnd(g, 6000);
		int cls = rnd(g, 2) ? VN_CLASS_THREAD : VN_CLASS_SOFTIRQ;
		uint32_t id = (uint32_t)rnd(g, 5);
		uint64_t c = s;
		struct rrec *r = push(w, R_EV, vcpu, s, s + d);

		r->e = mkev(cls, id, s, s + d, VN_CLASS_NONE, 0, 0, "thr");
		while (c < s + d && rnd(g, 2)) { /* children, non-overlapping */
			uint64_t a = c + rnd(g, s + d - c), b = a + rnd(g, s + d - a + 1);

			r = push(w, R_EV, vcpu, a, b);
			r->e = mkev(rnd(g, 2) ? VN_CLASS_IRQ : VN_CLASS_NMI, (uint32_t)rnd(g, 3), a,
				    b, cls, id, 1, NULL);
			c = b;
		}
		u = s + d;
	}
}

static void feed(struct match *m, const struct rrec *r)
{
	switch (r->type) {
	case R_GAP:
		gap(m, r->vcpu, r->start, r->end, r->unc);
		break;
	case R_EV:
		ev(m, r->vcpu, r->e);
		break;
	case R_OUT:
		out(m, r->vcpu, r->start, r->end, r->state);
		break;
	default: {
		char comm[VN_COMM_LEN];

		snprintf(comm, sizeof(comm), "p%u", r->pid);
		run(m, r->vcpu, r->start, r->end, r->pid, comm, r->idle);
	}
	}
}

static int by_key(const void *a, const void *b)
{
	const struct rrec *x = a, *y = b;

	return x->key < y->key ? -1 : x->key > y->key;
}

/* Brute-force reference of one gap: host = outs in it, preempt = non-idle runs, guest = top-level events'
 * overlap outside the outs. */
static void reference(const struct world *w, const struct gaprec *gr, uint64_t *host, uint64_t *pre,
		      uint64_t *guest)
{
	size_t i, j;

	*host = *pre = *guest = 0;
	for (i = 0; i < w->n; i++) {
		const struct rrec *r = &w->r[i];
		uint64_t o;

		if (r->vcpu != gr->vcpu)
			continue;
		if (r->type == R_OUT)
			*host += ov(r->start, r->end, gr->start, gr->end);
		if (r->type == R_RUN && !r->idle)
			*pre += ov(r->start, r->end, gr->start, gr->end);
		if (r->type != R_EV || r->e.depth ||
		    !(o = ov(r->start, r->end, gr->start, gr->end)))
			continue;
		*guest += o;
		for (j = 0; j < w->n; j++)
			if (w->r[j].type == R_OUT && w->r[j].vcpu == gr->vcpu)
				*guest -= ov(w->r[j].start, w->r[j].end,
					     r->start > gr->start ? r->start : gr->start,
					     r->end < gr->end ? r->end : gr->end);
	}
}

START_TEST(test_random)
{
	struct rng g = { 0x2545f4914f6cdd1dULL + (uint64_t)_i * 7919 };
	struct world w = { 0 };
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	uint64_t sumg[2][VN_CLASS_MAX] = { { 0 } }, sumh[2][VN_HCLASS_MAX] = { { 0 } };
	uint64_t sumr[2] = { 0 }, sumd[2] = { 0 }, ngap[2] = { 0 }, horizon, end = 0;
	/* the last runs are long: the queues wrap, compact and grow many times over */
	size_t i, f = 0, ngaps = _i < 18 ? 150 : 1500;
	uint32_t v;
	int c;

	gen_vcpu(&w, &g, 0, ngaps);
	gen_vcpu(&w, &g, 1, ngaps);
	/* arrival: a record is delivered once the feed passes its start (gaps: their end), shuffled a bit */
	for (i = 0; i < w.n; i++) {
		/* gaps arrive in order at their end (the sampler reports in order), the rest jittered */
		w.r[i].key = w.r[i].type == R_GAP ? w.r[i].end : w.r[i].start + rnd(&g, 2000);
		end = end > w.r[i].end ? end : w.r[i].end;
	}
	qsort(w.r, w.n, sizeof(*w.r), by_key);
	for (horizon = 0; f < w.n; horizon += 1 + rnd(&g, 20000)) {
		while (f < w.n && w.r[f].key < horizon + 2000)
			feed(m, &w.r[f++]);
		/* everything starting before horizon has arrived (keys are start + < 2000) */
		ck_assert_int_ge(match_process(m, horizon, horizon + rnd(&g, 600), horizon), 0);
	}
	ck_assert_int_ge(match_process(m, end, end + 500, end), 0);
	for (i = 0; i < log->n; i++) {
		const struct gaprec *gr = &log->g[i];
		uint64_t host, pre, guest;

		reference(&w, gr, &host, &pre, &guest);
		ck_assert_uint_eq(gr->host[VN_HCLASS_HOST_PREEMPT] + gr->host[VN_HCLASS_HOST_WAIT],
				  host);
		ck_assert_uint_eq(gr->host[VN_HCLASS_HOST_PREEMPT], pre);
		for (c = 0; c < VN_CLASS_MAX; c++)
			guest -= gr->guest[c];
		ck_assert_uint_eq(guest, 0);
		for (c = 0; c < VN_CLASS_MAX; c++)
			sumg[gr->vcpu][c] += gr->guest[c];
		for (c = 0; c < VN_HCLASS_MAX; c++)
			sumh[gr->vcpu][c] += gr->host[c];
		sumr[gr->vcpu] += gr->residual;
		sumd[gr->vcpu] += gr->end - gr->start;
		ngap[gr->vcpu]++;
		if (i && log->g[i - 1].vcpu == gr->vcpu)
			ck_assert_uint_ge(gr->start, log->g[i - 1].end);
	}
	for (v = 0; v < 2; v++) {
		const struct match_stats *st = total(m, v);
		struct match_counters cn = counters(m, v);

		ck_assert_uint_eq(ngap[v], ngaps);
		ck_assert_uint_eq(st->gaps, ngaps);
		ck_assert_uint_eq(st->gap_ns, sumd[v]);
		ck_assert_uint_eq(st->residual_ns, sumr[v]);
		for (c = 0; c < VN_CLASS_MAX; c++)
			ck_assert_uint_eq(st->guest_ns[c], sumg[v][c]);
		for (c = 0; c < VN_HCLASS_MAX; c++)
			ck_assert_uint_eq(st->host_ns[c], sumh[v][c]);
		ck_assert_uint_eq(cn.late + cn.bad + cn.dropped + cn.clamped, 0);
		period(m, v);
	}
	match_free(m);
	free(log);
	free(w.r);
}
END_TEST

/* A gap whose clock uncertainty is absurd (a model that was poor or stale when it was converted) waits for
 * the host log at most MATCH_MAX_UNC_WAIT_NS: it does not hold every later gap back for good. */
START_TEST(test_unc_wait_bounded)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);

	gap(m, 0, 0, 10 * MS, UINT64_MAX);
	gap(m, 0, 20 * MS, 30 * MS, 1000);
	ck_assert_int_eq(match_process(m, 40 * MS, 40 * MS, 40 * MS),
			 0); /* 10 ms + 100 ms not passed */
	ck_assert_int_eq(match_process(m, 200 * MS, 200 * MS, 200 * MS), 2);
	ck_assert_uint_eq(log->n, 2);
	match_free(m);
	free(log);
}
END_TEST

/* A new guest epoch: the dead agent's queued records go (a gap left waiting far behind the host horizon was
 * already counted late), later gaps are matched as usual, the host records and the stats stay. */
START_TEST(test_guest_reset)
{
	struct gaplog *log;
	struct match *m = new_matcher(&log);
	struct match_counters c;

	gap(m, 0, 0, 10 * MS, 0);
	/* a hostile agent: one gap that ends far in the future, one matched that pushes what is done there */
	gap(m, 0, 1000 * MS, 900000 * MS, 0);
	gap(m, 0, 12 * MS, 800000 * MS, 0);
	ck_assert_int_eq(match_process(m, 20 * MS, 20 * MS, 20 * MS), 1);
	ck_assert_int_eq(match_process(m, 800000 * MS, 800000 * MS, 20 * MS), 1);
	c = counters(m, 0);
	ck_assert_uint_eq(c.late, 1); /* the far gap: waiting 799 s behind the host horizon */
	match_guest_reset(m);
	c = counters(m, 0);
	ck_assert_uint_eq(c.dropped, 0);
	ck_assert_uint_eq(c.queued, 0);
	/* the new agent's gaps, in today's time, are matched with the host's records */
	out(m, 0, 50 * MS, 55 * MS, 'R');
	gap(m, 0, 48 * MS, 60 * MS, 0);
	ck_assert_int_eq(match_process(m, 100 * MS, 100 * MS, 100 * MS), 1);
	ck_assert_uint_eq(log->n, 3);
	ck_assert_uint_eq(
	    log->g[2].host[VN_HCLASS_HOST_PREEMPT] + log->g[2].host[VN_HCLASS_HOST_WAIT], 5 * MS);
	ck_assert_uint_eq(total(m, 0)->gaps, 3);
	ck_assert_uint_eq(counters(m, 0).late, 1);
	match_free(m);
	free(log);
}
END_TEST

static Suite *match_suite(void)
{
	Suite *s = suite_create("match");
	TCase *tc;

	tc = tcase_create("host");
	tcase_add_test(tc, test_host_preempt);
	tcase_add_test(tc, test_blocked_idle);
	tcase_add_test(tc, test_partial_runs);
	tcase_add_test(tc, test_clipping);
	suite_add_tcase(s, tc);

	tc = tcase_create("guest");
	tcase_add_test(tc, test_guest_thread_net);
	tcase_add_test(tc, test_worst);
	tcase_add_test(tc, test_big_guest);
	tcase_add_test(tc, test_nested);
	tcase_add_test(tc, test_nested_deep);
	tcase_add_test(tc, test_event_two_gaps);
	tcase_add_test(tc, test_steal_ignored);
	tcase_add_test(tc, test_clamped);
	tcase_add_test(tc, test_skew);
	tcase_add_test(tc, test_hostile_huge);
	tcase_add_test(tc, test_hostile_sums);
	suite_add_tcase(s, tc);

	tc = tcase_create("order");
	tcase_add_test(tc, test_horizons);
	tcase_add_test(tc, test_gap_order);
	tcase_add_test(tc, test_host_records_bounded);
	tcase_add_test(tc, test_open_out_waits);
	tcase_add_test(tc, test_late);
	tcase_add_test(tc, test_retention);
	tcase_add_test(tc, test_retention_long);
	tcase_add_test(tc, test_bad);
	tcase_add_test(tc, test_vcpus);
	tcase_add_test(tc, test_no_gap_yet);
	suite_add_tcase(s, tc);

	tc = tcase_create("cap");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_queue_cap);
	tcase_add_test(tc, test_unmeasured_vcpu);
	suite_add_tcase(s, tc);

	tc = tcase_create("stats");
	tcase_add_test(tc, test_agg);
	tcase_add_test(tc, test_period);
	tcase_add_test(tc, test_sources_full);
	tcase_add_test(tc, test_unc_wait_bounded);
	tcase_add_test(tc, test_guest_reset);
	suite_add_tcase(s, tc);

	tc = tcase_create("random");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_random, 0, 20);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(match_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
