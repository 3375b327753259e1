/* SPDX-License-Identifier: MIT */
/* sampler: the measuring threads (see sampler.h). */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "measure/sampler.h"
#include "util/monotime.h"

#define WINDOW_MAX_NS 100000000ULL

static inline void ring_push(struct sampler *s, uint64_t a, uint64_t b, uint8_t kind)
{
	uint64_t h = s->head, t = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
	struct vn_sample *r;

	if (h - t >= SAMPLER_RING) {
		__atomic_store_n(&s->dropped, s->dropped + 1, __ATOMIC_RELAXED);
		return;
	}
	r = &s->ring[h & (SAMPLER_RING - 1)];
	r->start_ns = a;
	r->end_ns = b;
	r->cpu = (uint16_t)s->cpu;
	r->kind = kind;
	__atomic_store_n(&s->head, h + 1, __ATOMIC_RELEASE);
}

/* A gap over stop_single_ns: counted, and the main thread woken (off the hot path: hits are rare). */
static void hit(struct sampler *s, uint64_t end, uint64_t d)
{
	uint64_t one = 1;

	__atomic_store_n(&s->hit_end_ns, end, __ATOMIC_RELAXED);
	__atomic_store_n(&s->hit_ns, d, __ATOMIC_RELAXED);
	__atomic_store_n(&s->hits, s->hits + 1, __ATOMIC_RELEASE);
	if (s->hit_fd >= 0 && write(s->hit_fd, &one, sizeof(one)) < 0) {
		/* the counter full (2^64 - 2 hits unread): the main thread has its wakeup already */
	}
}

static void *sampler_main(void *arg)
{
	struct sampler *s = arg;
	struct sched_param sp = { .sched_priority = s->prio };
	uint64_t thr = s->threshold_ns, next_period, iters = 0, looped = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(s->cpu, &set);
	s->tid = (int)syscall(SYS_gettid);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		s->err = -errno;
		s->err_what = "pin the sampler to its CPU";
	} else if (s->policy != SCHED_OTHER && sched_setscheduler(0, s->policy, &sp)) {
		s->err = -errno;
		s->err_what = "set the sampler's scheduling policy";
	}
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	if (s->err)
		return NULL;
	while (!__atomic_load_n(&s->go, __ATOMIC_ACQUIRE))
		usleep(1000);
	next_period = now_ns();
	while (!__atomic_load_n(s->stop, __ATOMIC_RELAXED)) {
		uint64_t wstart = now_ns(), end = wstart + s->runtime_ns, cstart = wstart;
		uint64_t cend = end < wstart + WINDOW_MAX_NS ? end : wstart + WINDOW_MAX_NS;
		uint64_t last = wstart, t, d, gaps = 0, n = 0;

		for (;;) { /* hot loop: read, compare, store */
			t = now_ns();
			d = t - last;
			if (__builtin_expect(d > thr, 0)) {
				ring_push(s, last, t, VN_SAMPLE_GAP);
				gaps += d;
				if (s->stop_single_ns && d > s->stop_single_ns) {
					hit(s, t, d);
					if (s->keep_going) {
						last = now_ns(); /* the wakeup's cost is no gap */
						n++;
						continue;
					}
					/* stop at once: the stopping gap stays this CPU's last */
					__atomic_store_n(&s->stop_hit, 1, __ATOMIC_RELEASE);
					ring_push(s, cstart, t, VN_SAMPLE_WINDOW);
					last = t;
					n++;
					break;
				}
			}
			last = t;
			n++;
			if (__builtin_expect(t >= cend, 0)) {
				ring_push(s, cstart, t, VN_SAMPLE_WINDOW);
				cstart = t;
				if (t >= end || __atomic_load_n(s->stop, __ATOMIC_RELAXED) ||
				    __atomic_load_n(&s->stop_hit, __ATOMIC_RELAXED))
					break;
				cend = end < t + WINDOW_MAX_NS ? end : t + WINDOW_MAX_NS;
			}
		}
		iters += n;
		looped += (last - wstart) - gaps;
		__atomic_store_n(&s->iterations, iters, __ATOMIC_RELAXED);
		__atomic_store_n(&s->loop_ns, looped, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->stop_hit, __ATOMIC_RELAXED))
			break;
		if (s->runtime_ns < s->period_ns) {
			struct timespec ts;

			next_period += s->period_ns;
			ts.tv_sec = (time_t)(next_period / 1000000000ULL);
			ts.tv_nsec = (long)(next_period % 1000000000ULL);
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
	}
	return NULL;
}

int sampler_start(struct sampler *s)
{
	sigset_t all, old;
	int err;

	s->ring = calloc(SAMPLER_RING, sizeof(*s->ring));
	if (!s->ring)
		return -ENOMEM;
	/* Signals go to the main thread only. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&s->thread, NULL, sampler_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		free(s->ring);
		s->ring = NULL;
		return -err;
	}
	s->started = 1;
	return 0;
}

int sampler_wait_ready(struct sampler *s)
{
	while (!__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE))
		usleep(200);
	return s->err;
}

void sampler_go(struct sampler *s)
{
	__atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
}

size_t sampler_drain(struct sampler *s, struct vn_sample *out, size_t max)
{
	uint64_t t = s->tail, h = __atomic_load_n(&s->head, __ATOMIC_ACQUIRE);
	size_t n = 0;

	while (t != h && n < max) {
		out[n++] = s->ring[t & (SAMPLER_RING - 1)];
		t++;
	}
	__atomic_store_n(&s->tail, t, __ATOMIC_RELEASE);
	return n;
}

void sampler_join(struct sampler *s)
{
	if (s->started) {
		__atomic_store_n(&s->go, 1, __ATOMIC_RELEASE);
		pthread_join(s->thread, NULL);
		s->started = 0;
	}
}

void sampler_free(struct sampler *s)
{
	sampler_join(s);
	free(s->ring);
	s->ring = NULL;
}
