/* SPDX-License-Identifier: MIT */
/*
 * schedlog: the host dispatch log (public API of host/schedlog/schedlog.c). Loads and attaches the eBPF programs of
 * schedlog.bpf.c, maps monitored vCPU threads (tid -> slot), drains their scheduler records into an outlog
 * engine (host/schedlog/outlog.h: out intervals, host task runs, per-slot period stats) and collects per-period
 * aggregates of host IRQs while a vCPU ran and of KVM exits. One struct schedlog owns the BPF object, its
 * links, the ring buffer reader, the outlog and the BPF_ENABLE_STATS fd (run-time statistics are on only
 * while that fd is open, so nothing is left changed on any exit, SIGKILL included).
 *
 * Threads: not thread-safe. One thread calls every function (typically a timer loop: schedlog_poll every
 * tick, schedlog_cut or outlog_cut every period). The kernel never wakes that thread (records are submitted
 * with BPF_RB_NO_WAKEUP): poll often enough that the ring does not fill (drops are counted).
 * Time base: host CLOCK_MONOTONIC ns (bpf_ktime_get_ns()).
 */
#ifndef VNOISE_HOST_SCHEDLOG_SCHEDLOG_LOADER_H
#define VNOISE_HOST_SCHEDLOG_SCHEDLOG_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "bpf/bpfutil.h"
#include "schedlog/outlog.h"
#include "schedlog/schedlog.h"

#define SCHEDLOG_MAX_PROGS 32
#define SCHEDLOG_RING_BYTES (8u << 20) /* default ring buffer size */
#define SCHEDLOG_REORDER_NS 1000000ULL /* default lag of the poll horizon behind now */

struct schedlog;

struct schedlog_opts {
	int want_irqs; /* aggregate host IRQs/softirqs/vectors on CPUs where a vCPU runs */
	int want_kvm; /* aggregate KVM exits (kvm:kvm_exit/kvm_entry); skipped if the host lacks them */
	uint32_t ring_bytes; /* ring buffer size, a power of two >= 4096; 0: SCHEDLOG_RING_BYTES */
	uint64_t
	    reorder_ns; /* schedlog_poll applies records older than now - reorder_ns; 0: default */
};

/* Count and duration of one {kind, id} for one slot over one period. */
struct schedlog_agg {
	uint16_t kind; /* enum schedlog_agg_kind */
	uint16_t isa; /* SCHEDLOG_AGG_EXIT only */
	uint32_t id;
	uint64_t count;
	uint64_t total_ns;
	uint64_t max_ns;
};

struct schedlog_stats {
	uint64_t emitted; /* records submitted by the kernel side */
	uint64_t dropped; /* records lost: ring buffer full */
	uint64_t received; /* records drained by user space */
	uint64_t healed; /* missed switch-ins the kernel side detected (SCHEDLOG_REC_RUNNING) */
	uint64_t agg_full; /* aggregate updates lost: map full */
	uint64_t agg_truncated; /* aggregates not returned by schedlog_take_aggs (max too small) */
	uint64_t anomalies; /* outlog missed_in + missed_out + desync + late + bad + overflow */
	struct outlog_counters outlog;
	uint64_t bpf_events; /* program runs, summed (0 when stats could not be enabled) */
	uint64_t bpf_run_ns; /* program run time, summed */
	int stats_enabled;
	int nprogs;
	struct bpfutil_prog_stat progs[SCHEDLOG_MAX_PROGS]; /* attached programs */
};

/*
 * Load and attach. The scheduler programs are required; IRQ programs the kernel lacks and KVM programs
 * where kvm tracepoints do not exist are skipped. Returns the object (owned by the caller until
 * schedlog_close), or NULL with errno set (EPERM/EACCES: not privileged) and a one-line reason in msg.
 */
struct schedlog *schedlog_open(const struct schedlog_opts *o, char *msg, size_t msglen)
    __attribute__((warn_unused_result));
/* Detach and free everything; accepts NULL. */
void schedlog_close(struct schedlog *d);

/*
 * Monitor thread tid as slot (< SCHEDLOG_MAX_SLOTS). 0, -EINVAL, -EEXIST (tid already monitored), -EBUSY
 * (slot in use) or a map update error. Its state is unknown until its first switch.
 */
int schedlog_add(struct schedlog *d, uint32_t tid, uint32_t slot)
    __attribute__((warn_unused_result));
/*
 * Stop monitoring tid: an interval it is out in is closed at the horizon (outlog_slot_del); its records
 * still in flight are ignored. 0 or -ENOENT. A thread that exits is removed by the next schedlog_poll.
 */
int schedlog_del(struct schedlog *d, uint32_t tid);

/*
 * Drain the ring buffer into the outlog and apply records up to now_ns - reorder_ns (outlog callbacks run
 * here). Returns records drained (>= 0) or -errno.
 */
int schedlog_poll(struct schedlog *d, uint64_t now_ns) __attribute__((warn_unused_result));
/* The engine (set its callbacks with outlog_set_callbacks; read per-slot stats). Owned by d. */
struct outlog *schedlog_outlog(struct schedlog *d);
/*
 * End a period at end_ns: outlog_cut() and close the IRQ/KVM aggregates (schedlog_take_aggs). Calling
 * outlog_cut() on schedlog_outlog(d) directly is equivalent: the aggregates are then closed by the next
 * schedlog_take_aggs. The aggregates' boundary is the moment of closing, not end_ns (they carry no times).
 */
void schedlog_cut(struct schedlog *d, uint64_t end_ns);
/*
 * Copy up to max aggregates of slot for the last closed period into out, largest total first, and forget
 * them (a second call returns 0). Returns how many were copied (0 .. max), or -EINVAL.
 */
int schedlog_take_aggs(struct schedlog *d, uint32_t slot, struct schedlog_agg *out, int max);

bool schedlog_kvm_attached(const struct schedlog *d);
/* Counters and per-program BPF run statistics (ns/event = run_time_ns / run_cnt). */
void schedlog_get_stats(struct schedlog *d, struct schedlog_stats *st);

#endif
