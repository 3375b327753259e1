/* SPDX-License-Identifier: MIT */
/*
 * dtl_responder_bench: cost of the guest's clock responder (guest/dtl: dtl_open with responder, the thread
 * around guest/dtl/clockresp) on this machine. A host-side test writer (shared/channel/dtlwriter, the one
 * vnoise-host uses) posts a clock request at every point of the VN_SHM_CLOCK_GRID_NS grid (or every -p ms)
 * into a region file and watches for the answer; the responder runs as in a guest view (read-write mapping
 * of the same file, its own thread, the lock in a private directory). After -d seconds it prints the
 * responder thread's CPU time (CLOCK of the thread), per exchange and as a share of one CPU (target <= 0.5%),
 * and how late the answers were (guest stamp - host send: the same clock here), which bounds the exchange's
 * error. Prints figures, never pass/fail.
 *
 *   make build/bench/dtl_responder_bench && build/bench/dtl_responder_bench [-d seconds] [-p period_ms]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "lib/benchutil.h"
#include "channel/dtlwriter.h"
#include "dtl/dtl.h"

#define REGION (1u << 20)
#define MAX_EX 100000

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Post requests on the grid for duration_ns; answer delays into delay[] (*n), unanswered into *missed. */
static void host_loop(struct dtl_writer *w, uint64_t period_ns, uint64_t duration_ns,
		      uint64_t *delay, size_t *n, uint64_t *missed)
{
	uint64_t end = mono_ns() + duration_ns, t, seq;
	struct dtl_clock_reply rep;
	struct vn_dtl_status st = { .flags = VN_DTL_S_CLOCK, .uncertainty_ns = 1000 };

	*n = 0;
	*missed = 0;
	for (t = (mono_ns() / period_ns + 1) * period_ns; t < end; t += period_ns) {
		uint64_t sent, deadline;
		int got = 0;

		sleep_until(t);
		sent = mono_ns();
		dtlwriter_request(w, sent, &seq);
		st.heartbeat_ns = sent;
		dtlwriter_status(w, &st);
		deadline = sent + period_ns / 2;
		while (!got && mono_ns() < deadline) {
			struct timespec ts = { 0, 20000 };

			if (dtlwriter_reply(w, &rep) == 1 && rep.req_seq == seq)
				got = 1;
			else
				nanosleep(&ts, NULL);
		}
		if (!got)
			(*missed)++;
		else if (*n < MAX_EX)
			delay[(*n)++] = rep.guest_ns > sent ? rep.guest_ns - sent : 0;
	}
}

int main(int argc, char **argv)
{
	struct dtlwriter_params wp = { .nvcpus = 1,
				       .max_entries = 256,
				       .detail = VN_DTL_DETAIL_CLASS };
	uint64_t dur_s = 60, period_ms = VN_SHM_CLOCK_GRID_NS / 1000000, missed, cpu0, *delay;
	char dir[] = "/tmp/dtl_responder_bench.XXXXXX", path[96], lock[96], why[128] = "";
	struct dtl_params p = { .responder = true, .responder_cpu = -1 };
	struct dtl_writer *w;
	struct dtl_stats st;
	struct dtl *d = NULL;
	size_t n;
	void *map;
	int fd, o;

	while ((o = getopt(argc, argv, "d:p:h")) != -1) {
		if ((o == 'd' && !parse_count(optarg, &dur_s)) ||
		    (o == 'p' && !parse_count(optarg, &period_ms)))
			continue;
		fprintf(stderr, "usage: %s [-d seconds] [-p period_ms]\n", argv[0]);
		return o == 'h' ? 0 : 2;
	}
	delay = calloc(MAX_EX, sizeof(*delay));
	if (!delay || !mkdtemp(dir))
		return 1;
	snprintf(path, sizeof(path), "%s/region", dir);
	snprintf(lock, sizeof(lock), "%s/clock.lock", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, REGION))
		return 1;
	map = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return 1;
	w = dtlwriter_init((char *)map + REGION / 2, REGION / 2, &wp, (uint64_t)time(NULL), why,
			   sizeof(why));
	if (!w) {
		fprintf(stderr, "dtlwriter_init: %s\n", why);
		return 1;
	}
	p.region_path = path;
	p.lock_path = lock;
	if (dtl_open(&d, &p, why, sizeof(why))) {
		fprintf(stderr, "dtl_open: %s\n", why);
		return 1;
	}
	dtl_stats(d, &st);
	cpu0 = st.responder_cpu_ns;
	host_loop(w, period_ms * 1000000ull, dur_s * 1000000000ull, delay, &n, &missed);
	dtl_stats(d, &st);
	qsort(delay, n, sizeof(*delay), cmp_u64);
	printf("dtl_responder_bench: %llu s, a request every %llu ms\n", (unsigned long long)dur_s,
	       (unsigned long long)period_ms);
	printf("  exchanges answered  %zu (unanswered within half a period: %llu), responder holds "
	       "the lock: %s\n",
	       n, (unsigned long long)missed, st.responder ? "yes" : "no");
	printf("  responder CPU       %.3f ms = %.0f ns per exchange = %.3f %% of one CPU\n",
	       (double)(st.responder_cpu_ns - cpu0) / 1e6,
	       n ? (double)(st.responder_cpu_ns - cpu0) / (double)n : 0.0,
	       100.0 * (double)(st.responder_cpu_ns - cpu0) / ((double)dur_s * 1e9));
	if (n)
		printf(
		    "  answer delay        median %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
		    (double)delay[n / 2] / 1e3, (double)delay[n * 9 / 10] / 1e3,
		    (double)delay[n * 99 / 100] / 1e3, (double)delay[n - 1] / 1e3);
	printf("  reproduce: make build/bench/dtl_responder_bench && "
	       "build/bench/dtl_responder_bench -d %llu -p %llu\n",
	       (unsigned long long)dur_s, (unsigned long long)period_ms);
	dtl_close(d);
	dtlwriter_free(w);
	munmap(map, REGION);
	unlink(path);
	unlink(lock);
	rmdir(dir);
	free(delay);
	return 0;
}
