/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/channel/shmreader, the host end of the shared-memory channel (protocol/shm.h), fed by
 * the real guest end (shmwriter) and checked with the region's validators (shmregion): attach arguments,
 * round trips of samples and events, wrap-around (the 32-bit lap sequence included), overruns counted
 * exactly (before, during and at the end of an epoch), torn/stale/bogus slots, invalid payloads, every
 * header field corrupted (live under the same epoch and at attach; run under ASan with regions allocated to
 * the byte so any overread is caught), epochs and recovery, bounded work per poll, a reader that writes
 * nothing into the region, the status, and concurrency: a producer thread racing the consumer
 * (every record delivered is intact and in order, the rest counted as lost) and a hostile thread scribbling
 * over the region while the consumer reads (no crash, damage counted, recovery on a new epoch).
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "channel/shmreader.h"
#include "channel/shmreader_priv.h"
#include "channel/shmregion.h"
#include "channel/shmwriter.h"
#include "shm_check.h"
#include "shm_hostile.h"

/* ---- helpers ---- */

#define COL_MAX 8192

static struct vn_shm_ring *CTL(void *base, uint32_t r)
{
	return (struct vn_shm_ring *)((char *)base + H(base)->ring_ctl_offset) + r;
}

static struct vn_shm_slot *SLOT(void *base, uint32_t r, uint64_t pos)
{
	struct vn_shm_header *h = H(base);

	return (struct vn_shm_slot *)((char *)base + h->slots_offset) +
	       (size_t)r * h->slots_per_ring + (pos & (h->slots_per_ring - 1));
}

static uint32_t seq_of(void *base, uint64_t pos)
{
	uint32_t shift = (uint32_t)__builtin_ctz(H(base)->slots_per_ring);

	return (uint32_t)(pos >> shift) * 2u + 2u;
}

static struct vn_sample mk_sample(uint64_t t)
{
	struct vn_sample s;

	memset(&s, 0, sizeof(s));
	s.start_ns = 1000000 + t * 1000;
	s.end_ns = s.start_ns + 10 + t % 7;
	s.cpu = (uint16_t)(t % 4);
	s.kind = VN_SAMPLE_GAP;
	return s;
}

static struct vn_event mk_event(uint64_t t)
{
	struct vn_event e;

	memset(&e, 0, sizeof(e));
	e.start_ns = 2000000 + t * 100;
	e.end_ns = e.start_ns + 50;
	e.net_ns = 40;
	e.steal_ns = 5;
	e.id = (uint32_t)t;
	e.parent_id = 3;
	e.cpu = 1;
	e.cls = VN_CLASS_THREAD;
	e.parent_cls = VN_CLASS_NONE;
	snprintf(e.comm, sizeof(e.comm), "task%u", (unsigned)(t % 1000));
	return e;
}

/* Record number t: a sample for even t, an event for odd t. No Check call: usable in threads and hot
 * loops (a passing ck_assert costs a syscall in fork mode). */
static int put_rec_raw(struct shm_writer *w, uint32_t ring, uint64_t t)
{
	struct vn_sample s = mk_sample(t);
	struct vn_event e = mk_event(t);

	return t & 1 ? shmwriter_put_event(w, ring, &e) : shmwriter_put_sample(w, ring, &s);
}

static void put_rec(struct shm_writer *w, uint32_t ring, uint64_t t)
{
	ck_assert_int_eq(put_rec_raw(w, ring, t), 0);
}

/* True when rec is record number t as put_rec wrote it. */
static int is_rec(const struct vn_shm_slot *rec, uint64_t t)
{
	struct vn_sample s = mk_sample(t);
	struct vn_event e = mk_event(t);

	if (t & 1)
		return rec->type == VN_SHM_REC_EVENT && !memcmp(&rec->payload.event, &e, sizeof(e));
	return rec->type == VN_SHM_REC_SAMPLE && !memcmp(&rec->payload.sample, &s, sizeof(s));
}

struct col {
	uint32_t n;
	uint32_t ring[COL_MAX];
	uint64_t pos[COL_MAX];
	struct vn_shm_slot rec[COL_MAX];
};
static struct col col;

static void col_cb(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct col *c = ctx;

	if (c->n < COL_MAX) {
		c->ring[c->n] = ring;
		c->pos[c->n] = pos;
		c->rec[c->n] = *rec;
	}
	c->n++;
}

/* Poll ring until it returns 0; returns the records delivered. */
static int drain(struct shm_reader *rd, uint32_t ring)
{
	int n, total = 0, guard = 0;

	while ((n = shmreader_poll(rd, ring, col_cb, &col, 64)) > 0 && guard++ < 100000)
		total += n;
	ck_assert_int_ge(n, 0);
	return total;
}

static struct shmreader_stats stats(const struct shm_reader *rd)
{
	struct shmreader_stats s;

	shmreader_stats(rd, &s);
	return s;
}

/* Fresh region with a writer (2 rings x 64 slots, epoch 7) and an attached reader in OK state. */
struct fix {
	void *base;
	size_t size;
	struct shm_writer *w;
	struct shm_reader *rd;
};

static void fix_open(struct fix *f, size_t size, uint32_t nrings, uint32_t slots, uint64_t epoch)
{
	f->size = size;
	f->base = region_new(size);
	f->w = shmwriter_init(f->base, size, nrings, slots, epoch);
	ck_assert_ptr_nonnull(f->w);
	f->rd = shmreader_attach(f->base, size);
	ck_assert_ptr_nonnull(f->rd);
	ck_assert_int_eq(shmreader_state(f->rd), SHMREADER_OK);
	memset(&col, 0, sizeof(col));
}

static void fix_close(struct fix *f)
{
	shmreader_detach(f->rd);
	shmwriter_free(f->w);
	free(f->base);
}

/* Re-initialise the region under a new epoch, replacing the writer. */
static void fix_reinit(struct fix *f, uint32_t nrings, uint32_t slots, uint64_t epoch)
{
	shmwriter_free(f->w);
	f->w = shmwriter_init(f->base, f->size, nrings, slots, epoch);
	ck_assert_ptr_nonnull(f->w);
}

/* ---- attach ---- */

START_TEST(test_attach_args)
{
	void *base = region_new(RSIZE);
	struct shm_reader *rd;

	errno = 0;
	ck_assert_ptr_null(shmreader_attach(NULL, RSIZE));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmreader_attach((char *)base + 4, RSIZE - 64));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmreader_attach(base, 511));
	ck_assert_int_eq(errno, EINVAL);
	rd = shmreader_attach(base, 512); /* zero region: waiting */
	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(shmreader_state(rd), SHMREADER_WAITING);
	ck_assert_str_eq(shmreader_state_name(SHMREADER_WAITING), "waiting");
	ck_assert_str_eq(shmreader_state_name(SHMREADER_OK), "ok");
	ck_assert_str_eq(shmreader_state_name(SHMREADER_CORRUPT), "corrupt");
	ck_assert_str_eq(shmreader_error(rd), "");
	shmreader_detach(rd);
	shmreader_detach(NULL);
	free(base);
}
END_TEST

/* ---- round trip ---- */

START_TEST(test_roundtrip)
{
	struct fix f;
	struct vn_shm_header h;
	struct shmreader_ring_info ri;
	uint64_t t;
	uint32_t i;

	fix_open(&f, RSIZE, 2, 64, 7);
	for (t = 0; t < 20; t++)
		put_rec(f.w, (uint32_t)(t % 2), t);
	ck_assert_uint_eq(shmwriter_head(f.w, 0), 10);
	ck_assert_int_eq(drain(f.rd, 0), 10);
	ck_assert_int_eq(drain(f.rd, 1), 10);
	ck_assert_uint_eq(col.n, 20);
	for (i = 0; i < 20; i++) {
		uint32_t ring = i < 10 ? 0 : 1;
		uint64_t tt = i < 10 ? 2 * i : 2 * (i - 10) + 1;

		ck_assert_uint_eq(col.ring[i], ring);
		ck_assert_uint_eq(col.pos[i], i % 10);
		ck_assert(is_rec(&col.rec[i], tt));
		ck_assert_uint_eq(col.rec[i].seq, 2);
	}
	ck_assert_uint_eq(stats(f.rd).records, 20);
	ck_assert_uint_eq(stats(f.rd).lost, 0);
	ck_assert_uint_eq(stats(f.rd).epochs, 1);
	ck_assert_uint_eq(shmreader_nrings(f.rd), 2);
	ck_assert_int_eq(shmreader_header(f.rd, &h), 0);
	ck_assert_uint_eq(h.epoch, 7);
	ck_assert_int_eq(shmreader_ring_info(f.rd, 1, &ri), 0);
	ck_assert_uint_eq(ri.tail, 10);
	ck_assert_uint_eq(ri.head, 10);
	ck_assert_int_eq(shmreader_ring_info(f.rd, 2, &ri), -EINVAL);
	/* nothing more */
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 64), 0);
	fix_close(&f);
}
END_TEST

START_TEST(test_put_normalises)
{
	struct fix f;
	struct vn_sample s = mk_sample(2);
	struct vn_event e = mk_event(3);

	fix_open(&f, RSIZE, 1, 8, 7);
	memset(s.pad, 0x5a, sizeof(s.pad));
	e.pad[0] = 1;
	e.pad[1] = 2;
	memset(e.comm, 'k', sizeof(e.comm)); /* no NUL */
	ck_assert_int_eq(shmwriter_put_sample(f.w, 0, &s), 0);
	ck_assert_int_eq(shmwriter_put_event(f.w, 0, &e), 0);
	ck_assert_int_eq(drain(f.rd, 0), 2);
	ck_assert(is_rec(&col.rec[0], 2));
	ck_assert_uint_eq(col.rec[1].payload.event.pad[0], 0);
	ck_assert_uint_eq(col.rec[1].payload.event.comm[15], 0);
	ck_assert_int_eq(memcmp(col.rec[1].payload.event.comm, "kkkkkkkkkkkkkkk", 15), 0);
	ck_assert_uint_eq(col.rec[1].payload.event.start_ns, e.start_ns);
	fix_close(&f);
}
END_TEST

START_TEST(test_put_bad_args)
{
	struct fix f;
	struct vn_sample s = mk_sample(0);
	struct shmreader_ring_info ri;

	fix_open(&f, RSIZE, 2, 8, 7);
	ck_assert_int_eq(shmwriter_put_sample(f.w, 2, &s), -EINVAL);
	ck_assert_int_eq(shmwriter_put(f.w, 1, 9, &s), -EINVAL);
	ck_assert_int_eq(shmwriter_put(f.w, 1, VN_SHM_REC_NONE, &s), -EINVAL);
	ck_assert_int_eq(shmwriter_put(f.w, 1, VN_SHM_REC_SAMPLE, NULL), -EINVAL);
	ck_assert_uint_eq(shmwriter_head(f.w, 1), 0);
	shmwriter_add_dropped(f.w, 0, 5);
	shmwriter_add_dropped(f.w, 7, 5); /* ignored */
	ck_assert_int_eq(drain(f.rd, 0), 0);
	ck_assert_int_eq(drain(f.rd, 1), 0);
	ck_assert_uint_eq(stats(f.rd).producer_dropped, 5 + 3);
	ck_assert_int_eq(shmreader_ring_info(f.rd, 1, &ri), 0);
	ck_assert_uint_eq(ri.dropped, 3);
	ck_assert_int_eq(shmreader_poll(f.rd, 2, col_cb, &col, 8), -EINVAL);
	ck_assert_int_eq(shmreader_poll(f.rd, 0, NULL, &col, 8), -EINVAL);
	fix_close(&f);
}
END_TEST

/* ---- wrap-around ---- */

START_TEST(test_wrap_many_laps)
{
	struct fix f;
	uint64_t t;
	uint32_t i;

	fix_open(&f, RSIZE, 1, 8, 7);
	for (t = 0; t < 1000; t += 5) {
		uint64_t k;

		for (k = t; k < t + 5; k++)
			put_rec(f.w, 0, k);
		ck_assert_uint_eq(SLOT(f.base, 0, t + 4)->seq, seq_of(f.base, t + 4));
		ck_assert_int_eq(drain(f.rd, 0), 5);
	}
	ck_assert_uint_eq(col.n, 1000);
	for (i = 0; i < 1000; i++) {
		ck_assert_uint_eq(col.pos[i], i);
		ck_assert(is_rec(&col.rec[i], i));
	}
	ck_assert_uint_eq(stats(f.rd).lost, 0);
	ck_assert_uint_eq(stats(f.rd).stale + stats(f.rd).torn + stats(f.rd).invalid, 0);
	fix_close(&f);
}
END_TEST

/*
 * A producer written from the protocol text alone (not shmwriter_put): record number t at position pos of
 * ring 0. Lets a test start at any position.
 */
static void raw_put(void *base, uint64_t pos, uint64_t t)
{
	struct vn_shm_slot *s = SLOT(base, 0, pos);
	struct vn_sample sm = mk_sample(t);
	struct vn_event e = mk_event(t);
	uint32_t done = seq_of(base, pos);

	__atomic_store_n(&s->seq, done - 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memset(s->payload.raw, 0, sizeof(s->payload.raw));
	s->type = t & 1 ? VN_SHM_REC_EVENT : VN_SHM_REC_SAMPLE;
	s->pad = 0;
	if (t & 1)
		s->payload.event = e;
	else
		s->payload.sample = sm;
	__atomic_store_n(&s->seq, done, __ATOMIC_RELEASE);
	__atomic_store_n(&CTL(base, 0)->head, pos + 1, __ATOMIC_RELEASE);
}

/* The 32-bit lap sequence wraps (lap 2^31 - 1 has seq 0): reading goes on across it. */
START_TEST(test_wrap_seq_u32)
{
	void *base = region_new(RSIZE);
	struct shm_writer *w = shmwriter_init(base, RSIZE, 1, 4, 7);
	struct shm_reader *rd;
	uint64_t start = ((1ull << 31) - 2) * 4, t;
	uint32_t i;

	ck_assert_ptr_nonnull(w);
	memset(&col, 0, sizeof(col));
	for (t = 0; t < 4; t++) /* as if 2^33 records had been written before */
		raw_put(base, start + t, t);
	ck_assert_uint_eq(SLOT(base, 0, start)->seq, 0xfffffffeu);
	rd = shmreader_attach(base, RSIZE);
	ck_assert_ptr_nonnull(rd);
	ck_assert_uint_eq(stats(rd).missed, start);
	ck_assert_int_eq(drain(rd, 0), 4);
	for (; t < 12; t += 2) {
		raw_put(base, start + t, t);
		raw_put(base, start + t + 1, t + 1);
		ck_assert_int_eq(drain(rd, 0), 2);
		if (t == 6) /* lap 2^31 - 1 complete */
			ck_assert_uint_eq(SLOT(base, 0, start + 4)->seq, 0);
	}
	ck_assert_uint_eq(SLOT(base, 0, start + 8)->seq, 2);
	ck_assert_uint_eq(col.n, 12);
	for (i = 0; i < 12; i++) {
		ck_assert_uint_eq(col.pos[i], start + i);
		ck_assert(is_rec(&col.rec[i], i));
	}
	ck_assert_uint_eq(stats(rd).lost + stats(rd).stale + stats(rd).invalid + stats(rd).torn, 0);
	shmreader_detach(rd);
	shmwriter_free(w);
	free(base);
}
END_TEST

/* ---- overrun ---- */

START_TEST(test_overrun_exact)
{
	struct fix f;
	uint64_t t;
	uint32_t i;

	/* a full ring (16) is read as it is */
	fix_open(&f, RSIZE, 1, 16, 7);
	for (t = 0; t < 16; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(drain(f.rd, 0), 16);
	ck_assert_uint_eq(stats(f.rd).lost, 0);
	/* 5 more than a ring: the reader resumes 14 (7/8 of the ring) behind the head */
	for (t = 16; t < 16 + 16 + 5; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(drain(f.rd, 0), 14);
	ck_assert_uint_eq(stats(f.rd).lost, 7);
	for (i = 0; i < 14; i++) {
		ck_assert_uint_eq(col.pos[16 + i], 23 + i);
		ck_assert(is_rec(&col.rec[16 + i], 23 + i));
	}
	/* many laps at once */
	for (t = 37; t < 37 + 10 * 16 + 3; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(drain(f.rd, 0), 14);
	ck_assert_uint_eq(stats(f.rd).lost, 7 + 10 * 16 + 3 - 14);
	ck_assert_uint_eq(col.pos[30], 37 + 10 * 16 + 3 - 14);
	ck_assert_uint_eq(stats(f.rd).records + stats(f.rd).lost, 37 + 10 * 16 + 3);
	fix_close(&f);
}
END_TEST

/* The producer laps the consumer while it reads (the callback writes, as a racing guest would). */
struct race_ctx {
	struct shm_writer *w;
	uint64_t next; /* next record number to write */
	int writes_left; /* on the first callback */
	int calls;
};

static void race_cb(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct race_ctx *r = ctx;
	int k;

	col_cb(&col, ring, pos, rec);
	if (r->calls++ == 0)
		for (k = 0; k < r->writes_left; k++)
			put_rec(r->w, ring, r->next++);
}

START_TEST(test_overrun_during_poll)
{
	struct fix f;
	struct race_ctx r = { 0 };
	uint64_t t;
	uint32_t i;

	fix_open(&f, RSIZE, 1, 8, 7);
	for (t = 0; t < 8; t++)
		put_rec(f.w, 0, t);
	r.w = f.w;
	r.next = 8;
	r.writes_left = 3; /* positions 8..10 overwrite 0..2; 0 is already read */
	/* at 1 the reader finds lap 1: it resumes 7 behind head 11, at 4: 1..3 are lost */
	ck_assert_int_eq(shmreader_poll(f.rd, 0, race_cb, &r, 64), 8);
	ck_assert_uint_eq(stats(f.rd).lost, 3);
	ck_assert_uint_eq(col.n, 8);
	ck_assert_uint_eq(col.pos[0], 0);
	for (i = 1; i < 8; i++) {
		ck_assert_uint_eq(col.pos[i], i + 3);
		ck_assert(is_rec(&col.rec[i], i + 3));
	}
	ck_assert_uint_eq(stats(f.rd).records + stats(f.rd).lost, 11);
	ck_assert_uint_eq(stats(f.rd).stale + stats(f.rd).invalid + stats(f.rd).torn, 0);
	fix_close(&f);
}
END_TEST

/* A slot whose seq is the next lap's "writing" value: that record is being destroyed: lost. */
START_TEST(test_overrun_slot_being_rewritten)
{
	struct fix f;
	uint64_t t;

	fix_open(&f, RSIZE, 1, 4, 7);
	for (t = 0; t < 4; t++)
		put_rec(f.w, 0, t);
	SLOT(f.base, 0, 0)->seq = seq_of(f.base, 0) + 1; /* lap 1 being written */
	ck_assert_int_eq(drain(f.rd, 0), 3);
	ck_assert_uint_eq(stats(f.rd).lost, 1);
	ck_assert_uint_eq(stats(f.rd).torn, 0);
	ck_assert_uint_eq(col.pos[0], 1);
	fix_close(&f);
}
END_TEST

START_TEST(test_lost_at_epoch_end)
{
	struct fix f;
	uint64_t t;

	fix_open(&f, RSIZE, 2, 16, 7);
	for (t = 0; t < 10; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 4), 4);
	fix_reinit(&f, 2, 16, 8);
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_OK);
	ck_assert_uint_eq(stats(f.rd).lost, 6);
	ck_assert_uint_eq(stats(f.rd).epochs, 2);
	fix_close(&f);
}
END_TEST

START_TEST(test_missed_at_attach)
{
	void *base = region_new(RSIZE);
	struct shm_writer *w = shmwriter_init(base, RSIZE, 1, 16, 7);
	struct shm_reader *rd;
	uint64_t t;

	ck_assert_ptr_nonnull(w);
	memset(&col, 0, sizeof(col));
	for (t = 0; t < 3 * 16 + 2; t++)
		put_rec(w, 0, t);
	rd = shmreader_attach(base, RSIZE);
	ck_assert_ptr_nonnull(rd);
	ck_assert_uint_eq(stats(rd).missed, 3 * 16 + 2 - 14); /* 14 = 7/8 of the ring kept */
	ck_assert_int_eq(drain(rd, 0), 14);
	ck_assert_uint_eq(stats(rd).lost, 0);
	ck_assert_uint_eq(col.pos[0], 3 * 16 + 2 - 14);
	shmreader_detach(rd);
	shmwriter_free(w);
	free(base);
}
END_TEST

/* ---- torn and stale slots ---- */

START_TEST(test_torn_skipped)
{
	struct fix f;
	uint64_t t;

	fix_open(&f, RSIZE, 1, 8, 7);
	for (t = 0; t < 4; t++)
		put_rec(f.w, 0, t);
	SLOT(f.base, 0, 1)->seq = seq_of(f.base, 1) - 1; /* odd: "still being written" forever */
	ck_assert_int_eq(drain(f.rd, 0), 3);
	ck_assert_uint_eq(stats(f.rd).retries, 3);
	ck_assert_uint_eq(stats(f.rd).torn, 1);
	ck_assert_uint_eq(stats(f.rd).lost, 0);
	ck_assert_uint_eq(col.pos[0], 0);
	ck_assert_uint_eq(col.pos[1], 2);
	ck_assert_uint_eq(col.pos[2], 3);
	/* an odd older lap is torn too */
	put_rec(f.w, 0, 4);
	SLOT(f.base, 0, 4)->seq = 1;
	ck_assert_int_eq(drain(f.rd, 0), 0);
	ck_assert_uint_eq(stats(f.rd).torn, 2);
	fix_close(&f);
}
END_TEST

START_TEST(test_stale_skipped)
{
	struct fix f;
	uint64_t t;

	fix_open(&f, RSIZE, 1, 8, 7);
	for (t = 0; t < 8; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(drain(f.rd, 0), 8);
	for (t = 8; t < 12; t++)
		put_rec(f.w, 0, t);
	SLOT(f.base, 0, 9)->seq = seq_of(f.base, 9) - 2; /* the previous lap's record */
	ck_assert_int_eq(drain(f.rd, 0), 3);
	ck_assert_uint_eq(stats(f.rd).stale, 1);
	/* a head ahead of what was written: slots still holding the previous lap are stale */
	CTL(f.base, 0)->head = 14;
	ck_assert_int_eq(drain(f.rd, 0), 0);
	ck_assert_uint_eq(stats(f.rd).stale, 3);
	ck_assert_uint_eq(stats(f.rd).lost + stats(f.rd).invalid + stats(f.rd).torn, 0);
	fix_close(&f);
}
END_TEST

START_TEST(test_newer_lap_head_denies)
{
	struct fix f;
	uint64_t t;

	fix_open(&f, RSIZE, 1, 8, 7);
	for (t = 0; t < 4; t++)
		put_rec(f.w, 0, t);
	SLOT(f.base, 0, 1)->seq = seq_of(f.base, 1) + 2; /* claims lap 1, head says 4 */
	ck_assert_int_eq(drain(f.rd, 0), 3);
	ck_assert_uint_eq(stats(f.rd).invalid, 1);
	ck_assert_uint_eq(stats(f.rd).lost, 0);
	fix_close(&f);
}
END_TEST

/* ---- invalid payloads ---- */

enum { MUT_SAMPLE, MUT_EVENT };

struct pmut {
	const char *name;
	int kind; /* which record is mutated */
	int valid; /* still valid after the mutation */
};

static const struct pmut pmuts[] = {
	{ "slot pad", MUT_SAMPLE, 0 },
	{ "type none", MUT_SAMPLE, 0 },
	{ "type 3", MUT_SAMPLE, 0 },
	{ "type 0xffff", MUT_EVENT, 0 },
	{ "sample kind 2", MUT_SAMPLE, 0 },
	{ "sample pad", MUT_SAMPLE, 0 },
	{ "sample tail", MUT_SAMPLE, 0 },
	{ "sample end < start", MUT_SAMPLE, 0 },
	{ "sample span > a day", MUT_SAMPLE, 0 },
	{ "sample empty", MUT_SAMPLE, 1 },
	{ "sample window", MUT_SAMPLE, 1 },
	{ "event cls none", MUT_EVENT, 0 },
	{ "event cls 8", MUT_EVENT, 0 },
	{ "event cls 255", MUT_EVENT, 0 },
	{ "event parent_cls 8", MUT_EVENT, 0 },
	{ "event flags 0x80", MUT_EVENT, 0 },
	{ "event pad", MUT_EVENT, 0 },
	{ "event comm unterminated", MUT_EVENT, 0 },
	{ "event end < start", MUT_EVENT, 0 },
	{ "event span > a day", MUT_EVENT, 0 },
	{ "event net > span", MUT_EVENT, 0 },
	{ "steal net > span", MUT_EVENT, 1 },
	{ "event truncated flags", MUT_EVENT, 1 },
	{ "event unexplained", MUT_EVENT, 1 },
};

static void pmut_apply(struct vn_shm_slot *s, int k)
{
	struct vn_sample *sm = &s->payload.sample;
	struct vn_event *e = &s->payload.event;

	switch (k) {
	case 0:
		s->pad = 1;
		break;
	case 1:
		s->type = VN_SHM_REC_NONE;
		break;
	case 2:
		s->type = VN_SHM_REC_MAX;
		break;
	case 3:
		s->type = 0xffff;
		break;
	case 4:
		sm->kind = 2;
		break;
	case 5:
		sm->pad[4] = 1;
		break;
	case 6:
		s->payload.raw[55] = 1;
		break;
	case 7:
		sm->end_ns = sm->start_ns - 1;
		break;
	case 8:
		sm->end_ns = sm->start_ns + VN_SHM_MAX_SPAN_NS + 1;
		break;
	case 9:
		sm->end_ns = sm->start_ns;
		break;
	case 10:
		sm->kind = VN_SAMPLE_WINDOW;
		break;
	case 11:
		e->cls = VN_CLASS_NONE;
		break;
	case 12:
		e->cls = VN_CLASS_MAX;
		break;
	case 13:
		e->cls = 255;
		break;
	case 14:
		e->parent_cls = VN_CLASS_MAX;
		break;
	case 15:
		e->flags = 0x80;
		break;
	case 16:
		e->pad[1] = 9;
		break;
	case 17:
		e->comm[15] = 'z';
		break;
	case 18:
		e->end_ns = e->start_ns - 1;
		break;
	case 19:
		e->end_ns = e->start_ns + VN_SHM_MAX_SPAN_NS + 1;
		break;
	case 20:
		e->net_ns = (uint32_t)(e->end_ns - e->start_ns) + 1;
		break;
	case 21:
		e->cls = VN_CLASS_STEAL;
		e->net_ns = (uint32_t)(e->end_ns - e->start_ns) + 100;
		break;
	case 22:
		e->flags = VN_EVF_TRUNCATED | VN_EVF_DESYNC;
		break;
	case 23:
		e->cls = VN_CLASS_UNEXPLAINED;
		break;
	}
}

START_TEST(test_invalid_payloads)
{
	int k = _i;
	const struct pmut *m = &pmuts[k];
	uint64_t mid = m->kind == MUT_SAMPLE ? 2 : 1; /* record 1 is an event, 2 a sample */
	struct vn_shm_slot copy;
	struct fix f;
	uint64_t t;

	fix_open(&f, RSIZE, 1, 8, 7);
	for (t = 0; t < 4; t++)
		put_rec(f.w, 0, t);
	pmut_apply(SLOT(f.base, 0, mid), k);
	copy = *SLOT(f.base, 0, mid);
	ck_assert_msg((shmregion_record_valid(&copy) == 0) == m->valid, "%s", m->name);
	ck_assert_int_eq(drain(f.rd, 0), m->valid ? 4 : 3);
	ck_assert_uint_eq(stats(f.rd).invalid, m->valid ? 0 : 1);
	ck_assert_uint_eq(stats(f.rd).stale + stats(f.rd).torn + stats(f.rd).lost, 0);
	fix_close(&f);
}
END_TEST

/* ---- header corruption ---- */

#define NHMUT 31

/* Mutations 0-20: the identity, size and geometry fields. */
static const char *hmut_apply_fields(struct vn_shm_header *h, int k)
{
	switch (k) {
	case 0:
		h->magic[0] ^= 0x20;
		return "magic[0]";
	case 1:
		h->magic[7] = 0;
		return "magic[7]";
	case 2:
		h->version = 1;
		return "version 1"; /* layout v1 (the whole region): not this build's */
	case 3:
		h->version = 0;
		return "version 0";
	case 4:
		h->header_size = 256;
		return "header_size 256";
	case 5:
		h->header_size = 1024;
		return "header_size 1024";
	case 6:
		h->region_size += 64;
		return "region_size not pow2";
	case 7:
		h->region_size = 0;
		return "region_size 0";
	case 8:
		h->region_size = 1024;
		return "region_size too small for the layout";
	case 9:
		h->region_size *= 2;
		return "region_size doubled (still valid)";
	case 10:
		h->nrings = 0;
		return "nrings 0";
	case 11:
		h->nrings = VN_SHM_MAX_RINGS + 1;
		return "nrings 257";
	case 12:
		h->nrings = UINT32_MAX;
		return "nrings max";
	case 13:
		h->nrings += 1;
		return "nrings + 1 (still fits)";
	case 14:
		h->slots_per_ring = 0;
		return "slots 0";
	case 15:
		h->slots_per_ring = 3;
		return "slots 3";
	case 16:
		h->slots_per_ring = VN_SHM_MAX_SLOTS * 2;
		return "slots 2^21";
	case 17:
		h->slots_per_ring *= 2;
		return "slots doubled (still fits)";
	case 18:
		h->slot_size = 32;
		return "slot_size 32";
	case 19:
		h->slot_size = 128;
		return "slot_size 128";
	case 20:
		h->ring_ctl_size = 0;
		return "ring_ctl_size 0";
	}
	return "?";
}

/* Mutations 21-30: where the areas lie, the reserved bytes, the layout with a summary area (version 2). */
static const char *hmut_apply_layout(struct vn_shm_header *h, int k)
{
	switch (k) {
	case 21:
		h->ring_ctl_offset = 0;
		return "ring counters over the header";
	case 22:
		h->ring_ctl_offset += 8;
		return "ring counters misaligned";
	case 23:
		h->ring_ctl_offset = UINT64_MAX - 63;
		return "ring counters at 2^64 - 64 (wraps)";
	case 24:
		h->ring_ctl_offset = h->slots_offset;
		return "ring counters over the slots";
	case 25:
		h->slots_offset = 256;
		return "slots over the header";
	case 26:
		h->slots_offset = h->region_size - 64;
		return "slots past the end";
	case 27:
		h->slots_offset = 1ull << 62;
		return "slots at 2^62";
	case 28:
		h->reserved0[5] = 1;
		return "reserved0[5]";
	case 29:
		h->reserved0[63] = 1;
		return "reserved0[63]";
	case 30:
		h->version = 2;
		return "version 2"; /* layout v2 (a summary area before the slots): not this build's */
	}
	return "?";
}

/* Mutate one header field (k < NHMUT); returns its name. */
static const char *hmut_apply(struct vn_shm_header *h, int k)
{
	return k <= 20 ? hmut_apply_fields(h, k) : hmut_apply_layout(h, k);
}

static int hmut_still_valid(int k)
{
	return k == 9 || k == 17; /* nrings + 1 makes the ring counters overlap the slots */
}

/* A live change under the same epoch: CORRUPT at once, counted once, and a new epoch recovers. */
START_TEST(test_header_live_corruption)
{
	int k = _i;
	struct fix f;
	const char *name;
	uint64_t t;

	fix_open(&f, RSIZE, 2, 64, 7);
	for (t = 0; t < 6; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 2), 2);
	name = hmut_apply(H(f.base), k);
	ck_assert_msg(shmreader_poll(f.rd, 0, col_cb, &col, 64) == -EPROTO, "%s", name);
	ck_assert_int_eq(shmreader_state(f.rd), SHMREADER_CORRUPT);
	ck_assert_uint_eq(stats(f.rd).corrupt, 1);
	ck_assert_uint_eq(stats(f.rd).lost, 4); /* published, unread, gone with the channel */
	ck_assert_str_ne(shmreader_error(f.rd), "");
	ck_assert_int_eq(shmreader_poll(f.rd, 1, col_cb, &col, 64), -EPROTO);
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_CORRUPT);
	ck_assert_uint_eq(stats(f.rd).corrupt, 1);
	ck_assert_uint_eq(shmreader_nrings(f.rd), 0);
	/* recovery on a new epoch */
	fix_reinit(&f, 2, 64, 8);
	put_rec(f.w, 1, 1);
	ck_assert_int_eq(shmreader_poll(f.rd, 1, col_cb, &col, 64), 1);
	ck_assert_int_eq(shmreader_state(f.rd), SHMREADER_OK);
	ck_assert_uint_eq(stats(f.rd).epochs, 2);
	ck_assert_uint_eq(col.pos[col.n - 1], 0);
	fix_close(&f);
}
END_TEST

/* The same damage found when attaching to a new epoch. */
START_TEST(test_header_corrupt_at_attach)
{
	int k = _i;
	void *base = region_new(RSIZE);
	struct shm_writer *w = shmwriter_init(base, RSIZE, 2, 64, 7);
	struct shm_reader *rd;
	char why[160] = "";
	const char *name;

	ck_assert_ptr_nonnull(w);
	name = hmut_apply(H(base), k);
	ck_assert_msg((shmregion_header_valid(H(base), RSIZE, why, sizeof(why)) == 0) ==
			  hmut_still_valid(k),
		      "%s: %s", name, why);
	if (!hmut_still_valid(k))
		ck_assert_str_ne(why, "");
	rd = shmreader_attach(base, RSIZE);
	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(shmreader_state(rd),
			 hmut_still_valid(k) ? SHMREADER_OK : SHMREADER_CORRUPT);
	ck_assert_uint_eq(stats(rd).corrupt, hmut_still_valid(k) ? 0 : 1);
	if (!hmut_still_valid(k)) {
		ck_assert_int_eq(shmreader_poll(rd, 0, col_cb, &col, 64), -EPROTO);
		ck_assert_int_eq(shmreader_status(rd, &(struct vn_shm_status){ 0 }), -ENOTCONN);
	}
	shmreader_detach(rd);
	shmwriter_free(w);
	free(base);
}
END_TEST

/* Epoch and header changed together: the new epoch's header is invalid. */
START_TEST(test_header_new_epoch_invalid)
{
	struct fix f;

	fix_open(&f, RSIZE, 2, 64, 7);
	H(f.base)->epoch = 9;
	H(f.base)->nrings = 1000;
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_CORRUPT);
	ck_assert_uint_eq(stats(f.rd).corrupt, 1);
	H(f.base)->nrings = 2; /* repaired under the condemned epoch: still corrupt */
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_CORRUPT);
	H(f.base)->epoch = 0; /* a guest re-initialising */
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_CORRUPT);
	H(f.base)->epoch = 10;
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_OK);
	ck_assert_uint_eq(stats(f.rd).corrupt, 1);
	ck_assert_uint_eq(stats(f.rd).epochs, 2);
	fix_close(&f);
}
END_TEST

/* The host maps less than the guest claims: bounded by the mapping, corrupt, no overread (ASan). */
START_TEST(test_header_mapping_smaller)
{
	void *big = region_new(RSIZE), *small;
	struct shm_writer *w = shmwriter_init(big, RSIZE, 2, 64, 7);
	struct shm_reader *rd;
	size_t msize = 4096;

	ck_assert_ptr_nonnull(w);
	small = region_new(msize);
	memcpy(small, big, msize);
	rd = shmreader_attach(small, msize);
	ck_assert_ptr_nonnull(rd);
	ck_assert_int_eq(shmreader_state(rd), SHMREADER_CORRUPT);
	ck_assert_ptr_nonnull(strstr(shmreader_error(rd), "outside"));
	shmreader_detach(rd);
	/* a mapping larger than region_size: the guest's own claim still bounds the layout */
	rd = shmreader_attach(big, RSIZE);
	ck_assert_int_eq(shmreader_state(rd), SHMREADER_OK);
	shmreader_detach(rd);
	shmwriter_free(w);
	free(small);
	free(big);
}
END_TEST

START_TEST(test_header_reserved1)
{
	void *base = region_new(RSIZE);
	struct shm_writer *w = shmwriter_init(base, RSIZE, 1, 8, 7);
	struct shm_reader *rd;

	ck_assert_ptr_nonnull(w);
	H(base)->reserved1[100] = 1;
	rd = shmreader_attach(base, RSIZE);
	ck_assert_int_eq(shmreader_state(rd), SHMREADER_CORRUPT);
	shmreader_detach(rd);
	shmwriter_free(w);
	free(base);
}
END_TEST

START_TEST(test_counters_backwards)
{
	struct fix f;
	uint64_t t;

	/* head backwards */
	fix_open(&f, RSIZE, 2, 8, 7);
	for (t = 0; t < 5; t++)
		put_rec(f.w, 1, t);
	ck_assert_int_eq(drain(f.rd, 1), 5);
	CTL(f.base, 1)->head = 3;
	ck_assert_int_eq(shmreader_poll(f.rd, 1, col_cb, &col, 64), -EPROTO);
	ck_assert_ptr_nonnull(strstr(shmreader_error(f.rd), "head"));
	ck_assert_uint_eq(stats(f.rd).corrupt, 1);
	fix_close(&f);
	/* head jumping absurdly */
	fix_open(&f, RSIZE, 2, 8, 7);
	CTL(f.base, 0)->head = (1ull << 40) + 1;
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 64), -EPROTO);
	fix_close(&f);
	/* dropped backwards */
	fix_open(&f, RSIZE, 2, 8, 7);
	shmwriter_add_dropped(f.w, 0, 5);
	ck_assert_int_eq(drain(f.rd, 0), 0);
	CTL(f.base, 0)->dropped = 2;
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 64), -EPROTO);
	ck_assert_ptr_nonnull(strstr(shmreader_error(f.rd), "dropped"));
	fix_close(&f);
}
END_TEST

/* ---- epochs ---- */

START_TEST(test_waiting_then_ok)
{
	void *base = region_new(RSIZE);
	struct shm_reader *rd = shmreader_attach(base, RSIZE);
	struct shm_writer *w;
	struct vn_shm_header h;
	struct vn_shm_status st;

	ck_assert_ptr_nonnull(rd);
	memset(&col, 0, sizeof(col));
	ck_assert_int_eq(shmreader_state(rd), SHMREADER_WAITING);
	ck_assert_int_eq(shmreader_poll(rd, 0, col_cb, &col, 8), -EAGAIN);
	ck_assert_int_eq(shmreader_status(rd, &st), -ENOTCONN);
	ck_assert_int_eq(shmreader_header(rd, &h), -ENOTCONN);
	ck_assert_uint_eq(shmreader_nrings(rd), 0);
	ck_assert_uint_eq(stats(rd).corrupt, 0);
	w = shmwriter_init(base, RSIZE, 1, 8, 5);
	ck_assert_ptr_nonnull(w);
	put_rec(w, 0, 0);
	ck_assert_int_eq(shmreader_poll(rd, 0, col_cb, &col, 8), 1);
	ck_assert_int_eq(shmreader_state(rd), SHMREADER_OK);
	ck_assert_uint_eq(stats(rd).epochs, 1);
	/* epoch 0 again: the guest is re-initialising */
	H(base)->epoch = 0;
	ck_assert_int_eq(shmreader_poll(rd, 0, col_cb, &col, 8), -EAGAIN);
	ck_assert_uint_eq(stats(rd).corrupt, 0);
	shmreader_detach(rd);
	shmwriter_free(w);
	free(base);
}
END_TEST

START_TEST(test_new_epoch_new_geometry)
{
	struct fix f;
	uint64_t t;

	fix_open(&f, RSIZE, 2, 64, 7);
	for (t = 0; t < 5; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(drain(f.rd, 0), 5);
	fix_reinit(&f, 3, 32, 8);
	put_rec(f.w, 2, 0);
	put_rec(f.w, 2, 1);
	ck_assert_int_eq(drain(f.rd, 2), 2);
	ck_assert_uint_eq(shmreader_nrings(f.rd), 3);
	ck_assert_uint_eq(col.pos[5], 0);
	ck_assert_uint_eq(col.pos[6], 1);
	ck_assert_uint_eq(stats(f.rd).epochs, 2);
	ck_assert_uint_eq(stats(f.rd).lost, 0);
	/* a guest that only bumps the epoch keeps its records: the host restarts at what is there */
	H(f.base)->epoch = 9;
	ck_assert_int_eq(drain(f.rd, 2), 2);
	ck_assert_uint_eq(stats(f.rd).epochs, 3);
	fix_close(&f);
}
END_TEST

START_TEST(test_recover_from_corrupt)
{
	struct fix f;

	fix_open(&f, RSIZE, 1, 8, 7);
	H(f.base)->magic[1] = 'x';
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_CORRUPT);
	H(f.base)->magic[1] = 'N'; /* repaired, same epoch: no */
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_CORRUPT);
	fix_reinit(&f, 1, 8, 8);
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_OK);
	ck_assert_uint_eq(stats(f.rd).corrupt, 1);
	ck_assert_str_ne(shmreader_error(f.rd), ""); /* the last reason stays readable */
	fix_close(&f);
}
END_TEST

/* The guest restarts in the middle of a poll: nothing is miscounted as damage. */
struct reinit_ctx {
	struct fix *f;
	int done;
};

static void reinit_cb(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct reinit_ctx *r = ctx;

	col_cb(&col, ring, pos, rec);
	if (!r->done++)
		fix_reinit(r->f, 1, 8, 99);
}

START_TEST(test_epoch_changes_during_poll)
{
	struct fix f;
	struct reinit_ctx r = { &f, 0 };
	uint64_t t;

	fix_open(&f, RSIZE, 1, 8, 7);
	for (t = 0; t < 6; t++)
		put_rec(f.w, 0, t);
	ck_assert_int_eq(shmreader_poll(f.rd, 0, reinit_cb, &r, 64), 1);
	ck_assert_uint_eq(stats(f.rd).stale + stats(f.rd).invalid + stats(f.rd).torn, 0);
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_OK);
	ck_assert_uint_eq(stats(f.rd).epochs, 2);
	ck_assert_uint_eq(stats(f.rd).lost, 5);
	fix_close(&f);
}
END_TEST

/* ---- bounded work ---- */

START_TEST(test_bounded_records)
{
	struct fix f;
	uint64_t t;
	int i;

	fix_open(&f, RSIZE, 1, 128, 7);
	for (t = 0; t < 100; t++)
		put_rec(f.w, 0, t);
	for (i = 0; i < 10; i++)
		ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 10), 10);
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 10), 0);
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 0), 0);
	ck_assert_uint_eq(col.n, 100);
	fix_close(&f);
}
END_TEST

START_TEST(test_bounded_skips)
{
	struct fix f;
	struct shmreader_ring_info ri;
	uint64_t t;

	/* never-written slots behind a large head: at most max_records visited per call */
	fix_open(&f, RSIZE, 1, 64, 7);
	CTL(f.base, 0)->head = (1ull << 39) + 320; /* lap 2^33 + 4: seq 10 expected, 0 found */
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 16), 0);
	ck_assert_uint_eq(stats(f.rd).lost, (1ull << 39) + 320 - 56); /* 56 = 7/8 of the ring */
	ck_assert_uint_eq(stats(f.rd).stale, 16);
	ck_assert_int_eq(shmreader_ring_info(f.rd, 0, &ri), 0);
	ck_assert_uint_eq(ri.tail, (1ull << 39) + 320 - 56 + 16);
	fix_close(&f);
	/* torn slots: bounded retries */
	fix_open(&f, RSIZE, 1, 64, 7);
	for (t = 0; t < 64; t++) {
		put_rec(f.w, 0, t);
		SLOT(f.base, 0, t)->seq = 1;
	}
	ck_assert_int_eq(shmreader_poll(f.rd, 0, col_cb, &col, 5), 0);
	ck_assert_uint_eq(stats(f.rd).torn, 5);
	ck_assert_uint_eq(stats(f.rd).retries, 5 * 3);
	fix_close(&f);
}
END_TEST

/* The host's reader writes no byte of the region (its clock mailbox is in the DTL's host area). */
START_TEST(test_reader_writes_nothing)
{
	struct fix f;
	unsigned char *before = malloc(RSIZE);

	fix_open(&f, RSIZE, 2, 64, 7);
	for (uint64_t t = 0; t < 10; t++)
		put_rec(f.w, 0, t);
	memcpy(before, f.base, RSIZE);
	ck_assert_int_eq(drain(f.rd, 0), 10);
	ck_assert_int_eq(shmreader_status(f.rd, &(struct vn_shm_status){ 0 }), 0);
	ck_assert_int_eq(shmreader_check(f.rd), SHMREADER_OK);
	ck_assert_msg(!memcmp(f.base, before, RSIZE), "the reader wrote into the region");
	free(before);
	fix_close(&f);
}
END_TEST

/* ---- status ---- */

START_TEST(test_status)
{
	struct fix f;
	struct vn_shm_status st, out;
	struct vn_shm_status *live;

	fix_open(&f, RSIZE, 1, 8, 7);
	live = &H(f.base)->status;
	ck_assert_int_eq(shmreader_status(f.rd, &out), 0); /* all zero: INIT */
	ck_assert_uint_eq(out.agent_state, VN_SHM_AGENT_INIT);
	memset(&st, 0, sizeof(st));
	st.agent_state = VN_SHM_AGENT_RUNNING;
	st.guest_ncpus = 4;
	memset(st.boot_id, 0x11, sizeof(st.boot_id));
	st.agent_start_ns = 100;
	st.heartbeat_ns = 200;
	shmwriter_set_status(f.w, &st);
	ck_assert_int_eq(shmreader_status(f.rd, &out), 0);
	ck_assert_uint_eq(out.agent_state, VN_SHM_AGENT_RUNNING);
	ck_assert_uint_eq(out.guest_ncpus, 4);
	ck_assert_uint_eq(out.boot_id[15], 0x11);
	ck_assert_uint_eq(out.heartbeat_ns, 200);
	ck_assert_uint_eq(out.seq, 2);
	live->seq = 3;
	ck_assert_int_eq(shmreader_status(f.rd, &out), -EAGAIN);
	live->seq = 4;
	live->agent_state = VN_SHM_AGENT_MAX;
	ck_assert_int_eq(shmreader_status(f.rd, &out), -EBADMSG);
	live->agent_state = 1;
	live->guest_ncpus = VN_SHM_MAX_GUEST_CPUS + 1;
	ck_assert_int_eq(shmreader_status(f.rd, &out), -EBADMSG);
	live->guest_ncpus = 1;
	live->heartbeat_ns = 50;
	ck_assert_int_eq(shmreader_status(f.rd, &out), -EBADMSG);
	live->heartbeat_ns = 0;
	live->reserved[2] = 1;
	ck_assert_int_eq(shmreader_status(f.rd, &out), -EBADMSG);
	live->reserved[2] = 0;
	live->pad = 1;
	ck_assert_int_eq(shmreader_status(f.rd, &out), -EBADMSG);
	ck_assert_uint_eq(stats(f.rd).status_invalid, 5);
	ck_assert_int_eq(shmreader_state(f.rd), SHMREADER_OK); /* status is not geometry */
	fix_close(&f);
}
END_TEST

/* ---- concurrency ---- */

struct prod_ctx {
	struct shm_writer *w;
	uint64_t n, errors;
	int stop;
};

static void *producer(void *arg)
{
	struct prod_ctx *p = arg;
	uint64_t t;

	for (t = 0; t < p->n; t++)
		if (put_rec_raw(p->w, 0, t))
			p->errors++;
	__atomic_store_n(&p->stop, 1, __ATOMIC_RELEASE);
	return NULL;
}

struct order_ctx {
	uint64_t next_pos; /* smallest position allowed next */
	uint64_t got, bad;
	int slow;
};

static void order_cb(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct order_ctx *o = ctx;

	if (pos < o->next_pos || !is_rec(rec, pos))
		o->bad++;
	o->next_pos = pos + 1;
	o->got++;
	if (o->slow && (o->got & 1023) == 0)
		usleep(50); /* a consumer that falls behind now and then */
}

static void run_race(int slow, uint32_t slots, uint64_t n)
{
	struct fix f;
	struct prod_ctx p;
	struct order_ctx o = { 0 };
	struct shmreader_stats s;
	uint64_t errs = 0;
	pthread_t th;
	int r;

	fix_open(&f, 1 << 20, 1, slots, 7);
	p.w = f.w;
	p.n = n;
	p.stop = 0;
	p.errors = 0;
	o.slow = slow;
	ck_assert_int_eq(pthread_create(&th, NULL, producer, &p), 0);
	while (!__atomic_load_n(&p.stop, __ATOMIC_ACQUIRE)) {
		if (shmreader_poll(f.rd, 0, order_cb, &o, 64) < 0)
			errs++;
	}
	pthread_join(th, NULL);
	while ((r = shmreader_poll(f.rd, 0, order_cb, &o, 64)) > 0)
		;
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(errs, 0);
	ck_assert_uint_eq(p.errors, 0);
	s = stats(f.rd);
	ck_assert_uint_eq(o.bad, 0);
	ck_assert_uint_eq(s.records, o.got);
	ck_assert_uint_eq(s.records + s.lost, n);
	ck_assert_uint_eq(s.torn + s.stale + s.invalid + s.corrupt, 0);
	if (slow)
		ck_assert_uint_gt(s.lost, 0);
	fprintf(stderr, "race slow=%d slots=%u: %llu records, %llu lost, %llu retries\n", slow,
		slots, (unsigned long long)s.records, (unsigned long long)s.lost,
		(unsigned long long)s.retries);
	fix_close(&f);
}

START_TEST(test_race_fast_consumer)
{
	run_race(0, 4096, 2000000);
}
END_TEST

START_TEST(test_race_small_ring)
{
	run_race(0, 16, 2000000);
}
END_TEST

START_TEST(test_race_slow_consumer)
{
	run_race(1, 256, 2000000);
}
END_TEST

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- hostile guest ---- */

#define HNR 4u /* the clean geometry the hostile guest re-initialises to */
#define HSL 256u

static void *scribbler(void *arg)
{
	struct hostile_ctx *h = arg;

	while (!__atomic_load_n(&h->stop, __ATOMIC_ACQUIRE))
		if (hostile_step(h))
			break;
	return NULL;
}

struct valid_ctx {
	uint64_t got, bad;
};

static void valid_cb(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct valid_ctx *v = ctx;

	v->got++;
	if (shmregion_record_valid(rec) != 0)
		v->bad++;
}

START_TEST(test_hostile_scribbler)
{
	const size_t size = 256 * 1024; /* HNR x HSL in the lower half */
	void *base = region_new(size);
	struct shm_reader *rd = shmreader_attach(base, size);
	struct hostile_ctx h = { 0 };
	struct valid_ctx v = { 0 };
	struct shmreader_stats s0, s1;
	struct vn_shm_status st;
	struct order_ctx o = { 0 };
	struct shm_writer *w;
	uint64_t t, loops = 0, states[3] = { 0 }, odd_ret = 0, start;
	pthread_t th;
	uint32_t r;

	ck_assert_ptr_nonnull(rd);
	ck_assert_uint_le(shmwriter_region_bytes(HNR, HSL), size / 2);
	h.base = base;
	h.size = size;
	h.nrings = HNR;
	h.slots = HSL;
	h.put = put_rec_raw;
	h.rng = 0x9e3779b97f4a7c15ull;
	h.epoch = 1000;
	h.w = shmwriter_init(base, size, HNR, HSL, h.epoch);
	ck_assert_ptr_nonnull(h.w);
	ck_assert_int_eq(pthread_create(&th, NULL, scribbler, &h), 0);
	start = now_ns();
	while (now_ns() - start < 2000000000ull) {
		for (r = 0; r < VN_SHM_MAX_RINGS; r++) {
			int n = shmreader_poll(rd, r, valid_cb, &v, 64);

			if (n == -EINVAL || n == -EAGAIN || n == -EPROTO)
				break;
			if (n < 0)
				odd_ret++;
		}
		(void)!shmreader_status(rd, &st);
		states[shmreader_state(rd)]++;
		loops++;
	}
	__atomic_store_n(&h.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	s0 = stats(rd);
	fprintf(
	    stderr,
	    "hostile: %llu guest ops, %llu clean re-inits; %llu poll rounds (waiting %llu ok %llu "
	    "corrupt %llu); records %llu lost %llu stale %llu torn %llu invalid %llu corrupt %llu "
	    "epochs %llu\n",
	    (unsigned long long)h.ops, (unsigned long long)h.reinits, (unsigned long long)loops,
	    (unsigned long long)states[0], (unsigned long long)states[1],
	    (unsigned long long)states[2], (unsigned long long)s0.records,
	    (unsigned long long)s0.lost, (unsigned long long)s0.stale, (unsigned long long)s0.torn,
	    (unsigned long long)s0.invalid, (unsigned long long)s0.corrupt,
	    (unsigned long long)s0.epochs);
	ck_assert_uint_eq(h.errors, 0);
	ck_assert_uint_eq(odd_ret, 0);
	ck_assert_uint_eq(v.bad, 0);
	ck_assert_uint_gt(v.got, 0);
	ck_assert_uint_ge(s0.corrupt, 1);
	ck_assert_uint_gt(s0.epochs, 1); /* recovered at least once under fire */
	ck_assert_uint_gt(s0.stale + s0.invalid + s0.torn, 0);
	ck_assert_uint_gt(states[SHMREADER_OK], 0);
	ck_assert_uint_gt(states[SHMREADER_CORRUPT], 0);
	/* a clean restart of the guest agent: a new epoch, and records flow again, exactly */
	shmwriter_free(h.w);
	w = shmwriter_init(base, size, HNR, HSL, 0x5eed5eed5eed5eedull);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(shmreader_check(rd), SHMREADER_OK);
	for (t = 0; t < 200; t++)
		put_rec(w, 2, t);
	while (shmreader_poll(rd, 2, order_cb, &o, 64) > 0)
		;
	s1 = stats(rd);
	ck_assert_uint_eq(o.got, 200);
	ck_assert_uint_eq(o.bad, 0);
	ck_assert_uint_eq(s1.records - s0.records, 200);
	ck_assert_uint_eq(s1.invalid + s1.stale + s1.torn, s0.invalid + s0.stale + s0.torn);
	shmreader_detach(rd);
	shmwriter_free(w);
	free(base);
}
END_TEST

/* Random regions and random single-byte damage to a valid one: never a crash or an invalid delivery. */
START_TEST(test_random_regions)
{
	const size_t size = 16 * 1024;
	uint64_t rng = 12345;
	struct valid_ctx v = { 0 };
	int iter, r, k;

	for (iter = 0; iter < 3000; iter++) {
		void *base = region_new(size);
		unsigned char *b = base;
		struct shm_writer *w =
		    shmwriter_init(base, size, 1 + iter % 3, 8 << (iter % 3), 1 + iter);
		struct shm_reader *rd;
		uint64_t t;
		size_t i;

		ck_assert_ptr_nonnull(w);
		for (t = 0; t < (uint64_t)(iter % 50); t++)
			put_rec(w, (uint32_t)(t % (1 + iter % 3)), t);
		if (iter % 10 == 0) {
			for (i = 0; i < size; i++)
				b[i] = (unsigned char)xrand(&rng);
		} else {
			for (k = 0; k < 1 + iter % 4; k++)
				b[xrand(&rng) %
				  shmwriter_region_bytes(1 + iter % 3, 8 << (iter % 3))] ^=
				    (unsigned char)(1u << (xrand(&rng) % 8));
		}
		rd = shmreader_attach(base, size);
		ck_assert_ptr_nonnull(rd);
		for (k = 0; k < 3; k++)
			for (r = 0; r < 4; r++)
				(void)!shmreader_poll(rd, (uint32_t)r, valid_cb, &v, 32);
		shmreader_detach(rd);
		shmwriter_free(w);
		free(base);
	}
	ck_assert_uint_eq(v.bad, 0);
	ck_assert_uint_gt(v.got, 0);
}
END_TEST

static Suite *shmreader_suite(void)
{
	Suite *s = suite_create("shmreader");
	TCase *tc;

	tc = tcase_create("attach");
	tcase_add_test(tc, test_attach_args);
	suite_add_tcase(s, tc);

	tc = tcase_create("roundtrip");
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_put_normalises);
	tcase_add_test(tc, test_put_bad_args);
	suite_add_tcase(s, tc);

	tc = tcase_create("wrap");
	tcase_add_test(tc, test_wrap_many_laps);
	tcase_add_test(tc, test_wrap_seq_u32);
	suite_add_tcase(s, tc);

	tc = tcase_create("overrun");
	tcase_add_test(tc, test_overrun_exact);
	tcase_add_test(tc, test_overrun_during_poll);
	tcase_add_test(tc, test_overrun_slot_being_rewritten);
	tcase_add_test(tc, test_lost_at_epoch_end);
	tcase_add_test(tc, test_missed_at_attach);
	suite_add_tcase(s, tc);

	tc = tcase_create("torn_stale");
	tcase_add_test(tc, test_torn_skipped);
	tcase_add_test(tc, test_stale_skipped);
	tcase_add_test(tc, test_newer_lap_head_denies);
	suite_add_tcase(s, tc);

	tc = tcase_create("invalid_payload");
	tcase_add_loop_test(tc, test_invalid_payloads, 0, (int)(sizeof(pmuts) / sizeof(pmuts[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("header");
	tcase_add_loop_test(tc, test_header_live_corruption, 0, NHMUT);
	tcase_add_loop_test(tc, test_header_corrupt_at_attach, 0, NHMUT);
	tcase_add_test(tc, test_header_new_epoch_invalid);
	tcase_add_test(tc, test_header_mapping_smaller);
	tcase_add_test(tc, test_header_reserved1);
	tcase_add_test(tc, test_counters_backwards);
	suite_add_tcase(s, tc);

	tc = tcase_create("epoch");
	tcase_add_test(tc, test_waiting_then_ok);
	tcase_add_test(tc, test_new_epoch_new_geometry);
	tcase_add_test(tc, test_recover_from_corrupt);
	tcase_add_test(tc, test_epoch_changes_during_poll);
	suite_add_tcase(s, tc);

	tc = tcase_create("bounded");
	tcase_add_test(tc, test_bounded_records);
	tcase_add_test(tc, test_bounded_skips);
	suite_add_tcase(s, tc);

	tc = tcase_create("read_only");
	tcase_add_test(tc, test_reader_writes_nothing);
	suite_add_tcase(s, tc);

	tc = tcase_create("status");
	tcase_add_test(tc, test_status);
	suite_add_tcase(s, tc);

	tc = tcase_create("concurrent");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_race_fast_consumer);
	tcase_add_test(tc, test_race_small_ring);
	tcase_add_test(tc, test_race_slow_consumer);
	tcase_add_test(tc, test_hostile_scribbler);
	tcase_add_test(tc, test_random_regions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(shmreader_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
