/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/views/hist: bucket geometry (exact small values, width <= 1/16 of the lower bound,
 * contiguous coverage of the whole uint64_t range), exact count/min/max/mean, percentiles against sorted
 * arrays of known distributions within one bucket, merge equal to adding everything to one histogram, and
 * the bucket iterator.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "views/hist.h"
#include "views/hist_priv.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The exact order statistic that hist_percentile() approximates. */
static uint64_t exact_percentile(const uint64_t *sorted, size_t n, double p)
{
	double x = ceil(p / 100.0 * (double)n - 1e-9);
	size_t rank = x < 1.0 ? 1 : (size_t)x;

	if (p >= 100.0 || rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* Check every percentile step of h against the sorted values. */
static void check_percentiles(const struct hist *h, uint64_t *v, size_t n)
{
	static const double ps[] = { 0,	   0.1, 1,  5,	10, 25,	  33.3,	 50,
				     66.6, 75,	90, 95, 99, 99.9, 99.99, 100 };
	size_t i;

	qsort(v, n, sizeof(*v), cmp_u64);
	ck_assert_uint_eq(hist_min(h), v[0]);
	ck_assert_uint_eq(hist_max(h), v[n - 1]);
	ck_assert_uint_eq(hist_percentile(h, 0), v[0]);
	ck_assert_uint_eq(hist_percentile(h, 100), v[n - 1]);
	for (i = 0; i < sizeof(ps) / sizeof(ps[0]); i++) {
		uint64_t exact = exact_percentile(v, n, ps[i]);
		uint64_t got = hist_percentile(h, ps[i]);

		/* never below the exact value, and within its bucket */
		ck_assert_uint_ge(got, exact);
		ck_assert_uint_le(got, hist_highest_equiv(exact));
		ck_assert_uint_le(got - exact, exact / 16);
	}
}

/* ---- geometry ---- */

START_TEST(test_small_values_exact)
{
	uint64_t v;

	for (v = 0; v < 32; v++) {
		ck_assert_uint_eq(hist_index(v), v);
		ck_assert_uint_eq(hist_lowest_equiv(v), v);
		ck_assert_uint_eq(hist_highest_equiv(v), v);
	}
	ck_assert_uint_eq(hist_lowest_equiv(33), 32);
	ck_assert_uint_eq(hist_highest_equiv(33), 33);
	ck_assert_uint_eq(hist_lowest_equiv(1000), 992);
	ck_assert_uint_eq(hist_highest_equiv(1000), 1023);
}
END_TEST

START_TEST(test_bucket_widths)
{
	uint64_t v, lo, hi;
	int e;

	/* powers of two and their neighbours over the whole range, and a dense sweep of small values */
	for (e = 0; e < 64; e++) {
		uint64_t base = 1ull << e;
		uint64_t probe[4] = { base, base - 1, base + 1, base + (base >> 1) };
		int k;

		for (k = 0; k < 4; k++) {
			v = probe[k];
			lo = hist_lowest_equiv(v);
			hi = hist_highest_equiv(v);
			ck_assert_uint_le(lo, v);
			ck_assert_uint_ge(hi, v);
			ck_assert_uint_le(hi - lo, lo / 16);
			ck_assert_uint_lt(hist_index(v), HIST_NBUCKETS);
		}
	}
	ck_assert_uint_eq(hist_index(UINT64_MAX), HIST_NBUCKETS - 1);
	ck_assert_uint_eq(hist_highest_equiv(UINT64_MAX), UINT64_MAX);
	/* buckets are contiguous: each one starts right after the previous one ends */
	for (v = 0; v < 5000000; v = hi + 1) {
		hi = hist_highest_equiv(v);
		ck_assert_uint_eq(hist_lowest_equiv(v), v);
		ck_assert_uint_eq(hist_index(hi + 1), hist_index(v) + 1);
	}
	/* 1000 s fits well inside the range with the same precision */
	v = 1000ull * 1000000000ull;
	ck_assert_uint_le(hist_highest_equiv(v) - hist_lowest_equiv(v), v / 16);
}
END_TEST

/* ---- statistics ---- */

START_TEST(test_empty)
{
	struct hist h;
	struct hist_iter it;
	struct hist_bucket b;

	hist_init(&h);
	ck_assert_uint_eq(hist_count(&h), 0);
	ck_assert_uint_eq(hist_min(&h), 0);
	ck_assert_uint_eq(hist_max(&h), 0);
	ck_assert_uint_eq(hist_percentile(&h, 50), 0);
	ck_assert(hist_mean(&h) == 0.0);
	hist_iter_init(&it, &h);
	ck_assert(!hist_iter_next(&it, &b));
}
END_TEST

START_TEST(test_exact_stats)
{
	struct hist h;

	hist_init(&h);
	hist_add(&h, 5000);
	hist_add(&h, 7);
	hist_add(&h, 123456789);
	ck_assert_uint_eq(hist_count(&h), 3);
	ck_assert_uint_eq(hist_min(&h), 7);
	ck_assert_uint_eq(hist_max(&h), 123456789);
	ck_assert_double_eq_tol(hist_mean(&h), (5000.0 + 7 + 123456789) / 3, 1e-6);
	/* a zero-filled histogram is empty and valid */
	memset(&h, 0, sizeof(h));
	hist_add(&h, 900);
	hist_add(&h, 800);
	ck_assert_uint_eq(hist_min(&h), 800);
	ck_assert_uint_eq(hist_max(&h), 900);
	/* one value: every percentile is that value exactly */
	hist_init(&h);
	hist_add(&h, 123456789);
	ck_assert_uint_eq(hist_percentile(&h, 0), 123456789);
	ck_assert_uint_eq(hist_percentile(&h, 50), 123456789);
	ck_assert_uint_eq(hist_percentile(&h, 100), 123456789);
	/* out-of-range p is clamped */
	ck_assert_uint_eq(hist_percentile(&h, -5), 123456789);
	ck_assert_uint_eq(hist_percentile(&h, 250), 123456789);
}
END_TEST

START_TEST(test_small_set_exact)
{
	/* values below 32 are exact, so percentiles equal the order statistics */
	uint64_t v[10] = { 3, 1, 4, 1, 5, 9, 2, 6, 5, 3 };
	struct hist h;
	size_t i;

	hist_init(&h);
	for (i = 0; i < 10; i++)
		hist_add(&h, v[i]);
	ck_assert_uint_eq(hist_percentile(&h, 10), 1);
	ck_assert_uint_eq(hist_percentile(&h, 20), 1);
	ck_assert_uint_eq(hist_percentile(&h, 21), 2);
	ck_assert_uint_eq(hist_percentile(&h, 50), 3);
	ck_assert_uint_eq(hist_percentile(&h, 90), 6);
	ck_assert_uint_eq(hist_percentile(&h, 91), 9);
	check_percentiles(&h, v, 10);
}
END_TEST

START_TEST(test_uniform_ints)
{
	enum { N = 100000 };
	uint64_t *v = malloc(N * sizeof(*v));
	struct hist h;
	size_t i;

	ck_assert_ptr_nonnull(v);
	hist_init(&h);
	for (i = 0; i < N; i++) {
		v[i] = i + 1; /* 1 .. N */
		hist_add(&h, v[i]);
	}
	check_percentiles(&h, v, N);
	/* p50 of 1..100000 is 50000; its bucket is [49152, 51199] */
	ck_assert_uint_eq(hist_percentile(&h, 50), 51199);
	free(v);
}
END_TEST

START_TEST(test_random_distributions)
{
	enum { N = 20000 };
	uint64_t *v = malloc(N * sizeof(*v));
	struct hist h;
	int round;
	size_t i;

	ck_assert_ptr_nonnull(v);
	srand(777);
	for (round = 0; round < 6; round++) {
		hist_init(&h);
		for (i = 0; i < N; i++) {
			uint64_t x = ((uint64_t)rand() << 31) ^ (uint64_t)rand();

			switch (round) {
			case 0: /* uniform 0 .. 1 ms */
				x %= 1000000;
				break;
			case 1: /* log-uniform 1 ns .. ~1000 s */
				x = 1 + (x % 1000) * ((1ull << (rand() % 40)) / 1000 + 1);
				break;
			case 2: /* bimodal: timer ticks and rare long preemptions */
				x = (i % 100) ? 2000 + x % 500 : 5000000 + x % 1000000;
				break;
			case 3: /* huge values */
				x = UINT64_MAX - (x % 1000000);
				break;
			case 4: /* all equal */
				x = 1234567;
				break;
			default: /* few distinct small values */
				x %= 40;
				break;
			}
			v[i] = x;
			hist_add(&h, x);
		}
		ck_assert_uint_eq(hist_count(&h), N);
		check_percentiles(&h, v, N);
	}
	free(v);
}
END_TEST

/* ---- merge and iteration ---- */

START_TEST(test_merge)
{
	struct hist a, b, all;
	unsigned i;

	hist_init(&a);
	hist_init(&b);
	hist_init(&all);
	for (i = 0; i < 1000; i++) {
		uint64_t x = (uint64_t)i * i * 37 + 11;

		hist_add(i % 3 ? &a : &b, x);
		hist_add(&all, x);
	}
	hist_merge(&a, &b);
	ck_assert_int_eq(memcmp(&a, &all, sizeof(a)), 0);
	/* merging an empty histogram changes nothing, merging into an empty one copies */
	hist_init(&b);
	hist_merge(&a, &b);
	ck_assert_int_eq(memcmp(&a, &all, sizeof(a)), 0);
	hist_merge(&b, &a);
	ck_assert_int_eq(memcmp(&b, &all, sizeof(b)), 0);
}
END_TEST

START_TEST(test_iterator)
{
	struct hist h;
	struct hist_iter it;
	struct hist_bucket b;
	uint64_t total = 0, prev_upper = 0;
	int n = 0;

	hist_init(&h);
	hist_add(&h, 3);
	hist_add(&h, 3);
	hist_add(&h, 1000);
	hist_add(&h, 1010);
	hist_add(&h, 1000000000ull);
	hist_iter_init(&it, &h);
	while (hist_iter_next(&it, &b)) {
		ck_assert(n == 0 || b.lower_ns > prev_upper);
		ck_assert_uint_le(b.lower_ns, b.upper_ns);
		prev_upper = b.upper_ns;
		total += b.count;
		if (n == 0) {
			ck_assert_uint_eq(b.lower_ns, 3);
			ck_assert_uint_eq(b.upper_ns, 3);
			ck_assert_uint_eq(b.count, 2);
		} else if (n == 1) {
			ck_assert_uint_eq(b.lower_ns, 992);
			ck_assert_uint_eq(b.upper_ns, 1023);
			ck_assert_uint_eq(b.count, 2);
		} else {
			ck_assert_uint_le(b.lower_ns, 1000000000ull);
			ck_assert_uint_ge(b.upper_ns, 1000000000ull);
		}
		n++;
	}
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(total, hist_count(&h));
	ck_assert(!hist_iter_next(&it, &b));
}
END_TEST

static Suite *hist_suite(void)
{
	Suite *s = suite_create("hist");
	TCase *tc;

	tc = tcase_create("geometry");
	tcase_add_test(tc, test_small_values_exact);
	tcase_add_test(tc, test_bucket_widths);
	suite_add_tcase(s, tc);

	tc = tcase_create("statistics");
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_exact_stats);
	tcase_add_test(tc, test_small_set_exact);
	tcase_add_test(tc, test_uniform_ints);
	tcase_add_test(tc, test_random_distributions);
	suite_add_tcase(s, tc);

	tc = tcase_create("merge_iter");
	tcase_add_test(tc, test_merge);
	tcase_add_test(tc, test_iterator);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hist_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
