/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/flipgate: a few changes are followed at once, a flood is held off with a
 * doubling backoff (one hold, one log line, at a time; the state at its end followed), a quiet window makes
 * the next hold short again, a guest that settles is followed without waiting for the hold's end.
 */
#include <check.h>
#include "check_main.h"
#include "match/flipgate.h"

#define S 1000000000ull

START_TEST(test_burst_followed)
{
	struct flipgate g = { 0 };

	/* a reboot or two and an agent restarted by hand: all followed */
	ck_assert_int_eq(flipgate_allow(&g, 100 * S, 1), FLIPGATE_FOLLOW);
	ck_assert_int_eq(flipgate_allow(&g, 101 * S, 2), FLIPGATE_FOLLOW);
	ck_assert_int_eq(flipgate_allow(&g, 130 * S, 3), FLIPGATE_FOLLOW);
	/* spread out over more than a window each: never held */
	for (uint64_t k = 0; k < 20; k++)
		ck_assert_int_eq(flipgate_allow(&g, 200 * S + k * 61 * S, 10 + k), FLIPGATE_FOLLOW);
	ck_assert_uint_eq(g.holds, 0);
}
END_TEST

START_TEST(test_flood_held)
{
	struct flipgate g = { 0 };
	uint64_t t = 1000 * S, follows = 0, began = 0, v = 1, last_began = 0, gap_min = UINT64_MAX;

	/* a change every 5 ms round for 30 minutes */
	for (; t < 2800 * S; t += 5000000ull, v++) {
		enum flipgate_verdict d = flipgate_allow(&g, t, v);

		if (d == FLIPGATE_FOLLOW)
			follows++;
		if (d == FLIPGATE_HOLD_BEGAN) {
			if (last_began && t - last_began < gap_min)
				gap_min = t - last_began;
			last_began = t;
			began++;
		}
	}
	/* 3 at once, then one per hold: 60, 120, 240, then 300 s */
	ck_assert_uint_eq(began, g.holds);
	ck_assert_uint_ge(gap_min, FLIPGATE_HOLD_MIN_NS);
	ck_assert_uint_le(follows, 3 + g.holds);
	ck_assert_uint_le(g.holds, 8);
	ck_assert_uint_ge(g.holds, 6);
	ck_assert_uint_gt(g.held, 300000); /* every held change counted once */
	ck_assert_uint_eq(g.hold_ns, FLIPGATE_HOLD_MAX_NS);
	/* quiet for longer than a window and the hold: the next flood's hold is short again */
	t += 2 * FLIPGATE_HOLD_MAX_NS;
	ck_assert_int_eq(flipgate_allow(&g, t, ++v), FLIPGATE_FOLLOW);
	ck_assert_int_eq(flipgate_allow(&g, t + S, ++v), FLIPGATE_FOLLOW);
	ck_assert_int_eq(flipgate_allow(&g, t + 2 * S, ++v), FLIPGATE_FOLLOW);
	ck_assert_int_eq(flipgate_allow(&g, t + 3 * S, ++v), FLIPGATE_HOLD_BEGAN);
	ck_assert_int_eq(flipgate_allow(&g, t + 3 * S + FLIPGATE_HOLD_MIN_NS - 1, ++v),
			 FLIPGATE_HOLD);
	ck_assert_int_eq(flipgate_allow(&g, t + 3 * S + FLIPGATE_HOLD_MIN_NS, ++v),
			 FLIPGATE_FOLLOW);
}
END_TEST

/* A flood that stops: the state the guest settles in is followed once it lasted FLIPGATE_SETTLE_NS, not
 * when the hold ends; a hold is said at most every FLIPGATE_SAY_NS, and the changes followed after one are
 * quiet. */
START_TEST(test_settle)
{
	struct flipgate g = { 0 };
	uint64_t t = 1000 * S, v = 1, says = 0;

	for (; t < 1012 * S; t += 5000000ull, v++) /* 12 s of flips every 5 ms */
		if (flipgate_allow(&g, t, v) == FLIPGATE_HOLD_BEGAN && flipgate_say(&g, t))
			says++;
	ck_assert_uint_eq(g.holds, 1);
	ck_assert_uint_eq(says, 1);
	ck_assert(flipgate_quiet(&g, t));
	/* the agent starts (value v) and stays */
	ck_assert_int_eq(flipgate_allow(&g, t, v), FLIPGATE_HOLD);
	ck_assert_int_eq(flipgate_allow(&g, t + FLIPGATE_SETTLE_NS - 1, v), FLIPGATE_HOLD);
	ck_assert_int_eq(flipgate_allow(&g, t + FLIPGATE_SETTLE_NS, v), FLIPGATE_FOLLOW);
	/* flips again at once: a new hold, said only FLIPGATE_SAY_NS after the last */
	t += FLIPGATE_SETTLE_NS + 1000000ull;
	ck_assert_int_eq(flipgate_allow(&g, t, ++v), FLIPGATE_HOLD_BEGAN);
	ck_assert(!flipgate_say(&g, t) || t >= 1000 * S + FLIPGATE_SAY_NS);
	ck_assert_uint_eq(g.holds, 2);
	/* a guest going back and forth, asked only in one of its states: not settled */
	t += FLIPGATE_HOLD_MIN_NS / 2;
	for (int k = 0; k < 2000; k++, t += 5000000ull) {
		flipgate_seen(&g, t, (uint64_t)(k & 1));
		if (k & 1)
			ck_assert_int_eq(flipgate_allow(&g, t, 1), FLIPGATE_HOLD);
	}
}
END_TEST

static Suite *flipgate_suite(void)
{
	Suite *s = suite_create("flipgate");
	TCase *tc = tcase_create("gate");

	tcase_add_test(tc, test_burst_followed);
	tcase_add_test(tc, test_flood_held);
	tcase_add_test(tc, test_settle);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(flipgate_suite());
}
