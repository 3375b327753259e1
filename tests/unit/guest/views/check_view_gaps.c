/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/views/view_gaps, the lines of `vnoise-guest report FILE --gaps`: a gap nothing split
 * keeps its classes; a split gap's line is the split core's result (what stays in the guest classes, the
 * hypervisor parts, hw) and still adds up; gaps come out in time order across CPUs whatever order the
 * callbacks came in; a split giving a class more than the gap held is refused; no gap is 0 lines.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "views/view_gaps.h"
#include "check_main.h"

static char *lines_of(struct view_gaps *vg, long *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	*n = view_gaps_write(vg, f);
	fclose(f);
	return buf;
}

START_TEST(test_split_and_unsplit)
{
	struct view_gaps *vg = view_gaps_new();
	uint64_t a[VN_CLASS_MAX] = { 0 }, b[VN_CLASS_MAX] = { 0 };
	struct gapsplit_host h = { .ns = { [VN_HCLASS_HOST_PREEMPT] = 700 } };
	struct gapsplit_res res;
	char *s;
	long n;

	ck_assert_ptr_nonnull(vg);
	/* 1000 ns at 5000 on CPU 1 */
	b[VN_CLASS_UNEXPLAINED] = 30; /* 30 ns at 2000 on CPU 0, never split */
	a[VN_CLASS_UNEXPLAINED] = 500;
	a[VN_CLASS_STEAL] = 200; /* host_preempt 700: 200 from steal, 500 from unexplained */
	a[VN_CLASS_IRQ] = 300;
	gapsplit_apportion(1000, a, 0, &h, &res);
	ck_assert_int_eq(view_gaps_split(vg, 1, 5000, 6000, &res), 0); /* before its gap */
	ck_assert_int_eq(view_gaps_gap(vg, 1, 5000, 6000, a), 0);
	ck_assert_int_eq(view_gaps_gap(vg, 0, 2000, 2030, b), 0);
	s = lines_of(vg, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(
	    s, "{\"cpu\":0,\"start_ns\":2000,\"duration_ns\":30,"
	       "\"classes\":{\"unexplained\":30}}\n"
	       "{\"cpu\":1,\"start_ns\":5000,\"duration_ns\":1000,\"classes\":{\"irq\":300,"
	       "\"host_preempt\":700}}\n");
	free(s);
	view_gaps_free(vg);
}
END_TEST

START_TEST(test_split_too_big)
{
	struct view_gaps *vg = view_gaps_new();
	uint64_t a[VN_CLASS_MAX] = { 0 };
	struct gapsplit_res res;
	char *s;
	long n;

	a[VN_CLASS_IRQ] = 900;
	a[VN_CLASS_UNEXPLAINED] = 100;
	memset(&res, 0, sizeof(res));
	res.guest_ns[VN_CLASS_IRQ] = 950; /* more than the gap's IRQ time */
	res.hyp_ns[VN_HCLASS_HW] = 50;
	ck_assert_int_eq(view_gaps_gap(vg, 0, 0, 1000, a), 0);
	ck_assert_int_eq(view_gaps_split(vg, 0, 0, 1000, &res), 0);
	s = lines_of(vg, &n);
	ck_assert_int_eq(n, -EINVAL);
	ck_assert_str_eq(s, "");
	free(s);
	view_gaps_free(vg);
}
END_TEST

START_TEST(test_no_gaps)
{
	struct view_gaps *vg = view_gaps_new();
	uint64_t a[VN_CLASS_MAX] = { 0 };
	char *s;
	long n;

	ck_assert_int_eq(view_gaps_gap(vg, 0, 10, 10, a), 0); /* empty: not a gap */
	ck_assert_int_eq(view_gaps_gap(vg, -1, 10, 20, a), 0);
	s = lines_of(vg, &n);
	ck_assert_int_eq(n, 0);
	free(s);
	view_gaps_free(vg);
	view_gaps_free(NULL);
}
END_TEST

static Suite *view_gaps_suite(void)
{
	Suite *s = suite_create("view_gaps");
	TCase *tc = tcase_create("lines");

	tcase_add_test(tc, test_split_and_unsplit);
	tcase_add_test(tc, test_split_too_big);
	tcase_add_test(tc, test_no_gaps);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(view_gaps_suite());
}
