/* SPDX-License-Identifier: MIT */
/*
 * shmwriter: the guest end of the shared-memory channel of protocol/shm.h, in plain C (no libvirt, no
 * libbpf). It lays out a region and publishes records into per-vCPU single-producer rings. The hot path
 * (shmwriter_put) takes no lock, makes no syscall and never waits: when the consumer is slow the producer
 * overwrites the oldest records, and the consumer (shmreader) detects and counts the loss. One thread per ring
 * may call shmwriter_put concurrently with other rings' producers; status and the mailbox are
 * written by one thread at a time (the agent's control thread).
 */
#ifndef VNOISE_CHANNEL_SHMWRITER_H
#define VNOISE_CHANNEL_SHMWRITER_H

#include <stddef.h>
#include <stdint.h>
#include "shm.h"

struct shm_writer;

/* Bytes of guest area the layout needs for nrings x slots_per_ring (the region must be at least
 * twice this, the guest area being its lower half); 0 when the geometry is out of range. */
size_t shmwriter_region_bytes(uint32_t nrings, uint32_t slots_per_ring);

/* Largest power-of-two slots_per_ring whose layout fits in the guest area (the lower half) of a region of
 * size bytes (capped at VN_SHM_MAX_SLOTS); 0 if none fits or nrings is out of range. */
uint32_t shmwriter_fit_slots(size_t size, uint32_t nrings);

/*
 * The epoch a new agent should use on the region at base: the region's epoch + 1 when it holds a vnoise
 * header with a non-zero epoch, else fallback (e.g. CLOCK_REALTIME ns), never 0. Reads only the header.
 */
uint64_t shmwriter_next_epoch(const void *base, size_t size, uint64_t fallback);

/*
 * Lay out the guest area of the region [base, base + size) (size the whole region, a power of two, recorded
 * as region_size; base 64-byte aligned) with nrings rings of slots_per_ring slots and publish it under epoch
 * (non-zero, new): epoch is stored 0 first, every byte of the layout except the host's v1 mailbox part is
 * zeroed, the header (VN_SHM_VERSION) is written, and epoch is stored last with release ordering. Only [base, base + size / 2) is touched; the upper half is the host's (protocol/dtl.h). Returns the
 * writer (owned by the caller, shmwriter_free) or NULL with errno (EINVAL: bad geometry, size or epoch;
 * ENOSPC: the layout does not fit in size / 2; ENOMEM).
 */
struct shm_writer *shmwriter_init(void *base, size_t size, uint32_t nrings, uint32_t slots_per_ring,
				  uint64_t epoch) __attribute__((warn_unused_result));

/* Free the writer; the region is left as it is. Accepts NULL. */
void shmwriter_free(struct shm_writer *w);

/*
 * Publish one record in ring: type VN_SHM_REC_SAMPLE with rec a struct vn_sample, or VN_SHM_REC_EVENT with
 * rec a struct vn_event. Padding is zeroed and comm NUL-terminated on the way. Never blocks: a full ring's
 * oldest record is overwritten. Returns 0, or -EINVAL for a bad ring or type (a bad type with a valid ring
 * is counted in the ring's dropped). One producer thread per ring.
 */
int shmwriter_put(struct shm_writer *w, uint32_t ring, uint16_t type, const void *rec)
    __attribute__((warn_unused_result));

__attribute__((warn_unused_result)) static inline int
shmwriter_put_sample(struct shm_writer *w, uint32_t ring, const struct vn_sample *s)
{
	return shmwriter_put(w, ring, VN_SHM_REC_SAMPLE, s);
}

__attribute__((warn_unused_result)) static inline int
shmwriter_put_event(struct shm_writer *w, uint32_t ring, const struct vn_event *e)
{
	return shmwriter_put(w, ring, VN_SHM_REC_EVENT, e);
}

/* Add n records the guest lost before publishing (e.g. BPF ring buffer drops) to ring's dropped counter.
 * Called by the ring's producer thread. */
void shmwriter_add_dropped(struct shm_writer *w, uint32_t ring, uint64_t n);

/* Declare that every record of ring ending at or before guest time t_ns has been published (stored after
 * the records' head; a t_ns below the previous one is ignored). Called by the ring's producer thread. */
void shmwriter_set_horizon(struct shm_writer *w, uint32_t ring, uint64_t t_ns);

/* Records published in ring so far this epoch (the ring's head). */
uint64_t shmwriter_head(const struct shm_writer *w, uint32_t ring);

/* Write the guest status (st->seq is ignored; the writer stamps it). */
void shmwriter_set_status(struct shm_writer *w, const struct vn_shm_status *st);

#endif
