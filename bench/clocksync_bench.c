/* SPDX-License-Identifier: MIT */
/*
 * clocksync_bench: cost of host/match/clocksync on one core, and the uncertainty it reports on a simulated
 * ivshmem-like link. A simulated guest clock (offset -8e17 ns, drift +5 ppm) answers exchanges with one-way
 * delays of 200-1000 ns (rtt 0.4-2 us, REFERENCE.md §4) and 1% outliers of 1-2.5 ms. Timed separately
 * (CLOCK_MONOTONIC, default parameters): updates that open a new bucket (a refit over the 32-bucket window),
 * updates that fall into an existing bucket (no refit), clocksync_g2h() and clocksync_uncertainty_ns().
 * Then, over 60 s of exchanges every 10 ms (defaults, then without the wander allowance): the reported
 * uncertainty at the newest stamp and 1 s ahead, and the true error there. Prints figures, never pass/fail.
 *
 *   make build/bench/clocksync_bench && build/bench/clocksync_bench [iterations]
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "match/clocksync.h"
#include "lib/benchutil.h"

#define MS 1000000ull
#define S 1000000000ull
#define H0 1000000000000000000ull
#define THETA0 (-800000000000000000ll)
#define BETA 5e-6L

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd_n(uint64_t n)
{
	return (bench_xorshift64(&rng) >> 11) % n;
}

static uint64_t guest_at(uint64_t h)
{
	return (uint64_t)((int64_t)H0 + THETA0 +
			  (int64_t)floorl((long double)(h - H0) * (1.0L + BETA)));
}

/* true host time (ns after H0) at which the guest clock read g */
static long double true_host(uint64_t g)
{
	return (long double)((int64_t)g - (int64_t)H0 - THETA0) / (1.0L + BETA);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static uint64_t t_host = H0;

/* one exchange at t_host; then the host waits period */
static void exchange(struct clocksync *cs, uint64_t period, uint64_t *g_out)
{
	uint64_t d1 = 200 + rnd_n(800), d2 = 200 + rnd_n(800), g;

	if (rnd_n(100) == 0)
		d1 += 1 * MS + rnd_n(1500 * 1000);
	g = guest_at(t_host + d1);
	(void)clocksync_update(cs, t_host, g, t_host + d1 + d2);
	t_host += d1 + d2 + period;
	if (g_out)
		*g_out = g;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A fresh estimator, 60 s of exchanges every 10 ms; figures taken after the first 5 s. */
static void accuracy(const char *what, const struct clocksync_params *p)
{
	static struct clocksync cs;
	static uint64_t u0[6000], u1[6000];
	struct clocksync_state st;
	long double e0 = 0, e1 = 0, e;
	uint64_t i, g, h;

	if (clocksync_init(&cs, p))
		exit(1);
	t_host = H0;
	for (i = 0; i < 6000; i++) {
		exchange(&cs, 10 * MS, &g);
		if (clocksync_g2h(&cs, g, &h))
			exit(1);
		e = fabsl((long double)(h - H0) - true_host(g));
		e0 = e > e0 && i >= 500 ? e : e0;
		u0[i] = clocksync_uncertainty_ns(&cs, g);
		if (clocksync_g2h(&cs, g + S, &h))
			exit(1);
		e = fabsl((long double)(h - H0) - true_host(g + S));
		e1 = e > e1 && i >= 500 ? e : e1;
		u1[i] = clocksync_uncertainty_ns(&cs, g + S);
	}
	qsort(u0 + 500, 5500, sizeof(u0[0]), cmp_u64);
	qsort(u1 + 500, 5500, sizeof(u1[0]), cmp_u64);
	clocksync_state(&cs, t_host, &st);
	printf("simulated 60 s, %s, after 5 s:\n", what);
	printf(
	    "  uncertainty at newest stamp: median %llu ns, max %llu ns; true error max %.0Lf ns\n",
	    (unsigned long long)u0[500 + 2750], (unsigned long long)u0[5999], e0);
	printf(
	    "  uncertainty 1 s ahead:       median %llu ns, max %llu ns; true error max %.0Lf ns\n",
	    (unsigned long long)u1[500 + 2750], (unsigned long long)u1[5999], e1);
	printf("  fitted drift %.3f ppm (true 5), accepted %llu, rejected %llu, steps %llu\n",
	       st.drift_ppm, (unsigned long long)st.accepted, (unsigned long long)st.rejected,
	       (unsigned long long)st.steps);
}

int main(int argc, char **argv)
{
	static struct clocksync cs;
	struct clocksync_params p;
	uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000, i, t0, t1, g = 0, h,
		 sink = 0;
	int rc;

	if (!n || clocksync_init(&cs, NULL)) {
		fprintf(stderr, "usage: %s [iterations > 0]\n", argv[0]);
		return 2;
	}
	/* fill the window, then time updates that each open a bucket (refit) */
	for (i = 0; i < 64; i++)
		exchange(&cs, 100 * MS, &g);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		exchange(&cs, 100 * MS, &g);
	t1 = now_ns();
	printf("update, new bucket (refit over %u): %.1f ns\n", cs.p.window,
	       (double)(t1 - t0) / (double)n);
	/* updates inside one bucket: 1 us apart, a new bucket every ~100k */
	t0 = now_ns();
	for (i = 0; i < n; i++)
		exchange(&cs, 0, NULL);
	t1 = now_ns();
	printf("update, same bucket (mostly no refit): %.1f ns\n", (double)(t1 - t0) / (double)n);
	t0 = now_ns();
	for (i = 0; i < n; i++) {
		rc = clocksync_g2h(&cs, g - 1000000 + i, &h);
		sink += rc ? 0 : h;
	}
	t1 = now_ns();
	printf("clocksync_g2h: %.1f ns\n", (double)(t1 - t0) / (double)n);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		sink += clocksync_uncertainty_ns(&cs, g - 1000000 + i);
	t1 = now_ns();
	printf("clocksync_uncertainty_ns: %.1f ns\n", (double)(t1 - t0) / (double)n);

	accuracy("defaults (wander 0.5 ppm)", NULL);
	clocksync_params_default(&p);
	p.wander_ppm = 0.0;
	accuracy("wander 0 (measurement terms only)", &p);
	printf("reproduce: make build/bench/clocksync_bench && build/bench/clocksync_bench %llu\n",
	       (unsigned long long)n);
	return sink == 42 ? 3 : 0;
}
