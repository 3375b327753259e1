/* SPDX-License-Identifier: MIT */
/*
 * benchutil: the helpers the CPU benchmarks here share (included by the programs in bench/): the clock, the
 * count parser, the pseudo-random generator of the synthetic streams and the events they are made of.
 */
#ifndef VNOISE_BENCH_LIB_BENCHUTIL_H
#define VNOISE_BENCH_LIB_BENCHUTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "noise.h"

/* CLOCK_MONOTONIC in seconds. */
static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A positive decimal count. Returns 0 or -EINVAL. */
static inline int parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v == 0)
		return -EINVAL;
	*out = v;
	return 0;
}

/* xorshift64: advances *state (never 0) and returns the new state. Deterministic from a given seed. */
static inline uint64_t bench_xorshift64(uint64_t *state)
{
	*state ^= *state << 13;
	*state ^= *state >> 7;
	*state ^= *state << 17;
	return *state;
}

/*
 * e as a synthetic event of class cls and id over [start, end), net ns of it its own, at depth under the
 * event (pcls, pid). The other fields (cpu, steal, flags, comm) are left as they are.
 */
static inline void bench_event(struct vn_event *e, int cls, uint32_t id, uint64_t start,
			       uint64_t end, uint64_t net, int pcls, uint32_t pid, int depth)
{
	e->start_ns = start;
	e->end_ns = end;
	e->net_ns = (uint32_t)net;
	e->cls = (uint8_t)cls;
	e->id = id;
	e->parent_cls = (uint8_t)pcls;
	e->parent_id = pid;
	e->depth = (uint8_t)depth;
}

#endif
