/* SPDX-License-Identifier: MIT */
/*
 * dtlregion: what both ends of the dispatch trace log (protocol/dtl.h) agree on — the layout of the host area
 * and the validity rules of every structure in it. The host publisher (dtlwriter) lays out with
 * dtlregion_layout(); the guest reader (dtlreader), tests and fuzzers validate private copies with the
 * validators below (pure functions: they never read shared memory). Memory ordering and the seqlock discipline
 * are shmregion's (shared/channel/shmregion.h: SHM_LOAD_ACQ, shmregion_seq_begin/end/copy).
 */
#ifndef VNOISE_CHANNEL_DTLREGION_H
#define VNOISE_CHANNEL_DTLREGION_H

#include <stddef.h>
#include <stdint.h>
#include "dtl.h"

/* The guest's answer to a clock request, as the host reads it (validated). */
struct dtl_clock_reply {
	uint64_t req_seq;
	uint64_t host_send_ns; /* as sent */
	uint64_t guest_ns; /* guest CLOCK_MONOTONIC when it answered */
	uint32_t cpu; /* guest CPU of the answering thread, or VN_SHM_CPU_UNKNOWN */
};

/* Offsets of a host area laid out for nvcpus vCPUs (dtlregion_layout). */
struct dtlregion_layout {
	uint64_t ring_ctl_offset, agg_offset, cause_offset, entries_offset, end;
	uint32_t entries_per_vcpu, ncauses;
};

/*
 * Lay out a host area of area_size bytes for nvcpus vCPUs and ncauses causes (0: 256): the largest
 * power-of-two entries per vCPU (<= max_entries, 0: VN_DTL_MAX_ENTRIES) that fits. Returns 0 or -ENOSPC (not
 * even VN_DTL_MIN_ENTRIES fit) / -EINVAL.
 */
int dtlregion_layout(uint64_t area_size, uint32_t nvcpus, uint32_t ncauses, uint32_t max_entries,
		     struct dtlregion_layout *out) __attribute__((warn_unused_result));

/* Check a header copy (immutable part) against the reader's mapping of the host area: magic, version, sizes,
 * geometry, areas inside area_size and not overlapping, reserved bytes 0, detail known, epoch non-zero.
 * Returns 0 or -EBADMSG with a one-line reason in why. */
int dtlregion_header_valid(const struct vn_dtl_header *h, size_t area_size, char *why,
			   size_t why_len) __attribute__((warn_unused_result));

/* Check copies of the status, an entry (seq not looked at), a cause (detail: the header's; with
 * VN_DTL_DETAIL_CLASS a cause carrying a pid or comm is invalid), an aggregate. 0 or -EBADMSG. */
int dtlregion_status_valid(const struct vn_dtl_status *s) __attribute__((warn_unused_result));
int dtlregion_entry_valid(const struct vn_dtl_entry *e) __attribute__((warn_unused_result));
int dtlregion_cause_valid(const struct vn_dtl_cause *c, uint32_t detail)
    __attribute__((warn_unused_result));
int dtlregion_agg_valid(const struct vn_dtl_agg *a) __attribute__((warn_unused_result));

/* "vcpu-of-another-domain", "host-kernel-thread", "host-user-task", "qemu-emulator", "idle", "none". */
const char *dtlregion_class_name(uint32_t cls);

#endif
