/* SPDX-License-Identifier: MIT */
/*
 * vnoise application events: what libvnoise-preload.so sees of a program's synchronisation calls
 * (PMPI wrappers, pthread interposition) and the per-thread statistics it keeps. protocol/README.md
 * ("Application events") documents the JSON lines the library writes.
 */
#ifndef VNOISE_APP_H
#define VNOISE_APP_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Event ids (stable: they are written as numbers too). */
enum vn_app_ev {
	VN_APP_MPI_BARRIER = 0,
	VN_APP_MPI_ALLREDUCE = 1,
	VN_APP_MPI_ALLTOALL = 2,
	VN_APP_MPI_REDUCE = 3,
	VN_APP_MPI_BCAST = 4,
	VN_APP_MPI_ALLGATHER = 5,
	VN_APP_MPI_WAIT = 6,
	VN_APP_MPI_WAITALL = 7,
	VN_APP_PTHREAD_BARRIER_WAIT = 8,
	VN_APP_PTHREAD_MUTEX_LOCK = 9,
	VN_APP_PTHREAD_MUTEX_UNLOCK = 10,
	VN_APP_PTHREAD_COND_WAIT = 11,
	VN_APP_PTHREAD_JOIN = 12,
	VN_APP_MAX = 13,
};

/* One call as the wrapper saw it. */
struct vn_app_call {
	__u64 start_ns; /* CLOCK_MONOTONIC when the call was entered */
	__u64 dur_ns; /* time inside the call */
	__u64 pc; /* caller's return address */
	__u64
	    arg; /* the argument of interest: mutex/barrier/cond address, thread id joined, bytes */
	__u32 ev; /* enum vn_app_ev */
	__u32 cpu; /* CPU at entry */
	__u32 pid;
	__u32 tid;
	__s32 rank; /* MPI_COMM_WORLD rank, -1: not an MPI rank (yet) */
	__u32 pad;
};
_Static_assert(sizeof(struct vn_app_call) == 56, "vn_app_call is ABI");

/* Per-thread (per-rank) statistics of one event. */
struct vn_app_stat {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns; /* 0 when count is 0 */
	__u64 max_ns;
};

/*
 * Passive kernel helper (guest/bpf/passive.bpf.c): noise hitting target tasks, accumulated in the kernel per
 * target, in one BPF_F_MMAPABLE array of struct vn_tgt that ranks map read-only (the fd comes over the
 * registration socket). Counters only grow; a reader takes differences between two snapshots.
 */
#include "noise.h"

#define VN_TGT_MAX 256 /* targets (processes, cgroups or CPUs) one monitor follows */
/*
 * Largest causes kept per target. With 4, three causes larger than a small periodic one (a timer interrupt,
 * two busy neighbours) left a single slot that every new cause took in turn: the small one was evicted
 * between its bursts and charged nothing (seen in 2 of ~100 sweep jobs; a 0.1% injector beside three 3%
 * ones charged 0 of its 9 ms). 8 slots need 7 larger causes for that. (16 would need 15, but the
 * helper's cause loop then took the verifier 1 s instead of 0.17 s at every start.)
 */
#define VN_TGT_CAUSES 8

/* One cause of a target's noise: a preempting thread (cls THREAD, id = its pid), an IRQ/vector, a softirq. */
struct vn_tgt_cause {
	__u64 ns; /* net noise from this cause, cumulative */
	__u32 id; /* pid (THREAD), irq number or VN_VEC_BASE + vector (IRQ), vector (SOFTIRQ) */
	__u8 cls; /* enum vn_class; VN_CLASS_NONE: slot unused */
	__u8 pad[3];
	char comm[VN_COMM_LEN]; /* THREAD only */
};
_Static_assert(sizeof(struct vn_tgt_cause) == 32, "vn_tgt_cause is ABI");

struct vn_tgt {
	__u64 ns
	    [VN_CLASS_MAX]; /* net noise by class (THREAD: preemption while runnable), cumulative */
	__u64 count[VN_CLASS_MAX]; /* events by class */
	__u64
	    run_ns; /* time the target was on a CPU, brought up to date at switches and interrupt exits */
	__u64 max_ns; /* largest single event */
	struct vn_tgt_cause cause[VN_TGT_CAUSES]; /* a new cause replaces the smallest */
};
_Static_assert(sizeof(struct vn_tgt) == 400, "vn_tgt is ABI");

/*
 * Registration of an MPI rank with `vnoise-guest mpi` over the AF_UNIX stream socket named by $VNOISE_SOCK:
 * the rank sends vn_reg_req after MPI_Init; the monitor answers vn_reg_rep with SCM_RIGHTS file descriptors:
 * [0] the interval pipeline (struct vn_pipe, a memfd, read-write), [1] the vn_tgt array (read-only; absent
 * when nfds is 1). The rank keeps the socket open until it exits: its end tells the monitor the rank is gone.
 */
#define VN_REG_MAGIC 0x31474552u /* "REG1" */
#define VN_REG_VERSION 2 /* 2: struct vn_tgt of 8 causes (400 bytes) */
struct vn_reg_req {
	__u32 magic;
	__u32 version; /* VN_REG_VERSION */
	__s32 rank; /* MPI_COMM_WORLD rank */
	__s32 size; /* MPI_COMM_WORLD size */
	__u32 pid; /* the rank's process (the monitor checks it against SO_PEERCRED) */
	__u32 pad;
};
struct vn_reg_rep {
	__u32 magic;
	__s32 status; /* 0, or -errno: the rank runs untracked */
	__u32 tgt; /* the rank's index in the vn_tgt array */
	__u32 nfds; /* descriptors passed: 1 or 2 */
	__u64 pipe_size; /* bytes of the pipeline memfd */
	__u64 tgt_size; /* bytes to map of the vn_tgt array (page rounded) */
};
_Static_assert(sizeof(struct vn_reg_req) == 24 && sizeof(struct vn_reg_rep) == 32,
	       "registration is ABI");

/*
 * Interval pipeline: a node-local shared buffer with three rotating interval entries. Interval n of
 * a rank is its computation between the exit of its n-th synchronisation call (MPI_Init for n = 0) and the
 * entry of its (n+1)-th. The rank that closes n second (first, with fewer than 3 ranks) filters n-1 and the
 * first to close n reports n-2: n is tracked while n-1 is filtered and n-2 reported. protocol/README.md
 * ("Interval pipeline") documents it.
 */
#define VN_PIPE_MAGIC 0x31504e56u /* "VNP1" */
#define VN_PIPE_VERSION 5
#define VN_PIPE_RANKS 64
#define VN_PIPE_SLOTS 3
#define VN_PIPE_JOURNAL \
	256 /* filtered intervals kept for vnoise-guest in DTL mode (VN_PIPE_F_DEFER) */
#define VN_PIPE_NO_INSTR (~0ULL) /* no PMU: retired instructions unknown */

enum vn_pipe_state { VN_PIPE_TRACKED = 0, VN_PIPE_FILTERED = 1, VN_PIPE_REPORTED = 2 };
enum vn_pipe_verdict {
	VN_VERDICT_NONE = 0, /* not delayed (or not filtered) */
	VN_VERDICT_NOISE = 1, /* delayed, and noise explains at least half of the delay */
	VN_VERDICT_IMBALANCE =
	    2, /* delayed by more work: instructions (or on-CPU time) above the fastest */
	VN_VERDICT_UNEXPLAINED = 3,
};
enum vn_pipe_out {
	VN_PIPE_OUT_NONE = 0,
	VN_PIPE_OUT_STDOUT =
	    1, /* vnoise-guest mpi's stdout: out_path "/proc/PID/fd/N" (empty: the rank's own fd 1) */
	VN_PIPE_OUT_FILE = 2,
	VN_PIPE_OUT_UDP = 3,
	VN_PIPE_OUT_REPORT =
	    4, /* binary report datagrams (protocol/cluster.h) to a collector at out_path */
};
#define VN_PIPE_F_ALL 1u /* report every interval, not only those with a delayed rank */
/*
 * DTL mode: vnoise-guest reports, the ranks do not. The rank that filters an interval copies its
 * records into the journal; vnoise-guest adds the hypervisor noise of each rank from the dispatch trace log
 * once the host's horizon has passed the interval (bounded wait), filters again and reports.
 */
#define VN_PIPE_F_DEFER 2u
#define VN_PIPE_F_HYP \
	4u /* the records' hyp_ns count as noise (set on vnoise-guest's own copy only) */

/* vn_pipe_hdr.dtl: the state of the dispatch trace log as the report line names it */
enum vn_pipe_dtl {
	VN_PIPE_DTL_ABSENT = 0,
	VN_PIPE_DTL_WAITING = 1,
	VN_PIPE_DTL_OK = 2,
	VN_PIPE_DTL_STALE = 3,
	VN_PIPE_DTL_OFF = 4, /* --no-dtl: the guest-only view */
	VN_PIPE_DTL_LATE = 5, /* ok, judged before the horizon passed it: host part may be short */
};
#define VN_PIPE_HYP_NAME_LEN 48

/* One rank's record of one interval, written by the rank when it closes the interval. */
struct vn_pipe_iv {
	__u64 interval; /* interval number + 1; 0: empty */
	__u64 start_ns; /* CLOCK_MONOTONIC: exit of the previous synchronisation call */
	__u64 end_ns; /* entry of the call that closed the interval */
	__u64 noise_ns[VN_CLASS_MAX]; /* noise hitting the rank during the interval, by class */
	__u64 instructions; /* retired user instructions, VN_PIPE_NO_INSTR without a PMU */
	__u64 cause_ns; /* the largest single cause in the interval ... */
	__u32 cause_id; /* ... its id (vn_tgt_cause.id) */
	__u8 cause_cls; /* ... its class; VN_CLASS_NONE: none */
	__u8 verdict; /* enum vn_pipe_verdict, written by the filter */
	__u16 ev; /* enum vn_app_ev of the closing call */
	__u32 cpu; /* CPU at the end */
	__u32 pid;
	char cause_comm[VN_COMM_LEN];
	__u64 delay_ns; /* filter: compute time minus the fastest rank's */
	/* written by vnoise-guest from the DTL (zero without one) */
	__u64 hyp_ns
	    [VN_HCLASS_MAX]; /* hypervisor noise on the rank's CPU in the interval, by enum vn_hclass */
	__u64 hyp_cause_ns; /* the largest host cause (host_preempt) ... */
	__u32 hyp_cause; /* ... its DTL cause word */
	__u8 hyp_cause_cls; /* ... its enum vn_dtl_class; 0: none */
	__u8
	    gverdict; /* filter: the verdict with the hypervisor figures ignored (guest-only view) */
	__u16 pad;
	char hyp_key[VN_COMM_LEN]; /* dtl_cause_key: host comm (detail task) or class name */
	char hyp_name[VN_PIPE_HYP_NAME_LEN]; /* dtl_cause_name: "host-user-task[:comm[pid]]" */
};
_Static_assert(sizeof(struct vn_pipe_iv) == 256, "vn_pipe_iv is ABI");
_Static_assert(__builtin_offsetof(struct vn_pipe_iv, hyp_ns) == 144 &&
		   sizeof(((struct vn_pipe_iv *)0)->hyp_ns) == 4 * 8,
	       "vn_pipe_iv.hyp_ns[] is ABI: enum vn_hclass 0..3");

struct vn_pipe_slot {
	__u64 ticket; /* (interval + 1) << 16 | ranks that closed it so far (compare-and-swap) */
	__u32 state; /* enum vn_pipe_state */
	__u32 delayed; /* filter: ranks delayed beyond the rule */
	__u64 min_ns, max_ns, avg_ns; /* filter: silhouette of compute times */
	__s32 fastest, second, slowest; /* filter: ranks (-1: none) */
	__u32 nranks; /* filter: records found */
	/* filter: the slowest rank's delay split into guest noise, hypervisor noise and the rest
	 * (imbalance or unexplained): each the slowest's figure beyond the fastest's, capped by the delay */
	__u64 sil_guest_ns, sil_hyp_ns, sil_rest_ns;
	__u32 gdelayed; /* filter: delayed ranks whose guest-only verdict is noise */
	__u32 hdelayed; /* filter: delayed ranks whose verdict is noise by a hypervisor cause */
	struct vn_pipe_iv r[VN_PIPE_RANKS];
};
_Static_assert(sizeof(struct vn_pipe_slot) == 56 + 32 + 64 * 256, "vn_pipe_slot is ABI");

/* A filtered interval copied for vnoise-guest (VN_PIPE_F_DEFER): journal[n % VN_PIPE_JOURNAL]. */
struct vn_pipe_jent {
	__u64 seq; /* seqlock: odd while a rank writes the entry */
	__u64 interval; /* n + 1; 0: empty */
	__u32 nrec; /* records copied (r[0..nrec), by rank index) */
	__u32 pad;
	struct vn_pipe_iv r[VN_PIPE_RANKS];
};

struct vn_pipe_hdr {
	__u32 magic;
	__u32 version;
	__u32 nranks; /* MPI_COMM_WORLD size (first registration) */
	__u32 flags; /* VN_PIPE_F_* */
	char job[32]; /* job name in the reports */
	/* filter rules, set by vnoise-guest mpi */
	__u32 delay_pct_x100; /* delayed: compute > fastest * (1 + pct / 100) */
	__u32 class_mask; /* 1 << vn_class: classes that count as noise */
	__u64 min_noise_ns; /* a class's noise below this in an interval does not count */
	/* output of the reports */
	__u32 out; /* enum vn_pipe_out */
	__u32 min_delay_ns; /* rule: a delay must also exceed this (ns) */
	char out_path[256]; /* file, "ADDR:PORT" for UDP, vnoise-guest's stdout for STDOUT */
	/* counters (atomic adds) */
	__u64 intervals; /* intervals filtered */
	__u64 reported; /* reports written */
	__u64
	    quiet; /* filtered intervals without a delayed rank (reported only with VN_PIPE_F_ALL) */
	__u64 overrun; /* intervals lost: their slot was taken again before they were reported */
	__u64 out_errors; /* reports that could not be written or sent */
	__u64 filter_ns; /* time spent filtering, summed */
	__u64 report_ns; /* time spent formatting and writing reports, summed */
	__u64 unregistered; /* synchronisation calls of ranks that could not register */
	/*
	 * Cluster reports (VN_PIPE_OUT_REPORT), set by vnoise-guest mpi. The key is here because the
	 * reporting rank seals the datagrams: only the job's registered ranks map this memory.
	 */
	__u64 node_id, session_id, job_id; /* protocol/cluster.h header fields */
	__u64 seq; /* next datagram sequence number: a reporter reserves its parts (atomic add) */
	__u64 sample_from_ns, sample_until_ns; /* CLOCK_MONOTONIC: the collector's SAMPLE lease */
	__u64 dgrams; /* report datagrams sent (atomic add) */
	__u16 key_id;
	__u16 key_len; /* bytes of key, 16..64 */
	__u32 dtl; /* enum vn_pipe_dtl, set by vnoise-guest */
	__u8 key[64];
	/* journal (VN_PIPE_F_DEFER) */
	__u64 journal_top; /* highest interval + 1 copied into the journal (atomic max) */
	__u64 journal_lost; /* copies that could not be made (a rank found the slot moved on) */
	/* VN_PIPE_OUT_REPORT with vnoise-guest mpi -o: the JSON lines too, into /proc/copy_pid/fd/copy_fd
	 * (vnoise-guest's open file; 0: none) */
	__u32 copy_pid, copy_fd;
};
_Static_assert(sizeof(struct vn_pipe_hdr) == 544, "vn_pipe_hdr is ABI");

/*
 * The filter's tally of one rank (by rank index) over the run, for vnoise-guest mpi's end table: the intervals
 * it was delayed in, their delays, and the causes of those intervals by time (the largest single cause of
 * each, or the hypervisor's when it wins). A cause takes a free entry by compare-and-swap of key[k] (0 ->
 * (cls << 32 | id) + 1), then adds to cause[k].ns; a cause without an entry adds to other_ns.
 */
#define VN_PIPE_RANK_CAUSES 4
#define VN_PIPE_CAUSE_HYP \
	0xffu /* cause[].cls of a hypervisor cause: comm is its DTL key, id its word */
struct vn_pipe_rank {
	__u64 delayed; /* intervals the filter found this rank delayed in (atomic add) */
	__u64
	    delay_ns; /* their delays summed: compute time beyond the fastest rank's (atomic add) */
	__u64 other_ns; /* cause time that found no entry (atomic add) */
	__u64 key[VN_PIPE_RANK_CAUSES];
	struct vn_tgt_cause cause[VN_PIPE_RANK_CAUSES];
	/* its worst interval: the largest delay (atomic max; the filter that raised it writes the rest, so
	 * under filters racing on one rank the cause is the latest winner's) */
	__u64 worst_ns;
	__u64 worst_interval; /* interval number */
	__s32 worst_fastest; /* the rank that waited longest on it (the fastest of that interval) */
	__u32 worst_pad;
	struct vn_tgt_cause
	    worst_cause; /* its largest cause (cls VN_CLASS_NONE: none; VN_PIPE_CAUSE_HYP) */
};

struct vn_pipe {
	struct vn_pipe_hdr h;
	struct vn_pipe_slot slot[VN_PIPE_SLOTS];
	struct vn_pipe_jent journal[VN_PIPE_JOURNAL];
	struct vn_pipe_rank rank[VN_PIPE_RANKS];
};

#endif
