/* SPDX-License-Identifier: MIT */
/*
 * match: the guest<->host matcher. Per vCPU it joins what the guest saw (the sampler's gaps and runtime
 * windows, the kernel helper's net-duration events) with what the host saw (the dispatch log's out intervals
 * and the host tasks that ran meanwhile) in one linear pass over time, and splits every guest gap into
 *   - guest classes (nmi, irq, softirq, thread, hcall) by source, NET of hypervisor time: a guest event that
 *     contained host out-time is reduced by the overlap, and the overlap goes to its host cause;
 *   - hypervisor classes: host_preempt by host task (another host task ran on the pCPU the vCPU left),
 *     host_wait by state (the vCPU thread was blocked and the pCPU idle or unknown), and, from per-period
 *     aggregates that carry no timestamps, vmexit by reason and host_irq by source (apportioned out of the
 *     residual, see match_add_agg);
 *   - residual "hw": what neither side explains.
 * Per gap the parts add up to the gap's duration exactly.
 *
 * Every time given to the matcher is host CLOCK_MONOTONIC ns: the caller converts guest times first
 * (clocksync_g2h) and passes the conversion's uncertainty. Pure C: no I/O, no locks; single-threaded; the
 * caller owns the object. Memory is bounded: every per-vCPU queue has a cap; records refused at the cap are
 * counted (drops), never silently lost.
 *
 * Feeding: records of one vCPU may arrive in any order relative to other streams, but each stream (gaps,
 * events, outs, runs) should arrive roughly in time order (a gap older than what was already matched is
 * "late": counted and dropped). A gap is matched by match_process() once its end is at or below both
 * horizons: the guest horizon (the caller has delivered every guest event overlapping it) and the host
 * horizon minus the clock uncertainty (every out interval overlapping it has been delivered: an out interval
 * overlapping a gap always ends before the gap ends, because the guest can only see the gap end once its vCPU
 * runs again).
 */
#ifndef VNOISE_HOST_MATCH_MATCH_H
#define VNOISE_HOST_MATCH_MATCH_H

#include <stddef.h>
#include <stdint.h>
#include "host.h"
#include "noise.h"

#define MATCH_MAX_VCPUS 256
#define MATCH_MAX_SOURCES 256 /* per vCPU and stats set; further sources fold into "other" */
#define MATCH_QUEUE_CAP (1u << 20) /* records queued per vCPU and stream at most */

/* Hypervisor classes: enum vn_hclass (protocol/noise.h), the same values in records and in memory. */

/* Source kinds in struct match_source.kind. */
enum match_kind {
	MATCH_K_GUEST = 0, /* cls = enum vn_class, id/comm as in struct vn_event */
	MATCH_K_HOST =
	    1, /* cls = enum vn_hclass; id = pid (PREEMPT), state char (WAIT), reason (VMEXIT),
			     caller-chosen id (IRQ); comm = task comm or the caller's name */
	MATCH_K_OTHER = 2, /* folded sources (table full) */
};

struct match_source {
	uint8_t kind; /* enum match_kind */
	uint8_t cls;
	uint8_t pad[2];
	uint32_t id;
	char comm[VN_COMM_LEN]; /* NUL-terminated */
	uint64_t count; /* gaps (or aggregates) it took part in */
	uint64_t total_ns; /* time attributed to it */
	uint64_t max_ns; /* largest part in one gap */
};

/* One vCPU's figures over a stats set (the current period or the whole run). Sums saturate at UINT64_MAX
 * (a hostile guest's spans can add up past it): they never wrap. */
struct match_stats {
	uint64_t gaps; /* guest gaps matched */
	uint64_t gap_ns; /* their total duration */
	uint64_t max_gap_ns;
	uint64_t runtime_ns; /* sum of sampler windows (host time) */
	uint64_t guest_ns[VN_CLASS_MAX]; /* guest classes, net of host time ([NONE], [STEAL],
					    [UNEXPLAINED] stay 0) */
	uint64_t host_ns[VN_HCLASS_MAX]; /* hypervisor classes */
	uint64_t residual_ns; /* hw: neither side explains it */
	uint64_t reduced_ns; /* guest event time removed because host out-time overlapped it */
	uint64_t big_gaps; /* gaps >= big_ns */
	uint64_t big_matched; /* ... whose host part is >= half the gap */
	uint64_t
	    big_guest; /* ... whose guest part is >= half the gap (guest noise, not the hypervisor) */
	uint64_t big_explained; /* ... whose residual is <= 10% of the gap */
	uint64_t latency_max_ns; /* now - gap end at match_process time, over matched gaps */
	uint64_t latency_sum_ns; /* ... sum (avg = sum / gaps) */
	uint64_t uncertainty_max_ns; /* largest clock uncertainty passed with a matched gap */
	uint32_t
	    nsrc; /* used entries of src[] (sorted by total_ns, largest first, by match_stats()) */
	uint32_t pad;
	struct match_source src[MATCH_MAX_SOURCES];
	struct match_source other; /* kind MATCH_K_OTHER: sources folded when src[] was full */
};

/* Anomalies and volumes since match_new(), per vCPU. */
#define MATCH_MAX_UNC_WAIT_NS 100000000ULL /* 100 ms */

struct match_counters {
	uint64_t gaps_in, events_in, outs_in, runs_in, windows_in, aggs_in;
	uint64_t late; /* gaps that ended before what was already matched: dropped */
	uint64_t
	    host_late; /* host records reaching back before what was already matched: that part unused */
	uint64_t dropped; /* records refused: queue cap or no memory */
	uint64_t bad; /* records with end < start or an out-of-range vCPU: ignored */
	uint64_t clamped; /* gaps whose parts exceeded the gap (overlapping guest events): scaled */
	uint64_t queued; /* records waiting now (gauge) */
};

struct match_params {
	uint64_t big_ns; /* "big gap" threshold of big_gaps/big_matched; default 1 ms */
};

struct match;

/* New matcher (p NULL: defaults). NULL + errno (ENOMEM, EINVAL). */
struct match *match_new(const struct match_params *p) __attribute__((warn_unused_result));
void match_free(struct match *m); /* accepts NULL */

/* Guest records, times already in host ns. A gap is a vn_sample of kind GAP, a window kind WINDOW; the
 * sample's/event's cpu field is ignored (vcpu says where it goes). Events of class STEAL are ignored (the host
 * view replaces the guest's steal observation). unc_ns is the clock uncertainty of the conversion.
 * Return 0, -EINVAL (bad vcpu or times: counted as bad) or -ENOBUFS/-ENOMEM (counted as dropped). */
int match_add_sample(struct match *m, uint32_t vcpu, const struct vn_sample *s, uint64_t unc_ns);
int match_add_event(struct match *m, uint32_t vcpu, const struct vn_event *e);

/* Host records of the dispatch log: an out interval [start, end) with its state ('R' preempted, else
 * blocked), and a host task's run on the pCPU the vCPU left [start, end) (idle: the idle task). Runs of one
 * out interval lie inside it. Same returns. */
int match_add_out(struct match *m, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, char state);
int match_add_run(struct match *m, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, uint32_t pid,
		  const char *comm, int idle);

/*
 * A per-period aggregate with no timestamps (VM exits, host IRQs while the vCPU ran): hcls is VN_HCLASS_VMEXIT
 * or VN_HCLASS_HOST_IRQ, id and name (copied, up to VN_COMM_LEN - 1 bytes) name the source. Such time made the guest
 * see gaps the dispatch log cannot place, so min(total_ns, residual not yet claimed) moves from the vCPU's
 * residual to this source, in both stats sets; the rest is counted nowhere (it fell below the guest's
 * threshold). Call it after match_process() has matched the period's gaps. Returns 0 or -EINVAL.
 */
int match_add_agg(struct match *m, uint32_t vcpu, uint8_t hcls, uint32_t id, const char *name,
		  uint64_t total_ns);

/*
 * Match every queued gap of every vCPU whose end is <= guest_horizon_ns and whose end + its uncertainty
 * (at most MATCH_MAX_UNC_WAIT_NS: the host log is not waited for longer) is <= host_horizon_ns, in time
 * order; drop queued host and guest records that can no longer overlap a future gap, and host records more
 * than 10 s behind host_horizon_ns whatever the guest does (a gap starting before that is counted late). A
 * call with guest_horizon_ns 0 only does the latter. now_ns feeds the latency figures. Linear in the records
 * consumed. Returns gaps matched (>= 0).
 */
int match_process(struct match *m, uint64_t guest_horizon_ns, uint64_t host_horizon_ns,
		  uint64_t now_ns);

/*
 * Per-gap callback (optional): the gap [start, end) on vcpu and its parts by class. Called from
 * match_process(), in time order per vCPU; it must not call back into the matcher.
 */
typedef void (*match_gap_fn)(void *ctx, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			     const uint64_t guest_ns[VN_CLASS_MAX],
			     const uint64_t host_ns[VN_HCLASS_MAX], uint64_t residual_ns);
void match_set_gap_cb(struct match *m, match_gap_fn fn, void *ctx);

/* Stats of vcpu: total (whole run) or current (since the last match_period_reset); sources sorted. NULL for a
 * vCPU that never got a record. Valid until the next call on m. */
const struct match_stats *match_stats_total(struct match *m, uint32_t vcpu);
const struct match_stats *match_stats_period(struct match *m, uint32_t vcpu);
/* Start a new current period for every vCPU. */
void match_period_reset(struct match *m);
/* The longest gap matched on vcpu since the last match_period_reset(), split by source (start_ns and dom
 * left 0: the caller maps and names them); NULL if none. Valid until the next call that matches or resets. */
const struct vn_host_worst *match_worst_period(const struct match *m, uint32_t vcpu);
/*
 * The guest agent restarted (a new epoch): drop every queued guest record (gaps, events: counted in dropped)
 * and forget the sampler's progress and how far it was matched; host records and the stats stay. An old epoch's records may carry
 * times or uncertainties no later gap can pass (a hostile or broken agent), and its horizon will not move
 * again.
 */
void match_guest_reset(struct match *m);
/* Counters of vcpu (zeros for an unused one; for vcpu >= MATCH_MAX_VCPUS: the records refused for naming such
 * a vCPU, in bad). */
void match_counters(const struct match *m, uint32_t vcpu, struct match_counters *out);
/* The guest's records waiting in the queues (gaps, events); *bytes: what they hold, their per-record
 * scratch included (the queues' room is at most twice that: they grow by doubling). For a budget on what a
 * guest makes the matcher hold, and on the work of an insert (it passes at most that many records). */
size_t match_guest_held(const struct match *m, size_t *bytes);
/* The bytes the host's records waiting in the queues hold (outs, runs, their per-record scratch). */
size_t match_host_held(const struct match *m);
/* Keep the host's records under max_bytes: they are kept less far behind host_horizon_ns than 10 s, in
 * steps of 1 s (a gap starting before what is kept is counted late). */
void match_host_trim(struct match *m, size_t max_bytes, uint64_t host_horizon_ns);
/* The host's out piece of vcpu open since open_ns (UINT64_MAX: none): it is delivered (match_add_out) only
 * when it ends, so no gap of vcpu ending after open_ns is matched before then, whatever the clock model
 * says. Set it before each match_process. */
void match_host_open(struct match *m, uint32_t vcpu, uint64_t open_ns);
/* Records passed by the sorted inserts since match_new (the work a stream out of order costs). */
uint64_t match_insert_steps(const struct match *m);
/* Gaps queued now, all vCPUs: fed and not yet matched (waiting for a horizon). */
uint64_t match_gaps_waiting(const struct match *m);
#endif
