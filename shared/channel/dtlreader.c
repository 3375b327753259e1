/* SPDX-License-Identifier: MIT */
/*
 * dtlreader: a guest's reader of the dispatch trace log (see dtlreader.h, protocol/dtl.h; memory ordering and
 * seqlock discipline of shmregion.h). The host area is hostile: every structure is copied between two equal
 * even loads of its sequence word, then validated; addresses come only from a validated header copy checked
 * against the reader's own mapping size; every loop is bounded by that copy (never by a shared value).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "channel/dtlreader.h"
#include "channel/dtlreader_priv.h"
#include "channel/dtlregion.h"
#include "channel/shmregion.h"

#define DTLREADER_RETRIES 2 /* extra copies of an entry that changed under the copy */
/* A head advancing more than this between two looks is corruption (2^40 entries). */
#define DTLREADER_MAX_HEAD_JUMP (1ull << 40)

struct dtlr_vcpu {
	uint64_t tail; /* next position to read */
	uint64_t head; /* producer head at the last look */
	uint64_t last_end; /* end of the last entry delivered */
};

struct dtl_reader {
	const unsigned char *area;
	size_t size;
	int attached;
	uint64_t epoch, condemned; /* attached epoch; an epoch whose header was invalid */
	struct vn_dtl_header hdr; /* validated copy */
	uint32_t nvcpus, entries, shift, mask;
	const struct vn_dtl_ring *ctl;
	const struct vn_dtl_agg *agg;
	const struct vn_dtl_cause *cause;
	const struct vn_dtl_entry *ent;
	struct dtlr_vcpu v[VN_DTL_MAX_VCPUS];
	/* status: last valid horizon, frozen tracking */
	uint64_t horizon, uncertainty, hb_last, hz_last, hb_moved, hz_moved;
	int hb_frozen, hz_frozen;
	/* clock responder */
	uint64_t req_seen, send_seen, req_done, send_done;
	uint64_t (*now)(void *ctx);
	void *now_ctx;
	struct dtlreader_stats st;
};

static uint64_t clock_now(void *ctx)
{
	struct timespec ts;

	(void)ctx;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sat_add(uint64_t *c, uint64_t n)
{
	*c = *c + n < *c ? UINT64_MAX : *c + n;
}

static const struct vn_dtl_header *live(const struct dtl_reader *r)
{
	return (const struct vn_dtl_header *)r->area;
}

struct dtl_reader *dtlreader_new(const void *area, size_t area_size)
{
	struct dtl_reader *r;

	if (!area || ((uintptr_t)area & (VN_SHM_ALIGN - 1)) || area_size < VN_DTL_HEADER_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->area = area;
	r->size = area_size;
	r->now = clock_now;
	return r;
}

void dtlreader_free(struct dtl_reader *r)
{
	free(r);
}

void dtlreader_set_clock(struct dtl_reader *r, uint64_t (*now_ns)(void *ctx), void *ctx)
{
	r->now = now_ns ? now_ns : clock_now;
	r->now_ctx = ctx;
}

static void detach(struct dtl_reader *r)
{
	r->attached = 0;
	r->nvcpus = 0;
}

/* Attach to epoch e: 1, or -ENOTCONN (being rewritten: look again later; invalid: condemned, counted). */
static int attach(struct dtl_reader *r, uint64_t e)
{
	struct vn_dtl_header h;
	uint64_t now = r->now(r->now_ctx);
	uint32_t i;

	memcpy(&h, r->area, sizeof(h));
	SHM_FENCE_ACQ();
	if (SHM_LOAD_RLX(&live(r)->host_epoch) != e || h.host_epoch != e)
		return -ENOTCONN;
	if (dtlregion_header_valid(&h, r->size, NULL, 0) < 0) {
		sat_add(&r->st.bad_header, 1);
		r->condemned = e;
		return -ENOTCONN;
	}
	r->hdr = h;
	r->nvcpus = h.nvcpus;
	r->entries = h.entries_per_vcpu;
	r->shift = shmregion_shift(h.entries_per_vcpu);
	r->mask = h.entries_per_vcpu - 1;
	r->ctl = (const struct vn_dtl_ring *)(r->area + h.ring_ctl_offset);
	r->agg = (const struct vn_dtl_agg *)(r->area + h.agg_offset);
	r->cause = (const struct vn_dtl_cause *)(r->area + h.cause_offset);
	r->ent = (const struct vn_dtl_entry *)(r->area + h.entries_offset);
	for (i = 0; i < r->nvcpus; i++)
		r->v[i] = (struct dtlr_vcpu){ 0 }; /* entries of a new epoch start at 0 */
	r->horizon = r->hb_last = r->hz_last = 0;
	r->uncertainty = UINT64_MAX;
	r->hb_moved = r->hz_moved = now;
	r->hb_frozen = r->hz_frozen = 0;
	r->req_seen = r->send_seen = 0;
	r->epoch = e;
	r->attached = 1;
	sat_add(&r->st.epochs, 1);
	return 1;
}

int dtlreader_sync(struct dtl_reader *r)
{
	unsigned char cur[VN_DTL_IMMUTABLE_SIZE];
	uint64_t e = SHM_LOAD_ACQ(&live(r)->host_epoch);

	if (r->attached && e == r->epoch) {
		memcpy(cur, r->area, sizeof(cur));
		SHM_FENCE_ACQ();
		if (!memcmp(cur, &r->hdr, sizeof(cur)))
			return 0;
		if (SHM_LOAD_RLX(&live(r)->host_epoch) == r->epoch) {
			sat_add(&r->st.bad_header, 1); /* changed under the epoch: condemned */
			r->condemned = e;
			detach(r);
			return -ENOTCONN;
		}
		e = SHM_LOAD_ACQ(&live(r)->host_epoch);
	}
	if (r->attached)
		detach(r); /* a new epoch, or being laid out */
	if (e == 0 || e == r->condemned)
		return -ENOTCONN;
	return attach(r, e);
}

uint32_t dtlreader_nvcpus(const struct dtl_reader *r)
{
	return r->attached ? r->nvcpus : 0;
}

uint32_t dtlreader_detail(const struct dtl_reader *r)
{
	return r->attached ? r->hdr.detail : 0;
}

uint64_t dtlreader_epoch(const struct dtl_reader *r)
{
	return r->attached ? r->epoch : 0;
}

static int still_attached(const struct dtl_reader *r)
{
	return r->attached && SHM_LOAD_RLX(&live(r)->host_epoch) == r->epoch;
}

/* Entries kept behind the head after falling a lap behind (see shmreader: not the slot being rewritten). */
static uint64_t keep_after_overrun(uint32_t entries)
{
	return entries - (entries >> 3);
}

/* New look at the vCPU's head; a head going back or jumping absurdly is ignored (counted as bad). */
static uint64_t head_refresh(struct dtl_reader *r, uint32_t vcpu)
{
	struct dtlr_vcpu *v = &r->v[vcpu];
	uint64_t h = SHM_LOAD_ACQ(&r->ctl[vcpu].head), nt;

	if (h < v->head || h - v->head > DTLREADER_MAX_HEAD_JUMP) {
		sat_add(&r->st.bad, 1);
		return v->head;
	}
	v->head = h;
	if (h - v->tail > r->entries) { /* lapped: what was overwritten is lost */
		nt = h - keep_after_overrun(r->entries);
		sat_add(&r->st.lost, nt - v->tail);
		v->tail = nt;
	}
	return h;
}

enum verdict { E_GOOD, E_NEWER, E_STALE, E_TORN };

static enum verdict entry_copy(const struct vn_dtl_entry *sl, uint32_t expect,
			       struct vn_dtl_entry *c)
{
	uint32_t s1, s2;
	int tries;

	for (tries = 0;; tries++) {
		s1 = SHM_LOAD_ACQ(&sl->seq);
		memcpy(c, sl, sizeof(*c));
		SHM_FENCE_ACQ();
		s2 = SHM_LOAD_RLX(&sl->seq);
		if (s1 == expect && s2 == expect)
			return E_GOOD;
		if ((int32_t)(s1 - expect) > 0 || (int32_t)(s2 - expect) > 0)
			return E_NEWER;
		if (s1 == s2 && !(s1 & 1u))
			return E_STALE;
		if (tries == DTLREADER_RETRIES)
			return E_TORN;
	}
}

/* Deliverable: valid, names a cause inside the table, after the previous end, not in the future. */
static int entry_ok(struct dtl_reader *r, struct dtlr_vcpu *v, const struct vn_dtl_entry *c,
		    uint64_t limit)
{
	if (dtlregion_entry_valid(c) < 0 || VN_DTL_CAUSE_INDEX(c->cause) >= r->hdr.ncauses ||
	    c->end_ns > limit) {
		sat_add(&r->st.bad, 1);
		return 0;
	}
	if (c->start_ns < v->last_end) {
		sat_add(&r->st.backwards, 1);
		return 0;
	}
	return 1;
}

static uint64_t future_limit(const struct dtl_reader *r)
{
	uint64_t u = r->uncertainty < DTLREADER_FUTURE_NS ? r->uncertainty : DTLREADER_FUTURE_NS;

	return r->now(r->now_ctx) + DTLREADER_FUTURE_NS + u;
}

int dtlreader_poll(struct dtl_reader *r, uint32_t vcpu, dtlreader_entry_fn fn, void *ctx,
		   uint32_t max)
{
	const struct vn_dtl_entry *ring;
	struct dtlr_vcpu *v;
	struct vn_dtl_entry c;
	enum verdict vd;
	uint64_t pos, limit;
	uint32_t visits = 0;
	int n = 0;

	if (!still_attached(r))
		return -ENOTCONN;
	if (vcpu >= r->nvcpus || !fn)
		return -EINVAL;
	v = &r->v[vcpu];
	head_refresh(r, vcpu);
	limit = future_limit(r);
	ring = r->ent + ((size_t)vcpu << r->shift);
	while (v->tail < v->head && visits++ < max && visits <= r->entries) {
		pos = v->tail;
		vd = entry_copy(&ring[pos & r->mask], (uint32_t)(pos >> r->shift) * 2u + 2u, &c);
		if (vd == E_TORN) {
			sat_add(&r->st.torn, 1); /* retried next poll */
			break;
		}
		if (vd == E_NEWER) { /* lapped while we read: the head must say so, or it lies */
			head_refresh(r, vcpu);
			if (v->tail != pos)
				continue;
			if (v->head - pos >= r->entries) { /* its next lap is being written */
				sat_add(&r->st.lost, 1);
				v->tail = pos + 1;
				continue;
			}
		}
		v->tail = pos + 1;
		if (vd != E_GOOD) {
			sat_add(&r->st.bad, 1); /* stale, or a newer lap the head denies */
			continue;
		}
		if (!entry_ok(r, v, &c, limit))
			continue;
		v->last_end = c.end_ns;
		sat_add(&r->st.entries, 1);
		n++;
		fn(ctx, vcpu, &c);
	}
	return n;
}

/* Frozen tracking of one status value. */
static void track(struct dtl_reader *r, uint64_t val, uint64_t now, uint64_t *last, uint64_t *moved,
		  int *frozen)
{
	if (val != *last) {
		*last = val;
		*moved = now;
		*frozen = 0;
	} else if (now - *moved > DTLREADER_FROZEN_NS && !*frozen) {
		*frozen = 1;
		sat_add(&r->st.frozen, 1);
	}
}

int dtlreader_status(struct dtl_reader *r, struct vn_dtl_status *out)
{
	const struct vn_dtl_status *m = &live(r)->status;
	struct vn_dtl_status c;
	uint64_t now, limit;

	if (!still_attached(r))
		return -ENOTCONN;
	if (shmregion_seq_copy(&m->seq, m, &c, sizeof(c)) < 0)
		return -EAGAIN;
	now = r->now(r->now_ctx);
	limit = now + DTLREADER_FUTURE_NS +
		(c.uncertainty_ns < DTLREADER_FUTURE_NS ? c.uncertainty_ns : DTLREADER_FUTURE_NS);
	if (dtlregion_status_valid(&c) < 0 || c.heartbeat_ns > limit || c.horizon_ns > limit) {
		sat_add(&r->st.bad_status, 1);
		return -EBADMSG;
	}
	if (c.horizon_ns < r->horizon) {
		sat_add(&r->st.bad_status, 1); /* going back: keep the last */
		c.horizon_ns = r->horizon;
	}
	r->horizon = c.horizon_ns;
	r->uncertainty = c.flags & VN_DTL_S_CLOCK ? c.uncertainty_ns : UINT64_MAX;
	track(r, c.heartbeat_ns, now, &r->hb_last, &r->hb_moved, &r->hb_frozen);
	track(r, c.horizon_ns, now, &r->hz_last, &r->hz_moved, &r->hz_frozen);
	*out = c;
	return 0;
}

int dtlreader_cause(struct dtl_reader *r, uint32_t cause, struct vn_dtl_cause *out)
{
	const struct vn_dtl_cause *m;
	struct vn_dtl_cause c;
	uint32_t idx = VN_DTL_CAUSE_INDEX(cause);

	if (!still_attached(r))
		return -ENOTCONN;
	if (cause == 0)
		return -ENOENT;
	if (idx >= r->hdr.ncauses || VN_DTL_CAUSE_GEN(cause) == 0) {
		sat_add(&r->st.bad_causes, 1);
		return -EBADMSG;
	}
	m = &r->cause[idx];
	if (shmregion_seq_copy(&m->seq, m, &c, sizeof(c)) < 0)
		return -EAGAIN;
	if (dtlregion_cause_valid(&c, r->hdr.detail) < 0) {
		sat_add(&r->st.bad_causes, 1);
		return -EBADMSG;
	}
	if (c.gen != VN_DTL_CAUSE_GEN(cause)) {
		sat_add(&r->st.causes_gone, 1); /* recycled: the entry keeps its class */
		return -ENOENT;
	}
	*out = c;
	return 0;
}

int dtlreader_agg(struct dtl_reader *r, uint32_t vcpu, uint64_t period, struct vn_dtl_agg *out)
{
	const struct vn_dtl_agg *m;
	struct vn_dtl_agg c;
	uint64_t next;

	if (!still_attached(r))
		return -ENOTCONN;
	if (vcpu >= r->nvcpus)
		return -EINVAL;
	next = SHM_LOAD_ACQ(&r->ctl[vcpu].agg_period);
	if (period == UINT64_MAX) {
		if (next == 0)
			return -ENODATA;
		period = next - 1;
	}
	if (period >= next || next - period > VN_DTL_AGGS)
		return -ENODATA;
	m = &r->agg[(size_t)vcpu * VN_DTL_AGGS + period % VN_DTL_AGGS];
	if (shmregion_seq_copy(&m->seq, m, &c, sizeof(c)) < 0)
		return -EAGAIN;
	if (dtlregion_agg_valid(&c) < 0) {
		sat_add(&r->st.bad_aggs, 1);
		return -EBADMSG;
	}
	if (c.period != period)
		return -ENODATA; /* being replaced, or a host that lies about agg_period */
	*out = c;
	return 0;
}

int dtlreader_request(struct dtl_reader *r, uint64_t *req_seq, uint64_t *host_send_ns)
{
	const struct vn_shm_mbox_host *m = &live(r)->request;
	struct vn_shm_mbox_host c;

	if (!still_attached(r))
		return -ENOTCONN;
	if (shmregion_seq_copy(&m->seq, m, &c, sizeof(c)) < 0)
		return 0;
	if (c.req_seq == 0 || (c.req_seq == r->req_done && c.host_send_ns == r->send_done))
		return 0;
	if (c.req_seq != r->req_seen || c.host_send_ns != r->send_seen) {
		r->req_seen = c.req_seq;
		r->send_seen = c.host_send_ns;
		sat_add(&r->st.requests, 1);
	}
	*req_seq = c.req_seq;
	*host_send_ns = c.host_send_ns;
	return 1;
}

void dtlreader_reply(struct dtl_reader *r, void *area_rw, uint64_t req_seq, uint64_t host_send_ns,
		     uint64_t guest_ns, uint32_t cpu)
{
	struct vn_shm_mbox_guest *m;
	uint32_t local;

	if (area_rw != (const void *)r->area)
		return;
	/* fixed offset inside the header, which the mapping always holds */
	m = (struct vn_shm_mbox_guest *)((unsigned char *)area_rw +
					 offsetof(struct vn_dtl_header, reply));
	local = SHM_LOAD_RLX(&m->seq) & ~1u; /* the one responder: go on from what is there */
	shmregion_seq_begin(&m->seq, &local);
	SHM_STORE_RLX(&m->pad, 0);
	SHM_STORE_RLX(&m->reply_seq, req_seq);
	SHM_STORE_RLX(&m->guest_ns, guest_ns);
	SHM_STORE_RLX(&m->echo_host_send_ns, host_send_ns);
	SHM_STORE_RLX(&m->cpu, cpu);
	SHM_STORE_RLX(&m->pad2, 0);
	memset(m->reserved, 0, sizeof(m->reserved));
	shmregion_seq_end(&m->seq, &local);
	r->req_done = req_seq;
	r->send_done = host_send_ns;
	sat_add(&r->st.replies, 1);
}

void dtlreader_stats(const struct dtl_reader *r, struct dtlreader_stats *out)
{
	*out = r->st;
}
