/* SPDX-License-Identifier: MIT */
/*
 * shmreader: the host end of the shared-memory channel of protocol/shm.h, in plain C (no libvirt, no libbpf).
 * It reads a region mapped from /dev/shm as hostile memory: it bounds every access by its own mapping size
 * (never by what the header says), copies before it validates (shmregion), reads each ring's head once per
 * poll, masks indices, bounds the work of every call and never writes anything but the mailbox's host part.
 * A state machine follows the guest: WAITING (epoch 0, nothing to read yet), OK, CORRUPT (invalid header,
 * geometry changed under the same epoch, or a producer counter moving backwards); it recovers when a valid
 * header with a new epoch appears. One reader is used by one thread at a time.
 *
 * Not handled here: SIGBUS when the backing file shrinks under the mapping (the caller maps a file it sized
 * itself, and guards reads if others can truncate it).
 */
#ifndef VNOISE_CHANNEL_SHMREADER_H
#define VNOISE_CHANNEL_SHMREADER_H

#include <stddef.h>
#include <stdint.h>
#include "shm.h"

struct shm_reader;

enum shmreader_state {
	SHMREADER_WAITING = 0, /* epoch 0 or header being rewritten: nothing to read yet */
	SHMREADER_OK = 1, /* attached to a valid epoch */
	SHMREADER_CORRUPT = 2, /* stopped reading; waits for a valid header with a new epoch */
};

/* Counters since shmreader_attach(). All only grow (saturating). */
struct shmreader_stats {
	uint64_t records; /* records delivered to callbacks: complete, consistent, valid */
	uint64_t lost; /* records the producer lapped before the host read them (overrun, with the
			  1/8-ring margin skipped along), or published but unread when their epoch ended */
	uint64_t missed; /* overwritten (or in the margin) when the host attached to their epoch */
	uint64_t retries; /* copies repeated because the guest changed the bytes during the copy */
	uint64_t torn; /* slots still inconsistent after the retries: skipped (record lost) */
	uint64_t stale; /* slots holding an older lap than the head claims: skipped */
	uint64_t invalid; /* consistent slots whose content failed validation: skipped */
	uint64_t corrupt; /* times the channel went CORRUPT */
	uint64_t epochs; /* epochs attached (the first one included) */
	uint64_t producer_dropped; /* sum of the rings' dropped counters: lost inside the guest */
	uint64_t status_invalid; /* shmreader_status() reads that found an invalid status */
};

/* One ring as the reader sees it. */
struct shmreader_ring_info {
	uint64_t tail; /* next position the reader will read */
	uint64_t head; /* producer head at the last poll */
	uint64_t dropped; /* producer's dropped counter at the last poll */
	uint64_t horizon_ns; /* producer's horizon at the last poll (guest time, 0: none yet) */
};

/* A record as delivered: a validated private copy, valid during the callback only. pos is its position in
 * the ring (0, 1, 2, ... within the epoch). */
typedef void (*shmreader_cb)(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec);

/*
 * Start reading the region mapped at base (64-byte aligned, the host's own mapping) of mapped_size bytes
 * (>= VN_SHM_HEADER_SIZE). Looks at the header once (see shmreader_check). Returns the reader (owned by the
 * caller, shmreader_detach) or NULL with errno (EINVAL, ENOMEM). The mapping must outlive the reader.
 */
struct shm_reader *shmreader_attach(const void *base, size_t mapped_size)
    __attribute__((warn_unused_result));

/* Free the reader; the region is not touched. Accepts NULL. */
void shmreader_detach(struct shm_reader *rd);

/*
 * Re-examine the header and follow the guest: epoch 0 -> WAITING; a new epoch with a valid header -> OK
 * (rings restart at the records still in them); an invalid header, or geometry bytes that changed under the
 * same epoch -> CORRUPT (counted once per entry into CORRUPT). Bounded work. Returns the state.
 */
enum shmreader_state shmreader_check(struct shm_reader *rd);

enum shmreader_state shmreader_state(const struct shm_reader *rd);

/* Copy of the validated header of the attached epoch. Returns 0 or -ENOTCONN (not OK). */
int shmreader_header(const struct shm_reader *rd, struct vn_shm_header *out)
    __attribute__((warn_unused_result));

/* Number of rings of the attached epoch (0 when not OK). */
uint32_t shmreader_nrings(const struct shm_reader *rd);

/*
 * Read ring: calls shmreader_check(), reads the ring's head once; if the producer lapped the reader, resumes 7/8 of
 * a ring behind the head (not on the slot the producer overwrites next) and counts what it skipped as lost;
 * then copies and validates slot by slot from the tail, calling cb for each valid record in ring order.
 * Visits at most max_records slots (delivered or skipped) and retries a slot that changes under the copy a
 * bounded number of times. Returns the number of records delivered (>= 0),
 * -EAGAIN (WAITING), -EPROTO (CORRUPT, also when found during this call: records delivered before were
 * passed to cb and counted) or -EINVAL (ring >= shmreader_nrings(), cb NULL). cb must not call back into rd.
 */
int shmreader_poll(struct shm_reader *rd, uint32_t ring, shmreader_cb cb, void *ctx,
		   uint32_t max_records) __attribute__((warn_unused_result));

void shmreader_stats(const struct shm_reader *rd, struct shmreader_stats *out);

/* Returns 0 or -EINVAL (ring out of range for the attached epoch, or not OK). */
int shmreader_ring_info(const struct shm_reader *rd, uint32_t ring, struct shmreader_ring_info *out)
    __attribute__((warn_unused_result));

/* Copy and validate the guest status. Returns 0, -EAGAIN (being written), -EBADMSG (invalid, counted) or
 * -ENOTCONN (not OK). */
int shmreader_status(struct shm_reader *rd, struct vn_shm_status *out)
    __attribute__((warn_unused_result));

#endif
