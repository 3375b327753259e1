/* SPDX-License-Identifier: MIT */
/*
 * vnoise application events (issue 5): what libvnoise-preload.so sees of a program's synchronisation calls
 * (PMPI wrappers, pthread interposition) and the per-thread statistics it keeps. protocol/README.md
 * ("Application events") documents the JSON lines the library writes.
 */
#ifndef VNOISE_PROTOCOL_APP_H
#define VNOISE_PROTOCOL_APP_H

#include <linux/types.h>

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
};

/* Per-thread (per-rank) statistics of one event. */
struct vn_app_stat {
	__u64 count;
	__u64 total_ns;
	__u64 min_ns; /* 0 when count is 0 */
	__u64 max_ns;
};

#endif
