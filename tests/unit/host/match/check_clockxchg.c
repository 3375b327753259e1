/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/clockxchg, through the channel that owns it (host/match/guestchan) over a real
 * region file in /dev/shm: the clock exchange through the DTL mailbox (a test thread answers as a guest
 * responder does, with its clock OFF ahead of the host's), with and without --guest; the published status
 * then carries the mapping, and a run and its piece fed to the channel come out in guest time; no
 * responder: exchanges are abandoned, pieces are dropped and the host stops spinning.
 */
#include <check.h>
#include "check_main.h"
#include "guestchan_check.h"

static struct vn_dtl_entry last;
static int nlast;

static void on_entry(void *ctx, uint32_t vcpu, const struct vn_dtl_entry *e)
{
	(void)ctx;
	(void)vcpu;
	last = *e;
	nlast++;
}

static void clock_through_mailbox(bool match)
{
	struct guestchan *gc = chan(match);
	struct dtlctl_info info;
	struct dtl_reader *r;
	struct vn_dtl_status st;
	struct vn_dtl_cause c;
	pthread_t th;
	uint64_t t;
	int64_t err;

	ck_assert_int_eq(pthread_create(&th, NULL, responder, NULL), 0);
	run_rounds(gc, 1500 * MS);
	ck_assert_int_ge(atomic_load(&answers), 10);
	r = guest_reader();
	ck_assert_int_eq(dtlreader_status(r, &st), 0);
	ck_assert_uint_eq(st.flags & VN_DTL_S_CLOCK, VN_DTL_S_CLOCK);
	err = st.offset_ns - (int64_t)OFF;
	ck_assert_msg(err < (int64_t)MS && err > -(int64_t)MS, "offset off by %lld ns",
		      (long long)err);
	ck_assert_uint_gt(st.horizon_ns, OFF);
	/* a run and its piece, fed as the dispatch log does: published in guest time */
	t = mono();
	guestchan_host_run(gc, 0, t - 300 * US, t - 200 * US, 4242, "hog", 0);
	guestchan_host_out(gc, 0, t - 400 * US, t - 200 * US, 'R', 0, 0);
	nlast = 0;
	while (dtlreader_poll(r, 0, on_entry, NULL, 64) > 0)
		;
	ck_assert_int_eq(nlast, 2);
	ck_assert_uint_eq(last.cls, VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(last.kind, VN_DTL_KIND_PREEMPTED);
	err = (int64_t)(last.end_ns - (t - 200 * US + OFF));
	ck_assert_msg(err < (int64_t)MS && err > -(int64_t)MS, "entry end off by %lld ns",
		      (long long)err);
	ck_assert_int_eq(dtlreader_cause(r, last.cause, &c), 0);
	ck_assert_str_eq(c.comm, "hog");
	ck_assert_uint_eq(c.pid, 4242);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_eq(info.published, 2);
	ck_assert_uint_ne(info.epoch, 0);
	ck_assert_uint_eq(info.detail, VN_DTL_DETAIL_TASK);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	dtlreader_free(r);
	guestchan_close(gc);
}

START_TEST(test_clock_publish_only)
{
	clock_through_mailbox(false);
}
END_TEST

START_TEST(test_clock_with_guest)
{
	clock_through_mailbox(true);
}
END_TEST

/* Nobody answers: no mapping (pieces dropped), and the host stops watching the mailbox for answers. */
START_TEST(test_no_responder)
{
	struct guestchan *gc = chan(false);
	struct vn_host_match ms[2];
	struct vn_host_chan ch;
	struct dtlctl_info info;
	size_t n = 0;
	uint64_t t0 = mono(), t;

	run_rounds(gc, 600 * MS);
	/* about 6 exchanges abandoned: at most UNANSWERED_SPIN of them watched for 300 us */
	ck_assert_uint_lt(mono() - t0, 700 * MS);
	t = mono();
	guestchan_host_out(gc, 1, t - 100 * US, t, 'S', 0, 0);
	guestchan_dtl_info(gc, &info);
	ck_assert_uint_eq(info.published, 0);
	ck_assert_uint_eq(info.dropped, 1);
	/* publish-only: no matching records */
	guestchan_period(gc, t0, t, ms, NULL, &n, &ch);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(ms[1].gaps, 0);
	guestchan_close(gc);
}
END_TEST

static Suite *clockxchg_suite(void)
{
	Suite *s = suite_create("clockxchg");
	TCase *tc = tcase_create("mailbox");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_clock_publish_only);
	tcase_add_test(tc, test_clock_with_guest);
	tcase_add_test(tc, test_no_responder);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(clockxchg_suite());
}
