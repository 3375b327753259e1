/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the passive kernel helper (passive.bpf.c) and its loader (passive.c): settings and the
 * per-CPU state in the program's .bss. Types only (STYLE.md 2). The per-target counters are struct vn_tgt
 * (protocol/app.h).
 */
#ifndef VNOISE_GUEST_BPF_PASSIVE_H
#define VNOISE_GUEST_BPF_PASSIVE_H

#include "app.h"
#include "bpf/nest.h"

#define PV_MAX_CPUS 256 /* power of two: index masks keep the verifier happy */

#define PV_SPAN_CHUNK_NS 10000000ull /* a run still going is recorded in pieces of at least 10 ms */
#define PV_SPAN_RING (256u * 1024u) /* bytes of the span ring (pv_spans) when spans are on */

/* Settings, the helper's whole .rodata: written by the loader before load. */
struct pv_config {
	__u32
	    cpu_slot[PV_MAX_CPUS]; /* CPU mode: target index + 1 of the CPU's user tasks; 0: none */
	__u32 ncgroups; /* cgroup targets present: look tasks' cgroup ids up */
	__u32 spans; /* 1: send run and runnable spans of targets to user space (pv_spans) */
};

enum pv_span_kind {
	PV_SPAN_RUN = 1, /* a target thread ran on cpu over [start_ns, end_ns) */
	PV_SPAN_WAIT =
	    2, /* it was runnable (woken, or preempted) from start_ns until it ran on cpu */
};

/* One record of the span ring (BPF_MAP_TYPE_RINGBUF pv_spans), times in CLOCK_MONOTONIC ns. */
struct pv_span {
	__u64 start_ns;
	__u64 end_ns;
	__u32 tgt; /* target index */
	__u32 cpu;
	__u32 pid; /* the thread */
	__u32 kind; /* enum pv_span_kind */
};

/* Per-CPU state; written only by programs running on that CPU. */
struct pv_cpu {
	__u32 tgt; /* target index + 1 of the task on the CPU; 0: none */
	__u32 cur_pid; /* the task on the CPU as last seen (switch or interrupt) */
	__u64 in_ns; /* when that target's run began */
	__u64 steal0; /* runqueue steal clock at the last reading */
	__u64 runs; /* target runs closed (statistics) */
	__u32 wait_tgt; /* target index + 1 of a preempted target waiting for this CPU; 0: none */
	__u32 wait_pid; /* ... its thread */
	__u64 seg_ns; /* the last switch on this CPU */
	struct nest_stack
	    nest; /* open interrupts (softirq < irq), innermost last; no steal clock */
	__u64 span_in; /* spans: start of the current target run's part not yet recorded; 0: none */
	__u64 span_drops; /* spans the ring had no room for */
};

#endif
