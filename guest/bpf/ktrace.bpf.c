// SPDX-License-Identifier: GPL-2.0-only
/*
 * vnoise kernel helper: net-duration interference events on the monitored CPUs (osnoise semantics, seed 002).
 *
 * Every event source (threads via sched_switch, device IRQs, x86 vector handlers, softirqs, KVM hypercall
 * wrappers, NMIs) opens a frame on a per-CPU nesting stack (nest.bpf.h) at entry and closes it at exit. At
 * exit the frame's net time is its wall time minus the wall time of the frames nested in it minus the
 * hypervisor steal that happened inside it (the KVM steal clock, read from the per-CPU steal_time area). The
 * record names its parent so user space can split any window exactly. Steal that happens while the CPU runs
 * the sampler (no frame open) is reported as an observation when the next frame opens. Records go to a ring
 * buffer without wake-ups; user space drains it on a timer. Only CPUs flagged in `monitored` emit anything.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "bpf/ktrace.h"

#ifndef KTRACE_STEAL
#define KTRACE_STEAL 1
#endif

/* Only the exact steal clock is subtracted per frame; the lagging one is reported apart (steal_observe). */
#define NEST_STEAL_CLOCK (KTRACE_STEAL == 1)
#include "bpf/nest.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct ktrace_config cfg = { .ring_order = 12 };

/* Sampler tids (set by user space) and per-CPU nesting state; the only .bss variable. */
struct ktrace_shared kh;

/*
 * Per-CPU single-producer rings of records in one mmapable array (slot = ring_slot[cpu] << ring_order); the
 * loader sizes it. Cheaper than a BPF ring buffer (no lock, no reservation header) and never wakes anyone.
 * Programs on one CPU can nest (an IRQ inside a softirq program, an NMI anywhere), so positions are taken
 * with an atomic add and each slot carries its sequence, written last.
 */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct ktrace_slot);
	__uint(max_entries, 1);
} evring SEC(".maps");

/*
 * Steal clock. KTRACE_STEAL 1: the KVM steal_time area itself (exact at any instant; needs the per-CPU symbol in
 * kallsyms). KTRACE_STEAL 2: the runqueue's copy (rq->prev_steal_time_rq), refreshed only when the scheduler
 * updates the rq clock, so it lags; then steal is only reported as observations over wide windows (see
 * steal_observe) and not subtracted inside frames. KTRACE_STEAL 0: no steal clock.
 */
#if KTRACE_STEAL == 1
extern struct kvm_steal_time steal_time __ksym;

static __always_inline __u64 steal_now(void)
{
	struct kvm_steal_time *st = bpf_this_cpu_ptr(&steal_time);

	return st->steal;
}
#define frame_steal() steal_now()
#elif KTRACE_STEAL == 2
/* Through t, which must be the current task (sched_switch has it as prev: no helper call). */
static __always_inline __u64 steal_rq(struct task_struct *t)
{
	struct cfs_rq *cr = t->se.cfs_rq; /* BTF pointer walks: plain loads, no helper calls */

	return cr ? cr->rq->prev_steal_time_rq : 0;
}

static __always_inline __u64 steal_now(void)
{
	return steal_rq(bpf_get_current_task_btf());
}
#define frame_steal() 0
#else
static __always_inline __u64 steal_now(void)
{
	return 0;
}
#define frame_steal() 0
#endif
#if KTRACE_STEAL != 2
#define steal_rq(t) 0
#endif

static __always_inline struct ktrace_cpu *cpu_state(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (cpu >= KTRACE_MAX_CPUS || !cfg.monitored[cpu & (KTRACE_MAX_CPUS - 1)])
		return 0;
	return &kh.cpus[cpu & (KTRACE_MAX_CPUS - 1)];
}

static __always_inline __u32 sat32(__u64 v, __u8 *flags)
{
	if (v > 0xffffffffULL) {
		*flags |= VN_EVF_TRUNCATED;
		return 0xffffffffU;
	}
	return (__u32)v;
}

/*
 * Take the next position of cpu's ring: the slot, or NULL (counted as dropped) when the ring is full. The
 * tail user space writes is read only when the ring looks full by the copy in s->tail_seen, so most records
 * do not touch a line the reader dirties. A program nested in this one (an IRQ in a softirq program, an NMI)
 * can take a position between the check and the take: compare-and-swap, so a taken position is always one
 * the reader has freed (an atomic add could take one past the tail and overwrite a record not read yet,
 * whose slot then never gets the sequence the reader waits for: the ring would stall for good). A position
 * lost to a nested program is tried again, up to EV_TRIES times in all (it was tried twice: QEMU TCG delivers
 * pending interrupts back to back after a vCPU stall, and a second loss is the likely cause of the one record
 * of 5.4 M the 30-minute soak saw dropped with the rings nearly empty). Each loss means a nested program took
 * a position, so the common path is the first try.
 */
#define EV_TRIES 8
static __always_inline struct ktrace_slot *ev_reserve(struct ktrace_cpu *s, __u32 cpu, __u64 *pos)
{
	__u64 size = 1ULL << cfg.ring_order, h = s->head, seen;
	struct ktrace_slot *sl;
	__u32 idx;
	int i;

	for (i = 0; i < EV_TRIES; i++) {
		if (h - s->tail_seen >= size) { /* looks full: see how far user space has come */
			s->tail_seen = kh.tail[cpu & (KTRACE_MAX_CPUS - 1)];
			if (h - s->tail_seen >= size)
				goto drop;
		}
		seen = __sync_val_compare_and_swap(&s->head, h, h + 1);
		if (seen == h)
			goto take;
		h = seen; /* a nested program took h: try the next one */
	}
	goto drop;
take:
	idx = (cfg.ring_slot[cpu & (KTRACE_MAX_CPUS - 1)] << cfg.ring_order) +
	      (__u32)(h & (size - 1));
	sl = bpf_map_lookup_elem(&evring, &idx);
	if (!sl)
		goto drop; /* cannot happen: the loader sized the map */
	s->events++;
	*pos = h;
	return sl;
drop:
	s->dropped++;
	return 0;
}

static __always_inline void ev_submit(struct ktrace_slot *sl, __u64 pos)
{
	asm volatile("" ::: "memory"); /* record before sequence; x86 keeps store order */
	sl->seq = pos + 1;
}

/* One record as its writer knows it; ev_write saturates the times and fills in the rest. */
struct ev_desc {
	__u64 start_ns, end_ns;
	__u64 net_ns, steal_ns; /* saturated to 32 bits, flagged VN_EVF_TRUNCATED */
	__u32 id;
	__u32 depth; /* stored modulo 256: writers clamp it where it can be larger */
	__u8 cls;
	const struct nest_frame *parent; /* the frame it is nested in; NULL: top level */
	const char *comm; /* VN_COMM_LEN bytes for THREAD records; NULL: all zero */
};

/* Write record d at the head of cpu's ring (counted as dropped when the ring is full). */
static __always_inline void ev_write(struct ktrace_cpu *s, __u32 cpu, const struct ev_desc *d)
{
	struct ktrace_slot *sl;
	struct vn_event *e;
	__u64 pos;
	__u8 fl = 0;

	sl = ev_reserve(s, cpu, &pos);
	if (!sl)
		return;
	e = &sl->e;
	e->start_ns = d->start_ns;
	e->end_ns = d->end_ns;
	e->net_ns = sat32(d->net_ns, &fl);
	e->steal_ns = sat32(d->steal_ns, &fl);
	e->id = d->id;
	e->cpu = cpu;
	e->cls = d->cls;
	e->depth = d->depth;
	if (d->parent) {
		e->parent_cls = d->parent->cls;
		e->parent_id = d->parent->id;
	} else {
		e->parent_cls = VN_CLASS_NONE;
		e->parent_id = 0;
	}
	e->flags = fl;
	e->pad[0] = e->pad[1] = 0;
	if (d->comm)
		__builtin_memcpy(e->comm, d->comm, VN_COMM_LEN);
	else
		__builtin_memset(e->comm, 0, sizeof(e->comm));
	ev_submit(sl, pos);
}

/* Report delta ns of steal that happened somewhere in [start, now). */
static __always_inline void steal_emit(struct ktrace_cpu *s, __u64 start, __u64 now, __u64 delta)
{
	struct ev_desc d = {
		.start_ns = start, .end_ns = now, .net_ns = delta, .cls = VN_CLASS_STEAL
	};

	ev_write(s, bpf_get_smp_processor_id(), &d);
}

/* Exact steal clock: report the steal that happened at base level since the CPU last got there. */
static __always_inline void base_leave(struct ktrace_cpu *s, __u64 now, __u64 st)
{
	if (KTRACE_STEAL == 1 && st > s->base_steal && s->base_ns)
		steal_emit(s, s->base_ns, now, st - s->base_steal);
}

/*
 * Lagging steal clock: the value read now reflects steal up to the rq clock update before it, which happened
 * after the reading that preceded the previous change. So a change is reported over [that reading, now).
 */
static __always_inline void steal_observe(struct ktrace_cpu *s, __u64 now, __u64 st)
{
	if (KTRACE_STEAL != 2)
		return;
	if (!st)
		return;
	if (s->obs_steal && st > s->obs_steal)
		steal_emit(s, s->obs_pre_ns, now, st - s->obs_steal);
	if (st != s->obs_steal || !s->obs_pre_ns)
		s->obs_pre_ns = s->obs_last_ns ? s->obs_last_ns : now;
	s->obs_steal = st;
	s->obs_last_ns = now;
}

/* Open a frame at now; st is the exact steal clock (KTRACE_STEAL 1) or 0. */
static __always_inline void frame_push(struct ktrace_cpu *s, __u8 cls, __u32 id, __u64 now,
				       __u64 st)
{
	if (!s->nest.depth)
		base_leave(s, now, st);
	if (!nest_push(&s->nest, cls, id, now, st))
		s->desync++;
}

/* The stack does not match what happens (an exit of another event): count it, start over at base level. */
static __always_inline void lost_track(struct ktrace_cpu *s, __u64 now, __u64 st)
{
	s->desync++;
	s->nest.depth = 0;
	s->base_ns = now;
	s->base_steal = st;
}

/* Record the closed frame c of class cls, ended at now; comm is the thread's name for THREAD frames. */
static __always_inline void closed_emit(struct ktrace_cpu *s, __u32 cpu, __u8 cls, const char *comm,
					__u64 now, const struct nest_closed *c)
{
	struct ev_desc d = { .start_ns = c->start_ns,
			     .end_ns = now,
			     .net_ns = c->net_ns,
			     .steal_ns = c->steal_ns,
			     .id = c->id,
			     .depth = c->depth,
			     .cls = cls,
			     .parent = c->parent,
			     .comm = comm };

	ev_write(s, cpu, &d);
}

/* Close the top frame, which must be of class cls; comm is the thread's name for THREAD frames. */
static __always_inline void frame_pop(struct ktrace_cpu *s, __u32 cpu, __u8 cls, const char *comm,
				      __u64 now, __u64 st)
{
	struct nest_closed c;

	switch (nest_pop(&s->nest, cls, now, st, &c)) {
	case NEST_CLOSED:
		break;
	case NEST_EMPTY:
		s->desync++; /* exit of something that began before we attached */
		return;
	case NEST_MISMATCH:
		lost_track(s, now, st);
		return;
	default: /* NEST_UNSTORED: nothing known of it */
		return;
	}
	closed_emit(s, cpu, cls, comm, now, &c);
	if (c.depth == 0) {
		s->base_ns = now;
		s->base_steal = st;
	}
}

/*
 * Start handling an event on this CPU: NULL when the CPU is not monitored; else its state, with *now the
 * event's time and a change of the lagging steal clock reported.
 */
static __always_inline struct ktrace_cpu *event_begin(__u64 *now)
{
	struct ktrace_cpu *s = cpu_state();

	if (!s)
		return 0;
	*now = bpf_ktime_get_ns();
	if (KTRACE_STEAL == 2)
		steal_observe(s, *now, steal_now());
	return s;
}

static __always_inline int on_enter(__u8 cls, __u32 id)
{
	__u64 now;
	struct ktrace_cpu *s = event_begin(&now);

	if (s)
		frame_push(s, cls, id, now, frame_steal());
	return 0;
}

static __always_inline int on_exit(__u8 cls)
{
	__u64 now;
	struct ktrace_cpu *s = event_begin(&now);

	if (s)
		frame_pop(s, bpf_get_smp_processor_id(), cls, 0, now, frame_steal());
	return 0;
}

/*
 * prev leaves the CPU: the open frame must be its own. Some kernels do not emit every switch (idle->task on
 * CPU1 of the 6.18 Firecracker kernel, REFERENCE.md §6): then the frame belongs to a task whose switch-out
 * was not seen, its end is unknown, and it is dropped, not misattributed.
 */
static __always_inline void switch_out(struct ktrace_cpu *s, __u32 cpu, struct task_struct *prev,
				       __u64 now, __u64 st)
{
	if (s->nest.depth == 1 && s->nest.f[0].cls == VN_CLASS_THREAD &&
	    s->nest.f[0].id == (__u32)prev->pid)
		frame_pop(s, cpu, VN_CLASS_THREAD, prev->comm, now, st);
	else
		lost_track(s, now, st);
}

/* Every switch on a monitored CPU: one clock read; prev is the current task, so no helper finds it. */
SEC("tp_btf/sched_switch")
int BPF_PROG(ktrace_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct ktrace_cpu *s;
	__u64 now, st;
	__u32 pid;

	if (cpu >= KTRACE_MAX_CPUS || !cfg.monitored[cpu & (KTRACE_MAX_CPUS - 1)])
		return 0;
	cpu &= KTRACE_MAX_CPUS - 1;
	s = &kh.cpus[cpu];
	now = bpf_ktime_get_ns();
	steal_observe(s, now, steal_rq(prev));
	st = frame_steal();
	if (s->nest.depth)
		switch_out(s, cpu, prev, now, st);
	pid = next->pid;
	if (pid == 0 || pid == kh.sampler_tid[cpu]) {
		if (!s->base_ns) {
			s->base_ns = now;
			s->base_steal = st;
		}
		return 0;
	}
	frame_push(s, VN_CLASS_THREAD, pid, now, st);
	return 0;
}

SEC("tp_btf/nmi_handler")
int BPF_PROG(ktrace_nmi, void *handler, s64 delta_ns, int handled)
{
	struct ktrace_cpu *s = cpu_state();
	struct nest_frame *pf;
	struct ev_desc d = { .cls = VN_CLASS_NMI };
	__u32 depth;

	if (!s || delta_ns <= 0)
		return 0;
	d.end_ns = bpf_ktime_get_ns();
	d.net_ns = delta_ns;
	d.start_ns = d.end_ns - d.net_ns;
	depth = s->nest.depth;
	d.depth = depth < 255 ? depth : 255;
	pf = nest_top(&s->nest); /* the NMI interrupted it */
	d.parent = pf;
	ev_write(s, bpf_get_smp_processor_id(), &d);
	if (pf)
		pf->child_ns += d.net_ns;
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(ktrace_irq_entry, int irq)
{
	return on_enter(VN_CLASS_IRQ, (__u32)irq);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(ktrace_irq_exit, int irq)
{
	return on_exit(VN_CLASS_IRQ);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(ktrace_softirq_entry, unsigned int vec)
{
	return on_enter(VN_CLASS_SOFTIRQ, vec);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(ktrace_softirq_exit, unsigned int vec)
{
	return on_exit(VN_CLASS_SOFTIRQ);
}

/* x86 vector handlers: irq_handler_entry does not see them (LAPIC timer, IPIs). */
#define KTRACE_VECTOR(tp, v)                                      \
	SEC("tp_btf/" #tp "_entry")                               \
	int BPF_PROG(ktrace_##tp##_entry, int vector)             \
	{                                                         \
		return on_enter(VN_CLASS_IRQ, VN_VEC_BASE + (v)); \
	}                                                         \
	SEC("tp_btf/" #tp "_exit")                                \
	int BPF_PROG(ktrace_##tp##_exit, int vector)              \
	{                                                         \
		return on_exit(VN_CLASS_IRQ);                     \
	}

KTRACE_VECTOR(local_timer, VN_VEC_LOCAL_TIMER)
KTRACE_VECTOR(reschedule, VN_VEC_RESCHEDULE)
KTRACE_VECTOR(call_function, VN_VEC_CALL_FUNCTION)
KTRACE_VECTOR(call_function_single, VN_VEC_CALL_FUNCTION_SINGLE)
KTRACE_VECTOR(irq_work, VN_VEC_IRQ_WORK)
KTRACE_VECTOR(x86_platform_ipi, VN_VEC_X86_PLATFORM_IPI)
KTRACE_VECTOR(spurious_apic, VN_VEC_SPURIOUS_APIC)
KTRACE_VECTOR(error_apic, VN_VEC_ERROR_APIC)
KTRACE_VECTOR(thermal_apic, VN_VEC_THERMAL_APIC)

/* KVM hypercall wrappers of the guest kernel; the loader disables those this kernel lacks. */
#define KTRACE_HCALL(fn, id)                           \
	SEC("fentry/" #fn)                             \
	int BPF_PROG(ktrace_hc_##fn##_entry)           \
	{                                              \
		return on_enter(VN_CLASS_HCALL, (id)); \
	}                                              \
	SEC("fexit/" #fn)                              \
	int BPF_PROG(ktrace_hc_##fn##_exit)            \
	{                                              \
		return on_exit(VN_CLASS_HCALL);        \
	}

KTRACE_HCALL(kvm_send_ipi_mask, VN_HCALL_SEND_IPI_MASK)
KTRACE_HCALL(kvm_send_ipi_mask_allbutself, VN_HCALL_SEND_IPI_MASK_ALLBUTSELF)
KTRACE_HCALL(__send_ipi_mask, VN_HCALL_SEND_IPI_MASK_RAW)
KTRACE_HCALL(kvm_kick_cpu, VN_HCALL_KICK_CPU)
KTRACE_HCALL(kvm_flush_tlb_multi, VN_HCALL_FLUSH_TLB_MULTI)
KTRACE_HCALL(kvm_sched_yield, VN_HCALL_SCHED_YIELD)
KTRACE_HCALL(kvm_smp_send_call_func_ipi, VN_HCALL_SMP_SEND_CALL_FUNC_IPI)
KTRACE_HCALL(kvm_wait, VN_HCALL_WAIT)
