/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/attrib/gapsplit, the one split core: the order host time is taken in (steal,
 * unexplained, quiet time, then the guest's events pro rata), the aggregates capped to what nothing explains,
 * hw as the unexplained rest, host spans longer than the gap, a shortfall (the matcher's residual), parts
 * beyond the gap, the readiness and coverage rules, and over many random gaps: the result adds up exactly.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/gapsplit.h"
#include "check_main.h"

static uint64_t res_sum(const struct gapsplit_res *r)
{
	uint64_t s = r->quiet_ns;

	for (int c = 0; c < VN_CLASS_MAX; c++)
		s += r->guest_ns[c];
	for (int k = 0; k < VN_HCLASS_PARTS; k++)
		s += r->hyp_ns[k];
	return s;
}

START_TEST(test_steal_then_unexplained)
{
	uint64_t g[VN_CLASS_MAX] = { 0 };
	struct gapsplit_host h = {
		.ns = { [VN_HCLASS_HOST_PREEMPT] = 600, [VN_HCLASS_HOST_WAIT] = 100 }
	};
	struct gapsplit_res r;

	g[VN_CLASS_IRQ] = 200;
	g[VN_CLASS_STEAL] = 500;
	g[VN_CLASS_UNEXPLAINED] = 300;
	gapsplit_apportion(1000, g, 0, &h, &r);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ], 200); /* the events keep theirs: room enough */
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_STEAL], 0);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_UNEXPLAINED], 0);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 600);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_WAIT], 100);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HW], 100); /* 300 unexplained - 200 of the spans */
	ck_assert_uint_eq(r.from_guest_ns[VN_CLASS_STEAL], 500);
	ck_assert_uint_eq(r.from_guest_ns[VN_CLASS_UNEXPLAINED], 300);
	ck_assert_uint_eq(r.from_guest_ns[VN_CLASS_IRQ], 0);
	ck_assert_int_eq(r.scaled, 0);
	ck_assert_uint_eq(res_sum(&r), 1000);
}
END_TEST

/* A preemption inside an IRQ handler: the host's time comes out of the guest's events, pro rata. */
START_TEST(test_host_wins_over_events)
{
	uint64_t g[VN_CLASS_MAX] = { 0 };
	struct gapsplit_host h = { .ns = { [VN_HCLASS_HOST_PREEMPT] = 900 } };
	struct gapsplit_res r;

	g[VN_CLASS_IRQ] = 600;
	g[VN_CLASS_SOFTIRQ] = 300;
	g[VN_CLASS_UNEXPLAINED] = 100;
	gapsplit_apportion(1000, g, 0, &h, &r);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 900);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ] + r.guest_ns[VN_CLASS_SOFTIRQ], 100);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_SOFTIRQ],
			  33); /* 300 * 100 / 900, rest to the largest */
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ], 67);
	ck_assert_uint_eq(r.from_guest_ns[VN_CLASS_IRQ], 533);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HW], 0);
	ck_assert_int_eq(r.scaled, 1);
	ck_assert_uint_eq(res_sum(&r), 1000);
}
END_TEST

/* The aggregates take only what nothing else explains; the rest of unexplained is hw. */
START_TEST(test_aggregates_capped)
{
	uint64_t g[VN_CLASS_MAX] = { 0 };
	struct gapsplit_host h = { .ns = { [VN_HCLASS_HOST_PREEMPT] = 100,
					   [VN_HCLASS_VMEXIT] = 150,
					   [VN_HCLASS_HOST_IRQ] = 500 } };
	struct gapsplit_res r;

	g[VN_CLASS_THREAD] = 500;
	g[VN_CLASS_UNEXPLAINED] = 500;
	gapsplit_apportion(1000, g, 0, &h, &r);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_THREAD], 500);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 100);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_VMEXIT], 150);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_IRQ], 250); /* 500 - 100 - 150 left */
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HW], 0);
	ck_assert_uint_eq(res_sum(&r), 1000);
}
END_TEST

/* An interval with quiet time (an MPI rank's compute): host time in it is taken from it, after steal. */
START_TEST(test_quiet_time)
{
	uint64_t g[VN_CLASS_MAX] = { 0 };
	struct gapsplit_host h = { .ns = {
				       [VN_HCLASS_HOST_PREEMPT] = 400, [VN_HCLASS_VMEXIT] = 50 } };
	struct gapsplit_res r;

	g[VN_CLASS_IRQ] = 100;
	g[VN_CLASS_STEAL] = 300;
	gapsplit_apportion(10000, g, 9600, &h, &r);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ], 100);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_STEAL], 0);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 400);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_VMEXIT], 50);
	ck_assert_uint_eq(r.from_quiet_ns, 150);
	ck_assert_uint_eq(r.quiet_ns, 9450);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HW], 0);
	ck_assert_uint_eq(res_sum(&r), 10000);
}
END_TEST

/* The matcher's gap: the guest's events net of host time, no unexplained given: the shortfall is hw. Spans
 * longer than the gap are cut to it and the excess said. */
START_TEST(test_shortfall_and_overlong_spans)
{
	uint64_t g[VN_CLASS_MAX] = { 0 };
	struct gapsplit_host h = {
		.ns = { [VN_HCLASS_HOST_PREEMPT] = 300, [VN_HCLASS_HOST_WAIT] = 100 }
	};
	struct gapsplit_res r;

	g[VN_CLASS_IRQ] = 200;
	gapsplit_apportion(1000, g, 0, &h, &r);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ], 200);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HW], 400);
	ck_assert_uint_eq(res_sum(&r), 1000);

	h.ns[VN_HCLASS_HOST_PREEMPT] = 1500;
	h.ns[VN_HCLASS_HOST_WAIT] = 500;
	gapsplit_apportion(1000, g, 0, &h, &r);
	ck_assert_uint_eq(r.over_ns, 1000);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 750);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_WAIT], 250);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ], 0);
	ck_assert_uint_eq(res_sum(&r), 1000);
}
END_TEST

/* Overlapping top-level events that sum past the gap: scaled to it. */
START_TEST(test_parts_beyond_the_gap)
{
	uint64_t g[VN_CLASS_MAX] = { 0 };
	struct gapsplit_res r;

	g[VN_CLASS_IRQ] = 800;
	g[VN_CLASS_THREAD] = 400;
	gapsplit_apportion(1000, g, 0, NULL, &r);
	ck_assert_int_eq(r.scaled, 1);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ] + r.guest_ns[VN_CLASS_THREAD], 1000);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_THREAD], 333);
	ck_assert_uint_eq(res_sum(&r), 1000);
}
END_TEST

START_TEST(test_ready_and_covered)
{
	ck_assert(gapsplit_ready(100, 10, 110));
	ck_assert(!gapsplit_ready(100, 10, 109));
	ck_assert(!gapsplit_ready(UINT64_MAX - 5, 10, UINT64_MAX - 1)); /* saturates, never wraps */
	ck_assert(gapsplit_ready(UINT64_MAX - 5, 10, UINT64_MAX));
	ck_assert(gapsplit_uncovered(99, 100));
	ck_assert(!gapsplit_uncovered(100, 100));
	ck_assert(!gapsplit_uncovered(5, 0));
	ck_assert_uint_eq(gapsplit_clip(10, 20, 15, 30), 5);
	ck_assert_uint_eq(gapsplit_clip(10, 20, 20, 30), 0);
	ck_assert_uint_eq(gapsplit_clip(10, 20, 0, 100), 10);
}
END_TEST

/* Random gaps, random host time: the parts always add up to the gap and no class grows. */
START_TEST(test_random_adds_up)
{
	unsigned seed = 12345;

	for (int i = 0; i < 100000; i++) {
		uint64_t g[VN_CLASS_MAX] = { 0 }, dur = 1 + rand_r(&seed) % 100000, sum = 0, q = 0;
		struct gapsplit_host h;
		struct gapsplit_res r;

		for (int c = 1; c < VN_CLASS_MAX; c++) {
			g[c] = rand_r(&seed) % 4 ? 0 : rand_r(&seed) % (dur + 1);
			sum += g[c];
		}
		if (i % 3 == 0)
			q = sum < dur ? dur - sum : 0;
		for (int k = 0; k < VN_HCLASS_MAX; k++)
			h.ns[k] = rand_r(&seed) % 3 ? 0 : rand_r(&seed) % (2 * dur + 1);
		gapsplit_apportion(dur, g, q, &h, &r);
		ck_assert_uint_eq(res_sum(&r), dur);
		ck_assert_uint_eq(r.guest_ns[VN_CLASS_UNEXPLAINED], 0);
		for (int c = 0; c < VN_CLASS_MAX; c++)
			ck_assert_uint_le(r.guest_ns[c], g[c]);
		for (int k = 0; k < VN_HCLASS_MAX; k++)
			ck_assert_uint_le(r.hyp_ns[k], h.ns[k]);
	}
}
END_TEST

static Suite *gapsplit_suite(void)
{
	Suite *s = suite_create("gapsplit");
	TCase *tc = tcase_create("split");

	tcase_add_test(tc, test_steal_then_unexplained);
	tcase_add_test(tc, test_host_wins_over_events);
	tcase_add_test(tc, test_aggregates_capped);
	tcase_add_test(tc, test_quiet_time);
	tcase_add_test(tc, test_shortfall_and_overlong_spans);
	tcase_add_test(tc, test_parts_beyond_the_gap);
	tcase_add_test(tc, test_ready_and_covered);
	tcase_add_test(tc, test_random_adds_up);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(gapsplit_suite());
}
