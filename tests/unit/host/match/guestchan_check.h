/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the guest channel suites (check_guestchan, check_clockxchg, check_dtlctl, check_chanbell), which
 * drive host/match/guestchan and the modules it owns over a real region file in /dev/shm: setup/teardown
 * (the region, SIZE bytes, mapped at base for the test), responder (a thread in the role of the guest's clock
 * responder, its clock OFF ahead of the host's: dtlreader_request / dtlreader_reply), chan(match) (a channel
 * on the region, with --guest or publish-only), run_rounds (rounds as vnoise-host's loop runs them),
 * guest_reader (the guest's view of the dispatch trace log) and put_sample (a sample in the agent's ring 0).
 */
#ifndef VNOISE_TESTS_UNIT_HOST_MATCH_GUESTCHAN_CHECK_H
#define VNOISE_TESTS_UNIT_HOST_MATCH_GUESTCHAN_CHECK_H

#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "dtl.h"
#include "shm.h"
#include "channel/dtlreader.h"
#include "channel/dtlreader_priv.h"
#include "channel/shmwriter.h"
#include "match/guestchan.h"

#define US 1000ULL
#define MS 1000000ULL
#define S 1000000000ULL
#define OFF (7 * S) /* the guest's clock runs this far ahead */
#define SIZE (1u << 20)

static char name[64];
static void *base; /* the test's own mapping of the region */
static atomic_int stop;
static atomic_int answers;

static inline uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static inline uint64_t guest_now(void *ctx)
{
	(void)ctx;
	return mono() + OFF;
}

static inline void *host_area(void)
{
	return (char *)base + vn_dtl_area_offset(SIZE);
}

static inline void setup(void)
{
	char path[128];
	int fd;

	snprintf(name, sizeof(name), "vnoise-unit-gc-%d", (int)getpid());
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, SIZE), 0);
	base = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	close(fd);
	atomic_store(&stop, 0);
	atomic_store(&answers, 0);
}

static inline void teardown(void)
{
	char path[128];

	munmap(base, SIZE);
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	unlink(path);
}

/* The guest responder: answers every request with its clock (host + OFF). */
static inline void *responder(void *arg)
{
	struct dtl_reader *r = dtlreader_new(host_area(), SIZE / 2);
	uint64_t seq, send;

	(void)arg;
	if (!r)
		return NULL;
	while (!atomic_load(&stop)) {
		if (dtlreader_sync(r) >= 0 && dtlreader_request(r, &seq, &send) == 1) {
			dtlreader_reply(r, host_area(), seq, send, mono() + OFF, 1);
			atomic_fetch_add(&answers, 1);
		}
		usleep(20);
	}
	dtlreader_free(r);
	return NULL;
}

static inline struct guestchan *chan(bool match)
{
	struct guestchan_opts o = {
		.match = match, .dispatch = true, .detail = VN_DTL_DETAIL_TASK, .period_ns = S
	};
	char why[256];
	struct guestchan *gc = guestchan_open(name, 0, 2, &o, why, sizeof(why));

	ck_assert_msg(gc != NULL, "guestchan_open: %s", why);
	return gc;
}

/* Rounds as vnoise-host's loop runs them, for dur. */
static inline void run_rounds(struct guestchan *gc, uint64_t dur)
{
	uint64_t end = mono() + dur, t;

	while ((t = mono()) < end) {
		guestchan_clock(gc, t);
		guestchan_tick(gc, t, t);
		usleep(5000);
	}
}

static inline struct dtl_reader *guest_reader(void)
{
	struct dtl_reader *r = dtlreader_new(host_area(), SIZE / 2);

	ck_assert_ptr_nonnull(r);
	dtlreader_set_clock(r, guest_now, NULL);
	ck_assert_int_eq(dtlreader_sync(r), 1);
	return r;
}

static inline void put_sample(struct shm_writer *w, uint64_t start, uint64_t end, uint8_t kind)
{
	struct vn_sample s = { .start_ns = start, .end_ns = end, .kind = kind };

	ck_assert_int_eq(shmwriter_put_sample(w, 0, &s), 0);
}

#endif
