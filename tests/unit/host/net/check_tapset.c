/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/net/tapset, the captures on every tap of a domain, on devices that do not exist (no
 * root needed): a domain without taps cuts nothing; each listed tap gives one record per period, FAILED while
 * its capture is not open, with the period's span and the domain index, and no flows; taps past
 * TAPSET_MAX_TAPS are not captured; a poll before the retry time does not reopen; a record the caller
 * refuses is lost, the others still come. The live capture itself is tested by check_tapflow and
 * flows_vm.sh.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "net/tapset.h"

struct got {
	struct vn_host_tap taps[16];
	int ntaps, nflows, refuse; /* refuse: tap records the callback refuses (-ENOMEM) */
};

static int on_flow(void *ctx, const struct vn_host_flow *f)
{
	struct got *g = ctx;

	(void)f;
	g->nflows++;
	return 0;
}

static int on_tap(void *ctx, const struct vn_host_tap *t)
{
	struct got *g = ctx;

	if (g->refuse) {
		g->refuse--;
		return -ENOMEM;
	}
	if (g->ntaps < 16)
		g->taps[g->ntaps] = *t;
	g->ntaps++;
	return 0;
}

START_TEST(test_no_taps)
{
	struct got g = { 0 };
	const struct tapset_out out = { .flow = on_flow, .tap = on_tap, .ctx = &g };
	struct tapset *s = tapset_open("dom", "", 0);

	ck_assert_ptr_nonnull(s);
	tapset_poll(s, true, 100);
	tapset_cut(s, 1, 0, 100, &out);
	ck_assert_int_eq(g.ntaps, 0);
	ck_assert_int_eq(g.nflows, 0);
	tapset_close(s);
	tapset_close(NULL);
}
END_TEST

START_TEST(test_failed_taps)
{
	struct got g = { 0 };
	const struct tapset_out out = { .flow = on_flow, .tap = on_tap, .ctx = &g };
	struct tapset *s = tapset_open("dom", "vnoisenodev0,vnoisenodev1", 1000);

	ck_assert_ptr_nonnull(s);
	tapset_poll(s, true, 2000); /* before the retry time */
	tapset_cut(s, 4, 1000, 3000, &out);
	ck_assert_int_eq(g.ntaps, 2);
	ck_assert_int_eq(g.nflows, 0);
	for (int k = 0; k < 2; k++) {
		char name[16];

		snprintf(name, sizeof(name), "vnoisenodev%d", k);
		ck_assert_str_eq(g.taps[k].tap, name);
		ck_assert_uint_eq(g.taps[k].state, VN_HOST_TAP_FAILED);
		ck_assert_uint_eq(g.taps[k].dom, 4);
		ck_assert_uint_eq(g.taps[k].start_ns, 1000);
		ck_assert_uint_eq(g.taps[k].end_ns, 3000);
		ck_assert_uint_eq(g.taps[k].packets[0] + g.taps[k].packets[1], 0);
	}
	/* after the retry time the open is tried again (and fails again): still one record per tap */
	tapset_poll(s, true, 1000 + TAPSET_RETRY_NS);
	g.refuse = 1;
	tapset_cut(s, 4, 3000, 1000 + TAPSET_RETRY_NS, &out);
	ck_assert_int_eq(g.ntaps, 3);
	ck_assert_uint_eq(g.taps[2].state, VN_HOST_TAP_FAILED);
	tapset_close(s);
}
END_TEST

START_TEST(test_max_taps)
{
	struct got g = { 0 };
	const struct tapset_out out = { .flow = on_flow, .tap = on_tap, .ctx = &g };
	char list[256] = "";
	struct tapset *s;

	for (int k = 0; k < TAPSET_MAX_TAPS + 2; k++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%svnoisenodev%d",
			 k ? "," : "", k);
	s = tapset_open("dom", list, 0);
	ck_assert_ptr_nonnull(s);
	tapset_cut(s, 0, 0, 10, &out);
	ck_assert_int_eq(g.ntaps, TAPSET_MAX_TAPS);
	tapset_close(s);
}
END_TEST

static Suite *tapset_suite(void)
{
	Suite *s = suite_create("tapset");
	TCase *tc = tcase_create("captures");

	tcase_add_test(tc, test_no_taps);
	tcase_add_test(tc, test_failed_taps);
	tcase_add_test(tc, test_max_taps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tapset_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
