/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/dtlctl, through the channel that owns it (host/match/guestchan) over a real
 * region file in /dev/shm: the publishing rule (a v1 agent's live header stops it, epoch 0 or version 2
 * starts it again with a new host epoch); one publisher per region (flock), taken over when the other one
 * closes.
 */
#include <check.h>
#include "check_main.h"
#include "guestchan_check.h"

START_TEST(test_v1_agent_owns_region)
{
	struct vn_shm_header *h = base;
	const struct vn_dtl_header *dh = host_area();
	struct guestchan *gc;
	struct dtlctl_info info;
	uint64_t e1;

	h->version = 1;
	h->epoch = 5;
	gc = chan(false);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_V1);
	ck_assert_uint_eq(info.epoch, 0);
	ck_assert_uint_eq(dh->host_epoch, 0); /* the upper half untouched */
	ck_assert_uint_eq(dh->magic[0], 0);
	/* the agent stops (epoch 0): published */
	__atomic_store_n(&h->epoch, 0, __ATOMIC_RELEASE);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_ne(info.epoch, 0);
	ck_assert_int_eq(memcmp(dh->magic, VN_DTL_MAGIC, VN_DTL_MAGIC_LEN), 0);
	e1 = dh->host_epoch;
	ck_assert_uint_eq(e1, info.epoch);
	/* a v1 agent again: stopped; a v2 agent: published again, in a new host epoch */
	__atomic_store_n(&h->epoch, 6, __ATOMIC_RELEASE);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_V1);
	h->version = 2;
	__atomic_store_n(&h->epoch, 7, __ATOMIC_RELEASE);
	run_rounds(gc, 20 * MS);
	guestchan_dtl_info(gc, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_gt(dh->host_epoch, e1);
	guestchan_close(gc);
}
END_TEST

START_TEST(test_one_publisher)
{
	const struct vn_dtl_header *dh = host_area();
	struct guestchan *a = chan(false), *b;
	struct dtlctl_info info;
	uint64_t ea;

	run_rounds(a, 20 * MS);
	ea = dh->host_epoch;
	ck_assert_uint_ne(ea, 0);
	b = chan(false);
	run_rounds(b, 20 * MS);
	guestchan_dtl_info(b, &info);
	ck_assert_int_eq(info.state, DTLCTL_BUSY);
	ck_assert_uint_eq(dh->host_epoch, ea);
	/* the publisher goes away: the other one takes over within a second, in a new epoch */
	guestchan_close(a);
	run_rounds(b, 1100 * MS);
	guestchan_dtl_info(b, &info);
	ck_assert_int_eq(info.state, DTLCTL_ON);
	ck_assert_uint_gt(dh->host_epoch, ea);
	guestchan_close(b);
}
END_TEST

static Suite *dtlctl_suite(void)
{
	Suite *s = suite_create("dtlctl");
	TCase *tc = tcase_create("publishing");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_v1_agent_owns_region);
	tcase_add_test(tc, test_one_publisher);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(dtlctl_suite());
}
