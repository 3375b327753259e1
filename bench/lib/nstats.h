/* SPDX-License-Identifier: MIT */
/*
 * nstats: the statistics of a noise detector's runs after Hoefler & Belli, "Scientific benchmarking of
 * parallel computing systems" (SC '15), as seed 003 uses them: median with nonparametric confidence intervals,
 * mean with Student-t confidence intervals and standard deviation, and the comparison of two sets of runs
 * (baseline vs injected) with the Wilcoxon-Mann-Whitney rank-sum test and confidence-interval overlap.
 * Pure C, no allocation beyond the caller's scratch; every function is unit-tested against known values.
 */
#ifndef VNOISE_BENCH_LIB_NSTATS_H
#define VNOISE_BENCH_LIB_NSTATS_H

#include <stddef.h>

#define NSTATS_MAX 4096 /* samples per set */

struct nstats_summary {
	size_t n;
	double min, max;
	double mean;
	double sd; /* sample standard deviation (n - 1); 0 when n < 2 */
	double median;
	/*
	 * Nonparametric CIs of the median (Le Boudec; Hoefler & Belli rule 5): the sorted samples at 1-based
	 * ranks j and n + 1 - j, j the largest with P(Binomial(n, 1/2) < j) <= alpha / 2 (exact up to 1000
	 * samples, then floor((n - z sqrt(n)) / 2)). ok = 0 when n is too small for the level (n < 6 at 95%,
	 * n < 8 at 99%): then lo/hi are min/max and must not be used for a verdict.
	 */
	double med95_lo, med95_hi;
	int med95_ok;
	double med99_lo, med99_hi;
	int med99_ok;
	/* CIs of the mean: mean -+ t(n-1) sd / sqrt(n) (two-sided); ok = 0 when n < 2 */
	double mean95_lo, mean95_hi;
	double mean99_lo, mean99_hi;
	int mean_ok;
};

/* Summary of x[0..n-1] (x is not modified). Returns 0, or -1 when n is 0 or above NSTATS_MAX. */
int nstats_summarize(const double *x, size_t n, struct nstats_summary *s);

/* Two-sided Student-t quantile t(1 - alpha/2, df) for alpha 0.05 or 0.01 (other alphas: -1.0). */
double nstats_t_quantile(double alpha, size_t df);

struct nstats_cmp {
	double
	    u; /* Mann-Whitney U of b (the injected set) over a: the number of pairs (a_i, b_j) with b_j > a_i,
		     ties counting one half */
	double z; /* normal approximation, tie- and continuity-corrected (0 when exact) */
	double p_greater; /* one-sided p of "b is larger than a" */
	double p_two; /* two-sided p */
	int exact; /* p from the exact distribution (no ties and na, nb <= 20), else normal approximation */
	int med95_disjoint; /* both 95% median CIs usable and b's lies entirely above a's */
	int mean99_disjoint; /* both 99% mean CIs usable and b's lies entirely above a's (seed 003's criterion) */
	int detected; /* p_greater < alpha and med95_disjoint */
};

/*
 * Compare a (baseline) with b (injected): rank-sum test and CI overlap; alpha is the test's level (0.05).
 * Returns 0, or -1 when a set is empty or too large.
 */
int nstats_compare(const double *a, size_t na, const double *b, size_t nb, double alpha,
		   struct nstats_cmp *c);

#endif
