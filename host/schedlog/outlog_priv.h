/* SPDX-License-Identifier: MIT */
/*
 * outlog internals that the unit suite needs: the per-slot aggregates of the last closed period and of the
 * open one, and the bounds of the last closed period.
 */
#ifndef VNOISE_HOST_SCHEDLOG_OUTLOG_PRIV_H
#define VNOISE_HOST_SCHEDLOG_OUTLOG_PRIV_H

#include <stdint.h>
#include "schedlog/outlog.h"

/* Stats of the last closed period / of the open one so far (closed pieces only). NULL for a bad slot. */
const struct outlog_stats *outlog_period_stats(const struct outlog *ol, uint32_t slot);
const struct outlog_stats *outlog_current_stats(const struct outlog *ol, uint32_t slot);

/* Bounds of the last closed period (both 0 before the first outlog_cut). */
void outlog_period_bounds(const struct outlog *ol, uint64_t *start_ns, uint64_t *end_ns);

#endif
