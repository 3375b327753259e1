/* SPDX-License-Identifier: MIT */
/*
 * hostagg: the one engine behind vnoise-host's views. It is fed the host records of protocol/host.h (domain
 * bindings, per-period vCPU counters, out intervals, host-task runs, IRQ/exit aggregates) — live from the
 * dispatch log or read back from a record file — and keeps per domain and vCPU: summed counters, a table of
 * preemptors (host tasks that ran while the vCPU was out), VM exits by reason and host IRQs by source. The
 * views (top, report, JSON) only read it. Bounded memory: at most VN_HOST_MAX_DOMAINS domains of
 * VN_HOST_MAX_VCPUS vCPUs, HOSTAGG_MAX_PREEMPT preemptors per vCPU (the rest go to one "<other>" entry) and
 * HOSTAGG_MAX_AGG aggregate entries per vCPU (the rest are counted in agg_dropped), HOSTAGG_MAX_FLOWS flow
 * rows and HOSTAGG_MAX_TAPS taps per domain (further flows go to the other-flows rows, counted in
 * flows_dropped; further taps are counted in taps_dropped). One thread at a time.
 */
#ifndef VNOISE_HOST_ENGINE_HOSTAGG_H
#define VNOISE_HOST_ENGINE_HOSTAGG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "host.h"

#define HOSTAGG_MAX_PREEMPT 128u
#define HOSTAGG_MAX_AGG 256u
#define HOSTAGG_NAME_LEN 128u

/*
 * A host task that ran on the pCPU a vCPU had left, while the vCPU was out. Only the time the vCPU was
 * runnable makes it a preemptor (total_ns, count); the time it ran while the vCPU was halted (its thread
 * slept before its wakeup: the guest idled) is kept apart in halted_ns and delayed nothing.
 */
struct hostagg_preempt {
	char comm[VN_HOST_COMM_LEN + 1];
	uint32_t pid; /* 0 with comm "<other>": the overflow entry */
	uint64_t total_ns; /* its run time while the vCPU was out and runnable */
	uint64_t count; /* out intervals in which it ran while the vCPU was runnable */
	uint64_t halted_ns; /* its run time while the vCPU was out and halted */
	uint64_t halted_count; /* out intervals in which it ran while the vCPU was halted */
	uint64_t last_out_start_ns; /* internal: the interval counted last (runnable) */
	uint64_t last_halted_start_ns; /* internal: the interval counted last (halted) */
};

/*
 * A vCPU's out-time split by cause (hostagg_out_split). out_ns = preempt_ns + wait_ns + halted_ns + exit_ns +
 * irq_ns exactly. The first three are the time its thread was switched out (the dispatch log's out
 * intervals, hostagg_vcpu.out_ns = switched_ns); exits and IRQs are host time while it was on its pCPU.
 * preempt_ns + wait_ns is the time it was runnable but not running: what schedstat run_delay, libvirt's
 * vcpu.N.delay (steal_ns) and so the guest's steal clock count, by the scheduler's own accounting.
 */
struct hostagg_split {
	uint64_t out_ns; /* the sum of the parts */
	uint64_t switched_ns; /* preempt_ns + wait_ns + halted_ns */
	uint64_t
	    preempt_ns; /* runnable while other host tasks ran on its pCPU (the preemptors' total_ns) */
	uint64_t
	    wait_ns; /* runnable while nothing else ran there (waiting for a CPU, wakeup to switch-in) */
	uint64_t
	    halted_ns; /* its thread slept before its wakeup: the guest idled there, no guest noise */
	uint64_t exit_ns; /* in VM exits while it ran (VN_HOST_AGG_EXIT) */
	uint64_t irq_ns; /* host IRQs, softirqs and vectors while it ran */
};

struct hostagg_aggent {
	uint16_t kind; /* enum vn_host_agg_kind */
	uint16_t isa;
	uint32_t id;
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
};

#define HOSTAGG_MAX_MSRC 128u /* sources kept per vCPU (combined and guest-only views together) */
#define HOSTAGG_SOFTIRQS 10u /* guest softirq vectors HI .. RCU */

/* One source of the combined or guest-only view (vn_host_msrc summed over periods). */
struct hostagg_msrc {
	uint8_t kind; /* enum vn_host_msrc_kind */
	uint8_t cls;
	uint32_t id;
	char comm[VN_HOST_COMM_LEN + 1];
	uint64_t count, total_ns, max_ns;
};

/* The combined view of one vCPU: vn_host_match summed over periods. */
struct hostagg_match {
	bool seen;
	uint32_t periods;
	struct vn_host_match sum; /* max_* fields hold maxima; start/end/dom/vcpu unused */
	uint32_t nsrc;
	uint64_t
	    src_dropped; /* source records that found the table full (their time is in the class) */
	struct hostagg_msrc src[HOSTAGG_MAX_MSRC];
	/* guest sources summed whatever room the table has (the --flows views show them): softirqs by
	 * vector, device IRQs (id < VN_VEC_BASE) together; combined view (VN_HOST_MSRC_GUEST) */
	uint64_t softirq_ns[HOSTAGG_SOFTIRQS], softirq_count[HOSTAGG_SOFTIRQS];
	uint64_t devirq_ns, devirq_count;
	struct vn_host_worst worst; /* the longest gap of the periods fed (duration_ns 0: none) */
};

struct hostagg_vcpu {
	bool seen;
	uint32_t tid; /* latest mapping */
	uint32_t cpu; /* latest pCPU (~0u unknown) */
	uint32_t periods;
	uint32_t flags; /* OR of the periods' VN_HOST_PERIOD_F_* */
	uint64_t first_ns, last_ns; /* span of the periods fed */
	uint64_t steal_ns, cpu_ns, exec_ns, run_delay_ns, pcount;
	uint64_t out_ns, out_periods, out_r_ns, out_s_ns, idle_ns, wait_ns;
	uint64_t max_out_ns; /* longest out interval (pieces cut at period boundaries joined) */
	uint64_t max_out_r_ns; /* ... of those preempted while runnable (state R: not a halt) */
	uint64_t cur_out_ns; /* internal: length so far of an interval cut at a boundary */
	uint64_t run_ns; /* sum of the run records (preemptors and idle) */
	uint64_t
	    preempt_ns; /* sum of the non-idle runs while runnable (every preemptor's total_ns) */
	uint64_t
	    halted_run_ns; /* sum of the non-idle runs while halted (every preemptor's halted_ns) */
	uint32_t npreempt;
	struct hostagg_preempt preempt[HOSTAGG_MAX_PREEMPT + 1]; /* + the "<other>" entry */
	uint32_t nagg;
	uint64_t agg_dropped;
	struct hostagg_aggent agg[HOSTAGG_MAX_AGG];
	struct hostagg_match match;
};

#define HOSTAGG_MAX_FLOWS 512u
#define HOSTAGG_MAX_TAPS 8u

/* The capture on one tap of a domain (vn_host_tap summed over periods; arrays by enum vn_host_flow_dir). */
struct hostagg_tap {
	char tap[VN_HOST_COMM_LEN + 1];
	uint32_t periods; /* periods reported */
	uint32_t failed; /* periods in which the capture had failed (VN_HOST_TAP_FAILED) */
	uint64_t packets[VN_HOST_FLOW_NDIR], bytes[VN_HOST_FLOW_NDIR], dropped[VN_HOST_FLOW_NDIR],
	    overflow[VN_HOST_FLOW_NDIR];
	uint64_t truncated;
};

/* A domain's flows (--flows): vn_host_flow rows summed over periods, one per tap, direction and key. */
struct hostagg_net {
	uint32_t nflows;
	struct vn_host_flow
	    flow[HOSTAGG_MAX_FLOWS]; /* start_ns/end_ns: first period start, last end */
	struct vn_host_flow other
	    [VN_HOST_FLOW_NDIR]; /* kind VN_HOST_FLOW_KIND_OTHER, by direction: the periods' other-flows
						  rows and the flows this table had no room for */
	uint64_t
	    flows_dropped; /* flow records that found this table full (their counts are in other[]) */
	uint32_t ntaps;
	uint64_t taps_dropped; /* tap records that found the tap table full */
	struct hostagg_tap tap[HOSTAGG_MAX_TAPS];
};

struct hostagg_domain {
	bool seen;
	char name[HOSTAGG_NAME_LEN];
	char uuid[40];
	char virt[8]; /* "qemu" (TCG) or "kvm" */
	uint32_t qemu_pid;
	uint32_t nvcpus;
	uint32_t starts; /* HOST_DOMAIN bindings with event=started/mapped */
	uint32_t stops; /* event=stopped */
	bool running;
	bool chan_seen;
	struct vn_host_chan chan; /* the channel at the latest period end */
	struct hostagg_net *net; /* --flows records (NULL: none yet) */
	struct hostagg_vcpu *vcpus; /* nvcpus_alloc entries */
	uint32_t nvcpus_alloc;
};

#define HOSTAGG_MAX_IRQNAMES 256u

struct hostagg {
	struct hostagg_domain dom[VN_HOST_MAX_DOMAINS];
	uint32_t nirqnames;
	uint32_t irq_id[HOSTAGG_MAX_IRQNAMES];
	char irq_name[HOSTAGG_MAX_IRQNAMES][32];
	uint64_t
	    bad_records; /* records naming an unknown dom or vcpu out of range, or inverted times */
};

/* Allocate an empty engine; NULL with errno on failure. Free with hostagg_free() (accepts NULL). */
struct hostagg *hostagg_new(void) __attribute__((warn_unused_result));
void hostagg_free(struct hostagg *a);

/* Forget all counters and tables but keep the domain bindings (live views reset per refresh). */
void hostagg_reset(struct hostagg *a);

/*
 * Bind or update domain dom: name, uuid, virt ("qemu"/"kvm"), qemu pid, vCPU count, the event that caused
 * it ("started", "mapped", "stopped", "reconnected", ...). Returns 0 or -EINVAL (index or count out of
 * range), -ENOMEM.
 */
int hostagg_domain(struct hostagg *a, uint32_t dom, const char *name, const char *uuid,
		   const char *virt, uint32_t qemu_pid, uint32_t nvcpus, const char *event)
    __attribute__((warn_unused_result));

/* Bind a vCPU's host thread (tid) after hostagg_domain(). Returns 0 or -EINVAL. */
int hostagg_vcpu_tid(struct hostagg *a, uint32_t dom, uint32_t vcpu, uint32_t tid)
    __attribute__((warn_unused_result));

/*
 * Feed one record. Records for an unbound domain or a vCPU out of range are counted in bad_records and
 * return -EINVAL; nothing else fails.
 */
int hostagg_period(struct hostagg *a, const struct vn_host_period *p);
int hostagg_out(struct hostagg *a, const struct vn_host_out *o);
int hostagg_run(struct hostagg *a, const struct vn_host_run *r);
int hostagg_agg(struct hostagg *a, const struct vn_host_agg *g);

/*
 * Preemptors of v sorted by total_ns, largest first, into out (at most max entries; "<other>" included if
 * used). A task that ran only while the vCPU was halted is not a preemptor and is not listed. Returns the
 * number written.
 */
uint32_t hostagg_preempt_sorted(const struct hostagg_vcpu *v, const struct hostagg_preempt **out,
				uint32_t max);
/* The tasks that ran while v was halted, sorted by halted_ns, largest first. Returns the number written. */
uint32_t hostagg_halted_sorted(const struct hostagg_vcpu *v, const struct hostagg_preempt **out,
			       uint32_t max);

/*
 * v's out-time split by cause (see struct hostagg_split): the one computation every host view shows. The
 * runnable part is the dispatch log's run delay (wait_ns, at most out_ns); the preempted part the runs of
 * other tasks in it (at most the runnable part), waiting the rest; halted is the switched-out time that was
 * not runnable.
 */
void hostagg_out_split(const struct hostagg_vcpu *v, struct hostagg_split *s);

/* Aggregate entries of v of one kind sorted by total_ns, largest first. Returns the number written. */
uint32_t hostagg_agg_sorted(const struct hostagg_vcpu *v, uint16_t kind,
			    const struct hostagg_aggent **out, uint32_t max);

/*
 * Name host IRQ number irq (from the host's /proc/interrupts, or a record file). Returns 0, -ENOSPC (table
 * full) or -EINVAL. hostagg_irq_name() returns the name or NULL.
 */
/* vnoise-host --guest records: the combined view per vCPU and period, its sources, the channel's state. */
int hostagg_match(struct hostagg *a, const struct vn_host_match *m);
int hostagg_msrc(struct hostagg *a, const struct vn_host_msrc *s);
/* A period's worst gap of a vCPU: kept when longer than the one kept. A record whose parts do not add up
 * (sum(part[].ns) + other_ns + residual_ns != duration_ns), with more than VN_HOST_WORST_PARTS parts or a part
 * of no known kind or class is refused: -EINVAL. Names are cut at their NUL (one is forced). */
int hostagg_worst(struct hostagg *a, const struct vn_host_worst *w);
int hostagg_chan(struct hostagg *a, const struct vn_host_chan *c);
/* The vCPU's sources of one kind, largest total first; returns how many (<= max). */
uint32_t hostagg_msrc_sorted(const struct hostagg_vcpu *v, uint8_t kind,
			     const struct hostagg_msrc **out, uint32_t max);
/* Is there any combined-view data (a HOST_MATCH or HOST_CHAN record)? */
bool hostagg_has_match(const struct hostagg *a);

/*
 * vnoise-host --flows records: one flow (or other-flows row) of one tap over one period, and the capture's
 * totals. Returns 0, -EINVAL (unbound domain, direction or kind out of range: counted in bad_records) or
 * -ENOMEM.
 */
int hostagg_flow(struct hostagg *a, const struct vn_host_flow *f);
int hostagg_tap(struct hostagg *a, const struct vn_host_tap *t);
/* The domain's flow rows of one direction sorted by bytes, largest first (other-flows row not included);
 * returns how many (<= max). */
uint32_t hostagg_flows_sorted(const struct hostagg_domain *d, unsigned dir,
			      const struct vn_host_flow **out, uint32_t max);

/*
 * The one route from record chunks to the engine, for the live engine and the replay of a file alike: feed
 * every record of a chunk of one of the record-array types of protocol/host.h (HOST_PERIOD, OUT, RUN, AGG,
 * MATCH, MSRC, CHAN, FLOW, TAP) to the matching hostagg_<record>() function, in order. payload need not be
 * aligned. Returns 1 (fed; records the engine refuses are counted in bad_records as usual), 0 (not a
 * record-array chunk: text chunks, guest chunks, future types; nothing done) or -EINVAL (len is not a
 * multiple of the record size; nothing fed).
 */
int hostagg_feed_chunk(struct hostagg *a, uint16_t type, const void *payload, size_t len);

int hostagg_set_irq_name(struct hostagg *a, uint32_t irq, const char *name);
const char *hostagg_irq_name(const struct hostagg *a, uint32_t irq);

/* Names for the views: "EXTERNAL_INTERRUPT", "HLT", ... (VMX isa 1 / SVM isa 2); NULL if unknown. */
const char *hostagg_exit_name(uint16_t isa, uint32_t reason);

#endif
