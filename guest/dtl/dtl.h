/* SPDX-License-Identifier: MIT */
/*
 * dtl: the guest's one DTL module, used by every guest view (measure/top/hist/record/report, monitor, mpi).
 * It finds and maps the ivshmem region (guest/agent/guestdev: BAR2), reads the host area with
 * shared/channel/dtlreader, keeps per CPU the intervals the host published (a bounded, time-ordered store,
 * history of keep_ns), answers questions about them (which host intervals overlap [start, end) on a CPU, the
 * aggregates of a time range) and, when asked, runs the guest side of the clock exchange (a responder thread
 * that holds VN_DTL_RESPONDER_LOCK; only one process per guest answers, the others just read).
 *
 * No DTL (no ivshmem device, no host publisher, an old host, a host that stopped): everything still works;
 * dtl_state() says which, and views print "dtl":"absent" (or "waiting"/"stale").
 *
 * Hypervisor classes the views report (enum vn_hclass, protocol/noise.h; protocol/README.md, "Dispatch
 * trace log"): host_preempt (an entry whose cause class is not idle: a host task ran in the vCPU's place, by
 * cause), host_wait (an entry of class idle: the vCPU was out and nothing ran for it), vmexit and host_irq
 * (from the per-period aggregates, apportioned by the view to time nothing else explains); what then stays
 * unexplained is hw.
 *
 * Threads: dtl_poll and the queries from one thread (the view's); the responder is internal.
 */
#ifndef VNOISE_GUEST_DTL_DTL_H
#define VNOISE_GUEST_DTL_DTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "noise.h"
/* protocol/dtl.h: a bare "dtl.h" here would name this very file (quotes search its folder first). */
#include "channel/dtlregion.h"

struct dtl;

enum dtl_state {
	DTL_ABSENT = 0, /* no region, or a region without a host publisher (never saw an epoch) */
	DTL_WAITING = 1, /* region mapped, waiting for the first valid host epoch / clock mapping */
	DTL_OK = 2, /* host publishing, clock mapped, heartbeat fresh */
	DTL_STALE = 3, /* host stopped (heartbeat older than DTL_STALE_NS) or mapping stale */
};
#define DTL_STALE_NS 5000000000ull

struct dtl_params {
	const char *sysfs; /* NULL: /sys (guestdev) */
	const char *
	    region_path; /* a file to map as the whole region instead of BAR2 (tests); NULL: find */
	bool responder; /* answer the host's clock requests if no other process does */
	int responder_cpu; /* CPU to pin the responder to, -1: none */
	uint64_t keep_ns; /* history kept per CPU; 0: 30 s */
	uint32_t max_spans; /* per CPU store bound; 0: 65536 (oldest dropped first, counted) */
	const char *lock_path; /* the responder lock; NULL: VN_DTL_RESPONDER_LOCK (tests) */
	uint64_t stale_ns; /* heartbeat unchanged this long: DTL_STALE; 0: DTL_STALE_NS (tests) */
};

/* One published interval of one CPU, in guest CLOCK_MONOTONIC ns. */
struct dtl_span {
	uint64_t start_ns;
	uint64_t end_ns;
	uint32_t cause; /* the entry's cause word (name it with dtl_cause_name) */
	uint8_t kind; /* enum vn_dtl_kind */
	uint8_t cls; /* enum vn_dtl_class */
	uint8_t hclass; /* enum vn_hclass: VN_HCLASS_HOST_PREEMPT or VN_HCLASS_HOST_WAIT */
	uint8_t flags; /* VN_DTL_F_* */
};

/* Sums of the aggregates over a time range (prorated by overlap with each period). */
struct dtl_aggsum {
	uint64_t exit_ns, exit_count, irq_ns, irq_count;
	uint32_t nexit; /* used entries of exit[] (reasons, largest first) */
	struct vn_dtl_exit exit[VN_DTL_AGG_TOP];
	uint32_t isa;
};

struct dtl_stats {
	enum dtl_state state;
	uint32_t detail; /* enum vn_dtl_detail (0: none yet) */
	uint64_t epoch; /* host epoch */
	uint64_t horizon_ns;
	uint64_t uncertainty_ns; /* of the host's clock mapping; UINT64_MAX: none */
	uint64_t spans; /* received */
	uint64_t spans_dropped; /* store bound or age */
	uint64_t lost, torn, bad, backwards, bad_header, bad_status,
	    causes_gone; /* dtlreader_stats */
	uint64_t host_dropped; /* the host's own count (vn_dtl_ring.dropped), summed */
	bool responder; /* this process answers the clock exchange */
	uint64_t replies; /* answered by this process */
	uint64_t responder_cpu_ns; /* the responder thread's CPU time */
};

/*
 * Open the DTL: find and map the region (read-write only with the responder), start the responder if asked.
 * Returns 0 (*out set; check dtl_state: ABSENT is not an error) or -errno for real failures (no memory,
 * region_path unusable) with a one-line reason in why.
 */
int dtl_open(struct dtl **out, const struct dtl_params *p, char *why, size_t whylen)
    __attribute__((warn_unused_result));
/* A store without a device, for unit tests and for replaying recorded spans (report): ncpus CPUs. */
struct dtl *dtl_new_store(uint32_t ncpus) __attribute__((warn_unused_result));
void dtl_close(struct dtl *d); /* accepts NULL; stops the responder, unmaps */

/* Read what the host published since the last call into the store (call every 10-100 ms). Returns spans
 * added (>= 0). Never blocks. A new host epoch drops what was kept of the old one (spans, aggregates, cause
 * names, horizon): its cause words mean nothing any more. */
int dtl_poll(struct dtl *d);
enum dtl_state dtl_state(const struct dtl *d);
const char *dtl_state_name(enum dtl_state s); /* "absent", "waiting", "ok", "stale" */
/* Guest ns up to which every CPU's intervals are in the store (0: nothing yet). A view that wants exact
 * attribution waits until the horizon passes the end of what it attributes (bounded wait: see dtl_stats). */
uint64_t dtl_horizon(const struct dtl *d);
/* Guest ns from which the log of this host epoch is complete: its first horizon. The host publishes no
 * entry older than its clock mapping is good for, so time before this is not covered, whatever the horizon
 * says; a view counts a gap that starts before it as come before the host's log covered it (late), never
 * splits it. 0: from the start (a store filled by dtl_add_span). */
uint64_t dtl_covered_from(const struct dtl *d);

/* Call fn for each stored span of cpu overlapping [start_ns, end_ns), in time order, with the overlap
 * [ov_start, ov_end). Returns the number of spans. */
typedef void (*dtl_overlap_fn)(void *ctx, const struct dtl_span *s, uint64_t ov_start,
			       uint64_t ov_end);
size_t dtl_overlap(const struct dtl *d, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		   dtl_overlap_fn fn, void *ctx);
/* Aggregates of cpu over [start_ns, end_ns). 0 or -ENODATA. */
int dtl_aggs(const struct dtl *d, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
	     struct dtl_aggsum *out);

/* A cause as the views print it: the class name ("host-user-task"), or with detail task the class, comm
 * and pid ("host-user-task:hog[1234]"). Never a name the host did not publish. */
const char *dtl_cause_name(const struct dtl *d, uint32_t cause, uint32_t cls, char *buf,
			   size_t len);
/* A short key for per-cause tables: the comm with detail task, else the class name (e.g. "hog" or
 * "host-user-task"). */
const char *dtl_cause_key(const struct dtl *d, uint32_t cause, uint32_t cls, char *buf, size_t len);

void dtl_stats(const struct dtl *d, struct dtl_stats *out);

/* Tests and replay: add a span to the store directly (in order per CPU, not overlapping the previous one:
 * else -ERANGE; -EINVAL for a bad span or CPU; s->hclass is derived from s->cls) and move the horizon. */
int dtl_add_span(struct dtl *d, uint32_t cpu, const struct dtl_span *s)
    __attribute__((warn_unused_result));
/* Replay: name a cause word in a store made by dtl_new_store (as recorded from a live DTL); sets detail. */
int dtl_set_cause(struct dtl *d, uint32_t cause, uint32_t cls, uint32_t pid, const char *comm)
    __attribute__((warn_unused_result));

#endif
