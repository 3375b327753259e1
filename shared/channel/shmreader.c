/* SPDX-License-Identifier: MIT */
/*
 * shmreader: the host consumer of the shared-memory channel (protocol/shm.h). See shmreader.h for the
 * contracts and shmregion.h for the memory ordering. The host's view of shared memory is racy by nature (the
 * guest may be hostile): nothing read from it is trusted before it is validated, and no address is ever
 * computed from a value that was not validated against the host's own mapping size.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "channel/shmreader.h"
#include "channel/shmreader_priv.h"
#include "channel/shmregion.h"
#include "util/satadd.h"

#define SHMREADER_RETRIES 3 /* extra copies of a slot that changed under the copy */
/* A head advancing more than this between two looks is corruption (2^40 records: a day at 10 M/s). */
#define SHMREADER_MAX_HEAD_JUMP (1ull << 40)

/*
 * Records kept behind the head when the reader resumes after falling a lap behind: 7/8 of the ring. Resuming
 * a full ring behind would put the reader on the very slot the producer overwrites next, and a reader that
 * races the producer slot by slot slows down (every line it reads is being written) and never catches up.
 */
static uint64_t keep_after_overrun(uint32_t slots)
{
	return slots - (slots >> 3);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

struct shmreader_ring_state {
	uint64_t tail; /* next position to read */
	uint64_t head; /* producer head at the last look */
	uint64_t dropped; /* producer dropped counter at the last look */
	uint64_t horizon; /* producer horizon at the last look */
};

struct shm_reader {
	const unsigned char *base;
	size_t mapped;
	enum shmreader_state state;
	uint64_t epoch; /* OK: attached epoch; CORRUPT: the condemned one; WAITING: last attached */
	struct vn_shm_header hdr; /* validated copy (OK) */
	uint32_t nrings, slots, shift, mask;
	const struct vn_shm_ring *ctl;
	const struct vn_shm_slot *slot0;
	struct shmreader_ring_state ring[VN_SHM_MAX_RINGS];
	struct shmreader_stats st;
	char why[192];
};

static const struct vn_shm_header *live_hdr(const struct shm_reader *rd)
{
	return (const struct vn_shm_header *)rd->base;
}

/* The records published but not read in the epoch being left are lost. */
static void epoch_end(struct shm_reader *rd)
{
	uint32_t r;

	for (r = 0; r < rd->nrings; r++)
		sat_inc64(&rd->st.lost, rd->ring[r].head - rd->ring[r].tail);
	rd->nrings = 0;
}

__attribute__((format(printf, 3, 4))) static void go_corrupt(struct shm_reader *rd, uint64_t epoch,
							     const char *fmt, ...)
{
	va_list ap;

	if (rd->state == SHMREADER_OK)
		epoch_end(rd);
	if (rd->state != SHMREADER_CORRUPT)
		sat_inc64(&rd->st.corrupt, 1);
	rd->state = SHMREADER_CORRUPT;
	rd->epoch = epoch;
	va_start(ap, fmt);
	vsnprintf(rd->why, sizeof(rd->why), fmt, ap);
	va_end(ap);
}

/* Attach to epoch e if the header is stable and valid. */
static void try_attach(struct shm_reader *rd, uint64_t e)
{
	const struct vn_shm_header *live = live_hdr(rd);
	struct vn_shm_header h;
	char why[160];
	uint32_t r;

	memcpy(&h, live, sizeof(h));
	SHM_FENCE_ACQ();
	if (SHM_LOAD_RLX(&live->epoch) != e || h.epoch != e) {
		sat_inc64(&rd->st.retries, 1); /* being rewritten: look again next time */
		return;
	}
	if (shmregion_header_valid(&h, rd->mapped, why, sizeof(why)) < 0) {
		go_corrupt(rd, e, "epoch %llu: %s", (unsigned long long)e, why);
		return;
	}
	rd->hdr = h;
	rd->nrings = h.nrings;
	rd->slots = h.slots_per_ring;
	rd->shift = shmregion_shift(h.slots_per_ring);
	rd->mask = h.slots_per_ring - 1;
	rd->ctl = (const struct vn_shm_ring *)(rd->base + h.ring_ctl_offset);
	rd->slot0 = (const struct vn_shm_slot *)(rd->base + h.slots_offset);
	for (r = 0; r < rd->nrings; r++) {
		struct shmreader_ring_state *rs = &rd->ring[r];

		rs->horizon = 0; /* the first look takes whatever the guest says */
		rs->head = SHM_LOAD_ACQ(&rd->ctl[r].head);
		rs->dropped = SHM_LOAD_RLX(&rd->ctl[r].dropped);
		rs->tail = rs->head > rd->slots ? rs->head - keep_after_overrun(rd->slots) : 0;
		sat_inc64(&rd->st.missed, rs->tail);
		sat_inc64(&rd->st.producer_dropped, rs->dropped);
	}
	rd->epoch = e;
	rd->state = SHMREADER_OK;
	sat_inc64(&rd->st.epochs, 1);
}

enum shmreader_state shmreader_check(struct shm_reader *rd)
{
	const struct vn_shm_header *live = live_hdr(rd);
	unsigned char cur[VN_SHM_IMMUTABLE_SIZE];
	uint64_t e = SHM_LOAD_ACQ(&live->epoch);

	if (rd->state == SHMREADER_OK) {
		if (e == rd->epoch) {
			memcpy(cur, live, sizeof(cur));
			SHM_FENCE_ACQ();
			if (!memcmp(cur, &rd->hdr, sizeof(cur)))
				return SHMREADER_OK;
			e = SHM_LOAD_RLX(&live->epoch);
			if (e == rd->epoch) {
				go_corrupt(rd, e, "header changed under epoch %llu",
					   (unsigned long long)e);
				return rd->state;
			}
		}
		epoch_end(rd);
		rd->state = SHMREADER_WAITING;
	}
	if (e == 0 || (rd->state == SHMREADER_CORRUPT && e == rd->epoch))
		return rd->state;
	try_attach(rd, e);
	return rd->state;
}

struct shm_reader *shmreader_attach(const void *base, size_t mapped_size)
{
	struct shm_reader *rd = NULL;

	if (!base || ((uintptr_t)base & (VN_SHM_ALIGN - 1)) || mapped_size < VN_SHM_HEADER_SIZE) {
		errno = EINVAL;
		goto out;
	}
	rd = calloc(1, sizeof(*rd));
	if (!rd) {
		errno = ENOMEM;
		goto out;
	}
	rd->base = base;
	rd->mapped = mapped_size;
	rd->state = SHMREADER_WAITING;
	(void)shmreader_check(rd);
out:
	return rd;
}

void shmreader_detach(struct shm_reader *rd)
{
	free(rd);
}

enum shmreader_state shmreader_state(const struct shm_reader *rd)
{
	return rd->state;
}

const char *shmreader_state_name(enum shmreader_state s)
{
	switch (s) {
	case SHMREADER_WAITING:
		return "waiting";
	case SHMREADER_OK:
		return "ok";
	case SHMREADER_CORRUPT:
		return "corrupt";
	}
	return "?";
}

const char *shmreader_error(const struct shm_reader *rd)
{
	return rd->why;
}

int shmreader_header(const struct shm_reader *rd, struct vn_shm_header *out)
{
	if (rd->state != SHMREADER_OK)
		return -ENOTCONN;
	*out = rd->hdr;
	return 0;
}

uint32_t shmreader_nrings(const struct shm_reader *rd)
{
	return rd->state == SHMREADER_OK ? rd->nrings : 0;
}

void shmreader_stats(const struct shm_reader *rd, struct shmreader_stats *out)
{
	*out = rd->st;
}

int shmreader_ring_info(const struct shm_reader *rd, uint32_t ring, struct shmreader_ring_info *out)
{
	if (rd->state != SHMREADER_OK || ring >= rd->nrings)
		return -EINVAL;
	out->tail = rd->ring[ring].tail;
	out->head = rd->ring[ring].head;
	out->dropped = rd->ring[ring].dropped;
	out->horizon_ns = rd->ring[ring].horizon;
	return 0;
}

static int epoch_moved(const struct shm_reader *rd)
{
	return SHM_LOAD_RLX(&live_hdr(rd)->epoch) != rd->epoch;
}

/* Take a new look at the ring's counters; returns 0 or -EPROTO (went CORRUPT). */
static int ring_refresh(struct shm_reader *rd, uint32_t ring, uint64_t *head)
{
	struct shmreader_ring_state *rs = &rd->ring[ring];
	uint64_t hz = SHM_LOAD_ACQ(&rd->ctl[ring].horizon_ns); /* before head: head covers it */
	uint64_t h = SHM_LOAD_ACQ(&rd->ctl[ring].head);
	uint64_t d = SHM_LOAD_RLX(&rd->ctl[ring].dropped);

	if (h < rs->head || h - rs->head > SHMREADER_MAX_HEAD_JUMP) {
		go_corrupt(rd, rd->epoch, "ring %u: head %llu after %llu", ring,
			   (unsigned long long)h, (unsigned long long)rs->head);
		return -EPROTO;
	}
	if (d < rs->dropped) {
		go_corrupt(rd, rd->epoch, "ring %u: dropped %llu after %llu", ring,
			   (unsigned long long)d, (unsigned long long)rs->dropped);
		return -EPROTO;
	}
	if (hz < rs->horizon) {
		go_corrupt(rd, rd->epoch, "ring %u: horizon %llu after %llu", ring,
			   (unsigned long long)hz, (unsigned long long)rs->horizon);
		return -EPROTO;
	}
	sat_inc64(&rd->st.producer_dropped, d - rs->dropped);
	rs->dropped = d;
	rs->horizon = hz;
	rs->head = h;
	*head = h;
	return 0;
}

enum slot_verdict { SLOT_GOOD, SLOT_NEWER, SLOT_STALE, SLOT_TORN };

int shmreader_poll(struct shm_reader *rd, uint32_t ring, shmreader_cb cb, void *ctx,
		   uint32_t max_records)
{
	const struct vn_shm_slot *slots, *sl;
	struct shmreader_ring_state *rs;
	enum slot_verdict v;
	struct vn_shm_slot copy;
	uint64_t head, pos, nt;
	uint32_t visits = 0, expect, s1, s2;
	int n = 0, tries;

	switch (shmreader_check(rd)) {
	case SHMREADER_WAITING:
		return -EAGAIN;
	case SHMREADER_CORRUPT:
		return -EPROTO;
	case SHMREADER_OK:
		break;
	}
	if (ring >= rd->nrings || !cb)
		return -EINVAL;
	rs = &rd->ring[ring];
	if (ring_refresh(rd, ring, &head) < 0)
		return -EPROTO;
	if (head - rs->tail > rd->slots) {
		nt = head - keep_after_overrun(rd->slots);
		sat_inc64(&rd->st.lost, nt - rs->tail);
		rs->tail = nt;
	}
	slots = rd->slot0 + ((size_t)ring << rd->shift);
	while (rs->tail < rs->head && visits < max_records) {
		visits++;
		pos = rs->tail;
		sl = &slots[pos & rd->mask];
		expect = (uint32_t)(pos >> rd->shift) * 2u + 2u;
		for (tries = 0;; tries++) {
			s1 = SHM_LOAD_ACQ(&sl->seq);
			memcpy(&copy, sl, sizeof(copy));
			SHM_FENCE_ACQ();
			s2 = SHM_LOAD_RLX(&sl->seq);
			if (s1 == expect && s2 == expect) {
				v = SLOT_GOOD;
				break;
			}
			if ((int32_t)(s1 - expect) > 0 || (int32_t)(s2 - expect) > 0) {
				v = SLOT_NEWER;
				break;
			}
			if (s1 == s2 && !(s1 & 1u)) {
				v = SLOT_STALE;
				break;
			}
			if (tries == SHMREADER_RETRIES) {
				v = SLOT_TORN;
				break;
			}
			sat_inc64(&rd->st.retries, 1);
			cpu_relax();
		}
		if (v == SLOT_GOOD && shmregion_record_valid(&copy) == 0) {
			rs->tail = pos + 1;
			sat_inc64(&rd->st.records, 1);
			n++;
			cb(ctx, ring, pos, &copy);
			continue;
		}
		if (v == SLOT_NEWER) {
			/* The producer lapped us: its head must say so, or the slot lies. */
			if (ring_refresh(rd, ring, &head) < 0)
				return -EPROTO;
			if (head - pos >= rd->slots) {
				nt = head - keep_after_overrun(rd->slots);
				nt = nt > pos + 1 ? nt : pos + 1;
				sat_inc64(&rd->st.lost, nt - pos);
				rs->tail = nt;
				continue;
			}
		}
		/* Anomaly: if the guest is re-initialising, leave it to the next check. */
		if (epoch_moved(rd))
			break;
		rs->tail = pos + 1;
		/* invalid: bad content, or a newer lap the head denies */
		if (v == SLOT_STALE)
			sat_inc64(&rd->st.stale, 1);
		else if (v == SLOT_TORN)
			sat_inc64(&rd->st.torn, 1);
		else
			sat_inc64(&rd->st.invalid, 1);
	}
	return n;
}

/* shmregion_seq_copy, counting a copy the guest disturbed as a retry. */
static int seq_copy(struct shm_reader *rd, const uint32_t *seq, const void *src, void *dst,
		    size_t len)
{
	if (shmregion_seq_copy(seq, src, dst, len) < 0) {
		sat_inc64(&rd->st.retries, 1);
		return -EAGAIN;
	}
	return 0;
}

int shmreader_status(struct shm_reader *rd, struct vn_shm_status *out)
{
	const struct vn_shm_status *m = &live_hdr(rd)->status;
	struct vn_shm_status c;

	if (rd->state != SHMREADER_OK)
		return -ENOTCONN;
	if (seq_copy(rd, &m->seq, m, &c, sizeof(c)))
		return -EAGAIN;
	if (shmregion_status_valid(&c) < 0) {
		sat_inc64(&rd->st.status_invalid, 1);
		return -EBADMSG;
	}
	*out = c;
	return 0;
}
