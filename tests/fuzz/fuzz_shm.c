/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the host side of the shared-memory channel (shared/channel/shmreader, protocol/shm.h) on
 * hostile regions. The first input byte picks how the region is made:
 *   0  raw: the rest of the input is the region image, mapped to the byte (any overread is an ASan error);
 *   1  scripted: a guest writer lays out a valid region and the input is a program of operations (put
 *      records, poll, damage bytes, set heads, re-initialise under a new epoch, bytes in the reserved v1
 *      mailbox, status) run against one reader; while no damage was done since the last re-initialisation, every record
 *      delivered must be byte-identical to what was published at its position, in order;
 *   2  near-valid: a valid region full of records, with the input XORed over it.
 * The reader runs attach, check, poll on every ring and status each round. Nothing
 * may crash, overread, leak or deliver a record that fails validation. Build and run:
 *   make build-fuzz/fuzz_shm && build-fuzz/fuzz_shm -max_total_time=60 -max_len=20000
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_input.h"
#include "channel/shmreader.h"
#include "channel/shmregion.h"
#include "channel/shmwriter.h"

#define SCRIPT_SIZE \
	65536u /* region of the scripted and near-valid modes (the guest area: its lower half) */
#define SHADOW 64u /* >= the largest slots_per_ring the script uses */

struct ctx {
	int oracle; /* no damage since the last re-initialisation: deliveries must match */
	uint64_t next_pos[VN_SHM_MAX_RINGS]; /* per ring: smallest position allowed next */
	struct vn_shm_slot shadow[4][SHADOW]; /* scripted: the last slots published, by position */
	uint64_t published[4]; /* scripted mode: records published per ring (the head) */
};

static void deliver(void *arg, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct ctx *c = arg;

	if (shmregion_record_valid(rec) != 0 || ring >= VN_SHM_MAX_RINGS)
		abort(); /* the reader's contract: only validated copies */
	if (!c->oracle)
		return;
	if (pos < c->next_pos[ring] || ring >= 4 || pos >= c->published[ring] ||
	    c->published[ring] - pos > SHADOW ||
	    memcmp(rec, &c->shadow[ring][pos % SHADOW], sizeof(*rec)))
		abort(); /* an undamaged channel delivers what was published, in order */
	c->next_pos[ring] = pos + 1;
}

/* One round of everything the host does with a region. */
static void host_round(struct shm_reader *rd, struct ctx *c, uint32_t budget)
{
	struct vn_shm_status st;
	struct vn_shm_header h;
	struct shmreader_ring_info ri;
	uint32_t r, n;

	(void)shmreader_check(rd);
	n = shmreader_nrings(rd);
	for (r = 0; r < n && r < VN_SHM_MAX_RINGS; r++) {
		(void)!shmreader_poll(rd, r, deliver, c, budget);
		(void)!shmreader_ring_info(rd, r, &ri);
	}
	(void)!shmreader_poll(rd, VN_SHM_MAX_RINGS, deliver, c, budget); /* out of range */
	(void)!shmreader_status(rd, &st);
	(void)!shmreader_header(rd, &h);
}

static void *region_new(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, size))
		return NULL;
	memset(p, 0, size);
	return p;
}

static void fuzz_raw(const uint8_t *data, size_t size)
{
	struct ctx c = { 0 };
	struct shm_reader *rd;
	void *base;
	int i;

	if (size < VN_SHM_HEADER_SIZE)
		return;
	base = region_new(size);
	if (!base)
		return;
	memcpy(base, data, size);
	rd = shmreader_attach(base, size);
	for (i = 0; rd && i < 3; i++) {
		host_round(rd, &c, 64);
		((struct vn_shm_header *)base)->epoch += 1; /* as if the guest restarted */
	}
	shmreader_detach(rd);
	free(base);
}

/* Remember the slot just published in ring (the header is intact while the oracle is on). */
static void published(struct ctx *c, void *base, uint32_t ring)
{
	const struct vn_shm_header *hd = base;
	uint64_t pos = c->published[ring]++;

	if (c->oracle)
		c->shadow[ring][pos % SHADOW] =
		    ((const struct vn_shm_slot
			  *)((char *)base + hd->slots_offset))[(size_t)ring * hd->slots_per_ring +
							       (pos & (hd->slots_per_ring - 1))];
}

static struct shm_writer *script_init(void *base, struct ctx *c, struct fuzz_in *in, uint64_t epoch,
				      uint32_t *nrings)
{
	uint8_t g = fuzz_u8(in);
	struct shm_writer *w;

	*nrings = 1 + g % 4;
	w = shmwriter_init(base, SCRIPT_SIZE, *nrings, 1u << ((g >> 2) % 7),
			   epoch); /* 1 .. 64 slots */
	memset(c->next_pos, 0, sizeof(c->next_pos));
	memset(c->published, 0, sizeof(c->published));
	c->oracle = 1;
	return w;
}

static void fuzz_script(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct ctx c = { 0 };
	struct shm_writer *w;
	struct shm_reader *rd = NULL;
	uint64_t epoch = 1;
	uint32_t nrings, steps = 0;
	void *base = region_new(SCRIPT_SIZE);

	if (!base)
		return;
	w = script_init(base, &c, &in, epoch, &nrings);
	if (!w)
		goto out;
	rd = shmreader_attach(base, SCRIPT_SIZE);
	while (rd && in.n && steps++ < 4096) {
		uint8_t op = fuzz_u8(&in), a = fuzz_u8(&in);
		uint32_t ring = a % nrings;

		switch (op % 8) {
		case 0: { /* publish a sample */
			struct vn_sample sm;

			fuzz_bytes(&in, &sm, sizeof(sm));
			if (shmwriter_put_sample(w, ring, &sm) == 0)
				published(&c, base, ring);
			break;
		}
		case 1: { /* publish an event (as given: it may be invalid, then it is skipped) */
			struct vn_event e;

			fuzz_bytes(&in, &e, sizeof(e));
			if (shmwriter_put_event(w, ring, &e) == 0)
				published(&c, base, ring);
			break;
		}
		case 2: /* poll */
			(void)!shmreader_poll(rd, ring, deliver, &c, fuzz_u8(&in));
			break;
		case 3: { /* damage bytes anywhere */
			uint32_t off = (uint32_t)(fuzz_u8(&in) | fuzz_u8(&in) << 8) % SCRIPT_SIZE;
			uint8_t len = 1 + a % 8, k;

			for (k = 0; k < len && off + k < SCRIPT_SIZE; k++)
				((uint8_t *)base)[off + k] = fuzz_u8(&in);
			c.oracle = 0;
			break;
		}
		case 4: /* set a head */
			((struct vn_shm_ring *)((char *)base + VN_SHM_HEADER_SIZE))[ring].head =
			    fuzz_u64(&in);
			c.oracle = 0;
			break;
		case 5: /* the agent restarts */
			shmwriter_free(w);
			w = script_init(base, &c, &in, ++epoch, &nrings);
			if (!w)
				goto out;
			break;
		case 6: { /* bytes in the v1 clock mailbox (reserved since layout v2) */
			struct vn_shm_header *hd = base;

			fuzz_bytes(&in, &hd->mbox_host, sizeof(hd->mbox_host));
			fuzz_bytes(&in, &hd->mbox_guest, sizeof(hd->mbox_guest));
			c.oracle = 0;
			break;
		}
		case 7: { /* status */
			struct vn_shm_status s;

			fuzz_bytes(&in, &s, sizeof(s));
			shmwriter_set_status(w, &s);
			break;
		}
		}
		if (steps % 16 == 0)
			host_round(rd, &c, 64);
	}
	if (rd)
		host_round(rd, &c, 256);
out:
	shmreader_detach(rd);
	shmwriter_free(w);
	free(base);
}

static void fuzz_near_valid(const uint8_t *data, size_t size)
{
	struct ctx c = { 0 };
	struct shm_writer *w;
	struct shm_reader *rd = NULL;
	struct vn_sample s = { 0 };
	struct vn_event e = { 0 };
	void *base = region_new(SCRIPT_SIZE);
	uint8_t *b = base;
	uint32_t nrings, slots, r;
	uint64_t t;
	size_t i;

	if (!base || !size)
		goto out;
	nrings = 1 + data[0] % 4;
	slots = 1u << (data[0] >> 2) % 7;
	w = shmwriter_init(base, SCRIPT_SIZE, nrings, slots, 77);
	if (!w)
		goto out;
	for (t = 0; t < 3ull * slots; t++) {
		r = (uint32_t)(t % nrings);
		s.start_ns = t * 100;
		s.end_ns = t * 100 + 50;
		e.start_ns = t * 100;
		e.end_ns = t * 100 + 80;
		e.net_ns = 60;
		e.cls = VN_CLASS_IRQ;
		(void)!(t & 1 ? shmwriter_put_event(w, r, &e) : shmwriter_put_sample(w, r, &s));
	}
	rd = shmreader_attach(base, SCRIPT_SIZE);
	host_round(rd, &c, 8);
	for (i = 1; i < size && i - 1 < SCRIPT_SIZE; i++)
		b[i - 1] ^= data[i];
	if (rd) {
		host_round(rd, &c, 64);
		host_round(rd, &c, 64);
	}
	shmwriter_free(w);
out:
	shmreader_detach(rd);
	free(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_raw(data + 1, size - 1);
		break;
	case 1:
		fuzz_script(data + 1, size - 1);
		break;
	case 2:
		fuzz_near_valid(data + 1, size - 1);
		break;
	}
	return 0;
}
