/* SPDX-License-Identifier: MIT */
/*
 * hypspan: the hypervisor time of monitor's targets, exactly, from their run and runnable spans (the passive
 * helper's span records) and the host's dispatch trace log (guest/dtl). A span waits in a bounded pending
 * list until the DTL horizon passes its end; then every DTL interval of its CPU that overlaps it is added to
 * its target, by hypervisor class (host_preempt, host_wait) and by host cause. Spans that never see the
 * horizon (no host, a stopped host, a full list) are counted as late, with their time, never guessed.
 *
 * Time a target's two threads spent on one CPU at once (one ran, the other waited) counts for each: the
 * totals are per thread, like the passive helper's THREAD noise. One thread uses a hypspan.
 */
#ifndef VNOISE_GUEST_MONITOR_HYPSPAN_H
#define VNOISE_GUEST_MONITOR_HYPSPAN_H

#include <stdint.h>
#include "dtl/dtl.h"

#define HYPSPAN_CAUSES 32 /* causes kept per target (a new one evicts the smallest into other_ns) */
#define HYPSPAN_PENDING 65536 /* default bound of the pending list */
#define HYPSPAN_LATE_NS 5000000000ull /* default wait for the horizon after a span's end */

/* One host cause of a target's hypervisor time. */
struct hypspan_cause {
	uint32_t cause; /* the DTL cause word (dtl_cause_name) */
	uint8_t cls; /* enum vn_dtl_class */
	uint8_t hclass; /* enum vn_hclass */
	uint16_t pad;
	uint32_t
	    seq; /* which entry of the slot this is (a slot evicted and reused gets a new seq) */
	uint32_t pad2;
	uint64_t ns;
};

/* A target's hypervisor time (cumulative; take differences with hypspan_diff). */
struct hypspan_tot {
	uint64_t ns[VN_HCLASS_MAX]; /* by enum vn_hclass: HOST_PREEMPT and HOST_WAIT */
	uint64_t running_ns; /* of that, while the target ran */
	uint64_t runnable_ns; /* ... while it was runnable and waited for the CPU */
	uint64_t other_ns; /* causes evicted from the table (the smallest gives way to a new one) */
	uint32_t ncause;
	uint32_t next_seq;
	struct hypspan_cause cause[HYPSPAN_CAUSES]; /* in slot order (diff: largest first) */
};

struct hypspan_stats {
	uint64_t spans; /* added */
	uint64_t done; /* intersected with the DTL */
	uint64_t late; /* never saw the horizon (timeout, full list, or at the end) */
	uint64_t late_ns; /* their length */
	uint64_t bad; /* target or CPU out of range, or end <= start */
	uint64_t pending; /* now waiting */
};

struct hypspan;

/* ntgt targets; max_pending 0: HYPSPAN_PENDING; late_ns 0: HYPSPAN_LATE_NS. NULL with errno on failure. */
struct hypspan *hypspan_new(uint32_t ntgt, uint32_t max_pending, uint64_t late_ns)
    __attribute__((warn_unused_result));
void hypspan_free(struct hypspan *h); /* accepts NULL */

/* A span of target tgt on cpu over [start_ns, end_ns) (guest CLOCK_MONOTONIC), running or runnable. A full
 * pending list makes its oldest span late. */
void hypspan_add(struct hypspan *h, uint32_t tgt, uint32_t cpu, int running, uint64_t start_ns,
		 uint64_t end_ns);
/* Intersect every pending span the horizon of d has passed; spans whose end is more than late_ns before
 * now_ns become late. Returns the spans intersected. */
size_t hypspan_process(struct hypspan *h, const struct dtl *d, uint64_t now_ns);
/* The end of the run: every span still pending becomes late. */
void hypspan_finish(struct hypspan *h);
/* The newest end among pending spans (0: none): wait for the horizon to pass it. */
uint64_t hypspan_pending_end(const struct hypspan *h);

const struct hypspan_tot *hypspan_tot(const struct hypspan *h,
				      uint32_t tgt); /* NULL if out of range */
/* out = b - a (a: an earlier copy of the same target's totals), causes largest first; exact: a cause
 * evicted in between counts in other_ns only for what it had gained before its eviction. */
void hypspan_diff(const struct hypspan_tot *a, const struct hypspan_tot *b,
		  struct hypspan_tot *out);
void hypspan_stats(const struct hypspan *h, struct hypspan_stats *out);

#endif
