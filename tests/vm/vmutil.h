/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the VM harness's two ends, vmexec (host) and vmshd (guest, static): the monotonic clock in ms
 * and the strict decimal parser of the protocol's numbers. Include it in one translation unit of each.
 */
#ifndef VNOISE_TESTS_VMUTIL_H
#define VNOISE_TESTS_VMUTIL_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Strict unsigned decimal in [0, max]: no sign, no junk. Returns 0 or -EINVAL / -ERANGE. */
static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

#endif
