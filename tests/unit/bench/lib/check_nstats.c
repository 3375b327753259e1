/* SPDX-License-Identifier: MIT */
/*
 * nstats: summaries, Student-t quantiles and the Mann-Whitney comparison (bench/lib/nstats) against known
 * values. Numbers not from a textbook were computed independently in python3 (mpmath for the t quantiles;
 * for U a pairwise count, the exact null by the recursion f(m,n,u) = f(m-1,n,u-n) + f(m,n-1,u) cross-checked
 * by enumerating every split for small sets, and the normal approximation written out from its formula).
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/nstats.h"

/* relative tolerance (absolute near zero): the values are doubles computed in another order */
#define assert_near(got, want, rel)                                       \
	do {                                                              \
		double g_ = (got), w_ = (want);                           \
		ck_assert_msg(fabs(g_ - w_) <= (rel)*fmax(1.0, fabs(w_)), \
			      "%s = %.17g, want %.17g", #got, g_, w_);    \
	} while (0)

static void fill_range(double *x, size_t n, double first)
{
	size_t i;

	for (i = 0; i < n; i++)
		x[i] = first + (double)i;
}

START_TEST(test_summary_1_10)
{
	const double x[10] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	const double shuffled[10] = { 7, 3, 10, 1, 6, 9, 2, 5, 8, 4 };
	double copy[10];
	struct nstats_summary s;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		const double *in = pass ? shuffled : x;

		memcpy(copy, in, sizeof(copy));
		ck_assert_int_eq(nstats_summarize(copy, 10, &s), 0);
		ck_assert_mem_eq(copy, in, sizeof(copy)); /* x is not modified */
		ck_assert_uint_eq(s.n, 10);
		ck_assert(s.min == 1 && s.max == 10);
		assert_near(s.mean, 5.5, 1e-12);
		assert_near(s.sd, 3.0276503540974917, 1e-12);
		assert_near(s.median, 5.5, 1e-12);
		/*
		 * Exact binomial ranks at n = 10 (Le Boudec, Table A.1; python3 math.comb): 95% 2..9
		 * (coverage 1002/1024), 99% 1..10 (1022/1024).
		 */
		ck_assert_int_eq(s.med95_ok, 1);
		ck_assert(s.med95_lo == 2 && s.med95_hi == 9);
		ck_assert_int_eq(s.med99_ok, 1);
		ck_assert(s.med99_lo == 1 && s.med99_hi == 10);
		/* 5.5 -+ t sd / sqrt 10 with t(0.975, 9) = 2.262157 and t(0.995, 9) = 3.249836 */
		ck_assert_int_eq(s.mean_ok, 1);
		assert_near(s.mean95_lo, 3.3341495661992453, 1e-12);
		assert_near(s.mean95_hi, 11 - 3.3341495661992453, 1e-12);
		assert_near(s.mean99_hi, 8.611481082162427, 1e-12);
		assert_near(s.mean99_lo, 11 - 8.611481082162427, 1e-12);
	}
}
END_TEST

START_TEST(test_summary_ranks)
{
	double x[100];
	struct nstats_summary s;

	/* 1-based exact binomial ranks (python3 math.comb): n = 20: 95% 6..15, 99% 4..17 */
	fill_range(x, 20, 1);
	ck_assert_int_eq(nstats_summarize(x, 20, &s), 0);
	ck_assert(s.med95_ok && s.med95_lo == 6 && s.med95_hi == 15);
	ck_assert(s.med99_ok && s.med99_lo == 4 && s.med99_hi == 17);

	/* n = 100: 95% 40..61, 99% 37..64 (the large-n rule agrees) */
	fill_range(x, 100, 1);
	ck_assert_int_eq(nstats_summarize(x, 100, &s), 0);
	ck_assert(s.med95_ok && s.med95_lo == 40 && s.med95_hi == 61);
	ck_assert(s.med99_ok && s.med99_lo == 37 && s.med99_hi == 64);
	assert_near(s.median, 50.5, 1e-12);

	/* n = 11: 95% 2..10, 99% 1..11 */
	fill_range(x, 11, 1);
	ck_assert_int_eq(nstats_summarize(x, 11, &s), 0);
	ck_assert(s.med95_ok && s.med95_lo == 2 && s.med95_hi == 10);
	ck_assert(s.med99_ok && s.med99_lo == 1 && s.med99_hi == 11);

	/* n = 8 is the first with a 99% CI (1..8: 1 - 2/256 >= 0.99), n = 7 has none (1 - 2/128 < 0.99) */
	fill_range(x, 8, 1);
	ck_assert_int_eq(nstats_summarize(x, 8, &s), 0);
	ck_assert(s.med95_ok && s.med95_lo == 1 && s.med95_hi == 8);
	ck_assert(s.med99_ok && s.med99_lo == 1 && s.med99_hi == 8);
	fill_range(x, 7, 1);
	ck_assert_int_eq(nstats_summarize(x, 7, &s), 0);
	ck_assert(s.med95_ok && s.med95_lo == 1 && s.med95_hi == 7);
	ck_assert_int_eq(s.med99_ok, 0);
	/* n = 6 is the first with a 95% CI (1 - 2/64 >= 0.95), n = 5 has none (1 - 2/32 < 0.95) */
	fill_range(x, 6, 1);
	ck_assert_int_eq(nstats_summarize(x, 6, &s), 0);
	ck_assert(s.med95_ok && s.med95_lo == 1 && s.med95_hi == 6);
	fill_range(x, 5, 1);
	ck_assert_int_eq(nstats_summarize(x, 5, &s), 0);
	ck_assert_int_eq(s.med95_ok, 0);
	/* beyond 1000 samples the large-n rule: n = 1001, 95% floor((1001 - 1.959964 sqrt 1001) / 2) = 469 */
	{
		static double big[1001];

		fill_range(big, 1001, 1);
		ck_assert_int_eq(nstats_summarize(big, 1001, &s), 0);
		ck_assert(s.med95_ok && s.med95_lo == 469 && s.med95_hi == 533);
	}
}
END_TEST

START_TEST(test_summary_small)
{
	const double five[5] = { 4.0, -1.0, 2.5, 9.0, 3.0 };
	const double one[1] = { 42.0 };
	struct nstats_summary s;

	ck_assert_int_eq(nstats_summarize(five, 5, &s), 0);
	ck_assert(s.min == -1.0 && s.max == 9.0);
	assert_near(s.median, 3.0, 1e-12); /* odd n: the middle value */
	assert_near(s.mean, 3.5, 1e-12);
	/* squared deviations 0.25 20.25 1 30.25 0.25: 52 over n - 1 = 4 */
	assert_near(s.sd, sqrt(13.0), 1e-12);
	ck_assert_int_eq(s.med95_ok, 0);
	ck_assert_int_eq(s.med99_ok, 0);
	ck_assert(s.med95_lo == -1.0 && s.med95_hi == 9.0);
	ck_assert_int_eq(s.mean_ok, 1);

	ck_assert_int_eq(nstats_summarize(one, 1, &s), 0);
	ck_assert(s.min == 42 && s.max == 42 && s.mean == 42 && s.median == 42);
	ck_assert(s.sd == 0);
	ck_assert_int_eq(s.mean_ok, 0);
	ck_assert_int_eq(s.med95_ok, 0);
}
END_TEST

START_TEST(test_summary_errors)
{
	static double big[NSTATS_MAX + 1];
	struct nstats_summary s;

	ck_assert_int_eq(nstats_summarize(big, 0, &s), -1);
	ck_assert_int_eq(nstats_summarize(big, NSTATS_MAX + 1, &s), -1);
	ck_assert_int_eq(nstats_summarize(big, NSTATS_MAX, &s), 0); /* the limit itself is fine */
	ck_assert(s.sd == 0 && s.med95_ok && s.med99_ok);
}
END_TEST

START_TEST(test_t_quantile)
{
	/* table values (mpmath, from the t CDF) */
	assert_near(nstats_t_quantile(0.05, 1), 12.706205, 1e-9);
	assert_near(nstats_t_quantile(0.05, 5), 2.570582, 1e-9);
	assert_near(nstats_t_quantile(0.01, 10), 3.169273, 1e-9);
	assert_near(nstats_t_quantile(0.05, 30), 2.042272, 1e-9);
	assert_near(nstats_t_quantile(0.01, 1), 63.656741, 1e-9);
	assert_near(nstats_t_quantile(0.01, 30), 2.749996, 1e-9);
	assert_near(nstats_t_quantile(0.05, 40), 2.021075, 1e-9);
	assert_near(nstats_t_quantile(0.05, 60), 2.000298, 1e-9);
	assert_near(nstats_t_quantile(0.01, 120), 2.617421, 1e-9);
	/* linear in 1/df: 35 between 30 and 40, 240 halfway from 120 to infinity */
	assert_near(nstats_t_quantile(0.05, 35), 2.030159428571429, 1e-9);
	assert_near(nstats_t_quantile(0.05, 240), 1.969947, 1e-9);
	/* the exact t(0.975, 35) is 2.030108: the interpolation is within 1e-4 */
	assert_near(nstats_t_quantile(0.05, 35), 2.030108, 1e-4);
	assert_near(nstats_t_quantile(0.05, 1000000), 1.959964, 1e-5);
	assert_near(nstats_t_quantile(0.01, 1000000), 2.575829, 1e-5);
	ck_assert(nstats_t_quantile(0.05, 0) == -1.0);
	ck_assert(nstats_t_quantile(0.10, 5) == -1.0);
}
END_TEST

START_TEST(test_mw_exact_textbook)
{
	const double a[5] = { 1, 2, 3, 4, 5 }, b[5] = { 6, 7, 8, 9, 10 };
	struct nstats_cmp c;

	/* every b above every a: U = 25, the one arrangement in C(10, 5) = 252 */
	ck_assert_int_eq(nstats_compare(a, 5, b, 5, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 1);
	assert_near(c.u, 25, 1e-12);
	assert_near(c.p_greater, 1.0 / 252, 1e-12);
	assert_near(c.p_two, 2.0 / 252, 1e-12);
	ck_assert(c.z == 0);

	/* the other way round: U = 0, b is not larger */
	ck_assert_int_eq(nstats_compare(b, 5, a, 5, 0.05, &c), 0);
	assert_near(c.u, 0, 1e-12);
	assert_near(c.p_greater, 1.0, 1e-12);
	assert_near(c.p_two, 2.0 / 252, 1e-12);
}
END_TEST

START_TEST(test_mw_exact_values)
{
	const double a5[5] = { 1, 3, 5, 7, 9 }, b5[5] = { 2, 4, 6, 8, 10 };
	const double a6[6] = { 2.5, 1.1, 4.0, 3.2, 0.7, 5.9 };
	const double b7[7] = { 6.1, 3.3, 7.4, 5.0, 8.8, 4.2, 9.5 };
	double a20[20], b20[20];
	struct nstats_cmp c;
	int i;

	/* interleaved: U = 15, P(U >= 15) = 29/84 (recursion and enumeration agree) */
	ck_assert_int_eq(nstats_compare(a5, 5, b5, 5, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 1);
	assert_near(c.u, 15, 1e-12);
	assert_near(c.p_greater, 29.0 / 84, 1e-12);
	assert_near(c.p_two, 58.0 / 84, 1e-12);

	/* unequal sizes, unsorted input: U = 38, P(U >= 38) = 1/143 */
	ck_assert_int_eq(nstats_compare(a6, 6, b7, 7, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 1);
	assert_near(c.u, 38, 1e-12);
	assert_near(c.p_greater, 1.0 / 143, 1e-12);
	assert_near(c.p_two, 2.0 / 143, 1e-12);

	/* the largest exact case, 20 and 20: a = 0, 2, ..., 38, b = a + 3; U = 229 */
	for (i = 0; i < 20; i++) {
		a20[i] = 2 * i;
		b20[i] = 2 * i + 3;
	}
	ck_assert_int_eq(nstats_compare(a20, 20, b20, 20, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 1);
	assert_near(c.u, 229, 1e-12);
	assert_near(c.p_greater, 0.2224820124201079, 1e-9);
	assert_near(c.p_two, 0.4449640248402158, 1e-9);
}
END_TEST

START_TEST(test_mw_ties)
{
	const double a[7] = { 1, 2, 2, 3, 4, 4, 5 }, b[8] = { 3, 4, 4, 5, 6, 6, 7, 8 };
	const double same[3] = { 1, 2, 3 };
	struct nstats_cmp c;

	/*
	 * Ties force the normal approximation: U = 48 (pairwise count), mean 28, variance
	 * 56 / 12 (16 - 84 / 210) = 72.8 with tie groups 2, 2, 4, 2, 2 (the 2s, 3s, 4s, 5s, 6s), and
	 * z = (48 - 28 - 0.5) / sqrt 72.8.
	 */
	ck_assert_int_eq(nstats_compare(a, 7, b, 8, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 0);
	assert_near(c.u, 48, 1e-12);
	assert_near(c.z, 2.285435250825165, 1e-9);
	assert_near(c.p_greater, 0.011143659507276523, 1e-9);
	assert_near(c.p_two, 0.022287319014553046, 1e-9);

	/* identical sets: U on its mean, no evidence */
	ck_assert_int_eq(nstats_compare(same, 3, same, 3, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 0);
	assert_near(c.u, 4.5, 1e-12);
	ck_assert(c.z == 0);
	assert_near(c.p_two, 1.0, 1e-12);
	assert_near(c.p_greater, 0.5902615116112394, 1e-9);

	/* all values equal: zero variance, p = 1 rather than a division by zero */
	ck_assert_int_eq(nstats_compare(same, 1, same, 1, 0.05, &c), 0);
	assert_near(c.u, 0.5, 1e-12);
	ck_assert(c.p_greater == 1 && c.p_two == 1 && c.z == 0);
	ck_assert_int_eq(c.detected, 0);
}
END_TEST

START_TEST(test_mw_normal)
{
	double a[30], b[25];
	struct nstats_cmp c;

	/* 25 and 25 without ties, b shifted by 4.5: U = 415 */
	fill_range(a, 25, 0);
	fill_range(b, 25, 4.5);
	ck_assert_int_eq(nstats_compare(a, 25, b, 25, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 0);
	assert_near(c.u, 415, 1e-12);
	assert_near(c.z, 1.979090700296477, 1e-9);
	assert_near(c.p_greater, 0.023902897665490322, 1e-9);
	assert_near(c.p_two, 0.047805795330980644, 1e-9);

	/* 30 and 5, b (5..9, tied with a) low in a's range: U = 37.5 below its mean 75 */
	fill_range(a, 30, 0);
	fill_range(b, 5, 5);
	ck_assert_int_eq(nstats_compare(a, 30, b, 5, 0.05, &c), 0);
	ck_assert_int_eq(c.exact, 0);
	assert_near(c.u, 37.5, 1e-12);
	assert_near(c.z, -1.7448077610064925, 1e-9);
	assert_near(c.p_greater, 0.9634306918372771, 1e-9);
	assert_near(c.p_two, 0.08101833741439626, 1e-9);
}
END_TEST

START_TEST(test_compare_verdicts)
{
	double a[30], b[30];
	const double a5[5] = { 1, 2, 3, 4, 5 }, b5[5] = { 6, 7, 8, 9, 10 };
	struct nstats_cmp c;
	int i;

	/* clearly shifted: the 95% median CIs (ranks 10..21) are 9..20 and 24.5..35.5 */
	fill_range(a, 30, 0);
	fill_range(b, 30, 15.5);
	ck_assert_int_eq(nstats_compare(a, 30, b, 30, 0.05, &c), 0);
	assert_near(c.p_greater, 1.7600288130340046e-07, 1e-6);
	ck_assert_int_eq(c.med95_disjoint, 1);
	ck_assert_int_eq(c.mean99_disjoint, 1);
	ck_assert_int_eq(c.detected, 1);
	/* the same shift seen the other way is no detection */
	ck_assert_int_eq(nstats_compare(b, 30, a, 30, 0.05, &c), 0);
	ck_assert_int_eq(c.med95_disjoint, 0);
	ck_assert_int_eq(c.detected, 0);

	/* p = 0.0052 is significant, but the median CIs 8..21 and 14.5..27.5 overlap: no detection */
	fill_range(b, 30, 6.5);
	ck_assert_int_eq(nstats_compare(a, 30, b, 30, 0.05, &c), 0);
	assert_near(c.p_greater, 0.005157336201168998, 1e-9);
	ck_assert_int_eq(c.med95_disjoint, 0);
	ck_assert_int_eq(c.mean99_disjoint, 0);
	ck_assert_int_eq(c.detected, 0);

	/* overlapping sets, scrambled order */
	for (i = 0; i < 30; i++) {
		a[i] = (i * 7) % 30;
		b[i] = (i * 11) % 30 + 0.5;
	}
	ck_assert_int_eq(nstats_compare(a, 30, b, 30, 0.05, &c), 0);
	ck_assert(c.p_greater > 0.05);
	ck_assert_int_eq(c.med95_disjoint, 0);
	ck_assert_int_eq(c.detected, 0);

	/* n = 5: p = 1/252 but a 95% median CI needs n >= 8, so the verdict must stay 0 */
	ck_assert_int_eq(nstats_compare(a5, 5, b5, 5, 0.05, &c), 0);
	ck_assert(c.p_greater < 0.05);
	ck_assert_int_eq(c.med95_disjoint, 0);
	ck_assert_int_eq(c.mean99_disjoint,
			 0); /* 99% t CIs 3 -+ 3.26 and 8 -+ 3.26 still overlap */
	ck_assert_int_eq(c.detected, 0);
}
END_TEST

START_TEST(test_compare_errors)
{
	static double big[NSTATS_MAX + 1];
	const double x[3] = { 1, 2, 3 };
	struct nstats_cmp c;

	ck_assert_int_eq(nstats_compare(x, 0, x, 3, 0.05, &c), -1);
	ck_assert_int_eq(nstats_compare(x, 3, x, 0, 0.05, &c), -1);
	ck_assert_int_eq(nstats_compare(big, NSTATS_MAX + 1, x, 3, 0.05, &c), -1);
	ck_assert_int_eq(nstats_compare(x, 3, big, NSTATS_MAX + 1, 0.05, &c), -1);
	/* both sets at the limit: all ties, a well-defined "nothing" */
	ck_assert_int_eq(nstats_compare(big, NSTATS_MAX, big, NSTATS_MAX, 0.05, &c), 0);
	ck_assert(c.p_two == 1 && c.detected == 0);
}
END_TEST

static Suite *nstats_suite(void)
{
	Suite *s = suite_create("nstats");
	TCase *sum = tcase_create("summary");
	TCase *t = tcase_create("t");
	TCase *mw = tcase_create("mannwhitney");
	TCase *cmp = tcase_create("compare");

	tcase_add_test(sum, test_summary_1_10);
	tcase_add_test(sum, test_summary_ranks);
	tcase_add_test(sum, test_summary_small);
	tcase_add_test(sum, test_summary_errors);
	tcase_add_test(t, test_t_quantile);
	tcase_add_test(mw, test_mw_exact_textbook);
	tcase_add_test(mw, test_mw_exact_values);
	tcase_add_test(mw, test_mw_ties);
	tcase_add_test(mw, test_mw_normal);
	tcase_add_test(cmp, test_compare_verdicts);
	tcase_add_test(cmp, test_compare_errors);
	suite_add_tcase(s, sum);
	suite_add_tcase(s, t);
	suite_add_tcase(s, mw);
	suite_add_tcase(s, cmp);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(nstats_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
