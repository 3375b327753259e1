/* SPDX-License-Identifier: MIT */
/*
 * dtlwriter: the host producer of the dispatch trace log (see dtlwriter.h, protocol/dtl.h; memory ordering
 * and seqlock discipline of shmregion.h). An entry's slot goes odd (lap * 2 + 1) before any payload byte and
 * even (lap * 2 + 2) after the last; the vCPU's head is stored after the slot is complete. Private copies of
 * every counter and sequence word: the shared lines are only stored to, never read back (the reply excepted).
 * Causes: a small chained hash on (cls, pid, comm) and an LRU list, both O(1) per call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "channel/dtlwriter.h"
#include "channel/shmregion.h"

#define DTLW_NIL 0xffffu
#define DTLW_BUCKETS 1024u /* power of two, >= VN_DTL_MAX_CAUSES */

struct dtlw_vcpu {
	uint64_t head, dropped, last_end, agg_period;
	uint32_t agg_seq[VN_DTL_AGGS]; /* even: last value stored */
};

struct dtlw_cause {
	uint32_t pid, seq;
	uint16_t gen, next, prev_lru, next_lru; /* hash chain; LRU list (head = most recent) */
	uint8_t cls, used;
	char comm[VN_DTL_COMM_LEN];
};

struct dtl_writer {
	unsigned char *area;
	size_t size;
	struct vn_dtl_header *h;
	struct vn_dtl_ring *ctl;
	struct vn_dtl_agg *agg;
	struct vn_dtl_cause *cause;
	struct vn_dtl_entry *ent;
	uint32_t nvcpus, entries, shift, mask, ncauses, detail;
	uint64_t epoch, horizon;
	uint32_t status_seq, req_seq_word; /* even: last values stored */
	uint64_t req, req_send;
	int req_pending;
	uint64_t bell_seq; /* the last arm_seq stored (a new epoch starts again from 0) */
	uint16_t bucket[DTLW_BUCKETS], lru_head, lru_tail;
	struct dtlw_cause *c;
	struct dtlw_vcpu *v;
	struct dtlwriter_stats st;
	/* what the area's immutable header must hold: a guest can write there (the BAR is writable) */
	struct dtlregion_layout lay;
	uint64_t period_ns;
	unsigned char imm[VN_DTL_IMMUTABLE_SIZE];
	uint64_t repair_ns,
	    damaged_ns; /* damaged_ns: CLOCK_MONOTONIC when the damage was first seen */
};

static void fail(char *why, size_t whylen, const char *msg)
{
	if (why && whylen)
		snprintf(why, whylen, "%s", msg);
}

static void header_fill(struct dtl_writer *w, const struct dtlregion_layout *l, uint64_t period_ns)
{
	struct vn_dtl_header *h = w->h;

	memcpy(h->magic, VN_DTL_MAGIC, VN_DTL_MAGIC_LEN);
	h->version = VN_DTL_VERSION;
	h->header_size = VN_DTL_HEADER_SIZE;
	h->area_size = w->size;
	h->nvcpus = w->nvcpus;
	h->entries_per_vcpu = l->entries_per_vcpu;
	h->entry_size = sizeof(struct vn_dtl_entry);
	h->ring_ctl_size = sizeof(struct vn_dtl_ring);
	h->agg_size = sizeof(struct vn_dtl_agg);
	h->cause_size = sizeof(struct vn_dtl_cause);
	h->ncauses = l->ncauses;
	h->detail = w->detail;
	h->ring_ctl_offset = l->ring_ctl_offset;
	h->agg_offset = l->agg_offset;
	h->cause_offset = l->cause_offset;
	h->entries_offset = l->entries_offset;
	h->period_ns = period_ns;
	h->status.uncertainty_ns = UINT64_MAX; /* no mapping yet */
}

/* Unpublish, zero every byte the host owns (not the guest's reply line), lay out, publish epoch. */
static void area_publish(struct dtl_writer *w, const struct dtlregion_layout *l, uint64_t period_ns)
{
	size_t reply = offsetof(struct vn_dtl_header, reply);
	size_t after = reply + sizeof(struct vn_shm_mbox_guest);

	SHM_STORE_RLX(&w->h->host_epoch, 0);
	SHM_FENCE_REL();
	memset(w->area, 0, reply);
	memset(w->area + after, 0, (size_t)l->end - after);
	header_fill(w, l, period_ns);
	SHM_STORE_REL(&w->h->host_epoch, w->epoch);
	memcpy(w->imm, w->area, sizeof(w->imm));
}

static int params_valid(void *area, size_t area_size, const struct dtlwriter_params *p,
			uint64_t epoch, char *why, size_t whylen)
{
	if (!area || ((uintptr_t)area & (VN_SHM_ALIGN - 1)) || !p || epoch == 0) {
		fail(why, whylen, "bad area, parameters or epoch 0");
		return -EINVAL;
	}
	if (!shmregion_pow2(area_size) || area_size < VN_DTL_HEADER_SIZE) {
		fail(why, whylen, "the host area size is not a power of two");
		return -EINVAL;
	}
	if (p->detail != VN_DTL_DETAIL_CLASS && p->detail != VN_DTL_DETAIL_TASK) {
		fail(why, whylen, "unknown detail");
		return -EINVAL;
	}
	return 0;
}

static void causes_reset(struct dtl_writer *w)
{
	uint32_t i, n = w->ncauses;

	for (i = 0; i < DTLW_BUCKETS; i++)
		w->bucket[i] = DTLW_NIL;
	/* the LRU list holds every index: head n - 1 (most recent) .. tail 0, taken first */
	for (i = 0; i < n; i++) {
		w->c[i].next_lru = i ? (uint16_t)(i - 1) : DTLW_NIL; /* towards the tail */
		w->c[i].prev_lru = i + 1 < n ? (uint16_t)(i + 1) : DTLW_NIL; /* towards the head */
		w->c[i].next = DTLW_NIL;
	}
	w->lru_head = (uint16_t)(n - 1);
	w->lru_tail = 0;
}

struct dtl_writer *dtlwriter_init(void *area, size_t area_size, const struct dtlwriter_params *p,
				  uint64_t epoch, char *why, size_t whylen)
{
	struct dtl_writer *w = NULL;
	struct dtlregion_layout l;
	int err = 0, rc;

	if (params_valid(area, area_size, p, epoch, why, whylen)) {
		err = EINVAL;
		goto out;
	}
	rc = dtlregion_layout(area_size, p->nvcpus, p->ncauses, p->max_entries, &l);
	if (rc) {
		fail(why, whylen,
		     rc == -ENOSPC ? "the host area is too small for the DTL"
				   : "bad geometry (vCPUs, causes or entries out of range)");
		err = -rc;
		goto out;
	}
	w = calloc(1, sizeof(*w));
	if (!w || !(w->c = calloc(l.ncauses, sizeof(*w->c))) ||
	    !(w->v = calloc(p->nvcpus, sizeof(*w->v)))) {
		fail(why, whylen, "out of memory");
		err = ENOMEM;
		goto out;
	}
	w->area = area;
	w->size = area_size;
	w->h = area;
	w->ctl = (struct vn_dtl_ring *)(w->area + l.ring_ctl_offset);
	w->agg = (struct vn_dtl_agg *)(w->area + l.agg_offset);
	w->cause = (struct vn_dtl_cause *)(w->area + l.cause_offset);
	w->ent = (struct vn_dtl_entry *)(w->area + l.entries_offset);
	w->nvcpus = p->nvcpus;
	w->entries = l.entries_per_vcpu;
	w->shift = shmregion_shift(l.entries_per_vcpu);
	w->mask = l.entries_per_vcpu - 1;
	w->ncauses = l.ncauses;
	w->detail = p->detail;
	w->epoch = epoch;
	w->lay = l;
	w->period_ns = p->period_ns;
	w->repair_ns = p->repair_ns ? p->repair_ns : DTLWRITER_REPAIR_NS;
	causes_reset(w);
	area_publish(w, &l, p->period_ns);
out:
	if (err) {
		dtlwriter_free(w);
		w = NULL;
		errno = err;
	}
	return w;
}

void dtlwriter_free(struct dtl_writer *w)
{
	if (!w)
		return;
	free(w->c);
	free(w->v);
	free(w);
}

static uint32_t cause_hash(uint32_t cls, uint32_t pid, const char *comm)
{
	uint32_t h = 2166136261u ^ cls;
	int i;

	h = (h ^ pid) * 16777619u;
	for (i = 0; i < VN_DTL_COMM_LEN && comm[i]; i++)
		h = (h ^ (unsigned char)comm[i]) * 16777619u;
	return (h ^ h >> 15) & (DTLW_BUCKETS - 1);
}

static void lru_unlink(struct dtl_writer *w, uint16_t i)
{
	struct dtlw_cause *c = &w->c[i];

	if (c->prev_lru != DTLW_NIL)
		w->c[c->prev_lru].next_lru = c->next_lru;
	else
		w->lru_head = c->next_lru;
	if (c->next_lru != DTLW_NIL)
		w->c[c->next_lru].prev_lru = c->prev_lru;
	else
		w->lru_tail = c->prev_lru;
}

static void lru_front(struct dtl_writer *w, uint16_t i)
{
	if (w->lru_head == i)
		return;
	lru_unlink(w, i);
	w->c[i].prev_lru = DTLW_NIL;
	w->c[i].next_lru = w->lru_head;
	if (w->lru_head != DTLW_NIL)
		w->c[w->lru_head].prev_lru = i;
	w->lru_head = i;
	if (w->lru_tail == DTLW_NIL)
		w->lru_tail = i;
}

static void chain_remove(struct dtl_writer *w, uint16_t i)
{
	struct dtlw_cause *c = &w->c[i];
	uint16_t *p = &w->bucket[cause_hash(c->cls, c->pid, c->comm)];
	uint32_t guard = 0;

	while (*p != DTLW_NIL && *p != i && guard++ < w->ncauses)
		p = &w->c[*p].next;
	if (*p == i)
		*p = c->next;
}

/* Write table entry i under its seq. */
static void cause_publish(struct dtl_writer *w, uint16_t i)
{
	struct dtlw_cause *c = &w->c[i];
	struct vn_dtl_cause *d = &w->cause[i];

	shmregion_seq_begin(&d->seq, &c->seq);
	d->gen = c->gen;
	d->cls = c->cls;
	d->pad = 0;
	d->pid = c->pid;
	d->pad2 = 0;
	memcpy(d->comm, c->comm, sizeof(d->comm));
	memset(d->reserved, 0, sizeof(d->reserved));
	shmregion_seq_end(&d->seq, &c->seq);
}

uint32_t dtlwriter_cause(struct dtl_writer *w, uint32_t cls, uint32_t pid, const char *comm)
{
	char key[VN_DTL_COMM_LEN] = { 0 };
	uint32_t b, guard = 0;
	uint16_t i;

	if (cls == VN_DTL_CLASS_NONE || cls >= VN_DTL_CLASS_MAX)
		return 0;
	if (w->detail == VN_DTL_DETAIL_TASK && comm)
		strncpy(key, comm, sizeof(key) - 1);
	else
		pid = 0; /* class only: one cause per class, no name, no pid */
	b = cause_hash(cls, pid, key);
	for (i = w->bucket[b]; i != DTLW_NIL && guard++ < w->ncauses; i = w->c[i].next) {
		struct dtlw_cause *c = &w->c[i];

		if (c->cls == cls && c->pid == pid && !memcmp(c->comm, key, sizeof(key))) {
			lru_front(w, i);
			return VN_DTL_CAUSE(i, c->gen);
		}
	}
	i = w->lru_tail; /* least recently used (unused ones first) */
	if (w->c[i].used) {
		chain_remove(w, i);
		w->st.causes_recycled++;
	}
	w->c[i].used = 1;
	w->c[i].gen = (uint16_t)(w->c[i].gen + 1) ? (uint16_t)(w->c[i].gen + 1) : 1;
	w->c[i].cls = (uint8_t)cls;
	w->c[i].pid = pid;
	memcpy(w->c[i].comm, key, sizeof(key));
	w->c[i].next = w->bucket[b];
	w->bucket[b] = i;
	lru_front(w, i);
	cause_publish(w, i);
	return VN_DTL_CAUSE(i, w->c[i].gen);
}

static void ring_drop(struct dtl_writer *w, uint32_t vcpu, uint64_t n)
{
	w->st.dropped += n;
	if (vcpu < w->nvcpus) {
		w->v[vcpu].dropped += n;
		SHM_STORE_REL(&w->ctl[vcpu].dropped, w->v[vcpu].dropped);
	}
}

int dtlwriter_put(struct dtl_writer *w, uint32_t vcpu, uint32_t kind, uint32_t cls, uint32_t cause,
		  uint32_t flags, uint64_t start_ns, uint64_t end_ns)
{
	struct dtlw_vcpu *v;
	struct vn_dtl_entry *e;
	uint32_t lap2;
	uint64_t pos;

	if (vcpu >= w->nvcpus || kind == VN_DTL_KIND_NONE || kind >= VN_DTL_KIND_MAX ||
	    cls == VN_DTL_CLASS_NONE || cls >= VN_DTL_CLASS_MAX ||
	    flags & ~(uint32_t)VN_DTL_F_MASK ||
	    (flags & VN_DTL_F_HALTED && kind != VN_DTL_KIND_BLOCKED) ||
	    (cause && (VN_DTL_CAUSE_INDEX(cause) >= w->ncauses || !VN_DTL_CAUSE_GEN(cause)))) {
		ring_drop(w, vcpu, 1);
		return -EINVAL;
	}
	v = &w->v[vcpu];
	if (start_ns < v->last_end) {
		start_ns = v->last_end;
		w->st.clipped++;
	}
	if (end_ns <= start_ns || end_ns - start_ns > VN_DTL_MAX_SPAN_NS) {
		ring_drop(w, vcpu, 1);
		return -ERANGE;
	}
	pos = v->head;
	e = &w->ent[((size_t)vcpu << w->shift) + (pos & w->mask)];
	lap2 = (uint32_t)(pos >> w->shift) * 2u;
	SHM_STORE_RLX(&e->seq, lap2 + 1u);
	SHM_FENCE_REL(); /* odd before any payload byte */
	e->kind = (uint8_t)kind;
	e->cls = (uint8_t)cls;
	e->flags = (uint16_t)flags;
	e->cause = cause;
	e->pad = 0;
	e->start_ns = start_ns;
	e->end_ns = end_ns;
	SHM_STORE_REL(&e->seq, lap2 + 2u); /* payload before even */
	v->head = pos + 1;
	v->last_end = end_ns;
	SHM_STORE_REL(&w->ctl[vcpu].head, pos + 1); /* entry complete before the head covers it */
	w->st.entries++;
	return 0;
}

void dtlwriter_drop(struct dtl_writer *w, uint32_t vcpu, uint64_t n)
{
	if (n)
		ring_drop(w, vcpu, n);
}

int dtlwriter_agg(struct dtl_writer *w, uint32_t vcpu, const struct vn_dtl_agg *a)
{
	struct vn_dtl_agg c, *d;
	struct dtlw_vcpu *v;
	uint32_t k;

	if (vcpu >= w->nvcpus || !a)
		return -EINVAL;
	v = &w->v[vcpu];
	c = *a;
	c.seq = 0;
	memset(c.reserved, 0, sizeof(c.reserved));
	if (c.period < v->agg_period || c.period == UINT64_MAX || dtlregion_agg_valid(&c))
		return -EINVAL;
	k = (uint32_t)(c.period % VN_DTL_AGGS);
	d = &w->agg[(size_t)vcpu * VN_DTL_AGGS + k];
	shmregion_seq_begin(&d->seq, &v->agg_seq[k]);
	memcpy((unsigned char *)d + sizeof(d->seq), (const unsigned char *)&c + sizeof(c.seq),
	       sizeof(*d) - sizeof(d->seq));
	shmregion_seq_end(&d->seq, &v->agg_seq[k]);
	v->agg_period = c.period + 1;
	SHM_STORE_REL(&w->ctl[vcpu].agg_period, v->agg_period);
	w->st.aggs++;
	return 0;
}

/*
 * The immutable header (or its reserved tail, which no one writes) is not what this writer laid out (the
 * guest wrote over it): lay the area out again
 * under a new epoch, so the guest's readers, which could not attach to the damaged header, find a valid one
 * and drop what they kept. Everything published before is gone; counted.
 */
static void area_repair(struct dtl_writer *w)
{
	memset(w->c, 0, w->ncauses * sizeof(*w->c));
	memset(w->v, 0, w->nvcpus * sizeof(*w->v));
	causes_reset(w);
	w->horizon = 0;
	w->status_seq = w->req_seq_word = 0;
	w->req_pending = 0;
	w->bell_seq = 0;
	w->damaged_ns = 0;
	w->epoch++;
	w->st.repairs++;
	area_publish(w, &w->lay, w->period_ns);
}

void dtlwriter_status(struct dtl_writer *w, const struct vn_dtl_status *st)
{
	struct vn_dtl_status *d = &w->h->status;

	if (memcmp(w->area, w->imm, sizeof(w->imm)) ||
	    !shmregion_all_zero(w->h->reserved1, sizeof(w->h->reserved1))) {
		struct timespec ts;
		uint64_t t;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
		if (!w->damaged_ns)
			w->damaged_ns = t;
		else if (t - w->damaged_ns >= w->repair_ns)
			area_repair(w);
	} else {
		w->damaged_ns = 0;
	}

	if (st->horizon_ns > w->horizon)
		w->horizon = st->horizon_ns;
	shmregion_seq_begin(&d->seq, &w->status_seq);
	d->flags = st->flags & VN_DTL_S_MASK;
	d->horizon_ns = w->horizon;
	d->heartbeat_ns = st->heartbeat_ns;
	d->offset_ns = st->offset_ns;
	d->drift_ppb = st->drift_ppb;
	d->anchor_host_ns = st->anchor_host_ns;
	d->uncertainty_ns = st->uncertainty_ns;
	memset(d->reserved, 0, sizeof(d->reserved));
	shmregion_seq_end(&d->seq, &w->status_seq);
}

void dtlwriter_request(struct dtl_writer *w, uint64_t host_send_ns, uint64_t *req_seq)
{
	struct vn_shm_mbox_host *m = &w->h->request;

	w->req++;
	shmregion_seq_begin(&m->seq, &w->req_seq_word);
	m->pad = 0;
	m->req_seq = w->req;
	m->host_send_ns = host_send_ns;
	memset(m->reserved, 0, sizeof(m->reserved));
	shmregion_seq_end(&m->seq, &w->req_seq_word);
	w->req_send = host_send_ns;
	w->req_pending = 1;
	w->st.requests++;
	if (req_seq)
		*req_seq = w->req;
}

int dtlwriter_reply(struct dtl_writer *w, struct dtl_clock_reply *out)
{
	const struct vn_shm_mbox_guest *m = &w->h->reply;
	struct vn_shm_mbox_guest c;

	if (!w->req_pending)
		return 0;
	if (shmregion_seq_copy(&m->seq, m, &c, sizeof(c)) < 0)
		return -EAGAIN;
	if (shmregion_reply_valid(&c) < 0) {
		w->st.bad_replies++;
		return -EBADMSG;
	}
	if (c.reply_seq != w->req || c.echo_host_send_ns != w->req_send)
		return 0; /* not answered yet, or an answer to an older request */
	if (c.guest_ns == 0) {
		w->st.bad_replies++;
		return -EBADMSG;
	}
	w->req_pending = 0;
	w->st.replies++;
	out->req_seq = c.reply_seq;
	out->host_send_ns = c.echo_host_send_ns;
	out->guest_ns = c.guest_ns;
	out->cpu = c.cpu;
	return 1;
}

void dtlwriter_stats(const struct dtl_writer *w, struct dtlwriter_stats *out)
{
	*out = w->st;
}

uint64_t dtlwriter_bell_arm(struct dtl_writer *w)
{
	w->bell_seq++;
	SHM_STORE_REL(&w->h->bell.arm_seq, w->bell_seq);
	return w->bell_seq;
}

uint64_t dtlwriter_epoch(const struct dtl_writer *w)
{
	return w->epoch;
}
