/* SPDX-License-Identifier: MIT */
/*
 * dtlregion: the layout and validity rules of the dispatch trace log's host area (see dtlregion.h and
 * protocol/dtl.h). Everything here works on private copies; nothing is trusted before it passes, and no offset
 * is accepted that was not checked against the reader's own mapping size.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "channel/dtlregion.h"
#include "channel/shmregion.h"

static uint64_t align64(uint64_t v)
{
	return (v + VN_SHM_ALIGN - 1) & ~(uint64_t)(VN_SHM_ALIGN - 1);
}

/* Offsets of everything but the entries, for nvcpus vCPUs and ncauses causes. */
static uint64_t layout_fixed(uint32_t nvcpus, uint32_t ncauses, struct dtlregion_layout *l)
{
	l->ring_ctl_offset = VN_DTL_HEADER_SIZE;
	l->agg_offset = l->ring_ctl_offset + (uint64_t)nvcpus * sizeof(struct vn_dtl_ring);
	l->cause_offset =
	    l->agg_offset + (uint64_t)nvcpus * VN_DTL_AGGS * sizeof(struct vn_dtl_agg);
	l->entries_offset =
	    align64(l->cause_offset + (uint64_t)ncauses * sizeof(struct vn_dtl_cause));
	return l->entries_offset;
}

int dtlregion_layout(uint64_t area_size, uint32_t nvcpus, uint32_t ncauses, uint32_t max_entries,
		     struct dtlregion_layout *out)
{
	struct dtlregion_layout l;
	uint64_t fixed, room;
	uint32_t e;

	if (!ncauses)
		ncauses = 256;
	if (!max_entries || max_entries > VN_DTL_MAX_ENTRIES)
		max_entries = VN_DTL_MAX_ENTRIES;
	if (!out || nvcpus == 0 || nvcpus > VN_DTL_MAX_VCPUS || ncauses > VN_DTL_MAX_CAUSES ||
	    max_entries < VN_DTL_MIN_ENTRIES)
		return -EINVAL;
	fixed = layout_fixed(nvcpus, ncauses, &l);
	if (area_size < fixed)
		return -ENOSPC;
	room = (area_size - fixed) / nvcpus / sizeof(struct vn_dtl_entry);
	e = 1u << (31 -
		   __builtin_clz(max_entries)); /* max_entries rounded down to a power of two */
	while (e > room && e >= VN_DTL_MIN_ENTRIES)
		e >>= 1;
	if (e < VN_DTL_MIN_ENTRIES)
		return -ENOSPC;
	l.entries_per_vcpu = e;
	l.ncauses = ncauses;
	l.end = l.entries_offset + (uint64_t)nvcpus * e * sizeof(struct vn_dtl_entry);
	*out = l;
	return 0;
}

#define BAD(...)                                             \
	do {                                                 \
		if (why && why_len)                          \
			snprintf(why, why_len, __VA_ARGS__); \
		return -EBADMSG;                             \
	} while (0)

static int sizes_valid(const struct vn_dtl_header *h, char *why, size_t why_len)
{
	if (h->entry_size != sizeof(struct vn_dtl_entry))
		BAD("entry_size %u (expected %zu)", h->entry_size, sizeof(struct vn_dtl_entry));
	if (h->ring_ctl_size != sizeof(struct vn_dtl_ring))
		BAD("ring_ctl_size %u (expected %zu)", h->ring_ctl_size,
		    sizeof(struct vn_dtl_ring));
	if (h->agg_size != sizeof(struct vn_dtl_agg))
		BAD("agg_size %u (expected %zu)", h->agg_size, sizeof(struct vn_dtl_agg));
	if (h->cause_size != sizeof(struct vn_dtl_cause))
		BAD("cause_size %u (expected %zu)", h->cause_size, sizeof(struct vn_dtl_cause));
	return 0;
}

int dtlregion_header_valid(const struct vn_dtl_header *h, size_t area_size, char *why,
			   size_t why_len)
{
	struct shmregion_area a[5];
	uint64_t limit;

	if (memcmp(h->magic, VN_DTL_MAGIC, VN_DTL_MAGIC_LEN))
		BAD("bad magic");
	if (h->version != VN_DTL_VERSION)
		BAD("unsupported DTL version %u (this build reads %u)", h->version, VN_DTL_VERSION);
	if (h->header_size != VN_DTL_HEADER_SIZE)
		BAD("header_size %u (expected %u)", h->header_size, VN_DTL_HEADER_SIZE);
	if (h->host_epoch == 0)
		BAD("host epoch 0 (not initialised)");
	if (!shmregion_pow2(h->area_size) || h->area_size < VN_DTL_HEADER_SIZE)
		BAD("area_size %llu is not a power of two >= %u", (unsigned long long)h->area_size,
		    VN_DTL_HEADER_SIZE);
	if (h->nvcpus == 0 || h->nvcpus > VN_DTL_MAX_VCPUS)
		BAD("nvcpus %u out of 1..%u", h->nvcpus, VN_DTL_MAX_VCPUS);
	if (!shmregion_pow2(h->entries_per_vcpu) || h->entries_per_vcpu < VN_DTL_MIN_ENTRIES ||
	    h->entries_per_vcpu > VN_DTL_MAX_ENTRIES)
		BAD("entries_per_vcpu %u is not a power of two in %u..%u", h->entries_per_vcpu,
		    VN_DTL_MIN_ENTRIES, VN_DTL_MAX_ENTRIES);
	if (sizes_valid(h, why, why_len))
		return -EBADMSG;
	if (h->ncauses == 0 || h->ncauses > VN_DTL_MAX_CAUSES)
		BAD("ncauses %u out of 1..%u", h->ncauses, VN_DTL_MAX_CAUSES);
	if (h->detail != VN_DTL_DETAIL_CLASS && h->detail != VN_DTL_DETAIL_TASK)
		BAD("unknown detail %u", h->detail);
	if (!shmregion_all_zero(h->reserved0, sizeof(h->reserved0)) ||
	    !shmregion_all_zero(h->reserved1, sizeof(h->reserved1)))
		BAD("reserved header bytes are not 0");
	limit = area_size < h->area_size ? area_size : h->area_size;
	a[0] = (struct shmregion_area){ "header", 0, VN_DTL_HEADER_SIZE };
	a[1] = (struct shmregion_area){ "ring counters", h->ring_ctl_offset,
					(uint64_t)h->nvcpus * sizeof(struct vn_dtl_ring) };
	a[2] = (struct shmregion_area){ "aggregates", h->agg_offset,
					(uint64_t)h->nvcpus * VN_DTL_AGGS *
					    sizeof(struct vn_dtl_agg) };
	a[3] = (struct shmregion_area){ "causes", h->cause_offset,
					(uint64_t)h->ncauses * sizeof(struct vn_dtl_cause) };
	a[4] = (struct shmregion_area){ "entries", h->entries_offset,
					(uint64_t)h->nvcpus * h->entries_per_vcpu *
					    sizeof(struct vn_dtl_entry) };
	return shmregion_areas_valid(a, 5, limit, why, why_len);
}

int dtlregion_status_valid(const struct vn_dtl_status *s)
{
	/* times are checked by the reader against its own clock (a future horizon or heartbeat) */
	if (s->flags & ~(uint32_t)VN_DTL_S_MASK ||
	    !shmregion_all_zero(s->reserved, sizeof(s->reserved)))
		return -EBADMSG;
	return 0;
}

int dtlregion_entry_valid(const struct vn_dtl_entry *e)
{
	if (e->kind == VN_DTL_KIND_NONE || e->kind >= VN_DTL_KIND_MAX ||
	    e->cls == VN_DTL_CLASS_NONE || e->cls >= VN_DTL_CLASS_MAX ||
	    e->flags & ~(uint32_t)VN_DTL_F_MASK || e->pad)
		return -EBADMSG;
	if (e->flags & VN_DTL_F_HALTED && e->kind != VN_DTL_KIND_BLOCKED)
		return -EBADMSG; /* a runnable vCPU is not halted */
	if (e->cause && VN_DTL_CAUSE_GEN(e->cause) == 0)
		return -EBADMSG;
	if (e->end_ns <= e->start_ns || e->end_ns - e->start_ns > VN_DTL_MAX_SPAN_NS)
		return -EBADMSG;
	return 0;
}

int dtlregion_cause_valid(const struct vn_dtl_cause *c, uint32_t detail)
{
	size_t n;

	if (c->pad || c->pad2 || !shmregion_all_zero(c->reserved, sizeof(c->reserved)))
		return -EBADMSG;
	if (c->gen == 0) /* unused: nothing in it */
		return c->cls || c->pid || !shmregion_all_zero(c->comm, sizeof(c->comm)) ? -EBADMSG
											 : 0;
	if (c->cls == VN_DTL_CLASS_NONE || c->cls >= VN_DTL_CLASS_MAX)
		return -EBADMSG;
	if (detail != VN_DTL_DETAIL_TASK) /* class only: a name or a pid here is a leak */
		return c->pid || !shmregion_all_zero(c->comm, sizeof(c->comm)) ? -EBADMSG : 0;
	n = strnlen(c->comm, sizeof(c->comm));
	if (n == sizeof(c->comm) || !shmregion_all_zero(c->comm + n, sizeof(c->comm) - n))
		return -EBADMSG; /* terminated and NUL-padded */
	return 0;
}

int dtlregion_agg_valid(const struct vn_dtl_agg *a)
{
	uint64_t span, sum, count = 0;
	uint32_t i;

	if (a->isa > 2 || a->nexit > VN_DTL_AGG_TOP ||
	    !shmregion_all_zero(a->reserved, sizeof(a->reserved)))
		return -EBADMSG;
	if (a->end_ns <= a->start_ns || a->end_ns - a->start_ns > VN_DTL_MAX_SPAN_NS)
		return -EBADMSG;
	span = a->end_ns - a->start_ns;
	if (a->exit_ns > span || a->other_exit_ns > a->exit_ns || a->irq_ns > span)
		return -EBADMSG;
	sum = a->other_exit_ns;
	for (i = 0; i < VN_DTL_AGG_TOP; i++) {
		const struct vn_dtl_exit *x = &a->exit[i];

		if (i >= a->nexit) {
			if (x->reason || x->count || x->total_ns)
				return -EBADMSG;
			continue;
		}
		if (x->total_ns > span) /* each <= span <= 2^47: the sum cannot overflow */
			return -EBADMSG;
		sum += x->total_ns;
		count += x->count;
	}
	if (sum != a->exit_ns || count > a->exit_count)
		return -EBADMSG;
	return 0;
}

const char *dtlregion_class_name(uint32_t cls)
{
	static const char *const names[VN_DTL_CLASS_MAX] = {
		[VN_DTL_CLASS_NONE] = "none",
		[VN_DTL_CLASS_OTHER_VCPU] = "vcpu-of-another-domain",
		[VN_DTL_CLASS_HOST_KTHREAD] = "host-kernel-thread",
		[VN_DTL_CLASS_HOST_USER] = "host-user-task",
		[VN_DTL_CLASS_QEMU] = "qemu-emulator",
		[VN_DTL_CLASS_IDLE] = "idle",
	};

	return cls < VN_DTL_CLASS_MAX ? names[cls] : "none";
}

const char *dtlregion_kind_name(uint32_t kind)
{
	switch (kind) {
	case VN_DTL_KIND_PREEMPTED:
		return "preempted";
	case VN_DTL_KIND_BLOCKED:
		return "blocked";
	case VN_DTL_KIND_VMEXIT:
		return "vmexit";
	}
	return "none";
}
