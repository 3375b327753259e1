/* SPDX-License-Identifier: MIT */
/*
 * pipeline: the interval pipeline's logic on a struct vn_pipe (protocol/app.h) shared by the ranks of a job
 * and vnoise-guest: tickets, the filter (silhouette and verdicts) and the report line. Pure C, no allocation,
 * no syscall: the preload library runs it inside a rank's synchronisation calls, vnoise-guest runs it to flush
 * the last intervals after the job. Safe against concurrent ranks through the slot ticket (atomic CAS).
 */
#ifndef VNOISE_GUEST_MPI_PIPELINE_H
#define VNOISE_GUEST_MPI_PIPELINE_H

#include <stddef.h>
#include <stdint.h>
#include "app.h"
#include "cluster.h"

/* Initialise a zeroed pipe: magic, version, rules. pct: delay threshold in % of the fastest compute time. */
void pipeline_init(struct vn_pipe *p, const char *job, double pct, uint64_t min_noise_ns,
		   uint32_t class_mask, uint32_t flags);

/* The slot of interval n. */
static inline struct vn_pipe_slot *pipeline_slot(struct vn_pipe *p, uint64_t n)
{
	return &p->slot[n % VN_PIPE_SLOTS];
}

/*
 * Fetch the cache line of a for writing (x86 PREFETCHW, a no-op on CPUs without it). A line the other rank
 * wrote last, read then compare-and-swapped, costs two transfers between cores; prefetched, one.
 */
static inline void pipeline_prefetch_w(const void *a)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ volatile("prefetchw %0" ::"m"(*(const char *)a));
#else
	__builtin_prefetch(a, 1, 3);
#endif
}

/*
 * A rank closed interval n (its record is already written in pipeline_slot(p, n)->r[rank]): take a ticket.
 * Returns the arrival order (0: first). The first arrival of a new interval in a slot counts an overrun when
 * the interval the slot held was not reported, and resets the slot's filter fields and state.
 */
int pipeline_arrive(struct vn_pipe *p, uint64_t n);

/*
 * Filter interval n (all ranks' records present): silhouette over the records whose interval is n + 1,
 * delay and verdict per rank, slot state FILTERED, h.intervals (and h.quiet) counted. Returns the number of
 * delayed ranks, or -1 when the slot does not hold interval n or it was filtered already.
 */
int pipeline_filter(struct vn_pipe *p, uint64_t n);

/*
 * Whether interval n is filtered and should be reported (a delayed rank, or VN_PIPE_F_ALL). Marks it
 * REPORTED either way, so that one caller wins. 1: format and write it; 0: nothing to do.
 */
int pipeline_take_report(struct vn_pipe *p, uint64_t n);

/*
 * The report of interval n as one JSON line (schema vnoise.interval/1, protocol/README.md) with a trailing
 * newline. Returns its length, or -ENOSPC when buf is too small, -ENOENT when the slot does not hold interval
 * n filtered, -ESTALE when a newer interval took the slot while the line was formatted. On error buf holds
 * no usable line (when len > 0 it is NUL-terminated).
 */
int pipeline_json(const struct vn_pipe *p, uint64_t n, char *buf, size_t len);

/*
 * Interval n as report records (protocol/cluster.h) for a collector: per rank with a record, a summary (class
 * NONE: noise of the classes in h.class_mask, compute time, verdict), one record per class with noise, and
 * with detail the rank's largest cause when a datagram can name it (thread, IRQ, softirq). In the DTL view
 * (VN_PIPE_F_HYP) also one record per hypervisor class with noise (VN_REPORT_CLS_HYP_BASE + enum vn_hclass, datagram version 2;
 * steal counts net of them) and, with detail, the largest host cause when it is the one to name
 * (VN_REPORT_SRC_HOST). *start_ns and *end_ns get the earliest start and latest end of the ranks
 * (CLOCK_MONOTONIC). Returns the number of records, or -ENOENT (the slot does not hold n filtered), -ENOSPC
 * (more than max), -ESTALE (a newer interval took the slot meanwhile).
 */
int pipeline_records(const struct vn_pipe *p, uint64_t n, int detail, struct vn_report_rec *out,
		     size_t max, uint64_t *start_ns, uint64_t *end_ns);

/* "none", "noise", "imbalance", "unexplained" */
const char *pipeline_verdict_name(unsigned v);
/* enum vn_pipe_dtl as the report line names it: "absent", "waiting", "ok", "stale", "off" */
const char *pipeline_dtl_name(unsigned s);

/*
 * DTL mode (VN_PIPE_F_DEFER): copy the records of interval n (its slot filtered, or at least
 * closed by every rank) into journal[n % VN_PIPE_JOURNAL] under the entry's seqlock, and raise
 * h.journal_top. 0, or -ESTALE (the slot no longer holds n: counted in h.journal_lost). Called by the rank
 * that filtered n, and by vnoise-guest for the last intervals of a job.
 */
int pipeline_journal(struct vn_pipe *p, uint64_t n);
/*
 * Read interval n from the journal into slot s of a private pipe: the records, the ticket (n + 1, every
 * rank) and state TRACKED, ready for pipeline_filter() on that pipe. 0; -EAGAIN (not written yet, or being
 * written: retry); -ESTALE (overwritten by a newer interval: lost).
 */
int pipeline_journal_take(const struct vn_pipe *p, uint64_t n, struct vn_pipe *priv);

#endif
