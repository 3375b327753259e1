/* SPDX-License-Identifier: MIT */
/*
 * dtlreader internals that tests need: the reader's clock (guest CLOCK_MONOTONIC by default), against which
 * it judges times in the future and a frozen heartbeat or horizon, and the limits it judges them by.
 */
#ifndef VNOISE_CHANNEL_DTLREADER_PRIV_H
#define VNOISE_CHANNEL_DTLREADER_PRIV_H

#include <stdint.h>
#include "channel/dtlreader.h"

/* A time more than this beyond the reader's clock (plus the host's stated uncertainty, at most a second more)
 * is in the future: the entry is bad, the status invalid. */
#define DTLREADER_FUTURE_NS 1000000000ull
/* A heartbeat or horizon that does not move for this long of the reader's clock is frozen (counted once). */
#define DTLREADER_FROZEN_NS 2000000000ull

/* Replace the reader's clock (NULL: CLOCK_MONOTONIC again). */
void dtlreader_set_clock(struct dtl_reader *r, uint64_t (*now_ns)(void *ctx), void *ctx);

#endif
