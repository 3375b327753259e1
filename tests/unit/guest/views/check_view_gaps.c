/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/views/view_gaps, the lines of `vnoise-guest report FILE --gaps`: a gap nothing split
 * keeps its classes; a split gap has its hypervisor parts taken out of unexplained, then steal, and its
 * line still adds up; gaps come out in time order across CPUs whatever order the callbacks came in; a split
 * larger than the gap's steal and unexplained is refused; no gap is 0 lines.
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
	uint64_t a[VN_CLASS_MAX] = { 0 }, b[VN_CLASS_MAX] = { 0 }, parts[VN_HCLASS_PARTS] = { 0 };
	char *s;
	long n;

	ck_assert_ptr_nonnull(vg);
	a[VN_CLASS_IRQ] = 100;
	a[VN_CLASS_STEAL] = 400;
	a[VN_CLASS_UNEXPLAINED] = 500; /* 1000 ns at 5000 on CPU 1 */
	b[VN_CLASS_UNEXPLAINED] = 30; /* 30 ns at 2000 on CPU 0, never split */
	parts[VN_HCLASS_HOST_PREEMPT] = 700; /* 300 from steal, 400 from unexplained */
	parts[VN_HCLASS_HW] = 100;
	ck_assert_int_eq(view_gaps_split(vg, 1, 5000, 6000, parts), 0); /* before its gap */
	ck_assert_int_eq(view_gaps_gap(vg, 1, 5000, 6000, a), 0);
	ck_assert_int_eq(view_gaps_gap(vg, 0, 2000, 2030, b), 0);
	s = lines_of(vg, &n);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(s, "{\"cpu\":0,\"start_ns\":2000,\"duration_ns\":30,"
			    "\"classes\":{\"unexplained\":30}}\n"
			    "{\"cpu\":1,\"start_ns\":5000,\"duration_ns\":1000,\"classes\":{\"irq\":100,"
			    "\"steal\":100,\"host_preempt\":700,\"hw\":100}}\n");
	free(s);
	view_gaps_free(vg);
}
END_TEST

START_TEST(test_split_too_big)
{
	struct view_gaps *vg = view_gaps_new();
	uint64_t a[VN_CLASS_MAX] = { 0 }, parts[VN_HCLASS_PARTS] = { 0 };
	char *s;
	long n;

	a[VN_CLASS_IRQ] = 900;
	a[VN_CLASS_UNEXPLAINED] = 100;
	parts[VN_HCLASS_HOST_PREEMPT] = 200; /* more than steal + unexplained */
	ck_assert_int_eq(view_gaps_gap(vg, 0, 0, 1000, a), 0);
	ck_assert_int_eq(view_gaps_split(vg, 0, 0, 1000, parts), 0);
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
