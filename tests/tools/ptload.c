/* SPDX-License-Identifier: MIT */
/*
 * ptload: a pthread program of known shape for the preload tests and benchmark.
 *   ptload work THREADS ITERS LOCKS SLEEP_US   every thread: ITERS times (LOCKS mutex lock/unlock pairs,
 *                                               then a barrier); thread 0 sleeps SLEEP_US before the barrier
 *                                               in every 10th iteration; main waits on a condition until all
 *                                               are done, then joins them. Prints the expected counts.
 *   ptload lockloop N                          N lock/unlock pairs on one thread; prints ns per pair
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t bar;
static long iters, locks, sleep_us, counter;
static int done;

static void *worker(void *arg)
{
	long id = (long)arg;

	for (long i = 0; i < iters; i++) {
		for (long k = 0; k < locks; k++) {
			pthread_mutex_lock(&mu);
			counter++;
			pthread_mutex_unlock(&mu);
		}
		if (id == 0 && i % 10 == 0)
			usleep((useconds_t)sleep_us);
		pthread_barrier_wait(&bar);
	}
	pthread_mutex_lock(&mu);
	done++;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "lockloop")) {
		long n = atol(argv[2]);
		double t0 = now_s();

		for (long i = 0; i < n; i++) {
			pthread_mutex_lock(&mu);
			counter++;
			pthread_mutex_unlock(&mu);
		}
		printf("lockloop: %ld pairs, %.1f ns per pair\n", n,
		       (now_s() - t0) * 1e9 / (double)n);
		return 0;
	}
	if (argc != 6 || strcmp(argv[1], "work")) {
		fprintf(stderr,
			"usage: ptload work THREADS ITERS LOCKS SLEEP_US | ptload lockloop N\n");
		return 2;
	}
	long n = atol(argv[2]);
	pthread_t th[64];

	iters = atol(argv[3]);
	locks = atol(argv[4]);
	sleep_us = atol(argv[5]);
	if (n < 1 || n > 64 || iters < 1 || locks < 0 || sleep_us < 0) {
		fprintf(stderr, "ptload: bad arguments\n");
		return 2;
	}
	pthread_barrier_init(&bar, NULL, (unsigned int)n);
	for (long i = 0; i < n; i++)
		pthread_create(&th[i], NULL, worker, (void *)i);
	pthread_mutex_lock(&mu);
	while (done < n)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	for (long i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("expect: threads=%ld barrier_per_thread=%ld locks_per_thread=%ld joins=%ld "
	       "slow_iters=%ld "
	       "sleep_us=%ld counter=%ld\n",
	       n, iters, iters * locks + 1, n, (iters + 9) / 10, sleep_us, counter);
	return 0;
}
