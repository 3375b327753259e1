/* SPDX-License-Identifier: MIT */
/*
 * appstat: per-thread statistics of application synchronisation calls (protocol/app.h) and their JSON line.
 * Pure C, no allocation: the preload library keeps one table per thread and calls appstat_add() on its hot
 * path (a handful of adds and compares).
 */
#ifndef VNOISE_GUEST_MPI_APPSTAT_H
#define VNOISE_GUEST_MPI_APPSTAT_H

#include <stddef.h>
#include <stdint.h>
#include "app.h"

struct appstat {
	struct vn_app_stat ev[VN_APP_MAX];
	uint64_t last_pc[VN_APP_MAX]; /* caller of the latest call */
	uint64_t last_arg[VN_APP_MAX];
};

/* Count one call of ev that took dur_ns (out-of-range ev: ignored, returns -1). */
static inline int appstat_add(struct appstat *s, uint32_t ev, uint64_t dur_ns, uint64_t pc,
			      uint64_t arg)
{
	struct vn_app_stat *e;

	if (ev >= VN_APP_MAX)
		return -1;
	e = &s->ev[ev];
	if (!e->count || dur_ns < e->min_ns)
		e->min_ns = dur_ns;
	if (dur_ns > e->max_ns)
		e->max_ns = dur_ns;
	e->count++;
	e->total_ns += dur_ns;
	s->last_pc[ev] = pc;
	s->last_arg[ev] = arg;
	return 0;
}

/* "MPI_Barrier", "pthread_mutex_lock", ... ("?" out of range). */
const char *appstat_name(uint32_t ev);

/*
 * One JSON line (schema vnoise.app/1) for a thread's table into buf: {"schema","pid","tid","rank","comm",
 * "events":[{"event","id","count","total_ns","min_ns","max_ns","avg_ns","last_pc","last_arg"}...]} with only
 * the events that were called, and a trailing newline. rank < 0: not an MPI rank. Returns the length written
 * (without NUL), or -ENOSPC when buf is too small (buf then holds a truncated line, not to be used).
 */
int appstat_json(const struct appstat *s, int pid, int tid, int rank, const char *comm, char *buf,
		 size_t len);

#endif
