/* SPDX-License-Identifier: MIT */
/*
 * tick_floor: what a loop that only sleeps to a grid costs on this machine, the floor under any daemon that
 * polls at that period (vnoise-host serve --guest rounds every 5 ms, record without --guest every 50 ms).
 * For each period it sleeps to the grid (CLOCK_MONOTONIC, TIMER_ABSTIME, as host/engine/live.c does) for
 * SECONDS and prints its own CPU time (CLOCK_PROCESS_CPUTIME_ID) per second of wall time, and per wake-up.
 * Nothing else runs in the loop. Prints figures, never pass/fail.
 *
 *   make build/bench/tick_floor && build/bench/tick_floor [SECONDS [PERIOD_MS]]
 *   (default 10 s each for 1, 2, 5, 10 and 50 ms; with PERIOD_MS that period only)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	uint64_t periods_us[] = { 1000, 2000, 5000, 10000, 50000 };
	long secs = argc > 1 ? strtol(argv[1], NULL, 10) : 10;
	long one = argc > 2 ? strtol(argv[2], NULL, 10) : 0;
	size_t np = sizeof(periods_us) / sizeof(periods_us[0]);

	if (secs < 1 || secs > 3600 || one < 0 || one > 1000 || (argc > 2 && !one) || argc > 3) {
		fprintf(stderr, "usage: tick_floor [SECONDS 1..3600 [PERIOD_MS 1..1000]]\n");
		return 2;
	}
	if (one) {
		periods_us[0] = (uint64_t)one * 1000ULL;
		np = 1;
	}
	printf("# tick_floor: an empty loop sleeping to a grid, %ld s per period\n", secs);
	printf("# reproduce: make build/bench/tick_floor && build/bench/tick_floor %ld%s%.0ld\n",
	       secs, one ? " " : "", one);
	for (size_t i = 0; i < np; i++) {
		uint64_t tick = periods_us[i] * 1000ULL, c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		uint64_t t0 = clock_ns(CLOCK_MONOTONIC), end = t0 + (uint64_t)secs * 1000000000ULL,
			 t, n = 0;

		while ((t = clock_ns(CLOCK_MONOTONIC)) < end) {
			uint64_t w = (t / tick + 1) * tick;
			struct timespec ts = { .tv_sec = (time_t)(w / 1000000000ULL),
					       .tv_nsec = (long)(w % 1000000000ULL) };

			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			n++;
		}
		t = clock_ns(CLOCK_MONOTONIC) - t0;
		c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
		printf("period %5.1f ms: %.3f%% of a core, %.1f us per wake-up (%lu wake-ups)\n",
		       (double)periods_us[i] / 1e3, 100.0 * (double)c0 / (double)t,
		       n ? (double)c0 / (double)n / 1e3 : 0.0, (unsigned long)n);
	}
	return 0;
}
