/* SPDX-License-Identifier: MIT */
/*
 * Types shared by the host dispatch-log eBPF programs (schedlog.bpf.c) and their loader (schedlog.c): the
 * record sent to user space, the aggregate map keys and values, and the program's .bss (per-slot and per-CPU
 * state, counters). Types only (STYLE.md 2). Included by BPF code after vmlinux.h and by user space.
 *
 * Time base: CLOCK_MONOTONIC nanoseconds of the host (bpf_ktime_get_ns()).
 */
#ifndef VNOISE_HOST_SCHEDLOG_SCHEDLOG_H
#define VNOISE_HOST_SCHEDLOG_SCHEDLOG_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define SCHEDLOG_MAX_SLOTS 256 /* monitored vCPU threads; power of two (index masks) */
#define SCHEDLOG_MAX_CPUS 1024 /* host CPUs; power of two (index masks) */
#define SCHEDLOG_COMM_LEN 16
#define SCHEDLOG_NO_SLOT (-1)

/* schedlog_rec.type */
enum schedlog_rec_type {
	SCHEDLOG_REC_SWITCH = 1, /* sched_switch on cpu */
	SCHEDLOG_REC_WAKEUP = 2, /* sched_wakeup of a monitored thread; cpu = its target CPU */
	SCHEDLOG_REC_RUNNING =
	    3, /* a monitored thread found running on cpu whose switch-in was not seen */
};

/* schedlog_rec.flags */
#define SCHEDLOG_RF_PREEMPT \
	0x01 /* SWITCH: involuntary preemption (prev stays runnable whatever its state) */

/*
 * One record, emitted for a switch where prev or next is monitored or where the CPU has a monitored vCPU
 * switched out from it (so user space sees every task that runs there meanwhile), for every wakeup of a
 * monitored thread, and when a missed switch-in is detected (SCHEDLOG_REC_RUNNING).
 *  SWITCH:  prev_* / next_* describe the two tasks; *_slot is SCHEDLOG_NO_SLOT when not monitored; prev_state is
 *           the raw task state passed by the tracepoint (0 = TASK_RUNNING); run_ns is prev's time on the
 *           CPU in this stint (se.sum_exec_runtime - se.prev_sum_exec_runtime; 0 for idle), a hint that
 *           user space uses only to place switches it did not see.
 *  WAKEUP:  next_pid/next_slot/next_comm = the woken thread; cpu = the CPU it was queued on.
 *  RUNNING: next_* = the thread (current on cpu); run_ns as above, for the current stint.
 */
struct schedlog_rec {
	__u64 ts_ns;
	__u64 run_ns;
	__u32 prev_pid;
	__u32 next_pid;
	__u32 prev_state;
	__s16 prev_slot;
	__s16 next_slot;
	__u16 cpu;
	__u8 type; /* enum schedlog_rec_type */
	__u8 flags; /* SCHEDLOG_RF_* */
	__u8 pad[4];
	char prev_comm[SCHEDLOG_COMM_LEN];
	char next_comm[SCHEDLOG_COMM_LEN];
};
_Static_assert(sizeof(struct schedlog_rec) == 72, "schedlog_rec layout");

/* schedlog_agg_key.kind in the irq aggregate map */
enum schedlog_agg_kind {
	SCHEDLOG_AGG_IRQ = 1, /* id: device IRQ number (irq_handler_entry/exit) */
	SCHEDLOG_AGG_SOFTIRQ =
	    2, /* id: softirq vector (HI=0 .. RCU=9), net of hard IRQs nested in it */
	SCHEDLOG_AGG_VECTOR = 3, /* id: enum vn_vec (protocol/noise.h): x86 vector handlers */
	SCHEDLOG_AGG_EXIT =
	    4, /* kvm map, in user space: id = exit reason, isa 1 VMX, 2 SVM; time from
				  kvm_exit to the next kvm_entry of the thread, minus the time it was out */
};

/*
 * Aggregate key. In the irq map kind is enum schedlog_agg_kind; in the kvm map kind is the tracepoint's isa
 * (1 VMX, 2 SVM) and id the exit reason. epoch is the period parity the entry belongs to (schedlog_shared.epoch
 * when it was updated): user space flips the epoch at a period end and collects the other parity.
 */
struct schedlog_agg_key {
	__u16 slot;
	__u8 kind;
	__u8 epoch;
	__u32 id;
};
_Static_assert(sizeof(struct schedlog_agg_key) == 8, "schedlog_agg_key layout");

struct schedlog_agg_val {
	__u64 count;
	__u64 total_ns;
	__u64 max_ns;
};

/* Per monitored thread. tid is written by user space before the thread is mapped; the rest by BPF. */
struct schedlog_slot {
	__u32 tid;
	__u32 out; /* 1: switched out (not dead), from out_cpu since out_ns */
	__u32 out_cpu;
	__u32 exit_pending; /* 1: kvm_exit seen, kvm_entry not yet */
	__u64 out_ns;
	__u64 exit_ns; /* kvm_exit time */
	__u64
	    exit_out_ns; /* switched-out time inside the pending exit (not counted as exit time) */
	__u32 exit_reason;
	__u32 exit_isa;
};
_Static_assert(sizeof(struct schedlog_slot) == 48, "schedlog_slot layout");

/*
 * Per CPU. running and the irq/softirq fields are written only by programs on that CPU; nout also by the
 * CPU where a vCPU that left this CPU is switched back in (atomic add). Counters are read by user space.
 */
struct schedlog_cpu {
	__s32
	    running; /* slot running here, SCHEDLOG_NO_SLOT if none; user space sets SCHEDLOG_NO_SLOT at load */
	__s32 nout; /* monitored threads switched out from this CPU and not yet back */
	__u64 hi_ns; /* hard IRQ entry time, while hi_on */
	__u64 si_ns; /* softirq entry time, while si_on */
	__u64 si_nested_ns; /* hard IRQ time nested in the running softirq */
	__u32 hi_id;
	__u32 si_vec;
	__s16 hi_slot;
	__s16 si_slot;
	__u8 hi_on;
	__u8 si_on;
	__u8 hi_kind; /* enum schedlog_agg_kind of the open hard IRQ */
	__u8 pad;
	__u64 emitted; /* records submitted to the ring buffer */
	__u64 dropped; /* records lost: ring buffer full */
	__u64 healed; /* missed switch-ins found (SCHEDLOG_REC_RUNNING) */
	__u64 missed_in; /* monitored threads switched out while believed out */
	__u64 agg_full; /* aggregate updates lost: map full */
	__s64 clk_off_ns; /* ktime minus the rq task clock, measured at the last emitted switch */
	__u8 pad2[32];
};
_Static_assert(sizeof(struct schedlog_cpu) == 128, "schedlog_cpu: two cache lines");

/* The whole .bss of schedlog.bpf.c; the loader maps it (skel->bss->dl). */
struct schedlog_shared {
	__u32 epoch; /* period parity for aggregate keys; written by user space */
	__u32 pad;
	struct schedlog_slot slots[SCHEDLOG_MAX_SLOTS];
	struct schedlog_cpu cpus[SCHEDLOG_MAX_CPUS];
};

#endif
