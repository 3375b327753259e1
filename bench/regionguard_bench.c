/* SPDX-License-Identifier: MIT */
/*
 * regionguard_bench: what surviving a truncated region costs a guest channel (host/match/regionguard,
 * host/match/guestchan) on this machine, one thread:
 *   1. the guard around one access: regionguard_arm + sigsetjmp(jb, 0) + regionguard_disarm, ns (paid by
 *      every dispatch record published into the DTL and once per round by the rest);
 *   2. the round's look at the file: fstat of the region's fd, ns (once per channel and round: 200 rounds/s
 *      with --guest);
 *   3. a caught fault: the SIGBUS of an access past a truncated file's end, back at the guard, us.
 * Prints figures, never pass/fail.
 *
 *   make build/bench/regionguard_bench && build/bench/regionguard_bench [-n iterations]
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "match/regionguard.h"

#define LEN (1u << 20)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t n = 10000000; /* static: kept across the jumps back */

int main(int argc, char **argv)
{
	static struct regionguard g;
	char path[] = "/dev/shm/vnoise-bench-guard-XXXXXX";
	static volatile uint64_t faults; /* volatile: counted after a jump back */
	uint64_t t0;
	volatile uint64_t sink = 0;
	volatile char *p;
	struct stat st;
	int fd;

	if (argc == 3 && !strcmp(argv[1], "-n"))
		n = strtoull(argv[2], NULL, 10);
	if (!n || regionguard_install()) {
		fprintf(stderr, "usage: regionguard_bench [-n iterations]\n");
		return 2;
	}
	fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, LEN))
		return 1;
	unlink(path);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 1;

	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		regionguard_arm(&g, (const void *)p, LEN);
		if (sigsetjmp(g.jb, 0))
			return 1;
		p[(i * 64) % LEN] = (char)i;
		regionguard_disarm();
	}
	printf("guard around one access: %.1f ns (with the store)\n", (double)(now_ns() - t0) / n);
	t0 = now_ns();
	for (uint64_t i = 0; i < n; i++)
		p[(i * 64) % LEN] = (char)i;
	printf("the store alone: %.1f ns\n", (double)(now_ns() - t0) / n);

	t0 = now_ns();
	for (uint64_t i = 0; i < n / 10; i++) {
		if (fstat(fd, &st))
			return 1;
		sink += (uint64_t)st.st_size;
	}
	printf("the round's look at the file (fstat): %.1f ns\n",
	       (double)(now_ns() - t0) / (n / 10));

	if (ftruncate(fd, 0))
		return 1;
	t0 = now_ns();
	for (volatile uint64_t i = 0; i < 10000; i++) {
		regionguard_arm(&g, (const void *)p, LEN);
		if (sigsetjmp(g.jb, 0)) {
			faults++;
			continue;
		}
		sink += (uint64_t)p[(i * 4096) % LEN];
		regionguard_disarm();
	}
	printf("a caught fault (SIGBUS past the end, back at the guard): %.2f us (%llu caught)\n",
	       (double)(now_ns() - t0) / 1e3 / 10000, (unsigned long long)faults);
	close(fd);
	return sink == 42 ? 3 : 0;
}
