/* SPDX-License-Identifier: MIT */
/*
 * shmregion: the validity rules of the shared region's structures (see shmregion.h). Everything here works on
 * private copies; nothing is trusted before it passes, and no address is ever computed from a value that was
 * not checked against the host's own mapping size.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "channel/shmregion.h"

int shmregion_all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

#define BAD(...)                                             \
	do {                                                 \
		if (why && why_len)                          \
			snprintf(why, why_len, __VA_ARGS__); \
		return -EBADMSG;                             \
	} while (0)

int shmregion_areas_valid(const struct shmregion_area *a, int n, uint64_t limit, char *why,
			  size_t why_len)
{
	int i, j;

	for (i = 0; i < n; i++) {
		if (a[i].off % VN_SHM_ALIGN)
			BAD("%s offset %llu is not %u-byte aligned", a[i].name,
			    (unsigned long long)a[i].off, VN_SHM_ALIGN);
		if (a[i].len > limit || a[i].off > limit - a[i].len)
			BAD("%s [%llu, +%llu) outside the %llu usable bytes", a[i].name,
			    (unsigned long long)a[i].off, (unsigned long long)a[i].len,
			    (unsigned long long)limit);
	}
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (a[i].off < a[j].off + a[j].len && a[j].off < a[i].off + a[i].len)
				BAD("%s overlaps %s", a[i].name, a[j].name);
	return 0;
}

int shmregion_header_valid(const struct vn_shm_header *h, size_t mapped_size, char *why,
			   size_t why_len)
{
	struct shmregion_area a[3];
	uint64_t limit;

	if (memcmp(h->magic, VN_SHM_MAGIC, VN_SHM_MAGIC_LEN))
		BAD("bad magic");
	if (h->version != VN_SHM_VERSION)
		BAD("unsupported version %u (this build reads %u)", h->version, VN_SHM_VERSION);
	if (h->header_size != VN_SHM_HEADER_SIZE)
		BAD("header_size %u (expected %u)", h->header_size, VN_SHM_HEADER_SIZE);
	if (h->epoch == 0)
		BAD("epoch 0 (not initialised)");
	if (!shmregion_pow2(h->region_size) || h->region_size < 2 * VN_SHM_HEADER_SIZE)
		BAD("region_size %llu is not a power of two >= %u",
		    (unsigned long long)h->region_size, 2 * VN_SHM_HEADER_SIZE);
	if (h->nrings == 0 || h->nrings > VN_SHM_MAX_RINGS)
		BAD("nrings %u out of 1..%u", h->nrings, VN_SHM_MAX_RINGS);
	if (!shmregion_pow2(h->slots_per_ring) || h->slots_per_ring > VN_SHM_MAX_SLOTS)
		BAD("slots_per_ring %u is not a power of two <= %u", h->slots_per_ring,
		    VN_SHM_MAX_SLOTS);
	if (h->slot_size != sizeof(struct vn_shm_slot))
		BAD("slot_size %u (expected %zu)", h->slot_size, sizeof(struct vn_shm_slot));
	if (h->ring_ctl_size != sizeof(struct vn_shm_ring))
		BAD("ring_ctl_size %u (expected %zu)", h->ring_ctl_size,
		    sizeof(struct vn_shm_ring));
	if (!shmregion_all_zero(h->reserved0, sizeof(h->reserved0)) ||
	    !shmregion_all_zero(h->reserved1, sizeof(h->reserved1)))
		BAD("reserved header bytes are not 0");

	/* the guest area is the lower half (the upper half is the host's, protocol/dtl.h) */
	limit = (mapped_size < h->region_size ? mapped_size : h->region_size) / 2;
	a[0] = (struct shmregion_area){ "header", 0, VN_SHM_HEADER_SIZE };
	a[1] = (struct shmregion_area){ "ring counters", h->ring_ctl_offset,
					(uint64_t)h->nrings * sizeof(struct vn_shm_ring) };
	a[2] = (struct shmregion_area){ "slots", h->slots_offset,
					(uint64_t)h->nrings * h->slots_per_ring *
					    sizeof(struct vn_shm_slot) };
	return shmregion_areas_valid(a, 3, limit, why, why_len);
}

int shmregion_record_valid(const struct vn_shm_slot *s)
{
	const struct vn_sample *sm = &s->payload.sample;
	const struct vn_event *e = &s->payload.event;
	uint64_t span;

	if (s->pad)
		return -EBADMSG;
	switch (s->type) {
	case VN_SHM_REC_SAMPLE:
		if (sm->kind > VN_SAMPLE_WINDOW || !shmregion_all_zero(sm->pad, sizeof(sm->pad)) ||
		    !shmregion_all_zero(s->payload.raw + sizeof(*sm),
					VN_SHM_PAYLOAD_SIZE - sizeof(*sm)))
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

int shmregion_status_valid(const struct vn_shm_status *s)
{
	if (s->agent_state >= VN_SHM_AGENT_MAX || s->guest_ncpus > VN_SHM_MAX_GUEST_CPUS ||
	    s->pad || !shmregion_all_zero(s->reserved, sizeof(s->reserved)))
		return -EBADMSG;
	if (s->heartbeat_ns && s->heartbeat_ns < s->agent_start_ns)
		return -EBADMSG;
	return 0;
}

int shmregion_reply_valid(const struct vn_shm_mbox_guest *m)
{
	if (m->pad || m->pad2 || !shmregion_all_zero(m->reserved, sizeof(m->reserved)) ||
	    (m->cpu >= VN_SHM_MAX_GUEST_CPUS && m->cpu != VN_SHM_CPU_UNKNOWN))
		return -EBADMSG;
	return 0;
}
