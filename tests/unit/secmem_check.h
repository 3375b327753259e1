/* SPDX-License-Identifier: MIT */
/*
 * secmem_check: what the suites of key material look at. vmflag() reads /proc/self/smaps for the mapping
 * holding an address ("dd": not in a core dump, "lo": locked). The suite's own munmap() interposes the C
 * library's for the code it links (the unit under test calls munmap from this executable), and records
 * whether the watched range was all zero when it was unmapped.
 */
#ifndef VNOISE_TESTS_UNIT_SECMEM_CHECK_H
#define VNOISE_TESTS_UNIT_SECMEM_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* 1 when the mapping holding p has VmFlag flag, 0 when not, -1 when p is in no mapping. */
static inline int vmflag(const void *p, const char *flag)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, found = -1;
	uintptr_t a = (uintptr_t)p;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = a >= lo && a < hi;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			char want[8];

			snprintf(want, sizeof(want), " %s", flag);
			found = 0;
			for (char *s = strstr(line, want); s; s = strstr(s + 1, want))
				if (s[strlen(want)] == ' ' || s[strlen(want)] == '\n')
					found = 1;
			break;
		}
	}
	fclose(f);
	return found;
}

/* The range watched by munmap() below, and what it saw. */
static const volatile unsigned char *watch_p;
static size_t watch_len;
static int watch_unmapped, watch_zero;

static inline void watch(const void *p, size_t len)
{
	watch_p = p;
	watch_len = len;
	watch_unmapped = 0;
	watch_zero = 0;
}

int munmap(void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, w = (uintptr_t)watch_p;

	if (watch_p && w >= a && w + watch_len <= a + len) {
		watch_zero = 1;
		for (size_t i = 0; i < watch_len; i++)
			if (watch_p[i])
				watch_zero = 0;
		watch_unmapped = 1;
		watch_p = NULL;
	}
	return (int)syscall(SYS_munmap, addr, len);
}

#endif
