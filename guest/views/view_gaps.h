/* SPDX-License-Identifier: MIT */
/*
 * view_gaps: `vnoise-guest report FILE --gaps`, one JSON line per gap of a record file (shared/attrib/gapline)
 * with the split the recording made: the merge engine's guest classes, and for a gap the run split with the
 * host's dispatch trace log, its hypervisor parts taken out of steal and unexplained (guest/measure/hypsplit).
 * A gap nothing split keeps its unexplained time. It collects both callbacks' records (any order) and writes
 * them at the end, in time order. Single-threaded; the caller owns it.
 */
#ifndef VNOISE_GUEST_VIEWS_VIEW_GAPS_H
#define VNOISE_GUEST_VIEWS_VIEW_GAPS_H

#include <stdint.h>
#include <stdio.h>
#include "attrib/gapsplit.h"
#include "noise.h"

struct view_gaps;

struct view_gaps *view_gaps_new(void) __attribute__((warn_unused_result)); /* NULL + errno */
void view_gaps_free(struct view_gaps *vg); /* accepts NULL */
/* A gap [start_ns, end_ns) of cpu as merge attributed it (class_ns sum to its length). 0 or -ENOMEM. */
int view_gaps_gap(struct view_gaps *vg, int cpu, uint64_t start_ns, uint64_t end_ns,
		  const uint64_t class_ns[VN_CLASS_MAX]) __attribute__((warn_unused_result));
/* The split of that gap (hypsplit's part callback's arguments). 0 or -ENOMEM. */
int view_gaps_split(struct view_gaps *vg, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		    const struct gapsplit_res *res) __attribute__((warn_unused_result));
/* Every gap as one line on f, in time order (then by CPU). Returns the lines written (0: no gap), or
 * -EIO / -errno when f fails, -EINVAL when a split does not fit its gap (said on stderr). */
long view_gaps_write(struct view_gaps *vg, FILE *f) __attribute__((warn_unused_result));

#endif
