/* SPDX-License-Identifier: MIT */
/*
 * vnoise-host records: what `vnoise-host record -o FILE` writes into a vnoise record file (protocol/record.h
 * gives the container: file header, CRC-protected chunks) and what `report FILE` and the live views read.
 * Every time is host CLOCK_MONOTONIC in ns. A domain is named in records by a small index (`dom`) that a
 * HOST_DOMAIN text chunk binds to its name and UUID; a domain that stops and starts again keeps its index
 * and gets a new HOST_DOMAIN chunk with the new thread ids. This header is an ABI: fixed-width fields,
 * explicit padding, sizes asserted. protocol/README.md ("vnoise-host records") is the human spec.
 */
#ifndef VNOISE_HOST_H
#define VNOISE_HOST_H

#include <stddef.h>
#include <linux/types.h>
#include "noise.h"

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
	VN_CHUNK_HOST_MATCH =
	    22, /* struct vn_host_match[payload_len / 312] (vnoise-host --guest) */
	VN_CHUNK_HOST_MSRC = 23, /* struct vn_host_msrc[payload_len / 64] */
	VN_CHUNK_HOST_CHAN = 24, /* struct vn_host_chan[payload_len / 168] */
	VN_CHUNK_HOST_FLOW = 25, /* struct vn_host_flow[payload_len / 96] (vnoise-host --flows) */
	VN_CHUNK_HOST_TAP = 26, /* struct vn_host_tap[payload_len / 120] (vnoise-host --flows) */
	VN_CHUNK_HOST_MGAP = 27, /* struct vn_host_mgap[payload_len / 152] (vnoise-host --guest) */
	VN_CHUNK_HOST_WORST =
	    28, /* struct vn_host_worst[payload_len / 440] (vnoise-host --guest) */
};

#define VN_HOST_MAX_DOMAINS 64u /* dom indices are < this */
#define VN_HOST_MAX_VCPUS 256u /* vcpu numbers are < this */
#define VN_HOST_COMM_LEN 16u

/* vn_host_period.flags: which counters were read this period (a missing source leaves its fields 0). */
#define VN_HOST_PERIOD_F_LIBVIRT \
	0x1u /* steal_ns and cpu_ns from libvirt vcpu.N.delay / vcpu.N.time */
#define VN_HOST_PERIOD_F_SCHEDSTAT \
	0x2u /* exec_ns, run_delay_ns, pcount from /proc/<pid>/task/<tid>/schedstat */
#define VN_HOST_PERIOD_F_SCHEDLOG 0x4u /* out_* and idle_ns from the dispatch log */
#define VN_HOST_PERIOD_F_PARTIAL 0x8u /* the vCPU appeared or vanished inside this period */

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
	__u32 flags; /* VN_HOST_PERIOD_F_* */
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
	__u8 flags; /* VN_HOST_OUT_F_* */
	__u16 pad; /* 0 */
	__u32 pad2; /* 0 */
	__u32 pad3; /* 0 */
};
_Static_assert(sizeof(struct vn_host_out) == 48, "vn_host_out is ABI");

#define VN_HOST_OUT_F_SPLIT 0x1u /* cut at a period boundary; the rest follows in the next period */
#define VN_HOST_OUT_F_CONT 0x2u /* continues an interval cut at the previous period boundary */
#define VN_HOST_OUT_F_GUESSED 0x4u /* an edge was inferred (missing switch event), not seen */

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
	__u32
	    flags; /* VN_HOST_RUN_F_* (0 in files written before the flag existed: read as runnable) */
	__u32 pad; /* 0 */
};
_Static_assert(sizeof(struct vn_host_run) == 64, "vn_host_run is ABI");

/* The run lies in the part of a blocked out interval before its wakeup: the vCPU was halted (the guest
 * idled there), so the task preempted nothing. Producers cut a run at the wakeup. */
#define VN_HOST_RUN_F_HALTED 0x1u

/* Aggregate kinds of vn_host_agg. */
enum vn_host_agg_kind {
	VN_HOST_AGG_IRQ = 1, /* host hardirq while the vCPU ran; id = irq number */
	VN_HOST_AGG_SOFTIRQ = 2, /* host softirq while the vCPU ran; id = softirq vector */
	VN_HOST_AGG_VECTOR =
	    3, /* host x86 vector handler while the vCPU ran; id = VN_VEC_* of noise.h */
	VN_HOST_AGG_EXIT =
	    4, /* VM exit (kvm_exit -> kvm_entry); id = exit reason, isa = 1 VMX, 2 SVM */
};

/* Count and duration of one kind/id for one vCPU over one period. */
struct vn_host_agg {
	__u64 start_ns; /* the period */
	__u64 end_ns;
	__u32 dom;
	__u32 vcpu;
	__u16 kind; /* enum vn_host_agg_kind */
	__u16 isa; /* VN_HOST_AGG_EXIT only */
	__u32 id;
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
};
_Static_assert(sizeof(struct vn_host_agg) == 56, "vn_host_agg is ABI");

/*
 * One vCPU over one period of the combined (guest + host) view: the guest gaps that were matched in the
 * period, split into guest classes net of hypervisor time, hypervisor classes and the residual; and the same
 * gaps as the guest alone explains them (gonly_*: the guest's own engine, shared/attrib/merge, in guest time).
 * Per period: sum(guest_ns) + sum(host_ns) + residual_ns == gap_ns.
 */
struct vn_host_match {
	__u64 start_ns; /* the period */
	__u64 end_ns;
	__u32 dom;
	__u32 vcpu;
	__u64 gaps; /* guest gaps matched */
	__u64 gap_ns; /* their duration */
	__u64 max_gap_ns;
	__u64 runtime_ns; /* guest sampler runtime */
	__u64 guest_ns
	    [8]; /* by enum vn_class (net of host out-time); NONE, STEAL, UNEXPLAINED are 0 */
	__u64 host_ns[VN_HCLASS_MAX]; /* by enum vn_hclass (protocol/noise.h) */
	__u64 residual_ns; /* "hw": neither side explains it */
	__u64 reduced_ns; /* guest event time that was host out-time, moved to its host cause */
	__u64 big_gaps; /* gaps >= 1 ms */
	__u64 big_matched; /* ... whose host part is at least half the gap */
	__u64 big_explained; /* ... whose residual is at most 10% of the gap */
	__u64 latency_max_ns; /* host time from a gap's end to its match (gaps that ended after the
				 channel was attached: not the backlog found in the rings) */
	__u64 latency_sum_ns; /* (average = sum / latency_gaps) */
	__u64 latency_gaps; /* gaps counted in the latency figures */
	__u64 uncertainty_max_ns; /* largest clock uncertainty of a matched gap */
	__u64 big_guest; /* gaps >= 1 ms whose guest part is at least half the gap */
	__u64 gonly_ns[8]; /* guest-only view: gap time by enum vn_class, UNEXPLAINED included */
	__u64 gonly_gaps; /* gaps the guest-only view attributed */
	__u64 gonly_gap_ns;
};

/* vn_host_msrc.kind */
enum vn_host_msrc_kind {
	VN_HOST_MSRC_GUEST =
	    0, /* combined view, guest class (cls: enum vn_class; id, comm as in vn_event) */
	/* combined view, hypervisor class (cls: enum vn_hclass); id: the pid of the host task
	 * (HOST_PREEMPT), the thread's state char (HOST_WAIT), the exit reason (VMEXIT), the IRQ's id
	 * (HOST_IRQ); comm: the task's comm or the source's name */
	VN_HOST_MSRC_HOST = 1,
	VN_HOST_MSRC_GONLY = 2, /* guest-only view (cls: enum vn_class) */
};

/* One source's share of one vCPU's period (combined or guest-only view). */
struct vn_host_msrc {
	__u64 start_ns; /* the period */
	__u32 dom;
	__u32 vcpu;
	__u8 kind; /* enum vn_host_msrc_kind */
	__u8 cls; /* by kind: enum vn_class or enum vn_hclass */
	__u16 pad; /* 0 */
	__u32 id;
	char comm[VN_HOST_COMM_LEN]; /* NUL-padded */
	__u64 count; /* gaps it took part in */
	__u64 total_ns; /* time attributed to it */
	__u64 max_ns; /* its largest part in one gap */
};

/* vn_host_chan.state */
enum vn_host_chan_state {
	VN_HOST_CHAN_ABSENT =
	    0, /* the domain has no ivshmem device, or its file could not be mapped */
	VN_HOST_CHAN_WAITING = 1, /* mapped; no guest agent has laid out the region yet */
	VN_HOST_CHAN_OK = 2, /* reading */
	VN_HOST_CHAN_CORRUPT = 3, /* the region failed validation; waiting for a new epoch */
	VN_HOST_CHAN_LOST =
	    4, /* the region file shrank under the mapping: unmapped, opened again later */
	VN_HOST_CHAN_REFUSED = 5, /* the region file's owner or mode is not trusted: not mapped */
};

/* The shared-memory channel of one domain at the end of one period (counters are totals since mapping). */
struct vn_host_chan {
	__u64 start_ns; /* the period */
	__u64 end_ns;
	__u32 dom;
	__u32 state; /* enum vn_host_chan_state */
	__u64 epoch; /* of the region (0: none) */
	__u32 agent_state; /* enum vn_shm_agent_state of the guest status, ~0u unknown */
	__u32 rings;
	__u64 records; /* records read */
	__u64 lost; /* overwritten by the guest before the host read them */
	__u64 missed; /* already overwritten when the host attached */
	__u64 torn; /* skipped: still inconsistent after retries */
	__u64 invalid; /* skipped: failed validation */
	__u64 corrupt; /* times the channel was marked corrupt */
	__u64 epochs; /* epochs attached */
	__u64 guest_dropped; /* records the guest itself lost before publishing */
	__u64 unsynced; /* records dropped because no clock model existed yet */
	__s64 clock_offset_ns; /* guest - host at end_ns */
	__u64 clock_uncertainty_ns; /* bound on the conversion error (~0: no model) */
	__u64 clock_min_rtt_ns; /* lowest exchange round trip in the fit window */
	__u64 clock_exchanges; /* exchanges completed */
	__u64 clock_rejected; /* exchanges the estimator rejected */
	__u64 late; /* records the matcher got too late (already matched past) */
	__u64 match_dropped; /* records the matcher refused (memory cap) */
};

_Static_assert(sizeof(struct vn_host_match) == 312, "vn_host_match is ABI");
_Static_assert(offsetof(struct vn_host_match, guest_ns) == 56, "vn_host_match is ABI");
_Static_assert(offsetof(struct vn_host_match, host_ns) == 120, "vn_host_match is ABI");
_Static_assert(sizeof(((struct vn_host_match *)0)->host_ns) == 4 * 8,
	       "vn_host_match.host_ns[] is ABI: enum vn_hclass 0..3");
_Static_assert(offsetof(struct vn_host_match, gonly_ns) == 232, "vn_host_match is ABI");
_Static_assert(sizeof(struct vn_host_msrc) == 64, "vn_host_msrc is ABI");
_Static_assert(offsetof(struct vn_host_msrc, comm) == 24, "vn_host_msrc is ABI");
_Static_assert(sizeof(struct vn_host_chan) == 168, "vn_host_chan is ABI");
_Static_assert(offsetof(struct vn_host_chan, clock_offset_ns) == 112, "vn_host_chan is ABI");

/*
 * vn_host_flow.dir and the index of vn_host_tap's per-direction arrays. TO_GUEST: the host sent the frame
 * into the tap (outgoing, PCAP_D_OUT, on the host's tap device) and the guest receives it: its virtio-net RX
 * interrupts and NET_RX work. FROM_GUEST: the guest sent it (incoming, PCAP_D_IN, on the tap).
 */
enum vn_host_flow_dir {
	VN_HOST_FLOW_TO_GUEST = 0,
	VN_HOST_FLOW_FROM_GUEST = 1,
	VN_HOST_FLOW_NDIR = 2,
};

/* vn_host_flow.kind. OTHER: the frames of flows that found the period's table full, summed (key 0). */
enum vn_host_flow_kind {
	VN_HOST_FLOW_KIND_FLOW = 0,
	VN_HOST_FLOW_KIND_OTHER = 1,
};

/*
 * vn_host_flow.flags, part of the key (a flow seen whole and one seen cut are different rows). FRAG: IP
 * fragments after the first (no transport header, ports 0). TRUNC: headers cut by the capture length or by a
 * length field that lies (the key holds what could be read).
 */
#define VN_HOST_FLOW_F_FRAG 0x1u
#define VN_HOST_FLOW_F_TRUNC 0x2u

/*
 * One flow on one tap of a domain over one period: a 5-tuple for IPv4/IPv6 (TCP, UDP: ports; ICMP and ICMPv6:
 * type and code in sport and dport; another IP protocol: ports 0), or, for a frame that is not IP, its
 * ethertype alone (ARP is one flow per direction). Addresses in network order, IPv4 in the first 4 bytes.
 * bytes is the frame length on the tap: Ethernet header included, no FCS, a frame the host hands over in one
 * piece (GSO) counts whole and once.
 */
struct vn_host_flow {
	__u64 start_ns; /* the period: packets whose capture time is in [start_ns, end_ns) */
	__u64 end_ns;
	__u32 dom;
	__u8 dir; /* enum vn_host_flow_dir */
	__u8 kind; /* enum vn_host_flow_kind */
	__u8 ipver; /* 4, 6; 0: not IP */
	__u8 proto; /* IP protocol (6 TCP, 17 UDP, 1 ICMP, 58 ICMPv6, ...); 0 when not IP */
	__u16 ethertype; /* after up to two VLAN tags: 0x0800, 0x86dd, 0x0806 (ARP), ... */
	__u16 sport; /* TCP/UDP source port; ICMP type */
	__u16 dport; /* TCP/UDP destination port; ICMP code */
	__u16 flags; /* VN_HOST_FLOW_F_FRAG, VN_HOST_FLOW_F_TRUNC */
	__u8 src[16];
	__u8 dst[16];
	char tap[VN_HOST_COMM_LEN]; /* the tap device (IFNAMSIZ), NUL-padded */
	__u64 packets;
	__u64 bytes;
};
_Static_assert(sizeof(struct vn_host_flow) == 96, "vn_host_flow is ABI");
_Static_assert(offsetof(struct vn_host_flow, ethertype) == 24, "vn_host_flow is ABI");
_Static_assert(offsetof(struct vn_host_flow, src) == 32, "vn_host_flow is ABI");
_Static_assert(offsetof(struct vn_host_flow, packets) == 80, "vn_host_flow is ABI");

/* vn_host_tap.state. FAILED: the capture could not be opened or stopped working while the device was
 * still there (no permission, device down); a device that went away with its domain is not a failure. */
enum vn_host_tap_state {
	VN_HOST_TAP_OK = 0,
	VN_HOST_TAP_FAILED = 1,
};

/* The capture on one tap of a domain over one period: totals by direction (enum vn_host_flow_dir). */
struct vn_host_tap {
	__u64 start_ns; /* the period */
	__u64 end_ns;
	__u32 dom;
	__u32 state; /* enum vn_host_tap_state */
	char tap[VN_HOST_COMM_LEN]; /* NUL-padded */
	__u64 packets[2]; /* frames captured (every frame is in exactly one flow or OTHER row) */
	__u64 bytes[2];
	__u64 dropped
	    [2]; /* frames the kernel dropped before the capture read them (pcap_stats ps_drop) */
	__u64 overflow
	    [2]; /* frames counted in the VN_HOST_FLOW_KIND_OTHER row: the flow table was full */
	__u64 truncated; /* frames whose flow has VN_HOST_FLOW_F_TRUNC */
	__u64 flows; /* flow rows of the period (VN_HOST_FLOW_KIND_FLOW records), both directions */
};
_Static_assert(sizeof(struct vn_host_tap) == 120, "vn_host_tap is ABI");
_Static_assert(offsetof(struct vn_host_tap, packets) == 40, "vn_host_tap is ABI");

/*
 * One guest gap of the combined view, split as the matcher split it when it matched it (vnoise-host --guest;
 * `report FILE --gaps`): guest classes net of host time, the hypervisor classes it placed in the gap, the
 * residual. sum(guest_ns) + sum(host_ns) + residual_ns == duration_ns. vmexit and host_irq come from
 * per-period aggregates without timestamps, apportioned to the vCPU's residual after the period's gaps
 * (vn_host_match), so a gap's record holds none of them: they are in its residual_ns.
 */
struct vn_host_mgap {
	__u64 start_ns; /* guest CLOCK_MONOTONIC: the gap's start mapped back from host time */
	__u64 host_start_ns; /* host CLOCK_MONOTONIC */
	__u64 duration_ns; /* host time */
	__u64 uncertainty_ns; /* the clock model's error bound at the gap (~0: none) */
	__u32 dom;
	__u32 vcpu;
	__u64 guest_ns[8]; /* by enum vn_class; NONE, STEAL, UNEXPLAINED are 0 */
	__u64 host_ns[VN_HCLASS_MAX]; /* by enum vn_hclass */
	__u64 residual_ns; /* "hw" */
	__u64 pad; /* 0 */
};
_Static_assert(sizeof(struct vn_host_mgap) == 152, "vn_host_mgap is ABI");
_Static_assert(offsetof(struct vn_host_mgap, guest_ns) == 40, "vn_host_mgap is ABI");
_Static_assert(offsetof(struct vn_host_mgap, host_ns) == 104, "vn_host_mgap is ABI");

#define VN_HOST_WORST_PARTS 12u

/* One source's part of a worst gap (struct vn_host_worst): kind and its cls/id/comm as in vn_host_msrc
 * (GUEST: a guest class, net of host time; HOST: a hypervisor class and its cause). */
struct vn_host_wpart {
	__u8 kind; /* enum vn_host_msrc_kind: VN_HOST_MSRC_GUEST or VN_HOST_MSRC_HOST */
	__u8 cls;
	__u16 pad; /* 0 */
	__u32 id;
	char comm[VN_HOST_COMM_LEN]; /* NUL-padded */
	__u64 ns;
};
_Static_assert(sizeof(struct vn_host_wpart) == 32, "vn_host_wpart is ABI");

/*
 * The longest guest gap a vCPU's matcher matched in one period (vnoise-host --guest), split by source as the
 * matcher split it: the largest parts (at most VN_HOST_WORST_PARTS, largest first), what the parts beyond
 * them hold (other_ns) and the residual. sum(part[].ns) + other_ns + residual_ns == duration_ns. As in
 * vn_host_mgap, vmexit and host_irq (aggregates without timestamps) are in residual_ns.
 */
struct vn_host_worst {
	__u64 start_ns; /* guest CLOCK_MONOTONIC */
	__u64 host_start_ns; /* host CLOCK_MONOTONIC */
	__u64 duration_ns; /* host time */
	__u32 dom;
	__u32 vcpu;
	__u32 nparts;
	__u32 pad; /* 0 */
	__u64 other_ns;
	__u64 residual_ns; /* "hw" */
	struct vn_host_wpart part[VN_HOST_WORST_PARTS];
};
_Static_assert(sizeof(struct vn_host_worst) == 440, "vn_host_worst is ABI");

#endif
