/* SPDX-License-Identifier: MIT */
/*
 * outlog: the host dispatch log's reconstruction engine. From a stream of scheduler records (switches,
 * wakeups; host/schedlog/schedlog.bpf.c produces them) it rebuilds, for every monitored vCPU thread ("slot"), the
 * intervals it was switched out: when, from which CPU, why (preempted 'R' or blocked 'S'/'D'/...), when it
 * was woken, and which host tasks ran on the CPU it left meanwhile. Pure C: no libbpf, no I/O.
 *
 * Outputs: (a) callbacks for a record file: one struct outlog_out per out interval (or per piece of one cut at
 * a period boundary) and one struct outlog_run per task that ran on the left CPU during it; every run of a
 * piece is delivered before that piece's out; (b) per-slot aggregates per period (struct outlog_stats).
 *
 * Time order: records are buffered by outlog_push() and applied in timestamp order by outlog_advance(h)
 * (all records with ts <= h; ties keep push order, so one CPU's records keep their order). A record pushed
 * with ts below the last horizon is "late": it is counted and applied as if it happened at the horizon
 * (time never goes back; the error is at most its lateness). Callers keep the horizon behind real time by
 * more than the worst reordering of their transport.
 *
 * Robustness: missing switch-ins (a thread seen switching out again, or reported running, while believed
 * out) are placed from the record's stint time (run_ns) or the wakeup; a switched-out task that is not the
 * one believed running on that CPU is placed the same way; thread exit (dead state) ends tracking; records of
 * removed or re-used slots (tid mismatch), bad CPUs or slots are ignored. Everything is counted
 * (struct outlog_counters); nothing crashes on any input. Single-threaded: the caller owns the object.
 */
#ifndef VNOISE_HOST_SCHEDLOG_OUTLOG_H
#define VNOISE_HOST_SCHEDLOG_OUTLOG_H

#include <stddef.h>
#include <stdint.h>

#define OUTLOG_COMM_LEN 16
#define OUTLOG_TOP 64 /* preemptor table entries per slot and period, plus "other" */
#define OUTLOG_MAX_SLOTS 4096
#define OUTLOG_MAX_CPUS 8192
#define OUTLOG_PENDING_MAX (1u << 22) /* records buffered awaiting the horizon */
#define OUTLOG_NO_SLOT (-1)

/* outlog_rec.type (same values as host/schedlog/schedlog.h enum schedlog_rec_type) */
enum outlog_rec_type {
	OUTLOG_REC_SWITCH = 1,
	OUTLOG_REC_WAKEUP = 2,
	OUTLOG_REC_RUNNING = 3,
};

#define OUTLOG_RF_PREEMPT 0x01 /* SWITCH: involuntary preemption: prev stays runnable ('R') */

/*
 * One input record (field meanings as struct schedlog_rec in host/schedlog/schedlog.h):
 *  SWITCH:  on cpu at ts, prev (pid, comm, raw state, slot or OUTLOG_NO_SLOT, run_ns = its on-CPU time in
 *           the stint now ending, 0 unknown) was replaced by next.
 *  WAKEUP:  next_pid/next_slot was woken at ts onto cpu.
 *  RUNNING: next_pid/next_slot was found running on cpu at ts for run_ns already (its switch-in was missed).
 */
struct outlog_rec {
	uint64_t ts_ns;
	uint64_t run_ns;
	uint32_t prev_pid;
	uint32_t next_pid;
	uint32_t prev_state;
	int32_t prev_slot;
	int32_t next_slot;
	uint32_t cpu;
	uint8_t type; /* enum outlog_rec_type */
	uint8_t flags; /* OUTLOG_RF_* */
	char prev_comm[OUTLOG_COMM_LEN];
	char next_comm[OUTLOG_COMM_LEN];
};

/*
 * One out interval, or one piece of it. state: 'R' preempted (runnable all along), 'S' interruptible sleep,
 * 'D' uninterruptible, 'T'/'t' stopped/traced, 'P' parked, '?' other. wake_ns: the interval's first wakeup if
 * it happened before end_ns (it may precede start_ns in a cont piece), else 0; always 0 for 'R'.
 * run_delay_ns: time in the piece while runnable but not running: the whole piece for 'R', [max(wake, start),
 * end) for blocked states with a wakeup, 0 without one (this is what schedstat's run_delay counts).
 */
struct outlog_out {
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t wake_ns;
	uint64_t run_delay_ns;
	uint32_t slot;
	uint32_t tid;
	uint32_t cpu; /* CPU it left */
	char state;
	uint8_t split; /* 1: cut at a period boundary (end_ns); the interval goes on */
	uint8_t cont; /* 1: continues a piece cut at a period boundary: start_ns is that boundary */
	uint8_t guessed; /* 1: switch-in not seen: end_ns placed from run_ns or the wakeup */
	uint8_t removed; /* 1: the slot was removed while out: end_ns is the removal horizon */
	uint8_t pad[7];
};

/*
 * One host task's run on the CPU a slot left, clipped to the slot's piece [out_start_ns, ...). pid 0 is the
 * idle task (idle = 1), reported as idle time, never as a preemptor. In a blocked ('S', 'D', ...) piece a run
 * is cut at the interval's wakeup: the part before it has halted = 1 (the slot slept: nothing it did was
 * delayed), the part after it halted = 0 (runnable, waiting for the CPU).
 */
struct outlog_run {
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t out_start_ns; /* start_ns of the piece it belongs to */
	uint32_t slot;
	uint32_t tid; /* the vCPU thread */
	uint32_t pid; /* the host task that ran */
	uint32_t cpu;
	uint8_t idle;
	uint8_t
	    halted; /* 1: before the wakeup of a blocked interval (a run across it is cut in two) */
	uint8_t pad[6];
	char comm[OUTLOG_COMM_LEN];
};

/* Callbacks; called from outlog_advance/outlog_cut/outlog_slot_del, never re-entered. */
typedef void (*outlog_out_fn)(void *ctx, const struct outlog_out *o);
typedef void (*outlog_run_fn)(void *ctx, const struct outlog_run *r);

/* A host task that ran while a slot was out. pid 0 and comm "other" in the other bucket. */
struct outlog_preemptor {
	char comm[OUTLOG_COMM_LEN];
	uint32_t pid;
	uint32_t pad;
	uint64_t total_ns; /* its run time on the left CPU while the slot was out */
	uint64_t count; /* pieces in which it ran (other: the sum over the tasks folded into it) */
	uint64_t last_piece; /* internal: piece it was last counted in */
};

/*
 * One slot's totals over one period (pieces that closed in it). Invariants: out_ns = out_r_ns + out_s_ns +
 * out_d_ns = idle_ns + preempt_ns + unknown_ns; preempt_ns = sum of preempt[].total_ns + other.total_ns.
 * The table keeps up to OUTLOG_TOP tasks; when full, the entry with the smallest total is folded into other
 * to make room (folded counts that; an entry is exact unless its task was folded out earlier in the period).
 * In a closed period's stats the table is sorted by total_ns, largest first.
 */
struct outlog_stats {
	uint64_t out_ns;
	uint64_t out_count; /* pieces */
	uint64_t out_r_ns; /* preempted */
	uint64_t out_s_ns; /* interruptible sleep */
	uint64_t out_d_ns; /* uninterruptible and every other blocked state */
	uint64_t run_delay_ns; /* see struct outlog_out */
	uint64_t idle_ns; /* the left CPU was idle */
	uint64_t preempt_ns; /* other host tasks ran there */
	uint64_t unknown_ns; /* the left CPU seemed to run the slot itself (inconsistent input) */
	uint64_t wakeups; /* first wakeups of blocked intervals */
	uint64_t inferred; /* pieces with guessed ends */
	uint32_t npreempt; /* used entries of preempt[] */
	uint32_t folded;
	struct outlog_preemptor preempt[OUTLOG_TOP];
	struct outlog_preemptor other;
};

/* Anomalies and volumes since outlog_new(). */
struct outlog_counters {
	uint64_t records; /* applied */
	uint64_t late; /* pushed with ts below the horizon (applied at the horizon) */
	uint64_t bad; /* unknown type, CPU >= max_cpus, slot >= max_slots: ignored */
	uint64_t stale; /* unregistered slot, tid mismatch (re-used) or gone: unmonitored */
	uint64_t missed_in; /* switch-ins placed by inference */
	uint64_t missed_out; /* switched in while believed running (switch-out lost) */
	uint64_t desync; /* a switch's prev was not the task believed running on that CPU */
	uint64_t untracked; /* a slot's first record was a switch-in: start unknown, no interval */
	uint64_t exited; /* slots whose thread exited (dead state at switch-out) */
	uint64_t overflow; /* records refused: pending buffer full or no memory */
	uint64_t cuts; /* outlog_cut() calls: closed periods */
	uint64_t pending; /* records buffered now (gauge) */
};

enum outlog_slot_state {
	OUTLOG_SLOT_FREE = 0, /* not registered */
	OUTLOG_SLOT_UNKNOWN = 1, /* registered, nothing seen yet */
	OUTLOG_SLOT_RUNNING = 2,
	OUTLOG_SLOT_OUT = 3,
	OUTLOG_SLOT_GONE = 4, /* its thread exited; ignored until removed and re-added */
};

struct outlog;

/* New engine for slots 0..max_slots-1 and CPUs 0..max_cpus-1, no callbacks. NULL + errno. */
struct outlog *outlog_new(uint32_t max_slots, uint32_t max_cpus)
    __attribute__((warn_unused_result));
void outlog_free(struct outlog *ol); /* accepts NULL */
/* Set (or clear, with NULLs) the callbacks and their context. */
void outlog_set_callbacks(struct outlog *ol, outlog_out_fn out, outlog_run_fn run, void *ctx);

/* Start tracking tid as slot; its state is unknown until its first switch. 0, -EINVAL or -EBUSY (in use). */
int outlog_slot_add(struct outlog *ol, uint32_t slot, uint32_t tid)
    __attribute__((warn_unused_result));
/*
 * Stop tracking slot: an open piece is closed at the horizon (removed = 1) into the current period;
 * then the slot's stats are cleared. Read them first if wanted. 0 or -EINVAL (not registered).
 */
int outlog_slot_del(struct outlog *ol, uint32_t slot);
enum outlog_slot_state outlog_slot_state(const struct outlog *ol, uint32_t slot);

/* Buffer one record. 0, or -ENOBUFS (OUTLOG_PENDING_MAX buffered) or -ENOMEM; refusals count as overflow. */
int outlog_push(struct outlog *ol, const struct outlog_rec *r) __attribute__((warn_unused_result));
/* Apply every buffered record with ts <= horizon_ns in time order; the horizon never decreases. */
void outlog_advance(struct outlog *ol, uint64_t horizon_ns);
/*
 * End the current period at end_ns (raised to the horizon if below it): advance to it, cut every open out
 * piece there (split; the rest continues as a cont piece), publish the period's stats (read them with
 * outlog_period_stats) and start a new period. The first period starts at the first record applied.
 */
void outlog_cut(struct outlog *ol, uint64_t end_ns);
uint64_t outlog_horizon(const struct outlog *ol);
/* Where the slot's open out piece began (its thread left its CPU and has not come back; the piece is
 * delivered when it ends or at a cut), or UINT64_MAX when the slot is not out. */
uint64_t outlog_open_since(const struct outlog *ol, uint32_t slot);
void outlog_counters(const struct outlog *ol, struct outlog_counters *c);

/* 'R', 'S', 'D', 'T', 't', 'P', 'X' (dead) or '?' for a raw task state; preempt forces 'R'. */
char outlog_state_char(uint32_t prev_state, int preempt);

#endif
