// SPDX-License-Identifier: GPL-2.0-only
/*
 * vnoise passive kernel helper: the noise that hits chosen target tasks, with no sampler. A target is
 * a process (its tgid in pv_tgid), a cgroup v2 (its id in pv_cgrp), or any user task on a chosen CPU
 * (cfg.cpu_slot). Per target the kernel accumulates, in one BPF_F_MMAPABLE array of struct vn_tgt that user
 * space and the ranks of an MPI job map read-only:
 *   THREAD   time a target thread spent runnable but preempted: from its involuntary switch-out (it left the
 *            CPU still TASK_RUNNING) to its next switch-in, charged to the task that took its CPU (in CPU
 *            mode only kernel threads count: user tasks sharing a CPU are the workload);
 *   IRQ, SOFTIRQ, NMI   net time of those that ran while a target was on the CPU (nesting subtracted);
 *   STEAL    hypervisor steal while a target was on the CPU (runqueue steal clock, read at switches and at
 *            the end of every interrupt, so it is at most one tick late).
 * Counters only grow; readers take differences. No records, no ring, no wake-up: the cost is a few map
 * lookups per context switch and per interrupt on the CPUs that run targets.
 *
 * Spans (cfg.spans, for vnoise-guest monitor's hypervisor view): the helper also sends, through the ring
 * pv_spans (no wake-up: user space drains it), each target thread's run spans (switch-in to switch-out, a run
 * still going cut at interrupts into pieces of >= PV_SPAN_CHUNK_NS) and runnable spans (wakeup or involuntary
 * switch-out to its next switch-in, on the CPU it then runs on). A full ring drops the record, counted per CPU.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "app.h"
#include "bpf/passive.h"
#include "bpf/nest.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct pv_config cfg = {};

struct pv_cpu pv_cpus[PV_MAX_CPUS];

/*
 * Cause tracking (the 4 largest causes per target): on unless user space turns it off. Under round-robin
 * sampling (vnoise-guest mpi --collector) it is on only while the collector samples this node; otherwise
 * the helper keeps the class counters alone. In .data, so the loader can flip it while the program runs.
 */
__u32 pv_detail = 1;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32); /* tgid */
	__type(value, __u32); /* target index */
	__uint(max_entries, VN_TGT_MAX);
} pv_tgid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64); /* cgroup v2 id */
	__type(value, __u32);
	__uint(max_entries, VN_TGT_MAX);
} pv_cgrp SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct vn_tgt);
	__uint(max_entries, VN_TGT_MAX);
} pv_tgt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096); /* the loader sets PV_SPAN_RING when spans are on */
} pv_spans SEC(".maps");

/* Per task: whether it waits, preempted, and on which CPU. */
struct pv_task {
	__u32 waiting;
	__u32 cpu;
	__u64 rq_ns; /* spans: runnable since (wakeup or involuntary switch-out); 0: not known */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pv_task);
} pv_task SEC(".maps");

#define PF_KTHREAD_BIT 0x00200000 /* include/linux/sched.h */

static __always_inline __u64 steal_now(struct task_struct *t)
{
	struct cfs_rq *cr = t->se.cfs_rq; /* BTF pointer walks: plain loads */

	if (!bpf_core_field_exists(struct rq, prev_steal_time_rq))
		return 0;
	return cr ? cr->rq->prev_steal_time_rq : 0;
}

/* Target index + 1 of task t on cpu, 0: not a target. */
static __always_inline __u32 target_of(struct task_struct *t, __u32 cpu)
{
	__u32 tgid = t->tgid, *v;

	if (t->pid == 0)
		return 0;
	v = bpf_map_lookup_elem(&pv_tgid, &tgid);
	if (v)
		return *v + 1;
	if (cfg.ncgroups) {
		__u64 id = BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);

		v = bpf_map_lookup_elem(&pv_cgrp, &id);
		if (v)
			return *v + 1;
	}
	if (cfg.cpu_slot[cpu & (PV_MAX_CPUS - 1)] && !(t->flags & PF_KTHREAD_BIT))
		return cfg.cpu_slot[cpu & (PV_MAX_CPUS - 1)];
	return 0;
}

/* Charge ns of class cls, cause (cls, id, comm), to target index tgt. */
static __always_inline void charge(__u32 tgt, __u8 cls, __u32 id, const char *comm, __u64 ns)
{
	struct vn_tgt *t;
	int i, victim = 0;
	__u64 least = ~0ULL;

	if (!ns || cls >= VN_CLASS_MAX)
		return;
	t = bpf_map_lookup_elem(&pv_tgt, &tgt);
	if (!t)
		return;
	__sync_fetch_and_add(&t->ns[cls & (VN_CLASS_MAX - 1)], ns);
	__sync_fetch_and_add(&t->count[cls & (VN_CLASS_MAX - 1)], 1);
	if (ns > t->max_ns)
		t->max_ns =
		    ns; /* racy between CPUs of one target: a maximum may be missed, never invented */
	if (!pv_detail)
		return;
	for (i = 0; i < VN_TGT_CAUSES; i++) {
		struct vn_tgt_cause *c = &t->cause[i];

		if (c->cls == cls && c->id == id) {
			__sync_fetch_and_add(&c->ns, ns);
			if (comm) /* the latest name: a thread renames itself or execs after it was first seen */
				__builtin_memcpy(c->comm, comm, VN_COMM_LEN);
			return;
		}
		if (c->cls == VN_CLASS_NONE) {
			victim = i;
			least = 0;
		} else if (c->ns < least) {
			victim = i;
			least = c->ns;
		}
	}
	/* A new cause takes the smallest slot (or a free one); its earlier total is lost, as in a top-N list. */
	{
		struct vn_tgt_cause *c = &t->cause[victim & (VN_TGT_CAUSES - 1)];

		c->cls = VN_CLASS_NONE;
		c->id = id;
		if (comm)
			__builtin_memcpy(c->comm, comm, VN_COMM_LEN);
		else
			__builtin_memset(c->comm, 0, VN_COMM_LEN);
		c->ns = ns;
		c->cls = cls;
	}
}

/* Record one span of target tgt (index + 1) on cpu; a full ring counts a drop on this CPU. */
static __always_inline void span_emit(struct pv_cpu *s, __u32 tgt, __u32 cpu, __u32 pid, __u32 kind,
				      __u64 start, __u64 end)
{
	struct pv_span *r;

	if (!tgt || !start || end <= start)
		return;
	r = bpf_ringbuf_reserve(&pv_spans, sizeof(*r), 0);
	if (!r) {
		s->span_drops++;
		return;
	}
	r->start_ns = start;
	r->end_ns = end;
	r->tgt = tgt - 1;
	r->cpu = cpu;
	r->pid = pid;
	r->kind = kind;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* Spans: next (target nt, or none) is switched in on cpu at now; close its runnable span. */
static __always_inline void span_switch_in(struct pv_cpu *s, struct task_struct *next, __u32 nt,
					   __u32 cpu, __u64 now)
{
	struct pv_task *pt;

	s->span_in = nt ? now : 0;
	if (!next->pid)
		return;
	pt = bpf_task_storage_get(&pv_task, next, 0, 0);
	if (!pt || !pt->rq_ns)
		return;
	if (nt)
		span_emit(s, nt, cpu, next->pid, PV_SPAN_WAIT, pt->rq_ns, now);
	pt->rq_ns = 0;
}

/* Steal accrued on this CPU since the last reading goes to its current target. */
static __always_inline void steal_flush(struct pv_cpu *s, struct task_struct *cur)
{
	__u64 st = steal_now(cur);

	if (st > s->steal0 && s->steal0) {
		charge(s->tgt - 1, VN_CLASS_STEAL, 0, 0, st - s->steal0);
	}
	s->steal0 = st;
}

static __always_inline struct pv_cpu *cpu_state(void)
{
	__u32 cpu = bpf_get_smp_processor_id();

	if (cpu >= PV_MAX_CPUS)
		return 0;
	return &pv_cpus[cpu & (PV_MAX_CPUS - 1)];
}

/*
 * Preemption: a target thread that leaves its CPU still runnable makes the CPU "wait" for it; every task that
 * then runs there until the target runs again (here or elsewhere) or the CPU idles is charged, for its run,
 * as THREAD noise of the target with itself as the cause. Time a target waits on a CPU it later migrates from
 * is charged up to the last switch seen there.
 *
 * Whether prev is a target is looked up, not taken from the CPU's state: some kernels do not emit every
 * switch (idle->task on CPU1 of the 6.18 Firecracker kernel, REFERENCE.md 6), so the task on a CPU can be
 * one whose switch-in was never seen. Such a run is picked up at its first interrupt (sync_current).
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(pv_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 cpu = bpf_get_smp_processor_id() & (PV_MAX_CPUS - 1);
	struct pv_cpu *s = &pv_cpus[cpu];
	struct pv_task *pt;
	__u64 now = bpf_ktime_get_ns();
	__u32 nt, ptg = target_of(prev, cpu);

	/* prev ran [seg_ns, now) while a target waited for this CPU */
	if (s->wait_tgt && prev->pid && ptg != s->wait_tgt && now > s->seg_ns &&
	    (!cfg.cpu_slot[cpu] || (prev->flags & PF_KTHREAD_BIT)))
		charge(s->wait_tgt - 1, VN_CLASS_THREAD, prev->pid, prev->comm, now - s->seg_ns);
	s->seg_ns = now;
	if (ptg) {
		if (s->cur_pid == (__u32)prev->pid && s->tgt == ptg) {
			/* its run began at a switch (or interrupt) seen here */
			__u32 idx = ptg - 1;
			struct vn_tgt *t = bpf_map_lookup_elem(&pv_tgt, &idx);

			steal_flush(s, prev);
			__sync_fetch_and_add(&s->runs, 1);
			if (t && s->in_ns && now > s->in_ns)
				__sync_fetch_and_add(&t->run_ns, now - s->in_ns);
			if (cfg.spans)
				span_emit(s, ptg, cpu, prev->pid, PV_SPAN_RUN, s->span_in, now);
		}
		if (prev->__state == 0 && prev->pid) {
			/* involuntary: prev stays runnable and waits for a CPU */
			pt =
			    bpf_task_storage_get(&pv_task, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
			if (pt) {
				pt->waiting = 1;
				pt->cpu = cpu;
				pt->rq_ns = now;
				s->wait_tgt = ptg;
				s->wait_pid = prev->pid;
			}
		}
	}
	s->nest.depth = 0; /* no interrupt frame spans a switch */
	nt = target_of(next, cpu);
	s->tgt = nt;
	s->cur_pid = next->pid;
	if (next->pid == 0)
		s->wait_tgt = 0; /* the CPU idles: whoever waited here runs elsewhere */
	if (cfg.spans)
		span_switch_in(s, next, nt, cpu, now);
	if (!nt)
		return 0;
	s->in_ns = now;
	s->steal0 = steal_now(next);
	pt = bpf_task_storage_get(&pv_task, next, 0, 0);
	if (pt && pt->waiting) {
		struct pv_cpu *o = &pv_cpus[pt->cpu & (PV_MAX_CPUS - 1)];

		pt->waiting = 0;
		if (o->wait_pid == (__u32)next->pid)
			o->wait_tgt =
			    0; /* racy when o is another CPU: at worst one more segment charged */
	}
	return 0;
}

/* At an outermost interrupt: the CPU's task is not the one its last seen switch put there. */
static __always_inline void sync_current(struct pv_cpu *s)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	__u32 cpu = bpf_get_smp_processor_id();

	if ((__u32)cur->pid == s->cur_pid)
		return;
	s->cur_pid = cur->pid;
	s->tgt = target_of(cur, cpu);
	s->in_ns =
	    bpf_ktime_get_ns(); /* its run began earlier, at an unseen switch: counted from here */
	s->steal0 = steal_now(cur);
	s->span_in = s->tgt ? s->in_ns : 0;
}

static __always_inline int on_enter(__u8 cls, __u32 id)
{
	struct pv_cpu *s = cpu_state();

	if (!s)
		return 0;
	if (!s->nest.depth)
		sync_current(s);
	if (!s->tgt)
		return 0;
	nest_push(&s->nest, cls, id, bpf_ktime_get_ns(), 0);
	return 0;
}

/*
 * At the end of an outermost interrupt: bring the run time and steal up to now, so that readers see a
 * target's current run too (a busy task may not be switched out for seconds) at most a tick late.
 */
static __always_inline void run_catch_up(struct pv_cpu *s, __u64 now)
{
	__u32 idx = s->tgt - 1;
	struct vn_tgt *t = bpf_map_lookup_elem(&pv_tgt, &idx);

	if (t && s->in_ns && now > s->in_ns) {
		__sync_fetch_and_add(&t->run_ns, now - s->in_ns);
		s->in_ns = now;
	}
	steal_flush(s, bpf_get_current_task_btf());
	if (cfg.spans && s->span_in && now >= s->span_in + PV_SPAN_CHUNK_NS) {
		span_emit(s, s->tgt, bpf_get_smp_processor_id(), s->cur_pid, PV_SPAN_RUN,
			  s->span_in, now);
		s->span_in = now;
	}
}

static __always_inline int on_exit(__u8 cls)
{
	struct pv_cpu *s = cpu_state();
	struct nest_closed c;
	__u64 now;

	if (!s || !s->tgt || !s->nest.depth)
		return 0;
	now = bpf_ktime_get_ns();
	/* another class on top: it began before we looked, and the stack is dropped */
	if (nest_pop(&s->nest, cls, now, 0, &c) != NEST_CLOSED)
		return 0;
	charge(s->tgt - 1, cls, c.id, 0, c.net_ns);
	if (c.depth == 0)
		run_catch_up(s, now);
	return 0;
}

/* Spans: a target woken up is runnable from now until its next switch-in. */
SEC("tp_btf/sched_wakeup")
int BPF_PROG(pv_sched_wakeup, struct task_struct *p)
{
	struct pv_task *pt;

	if (!cfg.spans || !p->pid || !target_of(p, (__u32)p->wake_cpu))
		return 0;
	pt = bpf_task_storage_get(&pv_task, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (pt)
		pt->rq_ns = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/nmi_handler")
int BPF_PROG(pv_nmi, void *handler, s64 delta_ns, int handled)
{
	struct pv_cpu *s = cpu_state();
	struct nest_frame *pf;

	if (!s || !s->tgt || delta_ns <= 0)
		return 0;
	charge(s->tgt - 1, VN_CLASS_NMI, 0, 0, (__u64)delta_ns);
	pf = nest_top(&s->nest); /* the NMI interrupted it */
	if (pf)
		pf->child_ns += (__u64)delta_ns;
	return 0;
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(pv_irq_entry, int irq)
{
	return on_enter(VN_CLASS_IRQ, (__u32)irq);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(pv_irq_exit, int irq)
{
	return on_exit(VN_CLASS_IRQ);
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(pv_softirq_entry, unsigned int vec)
{
	return on_enter(VN_CLASS_SOFTIRQ, vec);
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(pv_softirq_exit, unsigned int vec)
{
	return on_exit(VN_CLASS_SOFTIRQ);
}

#define PV_VECTOR(tp, v)                                          \
	SEC("tp_btf/" #tp "_entry")                               \
	int BPF_PROG(pv_##tp##_entry, int vector)                 \
	{                                                         \
		return on_enter(VN_CLASS_IRQ, VN_VEC_BASE + (v)); \
	}                                                         \
	SEC("tp_btf/" #tp "_exit")                                \
	int BPF_PROG(pv_##tp##_exit, int vector)                  \
	{                                                         \
		return on_exit(VN_CLASS_IRQ);                     \
	}

PV_VECTOR(local_timer, VN_VEC_LOCAL_TIMER)
PV_VECTOR(reschedule, VN_VEC_RESCHEDULE)
PV_VECTOR(call_function, VN_VEC_CALL_FUNCTION)
PV_VECTOR(call_function_single, VN_VEC_CALL_FUNCTION_SINGLE)
PV_VECTOR(irq_work, VN_VEC_IRQ_WORK)
