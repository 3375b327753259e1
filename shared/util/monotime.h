/* SPDX-License-Identifier: MIT */
/*
 * monotime: CLOCK_MONOTONIC in ns, the time base of every vnoise record, and CLOCK_REALTIME in ns, that of
 * the cluster reports (one copy each, inlined).
 */
#ifndef VNOISE_UTIL_MONOTIME_H
#define VNOISE_UTIL_MONOTIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME in ns: the times in cluster reports (comparable between nodes). */
static inline uint64_t now_rt_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
