/* SPDX-License-Identifier: MIT */
/*
 * mpiloop: the MPI test kernel of the preload tests and benchmarks. Every iteration each rank does
 * a fixed amount of arithmetic, then MPI_Barrier. The amount is calibrated once (rank 0 measures how many
 * rounds of the inner loop take --work-us, median of five trials, and broadcasts it), so that a rank slowed
 * down by noise takes longer instead of doing less. Known delays can be added: --imbalance gives one rank more
 * work in some iterations, --inject preempts one rank in some iterations by a SCHED_FIFO busy child on its CPU.
 *
 *   mpiloop [--iters N] [--work-us U | --rounds W] [--pin] [--imbalance R:F:FIRST-LAST] [--inject R:US:LIST]
 *   mpiloop --barrier-only [--iters N]
 * --rounds W skips the calibration (rank 0 still broadcasts W): the same work in every run, for benchmarks.
 *
 * Rank 0 prints one line at the end:
 *   mpiloop: ranks=K iters=N work_rounds=W loop_ns=T first_interval=K0
 * T: rank 0's wall time from the pre-loop barrier to the end of the loop. K0: the interval number (as
 * libvnoise-preload.so counts them: MPI_Init starts interval 0, each collective closes one) of iteration 0's
 * compute; iteration i is interval i + K0. With --inject, rank R also prints
 *   mpiloop: injector pid=P rank=R cpu=C iterations=LIST
 * Exit: 0, 2 bad input (one line on stderr), 3 the injector could not get SCHED_FIFO (MPI_Abort).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_ITERS 1000000000ull
#define MAX_WORK_US 10000000ull /* 10 s per iteration */
#define MAX_INJECT_US 1000000ull
#define TRIALS 5

struct params {
	uint64_t iters, work_us;
	uint64_t rounds; /* --rounds, 0: calibrate */
	int pin, barrier_only;
	int imb_rank; /* -1: no imbalance */
	double imb_factor;
	uint64_t imb_first, imb_last;
	int inj_rank; /* -1: no injector */
	uint64_t inj_us;
	uint64_t *inj_iters;
	size_t inj_n;
	const char *inj_list; /* as given, for the report */
};

struct injector {
	pid_t pid;
	int trig, ack; /* write a byte to trig: one burst; the child answers on ack */
	int cpu;
};

static volatile uint64_t sink; /* the work's result: the compiler must compute it */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Strict decimal: no sign, no junk, no overflow, within [min, max]. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* "R:F:FIRST-LAST" */
static int parse_imbalance(char *s, struct params *p)
{
	char *f = strchr(s, ':'), *range, *dash, *end;
	uint64_t r;

	if (!f)
		return -1;
	*f++ = 0;
	range = strchr(f, ':');
	if (!range)
		return -1;
	*range++ = 0;
	dash = strchr(range, '-');
	if (!dash)
		return -1;
	*dash++ = 0;
	if (parse_u64(s, 0, 1 << 20, &r) < 0 || parse_u64(range, 0, MAX_ITERS, &p->imb_first) < 0 ||
	    parse_u64(dash, 0, MAX_ITERS, &p->imb_last) < 0 || p->imb_first > p->imb_last)
		return -1;
	if (*f < '0' || *f > '9')
		return -1;
	errno = 0;
	p->imb_factor = strtod(f, &end);
	if (errno || *end || !isfinite(p->imb_factor) || p->imb_factor <= 0 || p->imb_factor > 1000)
		return -1;
	p->imb_rank = (int)r;
	return 0;
}

/* "R:US:LIST", LIST = iterations "10,20,30" */
static int parse_inject(char *s, struct params *p)
{
	char *us = strchr(s, ':'), *list, *tok, *save = NULL;
	uint64_t r;
	size_t n = 1;

	if (!us)
		return -1;
	*us++ = 0;
	list = strchr(us, ':');
	if (!list)
		return -1;
	*list++ = 0;
	if (parse_u64(s, 0, 1 << 20, &r) < 0 || parse_u64(us, 1, MAX_INJECT_US, &p->inj_us) < 0 ||
	    !*list)
		return -1;
	p->inj_list = strdup(list);
	for (const char *c = list; *c; c++)
		n += *c == ',';
	p->inj_iters = calloc(n, sizeof(*p->inj_iters));
	if (!p->inj_list || !p->inj_iters)
		return -1;
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (parse_u64(tok, 0, MAX_ITERS, &p->inj_iters[p->inj_n++]) < 0)
			return -1;
	if (p->inj_n != n) /* empty items: ",," or a trailing comma */
		return -1;
	p->inj_rank = (int)r;
	return 0;
}

/* Pure parse of the command line; on error a message in why. */
static int parse_args(int argc, char **argv, struct params *p, char *why, size_t wlen)
{
	static const struct option opts[] = {
		{ "iters", required_argument, NULL, 'n' },
		{ "work-us", required_argument, NULL, 'w' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "pin", no_argument, NULL, 'p' },
		{ "imbalance", required_argument, NULL, 'i' },
		{ "inject", required_argument, NULL, 'j' },
		{ "barrier-only", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, idx = 0;

	*p = (struct params){ .iters = 100, .work_us = 2000, .imb_rank = -1, .inj_rank = -1 };
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, &idx)) != -1) {
		switch (c) {
		case 'n':
			if (parse_u64(optarg, 1, MAX_ITERS, &p->iters) < 0)
				goto bad_val;
			break;
		case 'w':
			if (parse_u64(optarg, 1, MAX_WORK_US, &p->work_us) < 0)
				goto bad_val;
			break;
		case 'r':
			if (parse_u64(optarg, 1, UINT64_MAX / 1000, &p->rounds) < 0)
				goto bad_val;
			break;
		case 'p':
			p->pin = 1;
			break;
		case 'i':
			if (p->imb_rank >= 0 || parse_imbalance(optarg, p) < 0) {
				snprintf(
				    why, wlen,
				    "--imbalance wants R:F:FIRST-LAST once (e.g. 1:2.5:10-20)");
				return -1;
			}
			break;
		case 'j':
			if (p->inj_rank >= 0 || parse_inject(optarg, p) < 0) {
				snprintf(why, wlen,
					 "--inject wants R:US:LIST once (e.g. 1:3000:10,20,30)");
				return -1;
			}
			break;
		case 'b':
			p->barrier_only = 1;
			break;
		case 'h':
			return 1;
		default:
			snprintf(why, wlen, "unknown option or missing value: %s",
				 argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		snprintf(why, wlen, "unexpected argument: %s", argv[optind]);
		return -1;
	}
	if (p->barrier_only && (p->imb_rank >= 0 || p->inj_rank >= 0 || p->pin || p->rounds)) {
		snprintf(why, wlen, "--barrier-only takes only --iters");
		return -1;
	}
	if (p->imb_rank >= 0 && p->imb_last >= p->iters) {
		snprintf(why, wlen, "--imbalance: iteration %llu is beyond --iters %llu",
			 (unsigned long long)p->imb_last, (unsigned long long)p->iters);
		return -1;
	}
	for (size_t i = 0; i < p->inj_n; i++)
		if (p->inj_iters[i] >= p->iters) {
			snprintf(why, wlen, "--inject: iteration %llu is beyond --iters %llu",
				 (unsigned long long)p->inj_iters[i], (unsigned long long)p->iters);
			return -1;
		}
	return 0;
bad_val:
	snprintf(why, wlen, "--%s: bad value '%s'", opts[idx].name, optarg);
	return -1;
}

/* The fixed work: a dependent chain of xorshift rounds (no closed form, no vectorisation). */
static __attribute__((noinline)) uint64_t work(uint64_t rounds, uint64_t x)
{
	for (uint64_t i = 0; i < rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		x += i;
	}
	return x;
}

static uint64_t time_work(uint64_t rounds)
{
	uint64_t t0 = now_ns();

	sink = work(rounds, sink | 1);
	return now_ns() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Rounds that take us microseconds on this CPU: median rate of TRIALS trials of a few ms each. */
static uint64_t calibrate(uint64_t us)
{
	uint64_t r = 1024, want = us * 1000 < 2000000 ? 2000000 : us * 1000;
	double rate[TRIALS], rounds;

	while (time_work(r) < want / 2 && r < (1ull << 40)) /* also warms the CPU up */
		r *= 2;
	for (int k = 0; k < TRIALS; k++)
		rate[k] = (double)r / (double)(time_work(r) | 1);
	qsort(rate, TRIALS, sizeof(rate[0]), cmp_double);
	rounds = rate[TRIALS / 2] * (double)us * 1000.0;
	return rounds < 1 ? 1 : (uint64_t)rounds;
}

static int pin_self(int rank)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	if (n < 1)
		n = 1;
	CPU_ZERO(&set);
	CPU_SET(rank % n, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

/* The CPU the injector will share with this rank: the only one allowed, else the current one. */
static int my_cpu(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				return c;
	return sched_getcpu();
}

static void spin_us(uint64_t us)
{
	uint64_t end = now_ns() + us * 1000;

	while (now_ns() < end)
		;
}

/* The child: SCHED_FIFO on the rank's CPU, one busy burst of us per byte on trig, an ack byte after each. */
static __attribute__((noreturn)) void injector_child(pid_t parent, int trig, int ack, uint64_t us)
{
	struct sched_param sp = { .sched_priority = 10 };
	char b = 'r', msg[256];
	int n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* the parent died before the line above */
		_exit(0);
	prctl(PR_SET_NAME, "vn-injector", 0, 0, 0);
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
		n = snprintf(msg, sizeof(msg), "mpiloop: injector needs SCHED_FIFO: %s\n",
			     strerror(errno));
		if (write(2, msg, (size_t)n) < 0) {
		}
		_exit(3);
	}
	if (write(ack, &b, 1) != 1) /* ready */
		_exit(1);
	while (read(trig, &b, 1) == 1) {
		spin_us(us);
		if (write(ack, &b, 1) != 1)
			_exit(1);
	}
	_exit(
	    0); /* never exit(): the child must not run the MPI library's or the preload's exit code */
}

/* Fork the injector; 0, or the exit code the rank must abort with. */
static int injector_start(struct injector *inj, uint64_t us)
{
	pid_t parent = getpid();
	int trig[2], ack[2], st;
	char b;

	inj->cpu = my_cpu();
	if (pipe2(trig, O_CLOEXEC) < 0 || pipe2(ack, O_CLOEXEC) < 0) {
		fprintf(stderr, "mpiloop: pipe: %s\n", strerror(errno));
		return 1;
	}
	fflush(NULL);
	/*
	 * The child renames itself (below). Renaming the rank around the fork instead would give the rank the
	 * injector's name for a moment, and a tracer that sees the rank preempt rank 0 then would blame it.
	 */
	inj->pid = fork();
	if (inj->pid < 0) {
		fprintf(stderr, "mpiloop: fork: %s\n", strerror(errno));
		return 1;
	}
	if (inj->pid == 0) {
		close(trig[1]);
		close(ack[0]);
		injector_child(parent, trig[0], ack[1], us);
	}
	close(trig[0]);
	close(ack[1]);
	inj->trig = trig[1];
	inj->ack = ack[0];
	if (read(inj->ack, &b, 1) == 1)
		return 0;
	/* no ready byte: the child said why on stderr; its exit code is ours */
	if (waitpid(inj->pid, &st, 0) == inj->pid && WIFEXITED(st) && WEXITSTATUS(st))
		return WEXITSTATUS(st);
	return 1;
}

static void injector_stop(struct injector *inj)
{
	close(inj->trig); /* EOF: the child leaves its loop */
	close(inj->ack);
	waitpid(inj->pid, NULL, 0);
}

/* Whether list holds i (lists are short: a linear scan at each iteration costs nothing next to the work). */
static int listed(const uint64_t *list, size_t n, uint64_t i)
{
	for (size_t k = 0; k < n; k++)
		if (list[k] == i)
			return 1;
	return 0;
}

/* Parse errors come before MPI_Init: only the process that will be rank 0 (or a lone one) prints. */
static int first_process(void)
{
	const char *r = getenv("OMPI_COMM_WORLD_RANK");

	if (!r)
		r = getenv("PMI_RANK");
	return !r || !strcmp(r, "0");
}

int main(int argc, char **argv)
{
	struct injector inj = { .pid = -1 };
	struct params p;
	char why[256];
	uint64_t rounds = 0, t0, loop_ns;
	int rank, size, rc, inj_here, first_iv;

	rc = parse_args(argc, argv, &p, why, sizeof(why));
	if (rc > 0) {
		printf("usage: mpiloop [--iters N] [--work-us U | --rounds W] [--pin]\n"
		       "               [--imbalance R:F:FIRST-LAST] [--inject R:US:LIST]\n"
		       "       mpiloop --barrier-only [--iters N]\n");
		return 0;
	}
	if (rc < 0) {
		if (first_process())
			fprintf(stderr, "mpiloop: %s\n", why);
		return 2;
	}
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (p.imb_rank >= size || p.inj_rank >= size) {
		if (rank == 0)
			fprintf(stderr, "mpiloop: --%s rank %d: the job has %d ranks\n",
				p.imb_rank >= size ? "imbalance" : "inject",
				p.imb_rank >= size ? p.imb_rank : p.inj_rank, size);
		MPI_Finalize();
		return 2;
	}
	if (p.pin && pin_self(rank) < 0)
		fprintf(stderr, "mpiloop: rank %d: cannot pin: %s\n", rank, strerror(errno));
	inj_here = p.inj_rank == rank;
	if (inj_here) {
		rc = injector_start(&inj, p.inj_us);
		if (rc)
			MPI_Abort(MPI_COMM_WORLD, rc);
	}
	/* closing collectives before the loop: each one ends an interval */
	first_iv = 1;
	if (!p.barrier_only) {
		if (rank == 0)
			rounds = p.rounds ? p.rounds : calibrate(p.work_us);
		MPI_Bcast(&rounds, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
		first_iv++;
	}
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = now_ns();
	for (uint64_t i = 0; i < p.iters; i++) {
		int kick = inj_here && listed(p.inj_iters, p.inj_n, i);
		char b = 'k';

		if (kick && write(inj.trig, &b, 1) != 1) {
			fprintf(stderr, "mpiloop: injector gone: %s\n", strerror(errno));
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		if (!p.barrier_only) {
			uint64_t r = rounds;

			if (rank == p.imb_rank && i >= p.imb_first && i <= p.imb_last)
				r = (uint64_t)((double)rounds * p.imb_factor + 0.5);
			sink = work(r, sink);
		}
		MPI_Barrier(MPI_COMM_WORLD);
		if (kick &&
		    read(inj.ack, &b, 1) != 1) { /* the burst is over before the next trigger */
			fprintf(stderr, "mpiloop: injector died\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
	}
	loop_ns = now_ns() - t0;
	if (rank == 0)
		printf("mpiloop: ranks=%d iters=%llu work_rounds=%llu loop_ns=%llu "
		       "first_interval=%d\n",
		       size, (unsigned long long)p.iters, (unsigned long long)rounds,
		       (unsigned long long)loop_ns, first_iv);
	if (inj_here) {
		printf("mpiloop: injector pid=%d rank=%d cpu=%d iterations=%s\n", (int)inj.pid,
		       rank, inj.cpu, p.inj_list);
		injector_stop(&inj);
	}
	fflush(stdout);
	MPI_Finalize();
	free(p.inj_iters);
	free((char *)p.inj_list);
	return 0;
}
