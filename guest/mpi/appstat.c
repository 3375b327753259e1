/* SPDX-License-Identifier: MIT */
/*
 * appstat: per-thread statistics of application synchronisation calls (see appstat.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include "mpi/appstat.h"
#include "mpi/appstat_priv.h"
#include "util/bufout.h"

static const char *const names[VN_APP_MAX] = {
	"MPI_Barrier",
	"MPI_Allreduce",
	"MPI_Alltoall",
	"MPI_Reduce",
	"MPI_Bcast",
	"MPI_Allgather",
	"MPI_Wait",
	"MPI_Waitall",
	"pthread_barrier_wait",
	"pthread_mutex_lock",
	"pthread_mutex_unlock",
	"pthread_cond_wait",
	"pthread_join",
};

const char *appstat_name(uint32_t ev)
{
	return ev < VN_APP_MAX ? names[ev] : "?";
}

void appstat_merge(struct appstat *a, const struct appstat *b)
{
	for (int i = 0; i < VN_APP_MAX; i++) {
		const struct vn_app_stat *y = &b->ev[i];
		struct vn_app_stat *x = &a->ev[i];

		if (!y->count)
			continue;
		if (!x->count || y->min_ns < x->min_ns)
			x->min_ns = y->min_ns;
		if (y->max_ns > x->max_ns)
			x->max_ns = y->max_ns;
		x->count += y->count;
		x->total_ns += y->total_ns;
		a->last_pc[i] = b->last_pc[i];
		a->last_arg[i] = b->last_arg[i];
	}
}

int appstat_json(const struct appstat *s, int pid, int tid, int rank, const char *comm, char *buf,
		 size_t len)
{
	struct bufout o = { buf, len, 0, 0 };
	int first = 1;

	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	bufout_put(&o,
		   "{\"schema\":\"vnoise.app/1\",\"pid\":%d,\"tid\":%d,\"rank\":%d,\"comm\":", pid,
		   tid, rank);
	bufout_str(&o, comm ? comm : "", 64); /* a task name */
	bufout_put(&o, ",\"events\":[");
	for (uint32_t i = 0; i < VN_APP_MAX; i++) {
		const struct vn_app_stat *e = &s->ev[i];

		if (!e->count)
			continue;
		bufout_put(&o,
			   "%s{\"event\":\"%s\",\"id\":%u,\"count\":%" PRIu64
			   ",\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			   ",\"avg_ns\":%" PRIu64 ",\"last_pc\":%" PRIu64 ",\"last_arg\":%" PRIu64
			   "}",
			   first ? "" : ",", names[i], i, (uint64_t)e->count, (uint64_t)e->total_ns,
			   (uint64_t)e->min_ns, (uint64_t)e->max_ns,
			   (uint64_t)(e->total_ns / e->count), s->last_pc[i], s->last_arg[i]);
		first = 0;
	}
	bufout_put(&o, "]}\n");
	return bufout_result(&o);
}
