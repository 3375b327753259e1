/* SPDX-License-Identifier: MIT */
/*
 * shm_hostile: a hostile guest for the shared-memory channel, shared by the unit suite (check_shmreader, a
 * thread against an in-process reader) and the VM test tool (tests/vm/shmscribble, against vnoise-host
 * reading a real domain's region). It produces valid records and, in between, damages everything it can:
 * slot sequence words and payloads (including valid-looking fakes), ring heads (forwards, backwards,
 * absurd), status and its mailbox part, random bytes anywhere, header fields with adversarial
 * values, the epoch. Every reinit_every operations it re-initialises cleanly under a new epoch, as a
 * restarted agent would. Test code: include it in one translation unit.
 */
#ifndef VNOISE_TESTS_SHM_HOSTILE_H
#define VNOISE_TESTS_SHM_HOSTILE_H

#include <stdint.h>
#include <string.h>
#include "shm.h"
#include "channel/shmwriter.h"

struct hostile_ctx {
	void *base;
	size_t size;
	uint32_t nrings, slots; /* the clean geometry it re-initialises to */
	uint64_t reinit_every; /* operations between clean re-initialisations (0: 50000) */
	int rings_only; /* no header or epoch games (the reader stays attached and reads damaged rings) */
	uint64_t rng;
	int stop;
	struct shm_writer *w; /* owned by the scribbler while it runs */
	uint64_t epoch; /* of the last clean re-initialisation */
	uint64_t ops, reinits, errors;
	/* a valid record number t into ring (0 or an error) */
	int (*put)(struct shm_writer *w, uint32_t ring, uint64_t t);
};

static inline uint64_t xrand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static inline struct vn_shm_slot *hslot(const struct hostile_ctx *h, uint64_t v)
{
	uint64_t so = VN_SHM_HEADER_SIZE + h->nrings * sizeof(struct vn_shm_ring);

	return (struct vn_shm_slot *)((unsigned char *)h->base + so) +
	       v % ((uint64_t)h->nrings * h->slots);
}

/* One operation; returns 0, or -1 when a clean re-initialisation failed. */
static inline int hostile_step(struct hostile_ctx *h)
{
	unsigned char *b = h->base;
	struct vn_shm_header *hd = h->base;
	struct vn_shm_ring *c;
	struct vn_shm_slot *s;
	uint64_t v, off, k, op;
	uint64_t every = h->reinit_every ? h->reinit_every : 50000;

	v = xrand(&h->rng);
	op = v % 100000;
	if (h->rings_only && op >= 99980)
		op = 0;
	v = xrand(&h->rng);
	if (++h->ops % every == 0) {
		shmwriter_free(h->w);
		h->w = shmwriter_init(h->base, h->size, h->nrings, h->slots, ++h->epoch);
		if (!h->w) {
			h->errors++;
			return -1;
		}
		h->reinits++;
	} else if (op < 50000) {
		if (h->put(h->w, (uint32_t)(v % h->nrings), v >> 8))
			h->errors++;
	} else if (op < 70000) { /* slot sequence words: odd, newer, random */
		s = hslot(h, v >> 8);
		s->seq = v % 3 == 0 ? s->seq | 1u : v % 3 == 1 ? s->seq + 2u : (uint32_t)(v >> 32);
	} else if (op < 80000) { /* payload bytes and types */
		s = hslot(h, v >> 8);
		s->payload.raw[(v >> 40) % VN_SHM_PAYLOAD_SIZE] = (unsigned char)v;
		if (v % 5 == 0)
			s->type = (uint16_t)(v >> 16);
	} else if (op < 88000) { /* a valid-looking fake in a random slot and lap */
		s = hslot(h, v >> 8);
		s->seq = (uint32_t)((v >> 20) % 64) * 2u;
		s->type = VN_SHM_REC_SAMPLE;
		s->pad = 0;
		memset(s->payload.raw, 0, sizeof(s->payload.raw));
		s->payload.sample.start_ns = v >> 4;
		s->payload.sample.end_ns = (v >> 4) + (v % 1000);
	} else if (op < 99900) { /* status, the guest's mailbox part */
		b[128 + v % 64] = (unsigned char)(v >> 24);
		b[256 + (v >> 8) % 64] = (unsigned char)(v >> 32);
	} else if (op < 99950) { /* heads running ahead (the producer's next put moves them back) */
		c = (struct vn_shm_ring *)(b + VN_SHM_HEADER_SIZE) + (v >> 8) % h->nrings;
		c->head += 1 + (v >> 20) % 1000;
	} else if (op < 99970) { /* random bytes anywhere */
		off = (v >> 8) % h->size;
		for (k = 0; k < 1 + v % 64 && off + k < h->size; k++)
			b[off + k] = (unsigned char)xrand(&h->rng);
	} else if (op < 99980) { /* heads backwards or absurd, dropped counters, horizons */
		c = (struct vn_shm_ring *)(b + VN_SHM_HEADER_SIZE) + (v >> 8) % h->nrings;
		if (v % 4 == 0)
			c->head -= 1;
		else if (v % 4 == 1)
			c->head = UINT64_MAX - (v >> 60);
		else if (v % 4 == 2)
			c->dropped = v >> 20;
		else
			c->horizon_ns = v % 2 ? v : c->horizon_ns - 1;
	} else if (op < 99990) { /* header bytes and adversarial geometry */
		switch (v % 7) {
		case 0:
			hd->nrings = (uint32_t)(v >> 8);
			break;
		case 1:
			hd->slots_per_ring = 1u << ((v >> 8) % 32);
			break;
		case 2:
			hd->slots_offset = (v >> 8) & ~63ull;
			break;
		case 3:
			hd->ring_ctl_offset = h->size - 64 * ((v >> 8) % 8);
			break;
		case 4:
			hd->reserved0[(v >> 8) % sizeof(hd->reserved0)] = (unsigned char)(v >> 32);
			break;
		case 5:
			hd->region_size = 1ull << ((v >> 8) % 64);
			break;
		case 6:
			b[(v >> 8) % VN_SHM_HEADER_SIZE] = (unsigned char)(v >> 32);
			break;
		}
	} else { /* epoch games: 0, a bump without re-initialising, random */
		hd->epoch = v % 3 == 0 ? 0 : v % 3 == 1 ? hd->epoch + 1 : v;
	}
	return 0;
}

#endif
