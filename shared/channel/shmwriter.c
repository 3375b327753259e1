/* SPDX-License-Identifier: MIT */
/*
 * shmwriter: the guest producer of the shared-memory channel (protocol/shm.h). See shmwriter.h for the
 * contracts and shmregion.h for the memory ordering. Everything it writes lies in the lower half
 * of the region; the upper half (protocol/dtl.h) belongs to the host. A record's slot goes odd (lap * 2 + 1)
 * before any payload byte and even (lap * 2 + 2) after the last; the ring's head is stored after the slot is
 * complete.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "channel/shmregion.h"
#include "channel/shmwriter.h"

/* The region's layout: header, ring counters, then the slots of ring 0, 1, ... */
struct layout {
	uint64_t ctl, slots, end; /* offsets (bytes) and the end of the layout */
};

static int layout_compute(uint32_t nrings, uint32_t slots_per_ring, struct layout *l)
{
	if (nrings == 0 || nrings > VN_SHM_MAX_RINGS || slots_per_ring == 0 ||
	    slots_per_ring > VN_SHM_MAX_SLOTS || !shmregion_pow2(slots_per_ring))
		return -EINVAL;
	l->ctl = VN_SHM_HEADER_SIZE;
	l->slots = l->ctl + (uint64_t)nrings * sizeof(struct vn_shm_ring);
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

		if (need && need <= size / 2) /* the guest area is the lower half */
			return s;
	}
	return 0;
}

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
	struct vn_shm_slot *slot0;
	uint32_t status_seq; /* even: the last value stored */
};

uint64_t shmwriter_next_epoch(const void *base, size_t size, uint64_t fallback)
{
	const struct vn_shm_header *h = base;
	uint64_t e;

	if (base && size >= sizeof(*h) && !memcmp(h->magic, VN_SHM_MAGIC, VN_SHM_MAGIC_LEN)) {
		e = SHM_LOAD_ACQ(&h->epoch);
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

	if (!base || ((uintptr_t)base & (VN_SHM_ALIGN - 1)) || !shmregion_pow2(size) ||
	    epoch == 0 || layout_compute(nrings, slots_per_ring, &l) < 0) {
		err = EINVAL;
		goto out;
	}
	if (l.end > size / 2) { /* never touch the upper half (the host's DTL) */
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
	w->shift = shmregion_shift(slots_per_ring);
	w->mask = slots_per_ring - 1;
	w->hdr = h;
	w->ctl = (struct vn_shm_ring *)(b + l.ctl);
	w->slot0 = (struct vn_shm_slot *)(b + l.slots);

	/* Unpublish first: a reader that sees epoch 0 stops trusting the old layout. */
	SHM_STORE_RLX(&h->epoch, 0);
	SHM_FENCE_REL();
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
	h->slots_offset = l.slots;
	SHM_STORE_REL(&h->epoch, epoch);
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
		SHM_STORE_REL(&ctl->dropped, ++w->ring[ring].dropped);
		return -EINVAL;
	}
	/* Private copy: loading the shared line, which the consumer keeps reading, would stall. */
	pos = w->ring[ring].head;
	s = &w->slot0[((size_t)ring << w->shift) + (pos & w->mask)];
	lap2 = (uint32_t)(pos >> w->shift) * 2u;
	SHM_STORE_RLX(&s->seq, lap2 + 1u);
	SHM_FENCE_REL(); /* odd before any payload byte */
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
	SHM_STORE_REL(&s->seq, lap2 + 2u); /* payload before even */
	w->ring[ring].head = pos + 1;
	SHM_STORE_REL(&ctl->head, pos + 1); /* slot complete before the head covers it */
	return 0;
}

void shmwriter_add_dropped(struct shm_writer *w, uint32_t ring, uint64_t n)
{
	struct vn_shm_ring *ctl;

	if (ring >= w->nrings || !n)
		return;
	ctl = &w->ctl[ring];
	w->ring[ring].dropped += n;
	SHM_STORE_REL(&ctl->dropped, w->ring[ring].dropped);
}

void shmwriter_set_horizon(struct shm_writer *w, uint32_t ring, uint64_t t_ns)
{
	if (ring >= w->nrings || t_ns <= w->ring[ring].horizon)
		return;
	w->ring[ring].horizon = t_ns;
	SHM_STORE_REL(&w->ctl[ring].horizon_ns, t_ns);
}

uint64_t shmwriter_head(const struct shm_writer *w, uint32_t ring)
{
	return ring < w->nrings ? w->ring[ring].head : 0;
}

void shmwriter_set_status(struct shm_writer *w, const struct vn_shm_status *st)
{
	struct vn_shm_status *d = &w->hdr->status;

	shmregion_seq_begin(&d->seq, &w->status_seq);
	d->agent_state = st->agent_state;
	d->guest_ncpus = st->guest_ncpus;
	d->pad = 0;
	memcpy(d->boot_id, st->boot_id, sizeof(d->boot_id));
	d->agent_start_ns = st->agent_start_ns;
	d->heartbeat_ns = st->heartbeat_ns;
	memset(d->reserved, 0, sizeof(d->reserved));
	shmregion_seq_end(&d->seq, &w->status_seq);
}
