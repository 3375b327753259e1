/* SPDX-License-Identifier: MIT */
/*
 * clocksync internals that the unit suite needs: the names of the verdicts.
 */
#ifndef VNOISE_HOST_MATCH_CLOCKSYNC_PRIV_H
#define VNOISE_HOST_MATCH_CLOCKSYNC_PRIV_H

#include "match/clocksync.h"

/* "used", "accepted", ... ("?" out of range). */
const char *clocksync_verdict_name(enum clocksync_verdict v);

#endif
