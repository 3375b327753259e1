/* SPDX-License-Identifier: MIT */
/*
 * inject: `vnoise-guest inject`, a noise source with known ground truth (seed 003's duty-cycle injector and
 * periodic spikes). The calling thread is pinned to one CPU (optionally SCHED_FIFO) and runs bursts of work
 * -- summing a 250,000-element long long array in small chunks -- each burst lasting a given amount of the
 * thread's own CPU time (CLOCK_THREAD_CPUTIME_ID), so the injected CPU time is exact even when the thread is
 * preempted. Bursts start on absolute CLOCK_MONOTONIC period boundaries (clock_nanosleep TIMER_ABSTIME), so
 * there is no drift. The ground truth printed at exit is the sum of the measured per-burst CPU times.
 * Everything it changes (affinity, policy, name of its own thread, SIGINT/SIGTERM handlers) is restored
 * through one context before it returns.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "inject/inject.h"
#include "inject/injectopt.h"
#include "util/log.h"

#define INJECT_ARRAY_LEN 250000 /* seed 003: sum an array of 250,000 long longs */
#define INJECT_CHUNK 2000 /* elements summed between two CPU-time checks (~1 us) */
#define INJECT_MASK_CPUS (INJECT_CPU_MAX + 1)

_Static_assert(INJECT_ARRAY_LEN % INJECT_CHUNK == 0, "chunks tile the array");

#include "cli/exitcode.h"

static volatile sig_atomic_t inject_stop;
static volatile long long inject_sink; /* keeps the sums alive */

/* Everything inject_main changes, so it can be restored on every exit path. */
struct inject_ctx {
	long long *array;
	size_t pos; /* next chunk of array to sum */
	cpu_set_t *old_mask;
	size_t mask_size;
	int mask_saved;
	int old_policy;
	struct sched_param old_param;
	int sched_saved;
	char old_comm[INJECT_COMM_MAX + 1];
	int comm_saved;
	struct sigaction old_int, old_term;
	int sig_saved;
};

struct inject_result {
	uint64_t busy_ns; /* sum of measured per-burst thread CPU time */
	uint64_t
	    cpu_ns; /* all the thread's CPU time over the run, kernel work of waking and sleeping included */
	uint64_t wall_ns; /* first burst start to end */
	uint64_t count; /* bursts run (a burst cut short by the end still counts) */
	uint64_t missed; /* period starts skipped because the thread ran more than a period late */
};

static void inject_on_signal(int sig)
{
	(void)sig;
	inject_stop = 1;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Read /sys/devices/system/cpu/cpuN/online: 1 online, 0 offline, -ENOENT no such CPU, 1 if no file (cpu0). */
static int cpu_sysfs_state(unsigned int cpu)
{
	char path[96], c = '1';
	int fd;

	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u", cpu);
	if (access(path, F_OK))
		return -ENOENT;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%u/online", cpu);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	if (read(fd, &c, 1) != 1)
		c = '1';
	close(fd);
	return c == '0' ? 0 : 1;
}

/* Pin the calling thread to cpu, saving the old mask. 0, -ENOENT/-ENODEV (reported) or -errno. */
static int inject_pin(struct inject_ctx *ctx, unsigned int cpu)
{
	cpu_set_t *set = NULL;
	int state, err = 0;

	state = cpu_sysfs_state(cpu);
	if (state == -ENOENT) {
		log_err("CPU %u is not present on this machine", cpu);
		err = -ENOENT;
		goto out;
	}
	if (state == 0) {
		log_err("CPU %u is offline", cpu);
		err = -ENODEV;
		goto out;
	}
	ctx->mask_size = CPU_ALLOC_SIZE(INJECT_MASK_CPUS);
	ctx->old_mask = CPU_ALLOC(INJECT_MASK_CPUS);
	set = CPU_ALLOC(INJECT_MASK_CPUS);
	if (!ctx->old_mask || !set) {
		err = -ENOMEM;
		log_err("out of memory");
		goto out;
	}
	if (sched_getaffinity(0, ctx->mask_size, ctx->old_mask)) {
		err = -errno;
		log_err("sched_getaffinity: %s", strerror(errno));
		goto out;
	}
	ctx->mask_saved = 1;
	CPU_ZERO_S(ctx->mask_size, set);
	CPU_SET_S(cpu, ctx->mask_size, set);
	if (sched_setaffinity(0, ctx->mask_size, set)) {
		err = -errno;
		if (errno == EINVAL)
			log_err("CPU %u is offline or not allowed for this process", cpu);
		else
			log_err("cannot pin to CPU %u: %s", cpu, strerror(errno));
		goto out;
	}
out:
	CPU_FREE(set);
	return err;
}

static int inject_set_fifo(struct inject_ctx *ctx, int prio)
{
	struct sched_param sp = { .sched_priority = prio };
	int r;

	r = pthread_getschedparam(pthread_self(), &ctx->old_policy, &ctx->old_param);
	if (r) {
		log_err("pthread_getschedparam: %s", strerror(r));
		return -r;
	}
	ctx->sched_saved = 1;
	r = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	if (r) {
		log_err("cannot set SCHED_FIFO priority %d: %s", prio, strerror(r));
		return -r;
	}
	return 0;
}

static int inject_set_comm(struct inject_ctx *ctx, const char *comm)
{
	char old[17] = "";

	if (prctl(PR_GET_NAME, old, 0, 0, 0) == 0) {
		memcpy(ctx->old_comm, old, sizeof(ctx->old_comm) - 1);
		ctx->comm_saved = 1;
	}
	if (prctl(PR_SET_NAME, comm, 0, 0, 0)) {
		log_err("cannot set thread name '%s': %s", comm, strerror(errno));
		return -errno;
	}
	return 0;
}

static int inject_signals(struct inject_ctx *ctx)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = inject_on_signal; /* no SA_RESTART: clock_nanosleep returns EINTR */
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, &ctx->old_int))
		return -errno;
	if (sigaction(SIGTERM, &sa, &ctx->old_term)) {
		int err = -errno;

		sigaction(SIGINT, &ctx->old_int, NULL);
		return err;
	}
	ctx->sig_saved = 1;
	return 0;
}

static void inject_restore(struct inject_ctx *ctx)
{
	if (ctx->sig_saved) {
		sigaction(SIGINT, &ctx->old_int, NULL);
		sigaction(SIGTERM, &ctx->old_term, NULL);
	}
	if (ctx->sched_saved)
		pthread_setschedparam(pthread_self(), ctx->old_policy, &ctx->old_param);
	if (ctx->mask_saved)
		sched_setaffinity(0, ctx->mask_size, ctx->old_mask);
	if (ctx->comm_saved)
		prctl(PR_SET_NAME, ctx->old_comm, 0, 0, 0);
	CPU_FREE(ctx->old_mask);
	free(ctx->array);
}

/*
 * One burst: sum array chunks until the thread has used busy_ns of CPU time, a signal asked to stop, or
 * CLOCK_MONOTONIC reached end_ns (0 = no end). Returns the thread CPU time the burst measured.
 */
static uint64_t inject_burst(struct inject_ctx *ctx, uint64_t busy_ns, uint64_t end_ns)
{
	uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), c;
	long long sum = 0;

	for (;;) {
		const long long *a = ctx->array + ctx->pos;
		size_t j;

		for (j = 0; j < INJECT_CHUNK; j++)
			sum += a[j];
		ctx->pos = (ctx->pos + INJECT_CHUNK) % INJECT_ARRAY_LEN;
		c = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		if (c - c0 >= busy_ns || inject_stop)
			break;
		if (end_ns && clock_ns(CLOCK_MONOTONIC) >= end_ns)
			break;
	}
	inject_sink += sum;
	return c - c0;
}

/* Sleep until abs_ns of CLOCK_MONOTONIC or a stop signal. */
static void inject_sleep_until(uint64_t abs_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(abs_ns / 1000000000ull),
			       .tv_nsec = (long)(abs_ns % 1000000000ull) };

	while (!inject_stop && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void inject_run(struct inject_ctx *ctx, const struct inject_params *p,
		       struct inject_result *res)
{
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), next = t0, now, wake;
	uint64_t end = p->duration_ns ? t0 + p->duration_ns : 0;
	uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	while (!inject_stop) {
		uint64_t busy;

		if (end && clock_ns(CLOCK_MONOTONIC) >= end)
			break;
		busy = inject_burst(ctx, p->busy_ns, end);
		res->busy_ns += busy;
		if (busy)
			res->count++;
		next += p->period_ns;
		now = clock_ns(CLOCK_MONOTONIC);
		if (now >= next + p->period_ns) {
			/* More than a whole period late: skip the missed starts instead of bunching bursts. */
			uint64_t k = (now - next) / p->period_ns;

			next += k * p->period_ns;
			res->missed += k;
		}
		wake = end && end < next ? end : next;
		inject_sleep_until(wake);
	}
	res->wall_ns = clock_ns(CLOCK_MONOTONIC) - t0;
	res->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
}

int inject_main(int argc, char **argv)
{
	struct inject_ctx ctx = { 0 };
	struct inject_params p;
	struct inject_result res = { 0 };
	char msg[256], mode[64], policy[32];
	size_t i;
	int r, ret = EXIT_FAIL;

	if (injectopt_parse(argc, argv, &p, msg, sizeof(msg))) {
		log_err("%s (see 'vnoise-guest inject --help')", msg);
		return EXIT_USAGE;
	}
	if (p.help) {
		fputs(injectopt_usage(), stdout);
		return EXIT_OK;
	}
	if (p.quiet)
		log_set_verbosity(-1);
	inject_stop = 0;

	ctx.array = malloc(INJECT_ARRAY_LEN * sizeof(*ctx.array));
	if (!ctx.array) {
		log_err("out of memory");
		goto out;
	}
	for (i = 0; i < INJECT_ARRAY_LEN; i++)
		ctx.array[i] = (long long)i;

	r = inject_pin(&ctx, p.cpu);
	if (r) {
		/* A CPU that does not exist, is offline or outside our cpuset: as in measure. */
		ret = r == -ENOENT || r == -ENODEV || r == -EINVAL ? EXIT_CANNOT : EXIT_FAIL;
		goto out;
	}
	if (p.fifo_prio && inject_set_fifo(&ctx, p.fifo_prio))
		goto out;
	if (inject_set_comm(&ctx, p.comm))
		goto out;
	if (inject_signals(&ctx)) {
		log_err("sigaction: %s", strerror(errno));
		goto out;
	}

	injectopt_describe(&p, mode, sizeof(mode));
	if (p.fifo_prio)
		snprintf(policy, sizeof(policy), "fifo:%d", p.fifo_prio);
	else
		snprintf(policy, sizeof(policy), "other");
	if (!p.quiet) {
		printf("inject: pid %d tid %d cpu %u mode %s policy %s\n", (int)getpid(),
		       (int)gettid(), p.cpu, mode, policy);
		fflush(stdout);
	}

	inject_run(&ctx, &p, &res);

	printf("inject: busy_ns=%llu wall_ns=%llu count=%llu cpu_ns=%llu\n",
	       (unsigned long long)res.busy_ns, (unsigned long long)res.wall_ns,
	       (unsigned long long)res.count, (unsigned long long)res.cpu_ns);
	fflush(stdout);
	if (res.missed)
		log_warn("%llu period start(s) skipped: the thread ran more than a period late",
			 (unsigned long long)res.missed);
	ret = EXIT_OK;
out:
	inject_restore(&ctx);
	return ret;
}
