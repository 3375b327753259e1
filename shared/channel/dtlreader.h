/* SPDX-License-Identifier: MIT */
/*
 * dtlreader: a guest's reader of the dispatch trace log (protocol/dtl.h) in the host area of the mapped
 * region. Hostile input: every copy is validated; torn, bad, out-of-order and overwritten entries, recycled
 * causes, a header that changes under an epoch, a frozen horizon or heartbeat are counted, never trusted,
 * never a crash or a hang (every loop is bounded by the reader's own geometry). A new host epoch resets the
 * per-vCPU positions. Single-threaded per reader; the clock reply is written only by dtlreader_reply.
 */
#ifndef VNOISE_CHANNEL_DTLREADER_H
#define VNOISE_CHANNEL_DTLREADER_H

#include <stddef.h>
#include <stdint.h>
#include "dtl.h"

struct dtl_reader;

struct dtlreader_stats {
	uint64_t epochs; /* host epochs followed (0 -> first is 1) */
	uint64_t entries; /* delivered */
	uint64_t lost; /* overwritten before read (lap ahead) */
	uint64_t torn; /* being written at every retry: skipped for now (retried next poll) */
	uint64_t bad; /* invalid entries (skipped) */
	uint64_t backwards; /* entries starting before the previous end of the vCPU (skipped) */
	uint64_t bad_header; /* header invalid or changed under an epoch */
	uint64_t bad_status; /* status invalid, in the future, horizon going back */
	uint64_t frozen; /* episodes of a heartbeat or horizon not moving for DTLREADER_FROZEN_NS */
	uint64_t causes_gone; /* cause gen mismatch (named by class only) */
	uint64_t bad_causes, bad_aggs;
	uint64_t requests, replies; /* clock requests seen / answered */
};

/* Reader of the host area at area (area_size bytes, read-only is enough except for dtlreader_reply). */
struct dtl_reader *dtlreader_new(const void *area, size_t area_size)
    __attribute__((warn_unused_result));
void dtlreader_free(struct dtl_reader *r);

/* Follow the header: 1 = a (new) valid epoch was attached, 0 = same epoch, -ENOTCONN = no valid header
 * (absent, being laid out or invalid: counted). Call before polling. */
int dtlreader_sync(struct dtl_reader *r);
uint32_t dtlreader_nvcpus(const struct dtl_reader *r); /* 0 when not attached */
uint32_t dtlreader_detail(const struct dtl_reader *r);
uint64_t dtlreader_epoch(const struct dtl_reader *r);

/* Deliver up to max new valid entries of vcpu, in order. Returns how many, or -ENOTCONN / -EINVAL. */
typedef void (*dtlreader_entry_fn)(void *ctx, uint32_t vcpu, const struct vn_dtl_entry *e);
int dtlreader_poll(struct dtl_reader *r, uint32_t vcpu, dtlreader_entry_fn fn, void *ctx,
		   uint32_t max);

/* Validated copy of the status (horizon never goes back: a smaller one is counted and replaced by the
 * last). 0, -EAGAIN (being written), -EBADMSG, -ENOTCONN. */
int dtlreader_status(struct dtl_reader *r, struct vn_dtl_status *out)
    __attribute__((warn_unused_result));
/* The cause named by an entry's cause word: 0, -ENOENT (0 / gen mismatch: gone, counted), -EBADMSG,
 * -EAGAIN, -ENOTCONN. */
int dtlreader_cause(struct dtl_reader *r, uint32_t cause, struct vn_dtl_cause *out)
    __attribute__((warn_unused_result));
/* The aggregate of vcpu for period (or the newest when period == UINT64_MAX). 0, -ENODATA, -EAGAIN,
 * -EBADMSG, -ENOTCONN. */
int dtlreader_agg(struct dtl_reader *r, uint32_t vcpu, uint64_t period, struct vn_dtl_agg *out)
    __attribute__((warn_unused_result));

/* Clock responder side: 1 with a new request (*req_seq, *host_send_ns) not answered yet, else 0/-ENOTCONN. */
int dtlreader_request(struct dtl_reader *r, uint64_t *req_seq, uint64_t *host_send_ns);
/* Write the answer into the reply line of area_rw (the same area, writable). */
void dtlreader_reply(struct dtl_reader *r, void *area_rw, uint64_t req_seq, uint64_t host_send_ns,
		     uint64_t guest_ns, uint32_t cpu);

void dtlreader_stats(const struct dtl_reader *r, struct dtlreader_stats *out);

#endif
