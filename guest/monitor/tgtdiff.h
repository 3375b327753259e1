/* SPDX-License-Identifier: MIT */
/*
 * tgtdiff: differences between two snapshots of a passive-helper target (struct vn_tgt, protocol/app.h).
 * Header only: the preload library (hot path) and vnoise-guest monitor both use it.
 */
#ifndef VNOISE_GUEST_MONITOR_TGTDIFF_H
#define VNOISE_GUEST_MONITOR_TGTDIFF_H

#include <stdint.h>
#include "app.h"

/*
 * How much cause slot `now` grew since `then` (the same slot in the earlier snapshot). The kernel replaces the
 * smallest cause by a new one, so a slot that names another cause now holds only new noise: all of it counts.
 */
static inline uint64_t tgt_cause_grew(const struct vn_tgt_cause *now,
				      const struct vn_tgt_cause *then)
{
	if (now->cls == VN_CLASS_NONE)
		return 0;
	if (now->cls == then->cls && now->id == then->id)
		return now->ns > then->ns ? now->ns - then->ns : 0;
	return now->ns;
}

#endif
