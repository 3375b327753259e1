/* SPDX-License-Identifier: MIT */
/*
 * hit_waiter: the receiving end of bench/hit_action.sh and of the tests of the --on-threshold signal action.
 * Waits for SIGUSR1 or SIGRTMIN+1 (a real-time signal: queued, so hits sent back to back are all counted),
 * whose si_value carries the hit gap's end (CLOCK_MONOTONIC ns), and takes the delay from that end to the
 * signal's receipt. At SIGTERM (or after SECONDS) it prints the count and the delay's p50, p99 and max in us
 * ("hits N p50_us A p99_us B max_us C"). Usage: hit_waiter [SECONDS]
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_HITS 100000

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static uint64_t lat[MAX_HITS];
	struct timespec now, to = { argc > 1 ? atoi(argv[1]) : 60, 0 };
	size_t n = 0;
	sigset_t set;
	siginfo_t si;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGRTMIN + 1);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		int sig = sigtimedwait(&set, &si, &to);
		uint64_t t, end;

		if (sig != SIGUSR1 && sig != SIGRTMIN + 1)
			break;
		clock_gettime(CLOCK_MONOTONIC, &now);
		t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
		end = (uint64_t)(uintptr_t)si.si_value.sival_ptr;
		if (n < MAX_HITS)
			lat[n++] = end && end <= t ? t - end : 0;
	}
	qsort(lat, n, sizeof(lat[0]), cmp);
	if (!n) {
		printf("hits 0\n");
		return 1;
	}
	printf("hits %zu p50_us %.1f p99_us %.1f max_us %.1f\n", n, lat[(n - 1) / 2] / 1e3,
	       lat[(size_t)((double)(n - 1) * 0.99)] / 1e3, lat[n - 1] / 1e3);
	return 0;
}
