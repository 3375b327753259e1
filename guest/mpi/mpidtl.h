/* SPDX-License-Identifier: MIT */
/*
 * mpidtl: the hypervisor side of an MPI interval. From the guest's dispatch trace log
 * (guest/dtl), the host intervals that overlap a rank's compute interval on its CPU, by hypervisor class
 * (host_preempt, host_wait), the host's aggregates of the period apportioned to what the guest's own
 * figures leave unexplained (vmexit, host_irq), and the largest host cause, named as the host allows.
 * Runs in vnoise-guest only (the preload library never maps the DTL); pure over a dtl store, so unit tests
 * drive it with dtl_new_store() + dtl_add_span().
 */
#ifndef VNOISE_GUEST_MPI_MPIDTL_H
#define VNOISE_GUEST_MPI_MPIDTL_H

#include <stdint.h>
#include "app.h"
#include "dtl/dtl.h"

/*
 * Fill r's hyp_ns[], hyp_cause* and hyp_key/hyp_name from d over [r->start_ns, r->end_ns) on r->cpu
 * (zero when d holds nothing there). Returns the hypervisor total (ns).
 */
uint64_t mpidtl_attribute(const struct dtl *d, struct vn_pipe_iv *r);

/* The latest end_ns of the records of interval n (n + 1 in r->interval) among r[0..nrec). 0: none. */
uint64_t mpidtl_end(const struct vn_pipe_iv *r, unsigned nrec, uint64_t n);

/* enum dtl_state as enum vn_pipe_dtl (the report line's "dtl"). */
uint32_t mpidtl_state(const struct dtl *d);

#endif
