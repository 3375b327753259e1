/* SPDX-License-Identifier: MIT */
/*
 * libvnoise-preload.so: LD_PRELOAD interposition of a program's synchronisation calls (issue 5, first part:
 * the pthread calls). Each wrapped call is timed around the real function (found with dlsym(RTLD_NEXT)) and
 * counted in a per-thread table (shared/appstat: count, total, min, max, caller PC and argument of the last
 * call). Hot path: two clock reads, a TLS table, no lock, no allocation, no syscall beyond the clock.
 *
 * Output: when a thread ends (its TLS destructor) and at exit, one JSON line per thread (schema vnoise.app/1,
 * protocol/README.md) is appended to $VNOISE_PRELOAD_OUT (a "%p" in it becomes the pid), or written to stderr
 * when that is unset; nothing when no wrapped call was made. Output is written with one write() per line so
 * that threads and processes appending to the same file do not interleave.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "appstat.h"
#include "monotime.h"

struct tstat {
	struct appstat st;
	int used;
};

static __thread struct tstat t_stat;
static pthread_key_t g_key;
static int g_key_ok;

static int (*real_barrier_wait)(pthread_barrier_t *);
static int (*real_mutex_lock)(pthread_mutex_t *);
static int (*real_mutex_unlock)(pthread_mutex_t *);
static int (*real_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
static int (*real_join)(pthread_t, void **);

static void emit(const struct appstat *s)
{
	char buf[4096], path[512], comm[17] = "";
	const char *out = getenv("VNOISE_PRELOAD_OUT");
	int n, fd = 2, close_fd = 0;

	prctl(PR_GET_NAME, comm, 0, 0, 0);
	n = appstat_json(s, (int)getpid(), (int)gettid(), -1, comm, buf, sizeof(buf));
	if (n <= 0)
		return;
	if (out && *out) {
		const char *p = strstr(out, "%p");

		if (p)
			snprintf(path, sizeof(path), "%.*s%d%s", (int)(p - out), out, (int)getpid(),
				 p + 2);
		else
			snprintf(path, sizeof(path), "%s", out);
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0)
			return;
		close_fd = 1;
	}
	if (write(fd, buf, (size_t)n) != n) {
		/* nothing to do: the program's own stderr or file is all we have */
	}
	if (close_fd)
		close(fd);
}

/* TLS destructor: the thread's line. */
static void thread_end(void *arg)
{
	struct tstat *t = arg;

	if (t && t->used) {
		emit(&t->st);
		t->used = 0;
	}
}

static void *must(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f) {
		static const char msg[] = "libvnoise-preload: a pthread function is missing\n";

		if (write(2, msg, sizeof(msg) - 1) < 0) {
		}
		abort();
	}
	return f;
}

__attribute__((constructor)) static void init(void)
{
	real_barrier_wait = must("pthread_barrier_wait");
	real_mutex_lock = must("pthread_mutex_lock");
	real_mutex_unlock = must("pthread_mutex_unlock");
	real_cond_wait = must("pthread_cond_wait");
	real_join = must("pthread_join");
	g_key_ok = pthread_key_create(&g_key, thread_end) == 0;
}

__attribute__((destructor)) static void fini(void)
{
	thread_end(&t_stat); /* the thread that runs exit() */
}

static inline void count(uint32_t ev, uint64_t t0, uint64_t pc, uint64_t arg)
{
	struct tstat *t = &t_stat;

	if (!t->used) {
		t->used = 1;
		if (g_key_ok)
			pthread_setspecific(g_key, t);
	}
	appstat_add(&t->st, ev, now_ns() - t0, pc, arg);
}

#define PC() ((uint64_t)(uintptr_t)__builtin_return_address(0))

int pthread_barrier_wait(pthread_barrier_t *b)
{
	uint64_t t0 = now_ns();
	int rc;

	if (!real_barrier_wait)
		init();
	rc = real_barrier_wait(b);
	count(VN_APP_PTHREAD_BARRIER_WAIT, t0, PC(), (uint64_t)(uintptr_t)b);
	return rc;
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	uint64_t t0;
	int rc;

	if (!real_mutex_lock) /* called while the dynamic linker resolves us: no-op is not safe, resolve */
		real_mutex_lock = must("pthread_mutex_lock");
	t0 = now_ns();
	rc = real_mutex_lock(m);
	count(VN_APP_PTHREAD_MUTEX_LOCK, t0, PC(), (uint64_t)(uintptr_t)m);
	return rc;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	uint64_t t0;
	int rc;

	if (!real_mutex_unlock)
		real_mutex_unlock = must("pthread_mutex_unlock");
	t0 = now_ns();
	rc = real_mutex_unlock(m);
	count(VN_APP_PTHREAD_MUTEX_UNLOCK, t0, PC(), (uint64_t)(uintptr_t)m);
	return rc;
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	uint64_t t0 = now_ns();
	int rc;

	if (!real_cond_wait)
		init();
	rc = real_cond_wait(c, m);
	count(VN_APP_PTHREAD_COND_WAIT, t0, PC(), (uint64_t)(uintptr_t)c);
	return rc;
}

int pthread_join(pthread_t th, void **ret)
{
	uint64_t t0 = now_ns();
	int rc;

	if (!real_join)
		init();
	rc = real_join(th, ret);
	count(VN_APP_PTHREAD_JOIN, t0, PC(), (uint64_t)th);
	return rc;
}
