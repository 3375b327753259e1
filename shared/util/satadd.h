/* SPDX-License-Identifier: MIT */
/*
 * satadd: unsigned sums that stop at UINT64_MAX instead of wrapping, for figures that add up what a hostile
 * or broken peer sends (a counter that wrapped would go backwards; one copy, inlined).
 */
#ifndef VNOISE_UTIL_SATADD_H
#define VNOISE_UTIL_SATADD_H

#include <stdint.h>

static inline uint64_t sat_add64(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* *c += n, saturating. */
static inline void sat_inc64(uint64_t *c, uint64_t n)
{
	*c = sat_add64(*c, n);
}

#endif
