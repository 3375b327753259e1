/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/dtlpub: synthetic dispatch-log streams (runs, then their piece) published into a
 * host area in memory and read back with the guest's reader (shared/channel/dtlreader) and from the raw
 * area. Topics: sub-span cutting (runs, idle runs and gaps, merging of one cause, flags CONT and GUESSED,
 * kinds), host -> guest time through the clock model, class mapping through taskclass (a fake /proc), detail
 * class writes no name or pid anywhere, no mapping or one whose bound is above 1 ms -> dropped (counted,
 * nothing published, no clock flag), the status
 * (clock flags, horizon converted and never going back), aggregates (top exit reasons, other, IRQs), and the
 * bounded run buffer (folded, never turned into idle time).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dtl.h"
#include "host.h"
#include "channel/dtlreader.h"
#include "channel/dtlreader_priv.h"
#include "match/dtlpub.h"

#define US 1000ULL
#define MS 1000000ULL
#define S 1000000000ULL
#define OFF 500000000000ULL /* guest = host + OFF */
#define T0 (1000 * S) /* host time of the first records */
#define AREA (1u << 20)
#define MAXE 4096

static void *area;
static struct clocksync cs;
static struct taskclass *tc;
static char root[256];
static struct vn_dtl_entry got[MAXE];
static uint32_t ngot;

static uint64_t reader_now(void *ctx)
{
	(void)ctx;
	return 100000 * S; /* later than every guest time of these tests */
}

static void fake(uint32_t pid, const char *comm, uint32_t ppid, uint32_t flags, uint32_t tgid)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%u (%s) S %u %u %u 0 -1 %u 0 0\n", pid, comm, ppid, pid, pid, flags);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%u/status", root, pid);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "Name:\t%s\nTgid:\t%u\n", comm, tgid);
	fclose(f);
}

/* A model with guest = host + OFF exactly (one symmetric exchange). */
static void sync_clock(void)
{
	ck_assert_int_eq(clocksync_update(&cs, T0 - S, T0 - S + 500 + OFF, T0 - S + 1000),
			 CLOCKSYNC_USED);
}

static void setup(void)
{
	static const uint32_t t0[] = { 310, 311 }, t1[] = { 410 };

	ck_assert_int_eq(posix_memalign(&area, 64, AREA), 0);
	memset(area, 0xa5, AREA);
	ck_assert_int_eq(clocksync_init(&cs, NULL), 0);
	snprintf(root, sizeof(root), "/tmp/vnoise-dtlpub-%d", (int)getpid());
	mkdir(root, 0755);
	fake(100, "kworker/0:1", 2, 0x04208060, 100);
	fake(200, "hog", 1, 0x00400100, 200);
	fake(201, "secret", 1, 0x00400100, 201);
	fake(301, "IO iothread1", 1, 0x00400040, 300);
	tc = taskclass_new(root);
	ck_assert_ptr_nonnull(tc);
	ck_assert_int_eq(taskclass_set_domain(tc, 0, 300, t0, 2), 0);
	ck_assert_int_eq(taskclass_set_domain(tc, 1, 400, t1, 1), 0);
	ngot = 0;
}

static void teardown(void)
{
	char cmd[400];

	taskclass_free(tc);
	free(area);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

static struct dtlpub *pub_new(uint32_t detail)
{
	struct dtlpub_params p = { .dom = 0, .nvcpus = 2, .detail = detail, .period_ns = S };
	char why[128];
	struct dtlpub *d = dtlpub_new(area, AREA, &p, dtlpub_new_epoch(), tc, why, sizeof(why));

	ck_assert_msg(d != NULL, "dtlpub_new: %s", why);
	return d;
}

static struct dtl_reader *reader(void)
{
	struct dtl_reader *r = dtlreader_new(area, AREA);

	ck_assert_ptr_nonnull(r);
	dtlreader_set_clock(r, reader_now, NULL);
	ck_assert_int_eq(dtlreader_sync(r), 1);
	return r;
}

static void on_entry(void *ctx, uint32_t vcpu, const struct vn_dtl_entry *e)
{
	(void)ctx;
	(void)vcpu;
	if (ngot < MAXE)
		got[ngot++] = *e;
}

static uint32_t poll_all(struct dtl_reader *r, uint32_t vcpu)
{
	ngot = 0;
	while (dtlreader_poll(r, vcpu, on_entry, NULL, 1024) > 0)
		;
	return ngot;
}

static void check_entry(uint32_t i, uint64_t start, uint64_t end, uint32_t kind, uint32_t cls,
			uint32_t flags)
{
	ck_assert_uint_lt(i, ngot);
	ck_assert_msg(got[i].start_ns == start + OFF && got[i].end_ns == end + OFF,
		      "entry %u: [%llu, %llu) want [%llu, %llu)", i,
		      (unsigned long long)(got[i].start_ns - OFF),
		      (unsigned long long)(got[i].end_ns - OFF), (unsigned long long)start,
		      (unsigned long long)end);
	ck_assert_uint_eq(got[i].kind, kind);
	ck_assert_uint_eq(got[i].cls, cls);
	ck_assert_uint_eq(got[i].flags, flags);
	if (cls == VN_DTL_CLASS_IDLE)
		ck_assert_uint_eq(got[i].cause, 0);
	else
		ck_assert_uint_ne(got[i].cause, 0);
}

/* The raw producer counters of vcpu (the reader does not show dropped). */
static const struct vn_dtl_ring *raw_ring(uint32_t vcpu)
{
	const struct vn_dtl_header *h = area;

	return (const struct vn_dtl_ring *)((const char *)area + h->ring_ctl_offset) + vcpu;
}

START_TEST(test_cut_by_runs)
{
	struct dtlpub *d = pub_new(VN_DTL_DETAIL_TASK);
	struct dtl_reader *r = reader();
	struct vn_dtl_cause c;

	sync_clock();
	/* piece [T0, T0+400us) preempted: gap, hog (two contiguous runs), idle run, kworker, gap */
	dtlpub_run(d, 0, T0 + 100 * US, T0 + 150 * US, 200, "hog", 0);
	dtlpub_run(d, 0, T0 + 150 * US, T0 + 200 * US, 200, "hog", 0);
	dtlpub_run(d, 0, T0 + 200 * US, T0 + 250 * US, 0, "swapper/1", 1);
	dtlpub_run(d, 0, T0 + 250 * US, T0 + 300 * US, 100, "kworker/0:1", 0);
	dtlpub_out(d, 0, T0, T0 + 400 * US, 'R', 0, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 5);
	check_entry(0, T0, T0 + 100 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_IDLE, 0);
	check_entry(1, T0 + 100 * US, T0 + 200 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_HOST_USER,
		    VN_DTL_F_CONT);
	check_entry(2, T0 + 200 * US, T0 + 250 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_IDLE,
		    VN_DTL_F_CONT);
	check_entry(3, T0 + 250 * US, T0 + 300 * US, VN_DTL_KIND_PREEMPTED,
		    VN_DTL_CLASS_HOST_KTHREAD, VN_DTL_F_CONT);
	check_entry(4, T0 + 300 * US, T0 + 400 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_IDLE,
		    VN_DTL_F_CONT);
	/* detail task: the cause names the task */
	ck_assert_int_eq(dtlreader_cause(r, got[1].cause, &c), 0);
	ck_assert_str_eq(c.comm, "hog");
	ck_assert_uint_eq(c.pid, 200);
	ck_assert_uint_eq(c.cls, VN_DTL_CLASS_HOST_USER);
	/* a piece covered by one run: one entry; a blocked piece woken as it began (runnable all along: not
	 * halted); the other vCPU's ring */
	dtlpub_run(d, 1, T0 + 500 * US, T0 + 600 * US, 301, "IO iothread1", 0);
	dtlpub_out(d, 1, T0 + 500 * US, T0 + 600 * US, 'S', T0 + 500 * US, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 1), 1);
	check_entry(0, T0 + 500 * US, T0 + 600 * US, VN_DTL_KIND_BLOCKED, VN_DTL_CLASS_QEMU, 0);
	/* runs outside their piece are clipped to it; a blocked piece without a wakeup was halted */
	dtlpub_run(d, 0, T0 + 900 * US, T0 + 1100 * US, 410, "CPU 0/KVM", 0);
	dtlpub_out(d, 0, T0 + 1000 * US, T0 + 1050 * US, 'D', 0, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 1);
	check_entry(0, T0 + 1000 * US, T0 + 1050 * US, VN_DTL_KIND_BLOCKED, VN_DTL_CLASS_OTHER_VCPU,
		    VN_DTL_F_HALTED);
	/* a blocked piece is cut at its wakeup: the task's run before it is HALTED, after it not */
	dtlpub_run(d, 0, T0 + 2000 * US, T0 + 2100 * US, 200, "hog", 0);
	dtlpub_out(d, 0, T0 + 2000 * US, T0 + 2100 * US, 'S', T0 + 2030 * US, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 2);
	check_entry(0, T0 + 2000 * US, T0 + 2030 * US, VN_DTL_KIND_BLOCKED, VN_DTL_CLASS_HOST_USER,
		    VN_DTL_F_HALTED);
	check_entry(1, T0 + 2030 * US, T0 + 2100 * US, VN_DTL_KIND_BLOCKED, VN_DTL_CLASS_HOST_USER,
		    VN_DTL_F_CONT);
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

/* An interval cut at period ends: its pieces are joined by CONT; an inferred end is GUESSED. */
START_TEST(test_flags)
{
	struct dtlpub *d = pub_new(VN_DTL_DETAIL_CLASS);
	struct dtl_reader *r = reader();

	sync_clock();
	/* a CONT piece without the SPLIT one before it (e.g. the first after the epoch): no CONT */
	dtlpub_out(d, 0, T0, T0 + 10 * US, 'R', 0, VN_HOST_OUT_F_CONT, &cs);
	dtlpub_run(d, 0, T0 + 20 * US, T0 + 40 * US, 200, "hog", 0);
	dtlpub_out(d, 0, T0 + 20 * US, T0 + 50 * US, 'R', 0, VN_HOST_OUT_F_SPLIT, &cs);
	dtlpub_out(d, 0, T0 + 50 * US, T0 + 60 * US, 'R', 0,
		   VN_HOST_OUT_F_CONT | VN_HOST_OUT_F_GUESSED, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 4);
	check_entry(0, T0, T0 + 10 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_IDLE, 0);
	check_entry(1, T0 + 20 * US, T0 + 40 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_HOST_USER,
		    0);
	check_entry(2, T0 + 40 * US, T0 + 50 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_IDLE,
		    VN_DTL_F_CONT);
	check_entry(3, T0 + 50 * US, T0 + 60 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_IDLE,
		    VN_DTL_F_CONT | VN_DTL_F_GUESSED);
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

/* Detail class: the class of each cause, never a comm or a pid, anywhere in the area. */
START_TEST(test_detail_class_no_names)
{
	struct dtlpub *d;
	struct dtl_reader *r;
	struct vn_dtl_cause c;

	memset(area, 0, AREA);
	d = pub_new(VN_DTL_DETAIL_CLASS);
	r = reader();
	sync_clock();
	dtlpub_run(d, 0, T0, T0 + 10 * US, 201, "secret", 0);
	dtlpub_run(d, 0, T0 + 10 * US, T0 + 20 * US, 200, "hog", 0);
	dtlpub_run(d, 0, T0 + 20 * US, T0 + 30 * US, 410, "CPU 0/KVM", 0);
	dtlpub_out(d, 0, T0, T0 + 30 * US, 'R', 0, 0, &cs);
	/* two host-user tasks, one cause: one entry */
	ck_assert_uint_eq(poll_all(r, 0), 2);
	check_entry(0, T0, T0 + 20 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_HOST_USER, 0);
	check_entry(1, T0 + 20 * US, T0 + 30 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_OTHER_VCPU,
		    VN_DTL_F_CONT);
	ck_assert_int_eq(dtlreader_cause(r, got[0].cause, &c), 0);
	ck_assert_uint_eq(c.cls, VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(c.pid, 0);
	ck_assert_uint_eq(c.comm[0], 0);
	ck_assert_ptr_null(memmem(area, AREA, "secret", 6));
	ck_assert_ptr_null(memmem(area, AREA, "hog", 3));
	ck_assert_ptr_null(memmem(area, AREA, "KVM", 3));
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

/* No clock mapping: pieces are counted as dropped, nothing is published, the status says no clock. */
START_TEST(test_no_mapping_dropped)
{
	struct dtlpub *d = pub_new(VN_DTL_DETAIL_TASK);
	struct dtl_reader *r = reader();
	struct vn_dtl_status st;
	struct dtlpub_stats ps;

	dtlpub_run(d, 0, T0, T0 + 10 * US, 200, "hog", 0);
	dtlpub_out(d, 0, T0, T0 + 30 * US, 'R', 0, 0, &cs);
	dtlpub_out(d, 1, T0, T0 + 30 * US, 'S', 0, 0, &cs);
	dtlpub_out(d, 1, T0 + 30 * US, T0 + 30 * US, 'S', 0, 0, &cs); /* empty: not an interval */
	ck_assert_uint_eq(poll_all(r, 0), 0);
	ck_assert_uint_eq(poll_all(r, 1), 0);
	ck_assert_uint_eq(raw_ring(0)->dropped, 1);
	ck_assert_uint_eq(raw_ring(1)->dropped, 1);
	ck_assert_uint_eq(raw_ring(0)->head, 0);
	dtlpub_stats(d, &ps);
	ck_assert_uint_eq(ps.pieces, 3);
	ck_assert_uint_eq(ps.unsynced, 2);
	ck_assert_uint_eq(ps.w.entries, 0);
	dtlpub_status(d, T0 + S, T0 + S, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags & VN_DTL_S_CLOCK, 0);
	ck_assert_uint_eq(st.horizon_ns, 0);
	ck_assert_uint_eq(st.uncertainty_ns, UINT64_MAX);
	/* the runs of a dropped piece do not leak into the next one */
	sync_clock();
	dtlpub_out(d, 0, T0 + 40 * US, T0 + 50 * US, 'R', 0, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 1);
	check_entry(0, T0 + 40 * US, T0 + 50 * US, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_IDLE, 0);
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

START_TEST(test_status_horizon)
{
	struct dtlpub *d = pub_new(VN_DTL_DETAIL_CLASS);
	struct dtl_reader *r = reader();
	struct vn_dtl_status st;

	sync_clock();
	dtlpub_status(d, T0 + 2 * S, T0 + S, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags & VN_DTL_S_CLOCK, VN_DTL_S_CLOCK);
	ck_assert_uint_eq(st.horizon_ns, T0 + S + OFF);
	ck_assert_uint_eq(st.heartbeat_ns, T0 + 2 * S + OFF);
	ck_assert_uint_eq(st.anchor_host_ns, T0 + 2 * S);
	ck_assert_int_eq(st.offset_ns, (int64_t)OFF);
	ck_assert_int_eq(st.drift_ppb, 0);
	ck_assert_uint_lt(st.uncertainty_ns, S); /* one exchange: the drift prior dominates */
	/* a horizon going back is kept at the last one */
	dtlpub_status(d, T0 + 3 * S, T0 + S / 2, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.horizon_ns, T0 + S + OFF);
	ck_assert_uint_eq(st.heartbeat_ns, T0 + 3 * S + OFF);
	dtlpub_status(d, T0 + 4 * S, T0 + 3 * S, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.horizon_ns, T0 + 3 * S + OFF);
	/* no dispatch log (horizon 0): nothing claimed, the horizon stays */
	dtlpub_status(d, T0 + 5 * S, 0, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.horizon_ns, T0 + 3 * S + OFF);
	/* long without an exchange: stale */
	dtlpub_status(d, T0 + 60 * S, T0 + 59 * S, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags, VN_DTL_S_CLOCK | VN_DTL_S_STALE);
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

/*
 * The first answers of a responder still finding the request grid miss the host's
 * short watch and are picked up a 50 ms round later: the guest stamped 2 ms after the send, the host saw
 * the answer 50 ms after it, so the model is 23 ms off (within its 25 ms bound). Nothing is published with
 * it (no flag, no horizon, pieces dropped); once one prompt exchange brings the bound within 1 ms, the
 * status says so and pieces land at their true guest time.
 */
START_TEST(test_uncertain_model_not_published)
{
	struct dtlpub *d = pub_new(VN_DTL_DETAIL_CLASS);
	struct dtl_reader *r = reader();
	struct vn_dtl_status st;
	struct dtlpub_stats ps;
	uint64_t t;

	for (t = T0 - S; t < T0 - S + 4 * 100 * MS; t += 100 * MS)
		ck_assert_int_lt(clocksync_update(&cs, t, t + 2 * MS + OFF, t + 50 * MS),
				 CLOCKSYNC_PENDING);
	dtlpub_run(d, 0, T0, T0 + 8 * MS, 200, "hog", 0);
	dtlpub_out(d, 0, T0, T0 + 8 * MS, 'R', 0, 0, &cs);
	dtlpub_period(d, T0 - S, T0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 0);
	ck_assert_uint_eq(raw_ring(0)->dropped, 1);
	dtlpub_stats(d, &ps);
	ck_assert_uint_eq(ps.unsynced, 1);
	ck_assert_uint_eq(ps.aligned_ns, 0);
	dtlpub_status(d, T0 + 10 * MS, T0 + 10 * MS, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags, 0); /* the guest says "waiting" */
	ck_assert_uint_eq(st.horizon_ns, 0);
	ck_assert_uint_gt(st.heartbeat_ns, 0); /* alive: not "stale" */
	ck_assert_uint_gt(st.uncertainty_ns, 20 * MS); /* the bound is honest: ~25 ms */
	/* one prompt exchange (rtt 40 us) */
	t = T0 + 20 * MS;
	ck_assert_int_eq(clocksync_update(&cs, t, t + 20 * US + OFF, t + 40 * US), CLOCKSYNC_USED);
	dtlpub_status(d, T0 + 30 * MS, T0 + 25 * MS, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags, VN_DTL_S_CLOCK);
	ck_assert_uint_le(st.uncertainty_ns, DTLPUB_MAX_UNCERTAINTY_NS);
	ck_assert_uint_gt(st.horizon_ns + MS, T0 + 25 * MS + OFF);
	ck_assert_uint_lt(st.horizon_ns, T0 + 25 * MS + OFF + MS);
	dtlpub_stats(d, &ps);
	ck_assert_uint_eq(ps.aligned_ns, T0 + 30 * MS);
	dtlpub_run(d, 0, T0 + 40 * MS, T0 + 48 * MS, 200, "hog", 0);
	dtlpub_out(d, 0, T0 + 40 * MS, T0 + 48 * MS, 'R', 0, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 1);
	ck_assert_uint_gt(got[0].start_ns + MS, T0 + 40 * MS + OFF);
	ck_assert_uint_lt(got[0].start_ns, T0 + 40 * MS + OFF + MS);
	ck_assert_uint_eq(got[0].cls, VN_DTL_CLASS_HOST_USER);
	/* a minute without an exchange: the bound grows past 1 ms, entries stop, the status says stale */
	dtlpub_out(d, 0, T0 + 60 * S, T0 + 60 * S + MS, 'R', 0, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 0);
	dtlpub_status(d, T0 + 60 * S, T0 + 60 * S, &cs);
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags, VN_DTL_S_CLOCK | VN_DTL_S_STALE);
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

START_TEST(test_aggregates)
{
	struct dtlpub *d = pub_new(VN_DTL_DETAIL_CLASS);
	struct dtl_reader *r = reader();
	struct vn_dtl_agg a;
	struct dtlpub_stats ps;
	uint64_t sum = 0;
	uint32_t k;

	sync_clock();
	for (k = 1; k <= 10; k++) /* reason k: k exits of k us each */
		dtlpub_agg(d, 0, VN_HOST_AGG_EXIT, 1, k, k, k * k * US);
	dtlpub_agg(d, 0, VN_HOST_AGG_EXIT, 1, 10, 1, 50 * US); /* the same reason again */
	dtlpub_agg(d, 0, VN_HOST_AGG_IRQ, 0, 24, 3, 30 * US);
	dtlpub_agg(d, 0, VN_HOST_AGG_SOFTIRQ, 0, 1, 2, 20 * US);
	dtlpub_agg(d, 0, VN_HOST_AGG_VECTOR, 0, 2, 1, 5 * US);
	dtlpub_period(d, T0, T0 + S, &cs);
	ck_assert_int_eq(dtlreader_agg(r, 0, UINT64_MAX, &a), 0);
	ck_assert_uint_eq(a.period, 1);
	ck_assert_uint_eq(a.start_ns, T0 + OFF);
	ck_assert_uint_eq(a.end_ns, T0 + S + OFF);
	ck_assert_uint_eq(a.isa, 1);
	ck_assert_uint_eq(a.nexit, VN_DTL_AGG_TOP);
	ck_assert_uint_eq(a.exit[0].reason, 10);
	ck_assert_uint_eq(a.exit[0].count, 11);
	ck_assert_uint_eq(a.exit[0].total_ns, 150 * US);
	ck_assert_uint_eq(a.exit[1].reason, 9);
	ck_assert_uint_eq(a.exit[7].reason, 3);
	ck_assert_uint_eq(a.exit_count, 56);
	for (k = 0; k < a.nexit; k++)
		sum += a.exit[k].total_ns;
	ck_assert_uint_eq(a.other_exit_ns, 5 * US); /* reasons 1 and 2 */
	ck_assert_uint_eq(a.exit_ns, sum + a.other_exit_ns);
	ck_assert_uint_eq(a.irq_count, 6);
	ck_assert_uint_eq(a.irq_ns, 55 * US);
	/* vCPU 1 had nothing: no aggregate; the sums start again */
	ck_assert_int_eq(dtlreader_agg(r, 1, UINT64_MAX, &a), -ENODATA);
	dtlpub_agg(d, 1, VN_HOST_AGG_IRQ, 0, 24, 1, 2 * US);
	dtlpub_period(d, T0 + S, T0 + 2 * S, &cs);
	ck_assert_int_eq(dtlreader_agg(r, 1, UINT64_MAX, &a), 0);
	ck_assert_uint_eq(a.irq_ns, 2 * US);
	ck_assert_uint_eq(a.exit_count, 0);
	ck_assert_int_eq(dtlreader_agg(r, 0, UINT64_MAX, &a), 0);
	ck_assert_uint_eq(a.period, 1); /* vCPU 0: nothing new */
	/* sums longer than the period (a partial one) are scaled into it */
	dtlpub_agg(d, 0, VN_HOST_AGG_EXIT, 2, 7, 5, 3 * S);
	dtlpub_agg(d, 0, VN_HOST_AGG_IRQ, 0, 24, 5, 3 * S);
	dtlpub_period(d, T0 + 2 * S, T0 + 3 * S, &cs);
	ck_assert_int_eq(dtlreader_agg(r, 0, UINT64_MAX, &a), 0);
	ck_assert_uint_le(a.exit_ns, S);
	ck_assert_uint_le(a.irq_ns, S);
	ck_assert_uint_eq(a.isa, 2);
	dtlpub_stats(d, &ps);
	ck_assert_uint_eq(ps.aggs, 3);
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

/* More runs than the buffer holds: folded, the time stays with tasks (never idle), entries bounded. */
START_TEST(test_run_buffer_bounded)
{
	struct dtlpub *d = pub_new(VN_DTL_DETAIL_TASK);
	struct dtl_reader *r = reader();
	struct dtlpub_stats ps;
	uint64_t busy = 0;
	uint32_t i, n;

	sync_clock();
	for (i = 0; i < 10 * DTLPUB_RUNS; i++) /* alternating tasks, 1 us each, back to back */
		dtlpub_run(d, 0, T0 + i * US, T0 + (i + 1) * US, i % 3 == 0 ? 100 : 200,
			   i % 3 == 0 ? "kworker/0:1" : "hog", 0);
	dtlpub_out(d, 0, T0, T0 + 10 * DTLPUB_RUNS * US, 'R', 0, 0, &cs);
	n = poll_all(r, 0);
	ck_assert_uint_le(n, DTLPUB_RUNS);
	for (i = 0; i < n; i++) {
		ck_assert_uint_ne(got[i].cls, VN_DTL_CLASS_IDLE);
		busy += got[i].end_ns - got[i].start_ns;
		if (i)
			ck_assert_uint_eq(got[i].start_ns, got[i - 1].end_ns);
	}
	ck_assert_uint_eq(busy, 10 * DTLPUB_RUNS * US);
	dtlpub_stats(d, &ps);
	ck_assert_uint_gt(ps.runs_merged, 0);
	/* bad input: a vCPU out of range, empty runs */
	dtlpub_run(d, 7, T0, T0 + US, 200, "hog", 0);
	dtlpub_out(d, 7, T0, T0 + US, 'R', 0, 0, &cs);
	dtlpub_agg(d, 7, VN_HOST_AGG_IRQ, 0, 1, 1, 1);
	dtlpub_run(d, 0, T0 + 5 * S, T0 + 5 * S, 200, "hog", 0);
	dtlpub_out(d, 0, T0 + 5 * S, T0 + 5 * S + US, 'R', 0, 0, &cs);
	ck_assert_uint_eq(poll_all(r, 0), 1);
	ck_assert_uint_eq(got[0].cls, VN_DTL_CLASS_IDLE);
	dtlreader_free(r);
	dtlpub_free(d);
}
END_TEST

START_TEST(test_new_fails)
{
	struct dtlpub_params p = { .dom = 0, .nvcpus = 2, .detail = VN_DTL_DETAIL_CLASS };
	char why[128] = "";

	ck_assert_ptr_null(dtlpub_new(area, 256, &p, 1, tc, why, sizeof(why)));
	ck_assert_uint_gt(strlen(why), 0);
	ck_assert_uint_gt(dtlpub_new_epoch(), 0);
	ck_assert_uint_lt(dtlpub_new_epoch(), dtlpub_new_epoch());
	dtlpub_free(NULL);
}
END_TEST

static Suite *dtlpub_suite(void)
{
	Suite *s = suite_create("dtlpub");
	TCase *tc_ = tcase_create("publish");

	tcase_add_checked_fixture(tc_, setup, teardown);
	tcase_add_test(tc_, test_cut_by_runs);
	tcase_add_test(tc_, test_flags);
	tcase_add_test(tc_, test_detail_class_no_names);
	tcase_add_test(tc_, test_no_mapping_dropped);
	tcase_add_test(tc_, test_status_horizon);
	tcase_add_test(tc_, test_uncertain_model_not_published);
	tcase_add_test(tc_, test_aggregates);
	tcase_add_test(tc_, test_run_buffer_bounded);
	tcase_add_test(tc_, test_new_fails);
	suite_add_tcase(s, tc_);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dtlpub_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
