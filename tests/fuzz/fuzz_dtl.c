/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the guest's reader of the dispatch trace log (shared/channel/dtlreader, protocol/dtl.h) on
 * hostile host areas. The first input byte picks how the area is made:
 *   0  raw: the rest of the input is the area image, allocated to the byte (any overread is an ASan error);
 *   1  scripted: the host writer lays out a valid area and the input is a program of operations (put
 *      entries, causes, aggregates, status, clock requests, damage bytes, set heads, re-initialise under a new
 *      epoch, guest replies) run against one reader; while no damage was done since the last
 *      re-initialisation, the entries delivered must be exactly those put, in order;
 *   2  near-valid: a valid area full of entries, causes and aggregates, with the input XORed over it.
 * Each round the reader syncs, polls every vCPU, reads the status, the causes its entries name, every
 * aggregate and the mailbox. Nothing may crash, overread, leak, hang, or deliver an entry that fails
 * validation or goes back in time within an epoch. Build and run:
 *   make build-fuzz/fuzz_dtl && build-fuzz/fuzz_dtl -max_total_time=60 -max_len=20000
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_input.h"
#include "channel/dtlreader.h"
#include "channel/dtlregion.h"
#include "channel/dtlwriter.h"

#define AREA 16384u /* area of the scripted and near-valid modes */
#define NV 4u /* vCPUs of the scripted mode at most */
#define SHADOW 64u

struct ctx {
	struct dtl_reader *r;
	uint64_t epoch; /* the reader's epoch when last_end was set */
	uint64_t last_end[VN_DTL_MAX_VCPUS];
	int oracle; /* scripted: no damage since the last re-initialisation */
	uint64_t put[NV], got[NV]; /* entries put / delivered per vCPU this epoch */
	struct vn_dtl_entry shadow[NV][SHADOW];
};

static void deliver(void *arg, uint32_t vcpu, const struct vn_dtl_entry *e)
{
	struct ctx *c = arg;
	struct vn_dtl_cause cause;

	if (dtlregion_entry_valid(e) != 0 || vcpu >= VN_DTL_MAX_VCPUS)
		abort(); /* the reader's contract: only validated copies */
	if (dtlreader_epoch(c->r) != c->epoch) {
		memset(c->last_end, 0, sizeof(c->last_end));
		c->epoch = dtlreader_epoch(c->r);
	}
	if (e->start_ns < c->last_end[vcpu])
		abort(); /* never back in time within an epoch */
	c->last_end[vcpu] = e->end_ns;
	(void)!dtlreader_cause(c->r, e->cause, &cause);
	if (!c->oracle || vcpu >= NV)
		return;
	/* undamaged: the next entry put that was not overwritten (lost ones are skipped, never invented) */
	if (c->put[vcpu] - c->got[vcpu] > SHADOW)
		c->got[vcpu] = c->put[vcpu] - SHADOW;
	while (c->got[vcpu] < c->put[vcpu] &&
	       memcmp((const char *)e + 4,
		      (const char *)&c->shadow[vcpu][c->got[vcpu] % SHADOW] + 4, sizeof(*e) - 4))
		c->got[vcpu]++;
	if (c->got[vcpu] >= c->put[vcpu])
		abort();
	c->got[vcpu]++;
}

/* One round of everything a guest does with the area. */
static void guest_round(struct ctx *c, void *area, uint32_t budget)
{
	struct vn_dtl_status st;
	struct vn_dtl_agg a;
	uint64_t q, t;
	uint32_t v, n;

	(void)dtlreader_sync(c->r);
	n = dtlreader_nvcpus(c->r);
	for (v = 0; v < n; v++) {
		(void)!dtlreader_poll(c->r, v, deliver, c, budget);
		(void)!dtlreader_agg(c->r, v, UINT64_MAX, &a);
		(void)!dtlreader_agg(c->r, v, 1, &a);
	}
	(void)!dtlreader_poll(c->r, VN_DTL_MAX_VCPUS, deliver, c, budget); /* out of range */
	(void)!dtlreader_status(c->r, &st);
	for (v = 0; v < 8; v++) {
		struct vn_dtl_cause cause;

		(void)!dtlreader_cause(c->r, VN_DTL_CAUSE(v, 1), &cause);
	}
	if (dtlreader_request(c->r, &q, &t) == 1)
		dtlreader_reply(c->r, area, q, t, t + 1, 0);
}

static void *area_new(size_t size)
{
	void *p = NULL;

	if (posix_memalign(&p, 64, size ? size : 64))
		return NULL;
	memset(p, 0, size);
	return p;
}

static void fuzz_raw(const uint8_t *data, size_t size)
{
	struct ctx c = { 0 };
	void *area;
	int i;

	if (size < VN_DTL_HEADER_SIZE)
		return;
	area = area_new(size);
	if (!area)
		return;
	memcpy(area, data, size);
	c.r = dtlreader_new(area, size);
	for (i = 0; c.r && i < 3; i++) {
		guest_round(&c, area, 64);
		((struct vn_dtl_header *)area)->host_epoch += 1; /* as if the host restarted */
	}
	dtlreader_free(c.r);
	free(area);
}

static struct dtl_writer *script_init(void *area, struct ctx *c, struct fuzz_in *in, uint64_t epoch,
				      uint32_t *nv)
{
	uint8_t g = fuzz_u8(in);
	struct dtlwriter_params p = { .nvcpus = 1 + g % NV,
				      .max_entries = 16u << ((g >> 2) % 3),
				      .ncauses = 1 + (g >> 4) % 8,
				      .detail =
					  g & 0x80 ? VN_DTL_DETAIL_TASK : VN_DTL_DETAIL_CLASS };

	*nv = p.nvcpus;
	memset(c->put, 0, sizeof(c->put));
	memset(c->got, 0, sizeof(c->got));
	c->oracle = 1;
	return dtlwriter_init(area, AREA, &p, epoch, NULL, 0);
}

/* One scripted operation; returns the writer (replaced on re-initialisation) or NULL. */
static struct dtl_writer *script_op(struct ctx *c, struct dtl_writer *w, void *area,
				    struct fuzz_in *in, uint64_t *epoch, uint32_t *nv)
{
	uint8_t op = fuzz_u8(in), a = fuzz_u8(in);
	uint32_t v = a % *nv;

	switch (op % 8) {
	case 0: { /* an entry (possibly bad: then dropped by the writer) */
		uint64_t s = fuzz_u64(in) >> (a % 40),
			 len = fuzz_u8(in) + (uint64_t)fuzz_u8(in) * 256;
		uint32_t cause =
		    fuzz_u8(in) & 1 ? dtlwriter_cause(w, 1 + a % 5, fuzz_u8(in), "task") : 0;

		if (dtlwriter_put(w, v, 1 + (op >> 3) % 3, 1 + (op >> 5) % 5, cause, 0, s,
				  s + len) == 0 &&
		    v < NV) {
			const struct vn_dtl_header *h = area;
			const struct vn_dtl_entry *e =
			    (const struct vn_dtl_entry *)((const char *)area + h->entries_offset);

			if (c->oracle)
				c->shadow[v][c->put[v] % SHADOW] =
				    e[(size_t)v * h->entries_per_vcpu +
				      (c->put[v] & (h->entries_per_vcpu - 1))];
			c->put[v]++;
		}
		break;
	}
	case 1: { /* an aggregate, raw */
		struct vn_dtl_agg ag;
		size_t k;

		for (k = 0; k < sizeof(ag); k++)
			((uint8_t *)&ag)[k] = k < 72 ? fuzz_u8(in) : 0;
		(void)!dtlwriter_agg(w, v, &ag);
		break;
	}
	case 2: { /* status */
		struct vn_dtl_status st = { 0 };

		st.flags = fuzz_u8(in);
		st.horizon_ns = fuzz_u64(in) >> 20;
		st.heartbeat_ns = fuzz_u64(in) >> 20;
		st.uncertainty_ns = fuzz_u64(in);
		dtlwriter_status(w, &st);
		break;
	}
	case 3: { /* damage bytes anywhere */
		uint32_t off = (uint32_t)(fuzz_u8(in) | fuzz_u8(in) << 8) % AREA, k;

		for (k = 0; k < 1u + a % 8 && off + k < AREA; k++)
			((uint8_t *)area)[off + k] = fuzz_u8(in);
		c->oracle = 0;
		break;
	}
	case 4: /* a head */
		((struct vn_dtl_ring *)((char *)area + VN_DTL_HEADER_SIZE))[v].head = fuzz_u64(in);
		c->oracle = 0;
		break;
	case 5: /* the host restarts */
		dtlwriter_free(w);
		return script_init(area, c, in, ++*epoch, nv);
	case 6: { /* clock request, guest reply, host read */
		struct dtl_clock_reply rep;
		uint64_t q;

		dtlwriter_request(w, fuzz_u64(in), &q);
		guest_round(c, area, 16);
		(void)!dtlwriter_reply(w, &rep);
		break;
	}
	case 7:
		guest_round(c, area, fuzz_u8(in));
		break;
	}
	return w;
}

static void fuzz_script(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct ctx c = { 0 };
	struct dtl_writer *w;
	uint64_t epoch = 1;
	uint32_t nv, steps = 0;
	void *area = area_new(AREA);

	if (!area)
		return;
	w = script_init(area, &c, &in, epoch, &nv);
	c.r = dtlreader_new(area, AREA);
	while (w && c.r && in.n && steps++ < 4096) {
		w = script_op(&c, w, area, &in, &epoch, &nv);
		if (steps % 16 == 0)
			guest_round(&c, area, 64);
	}
	if (w && c.r)
		guest_round(&c, area, 1024);
	dtlreader_free(c.r);
	dtlwriter_free(w);
	free(area);
}

static void fuzz_near_valid(const uint8_t *data, size_t size)
{
	struct dtlwriter_params p = { .nvcpus = 1 + data[0] % 4,
				      .max_entries = 16,
				      .ncauses = 8,
				      .detail = 1 + (data[0] >> 2) % 2 };
	struct ctx c = { 0 };
	struct dtl_writer *w;
	struct vn_dtl_agg ag;
	void *area = area_new(AREA);
	uint8_t *b = area;
	uint64_t t;
	size_t i;

	if (!area)
		return;
	w = dtlwriter_init(area, AREA, &p, 77, NULL, 0);
	if (!w)
		goto out;
	for (t = 0; t < 48; t++) {
		uint32_t v = (uint32_t)(t % p.nvcpus),
			 cause = dtlwriter_cause(w, 1 + t % 5, 100 + t % 11, "x");

		(void)!dtlwriter_put(w, v, 1 + t % 2, 1 + t % 5, cause, 0, t * 1000,
				     t * 1000 + 500);
		memset(&ag, 0, sizeof(ag));
		ag.period = t;
		ag.start_ns = t * 1000;
		ag.end_ns = t * 1000 + 1000;
		ag.nexit = 1;
		ag.exit[0].count = 2;
		ag.exit[0].total_ns = 30;
		ag.exit_count = 3;
		ag.exit_ns = 30;
		(void)!dtlwriter_agg(w, v, &ag);
	}
	c.r = dtlreader_new(area, AREA);
	if (c.r)
		guest_round(&c, area, 4);
	for (i = 1; i < size && i - 1 < AREA; i++)
		b[i - 1] ^= data[i];
	if (c.r) {
		guest_round(&c, area, 64);
		guest_round(&c, area, 64);
	}
	dtlwriter_free(w);
out:
	dtlreader_free(c.r);
	free(area);
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
		if (size > 1)
			fuzz_near_valid(data + 1, size - 1);
		break;
	}
	return 0;
}
