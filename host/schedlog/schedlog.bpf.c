// SPDX-License-Identifier: GPL-2.0-only
/*
 * vnoise host dispatch log: when each monitored vCPU thread was switched out, what ran on the CPU it left
 * meanwhile, when it was woken; host IRQs while it ran; KVM exits (reason, duration) of its guest.
 *
 * The kernel side only filters and stamps: interval reconstruction is done in user space (host/schedlog/outlog.c).
 * - sched_switch / sched_wakeup emit a struct schedlog_rec (schedlog.h) to a ring buffer without wake-ups (user
 *   space drains it on a timer, REFERENCE.md §5) for switches that involve a monitored thread or happen on a
 *   CPU that a monitored thread left and has not come back to, and for wakeups of monitored threads.
 * - Host IRQs, softirqs and x86 vector handlers on a CPU where a monitored thread runs, and KVM exits
 *   (kvm_exit -> kvm_entry of the same thread, switched-out time excluded) are aggregated in hash maps keyed
 *   {slot, kind, epoch, id}; user space flips the epoch to close a period. No per-event records.
 * Monitored threads: a bitmap by tid (one array lookup rejects the common case) then a tid -> slot hash.
 * Missed switches (this host kernel skips idle->task switches on some CPUs, REFERENCE.md §6): a thread that
 * switches out while believed out is taken as switched back in first; an IRQ that finds a thread running
 * where it is believed out heals the state and emits SCHEDLOG_REC_RUNNING so user space can close its interval.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "noise.h"
#include "schedlog/schedlog.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_DEAD_MASK 0xb0 /* EXIT_DEAD | EXIT_ZOMBIE | TASK_DEAD: the thread is gone */

/* Monitored-thread state, counters and the period epoch (the only global variable). */
struct schedlog_shared dl;

/* Bit (tid & 63) of word tid >> 6 is set for monitored tids; sized from pid_max by the loader. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} tidmask SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32); /* tid */
	__type(value, __u32); /* slot */
	__uint(max_entries, SCHEDLOG_MAX_SLOTS);
} slot_by_tid SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* the loader sets the size */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct schedlog_agg_key);
	__type(value, struct schedlog_agg_val);
	__uint(max_entries, 8192);
} irq_agg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct schedlog_agg_key);
	__type(value, struct schedlog_agg_val);
	__uint(max_entries, 4096);
} kvm_agg SEC(".maps");

/* CO-RE views of what we read; the ___dl flavour keeps the build independent of vmlinux.h having KVM. */
struct trace_event_raw_kvm_exit___dl {
	unsigned int exit_reason;
	unsigned int isa;
} __attribute__((preserve_access_index));

struct task_struct___cpu {
	unsigned int cpu;
} __attribute__((preserve_access_index));

static __always_inline struct schedlog_cpu *cpu_at(__u32 cpu)
{
	return &dl.cpus[cpu & (SCHEDLOG_MAX_CPUS - 1)];
}

static __always_inline struct schedlog_slot *slot_at(__s32 slot)
{
	return &dl.slots[(__u32)slot & (SCHEDLOG_MAX_SLOTS - 1)];
}

/* Slot of tid, or SCHEDLOG_NO_SLOT. The bitmap answers "no" for almost every tid without touching the hash. */
static __always_inline __s32 slot_of(__u32 tid)
{
	__u32 w = tid >> 6, *s;
	__u64 *m;

	if (!tid)
		return SCHEDLOG_NO_SLOT;
	m = bpf_map_lookup_elem(&tidmask, &w);
	if (m && !(*m & (1ULL << (tid & 63))))
		return SCHEDLOG_NO_SLOT;
	s = bpf_map_lookup_elem(&slot_by_tid, &tid);
	if (!s || *s >= SCHEDLOG_MAX_SLOTS)
		return SCHEDLOG_NO_SLOT;
	return (__s32)*s;
}

/* On-CPU time of t's stint that ends now, at its switch-out (CFS accounting is current then). */
static __always_inline __u64 stint_ns(struct task_struct *t)
{
	__u64 sum = t->se.sum_exec_runtime, prev = t->se.prev_sum_exec_runtime;

	return sum > prev ? sum - prev : 0;
}

/*
 * On-CPU time of the stint of t, running now on a CPU whose clock offset is known. Its accounting is only
 * as fresh as the last update_curr, but exec_start - sum_exec_runtime stays constant over a stint (each
 * update adds the same delta to both), so the task clock at its switch-in is exec_start - sum + prev_sum;
 * the clock offset measured at a recent switch maps it to ktime.
 */
static __always_inline __u64 stint_running_ns(struct schedlog_cpu *c, struct task_struct *t,
					      __u64 now)
{
	__u64 sum = t->se.sum_exec_runtime, prev = t->se.prev_sum_exec_runtime;
	__u64 in_task = t->se.exec_start - sum + prev;
	__s64 off = c->clk_off_ns;
	__u64 in;

	if (!off)
		return sum > prev ? sum - prev : 0;
	in = in_task + off;
	return now > in ? now - in : 0;
}
static __always_inline void nout_add(__u32 cpu, __s32 v)
{
	__sync_fetch_and_add(&cpu_at(cpu)->nout, v);
}

static __always_inline struct schedlog_rec *rec_reserve(struct schedlog_cpu *c)
{
	struct schedlog_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		c->dropped++;
		return 0;
	}
	c->emitted++;
	return r;
}

static __always_inline void rec_submit(struct schedlog_rec *r)
{
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

/* A monitored thread left this CPU: it is out from here until it switches in anywhere. */
static __always_inline void slot_switch_out(struct schedlog_cpu *c, __s32 ps, __u32 cpu,
					    unsigned int state, __u64 now)
{
	struct schedlog_slot *s = slot_at(ps);

	if (s->out) {
		/* its switch-in was not seen: it did come back, so it is not out from there any more */
		c->missed_in++;
		nout_add(s->out_cpu, -1);
		s->out = 0;
	}
	if (state & TASK_DEAD_MASK)
		return;
	s->out_cpu = cpu;
	s->out_ns = now;
	s->out = 1;
	nout_add(cpu, 1);
}

static __always_inline void slot_switch_in(__s32 ns, __u64 now)
{
	struct schedlog_slot *s = slot_at(ns);

	if (!s->out)
		return;
	nout_add(s->out_cpu, -1);
	s->out = 0;
	if (s->exit_pending)
		s->exit_out_ns += now - s->out_ns;
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next, unsigned int prev_state)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct schedlog_cpu *c = cpu_at(cpu);
	__u32 ppid = prev->pid, npid = next->pid;
	__s32 ps = slot_of(ppid), ns = slot_of(npid);
	struct schedlog_rec *r;
	__u64 now;

	if (ps < 0 && ns < 0 && c->running < 0 && c->nout <= 0)
		return 0;
	now = bpf_ktime_get_ns();
	if (ps >= 0)
		slot_switch_out(c, ps, cpu, prev_state, now);
	if (ns >= 0)
		slot_switch_in(ns, now);
	c->running = ns;
	if (ps < 0 && ns < 0 && c->nout <= 0)
		return 0;
	/* the scheduler just updated prev's exec_start to the rq task clock: remember the offset */
	if (ppid && prev->policy != 1 && prev->policy != 2 && prev->policy != 6)
		c->clk_off_ns = (__s64)(now - prev->se.exec_start);
	r = rec_reserve(c);
	if (!r)
		return 0;
	r->ts_ns = now;
	r->run_ns = ppid ? stint_ns(prev) : 0;
	r->prev_pid = ppid;
	r->next_pid = npid;
	r->prev_state = prev_state;
	r->prev_slot = (__s16)ps;
	r->next_slot = (__s16)ns;
	r->cpu = (__u16)cpu;
	r->type = SCHEDLOG_REC_SWITCH;
	r->flags = preempt ? SCHEDLOG_RF_PREEMPT : 0;
	__builtin_memset(r->pad, 0, sizeof(r->pad));
	__builtin_memcpy(r->prev_comm, prev->comm, SCHEDLOG_COMM_LEN);
	__builtin_memcpy(r->next_comm, next->comm, SCHEDLOG_COMM_LEN);
	rec_submit(r);
	return 0;
}

static __always_inline __u32 task_cpu_of(struct task_struct *p)
{
	struct task_struct___cpu *q = (void *)p;

	if (bpf_core_field_exists(q->cpu))
		return BPF_CORE_READ(q, cpu);
	return BPF_CORE_READ(p, thread_info.cpu);
}

static __always_inline int on_wakeup(struct task_struct *p)
{
	__u32 pid = p->pid;
	__s32 slot = slot_of(pid);
	struct schedlog_rec *r;

	if (slot < 0)
		return 0;
	r = rec_reserve(cpu_at(bpf_get_smp_processor_id()));
	if (!r)
		return 0;
	r->ts_ns = bpf_ktime_get_ns();
	r->run_ns = 0;
	r->prev_pid = 0;
	r->next_pid = pid;
	r->prev_state = 0;
	r->prev_slot = SCHEDLOG_NO_SLOT;
	r->next_slot = (__s16)slot;
	r->cpu = (__u16)task_cpu_of(p);
	r->type = SCHEDLOG_REC_WAKEUP;
	r->flags = 0;
	__builtin_memset(r->pad, 0, sizeof(r->pad));
	__builtin_memset(r->prev_comm, 0, SCHEDLOG_COMM_LEN);
	__builtin_memcpy(r->next_comm, p->comm, SCHEDLOG_COMM_LEN);
	rec_submit(r);
	return 0;
}

/*
 * The monitored slot running on this CPU, or SCHEDLOG_NO_SLOT. When the CPU has monitored threads out from it but
 * none running, the current thread may be one whose switch-in was missed: check, heal and tell user space.
 */
static __always_inline __s32 running_slot(struct schedlog_cpu *c, __u32 cpu)
{
	struct task_struct *t;
	struct schedlog_slot *s;
	struct schedlog_rec *r;
	__s32 slot = c->running;
	__u32 tid;

	if (slot >= 0 || c->nout <= 0)
		return slot;
	tid = (__u32)bpf_get_current_pid_tgid();
	slot = slot_of(tid);
	if (slot < 0)
		return SCHEDLOG_NO_SLOT;
	s = slot_at(slot);
	c->running = slot;
	if (!s->out)
		return slot;
	nout_add(s->out_cpu, -1);
	s->out = 0;
	c->healed++;
	r = rec_reserve(c);
	if (!r)
		return slot;
	t = bpf_get_current_task_btf();
	r->ts_ns = bpf_ktime_get_ns();
	r->run_ns = stint_running_ns(c, t, r->ts_ns);
	r->prev_pid = 0;
	r->next_pid = tid;
	r->prev_state = 0;
	r->prev_slot = SCHEDLOG_NO_SLOT;
	r->next_slot = (__s16)slot;
	r->cpu = (__u16)cpu;
	r->type = SCHEDLOG_REC_RUNNING;
	r->flags = 0;
	__builtin_memset(r->pad, 0, sizeof(r->pad));
	__builtin_memset(r->prev_comm, 0, SCHEDLOG_COMM_LEN);
	__builtin_memcpy(r->next_comm, t->comm, SCHEDLOG_COMM_LEN);
	rec_submit(r);
	return slot;
}

/*
 * Add one duration to {slot, kind, epoch, id}. A slot runs on one CPU at a time and hard IRQs do not nest,
 * so plain (non-atomic) updates suffice.
 */
static __always_inline void agg_add(void *map, struct schedlog_cpu *c, __s16 slot, __u8 kind,
				    __u32 id, __u64 d)
{
	struct schedlog_agg_key k = {
		.slot = (__u16)slot, .kind = kind, .epoch = (__u8)(dl.epoch & 1), .id = id
	};
	struct schedlog_agg_val *v = bpf_map_lookup_elem(map, &k), zero = {};

	if (!v) {
		bpf_map_update_elem(map, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(map, &k);
		if (!v) {
			c->agg_full++;
			return;
		}
	}
	v->count++;
	v->total_ns += d;
	if (d > v->max_ns)
		v->max_ns = d;
}

static __always_inline int hardirq_enter(__u8 kind, __u32 id)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct schedlog_cpu *c = cpu_at(cpu);
	__s32 slot = running_slot(c, cpu);

	if (slot < 0)
		return 0;
	c->hi_ns = bpf_ktime_get_ns();
	c->hi_id = id;
	c->hi_kind = kind;
	c->hi_slot = (__s16)slot;
	c->hi_on = 1;
	return 0;
}

static __always_inline int hardirq_exit(void)
{
	struct schedlog_cpu *c = cpu_at(bpf_get_smp_processor_id());
	__u64 d;

	if (!c->hi_on)
		return 0;
	c->hi_on = 0;
	d = bpf_ktime_get_ns() - c->hi_ns;
	agg_add(&irq_agg, c, c->hi_slot, c->hi_kind, c->hi_id, d);
	if (c->si_on)
		c->si_nested_ns += d;
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(schedlog_sched_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	return on_switch(preempt, prev, next, prev_state);
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(schedlog_sched_wakeup, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/irq_handler_entry")
int BPF_PROG(schedlog_irq_entry, int irq)
{
	return hardirq_enter(SCHEDLOG_AGG_IRQ, (__u32)irq);
}

SEC("tp_btf/irq_handler_exit")
int BPF_PROG(schedlog_irq_exit, int irq)
{
	return hardirq_exit();
}

SEC("tp_btf/softirq_entry")
int BPF_PROG(schedlog_softirq_entry, unsigned int vec)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct schedlog_cpu *c = cpu_at(cpu);
	__s32 slot = running_slot(c, cpu);

	if (slot < 0)
		return 0;
	c->si_ns = bpf_ktime_get_ns();
	c->si_vec = vec;
	c->si_slot = (__s16)slot;
	c->si_nested_ns = 0;
	c->si_on = 1;
	return 0;
}

SEC("tp_btf/softirq_exit")
int BPF_PROG(schedlog_softirq_exit, unsigned int vec)
{
	struct schedlog_cpu *c = cpu_at(bpf_get_smp_processor_id());
	__u64 d;

	if (!c->si_on)
		return 0;
	c->si_on = 0;
	d = bpf_ktime_get_ns() - c->si_ns;
	d = d > c->si_nested_ns ? d - c->si_nested_ns : 0;
	agg_add(&irq_agg, c, c->si_slot, SCHEDLOG_AGG_SOFTIRQ, c->si_vec, d);
	return 0;
}

/* x86 vector handlers: irq_handler_entry does not see them (LAPIC timer, IPIs). */
#define SCHEDLOG_VECTOR(tp, v)                                  \
	SEC("tp_btf/" #tp "_entry")                             \
	int BPF_PROG(schedlog_##tp##_entry, int vector)         \
	{                                                       \
		return hardirq_enter(SCHEDLOG_AGG_VECTOR, (v)); \
	}                                                       \
	SEC("tp_btf/" #tp "_exit")                              \
	int BPF_PROG(schedlog_##tp##_exit, int vector)          \
	{                                                       \
		return hardirq_exit();                          \
	}

SCHEDLOG_VECTOR(local_timer, VN_VEC_LOCAL_TIMER)
SCHEDLOG_VECTOR(reschedule, VN_VEC_RESCHEDULE)
SCHEDLOG_VECTOR(call_function, VN_VEC_CALL_FUNCTION)
SCHEDLOG_VECTOR(call_function_single, VN_VEC_CALL_FUNCTION_SINGLE)
SCHEDLOG_VECTOR(irq_work, VN_VEC_IRQ_WORK)

/* The slot of the current thread (a vCPU thread in KVM_RUN), or SCHEDLOG_NO_SLOT. */
static __always_inline __s32 current_slot(void)
{
	__u32 cpu = bpf_get_smp_processor_id(), tid = (__u32)bpf_get_current_pid_tgid();
	__s32 slot = running_slot(cpu_at(cpu), cpu);

	if (slot >= 0 && slot_at(slot)->tid == tid)
		return slot;
	return slot_of(tid);
}

/* Classic tracepoints (their raw layout is not in every vmlinux): loaded only when asked. */
SEC("tracepoint/kvm/kvm_exit")
int schedlog_kvm_exit(struct trace_event_raw_kvm_exit___dl *ctx)
{
	__s32 slot = current_slot();
	struct schedlog_slot *s;

	if (slot < 0)
		return 0;
	s = slot_at(slot);
	s->exit_ns = bpf_ktime_get_ns();
	s->exit_out_ns = 0;
	s->exit_reason = ctx->exit_reason;
	s->exit_isa = ctx->isa;
	s->exit_pending = 1;
	return 0;
}

SEC("tracepoint/kvm/kvm_entry")
int schedlog_kvm_entry(void *ctx)
{
	__s32 slot = current_slot();
	struct schedlog_slot *s;
	__u64 d;

	if (slot < 0)
		return 0;
	s = slot_at(slot);
	if (!s->exit_pending)
		return 0;
	s->exit_pending = 0;
	d = bpf_ktime_get_ns() - s->exit_ns;
	d = d > s->exit_out_ns ? d - s->exit_out_ns : 0;
	agg_add(&kvm_agg, cpu_at(bpf_get_smp_processor_id()), (__s16)slot, (__u8)s->exit_isa,
		s->exit_reason, d);
	return 0;
}
