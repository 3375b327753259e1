/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/schedlog/outlog: synthetic scheduler record streams with known answers. A vCPU preempted by
 * one hog, blocked then woken (run delay), two preemptors in one interval, idle time, period splits,
 * out-of-order and late arrival across CPUs, missed switch-ins (placed from run_ns, the wakeup, or a RUNNING
 * record), anomaly counters, slot removal and tid re-use, and the bounded preemptor table. Every test also
 * checks the stats invariants (out = R + S + D = idle + preempt + unknown; preempt = table + other).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "schedlog/outlog.h"
#include "schedlog/outlog_priv.h"

#define TS_R 0x0 /* TASK_RUNNING */
#define TS_S 0x1 /* TASK_INTERRUPTIBLE */
#define TS_D 0x2 /* TASK_UNINTERRUPTIBLE */
#define TS_DEAD 0x80

#define VCPU 100 /* tid of slot 0 */
#define VCPU2 101 /* tid of slot 1 */
#define NS OUTLOG_NO_SLOT

/* What the callbacks delivered, in order. */
struct cap {
	struct outlog_out outs[256];
	int out_seq[256];
	int nout;
	struct outlog_run runs[512];
	int run_seq[512];
	int nrun;
	int seq;
};

static struct cap cap;

static void on_out(void *ctx, const struct outlog_out *o)
{
	struct cap *c = ctx;

	ck_assert_int_lt(c->nout, 256);
	c->out_seq[c->nout] = c->seq++;
	c->outs[c->nout++] = *o;
}

static void on_run(void *ctx, const struct outlog_run *r)
{
	struct cap *c = ctx;

	ck_assert_int_lt(c->nrun, 512);
	c->run_seq[c->nrun] = c->seq++;
	c->runs[c->nrun++] = *r;
}

/* 8 slots, 4 CPUs, slot 0 = VCPU, callbacks into cap. */
static struct outlog *mk(void)
{
	struct outlog *ol = outlog_new(8, 4);

	ck_assert_ptr_nonnull(ol);
	memset(&cap, 0, sizeof(cap));
	outlog_set_callbacks(ol, on_out, on_run, &cap);
	ck_assert_int_eq(outlog_slot_add(ol, 0, VCPU), 0);
	return ol;
}

static void push(struct outlog *ol, struct outlog_rec r)
{
	ck_assert_int_eq(outlog_push(ol, &r), 0);
}

static void comm_set(char *dst, const char *src)
{
	memcpy(dst, src, strnlen(src, OUTLOG_COMM_LEN - 1));
}

static struct outlog_rec sw(uint64_t ts, uint32_t cpu, uint32_t prev, int32_t pslot,
			    uint32_t pstate, const char *pcomm, uint32_t next, int32_t nslot,
			    const char *ncomm)
{
	struct outlog_rec r;

	memset(&r, 0, sizeof(r));
	r.type = OUTLOG_REC_SWITCH;
	r.ts_ns = ts;
	r.cpu = cpu;
	r.prev_pid = prev;
	r.prev_slot = pslot;
	r.prev_state = pstate;
	comm_set(r.prev_comm, pcomm);
	r.next_pid = next;
	r.next_slot = nslot;
	comm_set(r.next_comm, ncomm);
	return r;
}

/* The same with prev's stint time (run_ns). */
static struct outlog_rec swr(uint64_t ts, uint32_t cpu, uint32_t prev, int32_t pslot,
			     uint32_t pstate, const char *pcomm, uint32_t next, int32_t nslot,
			     const char *ncomm, uint64_t run_ns)
{
	struct outlog_rec r = sw(ts, cpu, prev, pslot, pstate, pcomm, next, nslot, ncomm);

	r.run_ns = run_ns;
	return r;
}

static struct outlog_rec wake(uint64_t ts, uint32_t cpu, uint32_t tid, int32_t slot)
{
	struct outlog_rec r;

	memset(&r, 0, sizeof(r));
	r.type = OUTLOG_REC_WAKEUP;
	r.ts_ns = ts;
	r.cpu = cpu;
	r.next_pid = tid;
	r.next_slot = slot;
	strcpy(r.next_comm, "CPU 0/KVM");
	return r;
}

static struct outlog_rec running(uint64_t ts, uint32_t cpu, uint32_t tid, int32_t slot,
				 uint64_t run_ns)
{
	struct outlog_rec r = wake(ts, cpu, tid, slot);

	r.type = OUTLOG_REC_RUNNING;
	r.run_ns = run_ns;
	return r;
}

static void check_invariants(const struct outlog_stats *st)
{
	uint64_t sum = st->other.total_ns;
	uint32_t i;

	ck_assert_ptr_nonnull(st);
	ck_assert_uint_eq(st->out_ns, st->out_r_ns + st->out_s_ns + st->out_d_ns);
	ck_assert_uint_eq(st->out_ns, st->idle_ns + st->preempt_ns + st->unknown_ns);
	ck_assert_uint_le(st->npreempt, OUTLOG_TOP);
	for (i = 0; i < st->npreempt; i++) {
		sum += st->preempt[i].total_ns;
		ck_assert_uint_ne(st->preempt[i].pid, 0); /* idle is never a preemptor */
	}
	ck_assert_uint_eq(st->preempt_ns, sum);
	ck_assert_uint_le(st->run_delay_ns, st->out_ns);
}

static const struct outlog_stats *period(struct outlog *ol, uint32_t slot)
{
	const struct outlog_stats *st = outlog_period_stats(ol, slot);

	check_invariants(st);
	return st;
}

/* ---- basic intervals ---- */

START_TEST(test_preempted_by_hog)
{
	struct outlog *ol = mk();
	const struct outlog_stats *st;

	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	push(ol, sw(5000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 10000);

	ck_assert_int_eq(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].start_ns, 1000);
	ck_assert_uint_eq(cap.outs[0].end_ns, 5000);
	ck_assert_int_eq(cap.outs[0].state, 'R');
	ck_assert_uint_eq(cap.outs[0].run_delay_ns, 4000);
	ck_assert_uint_eq(cap.outs[0].wake_ns, 0);
	ck_assert_uint_eq(cap.outs[0].cpu, 0);
	ck_assert_uint_eq(cap.outs[0].tid, VCPU);
	ck_assert(!cap.outs[0].split && !cap.outs[0].cont && !cap.outs[0].guessed);
	ck_assert_int_eq(cap.nrun, 1);
	ck_assert_uint_eq(cap.runs[0].pid, 200);
	ck_assert_str_eq(cap.runs[0].comm, "hog");
	ck_assert_uint_eq(cap.runs[0].start_ns, 1000);
	ck_assert_uint_eq(cap.runs[0].end_ns, 5000);
	ck_assert_uint_eq(cap.runs[0].out_start_ns, 1000);
	ck_assert_int_eq(cap.runs[0].idle, 0);
	ck_assert_int_lt(cap.run_seq[0], cap.out_seq[0]); /* runs of a piece come before its out */

	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, 4000);
	ck_assert_uint_eq(st->out_count, 1);
	ck_assert_uint_eq(st->out_r_ns, 4000);
	ck_assert_uint_eq(st->run_delay_ns, 4000);
	ck_assert_uint_eq(st->idle_ns, 0);
	ck_assert_uint_eq(st->npreempt, 1);
	ck_assert_uint_eq(st->preempt[0].pid, 200);
	ck_assert_str_eq(st->preempt[0].comm, "hog");
	ck_assert_uint_eq(st->preempt[0].total_ns, 4000);
	ck_assert_uint_eq(st->preempt[0].count, 1);
	ck_assert_int_eq(outlog_slot_state(ol, 0), OUTLOG_SLOT_RUNNING);
	outlog_free(ol);
}
END_TEST

/* The open out piece: where it began while the vCPU is out (after a cut: where the cut left it), none once
 * it is back or for a slot never registered. */
START_TEST(test_open_since)
{
	struct outlog *ol = mk();

	ck_assert_uint_eq(outlog_open_since(ol, 0), UINT64_MAX);
	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	outlog_advance(ol, 2000);
	ck_assert_uint_eq(outlog_open_since(ol, 0), 1000);
	outlog_cut(ol, 3000);
	ck_assert_uint_eq(outlog_open_since(ol, 0), 3000);
	push(ol, sw(5000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_advance(ol, 6000);
	ck_assert_uint_eq(outlog_open_since(ol, 0), UINT64_MAX);
	ck_assert_uint_eq(outlog_open_since(ol, 12345), UINT64_MAX);
	outlog_free(ol);
}
END_TEST

START_TEST(test_blocked_woken_run_delay)
{
	struct outlog *ol = mk();
	const struct outlog_stats *st;

	push(ol, sw(1000, 0, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/0"));
	push(ol, wake(3000, 0, VCPU, 0));
	push(ol, sw(3500, 0, 0, NS, TS_R, "swapper/0", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 4000);

	ck_assert_int_eq(cap.nout, 1);
	ck_assert_int_eq(cap.outs[0].state, 'S');
	ck_assert_uint_eq(cap.outs[0].start_ns, 1000);
	ck_assert_uint_eq(cap.outs[0].end_ns, 3500);
	ck_assert_uint_eq(cap.outs[0].wake_ns, 3000);
	ck_assert_uint_eq(cap.outs[0].run_delay_ns, 500);
	/* the idle run is cut at the wakeup: halted before it, runnable (the run delay) after */
	ck_assert_int_eq(cap.nrun, 2);
	ck_assert_int_eq(cap.runs[0].idle, 1);
	ck_assert_uint_eq(cap.runs[0].pid, 0);
	ck_assert_uint_eq(cap.runs[0].end_ns, 3000);
	ck_assert_int_eq(cap.runs[0].halted, 1);
	ck_assert_uint_eq(cap.runs[1].start_ns, 3000);
	ck_assert_uint_eq(cap.runs[1].end_ns, 3500);
	ck_assert_int_eq(cap.runs[1].halted, 0);

	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, 2500);
	ck_assert_uint_eq(st->out_s_ns, 2500);
	ck_assert_uint_eq(st->run_delay_ns, 500);
	ck_assert_uint_eq(st->idle_ns, 2500);
	ck_assert_uint_eq(st->wakeups, 1);
	ck_assert_uint_eq(st->npreempt, 0);
	outlog_free(ol);
}
END_TEST

START_TEST(test_blocked_without_wakeup_has_no_delay)
{
	struct outlog *ol = mk();

	push(ol, sw(1000, 0, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/0"));
	push(ol, sw(2000, 0, 0, NS, TS_R, "swapper/0", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 3000);
	ck_assert_int_eq(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].wake_ns, 0);
	ck_assert_uint_eq(cap.outs[0].run_delay_ns, 0);
	ck_assert_uint_eq(period(ol, 0)->run_delay_ns, 0);
	outlog_free(ol);
}
END_TEST

START_TEST(test_preempt_flag_means_runnable)
{
	struct outlog *ol = mk();
	struct outlog_rec r = sw(1000, 0, VCPU, 0, TS_S, "CPU 0/KVM", 200, NS, "hog");

	r.flags =
	    OUTLOG_RF_PREEMPT; /* preempted while setting up to sleep: still on the runqueue */
	push(ol, r);
	push(ol, sw(3000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 4000);
	ck_assert_int_eq(cap.outs[0].state, 'R');
	ck_assert_uint_eq(period(ol, 0)->out_r_ns, 2000);
	ck_assert_uint_eq(period(ol, 0)->run_delay_ns, 2000);
	outlog_free(ol);
}
END_TEST

START_TEST(test_two_preemptors)
{
	struct outlog *ol = mk();
	const struct outlog_stats *st;

	/* hogA, hogB, hogA again in one interval: hogA counts one interval */
	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hogA"));
	push(ol, sw(2000, 0, 200, NS, TS_R, "hogA", 300, NS, "hogB"));
	push(ol, sw(4500, 0, 300, NS, TS_R, "hogB", 200, NS, "hogA"));
	push(ol, sw(5000, 0, 200, NS, TS_R, "hogA", VCPU, 0, "CPU 0/KVM"));
	/* a second interval where only hogA runs: its count becomes 2 */
	push(ol, sw(6000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hogA"));
	push(ol, sw(7200, 0, 200, NS, TS_R, "hogA", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 8000);

	ck_assert_int_eq(cap.nout, 2);
	ck_assert_int_eq(cap.nrun, 4);
	ck_assert_uint_eq(cap.runs[0].pid, 200);
	ck_assert_uint_eq(cap.runs[0].end_ns, 2000);
	ck_assert_uint_eq(cap.runs[1].pid, 300);
	ck_assert_uint_eq(cap.runs[1].start_ns, 2000);
	ck_assert_uint_eq(cap.runs[1].end_ns, 4500);
	ck_assert_uint_eq(cap.runs[2].pid, 200);
	ck_assert_uint_eq(cap.runs[2].start_ns, 4500);
	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, 5200);
	ck_assert_uint_eq(st->out_count, 2);
	ck_assert_uint_eq(st->npreempt, 2);
	/* sorted by total: hogA 2700 then hogB 2500 */
	ck_assert_uint_eq(st->preempt[0].pid, 200);
	ck_assert_uint_eq(st->preempt[0].total_ns, 2700);
	ck_assert_uint_eq(st->preempt[0].count, 2);
	ck_assert_uint_eq(st->preempt[1].pid, 300);
	ck_assert_uint_eq(st->preempt[1].total_ns, 2500);
	ck_assert_uint_eq(st->preempt[1].count, 1);
	outlog_free(ol);
}
END_TEST

START_TEST(test_idle_and_worker_during_blocked)
{
	struct outlog *ol = mk();
	const struct outlog_stats *st;

	push(ol, sw(1000, 0, VCPU, 0, TS_D, "CPU 0/KVM", 0, NS, "swapper/0"));
	push(ol, sw(2000, 0, 0, NS, TS_R, "swapper/0", 400, NS, "kworker/0:1"));
	push(ol, sw(2500, 0, 400, NS, TS_S, "kworker/0:1", 0, NS, "swapper/0"));
	push(ol, wake(3000, 0, VCPU, 0));
	push(ol, sw(3200, 0, 0, NS, TS_R, "swapper/0", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 4000);

	/* idle, kworker, idle before the wakeup (halted), idle after it (the last cut there) */
	ck_assert_int_eq(cap.nrun, 4);
	ck_assert_int_eq(cap.runs[1].pid, 400);
	ck_assert_int_eq(cap.runs[1].halted, 1);
	ck_assert_uint_eq(cap.runs[2].end_ns, 3000);
	ck_assert_int_eq(cap.runs[2].halted, 1);
	ck_assert_uint_eq(cap.runs[3].start_ns, 3000);
	ck_assert_int_eq(cap.runs[3].halted, 0);
	ck_assert_int_eq(cap.outs[0].state, 'D');
	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, 2200);
	ck_assert_uint_eq(st->out_d_ns, 2200);
	ck_assert_uint_eq(st->idle_ns, 1700);
	ck_assert_uint_eq(st->preempt_ns, 500);
	ck_assert_uint_eq(st->npreempt, 1);
	ck_assert_str_eq(st->preempt[0].comm, "kworker/0:1");
	ck_assert_uint_eq(st->run_delay_ns, 200);
	outlog_free(ol);
}
END_TEST

START_TEST(test_vcpu_preempted_by_vcpu)
{
	struct outlog *ol = mk();
	const struct outlog_stats *s0, *s1;

	ck_assert_int_eq(outlog_slot_add(ol, 1, VCPU2), 0);
	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", VCPU2, 1, "CPU 1/KVM"));
	push(ol, sw(2000, 0, VCPU2, 1, TS_R, "CPU 1/KVM", 200, NS, "hog"));
	push(ol, sw(3000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	push(ol, sw(4000, 0, VCPU, 0, TS_S, "CPU 0/KVM", VCPU2, 1, "CPU 1/KVM"));
	outlog_cut(ol, 4000);

	s0 = period(ol, 0);
	s1 = period(ol, 1);
	ck_assert_uint_eq(s0->out_ns, 2000);
	ck_assert_uint_eq(s0->npreempt, 2);
	ck_assert_uint_eq(s0->preempt[0].total_ns, 1000);
	ck_assert_uint_eq(s0->preempt[1].total_ns, 1000);
	ck_assert_uint_eq(s1->out_ns, 2000); /* [2000, 4000): hog then VCPU */
	ck_assert_uint_eq(s1->npreempt, 2);
	ck_assert_uint_eq(s1->preempt[0].pid + s1->preempt[1].pid, 200 + VCPU);
	outlog_free(ol);
}
END_TEST

/* ---- periods ---- */

START_TEST(test_period_split)
{
	struct outlog *ol = mk();
	const struct outlog_stats *st;
	uint64_t a, b;

	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	outlog_cut(ol, 3000);
	ck_assert_int_eq(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].start_ns, 1000);
	ck_assert_uint_eq(cap.outs[0].end_ns, 3000);
	ck_assert_int_eq(cap.outs[0].split, 1);
	ck_assert_int_eq(cap.outs[0].cont, 0);
	ck_assert_int_eq(cap.nrun, 1);
	ck_assert_uint_eq(cap.runs[0].end_ns, 3000);
	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, 2000);
	ck_assert_uint_eq(st->preempt_ns, 2000);
	outlog_period_bounds(ol, &a, &b);
	ck_assert_uint_eq(a, 1000);
	ck_assert_uint_eq(b, 3000);

	push(ol, sw(5000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 6000);
	ck_assert_int_eq(cap.nout, 2);
	ck_assert_uint_eq(cap.outs[1].start_ns, 3000);
	ck_assert_uint_eq(cap.outs[1].end_ns, 5000);
	ck_assert_int_eq(cap.outs[1].split, 0);
	ck_assert_int_eq(cap.outs[1].cont, 1);
	ck_assert_int_eq(cap.nrun, 2);
	ck_assert_uint_eq(cap.runs[1].start_ns, 3000);
	ck_assert_uint_eq(cap.runs[1].out_start_ns, 3000);
	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, 2000);
	ck_assert_uint_eq(st->run_delay_ns, 2000);
	ck_assert_uint_eq(st->preempt[0].count, 1);
	outlog_period_bounds(ol, &a, &b);
	ck_assert_uint_eq(a, 3000);
	ck_assert_uint_eq(b, 6000);
	outlog_free(ol);
}
END_TEST

START_TEST(test_period_split_after_wakeup)
{
	struct outlog *ol = mk();

	push(ol, sw(1000, 0, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/0"));
	push(ol, wake(2000, 0, VCPU, 0));
	outlog_cut(ol, 3000);
	ck_assert_uint_eq(period(ol, 0)->run_delay_ns, 1000);
	push(ol, sw(4000, 0, 0, NS, TS_R, "swapper/0", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 5000);
	ck_assert_int_eq(cap.nout, 2);
	ck_assert_uint_eq(cap.outs[1].wake_ns,
			  2000); /* before the piece: the whole piece is delay */
	ck_assert_uint_eq(cap.outs[1].run_delay_ns, 1000);
	ck_assert_uint_eq(period(ol, 0)->run_delay_ns, 1000);
	ck_assert_uint_eq(period(ol, 0)->wakeups, 0); /* counted in the period it happened */
	outlog_free(ol);
}
END_TEST

START_TEST(test_cut_below_horizon_is_raised)
{
	struct outlog *ol = mk();
	uint64_t a, b;

	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	outlog_advance(ol, 5000);
	outlog_cut(ol, 4000);
	outlog_period_bounds(ol, &a, &b);
	ck_assert_uint_eq(b, 5000);
	ck_assert_uint_eq(period(ol, 0)->out_ns, 4000);
	outlog_free(ol);
}
END_TEST

/* ---- ordering ---- */

START_TEST(test_out_of_order_across_cpus)
{
	struct outlog *ol = mk();
	struct outlog_counters c;

	/* CPU 1's switch-in arrives before CPU 0's switch-out that happened earlier */
	push(ol, sw(3000, 1, 300, NS, TS_S, "other", VCPU, 0, "CPU 0/KVM"));
	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	push(ol, sw(4000, 0, 200, NS, TS_S, "hog", 0, NS, "swapper/0"));
	outlog_advance(ol, 5000);
	ck_assert_int_eq(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].start_ns, 1000);
	ck_assert_uint_eq(cap.outs[0].end_ns, 3000);
	ck_assert_uint_eq(cap.outs[0].cpu, 0);
	ck_assert_int_eq(cap.nrun, 1);
	ck_assert_uint_eq(cap.runs[0].end_ns, 3000); /* hog ran on to 4000, but the vCPU was back */
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.missed_out, 0);
	ck_assert_uint_eq(c.late, 0);
	ck_assert_uint_eq(c.records, 3);

	/* late: a switch-out stamped 4800 arrives after the horizon passed 5000: applied at 5000 */
	push(ol, sw(4800, 1, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	push(ol, sw(6000, 1, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_advance(ol, 7000);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.late, 1);
	ck_assert_int_eq(cap.nout, 2);
	ck_assert_uint_eq(cap.outs[1].start_ns, 5000);
	ck_assert_uint_eq(cap.outs[1].end_ns, 6000);
	outlog_free(ol);
}
END_TEST

START_TEST(test_pending_beyond_horizon_waits)
{
	struct outlog *ol = mk();
	struct outlog_counters c;

	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	push(ol, sw(9000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_advance(ol, 5000);
	ck_assert_int_eq(cap.nout, 0);
	ck_assert_int_eq(outlog_slot_state(ol, 0), OUTLOG_SLOT_OUT);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.pending, 1);
	ck_assert_uint_eq(outlog_horizon(ol), 5000);
	outlog_advance(ol, 9000);
	ck_assert_int_eq(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].end_ns, 9000);
	outlog_free(ol);
}
END_TEST

START_TEST(test_many_unordered_records_sort)
{
	struct outlog *ol = mk();
	struct outlog_rec r[200];
	int i;

	/* 100 preempt/return cycles on CPU 0, pushed in reverse order */
	for (i = 0; i < 100; i++) {
		r[2 * i] =
		    sw(1000 + (uint64_t)i * 100, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog");
		r[2 * i + 1] =
		    sw(1050 + (uint64_t)i * 100, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM");
	}
	for (i = 199; i >= 0; i--)
		push(ol, r[i]);
	outlog_cut(ol, 20000);
	ck_assert_int_eq(cap.nout, 100);
	ck_assert_uint_eq(period(ol, 0)->out_ns, 5000);
	ck_assert_uint_eq(period(ol, 0)->preempt[0].count, 100);
	outlog_free(ol);
}
END_TEST

/* ---- missed switches ---- */

START_TEST(test_missed_switch_in_from_run_ns)
{
	struct outlog *ol = mk();
	struct outlog_counters c;
	const struct outlog_stats *st;

	/* CPU 1 does not report idle->task: the vCPU's switch-in at 2050 is missing */
	push(ol, sw(1000, 1, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/1"));
	push(ol, wake(2000, 1, VCPU, 0));
	push(ol, swr(5000, 1, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/1", 2950));
	push(ol, sw(6000, 0, 0, NS, TS_R, "swapper/0", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 7000);

	ck_assert_int_eq(cap.nout, 2);
	ck_assert_uint_eq(cap.outs[0].start_ns, 1000);
	ck_assert_uint_eq(cap.outs[0].end_ns, 2050);
	ck_assert_int_eq(cap.outs[0].guessed, 1);
	ck_assert_uint_eq(cap.outs[0].run_delay_ns, 50);
	ck_assert_uint_eq(cap.outs[1].start_ns, 5000);
	ck_assert_uint_eq(cap.outs[1].end_ns, 6000);
	ck_assert_int_eq(cap.outs[1].guessed, 0);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.missed_in, 1);
	ck_assert_uint_eq(c.desync, 0);
	st = period(ol, 0);
	ck_assert_uint_eq(st->inferred, 1);
	ck_assert_uint_eq(st->out_ns, 1050 + 1000);
	ck_assert_uint_eq(st->idle_ns, 1050 + 1000);
	outlog_free(ol);
}
END_TEST

START_TEST(test_missed_switch_in_from_wakeup)
{
	struct outlog *ol = mk();

	push(ol, sw(1000, 1, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/1"));
	push(ol, wake(2000, 1, VCPU, 0));
	push(ol, sw(5000, 1, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/1")); /* no run_ns */
	outlog_cut(ol, 5000);
	ck_assert_int_ge(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].end_ns, 2000);
	ck_assert_int_eq(cap.outs[0].guessed, 1);
	ck_assert_uint_eq(cap.outs[0].run_delay_ns, 0);
	outlog_free(ol);
}
END_TEST

START_TEST(test_missed_switch_in_running_record)
{
	struct outlog *ol = mk();
	struct outlog_counters c;

	push(ol, sw(1000, 1, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/1"));
	push(ol, wake(2000, 1, VCPU, 0));
	push(ol, running(3000, 1, VCPU, 0, 900));
	outlog_cut(ol, 4000);
	ck_assert_int_eq(cap.nout, 1); /* running at the cut: nothing open to split */
	ck_assert_uint_eq(cap.outs[0].end_ns, 2100);
	ck_assert_int_eq(cap.outs[0].guessed, 1);
	ck_assert_int_eq(outlog_slot_state(ol, 0), OUTLOG_SLOT_RUNNING);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.missed_in, 1);
	ck_assert_uint_eq(period(ol, 0)->out_ns, 1100);
	outlog_free(ol);
}
END_TEST

START_TEST(test_run_ns_longer_than_possible_is_clamped)
{
	struct outlog *ol = mk();

	push(ol, sw(1000, 1, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/1"));
	push(ol, swr(5000, 1, VCPU, 0, TS_S, "CPU 0/KVM", 0, NS, "swapper/1", 999999));
	outlog_cut(ol, 5000);
	ck_assert_uint_eq(cap.outs[0].start_ns, 1000);
	ck_assert_uint_eq(cap.outs[0].end_ns, 1000); /* no better evidence: back at once */
	outlog_free(ol);
}
END_TEST

START_TEST(test_desync_placed_from_run_ns)
{
	struct outlog *ol = mk();
	struct outlog_counters c;
	const struct outlog_stats *st;

	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	/* hog -> 300 was not seen; 300 switches to the vCPU after 1000 ns of its own */
	push(ol, swr(5000, 0, 300, NS, TS_R, "intruder", VCPU, 0, "CPU 0/KVM", 1000));
	outlog_cut(ol, 6000);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.desync, 1);
	ck_assert_int_eq(cap.nrun, 2);
	ck_assert_uint_eq(cap.runs[0].pid, 200);
	ck_assert_uint_eq(cap.runs[0].end_ns, 4000);
	ck_assert_uint_eq(cap.runs[1].pid, 300);
	ck_assert_uint_eq(cap.runs[1].start_ns, 4000);
	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, 4000);
	ck_assert_uint_eq(st->preempt_ns, 4000);
	outlog_free(ol);
}
END_TEST

/* ---- anomalies ---- */

START_TEST(test_anomalies_counted)
{
	struct outlog *ol = mk();
	struct outlog_counters c;
	struct outlog_rec r;

	/* bad CPU, bad type, slot beyond max_slots, unregistered slot, wrong tid for slot 0 */
	push(ol, sw(100, 9, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	r = sw(110, 0, 1, NS, TS_R, "a", 2, NS, "b");
	r.type = 77;
	push(ol, r);
	push(ol, sw(120, 0, 1, 99, TS_R, "a", 2, NS, "b"));
	push(ol, sw(130, 0, 555, 3, TS_R, "a", 2, NS, "b"));
	push(ol, sw(140, 0, 556, 0, TS_R, "a", 2, NS, "b"));
	/* first sight of the slot is a switch-in: untracked; a second switch-in: missed_out */
	push(ol, sw(200, 0, 2, NS, TS_R, "b", VCPU, 0, "CPU 0/KVM"));
	push(ol, sw(300, 1, 3, NS, TS_R, "c", VCPU, 0, "CPU 0/KVM"));
	outlog_advance(ol, 1000);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.bad, 3);
	ck_assert_uint_eq(c.stale, 2);
	ck_assert_uint_eq(c.untracked, 1);
	ck_assert_uint_eq(c.missed_out, 1);
	ck_assert_uint_eq(c.records, 5); /* the bad CPU and bad type are not applied */
	ck_assert_int_eq(cap.nout, 0);
	outlog_free(ol);
}
END_TEST

START_TEST(test_thread_exit_and_tid_reuse)
{
	struct outlog *ol = mk();
	struct outlog_counters c;

	push(ol, sw(1000, 0, VCPU, 0, TS_DEAD, "CPU 0/KVM", 0, NS, "swapper/0"));
	push(ol, sw(2000, 0, 0, NS, TS_R, "swapper/0", VCPU, 0, "reused"));
	outlog_advance(ol, 3000);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.exited, 1);
	ck_assert_uint_eq(c.stale, 1);
	ck_assert_int_eq(cap.nout, 0);
	ck_assert_int_eq(outlog_slot_state(ol, 0), OUTLOG_SLOT_GONE);
	ck_assert_int_eq(outlog_slot_add(ol, 0, 777), -EBUSY);

	ck_assert_int_eq(outlog_slot_del(ol, 0), 0);
	ck_assert_int_eq(outlog_slot_add(ol, 0, 777), 0);
	push(ol, sw(4000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog")); /* old tid: stale */
	push(ol, sw(5000, 0, 777, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	push(ol, sw(6000, 0, 200, NS, TS_R, "hog", 777, 0, "CPU 0/KVM"));
	outlog_cut(ol, 7000);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.stale, 2);
	ck_assert_int_eq(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].tid, 777);
	ck_assert_uint_eq(period(ol, 0)->out_ns, 1000);
	outlog_free(ol);
}
END_TEST

START_TEST(test_slot_removed_while_out)
{
	struct outlog *ol = mk();
	struct outlog_counters c;

	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	outlog_advance(ol, 3000);
	ck_assert_int_eq(outlog_slot_del(ol, 0), 0);
	ck_assert_int_eq(cap.nout, 1);
	ck_assert_uint_eq(cap.outs[0].end_ns, 3000);
	ck_assert_int_eq(cap.outs[0].removed, 1);
	ck_assert_int_eq(cap.nrun, 1);
	ck_assert_uint_eq(cap.runs[0].end_ns, 3000);
	ck_assert_int_eq(outlog_slot_state(ol, 0), OUTLOG_SLOT_FREE);
	ck_assert_ptr_null(outlog_period_stats(ol, 0));
	ck_assert_int_eq(outlog_slot_del(ol, 0), -EINVAL);
	/* its later records are stale; the CPU keeps working for others */
	push(ol, sw(4000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_advance(ol, 5000);
	outlog_counters(ol, &c);
	ck_assert_uint_eq(c.stale, 1);
	ck_assert_int_eq(cap.nout, 1);
	outlog_free(ol);
}
END_TEST

START_TEST(test_bad_arguments)
{
	struct outlog *ol;

	ck_assert_ptr_null(outlog_new(0, 4));
	ck_assert_ptr_null(outlog_new(8, 0));
	ck_assert_ptr_null(outlog_new(OUTLOG_MAX_SLOTS + 1, 4));
	ol = mk();
	ck_assert_int_eq(outlog_slot_add(ol, 8, 5), -EINVAL);
	ck_assert_int_eq(outlog_slot_add(ol, 1, 0), -EINVAL);
	ck_assert_int_eq(outlog_slot_add(ol, 0, 5), -EBUSY);
	ck_assert_ptr_null(outlog_period_stats(ol, 8));
	ck_assert_ptr_null(outlog_current_stats(ol, 3));
	ck_assert_ptr_nonnull(outlog_current_stats(ol, 0));
	ck_assert_int_eq(outlog_slot_state(ol, 100), OUTLOG_SLOT_FREE);
	outlog_free(ol);
	outlog_free(NULL);
}
END_TEST

START_TEST(test_state_chars)
{
	ck_assert_int_eq(outlog_state_char(0x0, 0), 'R');
	ck_assert_int_eq(outlog_state_char(0x1, 0), 'S');
	ck_assert_int_eq(outlog_state_char(0x2, 0), 'D');
	ck_assert_int_eq(outlog_state_char(0x402, 0), 'D'); /* TASK_IDLE */
	ck_assert_int_eq(outlog_state_char(0x102, 0), 'D'); /* TASK_KILLABLE */
	ck_assert_int_eq(outlog_state_char(0x104, 0), 'T');
	ck_assert_int_eq(outlog_state_char(0x8, 0), 't');
	ck_assert_int_eq(outlog_state_char(0x40, 0), 'P');
	ck_assert_int_eq(outlog_state_char(0x80, 0), 'X');
	ck_assert_int_eq(outlog_state_char(0x20, 0), 'X');
	ck_assert_int_eq(outlog_state_char(0x1000, 0), 'D');
	ck_assert_int_eq(outlog_state_char(0x200, 0), '?');
	ck_assert_int_eq(outlog_state_char(0x1, 1), 'R');
}
END_TEST

/* ---- preemptor table ---- */

START_TEST(test_preemptor_table_overflow)
{
	struct outlog *ol = mk();
	const struct outlog_stats *st;
	uint64_t t = 1000, folded_sum = 0, all = 0;
	uint32_t i, prev = VCPU;
	int32_t pslot = 0;
	char comm[16];

	/* 100 preemptors in one interval, task i running 10 * (i + 1) ns: the 36 smallest get folded */
	for (i = 0; i < 100; i++) {
		snprintf(comm, sizeof(comm), "t%u", i);
		push(ol, sw(t, 0, prev, pslot, TS_R, prev == VCPU ? "CPU 0/KVM" : "x", 1000 + i, NS,
			    comm));
		t += 10 * (i + 1);
		all += 10 * (i + 1);
		if (i < 100 - OUTLOG_TOP)
			folded_sum += 10 * (i + 1);
		prev = 1000 + i;
		pslot = NS;
	}
	push(ol, sw(t, 0, prev, NS, TS_R, "x", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, t + 1);

	st = period(ol, 0);
	ck_assert_uint_eq(st->out_ns, all);
	ck_assert_uint_eq(st->npreempt, OUTLOG_TOP);
	ck_assert_uint_eq(st->folded, 100 - OUTLOG_TOP);
	ck_assert_uint_eq(st->other.total_ns, folded_sum);
	ck_assert_uint_eq(st->other.count, 100 - OUTLOG_TOP);
	ck_assert_str_eq(st->other.comm, "other");
	ck_assert_uint_eq(st->preempt[0].pid, 1099); /* the largest first */
	ck_assert_uint_eq(st->preempt[0].total_ns, 1000);
	ck_assert_uint_eq(st->preempt[OUTLOG_TOP - 1].pid, 1000 + 100 - OUTLOG_TOP);
	outlog_free(ol);
}
END_TEST

START_TEST(test_stats_reset_per_period)
{
	struct outlog *ol = mk();

	push(ol, sw(1000, 0, VCPU, 0, TS_R, "CPU 0/KVM", 200, NS, "hog"));
	push(ol, sw(2000, 0, 200, NS, TS_R, "hog", VCPU, 0, "CPU 0/KVM"));
	outlog_cut(ol, 3000);
	ck_assert_uint_eq(period(ol, 0)->out_ns, 1000);
	ck_assert_uint_eq(outlog_current_stats(ol, 0)->out_ns, 0);
	outlog_cut(ol, 4000);
	ck_assert_uint_eq(period(ol, 0)->out_ns, 0);
	ck_assert_uint_eq(period(ol, 0)->npreempt, 0);
	outlog_free(ol);
}
END_TEST

static Suite *outlog_suite(void)
{
	Suite *s = suite_create("outlog");
	TCase *tc;

	tc = tcase_create("intervals");
	tcase_add_test(tc, test_preempted_by_hog);
	tcase_add_test(tc, test_open_since);
	tcase_add_test(tc, test_blocked_woken_run_delay);
	tcase_add_test(tc, test_blocked_without_wakeup_has_no_delay);
	tcase_add_test(tc, test_preempt_flag_means_runnable);
	tcase_add_test(tc, test_two_preemptors);
	tcase_add_test(tc, test_idle_and_worker_during_blocked);
	tcase_add_test(tc, test_vcpu_preempted_by_vcpu);
	suite_add_tcase(s, tc);

	tc = tcase_create("periods");
	tcase_add_test(tc, test_period_split);
	tcase_add_test(tc, test_period_split_after_wakeup);
	tcase_add_test(tc, test_cut_below_horizon_is_raised);
	tcase_add_test(tc, test_stats_reset_per_period);
	suite_add_tcase(s, tc);

	tc = tcase_create("ordering");
	tcase_add_test(tc, test_out_of_order_across_cpus);
	tcase_add_test(tc, test_pending_beyond_horizon_waits);
	tcase_add_test(tc, test_many_unordered_records_sort);
	suite_add_tcase(s, tc);

	tc = tcase_create("missed");
	tcase_add_test(tc, test_missed_switch_in_from_run_ns);
	tcase_add_test(tc, test_missed_switch_in_from_wakeup);
	tcase_add_test(tc, test_missed_switch_in_running_record);
	tcase_add_test(tc, test_run_ns_longer_than_possible_is_clamped);
	tcase_add_test(tc, test_desync_placed_from_run_ns);
	suite_add_tcase(s, tc);

	tc = tcase_create("anomalies");
	tcase_add_test(tc, test_anomalies_counted);
	tcase_add_test(tc, test_thread_exit_and_tid_reuse);
	tcase_add_test(tc, test_slot_removed_while_out);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_state_chars);
	suite_add_tcase(s, tc);

	tc = tcase_create("preemptors");
	tcase_add_test(tc, test_preemptor_table_overflow);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(outlog_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
