/* SPDX-License-Identifier: MIT */
/*
 * dispatch: the host dispatch log (public API of host/dispatch.c). Loads and attaches the eBPF programs of
 * dispatch.bpf.c, maps monitored vCPU threads (tid -> slot), drains their scheduler records into an outlog
 * engine (shared/outlog.h: out intervals, host task runs, per-slot period stats) and collects per-period
 * aggregates of host IRQs while a vCPU ran and of KVM exits. One struct dispatch owns the BPF object, its
 * links, the ring buffer reader, the outlog and the BPF_ENABLE_STATS fd (run-time statistics are on only
 * while that fd is open, so nothing is left changed on any exit, SIGKILL included).
 *
 * Threads: not thread-safe. One thread calls every function (typically a timer loop: dispatch_poll every
 * tick, dispatch_cut or outlog_cut every period). The kernel never wakes that thread (records are submitted
 * with BPF_RB_NO_WAKEUP): poll often enough that the ring does not fill (drops are counted).
 * Time base: host CLOCK_MONOTONIC ns (bpf_ktime_get_ns()).
 */
#ifndef VNOISE_DISPATCH_LOADER_H
#define VNOISE_DISPATCH_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "outlog.h"

#define DISPATCH_MAX_SLOTS 256 /* slots are 0 .. DISPATCH_MAX_SLOTS - 1 */
#define DISPATCH_MAX_PROGS 32
#define DISPATCH_RING_BYTES (8u << 20) /* default ring buffer size */
#define DISPATCH_REORDER_NS 1000000ULL /* default lag of the poll horizon behind now */

struct dispatch;

struct dispatch_opts {
	int want_irqs; /* aggregate host IRQs/softirqs/vectors on CPUs where a vCPU runs */
	int want_kvm; /* aggregate KVM exits (kvm:kvm_exit/kvm_entry); skipped if the host lacks them */
	uint32_t ring_bytes; /* ring buffer size, a power of two >= 4096; 0: DISPATCH_RING_BYTES */
	uint64_t
	    reorder_ns; /* dispatch_poll applies records older than now - reorder_ns; 0: default */
};

/* Aggregate kinds: the same values as protocol/host.h enum vn_host_agg_kind. */
enum dispatch_agg_kind {
	DISPATCH_AGG_IRQ = 1, /* id: host IRQ number */
	DISPATCH_AGG_SOFTIRQ = 2, /* id: softirq vector; time net of hard IRQs nested in it */
	DISPATCH_AGG_VECTOR = 3, /* id: enum vn_vec (protocol/noise.h): LAPIC timer, IPIs */
	DISPATCH_AGG_EXIT = 4, /* id: exit reason; isa 1 VMX, 2 SVM; time from kvm_exit to the next
				  kvm_entry of the thread, minus the time it was switched out */
};

/* Count and duration of one {kind, id} for one slot over one period. */
struct dispatch_agg {
	uint16_t kind; /* enum dispatch_agg_kind */
	uint16_t isa; /* DISPATCH_AGG_EXIT only */
	uint32_t id;
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
};

struct dispatch_prog_stat {
	char name[40];
	uint64_t run_cnt;
	uint64_t run_time_ns;
};

struct dispatch_stats {
	uint64_t emitted; /* records submitted by the kernel side */
	uint64_t dropped; /* records lost: ring buffer full */
	uint64_t received; /* records drained by user space */
	uint64_t healed; /* missed switch-ins the kernel side detected (DL_REC_RUNNING) */
	uint64_t agg_full; /* aggregate updates lost: map full */
	uint64_t agg_truncated; /* aggregates not returned by dispatch_take_aggs (max too small) */
	uint64_t anomalies; /* outlog missed_in + missed_out + desync + late + bad + overflow */
	struct outlog_counters outlog;
	uint64_t bpf_events; /* program runs, summed (0 when stats could not be enabled) */
	uint64_t bpf_run_ns; /* program run time, summed */
	int stats_enabled;
	int nprogs;
	struct dispatch_prog_stat progs[DISPATCH_MAX_PROGS]; /* attached programs */
};

/*
 * Load and attach. The scheduler programs are required; IRQ programs the kernel lacks and KVM programs
 * where kvm tracepoints do not exist are skipped. Returns the object (owned by the caller until
 * dispatch_close), or NULL with errno set (EPERM/EACCES: not privileged) and a one-line reason in msg.
 */
struct dispatch *dispatch_open(const struct dispatch_opts *o, char *msg, size_t msglen)
    __attribute__((warn_unused_result));
/* Detach and free everything; accepts NULL. */
void dispatch_close(struct dispatch *d);

/*
 * Monitor thread tid as slot (< DISPATCH_MAX_SLOTS). 0, -EINVAL, -EEXIST (tid already monitored), -EBUSY
 * (slot in use) or a map update error. Its state is unknown until its first switch.
 */
int dispatch_add(struct dispatch *d, uint32_t tid, uint32_t slot)
    __attribute__((warn_unused_result));
/*
 * Stop monitoring tid: an interval it is out in is closed at the horizon (outlog_slot_del); its records
 * still in flight are ignored. 0 or -ENOENT. A thread that exits is removed by the next dispatch_poll.
 */
int dispatch_del(struct dispatch *d, uint32_t tid);

/*
 * Drain the ring buffer into the outlog and apply records up to now_ns - reorder_ns (outlog callbacks run
 * here). Returns records drained (>= 0) or -errno.
 */
int dispatch_poll(struct dispatch *d, uint64_t now_ns) __attribute__((warn_unused_result));
/* The engine (set its callbacks with outlog_set_callbacks; read per-slot stats). Owned by d. */
struct outlog *dispatch_outlog(struct dispatch *d);
/*
 * End a period at end_ns: outlog_cut() and close the IRQ/KVM aggregates (dispatch_take_aggs). Calling
 * outlog_cut() on dispatch_outlog(d) directly is equivalent: the aggregates are then closed by the next
 * dispatch_take_aggs. The aggregates' boundary is the moment of closing, not end_ns (they carry no times).
 */
void dispatch_cut(struct dispatch *d, uint64_t end_ns);
/*
 * Copy up to max aggregates of slot for the last closed period into out, largest total first, and forget
 * them (a second call returns 0). Returns how many were copied (0 .. max), or -EINVAL.
 */
int dispatch_take_aggs(struct dispatch *d, uint32_t slot, struct dispatch_agg *out, int max);

bool dispatch_kvm_attached(const struct dispatch *d);
bool dispatch_irqs_attached(const struct dispatch *d);
/* Counters and per-program BPF run statistics (ns/event = run_time_ns / run_cnt). */
void dispatch_get_stats(struct dispatch *d, struct dispatch_stats *st);

#endif
