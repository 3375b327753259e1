/* SPDX-License-Identifier: MIT */
/*
 * taskclass internals that the unit suite needs: the classifier's counters.
 */
#ifndef VNOISE_HOST_MATCH_TASKCLASS_PRIV_H
#define VNOISE_HOST_MATCH_TASKCLASS_PRIV_H

#include <stdint.h>
#include "match/taskclass.h"

struct taskclass_stats {
	uint64_t lookups; /* taskclass_of() calls for a pid other than 0 */
	uint64_t reads; /* /proc reads (cache misses, reloads) */
	uint64_t gone; /* reads that failed (the task had exited): classified from its comm */
	uint64_t evictions; /* a cached pid replaced by another one */
};

void taskclass_stats(const struct taskclass *tc, struct taskclass_stats *out);

#endif
