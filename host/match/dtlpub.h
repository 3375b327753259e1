/* SPDX-License-Identifier: MIT */
/*
 * dtlpub: vnoise-host's publisher of one domain's dispatch trace log (protocol/dtl.h) from the dispatch log
 * stream it already receives (host/schedlog/outlog: the runs of a piece, then the piece). It owns the
 * area's writer (shared/channel/dtlwriter) and turns host records into guest-time DTL contents:
 *  - each out piece [start, end) is cut into sub-spans by its runs: a non-idle run gives an entry of the
 *    piece's kind ('R' PREEMPTED, else BLOCKED) with the task's class (host/match/taskclass) and cause;
 *    time no non-idle run covers gives an entry of class IDLE, cause 0. A blocked piece is also cut at its
 *    wakeup: what lies before it carries VN_DTL_F_HALTED. Adjacent sub-spans of one cause (and halted
 *    state) are one entry. Every sub-span but the first of an interval carries VN_DTL_F_CONT (so does the first of a
 *    piece that continues one cut at a period end); the last of a piece whose end was inferred
 *    VN_DTL_F_GUESSED;
 *  - host ns -> guest ns through the clock model (clocksync_h2g); without a model, or while the model's
 *    uncertainty at that time is above max_uncertainty_ns (its first exchanges: e.g. answers picked up one
 *    50 ms round late put it ~25 ms off, within their bound), the pieces are counted as dropped, never
 *    published wrong (published entries are never corrected);
 *  - per vCPU and period, VM exits by reason and host IRQ/softirq/vector time -> one aggregate;
 *  - the status: horizon, heartbeat and the clock mapping; VN_DTL_S_CLOCK (and a horizon) only once the
 *    uncertainty has been within max_uncertainty_ns, VN_DTL_S_STALE whenever it is above it again (or no
 *    recent exchange). Before that the status carries the mapping and its (large) uncertainty_ns, no flag.
 * Cost: O(runs) per piece, no system call per entry (taskclass caches /proc). Single-threaded.
 */
#ifndef VNOISE_HOST_MATCH_DTLPUB_H
#define VNOISE_HOST_MATCH_DTLPUB_H

#include <stddef.h>
#include <stdint.h>
#include "channel/dtlwriter.h"
#include "match/clocksync.h"
#include "match/taskclass.h"

#define DTLPUB_RUNS 64u /* runs buffered per vCPU until their piece arrives; more are merged */
#define DTLPUB_EXITS 64u /* distinct exit reasons summed per vCPU and period; more go to "other" */
#define DTLPUB_MAX_UNCERTAINTY_NS \
	1000000ull /* default bound on a published time's clock error: 1 ms */

struct dtlpub;

struct dtlpub_params {
	uint32_t dom; /* the domain's index (taskclass) */
	uint32_t nvcpus; /* 1 .. VN_DTL_MAX_VCPUS */
	uint32_t detail; /* enum vn_dtl_detail */
	uint64_t period_ns; /* informative, in the header */
	uint32_t max_entries; /* per vCPU, 0: as many as fit */
	uint64_t
	    max_uncertainty_ns; /* publish only times converted within this bound; 0: the default */
};

struct dtlpub_stats {
	uint64_t pieces; /* out pieces received */
	uint64_t
	    unsynced; /* pieces dropped: no clock mapping, or its uncertainty above the bound */
	uint64_t runs_merged; /* runs folded into a neighbour (buffer full) */
	uint64_t aggs; /* aggregates published */
	uint64_t aligned_ns; /* host time the status first carried VN_DTL_S_CLOCK; 0: not yet */
	uint64_t aligned_unc_ns; /* the uncertainty then */
	struct dtlwriter_stats w;
};

/*
 * Lay out the host area (area_size bytes) for a new host epoch and publish into it. tc (not owned, may be
 * NULL: every task HOST_USER) classifies causes. Returns NULL with errno and a reason in why.
 */
struct dtlpub *dtlpub_new(void *area, size_t area_size, const struct dtlpub_params *p,
			  uint64_t epoch, struct taskclass *tc, char *why, size_t whylen)
    __attribute__((warn_unused_result));
void dtlpub_free(struct dtlpub *p); /* accepts NULL */
struct dtl_writer *dtlpub_writer(struct dtlpub *p); /* for the clock mailbox */

/* A host task that ran on the pCPU vcpu left, [start, end) host ns, inside the piece delivered next. */
void dtlpub_run(struct dtlpub *p, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, uint32_t pid,
		const char *comm, int idle);
/*
 * vcpu's out piece [start, end) host ns; state: 'R' preempted, else blocked; wake_ns: a blocked interval's
 * wakeup (0: none seen in the piece; it may precede start in a piece that continues one); flags:
 * VN_HOST_OUT_F_*. The part of a blocked piece before its wakeup (all of it without one) is published with
 * VN_DTL_F_HALTED: the vCPU slept there, so the guest idled and what ran preempted nothing.
 */
void dtlpub_out(struct dtlpub *p, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, char state,
		uint64_t wake_ns, uint32_t flags, const struct clocksync *cs);
/* One aggregate of vcpu's period (kind: enum vn_host_agg_kind; isa for exits). */
void dtlpub_agg(struct dtlpub *p, uint32_t vcpu, uint16_t kind, uint16_t isa, uint32_t id,
		uint64_t count, uint64_t total_ns);
/* The period [start, end) host ns ended: each vCPU's sums as one aggregate; they start again. */
void dtlpub_period(struct dtlpub *p, uint64_t start_ns, uint64_t end_ns,
		   const struct clocksync *cs);
/* The status at host time now: horizon (host ns, 0: nothing is published: no dispatch log) converted. */
void dtlpub_status(struct dtlpub *p, uint64_t now_ns, uint64_t horizon_ns,
		   const struct clocksync *cs);

void dtlpub_stats(const struct dtlpub *p, struct dtlpub_stats *out);

/* New host epochs for this process: CLOCK_REALTIME ns, strictly increasing. */
uint64_t dtlpub_new_epoch(void);

#endif
