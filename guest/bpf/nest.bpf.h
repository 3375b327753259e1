/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The per-CPU nesting stack of the guest's kernel helpers (ktrace.bpf.c, passive.bpf.c), for BPF code only:
 * include it after vmlinux.h and bpf_helpers.h. Types in nest.h.
 *
 * An event source calls nest_push at entry and nest_pop at exit. nest_pop hands over the closed frame's net
 * time (wall time minus the wall time of the frames nested in it minus its own steal) and charges its wall
 * time and steal to the frame it was nested in; an event that has no frame of its own (an NMI, known only
 * at its end) adds its time to nest_top's child_ns. A helper with a steal clock defines NEST_STEAL_CLOCK
 * to 1 before including this header and passes the clock as st; without one (the default 0) st is ignored,
 * no steal is subtracted and the frames' steal fields are left unset.
 * Frames beyond NEST_MAX_DEPTH are counted, not stored. Programs on one CPU can nest (an IRQ inside a
 * softirq program, an NMI anywhere): nest_pop copies what it hands over before it drops the frame, so a
 * program that then pushes into the freed place cannot change it.
 */
#ifndef VNOISE_GUEST_BPF_NEST_BPF_H
#define VNOISE_GUEST_BPF_NEST_BPF_H

#include "bpf/nest.h"

#ifndef NEST_STEAL_CLOCK
#define NEST_STEAL_CLOCK 0
#endif

/* nest_pop's outcome */
enum nest_pop_result {
	NEST_CLOSED, /* the top frame was closed: see struct nest_closed */
	NEST_EMPTY, /* no frame open (an exit whose entry came before the helper attached) */
	NEST_UNSTORED, /* the top frame was beyond NEST_MAX_DEPTH: popped, nothing known of it */
	NEST_MISMATCH, /* the top frame is of another class: the stack was emptied */
};

/* A frame as nest_pop closed it. */
struct nest_closed {
	__u64 start_ns;
	__u64 wall_ns; /* now - start_ns */
	__u64 net_ns; /* wall minus nested frames minus own steal; 0 if that is negative */
	__u64
	    steal_ns; /* own steal: in the frame and not in the frames nested in it (0: no clock) */
	__u32 id;
	__u32 depth; /* of the closed frame: 0 for the outermost */
	const struct nest_frame *parent; /* the frame it was nested in; NULL at the outermost */
};

/*
 * Frame i, or NULL past the stack's end. The barrier keeps the compiler from dropping the check as
 * redundant, so older verifiers (6.1) see the bound on the very register used for the index.
 */
static __always_inline struct nest_frame *nest_frame_at(struct nest_stack *n, __u32 i)
{
	asm volatile("" : "+r"(i));
	if (i >= NEST_MAX_DEPTH)
		return 0;
	return &n->f[i];
}

/* The top frame, or NULL when none is open or the top one is not stored. */
static __always_inline struct nest_frame *nest_top(struct nest_stack *n)
{
	__u32 d = n->depth;

	return d >= 1 ? nest_frame_at(n, d - 1) : 0;
}

/*
 * Open a frame of class cls at now; st is the steal clock. Returns the frame, or NULL when NEST_MAX_DEPTH
 * frames are open already (the new one is counted in depth, not stored).
 */
static __always_inline struct nest_frame *nest_push(struct nest_stack *n, __u8 cls, __u32 id,
						    __u64 now, __u64 st)
{
	__u32 d = n->depth;
	struct nest_frame *f;

	n->depth = d + 1;
	f = nest_frame_at(n, d);
	if (!f)
		return 0;
	f->start_ns = now;
	f->child_ns = 0;
	if (NEST_STEAL_CLOCK) {
		f->steal0_ns = st;
		f->steal_child = 0;
	}
	f->id = id;
	f->cls = cls;
	return f;
}

/*
 * Close the top frame, which must be of class cls, at now (st: the steal clock). On NEST_CLOSED, *c
 * describes it and its parent has been charged; the other outcomes leave *c unset.
 */
static __always_inline enum nest_pop_result nest_pop(struct nest_stack *n, __u8 cls, __u64 now,
						     __u64 st, struct nest_closed *c)
{
	__u32 d = n->depth;
	struct nest_frame *f, *p;
	__u64 stolen = 0;

	if (d == 0)
		return NEST_EMPTY;
	f = nest_frame_at(n, d - 1);
	if (!f) {
		n->depth = d - 1;
		return NEST_UNSTORED;
	}
	if (f->cls != cls) {
		n->depth = 0;
		return NEST_MISMATCH;
	}
	c->start_ns = f->start_ns;
	c->id = f->id;
	c->depth = d - 1;
	c->wall_ns = now - f->start_ns;
	c->steal_ns = 0;
	if (NEST_STEAL_CLOCK) {
		stolen = st - f->steal0_ns;
		c->steal_ns = stolen > f->steal_child ? stolen - f->steal_child : 0;
	}
	c->net_ns =
	    c->wall_ns > f->child_ns + c->steal_ns ? c->wall_ns - f->child_ns - c->steal_ns : 0;
	p = d >= 2 ? nest_frame_at(n, d - 2) : 0;
	if (p) {
		p->child_ns += c->wall_ns;
		if (NEST_STEAL_CLOCK)
			p->steal_child += stolen;
	}
	c->parent = p;
	n->depth = d - 1;
	return NEST_CLOSED;
}

#endif
