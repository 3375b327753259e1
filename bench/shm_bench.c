/* SPDX-License-Identifier: MIT */
/*
 * shm_bench: cost of the shared-memory channel (shared/channel/shmwriter and shmreader, protocol/shm.h) on
 * this machine.
 *   1. producer alone: ns per shmwriter_put (samples and events alternating) into a ring nobody reads
 *      (the producer never waits, so this is its whole cost; target <= 50 ns/record);
 *   2. consumer alone, one core: a full ring is filled, then drained with shmreader_poll (copy, sequence checks,
 *      validation, callback); records/s over many rounds (target >= 10 M/s);
 *   3. both at once on separate threads pinned to separate CPUs: the producer writes as fast as it can
 *      (or at a fixed rate with -r), the consumer polls; producer ns/record, consumer records/s while the
 *      producer runs, and how many records the consumer lost to overruns.
 * The region is ordinary anonymous memory (the ivshmem region is guest RAM on the guest side and a
 * /dev/shm mapping on the host side: the same cache behaviour without a VM exit). Prints figures, never
 * pass/fail.
 *
 *   make build/bench/shm_bench && build/bench/shm_bench [-n records] [-s slots] [-r records_per_s]
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include "channel/shmreader.h"
#include "channel/shmwriter.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static struct vn_sample sample_of(uint64_t t)
{
	struct vn_sample s;

	memset(&s, 0, sizeof(s));
	s.start_ns = 1000000 + t * 1000;
	s.end_ns = s.start_ns + 25;
	s.cpu = 0;
	s.kind = VN_SAMPLE_GAP;
	return s;
}

static struct vn_event event_of(uint64_t t)
{
	struct vn_event e;

	memset(&e, 0, sizeof(e));
	e.start_ns = 1000000 + t * 1000;
	e.end_ns = e.start_ns + 40;
	e.net_ns = 30;
	e.id = 236;
	e.cls = VN_CLASS_IRQ;
	memcpy(e.comm, "bench", 6);
	return e;
}

/* Records are prepared in advance so only shmwriter_put is timed. */
#define PREP 1024
static struct vn_sample samples[PREP];
static struct vn_event events[PREP];

static void prepare(void)
{
	uint64_t i;

	for (i = 0; i < PREP; i++) {
		samples[i] = sample_of(i);
		events[i] = event_of(i);
	}
}

static inline void put_one(struct shm_writer *w, uint64_t t)
{
	if (t & 1)
		(void)!shmwriter_put_event(w, 0, &events[t & (PREP - 1)]);
	else
		(void)!shmwriter_put_sample(w, 0, &samples[t & (PREP - 1)]);
}

struct sink {
	uint64_t n, sum;
};

static void sink_cb(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct sink *s = ctx;

	s->n++;
	s->sum += rec->payload.sample.start_ns; /* touch the copy */
}

struct region {
	void *base;
	size_t size;
	struct shm_writer *w;
	struct shm_reader *rd;
};

static int region_open(struct region *r, uint32_t slots, uint64_t epoch)
{
	size_t need = shmwriter_region_bytes(1, slots);

	r->size = 4096;
	while (r->size / 2 < need) /* the guest area is the lower half */
		r->size <<= 1;
	r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (r->base == MAP_FAILED)
		return -errno;
	r->w = shmwriter_init(r->base, r->size, 1, slots, epoch);
	if (!r->w)
		return -errno;
	r->rd = shmreader_attach(r->base, r->size);
	if (!r->rd)
		return -errno;
	return 0;
}

static void region_close(struct region *r)
{
	shmreader_detach(r->rd);
	shmwriter_free(r->w);
	munmap(r->base, r->size);
}

/* 1. producer alone */
static double bench_producer(uint32_t slots, uint64_t n)
{
	struct region r;
	uint64_t t, t0, t1;

	if (region_open(&r, slots, 1) < 0)
		return -1;
	for (t = 0; t < slots; t++) /* fault the pages in */
		put_one(r.w, t);
	t0 = now_ns();
	for (t = 0; t < n; t++)
		put_one(r.w, t);
	t1 = now_ns();
	region_close(&r);
	return (double)(t1 - t0) / (double)n;
}

/* 2. consumer alone: fill the ring, drain it, many times; only the drain is timed. */
static double bench_consumer(uint32_t slots, uint64_t n, uint32_t batch, struct shmreader_stats *st)
{
	struct region r;
	struct sink s = { 0 };
	uint64_t t = 0, busy = 0, t0;
	int k;

	if (region_open(&r, slots, 2) < 0)
		return -1;
	while (s.n < n) {
		uint64_t i;

		for (i = 0; i < slots; i++)
			put_one(r.w, t++);
		t0 = now_ns();
		while ((k = shmreader_poll(r.rd, 0, sink_cb, &s, batch)) > 0)
			;
		busy += now_ns() - t0;
	}
	shmreader_stats(r.rd, st);
	region_close(&r);
	return (double)s.n / ((double)busy / 1e9);
}

/* 3. producer and consumer on two threads */
struct prod {
	struct shm_writer *w;
	uint64_t n, rate; /* rate: records/s, 0 = as fast as possible */
	int cpu;
	uint64_t t0, t1,
	    busy; /* busy: ns spent inside shmwriter_put (batches of 64, pacing excluded) */
	int done;
};

static void *prod_main(void *arg)
{
	struct prod *p = arg;
	uint64_t t, k, b0;

	(void)pin(p->cpu);
	p->t0 = now_ns();
	for (t = 0; t < p->n; t += 64) {
		if (p->rate)
			while ((now_ns() - p->t0) * p->rate < t * 1000000000ull)
				;
		b0 = now_ns();
		for (k = t; k < t + 64 && k < p->n; k++)
			put_one(p->w, k);
		p->busy += now_ns() - b0;
	}
	p->t1 = now_ns();
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * period_us 0: the consumer spins on the ring (worst case for cache-line sharing); else it drains the ring
 * every period_us, as vnoise-host does on its timer.
 */
static int bench_pair(uint32_t slots, uint64_t n, uint64_t rate, uint32_t period_us, int pcpu,
		      int ccpu)
{
	struct region r;
	struct prod p = { 0 };
	struct sink s = { 0 };
	struct shmreader_stats st;
	struct timespec nap = { 0, (long)period_us * 1000 };
	uint64_t busy = 0, b0;
	pthread_t th;
	int k;

	if (region_open(&r, slots, 3) < 0)
		return -1;
	p.w = r.w;
	p.n = n;
	p.rate = rate;
	p.cpu = pcpu;
	(void)pin(ccpu);
	if (pthread_create(&th, NULL, prod_main, &p)) {
		region_close(&r);
		return -1;
	}
	while (!__atomic_load_n(&p.done, __ATOMIC_ACQUIRE)) {
		b0 = now_ns();
		k = shmreader_poll(r.rd, 0, sink_cb, &s, 256);
		if (k > 0)
			busy += now_ns() - b0;
		if (period_us && k < 256)
			nanosleep(&nap, NULL);
	}
	pthread_join(th, NULL);
	while (shmreader_poll(r.rd, 0, sink_cb, &s, 256) > 0)
		;
	shmreader_stats(r.rd, &st);
	printf("  %s, consumer %s:\n", rate ? "paced" : "producer flat out",
	       period_us ? "draining on a timer" : "spinning");
	if (rate)
		printf("    rate %.2f M records/s, consumer every %u us\n", (double)rate / 1e6,
		       period_us);
	printf("    producer: %.1f ns/record inside shmwriter_put (%.1f M records/s overall)\n",
	       (double)p.busy / (double)n, (double)n / ((double)(p.t1 - p.t0) / 1e3));
	printf("    consumer: %llu records, %.1f M records/s while busy, %llu lost (%.2f%%), "
	       "%llu torn/stale/invalid\n",
	       (unsigned long long)st.records,
	       busy ? (double)st.records / ((double)busy / 1e3) : 0.0, (unsigned long long)st.lost,
	       100.0 * (double)st.lost / (double)n,
	       (unsigned long long)(st.torn + st.stale + st.invalid));
	region_close(&r);
	return 0;
}

static uint64_t arg_u64(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "shm_bench: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	uint64_t n = 20000000, rate = 0;
	uint32_t slots = 4096;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct shmreader_stats st;
	double ns, rps;
	int c, i;

	while ((c = getopt(argc, argv, "n:s:r:")) != -1) {
		switch (c) {
		case 'n':
			n = arg_u64(optarg);
			break;
		case 's':
			slots = (uint32_t)arg_u64(optarg);
			break;
		case 'r':
			rate = arg_u64(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: shm_bench [-n records] [-s slots] [-r records_per_s]\n");
			return 2;
		}
	}
	if (!shmwriter_region_bytes(1, slots) || n == 0) {
		fprintf(stderr, "shm_bench: slots must be a power of two <= %u, n > 0\n",
			VN_SHM_MAX_SLOTS);
		return 2;
	}
	prepare();
	printf("shm_bench: %llu records, %u slots per ring (%zu-byte slots), %ld CPUs\n",
	       (unsigned long long)n, slots, sizeof(struct vn_shm_slot), ncpu);
	printf("reproduce: make build/bench/shm_bench && build/bench/shm_bench -n %llu -s %u%s\n",
	       (unsigned long long)n, slots, rate ? " -r <rate>" : "");

	(void)pin(0);
	printf("1. producer alone (shmwriter_put, no reader), best of 3:\n");
	ns = 1e9;
	for (i = 0; i < 3; i++) {
		double v = bench_producer(slots, n);

		if (v >= 0 && v < ns)
			ns = v;
	}
	printf("  %.2f ns/record (%.1f M records/s)   [target <= 50 ns]\n", ns, 1e3 / ns);

	printf("2. consumer alone on one core (drain a full ring, batches of 256), best of 3:\n");
	rps = 0;
	for (i = 0; i < 3; i++) {
		double v = bench_consumer(slots, n, 256, &st);

		if (v > rps)
			rps = v;
	}
	printf(
	    "  %.1f M records/s (%.2f ns/record), lost %llu, invalid %llu   [target >= 10 M/s]\n",
	    rps / 1e6, 1e9 / rps, (unsigned long long)st.lost, (unsigned long long)st.invalid);

	printf("3. producer and consumer on separate threads (producer CPU 1, consumer CPU 0):\n");
	if (ncpu >= 2) {
		(void)bench_pair(slots, n, rate, 0, 1, 0);
		(void)bench_pair(slots, n / 4, rate ? rate : 5000000, 0, 1, 0);
		(void)bench_pair(slots, n / 20, rate ? rate : 1000000, 1000, 1, 0);
	} else {
		printf("  skipped: one CPU\n");
	}
	return 0;
}
