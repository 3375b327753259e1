/* SPDX-License-Identifier: MIT */
/*
 * match internals that the unit suite needs.
 */
#ifndef VNOISE_HOST_MATCH_MATCH_PRIV_H
#define VNOISE_HOST_MATCH_MATCH_PRIV_H

#include <stdint.h>
#include "match/match.h"

/* Highest vCPU number that got a record + 1 (0 when none). */
uint32_t match_nvcpus(const struct match *m);

#endif
