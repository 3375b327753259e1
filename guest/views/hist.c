/* SPDX-License-Identifier: MIT */
/*
 * hist: log-linear histogram. Bucket i < 32 holds the value i. Above, with shift = floor(log2 v) - 4,
 * a value v lands in bucket shift * 16 + (v >> shift), whose values are [(v >> shift) << shift, that +
 * 2^shift - 1]: the top 5 significant bits select the bucket, the rest is the (bounded) error.
 */
#include <math.h>
#include <string.h>
#include "views/hist.h"
#include "views/hist_priv.h"

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

/* Lowest value of bucket idx. */
static uint64_t bucket_lower(unsigned idx)
{
	unsigned shift;

	if (idx < 2 * HIST_SUB)
		return idx;
	shift = idx / HIST_SUB - 1;
	return (uint64_t)(idx - shift * HIST_SUB) << shift;
}

static uint64_t bucket_upper(unsigned idx)
{
	unsigned shift;

	if (idx < 2 * HIST_SUB)
		return idx;
	shift = idx / HIST_SUB - 1;
	return bucket_lower(idx) + ((1ull << shift) - 1);
}

void hist_coarse_bounds(uint64_t v, unsigned per_octave, uint64_t *lo, uint64_t *hi)
{
	unsigned idx = hist_index(v), g, base;

	if (per_octave < 1 || per_octave > HIST_SUB || HIST_SUB % per_octave)
		per_octave = HIST_SUB;
	if (idx < 2 * HIST_SUB) {
		*lo = *hi = idx;
		return;
	}
	g = HIST_SUB / per_octave;
	base = 2 * HIST_SUB + (idx - 2 * HIST_SUB) / g * g;
	*lo = bucket_lower(base);
	*hi = bucket_upper(base + g - 1);
}

uint64_t hist_lowest_equiv(uint64_t v)
{
	return bucket_lower(hist_index(v));
}

uint64_t hist_highest_equiv(uint64_t v)
{
	return bucket_upper(hist_index(v));
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	unsigned i;

	if (!src->count)
		return;
	for (i = 0; i < HIST_NBUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	if (!dst->count || src->min_ns < dst->min_ns)
		dst->min_ns = src->min_ns;
	dst->count += src->count;
	dst->sum_ns += src->sum_ns;
	if (src->max_ns > dst->max_ns)
		dst->max_ns = src->max_ns;
}

uint64_t hist_count(const struct hist *h)
{
	return h->count;
}

uint64_t hist_min(const struct hist *h)
{
	return h->min_ns;
}

uint64_t hist_max(const struct hist *h)
{
	return h->max_ns;
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum_ns / (double)h->count : 0.0;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0;
	double x;
	unsigned i;

	if (!h->count)
		return 0;
	if (!(p > 0.0)) /* also NaN */
		return h->min_ns;
	if (p >= 100.0)
		return h->max_ns;
	/* the small epsilon keeps e.g. 99.9 % of 1000 at rank 999 despite rounding */
	x = ceil(p / 100.0 * (double)h->count - 1e-9);
	rank = x < 1.0 ? 1 : (uint64_t)x;
	if (rank > h->count)
		rank = h->count;
	for (i = 0; i < HIST_NBUCKETS; i++) {
		seen += h->buckets[i];
		if (seen >= rank) {
			uint64_t v = bucket_upper(i);

			if (v > h->max_ns)
				v = h->max_ns;
			if (v < h->min_ns)
				v = h->min_ns;
			return v;
		}
	}
	return h->max_ns; /* not reached: buckets add up to count */
}

void hist_iter_init(struct hist_iter *it, const struct hist *h)
{
	it->h = h;
	it->idx = 0;
}

bool hist_iter_next(struct hist_iter *it, struct hist_bucket *out)
{
	while (it->idx < HIST_NBUCKETS) {
		unsigned i = it->idx++;

		if (!it->h->buckets[i])
			continue;
		out->lower_ns = bucket_lower(i);
		out->upper_ns = bucket_upper(i);
		out->count = it->h->buckets[i];
		return true;
	}
	return false;
}
