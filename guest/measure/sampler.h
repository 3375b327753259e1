/* SPDX-License-Identifier: MIT */
/*
 * sampler: one pinned thread per measured CPU reading CLOCK_MONOTONIC in a tight loop (oslat/osnoise style).
 * A gap between two reads above the threshold is a noise sample; every <= 100 ms of sampling it also
 * publishes a runtime window. Records go to a single-producer single-consumer ring read by the main thread;
 * a full ring counts drops. The hot loop does no allocation, no locking, no syscalls, but on a gap over
 * stop_single_ns: it counts the hit, wakes the main thread through hit_fd (an eventfd) and stops, or with
 * keep_going samples on (the write's own time is not a gap: the next read starts after it).
 */
#ifndef VNOISE_GUEST_MEASURE_SAMPLER_H
#define VNOISE_GUEST_MEASURE_SAMPLER_H

#include <pthread.h>
#include <stdint.h>
#include "noise.h"

#define SAMPLER_RING 65536 /* records, power of two */

struct sampler {
	int cpu;
	int policy, prio;
	uint64_t threshold_ns, period_ns, runtime_ns, stop_single_ns;
	const int *stop; /* shared stop flag (read with relaxed atomics at window edges) */
	int keep_going; /* a stop_single_ns hit does not stop the thread (--on-threshold continue) */
	int hit_fd; /* eventfd written on every hit; -1: none */
	/* filled by the thread */
	pthread_t thread;
	int started;
	int tid;
	int err; /* -errno when setting affinity or policy failed */
	const char *err_what;
	int ready, go;
	uint64_t iterations, loop_ns; /* loop passes and time spent looping outside gaps */
	int stop_hit; /* a gap exceeded stop_single_ns (without keep_going: the thread stopped) */
	uint64_t
	    hits; /* gaps over stop_single_ns (release: hit_end_ns and hit_ns are set before) */
	uint64_t hit_end_ns, hit_ns; /* the last hit: its end and length */
	uint64_t dropped;
	/* ring */
	struct vn_sample *ring;
	uint64_t head, tail;
};

/* Start the thread; it pins itself, sets its policy, reports ready and waits for sampler_go(). */
int sampler_start(struct sampler *s) __attribute__((warn_unused_result));
/* Wait until the thread is ready (tid known) or failed; returns s->err. */
int sampler_wait_ready(struct sampler *s);
void sampler_go(struct sampler *s);
/* Pop up to max records; returns how many. Consumer side only. */
size_t sampler_drain(struct sampler *s, struct vn_sample *out, size_t max);
/* Stop waiting for go and join the thread; the ring stays readable. */
void sampler_join(struct sampler *s);
/* Join if needed and free the ring. */
void sampler_free(struct sampler *s);

#endif
