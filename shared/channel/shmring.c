/* SPDX-License-Identifier: MIT */
/*
 * shmring: guest producer and host consumer of the shared-memory channel (protocol/shm.h). See shmring.h for
 * the contracts. Memory ordering: every shared sequence word and counter is accessed with the GCC/clang
 * __atomic builtins (the C11 model on plain fixed-width ABI fields); payload bytes are copied with memcpy
 * between an acquire load and an acquire fence of the sequence word (the classic seqlock reader), so a copy is
 * only used when the word read before and after it is the same even value. The host's view of shared memory
 * is racy by nature (the guest may be hostile): nothing read from it is trusted before it is validated, and
 * no address is ever computed from a value that was not validated against the host's own mapping size.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "channel/shmring.h"

#define LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define FENCE_ACQ() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define FENCE_REL() __atomic_thread_fence(__ATOMIC_RELEASE)

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

static int is_pow2_u64(uint64_t v)
{
	return v && !(v & (v - 1));
}

static uint32_t log2_u32(uint32_t v)
{
	return (uint32_t)__builtin_ctz(v);
}

static void sat_add(uint64_t *c, uint64_t n)
{
	*c = *c + n < *c ? UINT64_MAX : *c + n;
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

/* ---- layout ---- */

struct layout {
	uint64_t ctl, sum, slots, end; /* offsets (bytes) and the end of the layout */
};

static int layout_compute(uint32_t nrings, uint32_t slots_per_ring, struct layout *l)
{
	if (nrings == 0 || nrings > VN_SHM_MAX_RINGS || slots_per_ring == 0 ||
	    slots_per_ring > VN_SHM_MAX_SLOTS || !is_pow2_u64(slots_per_ring))
		return -EINVAL;
	l->ctl = VN_SHM_HEADER_SIZE;
	l->sum = l->ctl + (uint64_t)nrings * sizeof(struct vn_shm_ring);
	l->slots = l->sum + (uint64_t)VN_SHM_SUMMARIES * sizeof(struct vn_shm_summary);
	l->end = l->slots + (uint64_t)nrings * slots_per_ring * sizeof(struct vn_shm_slot);
	return 0;
}

size_t shmwriter_region_bytes(uint32_t nrings, uint32_t slots_per_ring)
{
	struct layout l;

	if (layout_compute(nrings, slots_per_ring, &l) < 0 || l.end > SIZE_MAX)
		return 0;
	return (size_t)l.end;
}

uint32_t shmwriter_fit_slots(size_t size, uint32_t nrings)
{
	uint32_t s;

	for (s = VN_SHM_MAX_SLOTS; s; s >>= 1) {
		size_t need = shmwriter_region_bytes(nrings, s);

		if (need && need <= size)
			return s;
	}
	return 0;
}

/* ---- guest side ---- */

/* Producer-private state of one ring, on its own cache line (rings may have other producer threads). */
struct shmwriter_ring {
	uint64_t head; /* the ring's head as last published: never read back from shared memory */
	uint64_t dropped;
	uint64_t horizon;
	unsigned char pad[40];
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct shmwriter_ring) == 64, "one cache line per ring");

struct shm_writer {
	struct shmwriter_ring ring[VN_SHM_MAX_RINGS]; /* first: 64-byte aligned with the struct */
	unsigned char *base;
	size_t size;
	uint32_t nrings, slots, shift, mask;
	struct vn_shm_header *hdr;
	struct vn_shm_ring *ctl;
	struct vn_shm_summary *sum;
	struct vn_shm_slot *slot0;
	uint32_t status_seq, mbox_seq, sum_seq[VN_SHM_SUMMARIES]; /* even: last value stored */
	uint64_t mb_last_req, mb_last_send; /* last request answered */
};

uint64_t shmwriter_next_epoch(const void *base, size_t size, uint64_t fallback)
{
	const struct vn_shm_header *h = base;
	uint64_t e;

	if (base && size >= sizeof(*h) && !memcmp(h->magic, VN_SHM_MAGIC, VN_SHM_MAGIC_LEN)) {
		e = LOAD_ACQ(&h->epoch);
		if (e && e != UINT64_MAX)
			return e + 1;
	}
	return fallback ? fallback : 1;
}

struct shm_writer *shmwriter_init(void *base, size_t size, uint32_t nrings, uint32_t slots_per_ring,
				  uint64_t epoch)
{
	struct shm_writer *w = NULL;
	struct vn_shm_header *h = base;
	unsigned char *b = base;
	struct layout l;
	int err = 0;

	if (!base || ((uintptr_t)base & (VN_SHM_ALIGN - 1)) || !is_pow2_u64(size) || epoch == 0 ||
	    layout_compute(nrings, slots_per_ring, &l) < 0) {
		err = EINVAL;
		goto out;
	}
	if (l.end > size) {
		err = ENOSPC;
		goto out;
	}
	if (posix_memalign((void **)&w, 64, sizeof(*w))) {
		w = NULL;
		err = ENOMEM;
		goto out;
	}
	memset(w, 0, sizeof(*w));
	w->base = b;
	w->size = size;
	w->nrings = nrings;
	w->slots = slots_per_ring;
	w->shift = log2_u32(slots_per_ring);
	w->mask = slots_per_ring - 1;
	w->hdr = h;
	w->ctl = (struct vn_shm_ring *)(b + l.ctl);
	w->sum = (struct vn_shm_summary *)(b + l.sum);
	w->slot0 = (struct vn_shm_slot *)(b + l.slots);

	/* Unpublish first: a reader that sees epoch 0 stops trusting the old layout. */
	STORE_RLX(&h->epoch, 0);
	FENCE_REL();
	memset(b, 0, offsetof(struct vn_shm_header, mbox_host));
	memset(b + offsetof(struct vn_shm_header, mbox_guest), 0,
	       VN_SHM_HEADER_SIZE - offsetof(struct vn_shm_header, mbox_guest));
	memset(b + l.ctl, 0, (size_t)(l.end - l.ctl));
	memcpy(h->magic, VN_SHM_MAGIC, VN_SHM_MAGIC_LEN);
	h->version = VN_SHM_VERSION;
	h->header_size = VN_SHM_HEADER_SIZE;
	h->region_size = size;
	h->nrings = nrings;
	h->slots_per_ring = slots_per_ring;
	h->slot_size = sizeof(struct vn_shm_slot);
	h->ring_ctl_size = sizeof(struct vn_shm_ring);
	h->ring_ctl_offset = l.ctl;
	h->summary_offset = l.sum;
	h->slots_offset = l.slots;
	h->summary_count = VN_SHM_SUMMARIES;
	h->summary_size = sizeof(struct vn_shm_summary);
	STORE_REL(&h->epoch, epoch);
out:
	if (err)
		errno = err;
	return w;
}

void shmwriter_free(struct shm_writer *w)
{
	free(w);
}

int shmwriter_put(struct shm_writer *w, uint32_t ring, uint16_t type, const void *rec)
{
	struct vn_shm_ring *ctl;
	struct vn_shm_slot *s;
	uint64_t pos;
	uint32_t lap2;

	if (ring >= w->nrings)
		return -EINVAL;
	ctl = &w->ctl[ring];
	if ((type != VN_SHM_REC_SAMPLE && type != VN_SHM_REC_EVENT) || !rec) {
		STORE_REL(&ctl->dropped, ++w->ring[ring].dropped);
		return -EINVAL;
	}
	/* Private copy: loading the shared line, which the consumer keeps reading, would stall. */
	pos = w->ring[ring].head;
	s = &w->slot0[((size_t)ring << w->shift) + (pos & w->mask)];
	lap2 = (uint32_t)(pos >> w->shift) * 2u;
	STORE_RLX(&s->seq, lap2 + 1u);
	FENCE_REL(); /* odd before any payload byte */
	s->type = type;
	s->pad = 0;
	if (type == VN_SHM_REC_SAMPLE) {
		memcpy(s->payload.raw, rec, sizeof(struct vn_sample));
		memset(s->payload.sample.pad, 0, sizeof(s->payload.sample.pad));
		memset(s->payload.raw + sizeof(struct vn_sample), 0,
		       VN_SHM_PAYLOAD_SIZE - sizeof(struct vn_sample));
	} else {
		memcpy(s->payload.raw, rec, sizeof(struct vn_event));
		s->payload.event.pad[0] = s->payload.event.pad[1] = 0;
		s->payload.event.comm[VN_COMM_LEN - 1] = 0;
	}
	STORE_REL(&s->seq, lap2 + 2u); /* payload before even */
	w->ring[ring].head = pos + 1;
	STORE_REL(&ctl->head, pos + 1); /* slot complete before the head covers it */
	return 0;
}

void shmwriter_add_dropped(struct shm_writer *w, uint32_t ring, uint64_t n)
{
	struct vn_shm_ring *ctl;

	if (ring >= w->nrings || !n)
		return;
	ctl = &w->ctl[ring];
	w->ring[ring].dropped += n;
	STORE_REL(&ctl->dropped, w->ring[ring].dropped);
}

void shmwriter_set_horizon(struct shm_writer *w, uint32_t ring, uint64_t t_ns)
{
	if (ring >= w->nrings || t_ns <= w->ring[ring].horizon)
		return;
	w->ring[ring].horizon = t_ns;
	STORE_REL(&w->ctl[ring].horizon_ns, t_ns);
}

uint64_t shmwriter_head(const struct shm_writer *w, uint32_t ring)
{
	return ring < w->nrings ? w->ring[ring].head : 0;
}

/* Seqlock writer helpers: *local is the last even value stored in *word. */
static void seq_begin(uint32_t *word, uint32_t *local)
{
	STORE_RLX(word, *local + 1u);
	FENCE_REL();
}

static void seq_end(uint32_t *word, uint32_t *local)
{
	*local += 2u;
	STORE_REL(word, *local);
}

void shmwriter_set_status(struct shm_writer *w, const struct vn_shm_status *st)
{
	struct vn_shm_status *d = &w->hdr->status;

	seq_begin(&d->seq, &w->status_seq);
	d->agent_state = st->agent_state;
	d->guest_ncpus = st->guest_ncpus;
	d->pad = 0;
	memcpy(d->boot_id, st->boot_id, sizeof(d->boot_id));
	d->agent_start_ns = st->agent_start_ns;
	d->heartbeat_ns = st->heartbeat_ns;
	memset(d->reserved, 0, sizeof(d->reserved));
	seq_end(&d->seq, &w->status_seq);
}

int shmwriter_summary_put(struct shm_writer *w, const struct vn_shm_summary *s)
{
	uint32_t idx = (uint32_t)(s->interval_id % VN_SHM_SUMMARIES);
	struct vn_shm_summary *d = &w->sum[idx];
	struct vn_shm_summary c = *s;

	c.seq = 0;
	memset(c.reserved, 0, sizeof(c.reserved));
	if (c.phase == VN_SHM_PHASE_EMPTY || shmreader_summary_valid(&c, idx) < 0)
		return -EINVAL; /* the host would reject it */
	seq_begin(&d->seq, &w->sum_seq[idx]);
	memcpy((unsigned char *)d + sizeof(d->seq), (const unsigned char *)&c + sizeof(c.seq),
	       sizeof(*d) - sizeof(d->seq));
	seq_end(&d->seq, &w->sum_seq[idx]);
	return 0;
}

int shmwriter_mailbox_poll(struct shm_writer *w, uint64_t *req_seq, uint64_t *host_send_ns)
{
	const struct vn_shm_mbox_host *m = &w->hdr->mbox_host;
	uint32_t s1, s2;
	uint64_t req, send;

	s1 = LOAD_ACQ(&m->seq);
	req = LOAD_RLX(&m->req_seq);
	send = LOAD_RLX(&m->host_send_ns);
	FENCE_ACQ();
	s2 = LOAD_RLX(&m->seq);
	if (s1 != s2 || (s1 & 1u))
		return -EAGAIN;
	if (req == 0 || (req == w->mb_last_req && send == w->mb_last_send))
		return 0;
	*req_seq = req;
	*host_send_ns = send;
	return 1;
}

void shmwriter_mailbox_reply_cpu(struct shm_writer *w, uint64_t req_seq, uint64_t host_send_ns,
				 uint64_t guest_ns, uint32_t cpu)
{
	struct vn_shm_mbox_guest *m = &w->hdr->mbox_guest;

	seq_begin(&m->seq, &w->mbox_seq);
	STORE_RLX(&m->reply_seq, req_seq);
	STORE_RLX(&m->guest_ns, guest_ns);
	STORE_RLX(&m->echo_host_send_ns, host_send_ns);
	STORE_RLX(&m->cpu, cpu);
	seq_end(&m->seq, &w->mbox_seq);
	w->mb_last_req = req_seq;
	w->mb_last_send = host_send_ns;
}

/* ---- validation ---- */

#define BAD(...)                                             \
	do {                                                 \
		if (why && why_len)                          \
			snprintf(why, why_len, __VA_ARGS__); \
		return -EBADMSG;                             \
	} while (0)

struct area {
	const char *name;
	uint64_t off, len;
};

int shmreader_header_valid(const struct vn_shm_header *h, size_t mapped_size, char *why,
			   size_t why_len)
{
	struct area a[4];
	uint64_t limit;
	int i, j;

	if (memcmp(h->magic, VN_SHM_MAGIC, VN_SHM_MAGIC_LEN))
		BAD("bad magic");
	if (h->version != VN_SHM_VERSION)
		BAD("unsupported version %u (this build reads %u)", h->version, VN_SHM_VERSION);
	if (h->header_size != VN_SHM_HEADER_SIZE)
		BAD("header_size %u (expected %u)", h->header_size, VN_SHM_HEADER_SIZE);
	if (h->epoch == 0)
		BAD("epoch 0 (not initialised)");
	if (!is_pow2_u64(h->region_size) || h->region_size < VN_SHM_HEADER_SIZE)
		BAD("region_size %llu is not a power of two >= %u",
		    (unsigned long long)h->region_size, VN_SHM_HEADER_SIZE);
	if (h->nrings == 0 || h->nrings > VN_SHM_MAX_RINGS)
		BAD("nrings %u out of 1..%u", h->nrings, VN_SHM_MAX_RINGS);
	if (!is_pow2_u64(h->slots_per_ring) || h->slots_per_ring > VN_SHM_MAX_SLOTS)
		BAD("slots_per_ring %u is not a power of two <= %u", h->slots_per_ring,
		    VN_SHM_MAX_SLOTS);
	if (h->slot_size != sizeof(struct vn_shm_slot))
		BAD("slot_size %u (expected %zu)", h->slot_size, sizeof(struct vn_shm_slot));
	if (h->ring_ctl_size != sizeof(struct vn_shm_ring))
		BAD("ring_ctl_size %u (expected %zu)", h->ring_ctl_size,
		    sizeof(struct vn_shm_ring));
	if (h->summary_count != VN_SHM_SUMMARIES)
		BAD("summary_count %u (expected %u)", h->summary_count, VN_SHM_SUMMARIES);
	if (h->summary_size != sizeof(struct vn_shm_summary))
		BAD("summary_size %u (expected %zu)", h->summary_size,
		    sizeof(struct vn_shm_summary));
	if (!all_zero(h->reserved0, sizeof(h->reserved0)) ||
	    !all_zero(h->reserved1, sizeof(h->reserved1)))
		BAD("reserved header bytes are not 0");

	limit = mapped_size < h->region_size ? mapped_size : h->region_size;
	a[0] = (struct area){ "header", 0, VN_SHM_HEADER_SIZE };
	a[1] = (struct area){ "ring counters", h->ring_ctl_offset,
			      (uint64_t)h->nrings * sizeof(struct vn_shm_ring) };
	a[2] = (struct area){ "summaries", h->summary_offset,
			      (uint64_t)VN_SHM_SUMMARIES * sizeof(struct vn_shm_summary) };
	a[3] =
	    (struct area){ "slots", h->slots_offset,
			   (uint64_t)h->nrings * h->slots_per_ring * sizeof(struct vn_shm_slot) };
	for (i = 0; i < 4; i++) {
		if (a[i].off % VN_SHM_ALIGN)
			BAD("%s offset %llu is not %u-byte aligned", a[i].name,
			    (unsigned long long)a[i].off, VN_SHM_ALIGN);
		if (a[i].len > limit || a[i].off > limit - a[i].len)
			BAD("%s [%llu, +%llu) outside the %llu usable bytes", a[i].name,
			    (unsigned long long)a[i].off, (unsigned long long)a[i].len,
			    (unsigned long long)limit);
	}
	for (i = 0; i < 4; i++)
		for (j = i + 1; j < 4; j++)
			if (a[i].off < a[j].off + a[j].len && a[j].off < a[i].off + a[i].len)
				BAD("%s overlaps %s", a[i].name, a[j].name);
	return 0;
}

int shmreader_record_valid(const struct vn_shm_slot *s)
{
	const struct vn_sample *sm = &s->payload.sample;
	const struct vn_event *e = &s->payload.event;
	uint64_t span;

	if (s->pad)
		return -EBADMSG;
	switch (s->type) {
	case VN_SHM_REC_SAMPLE:
		if (sm->kind > VN_SAMPLE_WINDOW || !all_zero(sm->pad, sizeof(sm->pad)) ||
		    !all_zero(s->payload.raw + sizeof(*sm), VN_SHM_PAYLOAD_SIZE - sizeof(*sm)))
			return -EBADMSG;
		if (sm->end_ns < sm->start_ns || sm->end_ns - sm->start_ns > VN_SHM_MAX_SPAN_NS)
			return -EBADMSG;
		return 0;
	case VN_SHM_REC_EVENT:
		if (e->cls == VN_CLASS_NONE || e->cls >= VN_CLASS_MAX ||
		    e->parent_cls >= VN_CLASS_MAX)
			return -EBADMSG;
		if (e->flags & ~(VN_EVF_TRUNCATED | VN_EVF_DESYNC) || e->pad[0] || e->pad[1] ||
		    e->comm[VN_COMM_LEN - 1])
			return -EBADMSG;
		if (e->end_ns < e->start_ns)
			return -EBADMSG;
		span = e->end_ns - e->start_ns;
		if (span > VN_SHM_MAX_SPAN_NS)
			return -EBADMSG;
		/* net time fits in the event; a steal observation may lag its window (noise.h) */
		if (e->cls != VN_CLASS_STEAL && e->net_ns > span)
			return -EBADMSG;
		return 0;
	default:
		return -EBADMSG;
	}
}

int shmreader_summary_valid(const struct vn_shm_summary *s, uint32_t idx)
{
	uint64_t span, cap, sum = 0;
	int c;

	if (s->phase >= VN_SHM_PHASE_MAX)
		return -EBADMSG;
	if (s->phase == VN_SHM_PHASE_EMPTY)
		return 0;
	if (idx >= VN_SHM_SUMMARIES || s->interval_id % VN_SHM_SUMMARIES != idx)
		return -EBADMSG;
	if (s->end_ns < s->start_ns || s->end_ns - s->start_ns > VN_SHM_MAX_SPAN_NS)
		return -EBADMSG;
	span = s->end_ns - s->start_ns;
	if (s->ncpus > VN_SHM_MAX_RINGS || s->flagged_cpus > s->ncpus)
		return -EBADMSG;
	cap = span * s->ncpus; /* < 2^47 * 2^8: no overflow */
	if (s->noise_ns > cap || s->max_single_ns > span)
		return -EBADMSG;
	if (s->compute_min_ns > s->compute_avg_ns || s->compute_avg_ns > s->compute_max_ns ||
	    s->compute_max_ns > span)
		return -EBADMSG;
	if (s->class_ns[VN_CLASS_NONE])
		return -EBADMSG;
	for (c = 0; c < VN_CLASS_MAX; c++) {
		if (s->class_ns[c] > cap)
			return -EBADMSG;
		sum += s->class_ns[c];
	}
	if (sum > cap || !all_zero(s->reserved, sizeof(s->reserved)))
		return -EBADMSG;
	return 0;
}

static int status_valid(const struct vn_shm_status *s)
{
	if (s->agent_state >= VN_SHM_AGENT_MAX || s->guest_ncpus > VN_SHM_MAX_GUEST_CPUS ||
	    s->pad || !all_zero(s->reserved, sizeof(s->reserved)))
		return -EBADMSG;
	if (s->heartbeat_ns && s->heartbeat_ns < s->agent_start_ns)
		return -EBADMSG;
	return 0;
}

/* ---- host side ---- */

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
	const struct vn_shm_summary *sum;
	const struct vn_shm_slot *slot0;
	struct shmreader_ring_state ring[VN_SHM_MAX_RINGS];
	/* clock-sync mailbox */
	uint32_t mb_lock; /* last even value stored in mbox_host.seq */
	uint64_t mb_req, mb_send_ns;
	int mb_pending;
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
		sat_add(&rd->st.lost, rd->ring[r].head - rd->ring[r].tail);
	rd->nrings = 0;
	rd->mb_pending = 0;
}

__attribute__((format(printf, 3, 4))) static void go_corrupt(struct shm_reader *rd, uint64_t epoch,
							     const char *fmt, ...)
{
	va_list ap;

	if (rd->state == SHMREADER_OK)
		epoch_end(rd);
	if (rd->state != SHMREADER_CORRUPT)
		sat_add(&rd->st.corrupt, 1);
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
	FENCE_ACQ();
	if (LOAD_RLX(&live->epoch) != e || h.epoch != e) {
		sat_add(&rd->st.retries, 1); /* being rewritten: look again next time */
		return;
	}
	if (shmreader_header_valid(&h, rd->mapped, why, sizeof(why)) < 0) {
		go_corrupt(rd, e, "epoch %llu: %s", (unsigned long long)e, why);
		return;
	}
	rd->hdr = h;
	rd->nrings = h.nrings;
	rd->slots = h.slots_per_ring;
	rd->shift = log2_u32(h.slots_per_ring);
	rd->mask = h.slots_per_ring - 1;
	rd->ctl = (const struct vn_shm_ring *)(rd->base + h.ring_ctl_offset);
	rd->sum = (const struct vn_shm_summary *)(rd->base + h.summary_offset);
	rd->slot0 = (const struct vn_shm_slot *)(rd->base + h.slots_offset);
	for (r = 0; r < rd->nrings; r++) {
		struct shmreader_ring_state *rs = &rd->ring[r];

		rs->horizon = 0; /* the first look takes whatever the guest says */
		rs->head = LOAD_ACQ(&rd->ctl[r].head);
		rs->dropped = LOAD_RLX(&rd->ctl[r].dropped);
		rs->tail = rs->head > rd->slots ? rs->head - keep_after_overrun(rd->slots) : 0;
		sat_add(&rd->st.missed, rs->tail);
		sat_add(&rd->st.producer_dropped, rs->dropped);
	}
	rd->mb_pending = 0;
	rd->epoch = e;
	rd->state = SHMREADER_OK;
	sat_add(&rd->st.epochs, 1);
}

enum shmreader_state shmreader_check(struct shm_reader *rd)
{
	const struct vn_shm_header *live = live_hdr(rd);
	unsigned char cur[VN_SHM_IMMUTABLE_SIZE];
	uint64_t e = LOAD_ACQ(&live->epoch);

	if (rd->state == SHMREADER_OK) {
		if (e == rd->epoch) {
			memcpy(cur, live, sizeof(cur));
			FENCE_ACQ();
			if (!memcmp(cur, &rd->hdr, sizeof(cur)))
				return SHMREADER_OK;
			e = LOAD_RLX(&live->epoch);
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
	return LOAD_RLX(&live_hdr(rd)->epoch) != rd->epoch;
}

/* Take a new look at the ring's counters; returns 0 or -EPROTO (went CORRUPT). */
static int ring_refresh(struct shm_reader *rd, uint32_t ring, uint64_t *head)
{
	struct shmreader_ring_state *rs = &rd->ring[ring];
	uint64_t hz = LOAD_ACQ(&rd->ctl[ring].horizon_ns); /* before head: head covers it */
	uint64_t h = LOAD_ACQ(&rd->ctl[ring].head);
	uint64_t d = LOAD_RLX(&rd->ctl[ring].dropped);

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
	sat_add(&rd->st.producer_dropped, d - rs->dropped);
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
		sat_add(&rd->st.lost, nt - rs->tail);
		rs->tail = nt;
	}
	slots = rd->slot0 + ((size_t)ring << rd->shift);
	while (rs->tail < rs->head && visits < max_records) {
		visits++;
		pos = rs->tail;
		sl = &slots[pos & rd->mask];
		expect = (uint32_t)(pos >> rd->shift) * 2u + 2u;
		for (tries = 0;; tries++) {
			s1 = LOAD_ACQ(&sl->seq);
			memcpy(&copy, sl, sizeof(copy));
			FENCE_ACQ();
			s2 = LOAD_RLX(&sl->seq);
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
			sat_add(&rd->st.retries, 1);
			cpu_relax();
		}
		if (v == SLOT_GOOD && shmreader_record_valid(&copy) == 0) {
			rs->tail = pos + 1;
			sat_add(&rd->st.records, 1);
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
				sat_add(&rd->st.lost, nt - pos);
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
			sat_add(&rd->st.stale, 1);
		else if (v == SLOT_TORN)
			sat_add(&rd->st.torn, 1);
		else
			sat_add(&rd->st.invalid, 1);
	}
	return n;
}

/*
 * Copy a guest-written area protected by the sequence word *seq (odd while written) into dst; 0, or -EAGAIN
 * (counted as a retry) when the guest was writing it or changed it during the copy.
 */
static int seq_copy(struct shm_reader *rd, const uint32_t *seq, const void *src, void *dst,
		    size_t len)
{
	uint32_t s1 = LOAD_ACQ(seq), s2;

	memcpy(dst, src, len);
	FENCE_ACQ();
	s2 = LOAD_RLX(seq);
	if (s1 != s2 || (s1 & 1u)) {
		sat_add(&rd->st.retries, 1);
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
	if (status_valid(&c) < 0) {
		sat_add(&rd->st.status_invalid, 1);
		return -EBADMSG;
	}
	*out = c;
	return 0;
}

int shmreader_mailbox_send(struct shm_reader *rd, void *base_rw, uint64_t host_send_ns,
			   uint64_t *req_seq)
{
	struct vn_shm_mbox_host *m;

	if (base_rw != (const void *)rd->base)
		return -EINVAL;
	if (rd->state != SHMREADER_OK)
		return -ENOTCONN;
	/* Fixed offset inside the first VN_SHM_HEADER_SIZE bytes, which the mapping always holds. */
	m = (struct vn_shm_mbox_host *)((unsigned char *)base_rw +
					offsetof(struct vn_shm_header, mbox_host));
	rd->mb_req++;
	STORE_RLX(&m->seq, rd->mb_lock + 1u);
	FENCE_REL();
	STORE_RLX(&m->pad, 0);
	STORE_RLX(&m->req_seq, rd->mb_req);
	STORE_RLX(&m->host_send_ns, host_send_ns);
	rd->mb_lock += 2u;
	STORE_REL(&m->seq, rd->mb_lock);
	rd->mb_send_ns = host_send_ns;
	rd->mb_pending = 1;
	*req_seq = rd->mb_req;
	return 0;
}

int shmreader_mailbox_reply(struct shm_reader *rd, struct shmreader_clock_reply *out)
{
	const struct vn_shm_mbox_guest *m = &live_hdr(rd)->mbox_guest;
	struct vn_shm_mbox_guest c;

	if (rd->state != SHMREADER_OK || !rd->mb_pending)
		return -ENOTCONN;
	if (seq_copy(rd, &m->seq, m, &c, sizeof(c)))
		return -EAGAIN;
	if (c.pad || c.pad2 || !all_zero(c.reserved, sizeof(c.reserved)) ||
	    (c.cpu >= VN_SHM_MAX_GUEST_CPUS && c.cpu != VN_SHM_CPU_UNKNOWN)) {
		sat_add(&rd->st.mailbox_invalid, 1);
		return -EBADMSG;
	}
	if (c.reply_seq != rd->mb_req || c.echo_host_send_ns != rd->mb_send_ns)
		return 0; /* not answered yet, or an answer to an older request */
	if (c.guest_ns == 0) {
		sat_add(&rd->st.mailbox_invalid, 1);
		return -EBADMSG;
	}
	rd->mb_pending = 0;
	out->req_seq = c.reply_seq;
	out->host_send_ns = c.echo_host_send_ns;
	out->guest_ns = c.guest_ns;
	out->cpu = c.cpu;
	return 1;
}

int shmreader_summary(struct shm_reader *rd, uint32_t idx, struct vn_shm_summary *out)
{
	const struct vn_shm_summary *m;
	struct vn_shm_summary c;

	if (idx >= VN_SHM_SUMMARIES)
		return -EINVAL;
	if (rd->state != SHMREADER_OK)
		return -ENOTCONN;
	m = &rd->sum[idx];
	if (seq_copy(rd, &m->seq, m, &c, sizeof(c)))
		return -EAGAIN;
	if (shmreader_summary_valid(&c, idx) < 0) {
		sat_add(&rd->st.summary_invalid, 1);
		return -EBADMSG;
	}
	if (c.phase == VN_SHM_PHASE_EMPTY)
		return -ENODATA;
	*out = c;
	return 0;
}

int shmreader_summary_latest(struct shm_reader *rd, uint32_t min_phase, struct vn_shm_summary *out)
{
	struct vn_shm_summary c;
	uint32_t i;
	int found = 0;

	if (rd->state != SHMREADER_OK)
		return -ENOTCONN;
	for (i = 0; i < VN_SHM_SUMMARIES; i++) {
		if (shmreader_summary(rd, i, &c) < 0 || c.phase < min_phase)
			continue;
		if (!found || c.interval_id > out->interval_id) {
			*out = c;
			found = 1;
		}
	}
	return found ? 0 : -ENODATA;
}
