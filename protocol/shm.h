/* SPDX-License-Identifier: MIT */
/*
 * vnoise shared-memory channel: the layout of the ivshmem-plain region (guest BAR2, host /dev/shm/<name>)
 * between the guest agent (the only producer) and vnoise-host (the consumer). This header is an ABI: fixed
 * width little-endian fields, explicit padding, units in names, sizes and offsets asserted, no pointers.
 * protocol/README.md ("Shared-memory channel") is the human spec; shared/channel/ implements both sides (shmwriter,
 * shmreader, shmregion for what they share).
 *
 * Layout v3 (VN_SHM_VERSION 3): the region is split in two halves. The guest area described here is
 * [0, region_size / 2); the host area [region_size / 2, region_size) is the dispatch trace log of
 * protocol/dtl.h, written by the host. The clock-sync mailbox lives in the host area (vn_dtl_header.request /
 * .reply); the mbox_host / mbox_guest lines of this header are reserved since v2 (kept for the ABI's shape).
 * v3 drops v2's interval-summary area (slots_offset is at header offset 56); a reader refuses any other
 * version.
 *
 * Guest area (offsets from the start of the region, every area 64-byte aligned, all below region_size / 2):
 *
 *   0                    struct vn_shm_header (512 bytes): identity + geometry (immutable within an epoch),
 *                        guest status, clock-sync mailbox (host part, guest part)
 *   ring_ctl_offset      struct vn_shm_ring[nrings]: per-ring producer counters (head, dropped)
 *   slots_offset         struct vn_shm_slot[nrings][slots_per_ring]: ring r's slots are contiguous
 *
 * Ownership: the guest writes every byte of the guest area except struct vn_shm_mbox_host (offset 192..255),
 * which is the only place of the guest area the host may write (v1 mailbox; reserved since v2). The host treats
 * all guest-written bytes as hostile: it copies, then validates.
 *
 * Consistency: every multi-field area that changes after initialisation carries a 32-bit sequence word that
 * its writer makes odd before changing the area and even (with release ordering) after; a reader loads it
 * (acquire), copies the area, loads it again and uses the copy only if both loads are equal and even.
 * Ring slots use this word to also name their lap (see struct vn_shm_slot).
 *
 * Epoch: 0 means "not initialised". A guest agent that (re)initialises the region first stores epoch 0, then
 * lays out everything else, then stores its new non-zero epoch (release). An epoch value is never reused.
 */
#ifndef VNOISE_SHM_H
#define VNOISE_SHM_H

#include <stddef.h>
#include <linux/types.h>
#include "noise.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the shared region is little-endian");

#define VN_SHM_MAGIC "VNOISSHM" /* 8 bytes, no NUL */
#define VN_SHM_MAGIC_LEN 8
#define VN_SHM_VERSION 3u /* 3: the guest area is the lower half of the region, no summary area */
#define VN_SHM_HEADER_SIZE 512u /* bytes: sizeof(struct vn_shm_header) in versions 1 to 3 */
#define VN_SHM_IMMUTABLE_SIZE 128u /* bytes of the header that never change within an epoch */
#define VN_SHM_ALIGN 64u /* every area offset is a multiple of this */
#define VN_SHM_MAX_RINGS 256u /* nrings is 1 .. this (one ring per vCPU) */
#define VN_SHM_MAX_SLOTS (1u << 20) /* slots_per_ring is a power of two, 1 .. this */
#define VN_SHM_MAX_GUEST_CPUS 8192u /* vn_shm_status.guest_ncpus at most */
#define VN_SHM_MAX_SPAN_NS (86400ull * 1000000000ull) /* a record longer than a day is corruption */

/*
 * Clock exchanges: the host posts its requests at (or just after) multiples of this period of its own
 * CLOCK_MONOTONIC, one at a time. Knowing the grid, an agent can poll the mailbox closely around the
 * predicted arrival (in guest time: grid point + the smallest guest_ns - host_send_ns seen so far) and
 * sleep in between: the answer's delay is the exchange's error bound.
 */
#define VN_SHM_CLOCK_GRID_NS 50000000ull

/* Guest agent state (vn_shm_status.agent_state). */
enum vn_shm_agent_state {
	VN_SHM_AGENT_INIT = 0, /* region laid out, not producing yet */
	VN_SHM_AGENT_RUNNING = 1, /* producing records */
	VN_SHM_AGENT_PAUSED = 2, /* alive, not producing */
	VN_SHM_AGENT_STOPPED = 3, /* exited cleanly; a new agent will start a new epoch */
	VN_SHM_AGENT_MAX = 4,
};

/*
 * Guest status, 64 bytes at header offset 128. Written by the guest only, any time, under seq (odd while
 * writing). boot_id is /proc/sys/kernel/random/boot_id as 16 raw bytes (changes when the guest reboots).
 */
struct vn_shm_status {
	__u32 seq; /* odd while the guest rewrites this struct, even when stable */
	__u32 agent_state; /* enum vn_shm_agent_state */
	__u32 guest_ncpus; /* online CPUs in the guest, <= VN_SHM_MAX_GUEST_CPUS */
	__u32 pad; /* 0 */
	__u8 boot_id[16]; /* guest boot id, raw UUID bytes */
	__u64 agent_start_ns; /* guest CLOCK_MONOTONIC when this agent started */
	__u64 heartbeat_ns; /* guest CLOCK_MONOTONIC of the last status update: 0 or >= start */
	__u8 reserved[16]; /* 0 */
};
_Static_assert(sizeof(struct vn_shm_status) == 64, "vn_shm_status is ABI");
_Static_assert(offsetof(struct vn_shm_status, agent_state) == 4, "vn_shm_status is ABI");
_Static_assert(offsetof(struct vn_shm_status, guest_ncpus) == 8, "vn_shm_status is ABI");
_Static_assert(offsetof(struct vn_shm_status, boot_id) == 16, "vn_shm_status is ABI");
_Static_assert(offsetof(struct vn_shm_status, agent_start_ns) == 32, "vn_shm_status is ABI");
_Static_assert(offsetof(struct vn_shm_status, heartbeat_ns) == 40, "vn_shm_status is ABI");
_Static_assert(offsetof(struct vn_shm_status, reserved) == 48, "vn_shm_status is ABI");

/*
 * Clock-sync mailbox, host part: 64 bytes at header offset 192, the only bytes the host writes. A request
 * is (req_seq, host_send_ns); the host writes it under seq and the guest answers each new request once.
 */
struct vn_shm_mbox_host {
	__u32 seq; /* odd while the host rewrites this struct, even when stable */
	__u32 pad; /* 0 */
	__u64 req_seq; /* request number, > 0 (0: no request yet) */
	__u64 host_send_ns; /* host CLOCK_MONOTONIC when the host wrote the request */
	__u8 reserved[40]; /* 0 */
};
_Static_assert(sizeof(struct vn_shm_mbox_host) == 64, "vn_shm_mbox_host is ABI");
_Static_assert(offsetof(struct vn_shm_mbox_host, req_seq) == 8, "vn_shm_mbox_host is ABI");
_Static_assert(offsetof(struct vn_shm_mbox_host, host_send_ns) == 16, "vn_shm_mbox_host is ABI");

/* Clock-sync mailbox, guest part: 64 bytes at header offset 256, the guest's answer to a request. */
struct vn_shm_mbox_guest {
	__u32 seq; /* odd while the guest rewrites this struct, even when stable */
	__u32 pad; /* 0 */
	__u64 reply_seq; /* req_seq of the request answered (0: none yet) */
	__u64 guest_ns; /* guest CLOCK_MONOTONIC when the guest answered, > 0 */
	__u64 echo_host_send_ns; /* host_send_ns of the request answered, copied */
	__u32
	    cpu; /* guest CPU the answering thread ran on (its vCPU), VN_SHM_CPU_UNKNOWN if unknown: the
		      host may watch for the answer from a pCPU that vCPU is not using */
	__u32 pad2; /* 0 */
	__u8 reserved[24]; /* 0 */
};
#define VN_SHM_CPU_UNKNOWN 0xffffffffu
_Static_assert(sizeof(struct vn_shm_mbox_guest) == 64, "vn_shm_mbox_guest is ABI");
_Static_assert(offsetof(struct vn_shm_mbox_guest, reply_seq) == 8, "vn_shm_mbox_guest is ABI");
_Static_assert(offsetof(struct vn_shm_mbox_guest, guest_ns) == 16, "vn_shm_mbox_guest is ABI");
_Static_assert(offsetof(struct vn_shm_mbox_guest, echo_host_send_ns) == 24,
	       "vn_shm_mbox_guest is ABI");
_Static_assert(offsetof(struct vn_shm_mbox_guest, cpu) == 32, "vn_shm_mbox_guest is ABI");

/*
 * Region header, 512 bytes at offset 0. Bytes 0..127 (identity and geometry) are written by the guest while
 * epoch is 0 and never change until the next epoch; a change under the same epoch is corruption.
 * region_size is what the guest believes (its BAR2 size); the host bounds everything by its own mapping:
 * every area lies inside min(mapping, region_size) / 2 (since layout v2).
 */
struct vn_shm_header {
	/* identity and geometry: immutable within an epoch */
	char magic[VN_SHM_MAGIC_LEN]; /* "VNOISSHM" */
	__u32 version; /* VN_SHM_VERSION */
	__u32 header_size; /* bytes, VN_SHM_HEADER_SIZE */
	__u64 region_size; /* bytes, power of two, as the guest sees it */
	__u64 epoch; /* 0: not initialised; else a new value per guest agent start */
	__u32 nrings; /* 1 .. VN_SHM_MAX_RINGS, ring r carries vCPU r */
	__u32 slots_per_ring; /* power of two, 1 .. VN_SHM_MAX_SLOTS */
	__u32 slot_size; /* bytes, sizeof(struct vn_shm_slot) */
	__u32 ring_ctl_size; /* bytes per ring counter block, sizeof(struct vn_shm_ring) */
	__u64 ring_ctl_offset; /* bytes from region start to struct vn_shm_ring[nrings] */
	__u64 slots_offset; /* bytes from region start to the slots of ring 0 */
	__u8 reserved0[64]; /* 0 */
	/* guest-owned, changes any time */
	struct vn_shm_status status; /* offset 128 */
	/* clock-sync mailbox of v1; reserved since v2 (the mailbox is vn_dtl_header.request / .reply) */
	struct vn_shm_mbox_host mbox_host; /* offset 192: host-written (v1) */
	struct vn_shm_mbox_guest mbox_guest; /* offset 256: guest-written (v1) */
	__u8 reserved1[192]; /* 0 */
};
_Static_assert(sizeof(struct vn_shm_header) == VN_SHM_HEADER_SIZE, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, version) == 8, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, header_size) == 12, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, region_size) == 16, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, epoch) == 24, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, nrings) == 32, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, slots_per_ring) == 36, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, slot_size) == 40, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, ring_ctl_size) == 44, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, ring_ctl_offset) == 48, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, slots_offset) == 56, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, reserved0) == 64, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, status) == VN_SHM_IMMUTABLE_SIZE,
	       "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, mbox_host) == 192, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, mbox_guest) == 256, "vn_shm_header is ABI");
_Static_assert(offsetof(struct vn_shm_header, reserved1) == 320, "vn_shm_header is ABI");

/*
 * Per-ring producer counters, one 64-byte cache line per ring. Written by the guest only; both only grow
 * within an epoch (horizon_ns too). head is the number of records ever published in ring r (the next record's position);
 * it is stored with release ordering after the record's slot is complete. dropped counts records the guest
 * could not publish at all (e.g. its own upstream buffers overflowed); overwrites by a faster producer are
 * NOT counted here (the producer never waits; the consumer detects them).
 */
struct vn_shm_ring {
	__u64 head; /* records published in this ring, this epoch */
	__u64 dropped; /* records the guest lost before publishing them */
	__u64
	    horizon_ns; /* guest CLOCK_MONOTONIC: every record of this ring that ends at or before it is
			     published (head covers it); 0 = not yet. Never decreases; stored (release) after
			     head, so a reader loads it (acquire) before head. */
	__u8 reserved[40]; /* 0 */
};
_Static_assert(sizeof(struct vn_shm_ring) == 64, "vn_shm_ring is ABI");
_Static_assert(offsetof(struct vn_shm_ring, dropped) == 8, "vn_shm_ring is ABI");
_Static_assert(offsetof(struct vn_shm_ring, horizon_ns) == 16, "vn_shm_ring is ABI");

/* Record types (vn_shm_slot.type). */
enum vn_shm_rec_type {
	VN_SHM_REC_NONE = 0, /* never written */
	VN_SHM_REC_SAMPLE = 1, /* payload.sample: struct vn_sample, the rest of the payload 0 */
	VN_SHM_REC_EVENT = 2, /* payload.event: struct vn_event */
	VN_SHM_REC_MAX = 3,
};

#define VN_SHM_PAYLOAD_SIZE 56u

/*
 * One ring slot, 64 bytes. The record at position p (0, 1, 2, ... in ring order) lives in slot
 * p % slots_per_ring during lap L = p / slots_per_ring. Its seq is 2L+1 (mod 2^32) while the guest writes it
 * and 2L+2 when complete, so a reader that expects position p can tell a complete record (seq == 2L+2) from
 * one being written (odd), an older lap (stale) and a newer lap (overwritten: the record is lost).
 */
struct vn_shm_slot {
	__u32 seq; /* 2L+1 while writing, 2L+2 when complete; 0 = never written */
	__u16 type; /* enum vn_shm_rec_type */
	__u16 pad; /* 0 */
	union {
		struct vn_sample sample; /* VN_SHM_REC_SAMPLE (24 bytes, bytes 24..55 are 0) */
		struct vn_event event; /* VN_SHM_REC_EVENT (56 bytes) */
		__u8 raw[VN_SHM_PAYLOAD_SIZE];
	} payload;
};
_Static_assert(sizeof(struct vn_shm_slot) == 64, "vn_shm_slot is ABI");
_Static_assert(offsetof(struct vn_shm_slot, type) == 4, "vn_shm_slot is ABI");
_Static_assert(offsetof(struct vn_shm_slot, pad) == 6, "vn_shm_slot is ABI");
_Static_assert(offsetof(struct vn_shm_slot, payload) == 8, "vn_shm_slot is ABI");
_Static_assert(sizeof(struct vn_event) == VN_SHM_PAYLOAD_SIZE, "a vn_event fills a slot payload");

#endif
