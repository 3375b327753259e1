/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/monitor/hypspan: target spans intersected with the DTL store exactly (spans crossing
 * several host intervals, other CPUs not counted), running vs runnable, causes and period differences, the
 * horizon (a span waits for it; one that never gets it is late, with its length), and the bounds (a full
 * pending list, bad spans, causes beyond the table).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "dtl/dtl_priv.h"
#include "dtl/dtl.h"
#include "monitor/hypspan.h"

#define HOG 0x00010001u /* cause word of the host task "hog" */
#define KT 0x00010002u /* cause word of a host kernel thread */

static struct dtl *store(uint64_t horizon)
{
	struct dtl *d = dtl_new_store(2);
	const struct dtl_span sp[] = {
		{ .start_ns = 100, .end_ns = 200, .cause = HOG, .cls = VN_DTL_CLASS_HOST_USER },
		{ .start_ns = 300, .end_ns = 400, .cause = 0, .cls = VN_DTL_CLASS_IDLE },
		{ .start_ns = 500, .end_ns = 600, .cause = HOG, .cls = VN_DTL_CLASS_HOST_USER },
		{ .start_ns = 700, .end_ns = 750, .cause = KT, .cls = VN_DTL_CLASS_HOST_KTHREAD },
	};
	const struct dtl_span other = {
		.start_ns = 0, .end_ns = 1000, .cause = HOG, .cls = VN_DTL_CLASS_HOST_USER
	};

	ck_assert_ptr_nonnull(d);
	for (size_t i = 0; i < sizeof(sp) / sizeof(sp[0]); i++) {
		struct dtl_span s = sp[i];

		s.kind = VN_DTL_KIND_PREEMPTED;
		ck_assert_int_eq(dtl_add_span(d, 0, &s), 0);
	}
	ck_assert_int_eq(dtl_add_span(d, 1, &other), 0); /* CPU 1: never overlaps CPU 0's spans */
	ck_assert_int_eq(dtl_set_cause(d, HOG, VN_DTL_CLASS_HOST_USER, 123, "hog"), 0);
	ck_assert_int_eq(dtl_set_cause(d, KT, VN_DTL_CLASS_HOST_KTHREAD, 7, "kworker/0:1"), 0);
	dtl_set_horizon(d, horizon);
	return d;
}

static uint64_t cause_ns(const struct hypspan_tot *t, uint32_t cause, int hclass)
{
	for (uint32_t i = 0; i < t->ncause; i++)
		if (t->cause[i].cause == cause && t->cause[i].hclass == hclass)
			return t->cause[i].ns;
	return 0;
}

START_TEST(test_crossing)
{
	struct dtl *d = store(1000);
	struct hypspan *h = hypspan_new(4, 0, 0);
	const struct hypspan_tot *t;
	struct hypspan_stats st;
	char nm[96];

	ck_assert_ptr_nonnull(h);
	/* runs [150, 550) on CPU 0: half of the first and third host intervals, all of the idle one */
	hypspan_add(h, 2, 0, 1, 150, 550);
	ck_assert_uint_eq(hypspan_process(h, d, 560), 1);
	t = hypspan_tot(h, 2);
	ck_assert_uint_eq(t->ns[VN_HCLASS_HOST_PREEMPT], 100);
	ck_assert_uint_eq(t->ns[VN_HCLASS_HOST_WAIT], 100);
	ck_assert_uint_eq(t->running_ns, 200);
	ck_assert_uint_eq(t->runnable_ns, 0);
	ck_assert_uint_eq(cause_ns(t, HOG, VN_HCLASS_HOST_PREEMPT), 100);
	ck_assert_uint_eq(cause_ns(t, 0, VN_HCLASS_HOST_WAIT), 100);
	ck_assert_str_eq(dtl_cause_name(d, HOG, VN_DTL_CLASS_HOST_USER, nm, sizeof(nm)),
			 "host-user-task:hog[123]");
	/* the same time on CPU 1 sees CPU 1's interval only; other targets untouched */
	hypspan_add(h, 1, 1, 1, 150, 550);
	hypspan_process(h, d, 560);
	ck_assert_uint_eq(hypspan_tot(h, 1)->ns[VN_HCLASS_HOST_PREEMPT], 400);
	ck_assert_uint_eq(hypspan_tot(h, 0)->ns[VN_HCLASS_HOST_PREEMPT], 0);
	/* a span between host intervals gets nothing; one inside an interval gets all of itself */
	hypspan_add(h, 3, 0, 1, 200, 300);
	hypspan_add(h, 3, 0, 1, 710, 720);
	hypspan_process(h, d, 800);
	t = hypspan_tot(h, 3);
	ck_assert_uint_eq(t->ns[VN_HCLASS_HOST_PREEMPT] + t->ns[VN_HCLASS_HOST_WAIT], 10);
	ck_assert_uint_eq(cause_ns(t, KT, VN_HCLASS_HOST_PREEMPT), 10);
	hypspan_stats(h, &st);
	ck_assert_uint_eq(st.spans, 4);
	ck_assert_uint_eq(st.done, 4);
	ck_assert_uint_eq(st.late + st.pending + st.bad, 0);
	hypspan_free(h);
	dtl_close(d);
}
END_TEST

START_TEST(test_runnable)
{
	struct dtl *d = store(1000);
	struct hypspan *h = hypspan_new(1, 0, 0);
	const struct hypspan_tot *t;

	/* ran [0, 250), then waited for the CPU [250, 650): the idle interval and half the third */
	hypspan_add(h, 0, 0, 1, 0, 250);
	hypspan_add(h, 0, 0, 0, 250, 650);
	hypspan_process(h, d, 700);
	t = hypspan_tot(h, 0);
	ck_assert_uint_eq(t->running_ns, 100);
	ck_assert_uint_eq(t->runnable_ns, 200);
	ck_assert_uint_eq(t->ns[VN_HCLASS_HOST_PREEMPT], 200);
	ck_assert_uint_eq(t->ns[VN_HCLASS_HOST_WAIT], 100);
	ck_assert_uint_eq(cause_ns(t, HOG, VN_HCLASS_HOST_PREEMPT), 200);
	hypspan_free(h);
	dtl_close(d);
}
END_TEST

START_TEST(test_horizon)
{
	struct dtl *d = store(300);
	struct hypspan *h = hypspan_new(1, 0, 1000);
	struct hypspan_stats st;

	hypspan_add(h, 0, 0, 1, 100, 250); /* before the horizon */
	hypspan_add(h, 0, 0, 1, 250, 550); /* after it: waits */
	ck_assert_uint_eq(hypspan_process(h, d, 600), 1);
	ck_assert_uint_eq(hypspan_tot(h, 0)->ns[VN_HCLASS_HOST_PREEMPT], 100);
	ck_assert_uint_eq(hypspan_pending_end(h), 550);
	/* still within late_ns of its end: pending, nothing counted */
	ck_assert_uint_eq(hypspan_process(h, d, 1500), 0);
	hypspan_stats(h, &st);
	ck_assert_uint_eq(st.pending, 1);
	ck_assert_uint_eq(st.late, 0);
	/* the horizon moves: intersected exactly */
	dtl_set_horizon(d, 600);
	ck_assert_uint_eq(hypspan_process(h, d, 1500), 1);
	ck_assert_uint_eq(hypspan_tot(h, 0)->ns[VN_HCLASS_HOST_PREEMPT], 150);
	ck_assert_uint_eq(hypspan_tot(h, 0)->ns[VN_HCLASS_HOST_WAIT], 100);
	/* a span the horizon never reaches becomes late after late_ns, with its length */
	hypspan_add(h, 0, 0, 1, 600, 900);
	hypspan_process(h, d, 1900);
	hypspan_stats(h, &st);
	ck_assert_uint_eq(st.pending, 1);
	hypspan_process(h, d, 1901);
	hypspan_stats(h, &st);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_uint_eq(st.late, 1);
	ck_assert_uint_eq(st.late_ns, 300);
	ck_assert_uint_eq(hypspan_tot(h, 0)->ns[VN_HCLASS_HOST_PREEMPT], 150); /* never guessed */
	/* no DTL at all (horizon 0): pending, then late; finish makes the rest late */
	hypspan_add(h, 0, 0, 1, 2000, 2100);
	hypspan_add(h, 0, 0, 1, 2100, 2200);
	ck_assert_uint_eq(hypspan_process(h, NULL, 2200), 0);
	hypspan_finish(h);
	hypspan_stats(h, &st);
	ck_assert_uint_eq(st.late, 3);
	ck_assert_uint_eq(st.late_ns, 500);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_uint_eq(hypspan_pending_end(h), 0);
	hypspan_free(h);
	dtl_close(d);
}
END_TEST

START_TEST(test_bounds)
{
	struct dtl *d = store(0);
	struct hypspan *h = hypspan_new(2, 3, 0);
	struct hypspan_stats st;

	ck_assert_ptr_null(hypspan_new(0, 0, 0));
	/* a full list: the oldest gives way, counted late */
	for (int i = 0; i < 5; i++)
		hypspan_add(h, 0, 0, 1, 2000 + 10 * (uint64_t)i, 2010 + 10 * (uint64_t)i);
	hypspan_stats(h, &st);
	ck_assert_uint_eq(st.pending, 3);
	ck_assert_uint_eq(st.late, 2);
	ck_assert_uint_eq(st.late_ns, 20);
	ck_assert_uint_eq(hypspan_pending_end(h), 2050);
	/* the ring keeps its order across the wrap: the horizon resolves the older two */
	dtl_set_horizon(d, 2040);
	ck_assert_uint_eq(hypspan_process(h, d, 2050), 2);
	hypspan_add(h, 1, 0, 1, 100, 200);
	hypspan_add(h, 1, 0, 1, 100, 200);
	dtl_set_horizon(d, 3000);
	ck_assert_uint_eq(hypspan_process(h, d, 3000), 3);
	ck_assert_uint_eq(hypspan_tot(h, 1)->ns[VN_HCLASS_HOST_PREEMPT], 200);
	/* bad spans: target out of range, empty or reversed */
	hypspan_add(h, 2, 0, 1, 100, 200);
	hypspan_add(h, 0, 0, 1, 200, 200);
	hypspan_add(h, 0, 0, 1, 300, 200);
	hypspan_stats(h, &st);
	ck_assert_uint_eq(st.bad, 3);
	ck_assert_uint_eq(st.pending, 0);
	ck_assert_ptr_null(hypspan_tot(h, 2));
	hypspan_free(h);
	hypspan_free(NULL);
	dtl_close(d);
}
END_TEST

START_TEST(test_causes)
{
	struct dtl *d = dtl_new_store(1);
	struct hypspan *h = hypspan_new(1, 0, 0);
	struct hypspan_tot a, diff;
	const struct hypspan_tot *t;
	const uint32_t N = HYPSPAN_CAUSES;

	/* N + 2 causes, cause i + 1 at [1000 i, 1000 i + 10 + i): longer and longer */
	for (uint32_t i = 0; i < N + 2; i++) {
		struct dtl_span s = { .start_ns = 1000 * (uint64_t)i,
				      .end_ns = 1000 * (uint64_t)i + 10 + i,
				      .cause = 0x10000u | (i + 1),
				      .cls = VN_DTL_CLASS_HOST_USER };

		ck_assert_int_eq(dtl_add_span(d, 0, &s), 0);
	}
	dtl_set_horizon(d, 1000000);
	hypspan_add(h, 0, 0, 1, 0, 1000 * (uint64_t)(N - 2) + 500); /* causes 1 .. N - 1 */
	hypspan_process(h, d, 0);
	t = hypspan_tot(h, 0);
	ck_assert_uint_eq(t->ncause, N - 1);
	ck_assert_uint_eq(t->other_ns, 0);
	a = *t;
	/* causes N, N + 1, N + 2 (the last two evict causes 1 and 2), then cause 1 again (evicts cause 3) */
	hypspan_add(h, 0, 0, 1, 1000 * (uint64_t)(N - 2) + 500, 1000000);
	hypspan_add(h, 0, 0, 1, 0, 1000);
	hypspan_process(h, d, 0);
	t = hypspan_tot(h, 0);
	ck_assert_uint_eq(t->ncause, N);
	ck_assert_uint_eq(t->other_ns, 10 + 11 + 12);
	/* the period's difference is exact: the new causes and cause 1's new 10 ns, other 0 */
	hypspan_diff(&a, t, &diff);
	ck_assert_uint_eq(diff.ncause, 4);
	ck_assert_uint_eq(diff.cause[0].cause, 0x10000u | (N + 2));
	ck_assert_uint_eq(diff.cause[0].ns, 10 + N + 1);
	ck_assert_uint_eq(diff.cause[1].ns, 10 + N);
	ck_assert_uint_eq(diff.cause[2].ns, 10 + N - 1);
	ck_assert_uint_eq(diff.cause[3].cause, 0x10001u);
	ck_assert_uint_eq(diff.cause[3].ns, 10);
	ck_assert_uint_eq(diff.other_ns, 0);
	ck_assert_uint_eq(diff.ns[VN_HCLASS_HOST_PREEMPT],
			  t->ns[VN_HCLASS_HOST_PREEMPT] - a.ns[VN_HCLASS_HOST_PREEMPT]);
	ck_assert_uint_eq(diff.ns[VN_HCLASS_HOST_PREEMPT],
			  10 + (10 + N - 1) + (10 + N) + (10 + N + 1));
	/* from the start: every cause's total, the evicted ones in other */
	memset(&a, 0, sizeof(a));
	hypspan_diff(&a, t, &diff);
	ck_assert_uint_eq(diff.other_ns, 10 + 11 + 12);
	ck_assert_uint_eq(diff.cause[0].ns, 10 + N + 1);
	hypspan_free(h);
	dtl_close(d);
}
END_TEST

static Suite *hypspan_suite(void)
{
	Suite *s = suite_create("hypspan");
	TCase *tc = tcase_create("intersect");

	tcase_add_test(tc, test_crossing);
	tcase_add_test(tc, test_runnable);
	tcase_add_test(tc, test_horizon);
	tcase_add_test(tc, test_bounds);
	tcase_add_test(tc, test_causes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hypspan_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
