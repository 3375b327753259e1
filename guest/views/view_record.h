/* SPDX-License-Identifier: MIT */
/*
 * view_record: the recorder of `record -o FILE`, beside the printed view. It writes a META chunk (the version,
 * settings, CPUs, vnoise's own thread ids, IRQ names) before sampling begins, every sample and event the engine takes in as SAMPLES/EVENTS chunks,
 * what the host's dispatch trace log gave the hypervisor split (DTL_SPANS, DTL_GAPS, DTL_CAUSES chunks),
 * and a STATS chunk (duration, overhead, proc counters, DTL state; also the END text) at the end. `report FILE`
 * (measure/replay.c) reads them back into a struct view. Used by one thread.
 */
#ifndef VNOISE_GUEST_VIEWS_VIEW_RECORD_H
#define VNOISE_GUEST_VIEWS_VIEW_RECORD_H

#include "views/view.h"

struct view_record;

/* Create path. Returns the recorder, owned by the caller until view_record_seal()/_abort(), or NULL + errno. */
struct view_record *view_record_open(const char *path) __attribute__((warn_unused_result));
/* Write the META chunk of v (its helper, settings, CPUs and IRQ names). 0 or -errno. */
int view_record_start(struct view_record *r, const struct view *v)
    __attribute__((warn_unused_result));
/* Keep one record; a full buffer is written out first (a failed write counts in view_record_dropped()). */
void view_record_sample(struct view_record *r, const struct vn_sample *s);
void view_record_event(struct view_record *r, const struct vn_event *e);
/*
 * The DTL a run used (hypsplit's recorder, ctx is the struct view_record): every host interval that
 * overlapped a split gap, once, with its cause's name as the views print it ("host-user-task:hog[1234]"),
 * and every gap split with its aggregates. Kept like samples; causes go into a DTL_CAUSES chunk once each.
 */
void view_record_dtl_span(void *ctx, uint32_t cpu, const struct dtl_span *s,
			  const char *cause_name);
void view_record_dtl_gap(void *ctx, const struct vn_rec_dtl_gap *g);
/* Write the records kept so far as chunks. 0 or -errno. */
int view_record_flush(struct view_record *r) __attribute__((warn_unused_result));
/* Buffers of records lost to failed writes. */
uint64_t view_record_dropped(const struct view_record *r);
/*
 * After a failed write (err, -errno) to path: one line saying what happened and what was lost, "writing
 * 'PATH': REASON; the file ends after N whole chunks (B bytes) and reads as not closed; S samples, E events
 * and D DTL records not written", into buf (always terminated).
 */
void view_record_error_text(const struct view_record *r, int err, const char *path, char *buf,
			    size_t len);
/*
 * Write what is kept, the STATS chunk of v and the END chunk, close and free r. 0 or -errno; r freed always.
 * On failure view_record_error_text() for path goes into why[len] first (why NULL or len 0: no text).
 */
int view_record_seal(struct view_record *r, const struct view *v, const char *path, char *why,
		     size_t len) __attribute__((warn_unused_result));
/* Close and free r without END (the file reads as not closed). Accepts NULL. */
void view_record_abort(struct view_record *r);

#endif
