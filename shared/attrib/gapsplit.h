/* SPDX-License-Identifier: MIT */
/*
 * gapsplit: the one split of a gap into guest causes, hypervisor causes and the residual. Every split calls
 * it: the host's matcher (host/match, host time base), the guest's measuring commands (guest/measure/hypsplit),
 * monitor (guest/monitor/hypspan) and mpi (guest/mpi/mpidtl), all in the guest's time base. The rule, in
 * three steps:
 *
 *   wait     a gap is split once the host's log reaches past its end by a margin (the clock mapping's error)
 *            and only if it starts where the log is complete (gapsplit_ready); a gap the log cannot cover is
 *            left as it is, never split with a partial log;
 *   intersect the host's intervals on the gap's vCPU are clipped to the gap (gapsplit_clip): time the vCPU
 *            was runnable and something else ran (host_preempt) or it was out and nothing ran for it
 *            (host_wait). Time the vCPU was halted (the guest idle on it) is neither: it is the guest's.
 *            A sampler's gap is busy time, so the guest never idled in it: there every out span counts,
 *            whatever state the host gave it (the host's matcher and measure agree); monitor and mpi, whose
 *            spans cover idle time too, leave the halted ones out;
 *   apportion host time wins: it is taken from the gap's steal, then its unexplained time, then its quiet
 *            time (the part of an interval that is not noise: an MPI rank's compute), then out of the guest
 *            classes pro rata (a preemption inside an IRQ handler made that IRQ as long); the host's
 *            aggregates (VM exits, host IRQs: no timestamps) take only what is still unexplained or quiet;
 *            the unexplained rest is hw (gapsplit_apportion).
 *
 * The parts of the result add up to the parts given, exactly (integers; a scaled set gives its rounding rest
 * to its largest member). Pure functions: any thread.
 */
#ifndef VNOISE_ATTRIB_GAPSPLIT_H
#define VNOISE_ATTRIB_GAPSPLIT_H

#include <stddef.h>
#include <stdint.h>
#include "noise.h"

/* The host's time in one gap: host_preempt and host_wait clipped to it (runnable and out time; halted time
 * only where the guest was busy), vmexit and host_irq prorated to it. */
struct gapsplit_host {
	uint64_t ns[VN_HCLASS_MAX];
};

struct gapsplit_res {
	uint64_t
	    guest_ns[VN_CLASS_MAX]; /* what stays in each guest class; [UNEXPLAINED] is always 0 */
	uint64_t hyp_ns[VN_HCLASS_PARTS]; /* hypervisor classes and [VN_HCLASS_HW], the residual */
	uint64_t quiet_ns; /* the quiet time left */
	uint64_t from_guest_ns
	    [VN_CLASS_MAX]; /* taken out of each class (STEAL and UNEXPLAINED included) */
	uint64_t from_quiet_ns; /* taken out of the quiet time */
	uint64_t over_ns; /* host span time beyond the whole gap (a clock error), left out */
	int scaled; /* the guest classes were scaled down to fit */
};

/* A gap [start_ns, end_ns) is ready to split when the log's horizon is past end_ns + margin_ns (saturating). */
int gapsplit_ready(uint64_t end_ns, uint64_t margin_ns, uint64_t horizon_ns);
/* The gap starts before the log is complete (covered_from_ns: the first time the log holds everything;
 * 0: unknown, all covered). Such a gap is never split. */
int gapsplit_uncovered(uint64_t start_ns, uint64_t covered_from_ns);
/* The overlap of [a, b) with [s, e): 0 if none. */
uint64_t gapsplit_clip(uint64_t a, uint64_t b, uint64_t s, uint64_t e);
/* Scale v[0..n) (summing to total) down to sum to take exactly: each v * take / total, the largest gets the
 * rounding rest. Nothing changes when take >= total. */
void gapsplit_scale(uint64_t *v, size_t n, uint64_t total, uint64_t take);

/* Split one gap: guest_ns[] its time by guest class (STEAL and UNEXPLAINED as measured), quiet_ns the time
 * that is no noise (0 for a gap), h the host's time in it (NULL: none). The guest classes, the quiet time
 * and the gap's unexplained shortfall (parts summing to less than dur_ns: the matcher's residual) make
 * dur_ns; parts beyond dur_ns are scaled down first. out: see struct gapsplit_res. */
void gapsplit_apportion(uint64_t dur_ns, const uint64_t guest_ns[VN_CLASS_MAX], uint64_t quiet_ns,
			const struct gapsplit_host *h, struct gapsplit_res *out);

#endif
