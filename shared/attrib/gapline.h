/* SPDX-License-Identifier: MIT */
/*
 * gapline: one gap's split as one JSON line, the format of `vnoise-guest report FILE --gaps` and
 * `vnoise-host report FILE --gaps` (docs/CLI.md), so the guest's and the host's views of the same gap can be
 * joined line by line:
 *   {"cpu":N,"start_ns":N,"duration_ns":N,"classes":{"<class>":N,...}}
 * start_ns is guest CLOCK_MONOTONIC, cpu the guest CPU (= the vCPU). classes holds every non-zero part under
 * its name in shared/attrib/classes (guest classes, then hypervisor classes, then "hw"), and the parts add
 * up to duration_ns exactly. Written through the project's JSON writer (shared/util/json). Any thread.
 */
#ifndef VNOISE_ATTRIB_GAPLINE_H
#define VNOISE_ATTRIB_GAPLINE_H

#include <stdint.h>
#include <stdio.h>
#include "noise.h"

struct gapline {
	uint32_t cpu; /* guest CPU / vCPU */
	uint64_t start_ns; /* guest CLOCK_MONOTONIC */
	uint64_t duration_ns;
	uint64_t guest_ns[VN_CLASS_MAX]; /* by enum vn_class; [UNEXPLAINED]: what nothing split */
	uint64_t hyp_ns[VN_HCLASS_PARTS]; /* by enum vn_hclass; [VN_HCLASS_HW]: the residual hw */
};

/* The parts of g summed (guest and hypervisor classes and hw); saturates at UINT64_MAX. */
uint64_t gapline_sum(const struct gapline *g);

/* Write g as one line on f. 0; -EINVAL (nothing written) when its parts do not add up to duration_ns;
 * -EIO or -errno when f fails. */
int gapline_write(FILE *f, const struct gapline *g) __attribute__((warn_unused_result));

#endif
