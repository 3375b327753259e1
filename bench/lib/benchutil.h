/* SPDX-License-Identifier: MIT */
/* benchutil: the two helpers every CPU benchmark here needs (included by the programs in bench/). */
#ifndef VNOISE_BENCH_LIB_BENCHUTIL_H
#define VNOISE_BENCH_LIB_BENCHUTIL_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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

#endif
