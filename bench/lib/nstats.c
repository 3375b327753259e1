/* SPDX-License-Identifier: MIT */
/*
 * nstats: summaries and two-set comparisons of a noise detector's runs after Hoefler & Belli (SC '15).
 * Everything works on sorted stack copies of the caller's samples (at most NSTATS_MAX each, 32 KiB), so
 * there is no allocation and no global state: the functions are reentrant and thread-safe, but
 * nstats_compare() needs about 64 KiB of stack, which matters only on small thread stacks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/nstats.h"

#define NSTATS_Z95 1.959964
#define NSTATS_Z99 2.575829
#define NSTATS_SQRT2 1.41421356237309504880 /* M_SQRT2 is not ISO C */

/* Exact Mann-Whitney null distribution up to this size per set; beyond it the normal approximation is good */
#define NSTATS_EXACT_MAX 20

/*
 * Total order for qsort: NaNs sort last instead of breaking the comparator's consistency (which would be
 * undefined behaviour in qsort). They then poison the mean and sd, which is the honest result.
 */
static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	if (isnan(a) || isnan(b))
		return !!isnan(a) - !!isnan(b);
	return (a > b) - (a < b);
}

/* Two-sided Student-t quantiles, df 1..30 then 40, 60, 120 (computed to 6 places from the t CDF) */
static const double t95_tab[30] = {
	12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
	2.262157,  2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
	2.109816,  2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
	2.059539,  2.055529, 2.051831, 2.048407, 2.045230, 2.042272,
};
static const double t99_tab[30] = {
	63.656741, 9.924843, 5.840909, 4.604095, 4.032143, 3.707428, 3.499483, 3.355387,
	3.249836,  3.169273, 3.105807, 3.054540, 3.012276, 2.976843, 2.946713, 2.920782,
	2.898231,  2.878440, 2.860935, 2.845340, 2.831360, 2.818756, 2.807336, 2.796940,
	2.787436,  2.778715, 2.770683, 2.763262, 2.756386, 2.749996,
};
static const double t_big_df[3] = { 40, 60, 120 };
static const double t95_big[3] = { 2.021075, 2.000298, 1.979930 };
static const double t99_big[3] = { 2.704459, 2.660283, 2.617421 };

double nstats_t_quantile(double alpha, size_t df)
{
	const double *tab, *big;
	double z, x0, x1, y0, y1, x;
	size_t i;

	if (fabs(alpha - 0.05) < 1e-12) {
		tab = t95_tab;
		big = t95_big;
		z = NSTATS_Z95;
	} else if (fabs(alpha - 0.01) < 1e-12) {
		tab = t99_tab;
		big = t99_big;
		z = NSTATS_Z99;
	} else {
		return -1.0;
	}
	if (df == 0)
		return -1.0;
	if (df <= 30)
		return tab[df - 1];

	/* t is nearly linear in 1/df for large df, so interpolate in x = 1/df; infinity is x = 0, t = z */
	x = 1.0 / (double)df;
	x0 = 1.0 / 30;
	y0 = tab[29];
	for (i = 0; i < 3 && (double)df > t_big_df[i]; i++) {
		x0 = 1.0 / t_big_df[i];
		y0 = big[i];
	}
	if (i < 3) {
		x1 = 1.0 / t_big_df[i];
		y1 = big[i];
	} else {
		x1 = 0;
		y1 = z;
	}
	return y0 + (y1 - y0) * (x0 - x) / (x0 - x1);
}

/*
 * 1-based rank j of the lower end of the median's CI at level 1 - alpha: the largest j with
 * P(Binomial(n, 1/2) <= j - 1) <= alpha / 2 (Le Boudec, "Performance Evaluation of Computer and
 * Communication Systems", Table A.1; the upper end is n + 1 - j). Exact up to NSTATS_EXACT_CI samples (the
 * large-n rule floor((n - z sqrt n) / 2) makes small sets' intervals wider than they are); beyond, the
 * normal rule. 0: no interval at this level (too few samples).
 */
#define NSTATS_EXACT_CI 1000
static size_t median_rank(size_t n, double alpha, double z)
{
	double cdf = 0, lfact_n = lgamma((double)n + 1);
	size_t j;

	if (n > NSTATS_EXACT_CI) {
		double r = floor(((double)n - z * sqrt((double)n)) / 2);

		return r >= 1 ? (size_t)r : 0;
	}
	for (j = 0; j < n; j++) {
		/* cdf = P(X <= j) */
		cdf += exp(lfact_n - lgamma((double)j + 1) - lgamma((double)(n - j) + 1) -
			   (double)n * M_LN2);
		if (cdf > alpha / 2)
			break;
	}
	return j; /* P(X <= j - 1) <= alpha / 2 < P(X <= j): rank j */
}

/* Median CI at level 1 - alpha from the sorted x: ok only when there is one, else min/max as a placeholder. */
static void median_ci(const double *x, size_t n, double alpha, double z, double *lo, double *hi,
		      int *ok)
{
	size_t j = median_rank(n, alpha, z);

	if (j >= 1 && n + 1 - j >= j) {
		*lo = x[j - 1];
		*hi = x[n - j];
		*ok = 1;
	} else {
		*lo = x[0];
		*hi = x[n - 1];
		*ok = 0;
	}
}

/* The summary of already sorted samples x[0..n-1], n >= 1 */
static void summarize_sorted(const double *x, size_t n, struct nstats_summary *s)
{
	double sum = 0, ss = 0, h95, h99;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->n = n;
	s->min = x[0];
	s->max = x[n - 1];
	for (i = 0; i < n; i++)
		sum += x[i];
	s->mean = sum / (double)n;
	/* two passes: the one-pass sum of squares cancels badly when the spread is small against the mean */
	for (i = 0; i < n; i++)
		ss += (x[i] - s->mean) * (x[i] - s->mean);
	s->sd = n >= 2 ? sqrt(ss / (double)(n - 1)) : 0;
	s->median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;

	median_ci(x, n, 0.05, NSTATS_Z95, &s->med95_lo, &s->med95_hi, &s->med95_ok);
	median_ci(x, n, 0.01, NSTATS_Z99, &s->med99_lo, &s->med99_hi, &s->med99_ok);

	s->mean_ok = n >= 2;
	if (!s->mean_ok) {
		s->mean95_lo = s->mean95_hi = s->mean99_lo = s->mean99_hi = s->mean;
		return;
	}
	h95 = nstats_t_quantile(0.05, n - 1) * s->sd / sqrt((double)n);
	h99 = nstats_t_quantile(0.01, n - 1) * s->sd / sqrt((double)n);
	s->mean95_lo = s->mean - h95;
	s->mean95_hi = s->mean + h95;
	s->mean99_lo = s->mean - h99;
	s->mean99_hi = s->mean + h99;
}

int nstats_summarize(const double *x, size_t n, struct nstats_summary *s)
{
	double sorted[NSTATS_MAX];

	if (!x || !s || n == 0 || n > NSTATS_MAX)
		return -1;
	memcpy(sorted, x, n * sizeof(*x));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	summarize_sorted(sorted, n, s);
	return 0;
}

/*
 * P(U >= u) and P(U <= u) under the null for sizes m, n (m, n <= NSTATS_EXACT_MAX, u an integer).
 * The number of arrangements with U = k, f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k), is the
 * coefficient of q^k in the Gaussian binomial [m + n choose n]_q; the recursion in n,
 * [m + j choose j] = [m + j - 1 choose j - 1] (1 - q^(m + j)) / (1 - q^j), needs a single array.
 * The counts are integers below C(40, 20) ~ 1.4e11, exact in a double.
 */
static void mw_exact(size_t m, size_t n, double u, double *p_ge, double *p_le)
{
	/* the product before a division has degree m (j - 1) + m + j = (m + 1) j <= (m + 1) n */
	double c[(NSTATS_EXACT_MAX + 1) * NSTATS_EXACT_MAX + 1];
	size_t deg = 0, j, k, a;
	double total = 0, ge = 0, le = 0;

	memset(c, 0, sizeof(c));
	c[0] = 1;
	for (j = 1; j <= n; j++) {
		a = m + j;
		/* times (1 - q^a), descending so each c[k - a] is still the old value */
		for (k = deg + a; k >= a; k--)
			c[k] -= c[k - a];
		deg += a;
		/* divided by (1 - q^j): the exact quotient's c[k] = c[k] + quotient c[k - j], ascending */
		for (k = j; k <= deg; k++)
			c[k] += c[k - j];
		deg = m * j;
	}
	for (k = 0; k <= m * n; k++) {
		total += c[k];
		if ((double)k >= u)
			ge += c[k];
		if ((double)k <= u)
			le += c[k];
	}
	*p_ge = ge / total;
	*p_le = le / total;
}

int nstats_compare(const double *a, size_t na, const double *b, size_t nb, double alpha,
		   struct nstats_cmp *c)
{
	double sa[NSTATS_MAX], sb[NSTATS_MAX];
	struct nstats_summary s_a, s_b;
	double u = 0, ties = 0, p_ge, p_le;
	size_t i = 0, j = 0;

	if (!a || !b || !c || na == 0 || nb == 0 || na > NSTATS_MAX || nb > NSTATS_MAX)
		return -1;
	memset(c, 0, sizeof(*c));
	memcpy(sa, a, na * sizeof(*a));
	memcpy(sb, b, nb * sizeof(*b));
	qsort(sa, na, sizeof(*sa), cmp_double);
	qsort(sb, nb, sizeof(*sb), cmp_double);
	summarize_sorted(sa, na, &s_a);
	summarize_sorted(sb, nb, &s_b);

	/*
	 * U by one merge of the sorted sets, group of equal values by group: every b at value v beats the a
	 * below v (i of them) and ties with the ca at v. The same walk collects the tie sizes t for the
	 * variance correction, over the pooled sample (a tie inside one set counts too: ranks are pooled).
	 */
	while (i < na || j < nb) {
		double v;
		size_t ca = 0, cb = 0, t;

		if (j >= nb || (i < na && cmp_double(&sa[i], &sb[j]) < 0))
			v = sa[i];
		else
			v = sb[j];
		while (i + ca < na && cmp_double(&sa[i + ca], &v) == 0)
			ca++;
		while (j + cb < nb && cmp_double(&sb[j + cb], &v) == 0)
			cb++;
		u += (double)cb * ((double)i + 0.5 * (double)ca);
		t = ca + cb;
		ties += (double)t * (double)t * (double)t - (double)t;
		i += ca;
		j += cb;
	}
	c->u = u;

	if (ties == 0 && na <= NSTATS_EXACT_MAX && nb <= NSTATS_EXACT_MAX) {
		mw_exact(na, nb, u, &p_ge, &p_le);
		c->exact = 1;
	} else {
		double nn = (double)(na + nb), mu = (double)na * (double)nb / 2;
		double var = (double)na * (double)nb / 12 * ((nn + 1) - ties / (nn * (nn - 1)));
		double d = u - mu;

		if (var <= 0) {
			/* every value equal: U sits on its mean, no evidence either way */
			p_ge = p_le = 1;
		} else {
			double sd = sqrt(var);

			/* continuity correction: half a step toward the mean for each tail */
			p_ge = 0.5 * erfc((d - 0.5) / (sd * NSTATS_SQRT2));
			p_le = 0.5 * erfc(-(d + 0.5) / (sd * NSTATS_SQRT2));
			c->z = (d > 0.5 ? d - 0.5 : d < -0.5 ? d + 0.5 : 0) / sd;
		}
	}
	c->p_greater = p_ge;
	c->p_two = fmin(1, 2 * fmin(p_ge, p_le));

	c->med95_disjoint = s_a.med95_ok && s_b.med95_ok && s_b.med95_lo > s_a.med95_hi;
	c->mean99_disjoint = s_a.mean_ok && s_b.mean_ok && s_b.mean99_lo > s_a.mean99_hi;
	c->detected = c->p_greater < alpha && c->med95_disjoint;
	return 0;
}
