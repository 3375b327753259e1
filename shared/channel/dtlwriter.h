/* SPDX-License-Identifier: MIT */
/*
 * dtlwriter: the host's producer of the dispatch trace log (protocol/dtl.h) in one domain's host area. It lays
 * the area out (a new host epoch), publishes per-vCPU entries (guest ns, in order, never overlapping), the
 * cause table (bounded: least recently used causes are recycled with a new gen), per-period aggregates, the
 * status (clock mapping, horizon, heartbeat) and posts clock requests / reads the replies (the reply line is
 * guest-written: validated, never trusted). The producer never waits for the guest. Single-threaded.
 * With VN_DTL_DETAIL_CLASS no comm or pid is ever written: one cause per class.
 */
#ifndef VNOISE_CHANNEL_DTLWRITER_H
#define VNOISE_CHANNEL_DTLWRITER_H

#include <stddef.h>
#include <stdint.h>
#include "dtl.h"
#include "channel/dtlregion.h"

struct dtl_writer;

struct dtlwriter_params {
	uint32_t nvcpus; /* 1 .. VN_DTL_MAX_VCPUS */
	uint32_t
	    max_entries; /* per vCPU, power of two; 0: the most that fit (<= VN_DTL_MAX_ENTRIES) */
	uint32_t ncauses; /* 0: 256 */
	uint32_t detail; /* enum vn_dtl_detail */
	uint64_t period_ns; /* the host's aggregate period (informative) */
	uint64_t
	    repair_ns; /* a damaged header is laid out again once it stayed so this long; 0: 1 s */
};

#define DTLWRITER_REPAIR_NS 1000000000ull

/* Counters since init. */
struct dtlwriter_stats {
	uint64_t entries; /* published */
	uint64_t dropped; /* intervals not published (dtlwriter_drop, overlaps, bad input) */
	uint64_t
	    clipped; /* entries whose start was moved to the previous end (overlap after conversion) */
	uint64_t causes_recycled;
	uint64_t aggs;
	uint64_t requests, replies, bad_replies;
	uint64_t
	    repairs; /* the immutable header was overwritten (by the guest): laid out again, new epoch */
};

/* Lay out area (area_size bytes, the host half of the mapped region) and start host epoch epoch (non-zero,
 * never reused: e.g. CLOCK_REALTIME ns at start). Returns the writer or NULL with errno and a reason. */
struct dtl_writer *dtlwriter_init(void *area, size_t area_size, const struct dtlwriter_params *p,
				  uint64_t epoch, char *why, size_t whylen)
    __attribute__((warn_unused_result));
void dtlwriter_free(struct dtl_writer *w); /* accepts NULL; leaves the area as it is */

/* The cause word (VN_DTL_CAUSE(index, gen)) for a host task of class cls; pid/comm ignored unless detail is
 * task. Reuses the entry of the same (cls, pid, comm), else the least recently used one (new gen). */
uint32_t dtlwriter_cause(struct dtl_writer *w, uint32_t cls, uint32_t pid, const char *comm);

/* Publish one interval of vCPU vcpu in guest ns. Out of order / overlapping starts are clipped to the last
 * end (counted); empty or bad intervals are dropped (counted). Returns 0, -EINVAL or -ERANGE (dropped). */
int dtlwriter_put(struct dtl_writer *w, uint32_t vcpu, uint32_t kind, uint32_t cls, uint32_t cause,
		  uint32_t flags, uint64_t start_ns, uint64_t end_ns);
/* Count n intervals of vcpu that could not be published (e.g. no clock mapping yet). */
void dtlwriter_drop(struct dtl_writer *w, uint32_t vcpu, uint64_t n);
/* Publish a period's aggregate for vcpu (the writer fills seq; a->period must grow). 0 or -EINVAL. */
int dtlwriter_agg(struct dtl_writer *w, uint32_t vcpu, const struct vn_dtl_agg *a);
/* Publish the status (flags VN_DTL_S_*); a horizon below the last one is kept at the last one. First checks
 * the area's immutable header: when it has not been what this writer laid out for repair_ns (a guest wrote
 * over it), the area is laid out again under epoch + 1 (stats.repairs). */
void dtlwriter_status(struct dtl_writer *w, const struct vn_dtl_status *st);

/* Post a clock request stamped host_send_ns; *req_seq its number. */
void dtlwriter_request(struct dtl_writer *w, uint64_t host_send_ns, uint64_t *req_seq);
/* The answer to the outstanding request: 1 once (*out filled; stamp host_recv right away), 0 not yet,
 * -EAGAIN guest writing, -EBADMSG invalid (counted). */
int dtlwriter_reply(struct dtl_writer *w, struct dtl_clock_reply *out)
    __attribute__((warn_unused_result));

/* Arm the bell (struct vn_dtl_bell): store arm_seq + 1 with release ordering; returns the new value. */
uint64_t dtlwriter_bell_arm(struct dtl_writer *w);

void dtlwriter_stats(const struct dtl_writer *w, struct dtlwriter_stats *out);
uint64_t dtlwriter_epoch(const struct dtl_writer *w);

#endif
