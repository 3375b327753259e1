/* SPDX-License-Identifier: MIT */
/*
 * pipeline: tickets, filter (silhouette, threshold, verdicts), report hand-over and the vnoise.interval/1 line
 * (shared/pipeline), and the protocol run by concurrent ranks.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/pipeline.h"
#include "format/datagram.h"

#define CLS(c) (1u << (c))
#define ALL_CLASSES 0xffu

static struct vn_pipe *P;

static void teardown(void)
{
	free(P);
	P = NULL;
}

/* A fresh pipe with these rules, job "job", the job's size left 0 (every record counts). */
static struct vn_pipe *pipe_new(double pct, uint64_t min_noise_ns, uint32_t mask, uint32_t flags)
{
	free(P);
	P = calloc(1, sizeof(*P));
	ck_assert_ptr_nonnull(P);
	pipeline_init(P, "job", pct, min_noise_ns, mask, flags);
	return P;
}

/* Rank's record of interval n: compute_ns of work, no noise, no PMU. */
static struct vn_pipe_iv *rec(struct vn_pipe *p, uint64_t n, unsigned rank, uint64_t compute_ns)
{
	struct vn_pipe_iv *r = &pipeline_slot(p, n)->r[rank];

	memset(r, 0, sizeof(*r));
	r->interval = n + 1;
	r->start_ns = 1000000 + rank;
	r->end_ns = r->start_ns + compute_ns;
	r->instructions = VN_PIPE_NO_INSTR;
	r->pid = 100 + rank;
	r->cpu = rank;
	r->ev = VN_APP_MPI_BARRIER;
	return r;
}

/* Every rank in 0..k-1 closes interval n; the arrival orders come out 0, 1, ... */
static void arrive_all(struct vn_pipe *p, uint64_t n, unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		ck_assert_int_eq(pipeline_arrive(p, n), (int)i);
}

/* Interval n with these compute times (ranks 0..k-1), closed and filtered: returns the filter's result. */
static int run(struct vn_pipe *p, uint64_t n, const uint64_t *compute, unsigned k)
{
	for (unsigned i = 0; i < k; i++)
		rec(p, n, i, compute[i]);
	arrive_all(p, n, k);
	return pipeline_filter(p, n);
}

/* ---- init, names ---- */

START_TEST(test_init)
{
	struct vn_pipe *p = pipe_new(10.006, 5000, CLS(VN_CLASS_THREAD) | CLS(VN_CLASS_IRQ), 0);

	ck_assert_uint_eq(p->h.magic, VN_PIPE_MAGIC);
	ck_assert_uint_eq(p->h.version, VN_PIPE_VERSION);
	ck_assert_str_eq(p->h.job, "job");
	ck_assert_uint_eq(p->h.delay_pct_x100, 1001); /* rounded, not truncated */
	ck_assert_uint_eq(p->h.min_noise_ns, 5000);
	ck_assert_uint_eq(p->h.class_mask, CLS(VN_CLASS_THREAD) | CLS(VN_CLASS_IRQ));
	ck_assert_uint_eq(p->h.flags, 0);
	ck_assert_uint_eq(p->h.nranks, 0);
	for (int s = 0; s < VN_PIPE_SLOTS; s++) {
		ck_assert_int_eq(p->slot[s].fastest, -1);
		ck_assert_int_eq(p->slot[s].second, -1);
		ck_assert_int_eq(p->slot[s].slowest, -1);
		ck_assert_uint_eq(p->slot[s].state, VN_PIPE_TRACKED);
		ck_assert_uint_eq(p->slot[s].ticket, 0);
	}
	/* the caller's fields are left alone */
	p->h.nranks = 7;
	p->h.out = VN_PIPE_OUT_UDP;
	pipeline_init(p, "0123456789abcdef0123456789abcdefXYZ", 2.5, 0, ALL_CLASSES, VN_PIPE_F_ALL);
	ck_assert_uint_eq(p->h.nranks, 7);
	ck_assert_uint_eq(p->h.out, VN_PIPE_OUT_UDP);
	ck_assert_str_eq(p->h.job, "0123456789abcdef0123456789abcde"); /* 31 characters */
	ck_assert_uint_eq(p->h.delay_pct_x100, 250);
	ck_assert_uint_eq(p->h.flags, VN_PIPE_F_ALL);
	pipeline_init(p, NULL, -3, 0, 0, 0);
	ck_assert_str_eq(p->h.job, "");
	ck_assert_uint_eq(p->h.delay_pct_x100, 0);
	pipeline_init(p, "x", 0.125, 0, 0, 0);
	ck_assert_uint_eq(p->h.delay_pct_x100, 13);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(pipeline_verdict_name(VN_VERDICT_NONE), "none");
	ck_assert_str_eq(pipeline_verdict_name(VN_VERDICT_NOISE), "noise");
	ck_assert_str_eq(pipeline_verdict_name(VN_VERDICT_IMBALANCE), "imbalance");
	ck_assert_str_eq(pipeline_verdict_name(VN_VERDICT_UNEXPLAINED), "unexplained");
	ck_assert_str_eq(pipeline_verdict_name(4), "?");
	ck_assert_str_eq(pipeline_verdict_name(~0u), "?");
}
END_TEST

/* ---- tickets ---- */

START_TEST(test_tickets)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, 0);
	struct vn_pipe_slot *s = pipeline_slot(p, 0);

	ck_assert_ptr_eq(pipeline_slot(p, 3), s);
	ck_assert_ptr_eq(pipeline_slot(p, 4), &p->slot[1]);
	ck_assert_int_eq(pipeline_arrive(p, 0), 0);
	ck_assert_int_eq(pipeline_arrive(p, 0), 1);
	ck_assert_int_eq(pipeline_arrive(p, 0), 2);
	ck_assert_uint_eq(s->ticket, 1ull << 16 | 3);
	ck_assert_uint_eq(s->state, VN_PIPE_TRACKED);
	/* the first interval a slot ever holds replaces nothing */
	ck_assert_uint_eq(p->h.overrun, 0);
	/* other slots are independent */
	ck_assert_int_eq(pipeline_arrive(p, 1), 0);
	ck_assert_int_eq(pipeline_arrive(p, 2), 0);
	ck_assert_int_eq(pipeline_arrive(p, 1), 1);
	ck_assert_uint_eq(p->h.overrun, 0);
}
END_TEST

START_TEST(test_overrun)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, 0);
	struct vn_pipe_slot *s = pipeline_slot(p, 0);
	const uint64_t c[2] = { 100, 100 };

	/* interval 0 tracked, never filtered: interval 3 takes its slot and counts it lost */
	arrive_all(p, 0, 2);
	s->delayed = 9;
	s->min_ns = s->max_ns = s->avg_ns = 9;
	s->fastest = s->second = s->slowest = 9;
	s->nranks = 9;
	ck_assert_int_eq(pipeline_arrive(p, 3), 0);
	ck_assert_uint_eq(p->h.overrun, 1);
	ck_assert_uint_eq(s->ticket, 4ull << 16 | 1);
	ck_assert_uint_eq(s->state, VN_PIPE_TRACKED);
	ck_assert_uint_eq(s->delayed, 0);
	ck_assert_uint_eq(s->min_ns + s->max_ns + s->avg_ns, 0);
	ck_assert_int_eq(s->fastest, -1);
	ck_assert_int_eq(s->second, -1);
	ck_assert_int_eq(s->slowest, -1);
	ck_assert_uint_eq(s->nranks, 0);
	ck_assert_int_eq(pipeline_arrive(p, 3), 1);
	ck_assert_uint_eq(p->h.overrun, 1);

	/* a rank still closing interval 0 is too late: the slot serves 3 */
	ck_assert_int_eq(pipeline_arrive(p, 0), -1);
	ck_assert_uint_eq(p->h.overrun, 2);
	ck_assert_uint_eq(s->ticket, 4ull << 16 | 2);

	/* filtered but not reported: lost too */
	rec(p, 3, 0, 100);
	rec(p, 3, 1, 100);
	ck_assert_int_eq(pipeline_filter(p, 3), 0);
	ck_assert_int_eq(pipeline_arrive(p, 6), 0);
	ck_assert_uint_eq(p->h.overrun, 3);

	/* reported: the slot is free, no overrun */
	ck_assert_int_eq(pipeline_arrive(p, 6), 1);
	rec(p, 6, 0, 100);
	rec(p, 6, 1, 100);
	ck_assert_int_eq(pipeline_filter(p, 6), 0);
	ck_assert_int_eq(pipeline_take_report(p, 6), 0);
	ck_assert_uint_eq(s->state, VN_PIPE_REPORTED);
	ck_assert_int_eq(run(p, 9, c, 2), 0);
	ck_assert_uint_eq(p->h.overrun, 3);
	ck_assert_uint_eq(s->state, VN_PIPE_FILTERED);
	ck_assert_uint_eq(p->h.intervals, 3);
}
END_TEST

/*
 * With the job's size known, a rank's first compare-and-swap expects the slot's previous interval closed by
 * every rank: right (first arrival), wrong (a later one, an interval not closed by all, a newer one), the
 * tickets and overruns come out as from a load.
 */
START_TEST(test_tickets_sized)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, 0);
	struct vn_pipe_slot *s = pipeline_slot(p, 0);

	p->h.nranks = 2;
	for (uint64_t n = 0; n < 9; n++) {
		arrive_all(p, n, 2);
		ck_assert_uint_eq(pipeline_slot(p, n)->ticket, (n + 1) << 16 | 2);
		if (n >= 1) {
			ck_assert_int_ge(pipeline_filter(p, n - 1), 0);
			ck_assert_int_eq(pipeline_take_report(p, n - 1), 0);
		}
	}
	ck_assert_uint_eq(p->h.overrun, 0);
	/* interval 9 closed by one rank only, filtered and reported: interval 12 finds count 1, not 2 */
	ck_assert_int_eq(pipeline_filter(p, 8), 0);
	ck_assert_int_eq(pipeline_take_report(p, 8), 0);
	ck_assert_int_eq(pipeline_arrive(p, 9), 0);
	ck_assert_int_eq(pipeline_filter(p, 9), 0);
	ck_assert_int_eq(pipeline_take_report(p, 9), 0);
	ck_assert_int_eq(pipeline_arrive(p, 12), 0);
	ck_assert_uint_eq(s->ticket, 13ull << 16 | 1);
	ck_assert_uint_eq(p->h.overrun, 0);
	/* a rank late by a whole round: refused and counted */
	ck_assert_int_eq(pipeline_arrive(p, 9), -1);
	ck_assert_uint_eq(p->h.overrun, 1);
	ck_assert_uint_eq(s->ticket, 13ull << 16 | 1);
	/* more ranks than the job's size: counted on */
	ck_assert_int_eq(pipeline_arrive(p, 12), 1);
	ck_assert_int_eq(pipeline_arrive(p, 12), 2);
	ck_assert_uint_eq(s->ticket, 13ull << 16 | 3);
}
END_TEST

/* ---- filter ---- */

START_TEST(test_silhouette)
{
	struct vn_pipe *p =
	    pipe_new(1000, 0, ALL_CLASSES, 0); /* nobody delayed: only the silhouette */
	struct vn_pipe_slot *s = pipeline_slot(p, 0);
	const uint64_t c[5] = { 30, 10, 10, 50, 50 };

	ck_assert_int_eq(run(p, 0, c, 5), 0);
	ck_assert_uint_eq(s->nranks, 5);
	ck_assert_uint_eq(s->min_ns, 10);
	ck_assert_uint_eq(s->max_ns, 50);
	ck_assert_uint_eq(s->avg_ns, 30);
	/* ties go to the lower rank */
	ck_assert_int_eq(s->fastest, 1);
	ck_assert_int_eq(s->second, 2);
	ck_assert_int_eq(s->slowest, 3);
	ck_assert_uint_eq(s->state, VN_PIPE_FILTERED);

	/* records of another interval, or with the end before the start, do not count */
	rec(p, 1, 0, 40);
	rec(p, 1, 1, 7)->interval = 5;
	rec(p, 1, 2, 20);
	rec(p, 1, 3, 1)->end_ns = 0;
	rec(p, 1, 4, 40);
	arrive_all(p, 1, 5);
	ck_assert_int_eq(pipeline_filter(p, 1), 0);
	s = pipeline_slot(p, 1);
	ck_assert_uint_eq(s->nranks, 3);
	ck_assert_uint_eq(s->min_ns, 20);
	ck_assert_uint_eq(s->max_ns, 40);
	ck_assert_uint_eq(s->avg_ns, 33); /* integer mean of 100 / 3 */
	ck_assert_int_eq(s->fastest, 2);
	ck_assert_int_eq(s->second, 0);
	ck_assert_int_eq(s->slowest, 0);

	/* one record: no second */
	rec(p, 2, 6, 70);
	arrive_all(p, 2, 1);
	ck_assert_int_eq(pipeline_filter(p, 2), 0);
	s = pipeline_slot(p, 2);
	ck_assert_uint_eq(s->nranks, 1);
	ck_assert_int_eq(s->fastest, 6);
	ck_assert_int_eq(s->second, -1);
	ck_assert_int_eq(s->slowest, 6);
	ck_assert_uint_eq(s->avg_ns, 70);

	/* no record at all: an empty, quiet interval */
	arrive_all(p, 3, 1);
	ck_assert_int_eq(pipeline_filter(p, 3), 0);
	s = pipeline_slot(p, 3);
	ck_assert_uint_eq(s->nranks, 0);
	ck_assert_int_eq(s->fastest, -1);
	ck_assert_int_eq(s->second, -1);
	ck_assert_int_eq(s->slowest, -1);
	ck_assert_uint_eq(p->h.intervals, 4);
	ck_assert_uint_eq(p->h.quiet, 4);
}
END_TEST

START_TEST(test_silhouette_limits)
{
	struct vn_pipe *p = pipe_new(1000, 0, ALL_CLASSES, 0);
	struct vn_pipe_slot *s = pipeline_slot(p, 0);
	const uint64_t big[2] = { UINT64_MAX / 2, UINT64_MAX / 2 + 2 };
	const uint64_t c[4] = { 10, 20, 30, 1 };

	/* the mean of huge times does not overflow */
	ck_assert_int_eq(run(p, 0, big, 2), 0);
	ck_assert_uint_eq(s->avg_ns, UINT64_MAX / 2 + 1);
	ck_assert_int_eq(s->fastest, 0);
	ck_assert_int_eq(s->slowest, 1);

	/* the job's size bounds the records looked at: rank 3 is not of this job */
	p->h.nranks = 3;
	ck_assert_int_eq(run(p, 1, c, 4), 0);
	s = pipeline_slot(p, 1);
	ck_assert_uint_eq(s->nranks, 3);
	ck_assert_uint_eq(s->min_ns, 10);
	ck_assert_uint_eq(s->avg_ns, 20);
	ck_assert_int_eq(s->fastest, 0);

	/* the last record of a full job counts */
	p->h.nranks = VN_PIPE_RANKS;
	rec(p, 2, VN_PIPE_RANKS - 1, 5);
	rec(p, 2, 0, 9);
	arrive_all(p, 2, 2);
	ck_assert_int_eq(pipeline_filter(p, 2), 0);
	ck_assert_int_eq(pipeline_slot(p, 2)->fastest, VN_PIPE_RANKS - 1);
}
END_TEST

START_TEST(test_threshold)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, 0);
	const uint64_t at[2] = { 1000, 1100 }, above[2] = { 1000, 1101 };
	const uint64_t same[2] = { 1000, 1000 }, tiny[2] = { 1000, 1001 };
	const uint64_t zero[2] = { 0, 1 };

	/* exactly 10 % slower is not delayed, one ns more is */
	ck_assert_int_eq(run(p, 0, at, 2), 0);
	ck_assert_uint_eq(pipeline_slot(p, 0)->r[1].delay_ns, 100);
	ck_assert_uint_eq(pipeline_slot(p, 0)->r[1].verdict, VN_VERDICT_NONE);
	ck_assert_int_eq(run(p, 1, above, 2), 1);
	ck_assert_uint_eq(pipeline_slot(p, 1)->delayed, 1);
	ck_assert_uint_eq(pipeline_slot(p, 1)->r[1].delay_ns, 101);
	ck_assert_uint_eq(pipeline_slot(p, 1)->r[1].verdict, VN_VERDICT_IMBALANCE);
	ck_assert_uint_eq(pipeline_slot(p, 1)->r[0].verdict, VN_VERDICT_NONE);
	ck_assert_uint_eq(pipeline_slot(p, 1)->r[0].delay_ns, 0);

	/* threshold 0: any delay counts, an equal time does not */
	p = pipe_new(0, 0, ALL_CLASSES, 0);
	ck_assert_int_eq(run(p, 0, same, 2), 0);
	ck_assert_int_eq(run(p, 1, tiny, 2), 1);
	/* a zero fastest time: any slower rank is delayed */
	p = pipe_new(50, 0, ALL_CLASSES, 0);
	ck_assert_int_eq(run(p, 0, zero, 2), 1);
	ck_assert_uint_eq(p->h.quiet, 0);
	ck_assert_uint_eq(p->h.intervals, 1);
	/* the absolute floor: a delay must also exceed min_delay_ns */
	p = pipe_new(10, 0, ALL_CLASSES, 0);
	p->h.min_delay_ns = 101;
	ck_assert_int_eq(run(p, 0, above, 2), 0);
	ck_assert_uint_eq(p->h.quiet, 1);
	p->h.min_delay_ns = 100;
	ck_assert_int_eq(run(p, 1, above, 2), 1);
}
END_TEST

START_TEST(test_verdict_noise)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, 0);
	struct vn_pipe_slot *s;

	/* rank 1 is 500 ns late and was preempted 250 ns: noise explains half */
	rec(p, 0, 0, 1000);
	rec(p, 0, 1, 1500)->noise_ns[VN_CLASS_THREAD] = 250;
	rec(p, 0, 2, 1000);
	arrive_all(p, 0, 3);
	ck_assert_int_eq(pipeline_filter(p, 0), 1);
	s = pipeline_slot(p, 0);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
	ck_assert_uint_eq(s->r[1].delay_ns, 500);
	ck_assert_uint_eq(s->r[0].verdict, VN_VERDICT_NONE);
	ck_assert_uint_eq(s->r[2].verdict, VN_VERDICT_NONE);

	/* only noise beyond the fastest rank's counts: 349 - 100 is less than half of 500 */
	rec(p, 1, 0, 1000)->noise_ns[VN_CLASS_IRQ] = 100;
	rec(p, 1, 1, 1500)->noise_ns[VN_CLASS_THREAD] = 349;
	arrive_all(p, 1, 2);
	ck_assert_int_eq(pipeline_filter(p, 1), 1);
	ck_assert_uint_ne(pipeline_slot(p, 1)->r[1].verdict, VN_VERDICT_NOISE);
	rec(p, 2, 0, 1000)->noise_ns[VN_CLASS_IRQ] = 100;
	rec(p, 2, 1, 1500)->noise_ns[VN_CLASS_THREAD] = 350;
	arrive_all(p, 2, 2);
	ck_assert_int_eq(pipeline_filter(p, 2), 1);
	ck_assert_uint_eq(pipeline_slot(p, 2)->r[1].verdict, VN_VERDICT_NOISE);

	/* classes add up: 150 IRQ + 100 softirq on a 500 ns delay */
	s = pipeline_slot(p, 3);
	rec(p, 3, 0, 1000);
	rec(p, 3, 1, 1500);
	s->r[1].noise_ns[VN_CLASS_IRQ] = 150;
	s->r[1].noise_ns[VN_CLASS_SOFTIRQ] = 100;
	arrive_all(p, 3, 2);
	ck_assert_int_eq(pipeline_filter(p, 3), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
}
END_TEST

START_TEST(test_verdict_rules)
{
	struct vn_pipe *p = pipe_new(10, 100, CLS(VN_CLASS_THREAD), 0);
	struct vn_pipe_slot *s;

	/* below min_noise_ns a class does not count: 99 ns of thread noise twice is no noise */
	s = pipeline_slot(p, 0);
	rec(p, 0, 0, 1000);
	rec(p, 0, 1, 1150)->noise_ns[VN_CLASS_THREAD] = 99;
	arrive_all(p, 0, 2);
	ck_assert_int_eq(pipeline_filter(p, 0), 1);
	ck_assert_uint_ne(s->r[1].verdict, VN_VERDICT_NOISE);
	/* at min_noise_ns it does */
	s = pipeline_slot(p, 1);
	rec(p, 1, 0, 1000);
	rec(p, 1, 1, 1150)->noise_ns[VN_CLASS_THREAD] = 100;
	arrive_all(p, 1, 2);
	ck_assert_int_eq(pipeline_filter(p, 1), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
	/* a class outside class_mask does not count, whatever its size */
	s = pipeline_slot(p, 2);
	rec(p, 2, 0, 1000);
	rec(p, 2, 1, 1150)->noise_ns[VN_CLASS_IRQ] = 150;
	arrive_all(p, 2, 2);
	ck_assert_int_eq(pipeline_filter(p, 2), 1);
	ck_assert_uint_ne(s->r[1].verdict, VN_VERDICT_NOISE);
	/* ... and the fastest rank's masked-out noise is not subtracted either */
	s = pipeline_slot(p, 3);
	rec(p, 3, 0, 1000)->noise_ns[VN_CLASS_IRQ] = 5000;
	rec(p, 3, 1, 1150)->noise_ns[VN_CLASS_THREAD] = 100;
	arrive_all(p, 3, 2);
	ck_assert_int_eq(pipeline_filter(p, 3), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
}
END_TEST

START_TEST(test_verdict_instructions)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, 0);
	struct vn_pipe_slot *s;

	/* more than 10 % more instructions than the fastest: imbalance */
	s = pipeline_slot(p, 0);
	rec(p, 0, 0, 1000)->instructions = 1000000;
	rec(p, 0, 1, 1500)->instructions = 1100001;
	arrive_all(p, 0, 2);
	ck_assert_int_eq(pipeline_filter(p, 0), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_IMBALANCE);
	/* exactly 10 % more: the same work, slower for no known reason */
	s = pipeline_slot(p, 1);
	rec(p, 1, 0, 1000)->instructions = 1000000;
	rec(p, 1, 1, 1500)->instructions = 1100000;
	arrive_all(p, 1, 2);
	ck_assert_int_eq(pipeline_filter(p, 1), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_UNEXPLAINED);
	/* noise comes first: a noisy rank with more instructions is noise */
	s = pipeline_slot(p, 2);
	rec(p, 2, 0, 1000)->instructions = 1000000;
	rec(p, 2, 1, 1500)->instructions = 2000000;
	s->r[1].noise_ns[VN_CLASS_STEAL] = 300;
	arrive_all(p, 2, 2);
	ck_assert_int_eq(pipeline_filter(p, 2), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
	/* instructions of the rank only (not of the fastest): the on-CPU rule decides (all work: imbalance) */
	s = pipeline_slot(p, 3);
	rec(p, 3, 0, 1000);
	rec(p, 3, 1, 1500)->instructions = 1000000;
	arrive_all(p, 3, 2);
	ck_assert_int_eq(pipeline_filter(p, 3), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_IMBALANCE);
}
END_TEST

START_TEST(test_verdict_work)
{
	/* no PMU; only thread noise is noise, so the IRQ time below only shortens the work */
	struct vn_pipe *p = pipe_new(10, 0, CLS(VN_CLASS_THREAD), 0);
	struct vn_pipe_slot *s;
	const uint64_t irq[4] = { 0, 250, 251, 300 };
	const unsigned want[4] = { VN_VERDICT_IMBALANCE, VN_VERDICT_IMBALANCE,
				   VN_VERDICT_UNEXPLAINED, VN_VERDICT_UNEXPLAINED };

	for (unsigned k = 0; k < 4; k++) {
		/* work 1500 - irq against 1000: imbalance when the extra work is half the 500 ns delay */
		s = pipeline_slot(p, k);
		rec(p, k, 0, 1000);
		rec(p, k, 1, 1500)->noise_ns[VN_CLASS_IRQ] = irq[k];
		arrive_all(p, k, 2);
		ck_assert_int_eq(pipeline_filter(p, k), 1);
		ck_assert_msg(s->r[1].verdict == want[k], "irq %lu: verdict %u, want %u",
			      (unsigned long)irq[k], s->r[1].verdict, want[k]);
		ck_assert_int_eq(pipeline_take_report(p, k), 1);
	}
	/* the fastest rank's noise lowers its work too: 1000 - 400 against 1500 - 300 */
	s = pipeline_slot(p, 4);
	rec(p, 4, 0, 1000)->noise_ns[VN_CLASS_HCALL] = 400;
	rec(p, 4, 1, 1500)->noise_ns[VN_CLASS_IRQ] = 300;
	arrive_all(p, 4, 2);
	ck_assert_int_eq(pipeline_filter(p, 4), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_IMBALANCE);
	/* noise larger than the compute time: no work, not below zero */
	s = pipeline_slot(p, 5);
	rec(p, 5, 0, 1000);
	rec(p, 5, 1, 1500)->noise_ns[VN_CLASS_IRQ] = 99999;
	arrive_all(p, 5, 2);
	ck_assert_int_eq(pipeline_filter(p, 5), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_UNEXPLAINED);
}
END_TEST

/* ---- states: filter, take_report ---- */

START_TEST(test_states)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, 0);
	const uint64_t late[2] = { 1000, 2000 }, even[2] = { 1000, 1000 };

	/* nothing to filter or report yet */
	ck_assert_int_eq(pipeline_filter(p, 0), -1);
	ck_assert_int_eq(pipeline_take_report(p, 0), 0);
	rec(p, 0, 0, late[0]);
	rec(p, 0, 1, late[1]);
	arrive_all(p, 0, 2);
	ck_assert_int_eq(pipeline_take_report(p, 0), 0); /* not filtered */
	ck_assert_int_eq(pipeline_filter(p, 3), -1); /* the slot holds 0, not 3 */
	ck_assert_int_eq(pipeline_filter(p, 0), 1);
	ck_assert_int_eq(pipeline_filter(p, 0), -1); /* once only */
	ck_assert_uint_eq(p->h.intervals, 1);
	ck_assert_uint_eq(p->h.quiet, 0);
	ck_assert_int_eq(pipeline_take_report(p, 3), 0);
	ck_assert_int_eq(pipeline_take_report(p, 0), 1);
	ck_assert_int_eq(pipeline_take_report(p, 0), 0); /* one winner */
	ck_assert_int_eq(pipeline_filter(p, 0), -1);
	ck_assert_uint_eq(pipeline_slot(p, 0)->state, VN_PIPE_REPORTED);

	/* a quiet interval: filtered and counted, nothing to report, still marked reported */
	ck_assert_int_eq(run(p, 1, even, 2), 0);
	ck_assert_uint_eq(p->h.quiet, 1);
	ck_assert_uint_eq(p->h.intervals, 2);
	ck_assert_int_eq(pipeline_take_report(p, 1), 0);
	ck_assert_uint_eq(pipeline_slot(p, 1)->state, VN_PIPE_REPORTED);
	/* ... so that the slot's next interval counts no overrun */
	ck_assert_int_eq(pipeline_arrive(p, 4), 0);
	ck_assert_uint_eq(p->h.overrun, 0);

	/* VN_PIPE_F_ALL: the quiet interval is to be reported too */
	p->h.flags = VN_PIPE_F_ALL;
	ck_assert_int_eq(run(p, 2, even, 2), 0);
	ck_assert_int_eq(pipeline_take_report(p, 2), 1);
	ck_assert_int_eq(pipeline_take_report(p, 2), 0);
	ck_assert_uint_eq(p->h.quiet, 2);
	ck_assert_uint_eq(p->h.intervals, 3);
	/* the counters of reports written are the caller's */
	ck_assert_uint_eq(p->h.reported, 0);
}
END_TEST

/* ---- the report line ---- */

static const char want_line[] =
    "{\"schema\":\"vnoise.interval/1\",\"job\":\"j\\\"o\\\\b\",\"interval\":4,\"ranks\":2,"
    "\"compute_ns\":{\"min\":1000,\"max\":1600,\"avg\":1300},\"fastest\":0,\"second\":1,"
    "\"slowest\":1,\"delayed\":1,\"dtl\":\"absent\",\"silhouette\":{\"delay_ns\":600,"
    "\"guest_noise_ns\":600,\"hypervisor_ns\":0,\"imbalance_ns\":0},\"rank\":["
    "{\"rank\":1,\"pid\":101,\"cpu\":3,\"event\":\"MPI_Allreduce\",\"compute_ns\":1600,"
    "\"delay_ns\":600,\"verdict\":\"noise\",\"noise_ns\":{\"nmi\":0,\"irq\":20,\"softirq\":0,"
    "\"thread\":700,\"hypercall\":0,\"steal\":0},\"noise_total_ns\":700,\"instructions\":5000,"
    "\"cause\":{\"class\":\"thread\",\"id\":4242,\"comm\":\"a\\\"b\\u0001c\",\"ns\":650}}]}\n";

static const char want_rank0[] =
    "{\"rank\":0,\"pid\":100,\"cpu\":0,\"event\":\"MPI_Barrier\",\"compute_ns\":1000,"
    "\"delay_ns\":0,\"verdict\":\"none\",\"noise_ns\":{\"nmi\":0,\"irq\":0,\"softirq\":0,"
    "\"thread\":0,\"hypercall\":0,\"steal\":0},\"noise_total_ns\":0,\"instructions\":null,"
    "\"cause\":null}";

/* Interval 4 (slot 1) of a two-rank job: rank 1 delayed by 600 ns, 700 ns of it thread noise. */
static struct vn_pipe *json_pipe(void)
{
	/* IRQ noise below min_noise_ns: listed by class, not in the total */
	struct vn_pipe *p = pipe_new(10, 50, ALL_CLASSES, 0);
	struct vn_pipe_iv *r;

	pipeline_init(p, "j\"o\\b", 10, 50, ALL_CLASSES, 0);
	p->h.nranks = 2;
	rec(p, 4, 0, 1000);
	r = rec(p, 4, 1, 1600);
	r->cpu = 3;
	r->ev = VN_APP_MPI_ALLREDUCE;
	r->noise_ns[VN_CLASS_IRQ] = 20;
	r->noise_ns[VN_CLASS_THREAD] = 700;
	r->instructions = 5000;
	r->cause_cls = VN_CLASS_THREAD;
	r->cause_id = 4242;
	r->cause_ns = 650;
	memcpy(r->cause_comm, "a\"b\001c", 6);
	arrive_all(p, 4, 2);
	ck_assert_int_eq(pipeline_json(p, 4, (char[64]){ 0 }, 64), -ENOENT); /* not filtered yet */
	ck_assert_int_eq(pipeline_filter(p, 4), 1);
	return p;
}

START_TEST(test_json)
{
	struct vn_pipe *p = json_pipe();
	char buf[4096], want[4096];
	int n;

	n = pipeline_json(p, 4, buf, sizeof(buf));
	ck_assert_int_eq(n, (int)strlen(want_line));
	ck_assert_str_eq(buf, want_line);
	/* taking the report does not change the line */
	ck_assert_int_eq(pipeline_take_report(p, 4), 1);
	ck_assert_int_eq(pipeline_json(p, 4, buf, sizeof(buf)), n);
	ck_assert_str_eq(buf, want_line);
	/* not the slot's interval */
	ck_assert_int_eq(pipeline_json(p, 1, buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(pipeline_json(p, 7, buf, sizeof(buf)), -ENOENT);

	/* every record with VN_PIPE_F_ALL, in rank order */
	p->h.flags = VN_PIPE_F_ALL;
	snprintf(want, sizeof(want), "%.*s%s,%s",
		 (int)(strstr(want_line, "\"rank\":[") - want_line + 8), want_line, want_rank0,
		 strstr(want_line, "\"rank\":[") + 8);
	n = pipeline_json(p, 4, buf, sizeof(buf));
	ck_assert_int_eq(n, (int)strlen(want));
	ck_assert_str_eq(buf, want);
}
END_TEST

START_TEST(test_json_cause)
{
	struct vn_pipe *p = json_pipe();
	struct vn_pipe_iv *r = &pipeline_slot(p, 4)->r[1];
	char buf[4096];

	/* a comm that fills its field (no NUL) stops at the field */
	memset(r->cause_comm, 'x', sizeof(r->cause_comm));
	ck_assert_int_gt(pipeline_json(p, 4, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"comm\":\"xxxxxxxxxxxxxxxx\",\"ns\":650}"));
	/* bytes above ASCII are escaped, the line stays ASCII */
	r->cause_comm[0] = (char)0xc3;
	ck_assert_int_gt(pipeline_json(p, 4, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"comm\":\"\\u00c3xxx"));
	/* the edges of the escaped ranges: 0x1f and 0x7f escaped, a space kept */
	memcpy(r->cause_comm, " \037\177~", 5);
	ck_assert_int_gt(pipeline_json(p, 4, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"comm\":\" \\u001f\\u007f~\",\"ns\""));
	/* other classes by name */
	r->cause_cls = VN_CLASS_IRQ;
	r->cause_id = VN_VEC_BASE;
	ck_assert_int_gt(pipeline_json(p, 4, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"cause\":{\"class\":\"irq\",\"id\":65536,"));
	/* an unknown event id or class is a "?", not a crash */
	r->ev = 999;
	r->cause_cls = 200;
	ck_assert_int_gt(pipeline_json(p, 4, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"event\":\"?\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"class\":\"?\""));
}
END_TEST

START_TEST(test_json_nospace)
{
	struct vn_pipe *p = json_pipe();
	size_t full = strlen(want_line);
	char buf[4096];

	/* every size short of the line and its NUL fails, writes nothing past len and stays a string */
	for (size_t len = 0; len <= full; len++) {
		size_t i = len;

		memset(buf, 0x5a, sizeof(buf));
		ck_assert_int_eq(pipeline_json(p, 4, buf, len), -ENOSPC);
		/* one assertion per size: Check's are slow (a message each) */
		while (i < sizeof(buf) && buf[i] == 0x5a)
			i++;
		ck_assert_msg(i == sizeof(buf), "len %zu: byte %zu written", len, i);
		if (len)
			ck_assert_uint_lt(strnlen(buf, len), len);
	}
	ck_assert_int_eq(pipeline_json(p, 4, buf, full + 1), (int)full);
	ck_assert_str_eq(buf, want_line);
}
END_TEST

/* ---- the DTL view ---- */

/*
 * Interval 2 of two ranks: rank 1 is 600 ns late; the guest saw it as steal (400), the DTL as a host task that
 * preempted its vCPU for 500 ns. hyp: the DTL view (VN_PIPE_F_HYP) or the guest-only one.
 */
static struct vn_pipe *hyp_pipe(int hyp)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, hyp ? VN_PIPE_F_HYP : 0);
	struct vn_pipe_iv *r;

	p->h.nranks = 2;
	p->h.dtl = hyp ? VN_PIPE_DTL_OK : VN_PIPE_DTL_OFF;
	rec(p, 2, 0, 1000);
	r = rec(p, 2, 1, 1600);
	r->noise_ns[VN_CLASS_STEAL] = 400;
	r->noise_ns[VN_CLASS_THREAD] = 50;
	r->cause_cls = VN_CLASS_THREAD;
	r->cause_id = 77;
	r->cause_ns = 50;
	memcpy(r->cause_comm, "inj", 4);
	r->hyp_ns[VN_HCLASS_HOST_PREEMPT] = 500;
	r->hyp_ns[VN_HCLASS_VMEXIT] = 20;
	r->hyp_cause = 0x10003;
	r->hyp_cause_cls = 3; /* VN_DTL_CLASS_HOST_USER */
	r->hyp_cause_ns = 500;
	memcpy(r->hyp_key, "hog", 4);
	snprintf(r->hyp_name, sizeof(r->hyp_name), "host-user-task:hog[1234]");
	arrive_all(p, 2, 2);
	ck_assert_int_eq(pipeline_filter(p, 2), 1);
	return p;
}

START_TEST(test_hyp_verdict)
{
	struct vn_pipe *p = hyp_pipe(1);
	struct vn_pipe_slot *s = pipeline_slot(p, 2);

	/* the DTL view: 520 of hypervisor noise + 50 of thread explain the 600 of delay: noise */
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
	/* the guest-only view of the same records: steal 400 + thread 50 = 450 >= 300, also noise here; */
	ck_assert_uint_eq(s->r[1].gverdict, VN_VERDICT_NOISE);
	ck_assert_uint_eq(s->hdelayed, 1);
	/* the silhouette: steal is explained by the DTL (not counted twice), 570 = 50 guest + 520 hyp */
	ck_assert_uint_eq(s->sil_guest_ns, 50);
	ck_assert_uint_eq(s->sil_hyp_ns, 520);
	ck_assert_uint_eq(s->sil_rest_ns, 30);

	/* without any guest figure (TCG: no steal clock), the guest-only view cannot explain it */
	p = hyp_pipe(1);
	s = pipeline_slot(p, 2);
	s->r[1].noise_ns[VN_CLASS_STEAL] = 0;
	s->r[1].noise_ns[VN_CLASS_THREAD] = 0;
	s->r[1].cause_ns = 0;
	s->r[1].cause_cls = VN_CLASS_NONE;
	/* same work by the PMU: the guest-only view has nothing to name */
	s->r[0].instructions = s->r[1].instructions = 5000;
	s->state = VN_PIPE_TRACKED;
	ck_assert_int_eq(pipeline_filter(p, 2), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
	ck_assert_uint_eq(s->r[1].gverdict, VN_VERDICT_UNEXPLAINED);
	ck_assert_uint_eq(s->gdelayed, 0);
	ck_assert_uint_eq(s->sil_guest_ns, 0);
	ck_assert_uint_eq(s->sil_hyp_ns, 520);
	ck_assert_uint_eq(s->sil_rest_ns, 80);

	/* the guest-only pipe ignores the hypervisor figures entirely */
	p = hyp_pipe(0);
	s = pipeline_slot(p, 2);
	s->r[1].noise_ns[VN_CLASS_STEAL] = 0;
	s->r[1].noise_ns[VN_CLASS_THREAD] = 0;
	s->state = VN_PIPE_TRACKED;
	ck_assert_int_eq(pipeline_filter(p, 2), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_IMBALANCE); /* no PMU: on-CPU time rule */
	ck_assert_uint_eq(s->r[1].gverdict, s->r[1].verdict);
	ck_assert_uint_eq(s->hdelayed, 0);
	ck_assert_uint_eq(s->sil_hyp_ns, 0);
}
END_TEST

START_TEST(test_hyp_json)
{
	struct vn_pipe *p = hyp_pipe(1);
	char buf[4096];

	ck_assert_int_gt(pipeline_json(p, 2, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"dtl\":\"ok\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"silhouette\":{\"delay_ns\":600,\"guest_noise_ns\":50,"
					  "\"hypervisor_ns\":520,\"imbalance_ns\":30}"));
	ck_assert_ptr_nonnull(strstr(buf,
				     "\"hypervisor_ns\":{\"host_preempt\":500,\"host_wait\":0,"
				     "\"vmexit\":20,\"host_irq\":0},\"guest_verdict\":\"noise\""));
	/* the largest cause is the host's: named as the host allowed */
	ck_assert_ptr_nonnull(strstr(buf, "\"verdict\":\"noise\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"cause\":{\"class\":\"host_preempt\",\"id\":65539,"
					  "\"comm\":\"hog\",\"name\":\"host-user-task:hog[1234]\","
					  "\"cause_class\":\"host-user-task\",\"ns\":500}}"));
	/* steal net of the hypervisor total: counted once */
	ck_assert_ptr_nonnull(strstr(buf, "\"noise_total_ns\":570,"));

	/* many host causes: the hypervisor's total beats the guest's noise, its largest cause is named even
	 * when one guest cause is larger than it */
	pipeline_slot(p, 2)->r[1].cause_ns = 510;
	ck_assert_int_gt(pipeline_json(p, 2, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"cause\":{\"class\":\"host_preempt\","));
	/* the guest's noise beats the hypervisor's and its cause is larger: the guest cause stays */
	pipeline_slot(p, 2)->r[1].noise_ns[VN_CLASS_THREAD] = 900;
	pipeline_slot(p, 2)->r[1].cause_ns = 900;
	ck_assert_int_gt(pipeline_json(p, 2, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"cause\":{\"class\":\"thread\",\"id\":77,"));

	/* class detail: no name beyond the class */
	pipeline_slot(p, 2)->r[1].noise_ns[VN_CLASS_THREAD] = 50;
	pipeline_slot(p, 2)->r[1].cause_ns = 50;
	memset(pipeline_slot(p, 2)->r[1].hyp_key, 0, VN_COMM_LEN);
	snprintf(pipeline_slot(p, 2)->r[1].hyp_key, VN_COMM_LEN, "host-user-task");
	snprintf(pipeline_slot(p, 2)->r[1].hyp_name, VN_PIPE_HYP_NAME_LEN, "host-user-task");
	ck_assert_int_gt(pipeline_json(p, 2, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(
	    strstr(buf, "\"name\":\"host-user-task\",\"cause_class\":\"host-user-task\""));
	ck_assert_ptr_null(strstr(buf, "hog"));

	/* the guest-only view prints no hypervisor field, and "dtl":"off" */
	p = hyp_pipe(0);
	ck_assert_int_gt(pipeline_json(p, 2, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"dtl\":\"off\""));
	ck_assert_ptr_null(strstr(buf, "host_preempt"));
	ck_assert_ptr_null(strstr(buf, "guest_verdict"));
	ck_assert_str_eq(pipeline_dtl_name(VN_PIPE_DTL_ABSENT), "absent");
	ck_assert_str_eq(pipeline_dtl_name(VN_PIPE_DTL_STALE), "stale");
	ck_assert_str_eq(pipeline_dtl_name(VN_PIPE_DTL_LATE), "late");
	ck_assert_str_eq(pipeline_dtl_name(99), "absent");
}
END_TEST

START_TEST(test_hyp_records)
{
	struct vn_pipe *p = hyp_pipe(1);
	struct vn_report_rec rec[64];
	uint64_t a, b;
	int n, seen_pre = 0, seen_exit = 0, seen_src = 0, steal = -1;

	n = pipeline_records(p, 2, 1, rec, 64, &a, &b);
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		ck_assert(datagram_rec_ok(&rec[i]));
		if (rec[i].id != 1)
			continue;
		if (rec[i].cls == VN_CLASS_NONE)
			ck_assert_uint_eq(rec[i].noise_ns,
					  570); /* thread 50 + hyp 520, steal explained */
		if (rec[i].cls == VN_CLASS_STEAL)
			steal = (int)rec[i].noise_ns;
		if (rec[i].cls == VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_PREEMPT &&
		    rec[i].src_kind == VN_REPORT_SRC_NONE) {
			ck_assert_uint_eq(rec[i].noise_ns, 500);
			seen_pre++;
		}
		if (rec[i].cls == VN_REPORT_CLS_HYP_BASE + VN_HCLASS_VMEXIT) {
			ck_assert_uint_eq(rec[i].noise_ns, 20);
			seen_exit++;
		}
		if (rec[i].src_kind == VN_REPORT_SRC_HOST) {
			ck_assert_uint_eq(rec[i].cls,
					  VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_PREEMPT);
			ck_assert_uint_eq(rec[i].src_id, 3);
			ck_assert_str_eq(rec[i].name, "hog");
			ck_assert_uint_eq(rec[i].noise_ns, 500);
			seen_src++;
		}
	}
	ck_assert_int_eq(steal, -1); /* 400 of steal, all explained by the DTL: no record */
	ck_assert_int_eq(seen_pre, 1);
	ck_assert_int_eq(seen_exit, 1);
	ck_assert_int_eq(seen_src, 1);
	/* without detail no source record; the guest-only view has no hypervisor record at all */
	n = pipeline_records(p, 2, 0, rec, 64, &a, &b);
	for (int i = 0; i < n; i++)
		ck_assert_uint_ne(rec[i].src_kind, VN_REPORT_SRC_HOST);
	p = hyp_pipe(0);
	n = pipeline_records(p, 2, 1, rec, 64, &a, &b);
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++)
		ck_assert_uint_lt(rec[i].cls, VN_CLASS_MAX);
}
END_TEST

START_TEST(test_journal)
{
	struct vn_pipe *p = pipe_new(10, 0, ALL_CLASSES, VN_PIPE_F_DEFER);
	struct vn_pipe *priv = calloc(1, sizeof(*priv));
	const uint64_t comp[2] = { 1000, 1500 };
	struct vn_pipe_slot *s;

	ck_assert_ptr_nonnull(priv);
	pipeline_init(priv, "job", 10, 0, ALL_CLASSES, VN_PIPE_F_HYP);
	p->h.nranks = priv->h.nranks = 2;
	ck_assert_int_eq(pipeline_journal_take(p, 5, priv), -EAGAIN); /* nothing yet */
	ck_assert_int_eq(run(p, 5, comp, 2), 1);
	ck_assert_int_eq(pipeline_journal(p, 5), 0);
	ck_assert_uint_eq(p->h.journal_top, 6);
	ck_assert_uint_eq(p->journal[5].seq % 2, 0);
	ck_assert_int_eq(pipeline_journal_take(p, 5, priv), 0);
	s = pipeline_slot(priv, 5);
	ck_assert_uint_eq(s->r[1].end_ns - s->r[1].start_ns, 1500);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NONE); /* to be judged again */
	/* the private copy filters like the shared pipe, with the hypervisor's share added */
	s->r[1].hyp_ns[VN_HCLASS_HOST_PREEMPT] = 450;
	ck_assert_int_eq(pipeline_filter(priv, 5), 1);
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
	/* guest-only, without a PMU, the time the host took looks like more work on the CPU */
	ck_assert_uint_eq(s->r[1].gverdict, VN_VERDICT_IMBALANCE);
	/* a slot that moved on is not copied; an entry being written is retried; a newer one is lost */
	ck_assert_int_eq(pipeline_journal(p, 2), -ESTALE);
	ck_assert_uint_eq(p->h.journal_lost, 1);
	p->journal[5].seq++;
	ck_assert_int_eq(pipeline_journal_take(p, 5, priv), -EAGAIN);
	p->journal[5].seq++;
	ck_assert_int_eq(pipeline_journal_take(p, 5 - VN_PIPE_JOURNAL + VN_PIPE_JOURNAL, priv), 0);
	p->journal[5].interval = 5 + VN_PIPE_JOURNAL + 1;
	ck_assert_int_eq(pipeline_journal_take(p, 5, priv), -ESTALE);
	/* a record count from another process is bounded */
	p->journal[5].interval = 6;
	p->journal[5].nrec = 1000;
	ck_assert_int_eq(pipeline_journal_take(p, 5, priv), 0);
	free(priv);
}
END_TEST

/* ---- concurrent ranks ---- */

#define MT_RANKS 4
#define MT_ROUNDS 10000

struct mt {
	struct vn_pipe *p;
	pthread_barrier_t bar;
	int order[MT_ROUNDS][MT_RANKS];
	unsigned wins[MT_ROUNDS];
	unsigned errors; /* failed calls, counted: ck_assert belongs to the main thread */
	unsigned delayed; /* filter results added up */
};

struct mt_rank {
	struct mt *mt;
	unsigned rank;
};

static void mt_report(struct mt *mt, uint64_t n)
{
	char buf[8192];

	if (!pipeline_take_report(mt->p, n))
		return;
	__atomic_fetch_add(&mt->wins[n], 1, __ATOMIC_RELAXED);
	if (pipeline_json(mt->p, n, buf, sizeof(buf)) <= 0 || !strstr(buf, "\"schema\""))
		__atomic_fetch_add(&mt->errors, 1, __ATOMIC_RELAXED);
}

static void *mt_rank(void *arg)
{
	struct mt_rank *me = arg;
	struct mt *mt = me->mt;
	uint64_t t = 0;

	for (uint64_t n = 0; n < MT_ROUNDS; n++) {
		struct vn_pipe_iv *r = &pipeline_slot(mt->p, n)->r[me->rank];
		/* one rank in turn is late and preempted, except every fifth interval */
		int slow = n % 5 && n % MT_RANKS == me->rank;
		int a;

		r->start_ns = t;
		r->end_ns = t + 1000 + (slow ? 500 : 0);
		memset(r->noise_ns, 0, sizeof(r->noise_ns));
		r->noise_ns[VN_CLASS_THREAD] = slow ? 400 : 0;
		r->instructions = VN_PIPE_NO_INSTR;
		r->pid = me->rank;
		r->interval = n + 1;
		t = r->end_ns + 100;
		a = pipeline_arrive(mt->p, n);
		mt->order[n][me->rank] = a;
		if (a == 1 && n >= 1) {
			int d = pipeline_filter(mt->p, n - 1);

			if (d < 0)
				__atomic_fetch_add(&mt->errors, 1, __ATOMIC_RELAXED);
			else
				__atomic_fetch_add(&mt->delayed, (unsigned)d, __ATOMIC_RELAXED);
		}
		if (a == 0 && n >= 2)
			mt_report(mt, n - 2);
		pthread_barrier_wait(&mt->bar);
	}
	return NULL;
}

START_TEST(test_concurrent)
{
	struct mt *mt = calloc(1, sizeof(*mt));
	struct mt_rank ranks[MT_RANKS];
	pthread_t th[MT_RANKS];
	unsigned quiet = 0;

	ck_assert_ptr_nonnull(mt);
	mt->p = pipe_new(10, 0, ALL_CLASSES, VN_PIPE_F_ALL);
	mt->p->h.nranks = MT_RANKS;
	ck_assert_int_eq(pthread_barrier_init(&mt->bar, NULL, MT_RANKS), 0);
	for (unsigned i = 0; i < MT_RANKS; i++) {
		ranks[i] = (struct mt_rank){ mt, i };
		ck_assert_int_eq(pthread_create(&th[i], NULL, mt_rank, &ranks[i]), 0);
	}
	for (unsigned i = 0; i < MT_RANKS; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	/* the flush after the job: the last interval is filtered, the last two reported */
	{
		int d = pipeline_filter(mt->p, MT_ROUNDS - 1);

		ck_assert_int_ge(d, 0);
		mt->delayed += (unsigned)d;
	}
	mt_report(mt, MT_ROUNDS - 2);
	mt_report(mt, MT_ROUNDS - 1);

	ck_assert_uint_eq(mt->errors, 0);
	ck_assert_uint_eq(mt->p->h.intervals, MT_ROUNDS);
	ck_assert_uint_eq(mt->p->h.overrun, 0);
	for (unsigned n = 0; n < MT_ROUNDS; n++) {
		unsigned seen = 0;

		ck_assert_msg(mt->wins[n] == 1, "interval %u reported %u times", n, mt->wins[n]);
		for (unsigned i = 0; i < MT_RANKS; i++) {
			ck_assert_int_ge(mt->order[n][i], 0);
			ck_assert_int_lt(mt->order[n][i], MT_RANKS);
			seen |= 1u << mt->order[n][i];
		}
		ck_assert_msg(seen == (1u << MT_RANKS) - 1, "interval %u: arrival orders %#x", n,
			      seen);
		quiet += n % 5 == 0;
	}
	ck_assert_uint_eq(mt->p->h.quiet, quiet);
	ck_assert_uint_eq(mt->delayed, MT_ROUNDS - quiet);
	pthread_barrier_destroy(&mt->bar);
	free(mt);
}
END_TEST

static Suite *pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc;

	tc = tcase_create("tickets");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_init);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_tickets);
	tcase_add_test(tc, test_overrun);
	tcase_add_test(tc, test_tickets_sized);
	suite_add_tcase(s, tc);

	tc = tcase_create("filter");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_silhouette);
	tcase_add_test(tc, test_silhouette_limits);
	tcase_add_test(tc, test_threshold);
	tcase_add_test(tc, test_verdict_noise);
	tcase_add_test(tc, test_verdict_rules);
	tcase_add_test(tc, test_verdict_instructions);
	tcase_add_test(tc, test_verdict_work);
	tcase_add_test(tc, test_states);
	suite_add_tcase(s, tc);

	tc = tcase_create("json");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_json);
	tcase_add_test(tc, test_json_cause);
	tcase_add_test(tc, test_json_nospace);
	suite_add_tcase(s, tc);

	tc = tcase_create("dtl");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_add_test(tc, test_hyp_verdict);
	tcase_add_test(tc, test_hyp_json);
	tcase_add_test(tc, test_hyp_records);
	tcase_add_test(tc, test_journal);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrent");
	tcase_add_checked_fixture(tc, NULL, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_concurrent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pipeline_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
