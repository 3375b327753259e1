/* SPDX-License-Identifier: MIT */
/*
 * datagram: the report datagram of protocol/cluster.h. The builder writes header and records in place in a
 * 1400-byte buffer and the MAC after them; the parser checks the structure before it trusts any length,
 * authenticates, and only then looks at the meaning of the fields, so a forged datagram costs one HMAC at
 * most and is counted as a MAC failure, while an authentic but out-of-range one points at a buggy sender.
 * The sequence tracker is the anti-replay window of IPsec (RFC 4303 3.4.3) with loss counting added.
 */
#include <errno.h>
#include <string.h>
#include "app.h"
#include "dtl.h"
#include "attrib/classes.h"
#include "util/sha256.h"
#include "format/datagram.h"

#define HDR_LEN sizeof(struct vn_report_hdr)
#define REC_LEN sizeof(struct vn_report_rec)

/* Whether a record needs version 2: a hypervisor class or the HOST source. */
static bool rec_v2(const struct vn_report_rec *r)
{
	return r->cls >= VN_CLASS_MAX || r->src_kind == VN_REPORT_SRC_HOST;
}

static bool meta_ok(uint16_t kind, uint32_t flags, uint64_t start_ns, uint64_t end_ns)
{
	if (kind < VN_REPORT_INTERVAL || kind >= VN_REPORT_KIND_MAX)
		return false;
	if (flags & ~VN_REPORT_F_KNOWN)
		return false;
	return end_ns >= start_ns;
}

int datagram_init(struct datagram_buf *b, const struct datagram_meta *m)
{
	struct vn_report_hdr *h = &b->hdr;

	if (!meta_ok(m->kind, m->flags, m->start_realtime_ns, m->end_realtime_ns))
		return -EINVAL;
	memset(h, 0, sizeof(*h));
	h->magic = VN_REPORT_MAGIC;
	h->version = VN_REPORT_VERSION_MIN; /* datagram_add() raises it for a version 2 record */
	h->kind = m->kind;
	h->hdr_len = HDR_LEN;
	h->rec_len = REC_LEN;
	h->key_id = m->key_id;
	h->part = m->part;
	h->flags = m->flags;
	h->node_id = m->node_id;
	h->session_id = m->session_id;
	h->job_id = m->job_id;
	h->interval_id = m->interval_id;
	h->seq = m->seq;
	h->send_realtime_ns = m->send_realtime_ns;
	h->start_realtime_ns = m->start_realtime_ns;
	h->end_realtime_ns = m->end_realtime_ns;
	b->len = HDR_LEN;
	return 0;
}

int datagram_add(struct datagram_buf *b, const struct vn_report_rec *r)
{
	if (b->hdr.kind >= VN_REPORT_HELLO || !datagram_rec_ok(r))
		return -EINVAL;
	if (b->len + REC_LEN + VN_REPORT_MAC_LEN > VN_REPORT_MAX_LEN)
		return -ENOSPC;
	memcpy(b->data + b->len, r, REC_LEN);
	b->len += REC_LEN;
	if (rec_v2(r))
		b->hdr.version = VN_REPORT_VERSION;
	b->hdr.nrec++;
	return 0;
}

int datagram_next(struct datagram_buf *b)
{
	if (b->hdr.part == UINT16_MAX)
		return -EOVERFLOW;
	b->hdr.part++;
	b->hdr.seq++;
	b->hdr.flags &= ~VN_REPORT_F_LAST;
	b->hdr.nrec = 0;
	b->hdr.total_len = 0;
	b->len = HDR_LEN;
	return 0;
}

int datagram_seal(struct datagram_buf *b, const void *key, size_t keylen)
{
	size_t total = b->len + VN_REPORT_MAC_LEN;

	if (!key || !keylen)
		return -EINVAL;
	/* datagram_add() keeps total <= 1400, so these fit their u16 fields. */
	b->hdr.hdr_len = HDR_LEN;
	b->hdr.rec_len = REC_LEN;
	b->hdr.nrec = (b->len - HDR_LEN) / REC_LEN;
	b->hdr.total_len = total;
	sha256_hmac(key, keylen, b->data, b->len, b->data + b->len);
	return total;
}

const void *datagram_keytab_lookup(void *ctx, uint16_t key_id, size_t *keylen)
{
	const struct datagram_keytab *t = ctx;
	size_t i;

	for (i = 0; i < t->n; i++) {
		if (t->keys[i].id == key_id) {
			*keylen = t->keys[i].len;
			return t->keys[i].key;
		}
	}
	*keylen = 0;
	return NULL;
}

/* The name is NUL-padded: after the first NUL (if any, 16 bytes of text are allowed) every byte is NUL. */
static bool name_ok(const char *name)
{
	size_t i = 0;

	while (i < VN_REPORT_NAME_LEN && name[i])
		i++;
	for (; i < VN_REPORT_NAME_LEN; i++) {
		if (name[i])
			return false;
	}
	return true;
}

static bool name_empty(const char *name)
{
	return !name[0] && name_ok(name);
}

/* Which source kind each class allows besides NONE. */
static const uint8_t class_src[VN_REPORT_CLS_MAX] = {
	[VN_CLASS_THREAD] = VN_REPORT_SRC_THREAD,
	[VN_CLASS_IRQ] = VN_REPORT_SRC_IRQ,
	[VN_CLASS_SOFTIRQ] = VN_REPORT_SRC_SOFTIRQ,
	[VN_CLASS_HCALL] = VN_REPORT_SRC_HCALL,
	[VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_PREEMPT] = VN_REPORT_SRC_HOST,
};

bool datagram_rec_ok(const struct vn_report_rec *r)
{
	if (r->kind != VN_REPORT_REC_RANK && r->kind != VN_REPORT_REC_CPU)
		return false;
	if (r->cls >= VN_REPORT_CLS_MAX || r->src_kind >= VN_REPORT_SRC_MAX)
		return false;
	/* hypervisor noise is measured per rank (its vCPU over its compute interval) */
	if (r->cls >= VN_CLASS_MAX && r->kind != VN_REPORT_REC_RANK)
		return false;
	if (r->verdict > VN_VERDICT_UNEXPLAINED)
		return false;
	if (r->kind == VN_REPORT_REC_CPU && (r->compute_ns || r->verdict))
		return false;
	if (!name_ok(r->name))
		return false;
	if (r->src_kind == VN_REPORT_SRC_NONE)
		return r->src_id == 0 && name_empty(r->name);
	if (r->src_kind != class_src[r->cls])
		return false;
	switch (r->src_kind) {
	case VN_REPORT_SRC_IRQ:
		/* a device line below the vector base, or one of the x86 vectors we name */
		return r->src_id < VN_VEC_BASE || r->src_id - VN_VEC_BASE < VN_VEC_MAX;
	case VN_REPORT_SRC_SOFTIRQ:
		return r->src_id < VN_REPORT_SOFTIRQ_MAX;
	case VN_REPORT_SRC_HCALL:
		return r->src_id < VN_HCALL_MAX;
	case VN_REPORT_SRC_HOST:
		/* enum vn_dtl_class of a host task: idle is host_wait, never a cause */
		return r->src_id >= VN_DTL_CLASS_OTHER_VCPU && r->src_id < VN_DTL_CLASS_IDLE;
	default:
		return true; /* THREAD: any pid */
	}
}

int datagram_parse(const void *dgram, size_t len, datagram_key_fn *key, void *ctx,
		   struct datagram_view *out)
{
	const uint8_t *p = dgram;
	struct vn_report_hdr *h = &out->hdr;
	uint8_t mac[SHA256_DIGEST_LEN];
	const void *k;
	size_t klen = 0, body, i;

	/* Copy first: the receive buffer may be unaligned, and the copy is what every check reads. */
	memset(h, 0, sizeof(*h));
	if (len)
		memcpy(h, p, len < HDR_LEN ? len : HDR_LEN);
	if (len < sizeof(h->magic) || h->magic != VN_REPORT_MAGIC)
		return -ENOMSG;
	if (len < offsetof(struct vn_report_hdr, kind))
		return -EBADMSG;
	/* The version decides the layout, so nothing after it is read before it is known. */
	if (h->version < VN_REPORT_VERSION_MIN || h->version > VN_REPORT_VERSION)
		return -EPROTO;
	if (len < HDR_LEN + VN_REPORT_MAC_LEN || len > VN_REPORT_MAX_LEN)
		return -EBADMSG;
	if (h->hdr_len != HDR_LEN || h->rec_len != REC_LEN || h->total_len != len)
		return -EBADMSG;
	if (h->nrec > VN_REPORT_MAX_RECS ||
	    HDR_LEN + (size_t)h->nrec * REC_LEN + VN_REPORT_MAC_LEN != len)
		return -EBADMSG;

	k = key ? key(ctx, h->key_id, &klen) : NULL;
	if (!k || !klen)
		return -ENOKEY;
	body = len - VN_REPORT_MAC_LEN;
	sha256_hmac(k, klen, p, body, mac);
	if (!sha256_equal_ct(mac, p + body, sizeof(mac)))
		return -EKEYREJECTED;

	/* Authentic from here: what fails now is a sender's bug or an incompatible sender, still dropped. */
	if (!meta_ok(h->kind, h->flags, h->start_realtime_ns, h->end_realtime_ns))
		return -EBADMSG;
	if (h->kind >= VN_REPORT_HELLO && h->nrec)
		return -EBADMSG;
	memcpy(out->rec, p + HDR_LEN, (size_t)h->nrec * REC_LEN);
	for (i = 0; i < h->nrec; i++) {
		if (!datagram_rec_ok(&out->rec[i]))
			return -EBADMSG;
		if (h->version < VN_REPORT_VERSION && rec_v2(&out->rec[i]))
			return -EBADMSG; /* a version 1 datagram knows no hypervisor class */
	}
	return 0;
}

/* The wire values of the hypervisor classes (protocol/README.md, "Version 2"). */
_Static_assert(VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_PREEMPT == 8 &&
		   VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_WAIT == 9 &&
		   VN_REPORT_CLS_HYP_BASE + VN_HCLASS_VMEXIT == 10 &&
		   VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_IRQ == 11,
	       "vn_report_rec.cls of the hypervisor classes is ABI");

uint8_t datagram_cls_of_hclass(enum vn_hclass hc)
{
	return (uint8_t)(VN_REPORT_CLS_HYP_BASE + hc);
}

int datagram_hclass_of_cls(unsigned cls)
{
	return cls >= VN_REPORT_CLS_HYP_BASE && cls < VN_REPORT_CLS_MAX
		   ? (int)(cls - VN_REPORT_CLS_HYP_BASE)
		   : -1;
}

const char *datagram_class_name(unsigned cls)
{
	int hc = datagram_hclass_of_cls(cls);

	if (hc >= 0)
		return classes_hyp_name(hc);
	return cls < VN_CLASS_MAX ? classes_guest_name((int)cls) : "?";
}

const char *datagram_err_name(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -ENOMSG:
		return "not-report";
	case -EPROTO:
		return "version";
	case -EBADMSG:
		return "malformed";
	case -ENOKEY:
		return "unknown-key";
	case -EKEYREJECTED:
		return "bad-mac";
	default:
		return "other";
	}
}

uint64_t datagram_job_id(const char *name)
{
	uint8_t d[SHA256_DIGEST_LEN];
	uint64_t id = 0;
	int i;

	sha256_digest(name, strlen(name), d);
	for (i = 7; i >= 0; i--)
		id = id << 8 | d[i];
	return id;
}

static uint64_t seq_restart(struct datagram_seq *s, uint64_t session_id, uint64_t seq,
			    uint64_t floor, enum datagram_seq_class cls)
{
	s->started = 1;
	s->session_id = session_id;
	s->top = seq;
	s->window = 1;
	s->floor = floor;
	s->received++;
	s->last = cls;
	/* A restarted sender began at 0: the datagrams of the new session before this one were lost. */
	s->lost += seq - floor;
	return seq - floor;
}

int datagram_seq_behind(const struct datagram_seq *s, uint64_t session_id, uint64_t seq)
{
	if (!s->started || session_id > s->session_id)
		return 0;
	return session_id < s->session_id || (seq < s->top && s->top - seq >= DATAGRAM_SEQ_WINDOW);
}

void datagram_seq_resume(struct datagram_seq *s, uint64_t session_id, uint64_t seq)
{
	s->restarts++;
	s->resumed++;
	seq_restart(s, session_id, seq, seq, DATAGRAM_SEQ_RESTART);
	s->window =
	    ~0ULL; /* the seq numbers below were the other instance's: a copy of one is a replay */
}

void datagram_seq_refuse(struct datagram_seq *s)
{
	s->stale++;
	s->last = DATAGRAM_SEQ_STALE;
}

uint64_t datagram_seq_track(struct datagram_seq *s, uint64_t session_id, uint64_t seq)
{
	uint64_t d, bit;

	if (!s->started)
		return seq_restart(s, session_id, seq, seq, DATAGRAM_SEQ_FIRST);
	if (session_id > s->session_id) {
		s->restarts++;
		return seq_restart(s, session_id, seq, 0, DATAGRAM_SEQ_RESTART);
	}
	if (datagram_seq_behind(s, session_id, seq))
		goto stale;

	if (seq > s->top) {
		d = seq - s->top;
		s->window = d >= DATAGRAM_SEQ_WINDOW ? 1 : s->window << d | 1;
		s->top = seq;
		s->received++;
		s->lost += d - 1;
		s->last = d == 1 ? DATAGRAM_SEQ_NEXT : DATAGRAM_SEQ_GAP;
		return d - 1;
	}
	d = s->top - seq; /* < DATAGRAM_SEQ_WINDOW: not behind */
	bit = 1ULL << d;
	if (s->window & bit) {
		s->dup++;
		s->last = DATAGRAM_SEQ_DUP;
		return 0;
	}
	/* Not seen, inside the window: reordered. It was counted lost unless it predates the first one seen. */
	s->window |= bit;
	s->received++;
	s->late++;
	if (seq >= s->floor && s->lost)
		s->lost--;
	s->last = DATAGRAM_SEQ_LATE;
	return 0;

stale:
	s->stale++;
	s->last = DATAGRAM_SEQ_STALE;
	return 0;
}
