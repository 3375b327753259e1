/* SPDX-License-Identifier: MIT */
/*
 * shmregion: what both ends of the shared-memory channel (protocol/shm.h) agree on about the region itself —
 * the validity rules of every structure in it, and the memory ordering and seqlock discipline of every shared
 * word. The guest producer (shmwriter) and the host reader (shmreader) are built on it; tests and fuzzers use
 * the validators directly.
 *
 * Memory ordering: every shared sequence word and counter is accessed with the GCC/clang __atomic builtins
 * (the C11 model on plain fixed-width ABI fields, SHM_LOAD_* / SHM_STORE_* below); payload bytes are copied
 * with memcpy between an acquire load and an acquire fence of the sequence word (the classic seqlock reader),
 * so a copy is only used when the word read before and after it is the same even value.
 *
 * The validators are pure functions on private copies: they never read shared memory and are thread-safe.
 */
#ifndef VNOISE_CHANNEL_SHMREGION_H
#define VNOISE_CHANNEL_SHMREGION_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "shm.h"

#define SHM_LOAD_ACQ(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SHM_LOAD_RLX(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define SHM_STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define SHM_STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define SHM_FENCE_ACQ() __atomic_thread_fence(__ATOMIC_ACQUIRE)
#define SHM_FENCE_REL() __atomic_thread_fence(__ATOMIC_RELEASE)

/* True when v is a power of two (counts and sizes of the region must be). */
static inline int shmregion_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

/* log2 of a power-of-two slot count: position = lap << shift | index. */
static inline uint32_t shmregion_shift(uint32_t slots)
{
	return (uint32_t)__builtin_ctz(slots);
}

/*
 * Seqlock writer of an area guarded by *word, whose writer keeps *local = the last even value it stored:
 * begin makes the word odd before any payload store, end makes it even again after the last one.
 */
static inline void shmregion_seq_begin(uint32_t *word, uint32_t *local)
{
	SHM_STORE_RLX(word, *local + 1u);
	SHM_FENCE_REL();
}

static inline void shmregion_seq_end(uint32_t *word, uint32_t *local)
{
	*local += 2u;
	SHM_STORE_REL(word, *local);
}

/*
 * Seqlock reader: copy len bytes of the area at src guarded by *seq into dst. Returns 0, or -EAGAIN when the
 * other end was writing it or changed it during the copy (dst then holds garbage).
 */
static inline int shmregion_seq_copy(const uint32_t *seq, const void *src, void *dst, size_t len)
{
	uint32_t s1 = SHM_LOAD_ACQ(seq), s2;

	memcpy(dst, src, len);
	SHM_FENCE_ACQ();
	s2 = SHM_LOAD_RLX(seq);
	return s1 != s2 || (s1 & 1u) ? -EAGAIN : 0;
}

/* True when the n bytes at p are all 0 (reserved and padding fields). */
int shmregion_all_zero(const void *p, size_t n);

/* One area of a region (or of the DTL's host area) as a layout check sees it. */
struct shmregion_area {
	const char *name;
	uint64_t off, len;
};

/* Areas a[0..n) 64-byte aligned, inside limit bytes, not overlapping each other. Returns 0 or -EBADMSG with
 * a one-line reason in why. */
int shmregion_areas_valid(const struct shmregion_area *a, int n, uint64_t limit, char *why,
			  size_t why_len) __attribute__((warn_unused_result));

/*
 * Check a header copy against the host's mapping size: magic, version (VN_SHM_VERSION), sizes,
 * geometry ranges, power-of-two counts, 64-byte aligned areas inside the guest area min(mapped_size,
 * region_size) / 2 that overlap neither each other nor the header, reserved bytes zero, epoch non-zero.
 * Returns 0 or -EBADMSG with a one-line reason in why.
 */
int shmregion_header_valid(const struct vn_shm_header *h, size_t mapped_size, char *why,
			   size_t why_len) __attribute__((warn_unused_result));

/* Check a slot copy's record (type, padding, times ordered, spans and lengths sane, classes known, comm
 * terminated). Returns 0 or -EBADMSG. The seq word is not looked at. */
int shmregion_record_valid(const struct vn_shm_slot *s) __attribute__((warn_unused_result));

/* Check a guest status copy (state and CPU count in range, padding and reserved bytes zero, heartbeat not
 * before the agent's start). Returns 0 or -EBADMSG. */
int shmregion_status_valid(const struct vn_shm_status *s) __attribute__((warn_unused_result));

/* Check a copy of the guest's mailbox part (padding and reserved bytes zero, cpu a guest CPU or
 * VN_SHM_CPU_UNKNOWN). Whether it answers the outstanding request is the reader's business. Returns 0 or
 * -EBADMSG. */
int shmregion_reply_valid(const struct vn_shm_mbox_guest *m) __attribute__((warn_unused_result));

#endif
