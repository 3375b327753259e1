/* SPDX-License-Identifier: MIT */
/*
 * streamhostile: a guest whose every record is valid but whose stream has a hostile shape, written into a
 * real domain's region from the host (the very bytes the guest's BAR2 shows), for tests/integration/
 * stream_hostile_vm.sh and bench/stream_hostile.sh. It lays out the guest area as the agent does
 * (shmwriter, one ring per vCPU), answers the host's clock exchange through the DTL mailbox (as the guest's
 * responder does, with the host's CLOCK_MONOTONIC: a guest whose clock is the host's) and, every 5 ms round,
 * writes up to half of each ring:
 *   future   gaps and events whose ends lie an hour ahead, under a horizon creeping 1 ms a round: nothing
 *            they wait for ever comes (the host's queues would grow without bound);
 *   falling  events whose ends rise while their starts fall, 10 ns a record (each would pass every queued
 *            record in a start-sorted insert), ends an hour ahead;
 *   flip     a new agent epoch every round, the layout version going between 2 and 1 every other round.
 *
 *   streamhostile REGION MODE SECONDS [NRINGS]
 *
 * Prints one JSON line: {"mode":..., "rounds":N, "records":N, "epochs":N, "replies":N}.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dtl.h"
#include "shm.h"
#include "channel/dtlreader.h"
#include "channel/shmwriter.h"

#define SLOTS 4096u
#define ROUND_NS 5000000ull
#define HOUR_NS 3600000000000ull

static void *base;
static size_t size;
static atomic_int stop;
static atomic_ullong replies;

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The guest's clock responder: every request answered with this clock. */
static void *responder(void *arg)
{
	void *area = (char *)base + vn_dtl_area_offset(size);
	struct dtl_reader *r = dtlreader_new(area, size - vn_dtl_area_offset(size));
	uint64_t seq, send;

	(void)arg;
	if (!r)
		return NULL;
	while (!atomic_load(&stop)) {
		if (dtlreader_sync(r) >= 0 && dtlreader_request(r, &seq, &send) == 1) {
			dtlreader_reply(r, area, seq, send, mono(), 1);
			atomic_fetch_add(&replies, 1);
		}
		usleep(20);
	}
	dtlreader_free(r);
	return NULL;
}

static void running(struct shm_writer *w)
{
	struct vn_shm_status st = { .agent_state = VN_SHM_AGENT_RUNNING };

	shmwriter_set_status(w, &st);
}

static int usage(void)
{
	fputs("usage: streamhostile REGION future|falling|flip SECONDS [NRINGS]\n", stderr);
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t rounds = 0, records = 0, epochs = 1, epoch, t0, end, k = 0;
	uint32_t nrings = argc > 4 ? (uint32_t)atoi(argv[4]) : 2;
	struct shm_writer *w;
	struct stat sb;
	pthread_t th;
	const char *mode;
	int fd;

	if (argc < 4 || nrings < 1 || nrings > 64)
		return usage();
	mode = argv[2];
	if (strcmp(mode, "future") && strcmp(mode, "falling") && strcmp(mode, "flip"))
		return usage();
	fd = open(argv[1], O_RDWR);
	if (fd < 0 || fstat(fd, &sb)) {
		fprintf(stderr, "streamhostile: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	size = (size_t)sb.st_size;
	base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED) {
		fprintf(stderr, "streamhostile: mmap: %s\n", strerror(errno));
		return 1;
	}
	epoch = shmwriter_next_epoch(base, size, mono());
	w = shmwriter_init(base, size, nrings, SLOTS, epoch);
	if (!w) {
		fprintf(stderr, "streamhostile: shmwriter_init: %s\n", strerror(errno));
		return 1;
	}
	running(w);
	if (pthread_create(&th, NULL, responder, NULL))
		return 1;
	t0 = mono();
	end = t0 + (uint64_t)atoi(argv[3]) * 1000000000ull;
	while (mono() < end) {
		uint64_t g = mono(), h = t0 + rounds * 1000000ull;

		if (!strcmp(mode, "flip")) {
			struct vn_shm_header *hd = base;

			shmwriter_free(w);
			w = shmwriter_init(base, size, nrings, SLOTS, ++epoch);
			if (!w)
				return 1;
			epochs++;
			running(w);
			if (rounds & 1)
				__atomic_store_n(&hd->version, 1, __ATOMIC_RELEASE);
		}
		for (uint32_t r = 0; r < nrings; r++) {
			for (uint32_t i = 0; i < SLOTS / 2; i++, k++) {
				struct vn_event e = { .net_ns = 1000,
						      .id = 1,
						      .cls = VN_CLASS_IRQ };
				struct vn_sample s = { .kind = VN_SAMPLE_GAP };
				int rc;

				if (!strcmp(mode, "falling")) {
					e.start_ns = t0 + 900000000ull - k * 10;
					e.end_ns = t0 + HOUR_NS + k;
					rc = shmwriter_put_event(w, r, &e);
				} else if (i & 1) {
					e.start_ns = g + i;
					e.end_ns = g + HOUR_NS;
					rc = shmwriter_put_event(w, r, &e);
				} else {
					s.start_ns = g + i;
					s.end_ns = g + HOUR_NS;
					rc = shmwriter_put_sample(w, r, &s);
				}
				if (!rc)
					records++;
			}
			shmwriter_set_horizon(w, r, strcmp(mode, "future") ? g : h);
		}
		rounds++;
		usleep(ROUND_NS / 1000);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	printf("{\"mode\":\"%s\",\"rounds\":%" PRIu64 ",\"records\":%" PRIu64 ",\"epochs\":%" PRIu64
	       ",\"replies\":%llu}\n",
	       mode, rounds, records, epochs, (unsigned long long)atomic_load(&replies));
	shmwriter_free(w);
	return 0;
}
