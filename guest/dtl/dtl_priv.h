/* SPDX-License-Identifier: MIT */
/*
 * dtl internals that the unit suites need: the overlap summed by class, and a store's horizon set by hand
 * (the product moves it with dtl_add_span and the live log).
 */
#ifndef VNOISE_GUEST_DTL_DTL_PRIV_H
#define VNOISE_GUEST_DTL_DTL_PRIV_H

#include <stdint.h>
#include "dtl/dtl.h"

/* Overlap time of cpu's spans with [start_ns, end_ns), per enum vn_hclass (HOST_PREEMPT and HOST_WAIT only). */
void dtl_overlap_ns(const struct dtl *d, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		    uint64_t out[VN_HCLASS_MAX]);
/* A store's horizon: every span ending before it is in. */
void dtl_set_horizon(struct dtl *d, uint64_t horizon_ns);

#endif
