/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/attrib/merge, the attribution engine: net accounting of nested events inside sampler gaps
 * (thread > softirq > irq, nmi and hypercall inside irq), events crossing gap boundaries checked per gap
 * through the gap callback, any feeding order and several horizons (each event counted once), steal (own
 * share and observations filling the unexplained rest, the unplaced budget), clock skew (parts still add
 * up, clamped counter), independent CPUs and late records, source names and top-source ordering, and
 * hostile input. Every numeric check is exact; on every CPU class_ns[] must add up to noise_ns.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/merge.h"

/* ---- helpers ---- */

#define MAX_GAPS 4096

struct gaprec {
	int cpu;
	uint64_t dur;
	uint64_t part[VN_CLASS_MAX];
};

struct gaplog {
	size_t n;
	struct gaprec g[MAX_GAPS];
};

static void gap_cb(void *ctx, int cpu, uint64_t dur_ns, const uint64_t class_ns[VN_CLASS_MAX])
{
	struct gaplog *log = ctx;
	struct gaprec *r;

	ck_assert_uint_lt(log->n, MAX_GAPS);
	r = &log->g[log->n++];
	r->cpu = cpu;
	r->dur = dur_ns;
	memcpy(r->part, class_ns, sizeof(r->part));
}

static struct vn_event mkev(int cpu, int cls, uint32_t id, uint64_t start, uint64_t end,
			    uint32_t net, int pcls, uint32_t pid, int depth)
{
	struct vn_event e;

	memset(&e, 0, sizeof(e));
	e.cpu = (__u16)cpu;
	e.cls = (__u8)cls;
	e.id = id;
	e.start_ns = start;
	e.end_ns = end;
	e.net_ns = net;
	e.parent_cls = (__u8)pcls;
	e.parent_id = pid;
	e.depth = (__u8)depth;
	return e;
}

static struct vn_event mkthread(int cpu, uint32_t pid, const char *comm, uint64_t start,
				uint64_t end, uint32_t net)
{
	struct vn_event e = mkev(cpu, VN_CLASS_THREAD, pid, start, end, net, VN_CLASS_NONE, 0, 0);

	memcpy(e.comm, comm, strnlen(comm, sizeof(e.comm)));
	return e;
}

static void add_ev(struct merge *m, struct vn_event e)
{
	ck_assert_int_eq(merge_add_event(m, &e), 0);
}

static void add_sample(struct merge *m, int cpu, int kind, uint64_t start, uint64_t end)
{
	struct vn_sample s;

	memset(&s, 0, sizeof(s));
	s.cpu = (__u16)cpu;
	s.kind = (__u8)kind;
	s.start_ns = start;
	s.end_ns = end;
	ck_assert_int_eq(merge_add_sample(m, &s), 0);
}

static void add_gap(struct merge *m, int cpu, uint64_t start, uint64_t end)
{
	add_sample(m, cpu, VN_SAMPLE_GAP, start, end);
}

static void process(struct merge *m, uint64_t horizon)
{
	ck_assert_int_eq(merge_process(m, horizon), 0);
}

/* The CPU's totals, with the invariant every test relies on: class parts add up to the noise exactly. */
static const struct merge_cpu *cpu_ok(const struct merge *m, int cpu)
{
	const struct merge_cpu *c = merge_cpu(m, cpu);
	uint64_t sum = 0;
	int cl;

	ck_assert_ptr_nonnull(c);
	for (cl = 0; cl < VN_CLASS_MAX; cl++)
		sum += c->class_ns[cl];
	ck_assert_uint_eq(sum, c->noise_ns);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_NONE], 0);
	return c;
}

/* Every logged gap adds up to its duration. */
static void gaps_ok(const struct gaplog *log)
{
	size_t i;
	int cl;

	for (i = 0; i < log->n; i++) {
		uint64_t sum = 0;

		for (cl = 0; cl < VN_CLASS_MAX; cl++)
			sum += log->g[i].part[cl];
		ck_assert_uint_eq(sum, log->g[i].dur);
		ck_assert_uint_eq(log->g[i].part[VN_CLASS_NONE], 0);
	}
}

/* The source (cls, id) of the CPU through the public API, or NULL. */
static const struct merge_source *find_src(const struct merge *m, int cpu, int cls, uint32_t id)
{
	static struct merge_source top[256];
	size_t n = merge_top_sources(m, cpu, top, 256), i;

	for (i = 0; i < n; i++)
		if (top[i].cls == cls && top[i].id == id)
			return &top[i];
	return NULL;
}

static uint64_t src_sum(const struct merge *m, int cpu)
{
	struct merge_source top[256];
	size_t n = merge_top_sources(m, cpu, top, 256), i;
	uint64_t sum = 0;

	for (i = 0; i < n; i++)
		sum += top[i].total_ns;
	return sum;
}

static void src_is(const struct merge *m, int cpu, int cls, uint32_t id, uint64_t total,
		   uint64_t count)
{
	const struct merge_source *s = find_src(m, cpu, cls, id);

	ck_assert_msg(s != NULL, "no source cls %d id %u", cls, id);
	ck_assert_uint_eq(s->total_ns, total);
	ck_assert_uint_eq(s->count, count);
}

#define TIMER_IRQ (VN_VEC_BASE + VN_VEC_LOCAL_TIMER)
#define SIRQ_TIMER 1

/* ---- basic ---- */

START_TEST(test_single_irq)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	ck_assert_ptr_nonnull(m);
	add_sample(m, 0, VN_SAMPLE_WINDOW, 0, 1000);
	add_gap(m, 0, 1000, 2000);
	add_sample(m, 0, VN_SAMPLE_WINDOW, 2000, 5000);
	add_ev(m, mkev(0, VN_CLASS_IRQ, TIMER_IRQ, 1200, 1300, 100, VN_CLASS_NONE, 0, 0));
	process(m, 5000);
	c = cpu_ok(m, 0);
	ck_assert_int_eq(c->cpu, 0);
	ck_assert_int_eq(c->active, 1);
	ck_assert_uint_eq(c->runtime_ns, 4000);
	ck_assert_uint_eq(c->noise_ns, 1000);
	ck_assert_uint_eq(c->max_single_ns, 1000);
	ck_assert_uint_eq(c->samples, 1);
	ck_assert_uint_eq(c->events, 1);
	ck_assert_uint_eq(c->late, 0);
	ck_assert_uint_eq(c->clamped, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 900);
	ck_assert_uint_eq(c->class_count[VN_CLASS_IRQ], 1);
	ck_assert_uint_eq(c->class_count[VN_CLASS_UNEXPLAINED], 1);
	ck_assert_uint_eq(c->last_gap_start, 1000);
	ck_assert_uint_eq(c->last_gap_end, 2000);
	ck_assert_uint_eq(c->nrecent, 1);
	ck_assert_uint_eq(c->recent[0].start_ns, 1200);
	ck_assert_uint_eq(c->recent_ov[0], 100);
	ck_assert_uint_eq(c->nsrc, 1);
	src_is(m, 0, VN_CLASS_IRQ, TIMER_IRQ, 100, 1);
	ck_assert_uint_eq(find_src(m, 0, VN_CLASS_IRQ, TIMER_IRQ)->max_ns, 100);
	ck_assert_uint_eq(log->n, 1);
	ck_assert_int_eq(log->g[0].cpu, 0);
	ck_assert_uint_eq(log->g[0].dur, 1000);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_UNEXPLAINED], 900);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_empty_gap)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_gap(m, 3, 500, 800);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 3);
	ck_assert_uint_eq(c->noise_ns, 300);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 300);
	ck_assert_uint_eq(c->class_count[VN_CLASS_UNEXPLAINED], 1);
	ck_assert_uint_eq(c->nsrc, 0);
	ck_assert_uint_eq(merge_top_sources(m, 3, NULL, 0), 0);
	ck_assert_ptr_null(merge_cpu(m, 2));
	ck_assert_ptr_null(merge_cpu(m, -1));
	ck_assert_ptr_null(merge_cpu(m, MERGE_MAX_CPUS));
	merge_free(m);
	merge_free(NULL);
}
END_TEST

START_TEST(test_event_outside_gaps)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_gap(m, 0, 1000, 2000);
	/* before, after, and touching both ends of the half-open gap: no overlap */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 5, 100, 200, 100, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 5, 900, 1000, 100, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 5, 2000, 2100, 100, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 5, 3000, 3100, 100, VN_CLASS_NONE, 0, 0));
	/* zero-length event inside the gap: nothing to attribute */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 6, 1500, 1500, 0, VN_CLASS_NONE, 0, 0));
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->events, 5);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 0);
	ck_assert_uint_eq(c->class_count[VN_CLASS_IRQ], 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 1000);
	ck_assert_ptr_null(find_src(m, 0, VN_CLASS_IRQ, 5));
	merge_free(m);
}
END_TEST

/* ---- nesting ---- */

/* thread T [100,1100) > softirq [200,500) > irq [300,350), emitted as the kernel does: innermost first. */
static void add_tsi(struct merge *m, int cpu, uint64_t off)
{
	add_ev(m, mkev(cpu, VN_CLASS_IRQ, TIMER_IRQ, off + 300, off + 350, 50, VN_CLASS_SOFTIRQ,
		       SIRQ_TIMER, 2));
	add_ev(m, mkev(cpu, VN_CLASS_SOFTIRQ, SIRQ_TIMER, off + 200, off + 500, 250,
		       VN_CLASS_THREAD, 42, 1));
	add_ev(m, mkthread(cpu, 42, "kworker/1:2", off + 100, off + 1100, 700));
}

START_TEST(test_thread_softirq_irq)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	add_tsi(m, 0, 0);
	add_gap(m, 0, 50, 1200);
	process(m, 2000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->noise_ns, 1150);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 700);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_SOFTIRQ], 250);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 50);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 150);
	ck_assert_uint_eq(c->class_count[VN_CLASS_THREAD], 1);
	ck_assert_uint_eq(c->class_count[VN_CLASS_SOFTIRQ], 1);
	ck_assert_uint_eq(c->class_count[VN_CLASS_IRQ], 1);
	ck_assert_uint_eq(c->clamped, 0);
	ck_assert_uint_eq(c->nsrc, 3);
	src_is(m, 0, VN_CLASS_THREAD, 42, 700, 1);
	src_is(m, 0, VN_CLASS_SOFTIRQ, SIRQ_TIMER, 250, 1);
	src_is(m, 0, VN_CLASS_IRQ, TIMER_IRQ, 50, 1);
	ck_assert_uint_eq(find_src(m, 0, VN_CLASS_THREAD, 42)->max_ns, 700);
	ck_assert_str_eq(find_src(m, 0, VN_CLASS_THREAD, 42)->comm, "kworker/1:2");
	/* no double counting: the sources explain exactly what is not unexplained */
	ck_assert_uint_eq(src_sum(m, 0), 1000);
	ck_assert_uint_eq(log->n, 1);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_nested_exact_gap)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_gap(m, 0, 100, 1100);
	add_tsi(m, 0, 0);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->noise_ns, 1000);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 700);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_SOFTIRQ], 250);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 50);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	ck_assert_uint_eq(c->class_count[VN_CLASS_UNEXPLAINED], 0);
	ck_assert_uint_eq(src_sum(m, 0), 1000);
	merge_free(m);
}
END_TEST

START_TEST(test_nmi_in_irq)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_ev(m, mkev(0, VN_CLASS_NMI, 0, 150, 170, 20, VN_CLASS_IRQ, 33, 1));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 33, 100, 400, 280, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 90, 410);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 280);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_NMI], 20);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 20);
	ck_assert_uint_eq(c->class_count[VN_CLASS_NMI], 1);
	ck_assert_uint_eq(c->class_count[VN_CLASS_IRQ], 1);
	src_is(m, 0, VN_CLASS_IRQ, 33, 280, 1);
	src_is(m, 0, VN_CLASS_NMI, 0, 20, 1);
	merge_free(m);
}
END_TEST

START_TEST(test_hcall_in_irq)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_ev(m, mkev(0, VN_CLASS_HCALL, VN_HCALL_SEND_IPI_MASK, 200, 260, 60, VN_CLASS_IRQ,
		       VN_VEC_BASE + VN_VEC_CALL_FUNCTION, 1));
	add_ev(m, mkev(0, VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_CALL_FUNCTION, 100, 400, 240,
		       VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 100, 400);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 240);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_HCALL], 60);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	src_is(m, 0, VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_CALL_FUNCTION, 240, 1);
	src_is(m, 0, VN_CLASS_HCALL, VN_HCALL_SEND_IPI_MASK, 60, 1);
	merge_free(m);
}
END_TEST

/* A child that starts on the same ns as its parent (coarse clock): source totals must stay net too. */
START_TEST(test_child_same_start)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_ev(m, mkev(0, VN_CLASS_IRQ, 11, 100, 150, 50, VN_CLASS_THREAD, 42, 1));
	add_ev(m, mkthread(0, 42, "worker", 100, 1100, 950));
	add_ev(m, mkev(0, VN_CLASS_NMI, 0, 2000, 2010, 10, VN_CLASS_IRQ, 12, 1));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 12, 2000, 2100, 90, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 100, 1100);
	add_gap(m, 0, 2000, 2100);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 950);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 50 + 90);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_NMI], 10);
	ck_assert_uint_eq(c->clamped, 0);
	src_is(m, 0, VN_CLASS_THREAD, 42, 950, 1);
	src_is(m, 0, VN_CLASS_IRQ, 11, 50, 1);
	src_is(m, 0, VN_CLASS_IRQ, 12, 90, 1);
	src_is(m, 0, VN_CLASS_NMI, 0, 10, 1);
	ck_assert_uint_eq(src_sum(m, 0), c->noise_ns);
	merge_free(m);
}
END_TEST

/* The same irq source nested in two different threads; threads are told apart by pid. */
START_TEST(test_two_threads)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_ev(m, mkev(0, VN_CLASS_IRQ, TIMER_IRQ, 200, 230, 30, VN_CLASS_THREAD, 7, 1));
	add_ev(m, mkthread(0, 7, "a", 100, 600, 470));
	add_ev(m, mkev(0, VN_CLASS_IRQ, TIMER_IRQ, 700, 740, 40, VN_CLASS_THREAD, 8, 1));
	add_ev(m, mkthread(0, 8, "b", 600, 1000, 360));
	add_gap(m, 0, 100, 1000);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 830);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 70);
	ck_assert_uint_eq(c->class_count[VN_CLASS_IRQ], 2);
	ck_assert_uint_eq(c->class_count[VN_CLASS_THREAD], 2);
	src_is(m, 0, VN_CLASS_THREAD, 7, 470, 1);
	src_is(m, 0, VN_CLASS_THREAD, 8, 360, 1);
	src_is(m, 0, VN_CLASS_IRQ, TIMER_IRQ, 70, 2);
	merge_free(m);
}
END_TEST

/* ---- gap boundaries ---- */

START_TEST(test_event_spans_two_gaps)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	add_ev(m, mkthread(0, 9, "spin", 100, 1100, 1000));
	add_gap(m, 0, 200, 300);
	add_sample(m, 0, VN_SAMPLE_WINDOW, 300, 600);
	add_gap(m, 0, 600, 800);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->noise_ns, 300);
	ck_assert_uint_eq(c->runtime_ns, 300);
	ck_assert_uint_eq(c->samples, 2);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 300);
	ck_assert_uint_eq(c->class_count[VN_CLASS_THREAD], 1);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	src_is(m, 0, VN_CLASS_THREAD, 9, 300, 1);
	ck_assert_uint_eq(c->nrecent, 1);
	ck_assert_uint_eq(log->n, 2);
	ck_assert_uint_eq(log->g[0].dur, 100);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_THREAD], 100);
	ck_assert_uint_eq(log->g[1].dur, 200);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_THREAD], 200);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_child_crosses_boundary)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	/* thread [0,2000) > irq [250,350); gaps [100,300) and [320,400) */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 19, 250, 350, 100, VN_CLASS_THREAD, 5, 1));
	add_ev(m, mkthread(0, 5, "t", 0, 2000, 1900));
	add_gap(m, 0, 100, 300);
	add_gap(m, 0, 320, 400);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(log->n, 2);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_IRQ], 50);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_THREAD], 150);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_UNEXPLAINED], 0);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_IRQ], 30);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_THREAD], 50);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_UNEXPLAINED], 0);
	gaps_ok(log);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 80);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 200);
	ck_assert_uint_eq(c->class_count[VN_CLASS_IRQ], 1);
	ck_assert_uint_eq(c->class_count[VN_CLASS_THREAD], 1);
	src_is(m, 0, VN_CLASS_IRQ, 19, 80, 1);
	src_is(m, 0, VN_CLASS_THREAD, 5, 200, 1);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_many_gaps_one_event)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;
	size_t i;

	/* 100 gaps of 30 ns every 100 ns; a softirq covers [1015, 8015): 70 gaps fully, 2 halves */
	for (i = 0; i < 100; i++)
		add_gap(m, 0, 1000 + i * 100, 1030 + i * 100);
	add_ev(m, mkev(0, VN_CLASS_SOFTIRQ, 3, 1015, 8015, 7000, VN_CLASS_NONE, 0, 0));
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(log->n, 100);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_SOFTIRQ], 15);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_SOFTIRQ], 30);
	ck_assert_uint_eq(log->g[69].part[VN_CLASS_SOFTIRQ], 30);
	ck_assert_uint_eq(log->g[70].part[VN_CLASS_SOFTIRQ], 15);
	ck_assert_uint_eq(log->g[71].part[VN_CLASS_SOFTIRQ], 0);
	gaps_ok(log);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_SOFTIRQ], 15 + 69 * 30 + 15);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 3000 - (15 + 69 * 30 + 15));
	src_is(m, 0, VN_CLASS_SOFTIRQ, 3, 15 + 69 * 30 + 15, 1);
	merge_free(m);
	free(log);
}
END_TEST

/* ---- feeding order and horizons ---- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)((rng_state >> 33) % n);
}

enum { REC_EV, REC_GAP };
struct rec {
	int kind;
	struct vn_event e;
	uint64_t start, end; /* gaps */
};

/*
 * A deterministic scenario on one CPU: per 1000 ns slot a gap, and around it a thread with a softirq with
 * an irq (with an nmi), or plain irqs, some crossing the gap edges, plus events outside gaps. Records are
 * listed in emission order (by end). Returns the count.
 */
static size_t scenario(struct rec *r, size_t max, int cpu, uint64_t seed)
{
	size_t n = 0, s;

	rng_state = seed;
	for (s = 0; s < 200 && n + 8 <= max; s++) {
		uint64_t b = 10000 + s * 1000;
		uint64_t gs = b + 100 + rnd(100), ge = gs + 200 + rnd(400);
		uint64_t ts = gs - 50 + rnd(100), te = ge - 50 + rnd(100);

		r[n].kind = REC_EV;
		r[n++].e =
		    mkev(cpu, VN_CLASS_IRQ, 1 + rnd(3), b + 10, b + 40, 30, VN_CLASS_NONE, 0, 0);
		if (rnd(2)) {
			uint64_t ss = ts + 10 + rnd(50), se = ss + 50 + rnd(50);
			uint64_t is = ss + 5, ie = is + 20, ns = is + 3, ne = ns + 4;

			if (te < se + 10)
				te = se + 10;

			r[n].kind = REC_EV;
			r[n++].e =
			    mkev(cpu, VN_CLASS_NMI, 0, ns, ne, 4, VN_CLASS_IRQ, TIMER_IRQ, 3);
			r[n].kind = REC_EV;
			r[n++].e =
			    mkev(cpu, VN_CLASS_IRQ, TIMER_IRQ, is, ie, 16, VN_CLASS_SOFTIRQ, 1, 2);
			r[n].kind = REC_EV;
			r[n++].e = mkev(cpu, VN_CLASS_SOFTIRQ, 1, ss, se, (uint32_t)(se - ss - 20),
					VN_CLASS_THREAD, 100 + (uint32_t)(s % 4), 1);
			r[n].kind = REC_EV;
			r[n++].e =
			    mkthread(cpu, 100 + (uint32_t)(s % 4), s % 4 ? "kworker" : "ksoftirqd",
				     ts, te, (uint32_t)(te - ts - (se - ss)));
		} else {
			uint64_t is = gs - 20 + rnd(60);

			r[n].kind = REC_EV;
			r[n++].e = mkev(cpu, VN_CLASS_IRQ, 20 + rnd(2), is, is + 40, 40,
					VN_CLASS_NONE, 0, 0);
		}
		r[n].kind = REC_GAP;
		r[n].start = gs;
		r[n++].end = ge;
		r[n].kind = REC_EV;
		r[n++].e =
		    mkev(cpu, VN_CLASS_SOFTIRQ, 9, b + 900, b + 950, 50, VN_CLASS_NONE, 0, 0);
	}
	return n;
}

static uint64_t rec_end(const struct rec *r)
{
	return r->kind == REC_GAP ? r->end : r->e.end_ns;
}

static void feed(struct merge *m, const struct rec *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (r[i].kind == REC_GAP)
			add_gap(m, r[i].e.cpu, r[i].start, r[i].end);
		else
			add_ev(m, r[i].e);
	}
}

static void shuffle(struct rec *r, size_t n)
{
	size_t i;

	for (i = n; i > 1; i--) {
		size_t j = rnd((uint32_t)i);
		struct rec t = r[i - 1];

		r[i - 1] = r[j];
		r[j] = t;
	}
}

static void same_result(const struct merge *a, const struct gaplog *la, const struct merge *b,
			const struct gaplog *lb, int cpu)
{
	const struct merge_cpu *x = cpu_ok(a, cpu), *y = cpu_ok(b, cpu);
	struct merge_source sa[64], sb[64];
	size_t na, nb, i, j;

	ck_assert_uint_eq(x->noise_ns, y->noise_ns);
	ck_assert_uint_eq(x->samples, y->samples);
	ck_assert_uint_eq(x->clamped, y->clamped);
	ck_assert_mem_eq(x->class_ns, y->class_ns, sizeof(x->class_ns));
	ck_assert_mem_eq(x->class_count, y->class_count, sizeof(x->class_count));
	ck_assert_uint_eq(la->n, lb->n);
	for (i = 0; i < la->n; i++) {
		ck_assert_uint_eq(la->g[i].dur, lb->g[i].dur);
		ck_assert_mem_eq(la->g[i].part, lb->g[i].part, sizeof(la->g[i].part));
	}
	na = merge_top_sources(a, cpu, sa, 64);
	nb = merge_top_sources(b, cpu, sb, 64);
	ck_assert_uint_eq(na, nb);
	for (i = 0; i < na; i++) {
		for (j = 0; j < nb; j++)
			if (sb[j].cls == sa[i].cls && sb[j].id == sa[i].id)
				break;
		ck_assert_uint_lt(j, nb);
		ck_assert_uint_eq(sa[i].total_ns, sb[j].total_ns);
		ck_assert_uint_eq(sa[i].count, sb[j].count);
		ck_assert_uint_eq(sa[i].max_ns, sb[j].max_ns);
	}
}

/* The scenario's expected totals, computed independently: per gap, net overlap of each event. */
static void expected(const struct rec *r, size_t n, uint64_t cls_ns[VN_CLASS_MAX])
{
	size_t i, k;

	memset(cls_ns, 0, sizeof(uint64_t) * VN_CLASS_MAX);
	for (k = 0; k < n; k++) {
		uint64_t gs, ge, sum = 0;
		int64_t part[VN_CLASS_MAX] = { 0 };
		int cl;

		if (r[k].kind != REC_GAP)
			continue;
		gs = r[k].start;
		ge = r[k].end;
		for (i = 0; i < n; i++) {
			const struct vn_event *e = &r[i].e;
			uint64_t a, b;

			if (r[i].kind != REC_EV)
				continue;
			a = e->start_ns > gs ? e->start_ns : gs;
			b = e->end_ns < ge ? e->end_ns : ge;
			if (b <= a)
				continue;
			part[e->cls] += (int64_t)(b - a);
			if (e->parent_cls)
				part[e->parent_cls] -= (int64_t)(b - a);
		}
		for (cl = 0; cl < VN_CLASS_MAX; cl++) {
			ck_assert_int_ge(part[cl], 0);
			cls_ns[cl] += (uint64_t)part[cl];
			sum += (uint64_t)part[cl];
		}
		ck_assert_uint_le(sum, ge - gs);
		cls_ns[VN_CLASS_UNEXPLAINED] += ge - gs - sum;
	}
}

/* ---- the worst gap ---- */

/* The worst gap's parts add up to it, per class to its class parts, and the part of (cls, id) is ns. */
static void worst_ok(const struct merge_worst *w)
{
	uint64_t sum = 0, cls[VN_CLASS_MAX] = { 0 };
	uint32_t i;
	int cl;

	for (i = 0; i < w->nparts; i++) {
		ck_assert_uint_gt(w->parts[i].total_ns, 0);
		sum += w->parts[i].total_ns;
		cls[w->parts[i].cls] += w->parts[i].total_ns;
	}
	ck_assert_uint_eq(sum, w->end_ns - w->start_ns);
	for (cl = 0; cl < VN_CLASS_MAX; cl++)
		ck_assert_uint_eq(cls[cl], w->class_ns[cl]);
}

static uint64_t worst_of(const struct merge_worst *w, int cls, uint32_t id)
{
	for (uint32_t i = 0; i < w->nparts; i++)
		if (w->parts[i].cls == cls && w->parts[i].id == id)
			return w->parts[i].total_ns;
	return 0;
}

START_TEST(test_worst_gap)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;
	char name[64];

	/* gap 1 (1150 ns): the thread/softirq/irq nest; gap 2 (3000 ns, the worst): a 2500 ns FIFO thread with
	 * a 100 ns irq inside it and 400 ns unexplained; gap 3 (900 ns) later: not the worst */
	add_tsi(m, 0, 0);
	add_gap(m, 0, 50, 1200);
	add_ev(m, mkthread(0, 77, "spike", 10000, 12500, 2400));
	add_ev(m, mkev(0, VN_CLASS_IRQ, TIMER_IRQ, 11000, 11100, 100, VN_CLASS_THREAD, 77, 1));
	add_gap(m, 0, 10000, 13000);
	add_ev(m, mkthread(0, 78, "late", 20000, 20900, 900));
	add_gap(m, 0, 20000, 20900);
	process(m, 30000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->worst.start_ns, 10000);
	ck_assert_uint_eq(c->worst.end_ns, 13000);
	worst_ok(&c->worst);
	ck_assert_uint_eq(worst_of(&c->worst, VN_CLASS_THREAD, 77), 2400);
	ck_assert_uint_eq(worst_of(&c->worst, VN_CLASS_IRQ, TIMER_IRQ), 100);
	ck_assert_uint_eq(c->worst.class_ns[VN_CLASS_UNEXPLAINED], 500);
	ck_assert_uint_eq(worst_of(&c->worst, VN_CLASS_THREAD, 78), 0);
	/* the lead-up: the events of the gap before it, oldest first */
	ck_assert_uint_eq(c->worst.nbefore, 3);
	ck_assert_uint_eq(c->worst.before[c->worst.nbefore - 1].end_ns <= 10000, 1);
	ck_assert_str_eq(merge_source_name(&c->worst.parts[0], NULL, NULL, name, sizeof(name)),
			 "thread:spike[77]");
	/* the period's worst: the same so far; after a reset, a shorter later gap is the period's alone */
	ck_assert_uint_eq(c->pworst.start_ns, 10000);
	merge_period_worst_reset(m);
	c = merge_cpu(m, 0);
	ck_assert_uint_eq(c->pworst.end_ns, 0);
	add_ev(m, mkthread(0, 79, "small", 40000, 40500, 500));
	add_gap(m, 0, 40000, 40600);
	process(m, 50000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->pworst.start_ns, 40000);
	worst_ok(&c->pworst);
	ck_assert_uint_eq(worst_of(&c->pworst, VN_CLASS_THREAD, 79), 500);
	ck_assert_uint_eq(c->worst.start_ns, 10000);
	merge_free(m);
}
END_TEST

/* More sources in the worst gap than it lists: the rest of a class is one part, still exact. */
START_TEST(test_worst_gap_many_sources)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;
	char name[64];
	uint32_t k;

	for (k = 0; k < 3 * MERGE_WORST_PARTS; k++)
		add_ev(m, mkev(0, VN_CLASS_IRQ, 100 + k, 1000 + 100 * k, 1000 + 100 * k + 50 + k,
			       50 + k, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 1000, 1000 + 100 * 3 * MERGE_WORST_PARTS);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	worst_ok(&c->worst);
	ck_assert_uint_le(c->worst.nparts, MERGE_WORST_PARTS);
	ck_assert_uint_gt(worst_of(&c->worst, VN_CLASS_IRQ, MERGE_ID_REST), 0);
	for (k = 0; k < c->worst.nparts; k++)
		if (c->worst.parts[k].id == MERGE_ID_REST && c->worst.parts[k].cls == VN_CLASS_IRQ)
			ck_assert_str_eq(
			    merge_source_name(&c->worst.parts[k], NULL, NULL, name, sizeof(name)),
			    "irq:(others)");
	merge_free(m);
}
END_TEST

START_TEST(test_any_order)
{
	static struct rec r[2048];
	struct gaplog *la = calloc(1, sizeof(*la)), *lb = calloc(1, sizeof(*lb));
	uint64_t want[VN_CLASS_MAX];
	struct merge *a, *b;
	size_t n = scenario(r, 2048, 0, 1), pass;

	expected(r, n, want);
	a = merge_new(gap_cb, la);
	feed(a, r, n);
	process(a, UINT64_MAX);
	ck_assert_mem_eq(cpu_ok(a, 0)->class_ns, want, sizeof(want));
	ck_assert_uint_eq(cpu_ok(a, 0)->clamped, 0);
	ck_assert_uint_eq(la->n, 200);
	gaps_ok(la);
	for (pass = 0; pass < 5; pass++) {
		rng_state = 1000 + pass;
		shuffle(r, n);
		lb->n = 0;
		b = merge_new(gap_cb, lb);
		feed(b, r, n);
		process(b, UINT64_MAX);
		same_result(a, la, b, lb, 0);
		merge_free(b);
	}
	merge_free(a);
	free(la);
	free(lb);
}
END_TEST

/* Emission order, processed in chunks: at each horizon every record that ended before it is in. */
START_TEST(test_horizons)
{
	static struct rec r[2048];
	struct gaplog *la = calloc(1, sizeof(*la)), *lb = calloc(1, sizeof(*lb));
	struct merge *a = merge_new(gap_cb, la), *b = merge_new(gap_cb, lb);
	size_t n = scenario(r, 2048, 0, 7), i = 0;
	uint64_t h;

	feed(a, r, n);
	process(a, UINT64_MAX);
	/* Horizons at slot starts, where the sampler runs (no gap and no event open there). */
	for (h = 10000; h <= 10000 + 201 * 1000; h += 1000 + (h / 1000 % 3) * 1000) {
		for (; i < n && rec_end(&r[i]) <= h; i++)
			feed(b, &r[i], 1);
		process(b, h);
	}
	feed(b, &r[i], n - i);
	process(b, UINT64_MAX);
	ck_assert_uint_eq(cpu_ok(b, 0)->late, 0);
	same_result(a, la, b, lb, 0);
	merge_free(a);
	merge_free(b);
	free(la);
	free(lb);
}
END_TEST

/* An event spanning a horizon (fed before it, as the contract asks) counts once, its time in full. */
START_TEST(test_event_spans_horizon)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	add_ev(m, mkthread(0, 77, "long", 100, 5000, 4900));
	add_gap(m, 0, 200, 300);
	process(m, 2000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 100);
	src_is(m, 0, VN_CLASS_THREAD, 77, 100, 1);
	/* a child of it that arrives after the first horizon, in the second gap */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 4, 3100, 3200, 100, VN_CLASS_THREAD, 77, 1));
	add_gap(m, 0, 3000, 3500);
	process(m, 4000);
	add_gap(m, 0, 4500, 4600);
	process(m, 10000);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->noise_ns, 700);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 100 + 400 + 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(c->class_count[VN_CLASS_THREAD], 1);
	ck_assert_uint_eq(c->late, 0);
	src_is(m, 0, VN_CLASS_THREAD, 77, 600, 1);
	src_is(m, 0, VN_CLASS_IRQ, 4, 100, 1);
	ck_assert_uint_eq(log->n, 3);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_THREAD], 400);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_IRQ], 100);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

/* A gap that ends after the horizon waits; its events are kept for it. */
START_TEST(test_gap_after_horizon_waits)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_gap(m, 0, 1000, 3000);
	add_ev(m, mkev(0, VN_CLASS_IRQ, 4, 1100, 1200, 100, VN_CLASS_NONE, 0, 0));
	process(m, 2000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->samples, 0);
	ck_assert_uint_eq(c->noise_ns, 0);
	add_ev(m, mkev(0, VN_CLASS_IRQ, 4, 2500, 2600, 100, VN_CLASS_NONE, 0, 0));
	process(m, 3000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->samples, 1);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 200);
	ck_assert_uint_eq(c->late, 0);
	src_is(m, 0, VN_CLASS_IRQ, 4, 200, 2);
	merge_free(m);
}
END_TEST

/*
 * A horizon inside a gap that was not added yet: the horizon is capped at the sampler's progress, so the
 * events inside that gap are kept and attributed when it arrives; nothing is late.
 */
START_TEST(test_gap_across_horizon_is_late)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_ev(m, mkev(0, VN_CLASS_IRQ, 4, 1100, 1200, 100, VN_CLASS_NONE, 0, 0));
	process(m, 2000);
	add_gap(m, 0, 1000, 3000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->late, 0);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->samples, 1);
	ck_assert_uint_eq(c->noise_ns, 2000);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 1900);
	/* a gap starting exactly at the horizon is not late */
	add_gap(m, 1, 500, 600);
	process(m, 2000);
	add_ev(m, mkev(1, VN_CLASS_IRQ, 4, 2000, 2100, 100, VN_CLASS_NONE, 0, 0));
	add_gap(m, 1, 2000, 2500);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 1);
	ck_assert_uint_eq(c->late, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	merge_free(m);
}
END_TEST

/* ---- steal ---- */

START_TEST(test_own_steal)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;
	struct vn_event e = mkev(0, VN_CLASS_IRQ, 30, 100, 400, 200, VN_CLASS_NONE, 0, 0);

	e.steal_ns = 100;
	add_ev(m, e);
	add_gap(m, 0, 0, 1000);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 200);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_STEAL], 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 700);
	ck_assert_uint_eq(c->class_count[VN_CLASS_IRQ], 1);
	ck_assert_uint_eq(c->class_count[VN_CLASS_STEAL], 1);
	src_is(m, 0, VN_CLASS_IRQ, 30, 200, 1);
	src_is(m, 0, VN_CLASS_STEAL, 0, 100, 1);
	ck_assert_uint_eq(find_src(m, 0, VN_CLASS_IRQ, 30)->max_ns, 200);
	merge_free(m);
}
END_TEST

START_TEST(test_own_steal_nested)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;
	struct vn_event t = mkthread(0, 3, "vcpu", 100, 1100, 500);

	/* thread wall 1000 = net 500 + irq child 300 + own steal 200 */
	t.steal_ns = 200;
	add_ev(m, mkev(0, VN_CLASS_IRQ, 31, 300, 600, 300, VN_CLASS_THREAD, 3, 1));
	add_ev(m, t);
	add_gap(m, 0, 100, 1100);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 500);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 300);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_STEAL], 200);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	src_is(m, 0, VN_CLASS_THREAD, 3, 500, 1);
	src_is(m, 0, VN_CLASS_STEAL, 0, 200, 1);
	ck_assert_uint_eq(src_sum(m, 0), 1000);
	merge_free(m);
}
END_TEST

START_TEST(test_steal_observation)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	add_gap(m, 0, 1000, 2000);
	add_ev(m, mkev(0, VN_CLASS_IRQ, 8, 1100, 1200, 100, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_STEAL, 0, 500, 2500, 300, VN_CLASS_NONE, 0, 0));
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_STEAL], 300);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 600);
	ck_assert_uint_eq(c->class_count[VN_CLASS_STEAL], 1);
	ck_assert_uint_eq(c->steal_seen_ns, 300);
	ck_assert_uint_eq(c->steal_unplaced_ns, 0);
	src_is(m, 0, VN_CLASS_STEAL, 0, 300, 1);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_STEAL], 300);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_steal_budget_exceeds_gaps)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	/* 5000 ns of steal seen in [0,3000) but only 1000 ns of gap, 100 of it an irq; a second observation */
	add_ev(m, mkev(0, VN_CLASS_STEAL, 0, 0, 3000, 5000, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_STEAL, 0, 1400, 1600, 50, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 100, 600);
	add_gap(m, 0, 1000, 1500);
	add_ev(m, mkev(0, VN_CLASS_IRQ, 8, 1100, 1200, 100, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 4000, 4100); /* outside every observation */
	process(m, 2000);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_STEAL], 900);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->noise_ns, 1100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_STEAL], 900);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 100);
	ck_assert_uint_eq(c->steal_seen_ns, 5050);
	ck_assert_uint_eq(c->steal_unplaced_ns, 5050 - 900);
	ck_assert_uint_eq(log->g[0].part[VN_CLASS_STEAL], 500);
	ck_assert_uint_eq(log->g[1].part[VN_CLASS_STEAL], 400);
	ck_assert_uint_eq(log->g[2].part[VN_CLASS_UNEXPLAINED], 100);
	gaps_ok(log);
	src_is(m, 0, VN_CLASS_STEAL, 0, 900, 1);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_late_steal)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_gap(m, 0, 100, 200);
	process(m, 1000);
	add_ev(m, mkev(0, VN_CLASS_STEAL, 0, 100, 200, 70, VN_CLASS_NONE, 0, 0));
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->late, 1);
	ck_assert_uint_eq(c->steal_seen_ns, 70);
	ck_assert_uint_eq(c->steal_unplaced_ns, 70);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 100);
	merge_free(m);
}
END_TEST

/* ---- clock skew ---- */

START_TEST(test_skew_outside_gap)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 990, 1100, 110, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 2, 1950, 2010, 60, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 1000, 2000);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 150);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 850);
	ck_assert_uint_eq(c->clamped, 0);
	merge_free(m);
}
END_TEST

START_TEST(test_skew_child_beyond_parent)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	/* the irq ends 50 ns after its parent thread */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 950, 1050, 100, VN_CLASS_THREAD, 6, 1));
	add_ev(m, mkthread(0, 6, "t", 100, 1000, 800));
	add_gap(m, 0, 100, 1100);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 800);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 100);
	merge_free(m);
}
END_TEST

START_TEST(test_skew_overlapping_siblings)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;

	/* two top-level events overlapping by 30 ns: 130 ns of parts in a 100 ns gap are scaled */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 1000, 1080, 80, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_SOFTIRQ, 1, 1050, 1100, 50, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 1000, 1100);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->clamped, 1);
	ck_assert_uint_eq(c->noise_ns, 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ] + c->class_ns[VN_CLASS_SOFTIRQ], 100);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 62);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_SOFTIRQ], 38);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_skew_child_without_parent)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	/* the parent thread never overlaps the gap, the child does */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 1010, 1060, 50, VN_CLASS_THREAD, 6, 1));
	add_ev(m, mkthread(0, 6, "t", 900, 1000, 50));
	add_gap(m, 0, 1000, 1100);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 50);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 50);
	merge_free(m);
}
END_TEST

/* ---- CPUs and late records ---- */

START_TEST(test_cpus_independent)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	const struct merge_cpu *c;
	int cpu;

	/* the same times on every CPU, different content */
	for (cpu = 0; cpu < 4; cpu++)
		add_gap(m, cpu, 100, 1100);
	add_gap(m, MERGE_MAX_CPUS - 1, 100, 600);
	add_tsi(m, 0, 0);
	add_ev(m, mkev(1, VN_CLASS_IRQ, 1, 100, 300, 200, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(2, VN_CLASS_STEAL, 0, 0, 5000, 400, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(MERGE_MAX_CPUS - 1, VN_CLASS_NMI, 0, 200, 210, 10, VN_CLASS_NONE, 0, 0));
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 700);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	c = cpu_ok(m, 1);
	ck_assert_int_eq(c->cpu, 1);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 200);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 800);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 0);
	c = cpu_ok(m, 2);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_STEAL], 400);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 600);
	c = cpu_ok(m, 3);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 1000);
	ck_assert_uint_eq(c->nsrc, 0);
	c = cpu_ok(m, MERGE_MAX_CPUS - 1);
	ck_assert_int_eq(c->cpu, MERGE_MAX_CPUS - 1);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_NMI], 10);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 490);
	ck_assert_ptr_null(merge_cpu(m, 4));
	ck_assert_uint_eq(log->n, 5);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

START_TEST(test_late_records)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;

	add_gap(m, 0, 1000, 1500);
	process(m, 2000);
	/* ending at or before what was attributed: late, ignored */
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 1100, 1200, 100, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 1400, 1500, 100, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 1200, 1400);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->late, 3);
	ck_assert_uint_eq(c->events, 2);
	/* a later CPU is not affected, later records are not late */
	add_ev(m, mkev(1, VN_CLASS_IRQ, 1, 1100, 1200, 100, VN_CLASS_NONE, 0, 0));
	add_gap(m, 1, 1000, 1500);
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 2100, 2200, 100, VN_CLASS_NONE, 0, 0));
	add_gap(m, 0, 2050, 2300);
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->late, 3);
	ck_assert_uint_eq(c->samples, 2);
	ck_assert_uint_eq(c->noise_ns, 750);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	src_is(m, 0, VN_CLASS_IRQ, 1, 100, 1);
	c = cpu_ok(m, 1);
	ck_assert_uint_eq(c->late, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 100);
	merge_free(m);
}
END_TEST

/* ---- names and top sources ---- */

static const char *irq_name(void *ctx, uint32_t irq)
{
	(void)ctx;
	return irq == 24 ? "virtio0-input.0" : NULL;
}

static const char *name_of(int cls, uint32_t id, const char *comm, char *buf, size_t len)
{
	struct merge_source s;

	memset(&s, 0, sizeof(s));
	s.cls = (uint8_t)cls;
	s.id = id;
	if (comm)
		memcpy(s.comm, comm, strnlen(comm, VN_COMM_LEN));
	return merge_source_name(&s, irq_name, NULL, buf, len);
}

START_TEST(test_source_names)
{
	char buf[64];
	struct merge_source s;

	ck_assert_str_eq(name_of(VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_LOCAL_TIMER, NULL, buf, 64),
			 "irq:local_timer");
	ck_assert_str_eq(name_of(VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_RESCHEDULE, NULL, buf, 64),
			 "irq:reschedule");
	ck_assert_str_eq(
	    name_of(VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_CALL_FUNCTION_SINGLE, NULL, buf, 64),
	    "irq:call_function_single");
	ck_assert_str_eq(name_of(VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_THERMAL_APIC, NULL, buf, 64),
			 "irq:thermal_apic");
	ck_assert_str_eq(name_of(VN_CLASS_IRQ, VN_VEC_BASE + VN_VEC_MAX, NULL, buf, 64),
			 "irq:vector?");
	ck_assert_str_eq(name_of(VN_CLASS_IRQ, 24, NULL, buf, 64), "irq:virtio0-input.0");
	ck_assert_str_eq(name_of(VN_CLASS_IRQ, 25, NULL, buf, 64), "irq:25");
	memset(&s, 0, sizeof(s));
	s.cls = VN_CLASS_IRQ;
	s.id = 24;
	ck_assert_str_eq(merge_source_name(&s, NULL, NULL, buf, 64), "irq:24");
	ck_assert_str_eq(name_of(VN_CLASS_SOFTIRQ, 0, NULL, buf, 64), "softirq:HI");
	ck_assert_str_eq(name_of(VN_CLASS_SOFTIRQ, 1, NULL, buf, 64), "softirq:TIMER");
	ck_assert_str_eq(name_of(VN_CLASS_SOFTIRQ, 3, NULL, buf, 64), "softirq:NET_RX");
	ck_assert_str_eq(name_of(VN_CLASS_SOFTIRQ, 7, NULL, buf, 64), "softirq:SCHED");
	ck_assert_str_eq(name_of(VN_CLASS_SOFTIRQ, 9, NULL, buf, 64), "softirq:RCU");
	ck_assert_str_eq(name_of(VN_CLASS_SOFTIRQ, 10, NULL, buf, 64), "softirq:?");
	ck_assert_str_eq(name_of(VN_CLASS_THREAD, 123, "kworker/1:2", buf, 64),
			 "thread:kworker/1:2[123]");
	/* a full 16-byte comm without NUL */
	ck_assert_str_eq(name_of(VN_CLASS_THREAD, 7, "0123456789abcdefXYZ", buf, 64),
			 "thread:0123456789abcdef[7]");
	ck_assert_str_eq(name_of(VN_CLASS_HCALL, VN_HCALL_KICK_CPU, NULL, buf, 64),
			 "hypercall:kvm_kick_cpu");
	ck_assert_str_eq(name_of(VN_CLASS_HCALL, VN_HCALL_SEND_IPI_MASK_RAW, NULL, buf, 64),
			 "hypercall:__send_ipi_mask");
	ck_assert_str_eq(name_of(VN_CLASS_HCALL, VN_HCALL_WAIT, NULL, buf, 64),
			 "hypercall:kvm_wait");
	ck_assert_str_eq(name_of(VN_CLASS_HCALL, VN_HCALL_MAX, NULL, buf, 64), "hypercall:?");
	ck_assert_str_eq(name_of(VN_CLASS_NMI, 0, NULL, buf, 64), "nmi");
	ck_assert_str_eq(name_of(VN_CLASS_STEAL, 0, NULL, buf, 64), "steal");
	ck_assert_str_eq(name_of(VN_CLASS_UNEXPLAINED, 0, NULL, buf, 64), "unexplained");
	ck_assert_str_eq(name_of(200, 0, NULL, buf, 64), "?");
	/* truncation keeps a terminated string */
	ck_assert_str_eq(name_of(VN_CLASS_THREAD, 123, "kworker/1:2", buf, 10), "thread:kw");
}
END_TEST

START_TEST(test_id_names)
{
	ck_assert_str_eq(merge_vector_name(VN_VEC_IRQ_WORK), "irq_work");
	ck_assert_str_eq(merge_vector_name(VN_VEC_X86_PLATFORM_IPI), "x86_platform_ipi");
	ck_assert_str_eq(merge_vector_name(1000), "vector?");
	ck_assert_str_eq(merge_softirq_name(8), "HRTIMER");
	ck_assert_str_eq(merge_softirq_name(UINT32_MAX), "?");
	ck_assert_str_eq(merge_hcall_name(VN_HCALL_FLUSH_TLB_MULTI), "kvm_flush_tlb_multi");
	ck_assert_str_eq(merge_hcall_name(UINT32_MAX), "?");
}
END_TEST

START_TEST(test_top_sources)
{
	struct merge *m = merge_new(NULL, NULL);
	struct merge_source top[8];
	size_t n, i;

	add_gap(m, 0, 0, 10000);
	/* irq i takes 100 * (i + 1) ns, 6 sources, fed smallest-last */
	for (i = 0; i < 6; i++)
		add_ev(m, mkev(0, VN_CLASS_IRQ, (uint32_t)i, 1000 * i, 1000 * i + 100 * (i + 1),
			       (uint32_t)(100 * (i + 1)), VN_CLASS_NONE, 0, 0));
	add_ev(m, mkthread(0, 500, "big", 7000, 9000, 2000));
	process(m, UINT64_MAX);
	cpu_ok(m, 0);
	n = merge_top_sources(m, 0, top, 8);
	ck_assert_uint_eq(n, 7);
	ck_assert_uint_eq(top[0].cls, VN_CLASS_THREAD);
	ck_assert_uint_eq(top[0].total_ns, 2000);
	ck_assert_str_eq(top[0].comm, "big");
	for (i = 1; i < n; i++) {
		ck_assert_uint_eq(top[i].cls, VN_CLASS_IRQ);
		ck_assert_uint_eq(top[i].id, 6 - i);
		ck_assert_uint_eq(top[i].total_ns, 100 * (7 - i));
		ck_assert_uint_ge(top[i - 1].total_ns, top[i].total_ns);
	}
	n = merge_top_sources(m, 0, top, 3);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(top[2].id, 4);
	ck_assert_uint_eq(merge_top_sources(m, 0, top, 0), 0);
	ck_assert_uint_eq(merge_top_sources(m, 1, top, 8), 0);
	ck_assert_uint_eq(merge_top_sources(m, -1, top, 8), 0);
	ck_assert_uint_eq(merge_top_sources(m, MERGE_MAX_CPUS, top, 8), 0);
	merge_free(m);
}
END_TEST

/* Hundreds of sources (hash growth) with parents looked up among them; totals stay exact. */
START_TEST(test_many_sources)
{
	struct merge *m = merge_new(NULL, NULL);
	const struct merge_cpu *c;
	struct merge_source *top = calloc(2000, sizeof(*top));
	size_t n, i;

	for (i = 0; i < 600; i++) {
		uint64_t b = 1000 + i * 1000;
		char comm[VN_COMM_LEN];
		struct vn_event e;

		snprintf(comm, sizeof(comm), "w%zu", i);
		add_ev(m, mkev(0, VN_CLASS_IRQ, (uint32_t)i, b + 100, b + 110, 10, VN_CLASS_THREAD,
			       (uint32_t)(5000 + i), 1));
		e = mkthread(0, (uint32_t)(5000 + i), comm, b, b + 500, 490);
		e.steal_ns = (uint32_t)(i % 3 ? 0 : 50); /* a steal share now and then */
		e.net_ns -= e.steal_ns;
		add_ev(m, e);
		add_gap(m, 0, b, b + 500);
	}
	process(m, UINT64_MAX);
	c = cpu_ok(m, 0);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_IRQ], 6000);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_STEAL], 200 * 50);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_THREAD], 600 * 490 - 200 * 50);
	ck_assert_uint_eq(c->class_ns[VN_CLASS_UNEXPLAINED], 0);
	ck_assert_uint_eq(c->nsrc, 1201);
	n = merge_top_sources(m, 0, top, 2000);
	ck_assert_uint_eq(n, 1201);
	ck_assert_uint_eq(top[0].cls, VN_CLASS_STEAL);
	ck_assert_uint_eq(top[0].count, 200);
	{
		uint64_t sum = 0;

		for (i = 0; i < n; i++) {
			sum += top[i].total_ns;
			if (top[i].cls == VN_CLASS_THREAD)
				ck_assert_uint_eq(top[i].total_ns,
						  top[i].id % 3 == 5000 % 3 ? 440 : 490);
			if (top[i].cls == VN_CLASS_IRQ)
				ck_assert_uint_eq(top[i].total_ns, 10);
			ck_assert_uint_le(top[i].count, 200);
		}
		ck_assert_uint_eq(sum, c->noise_ns);
		/* merge.h: c->src holds nsrc entries */
		sum = 0;
		for (i = 0; i < c->nsrc; i++) {
			ck_assert_uint_ne(c->src[i].cls, VN_CLASS_NONE);
			sum += c->src[i].total_ns;
		}
		ck_assert_uint_eq(sum, c->noise_ns);
	}
	merge_free(m);
	free(top);
}
END_TEST

/* ---- hostile input ---- */

START_TEST(test_hostile_rejected)
{
	struct merge *m = merge_new(NULL, NULL);
	struct vn_event e =
	    mkev(MERGE_MAX_CPUS, VN_CLASS_IRQ, 1, 100, 200, 100, VN_CLASS_NONE, 0, 0);
	struct vn_sample s;
	const struct merge_cpu *c;
	int cls;

	ck_assert_int_eq(merge_add_event(m, &e), -ERANGE);
	e.cpu = UINT16_MAX;
	ck_assert_int_eq(merge_add_event(m, &e), -ERANGE);
	e.cpu = 0;
	e.end_ns = 99;
	ck_assert_int_eq(merge_add_event(m, &e), -EINVAL);
	e.end_ns = 200;
	for (cls = 0; cls < 256; cls++) {
		e.cls = (__u8)cls;
		if (cls == VN_CLASS_NONE || cls >= VN_CLASS_UNEXPLAINED)
			ck_assert_int_eq(merge_add_event(m, &e), -EINVAL);
	}
	memset(&s, 0, sizeof(s));
	s.cpu = MERGE_MAX_CPUS;
	s.start_ns = 0;
	s.end_ns = 10;
	ck_assert_int_eq(merge_add_sample(m, &s), -ERANGE);
	s.cpu = 0;
	s.start_ns = 11;
	ck_assert_int_eq(merge_add_sample(m, &s), -EINVAL);
	s.start_ns = 0;
	s.kind = 2;
	ck_assert_int_eq(merge_add_sample(m, &s), -EINVAL);
	s.kind = 255;
	ck_assert_int_eq(merge_add_sample(m, &s), -EINVAL);
	/* nothing was recorded */
	process(m, UINT64_MAX);
	c = merge_cpu(m, 0);
	if (c) {
		c = cpu_ok(m, 0);
		ck_assert_uint_eq(c->noise_ns, 0);
		ck_assert_uint_eq(c->runtime_ns, 0);
		ck_assert_uint_eq(c->nsrc, 0);
	}
	merge_free(m);
}
END_TEST

/* Junk that passes validation: bad parents, depth, flags, overlapping gaps, huge times. */
START_TEST(test_hostile_junk)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);
	struct vn_event e;
	int i, cpu;

	rng_state = 99;
	for (i = 0; i < 20000; i++) {
		cpu = (int)rnd(3);
		if (rnd(4) == 0) {
			uint64_t a = rnd(1000000), b = a + rnd(5000);

			if (rnd(2))
				add_gap(m, cpu, a, b);
			else
				add_sample(m, cpu, VN_SAMPLE_WINDOW, a, b);
		} else {
			uint64_t a = rnd(1000000);

			e = mkev(cpu, 1 + (int)rnd(6), rnd(5), a, a + rnd(3000), rnd(4000),
				 (int)rnd(256), rnd(5), (int)rnd(256));
			e.steal_ns = rnd(3) ? 0 : rnd(100000);
			e.flags = (__u8)rnd(256);
			memset(e.comm, 'x', sizeof(e.comm)); /* no NUL */
			add_ev(m, e);
		}
		if (rnd(500) == 0)
			process(m, rnd(1000000));
	}
	/* times near the top of the range */
	add_gap(m, 0, UINT64_MAX - 1000, UINT64_MAX - 10);
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, UINT64_MAX - 2000, UINT64_MAX - 1, UINT32_MAX,
		       VN_CLASS_NMI, 0, 0));
	process(m, UINT64_MAX);
	for (cpu = 0; cpu < 3; cpu++) {
		struct merge_source top[16];

		cpu_ok(m, cpu);
		merge_top_sources(m, cpu, top, 16);
	}
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

/* Gaps and events far longer than 2^63 ns must not overflow the signed per-gap parts. */
START_TEST(test_hostile_huge)
{
	struct gaplog *log = calloc(1, sizeof(*log));
	struct merge *m = merge_new(gap_cb, log);

	add_gap(m, 0, 0, UINT64_MAX - 1);
	add_ev(m, mkev(0, VN_CLASS_IRQ, 1, 0, UINT64_MAX - 1, UINT32_MAX, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_IRQ, 2, 0, UINT64_MAX - 1, UINT32_MAX, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(0, VN_CLASS_SOFTIRQ, 2, 0, UINT64_MAX - 1, UINT32_MAX, VN_CLASS_IRQ, 1, 1));
	add_ev(m, mkev(0, VN_CLASS_NMI, 0, 0, UINT64_MAX - 1, UINT32_MAX, VN_CLASS_SOFTIRQ, 2, 2));
	/* three siblings of 2^62 ns each in one class: more than INT64_MAX together */
	add_gap(m, 1, 0, 3ULL << 62);
	add_ev(m, mkev(1, VN_CLASS_IRQ, 1, 0, 1ULL << 62, 0, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(1, VN_CLASS_IRQ, 1, 1ULL << 62, 2ULL << 62, 0, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(1, VN_CLASS_IRQ, 1, 2ULL << 62, 3ULL << 62, 0, VN_CLASS_NONE, 0, 0));
	add_ev(m, mkev(1, VN_CLASS_SOFTIRQ, 1, 0, 3ULL << 62, 0, VN_CLASS_NONE, 0, 0));
	process(m, UINT64_MAX);
	cpu_ok(m, 0);
	cpu_ok(m, 1);
	ck_assert_uint_eq(log->n, 2);
	gaps_ok(log);
	merge_free(m);
	free(log);
}
END_TEST

static Suite *merge_suite(void)
{
	Suite *s = suite_create("merge");
	TCase *tc;

	tc = tcase_create("basic");
	tcase_add_test(tc, test_single_irq);
	tcase_add_test(tc, test_empty_gap);
	tcase_add_test(tc, test_event_outside_gaps);
	suite_add_tcase(s, tc);

	tc = tcase_create("nesting");
	tcase_add_test(tc, test_thread_softirq_irq);
	tcase_add_test(tc, test_nested_exact_gap);
	tcase_add_test(tc, test_nmi_in_irq);
	tcase_add_test(tc, test_hcall_in_irq);
	tcase_add_test(tc, test_child_same_start);
	tcase_add_test(tc, test_two_threads);
	suite_add_tcase(s, tc);

	tc = tcase_create("boundaries");
	tcase_add_test(tc, test_event_spans_two_gaps);
	tcase_add_test(tc, test_child_crosses_boundary);
	tcase_add_test(tc, test_many_gaps_one_event);
	suite_add_tcase(s, tc);

	tc = tcase_create("order");
	tcase_add_test(tc, test_any_order);
	tcase_add_test(tc, test_horizons);
	tcase_add_test(tc, test_event_spans_horizon);
	tcase_add_test(tc, test_gap_after_horizon_waits);
	tcase_add_test(tc, test_gap_across_horizon_is_late);
	suite_add_tcase(s, tc);

	tc = tcase_create("steal");
	tcase_add_test(tc, test_own_steal);
	tcase_add_test(tc, test_own_steal_nested);
	tcase_add_test(tc, test_steal_observation);
	tcase_add_test(tc, test_steal_budget_exceeds_gaps);
	tcase_add_test(tc, test_late_steal);
	suite_add_tcase(s, tc);

	tc = tcase_create("skew");
	tcase_add_test(tc, test_skew_outside_gap);
	tcase_add_test(tc, test_skew_child_beyond_parent);
	tcase_add_test(tc, test_skew_overlapping_siblings);
	tcase_add_test(tc, test_skew_child_without_parent);
	suite_add_tcase(s, tc);

	tc = tcase_create("cpus");
	tcase_add_test(tc, test_cpus_independent);
	tcase_add_test(tc, test_late_records);
	suite_add_tcase(s, tc);

	tc = tcase_create("names");
	tcase_add_test(tc, test_source_names);
	tcase_add_test(tc, test_id_names);
	tcase_add_test(tc, test_top_sources);
	tcase_add_test(tc, test_worst_gap);
	tcase_add_test(tc, test_worst_gap_many_sources);
	tcase_add_test(tc, test_many_sources);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_test(tc, test_hostile_rejected);
	tcase_add_test(tc, test_hostile_junk);
	tcase_add_test(tc, test_hostile_huge);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(merge_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
