/* SPDX-License-Identifier: MIT */
/*
 * cpuclaim: one vnoise sampler per CPU. Two samplers on one CPU take turns on it, so each reports the other
 * as thread noise. A sampler claims its CPU with a lock file in /run (util/lockfile: root's, private),
 * vnoise-sampler-cpuN.lock, flock'ed for as long as the process lives; the file says who holds it ("PID TID
 * WHAT", e.g. "138 141 agent"), so the next one can name it. The kernel drops the lock when the process
 * ends, however it ends: nothing to clean up, and a stale file names no one.
 */
#ifndef VNOISE_GUEST_MEASURE_CPUCLAIM_H
#define VNOISE_GUEST_MEASURE_CPUCLAIM_H

#include "measure/params.h"

#define CPUCLAIM_DIR "/run"
#define CPUCLAIM_WHAT_LEN 16

/* Who holds a CPU. */
struct cpuclaim_holder {
	int cpu;
	int pid, tid; /* tid: its sampler thread (0 until it wrote it) */
	char what[CPUCLAIM_WHAT_LEN]; /* measure, top, hist, record, agent */
};

struct cpuclaim {
	const char *dir; /* CPUCLAIM_DIR, or a test's */
	int n;
	int cpu[PARAMS_MAX_CPUS];
	int fd[PARAMS_MAX_CPUS]; /* the claims taken: cpu[i] locked through fd[i] */
};

/* An empty set of claims in dir (NULL: CPUCLAIM_DIR). */
void cpuclaim_init(struct cpuclaim *c, const char *dir);

/*
 * Claim cpu for this process's sampler, what it is being what. 0 when claimed; -EBUSY when another process
 * holds it (*h says who); another -errno when it could not be checked (no such directory, not root): the
 * caller says so and may go on.
 */
int cpuclaim_take(struct cpuclaim *c, int cpu, const char *what, struct cpuclaim_holder *h);

/* The claim of cpu names its sampler thread tid (once the thread is known). */
void cpuclaim_set_tid(struct cpuclaim *c, int cpu, int tid);

/* Release every claim (close: the locks go). */
void cpuclaim_release(struct cpuclaim *c);

#endif
