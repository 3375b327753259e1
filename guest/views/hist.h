/* SPDX-License-Identifier: MIT */
/*
 * hist: fixed-memory log-linear histogram of durations in nanoseconds (HDR-histogram style). Values below
 * 32 ns have a bucket each; above, every power of two [2^e, 2^(e+1)) is split into 16 equal sub-buckets,
 * so a bucket is never wider than 1/16 of its lower bound (relative error <= 6.25 %) over the whole
 * uint64_t range (1 ns .. 584 years; 1000 s is bucket ~590 of 976). min, max, count and sum are exact.
 * No allocation, no locks: hist_add() is a few instructions and safe for a hot path owned by one thread;
 * merge per-thread histograms for reporting.
 */
#ifndef VNOISE_GUEST_VIEWS_HIST_H
#define VNOISE_GUEST_VIEWS_HIST_H

#include <stdbool.h>
#include <stdint.h>

#define HIST_SUB_BITS 4 /* 16 sub-buckets per power of two */
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_NBUCKETS ((64 - HIST_SUB_BITS) * HIST_SUB + HIST_SUB) /* 976 */

struct hist {
	uint64_t count;
	uint64_t sum_ns; /* wraps after 584 years of total duration */
	uint64_t min_ns; /* 0 while empty */
	uint64_t max_ns;
	uint64_t buckets[HIST_NBUCKETS];
};

/* A non-empty bucket: every value in [lower_ns, upper_ns] (both inclusive) was counted in it. */
struct hist_bucket {
	uint64_t lower_ns;
	uint64_t upper_ns;
	uint64_t count;
};

/* Iterator over non-empty buckets in increasing order; plain value, no cleanup. */
struct hist_iter {
	const struct hist *h;
	unsigned idx;
};

/* Empty h (also the way to reset it). A zero-filled struct hist is a valid empty histogram too. */
void hist_init(struct hist *h);

/* Bucket index of a value: 0 .. HIST_NBUCKETS-1. */
static inline unsigned hist_index(uint64_t v)
{
	unsigned shift;

	if (v < 2 * HIST_SUB)
		return (unsigned)v;
	shift = (unsigned)(63 - __builtin_clzll(v)) - HIST_SUB_BITS;
	return shift * HIST_SUB + (unsigned)(v >> shift);
}

/* Count one value. */
static inline void hist_add(struct hist *h, uint64_t ns)
{
	h->buckets[hist_index(ns)]++;
	h->count++;
	h->sum_ns += ns;
	if (ns < h->min_ns || h->count == 1)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

/* Add every value counted in src to dst (src unchanged). */
void hist_merge(struct hist *dst, const struct hist *src);

/* Number of values; largest value (exact; 0 when empty). */
uint64_t hist_count(const struct hist *h);
uint64_t hist_max(const struct hist *h);

/*
 * The p-th percentile, p in [0, 100] (clamped), of the values counted: the order statistic of rank
 * ceil(p/100 * count) (at least 1), reported as the highest value of its bucket, clamped to [min, max].
 * So the result is never below the exact value and exceeds it by less than one bucket width; p = 0 gives
 * min and p = 100 gives max exactly. 0 when empty.
 */
uint64_t hist_percentile(const struct hist *h, double p);

/*
 * A coarser view of the same buckets: per_octave rows per power of two (1, 2, 4, 8 or 16; else 16), each
 * HIST_SUB / per_octave sub-buckets whole; [lo, hi] (inclusive) of the row that holds v (below 32 ns: v).
 */
void hist_coarse_bounds(uint64_t v, unsigned per_octave, uint64_t *lo, uint64_t *hi);

/* Start iterating h's non-empty buckets; hist_iter_next() returns false after the last one. */
void hist_iter_init(struct hist_iter *it, const struct hist *h);
bool hist_iter_next(struct hist_iter *it, struct hist_bucket *out);

#endif
