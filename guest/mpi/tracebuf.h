/* SPDX-License-Identifier: MIT */
/*
 * tracebuf: the per-thread buffer of the preload library's per-call trace (protocol/app.h struct
 * vn_app_call records), filled on the hot path and written out whole by its owner. The bound is checked
 * before every write, on one read of the count: a wrapped call made from a signal handler inside another
 * one may move the count meanwhile, which can cost a record (overwritten) but never writes past the end.
 * Header-only: the hot path inlines it. One owner thread per buffer (and the exit handler, best effort).
 */
#ifndef VNOISE_MPI_TRACEBUF_H
#define VNOISE_MPI_TRACEBUF_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include "app.h"

#define TRACEBUF_RECS 1024

struct tracebuf {
	uint32_t n; /* records held, at most TRACEBUF_RECS */
	int slot; /* the owner's: index in its pool, -1: private */
	struct vn_app_call rec[TRACEBUF_RECS];
};

/* Append *r: 0, or -ENOBUFS when the buffer is full (nothing written: write it out, or count r lost). */
static inline int tracebuf_put(struct tracebuf *b, const struct vn_app_call *r)
{
	uint32_t n = __atomic_load_n(&b->n, __ATOMIC_RELAXED);

	if (n >= TRACEBUF_RECS)
		return -ENOBUFS;
	b->rec[n] = *r;
	__atomic_store_n(&b->n, n + 1, __ATOMIC_RELAXED);
	return 0;
}

static inline bool tracebuf_full(const struct tracebuf *b)
{
	return __atomic_load_n(&b->n, __ATOMIC_RELAXED) >= TRACEBUF_RECS;
}

/* The records to write out: b->n, never more than the buffer holds. */
static inline uint32_t tracebuf_count(const struct tracebuf *b)
{
	uint32_t n = __atomic_load_n(&b->n, __ATOMIC_RELAXED);

	return n < TRACEBUF_RECS ? n : TRACEBUF_RECS;
}

#endif
