/* SPDX-License-Identifier: MIT */
/*
 * Types of the per-CPU nesting stack that the guest's kernel helpers share (logic in nest.bpf.h): every
 * event source (a thread's run, an IRQ, a softirq, a hypercall wrapper) opens a frame at entry and closes
 * it at exit; a frame's net time is its wall time minus the wall time of the frames nested in it minus the
 * hypervisor steal that happened in it and not in them. Types only (STYLE.md 2); they live in the helpers'
 * .bss, so user space sees them too.
 */
#ifndef VNOISE_GUEST_BPF_NEST_H
#define VNOISE_GUEST_BPF_NEST_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define NEST_MAX_DEPTH 8 /* thread < softirq < irq < hypercall < nmi needs 5 */

/* One open event on a CPU's stack. */
struct nest_frame {
	__u64 start_ns; /* entry time */
	__u64 child_ns; /* wall time of the frames nested in this one */
	__u64 steal0_ns; /* steal clock at entry (0 without a steal clock) */
	__u64 steal_child; /* steal that happened inside nested frames */
	__u32 id;
	__u8 cls; /* enum vn_class */
	__u8 pad[3];
};

/* One CPU's stack; written only by programs running on that CPU. */
struct nest_stack {
	__u32 depth; /* open frames; may exceed NEST_MAX_DEPTH (those are not stored) */
	__u32 pad;
	struct nest_frame f[NEST_MAX_DEPTH];
};

#endif
