/* SPDX-License-Identifier: MIT */
/*
 * vnoise-host records: what `vnoise-host record -o FILE` writes into a vnoise record file (protocol/record.h
 * gives the container: file header, CRC-protected chunks) and what `report FILE` and the live views read.
 * Every time is host CLOCK_MONOTONIC in ns. A domain is named in records by a small index (`dom`) that a
 * HOST_DOMAIN text chunk binds to its name and UUID; a domain that stops and starts again keeps its index
 * and gets a new HOST_DOMAIN chunk with the new thread ids. This header is an ABI: fixed-width fields,
 * explicit padding, sizes asserted. protocol/README.md ("vnoise-host records") is the human spec.
 */
#ifndef VNOISE_PROTOCOL_HOST_H
#define VNOISE_PROTOCOL_HOST_H

#include <stddef.h>
#include <linux/types.h>

/* Chunk types of host record files (the guest's are 1..5 in record.h). */
enum vn_host_chunk_type {
	VN_CHUNK_HOST_META =
	    16, /* text key=value: tool, period_ns, dispatch, irqs, kvm, hostname, kernel */
	VN_CHUNK_HOST_DOMAIN =
	    17, /* text key=value: one domain mapping or lifecycle change (README) */
	VN_CHUNK_HOST_PERIOD = 18, /* struct vn_host_period[payload_len / 128] */
	VN_CHUNK_HOST_OUT = 19, /* struct vn_host_out[payload_len / 48] */
	VN_CHUNK_HOST_RUN = 20, /* struct vn_host_run[payload_len / 64] */
	VN_CHUNK_HOST_AGG = 21, /* struct vn_host_agg[payload_len / 56] */
};

#define VN_HOST_MAX_DOMAINS 64u /* dom indices are < this */
#define VN_HOST_MAX_VCPUS 256u /* vcpu numbers are < this */
#define VN_HOST_COMM_LEN 16u

/* vn_host_period.flags: which counters were read this period (a missing source leaves its fields 0). */
#define VN_HP_LIBVIRT 0x1u /* steal_ns and cpu_ns from libvirt vcpu.N.delay / vcpu.N.time */
#define VN_HP_SCHEDSTAT \
	0x2u /* exec_ns, run_delay_ns, pcount from /proc/<pid>/task/<tid>/schedstat */
#define VN_HP_DISPATCH 0x4u /* out_* and idle_ns from the dispatch log */
#define VN_HP_PARTIAL 0x8u /* the vCPU appeared or vanished inside this period */

/*
 * One vCPU over one period [start_ns, end_ns). Counter fields are deltas over the period. out_ns is the time
 * the vCPU thread was switched out; out_r_ns the part it was preempted while runnable (state R),
 * out_s_ns the part it was blocked (S or D); out_periods counts out intervals that began in the period.
 * wait_ns is the runnable-but-not-running time the dispatch log saw (preempted time plus wakeup->switch-in
 * delays): it is the dispatch log's view of run_delay. idle_ns is the part of out_ns during which the pCPU
 * the vCPU left ran its idle task.
 */
struct vn_host_period {
	__u64 start_ns;
	__u64 end_ns;
	__u32 dom;
	__u32 vcpu;
	__u32 tid; /* host thread id of the vCPU */
	__u32 cpu; /* pCPU the vCPU ran on last (~0u unknown) */
	__u64 steal_ns; /* libvirt vcpu.N.delay delta: host-side steal */
	__u64 cpu_ns; /* libvirt vcpu.N.time delta (10 ms granular) */
	__u64 exec_ns; /* schedstat sum_exec_runtime delta */
	__u64 run_delay_ns; /* schedstat run_delay delta */
	__u64 pcount; /* schedstat pcount delta: times the thread was switched in */
	__u64 out_ns;
	__u64 out_periods;
	__u64 out_r_ns;
	__u64 out_s_ns;
	__u64 idle_ns;
	__u64 wait_ns;
	__u32 flags; /* VN_HP_* */
	__u32 pad; /* 0 */
};
_Static_assert(sizeof(struct vn_host_period) == 128, "vn_host_period is ABI");
_Static_assert(offsetof(struct vn_host_period, steal_ns) == 32, "vn_host_period is ABI");
_Static_assert(offsetof(struct vn_host_period, flags) == 120, "vn_host_period is ABI");

/* One interval a vCPU thread was switched out: [start_ns, end_ns) on pCPU cpu. */
struct vn_host_out {
	__u64 start_ns;
	__u64 end_ns;
	__u64 wake_ns; /* when it was woken (0: preempted, never blocked, or wakeup not seen) */
	__u32 dom;
	__u32 vcpu;
	__u32 cpu; /* the pCPU it left */
	__u8 state; /* 'R' preempted, 'S' sleeping, 'D' uninterruptible, '?' unknown */
	__u8 flags; /* VN_HO_* */
	__u16 pad; /* 0 */
	__u32 pad2; /* 0 */
	__u32 pad3; /* 0 */
};
_Static_assert(sizeof(struct vn_host_out) == 48, "vn_host_out is ABI");

#define VN_HO_SPLIT 0x1u /* cut at a period boundary; the rest follows in the next period */
#define VN_HO_CONT 0x2u /* continues an interval cut at the previous period boundary */
#define VN_HO_GUESSED 0x4u /* an edge was inferred (missing switch event), not seen */

/* A host task's run on the pCPU a vCPU left, while that vCPU was out: [start_ns, end_ns). */
struct vn_host_run {
	__u64 start_ns;
	__u64 end_ns;
	__u64
	    out_start_ns; /* start_ns of the out interval it belongs to (groups runs per interval) */
	__u32 dom;
	__u32 vcpu;
	__u32 pid; /* host tid of the task (0: idle) */
	__u32 cpu;
	char comm[VN_HOST_COMM_LEN];
	__u64 pad; /* 0 */
};
_Static_assert(sizeof(struct vn_host_run) == 64, "vn_host_run is ABI");

/* Aggregate kinds of vn_host_agg. */
enum vn_host_agg_kind {
	VN_HA_IRQ = 1, /* host hardirq while the vCPU ran; id = irq number */
	VN_HA_SOFTIRQ = 2, /* host softirq while the vCPU ran; id = softirq vector */
	VN_HA_VECTOR = 3, /* host x86 vector handler while the vCPU ran; id = VN_VEC_* of noise.h */
	VN_HA_EXIT = 4, /* VM exit (kvm_exit -> kvm_entry); id = exit reason, isa = 1 VMX, 2 SVM */
};

/* Count and duration of one kind/id for one vCPU over one period. */
struct vn_host_agg {
	__u64 start_ns; /* the period */
	__u64 end_ns;
	__u32 dom;
	__u32 vcpu;
	__u16 kind; /* enum vn_host_agg_kind */
	__u16 isa; /* VN_HA_EXIT only */
	__u32 id;
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
};
_Static_assert(sizeof(struct vn_host_agg) == 56, "vn_host_agg is ABI");

#endif
