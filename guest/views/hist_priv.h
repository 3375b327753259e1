/* SPDX-License-Identifier: MIT */
/*
 * hist internals that the unit suite needs: the exact extremes and the mean, and the bounds of a value's
 * bucket (the views print percentiles, count and max only).
 */
#ifndef VNOISE_GUEST_VIEWS_HIST_PRIV_H
#define VNOISE_GUEST_VIEWS_HIST_PRIV_H

#include <stdint.h>
#include "views/hist.h"

/* Smallest value (exact; 0 when empty); mean (0 when empty). */
uint64_t hist_min(const struct hist *h);
double hist_mean(const struct hist *h);

/* Lowest and highest value that share v's bucket (bucket width = upper - lower + 1). */
uint64_t hist_lowest_equiv(uint64_t v);
uint64_t hist_highest_equiv(uint64_t v);

#endif
