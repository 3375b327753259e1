/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the eBPF kernel helper (ktrace.bpf.c) and its loader (ktrace.c): the per-CPU state
 * (nesting stack, base level, ring position, counters) kept in the program's .bss. Types only (STYLE.md 2).
 */
#ifndef VNOISE_GUEST_BPF_KTRACE_H
#define VNOISE_GUEST_BPF_KTRACE_H

#include "noise.h"
#include "bpf/nest.h"

#define KTRACE_MAX_CPUS 256 /* power of two: index masks keep the verifier happy */

/* Per-CPU state; written only by programs running on that CPU. Counters are read by user space. */
struct ktrace_cpu {
	__u64 base_ns; /* when the CPU last returned to base level (sampler or idle) */
	__u64 base_steal; /* steal clock then */
	__u64 obs_steal; /* lagging steal clock (KTRACE_STEAL 2): last value seen */
	__u64 obs_last_ns; /* ... when it was last read */
	__u64 obs_pre_ns; /* ... the reading before the last change */
	__u64 head; /* next ring position (taken with a compare-and-swap) */
	__u64 tail_seen; /* tail[] as last read: read again only when the ring looks full */
	__u64 events; /* records written to the ring */
	__u64 dropped; /* records lost: ring buffer full */
	__u64 desync; /* exits without a matching entry, overflowing stacks */
	struct nest_stack nest; /* open events, innermost last */
};

/* Settings, the helper's whole .rodata: written by the loader before load, constant afterwards. */
struct ktrace_config {
	__u8 monitored[KTRACE_MAX_CPUS]; /* 1: this CPU emits records */
	__u32 ring_slot[KTRACE_MAX_CPUS]; /* index of the CPU's ring in evring */
	__u32 ring_order; /* records per ring: 1 << ring_order */
	__u32 pad;
};

/* One ring slot: the record and its sequence (position + 1), written after the record. */
struct ktrace_slot {
	__u64 seq;
	struct vn_event e;
};
_Static_assert(sizeof(struct ktrace_slot) == 64, "one cache line per slot");

/* The helper's whole .bss: user space maps it (sampler_tid and tail are written there, counters read). */
struct ktrace_shared {
	__u64 tail[KTRACE_MAX_CPUS]; /* per CPU: ring position user space has consumed up to */
	__u32 sampler_tid[KTRACE_MAX_CPUS]; /* while this tid runs on the CPU it is at base level */
	struct ktrace_cpu cpus[KTRACE_MAX_CPUS];
};

#endif
