/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the VM harness's tools, vmexec and tcgwatch (host) and vmshd (guest, static): the monotonic
 * clock in ms, the strict decimal parser of the protocol's numbers and a unix-socket connect. Include it in
 * one translation unit of each.
 */
#ifndef VNOISE_TESTS_VMUTIL_H
#define VNOISE_TESTS_VMUTIL_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

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

/* A unix stream socket connected to path (close-on-exec): its fd, or -errno. */
static inline int unix_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, err;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

#endif
