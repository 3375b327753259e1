/* SPDX-License-Identifier: MIT */
/*
 * vnoise dispatch trace log (DTL): the host-written half of the ivshmem region (protocol/shm.h, layout v2).
 * vnoise-host (the only producer) publishes there, per vCPU, the intervals the vCPU was not running guest
 * code — in the guest's CLOCK_MONOTONIC — with their kind and host cause, per-period aggregates without
 * timestamps (VM exits by reason, host IRQs), the current clock mapping and a horizon. Any vnoise-guest
 * process reads it (guest/dtl) to split the time the guest cannot explain into hypervisor classes. Seed 000's
 * hypervisor dispatch trace log, over our channel. protocol/README.md ("Dispatch trace log") is the human spec.
 *
 * Region split (shm layout v2): the guest area is [0, region_size / 2), the host area (this file) is
 * [region_size / 2, region_size); region_size is the ivshmem size (guest BAR2 size = host file size), a power
 * of two. All offsets below are from the start of the host area. Every area is 64-byte aligned.
 *
 *   0                 struct vn_dtl_header (512 bytes): identity + geometry (immutable within a host epoch),
 *                     host status (clock mapping, horizon), clock-sync mailbox (host request, guest reply)
 *   ring_ctl_offset   struct vn_dtl_ring[nvcpus]: per-vCPU producer counters
 *   agg_offset        struct vn_dtl_agg[nvcpus][VN_DTL_AGGS]: rotating per-period aggregates
 *   cause_offset      struct vn_dtl_cause[ncauses]: cause table
 *   entries_offset    struct vn_dtl_entry[nvcpus][entries_per_vcpu]: vCPU v's ring is contiguous
 *
 * Ownership: the host writes every byte of the host area except struct vn_dtl_header.reply (the guest's
 * answer to a clock request, 64 bytes at offset 256), the only bytes a guest writes here. The guest trusts
 * nothing the host wrote (a host may be buggy, stop, restart or be replaced): it copies, validates, counts.
 * The host trusts nothing in the reply.
 *
 * Consistency: the same seqlock discipline as protocol/shm.h (odd while writing, even and release-stored when
 * done; readers copy between two equal even loads). Entries use their seq to name their lap, as vn_shm_slot.
 *
 * Host epoch: 0 = not initialised. A publisher that (re)initialises the area stores host_epoch 0, lays out
 * everything, then stores its new non-zero host_epoch (release). A new vnoise-host process = a new epoch;
 * guest readers then drop what they kept of the old one (entries of a new epoch start at head 0).
 */
#ifndef VNOISE_DTL_H
#define VNOISE_DTL_H

#include <stddef.h>
#include <linux/types.h>
#include "shm.h"

#define VN_DTL_MAGIC "VNOISDTL" /* 8 bytes, no NUL */
#define VN_DTL_MAGIC_LEN 8
#define VN_DTL_VERSION 1u
#define VN_DTL_HEADER_SIZE 512u
#define VN_DTL_IMMUTABLE_SIZE 128u /* bytes of the header that never change within a host epoch */
#define VN_DTL_MAX_VCPUS VN_SHM_MAX_RINGS
#define VN_DTL_MAX_ENTRIES (1u << 16) /* entries_per_vcpu is a power of two, 16 .. this */
#define VN_DTL_MIN_ENTRIES 16u
#define VN_DTL_MAX_CAUSES 1024u /* ncauses is 1 .. this */
#define VN_DTL_AGGS \
	4u /* per-vCPU aggregate entries kept (period N lives in entry N % VN_DTL_AGGS) */
#define VN_DTL_AGG_TOP 8u /* exit reasons per aggregate, largest first; the rest in other_exit_* */
#define VN_DTL_COMM_LEN 16
#define VN_DTL_MAX_SPAN_NS VN_SHM_MAX_SPAN_NS /* an entry longer than a day is corruption */
/* The lock a guest clock responder holds (flock, LOCK_EX | LOCK_NB): one answering process per guest. In
 * /run, where only root creates files, mode 0600 and owned by root: a responder maps the region (root only),
 * and no other guest user can open the lock, so none can keep the responder from answering. */
#define VN_DTL_RESPONDER_LOCK "/run/vnoise-clock.lock"
/* The bell's virtio-serial port (struct vn_dtl_bell). */
#define VN_DTL_BELL_PORT "org.vnoise.bell.0"

/* Detail the host allows (vn_dtl_header.detail; vnoise-host --dtl-detail). */
enum vn_dtl_detail {
	VN_DTL_DETAIL_CLASS = 1, /* causes carry their class only: no names, no pids (default) */
	VN_DTL_DETAIL_TASK = 2, /* causes also carry the host task's comm and pid */
};

/* Entry kinds (vn_dtl_entry.kind): what the vCPU thread was doing while it was not running guest code. */
enum vn_dtl_kind {
	VN_DTL_KIND_NONE = 0,
	VN_DTL_KIND_PREEMPTED = 1, /* runnable, not running (host scheduler state 'R') */
	VN_DTL_KIND_BLOCKED = 2, /* blocked in the host (any other state: 'S', 'D', ...) */
	VN_DTL_KIND_VMEXIT =
	    3, /* inside a VM exit (only where the host knows it per exit; reserved) */
	VN_DTL_KIND_MAX = 4,
};

/*
 * Cause classes (vn_dtl_entry.cls, vn_dtl_cause.cls): what ran on the pCPU the vCPU left. An entry with class
 * IDLE (nothing else ran: the vCPU waited, e.g. blocked in the host or woken late) is the guest's host_wait;
 * every other class is host_preempt.
 */
enum vn_dtl_class {
	VN_DTL_CLASS_NONE = 0,
	VN_DTL_CLASS_OTHER_VCPU = 1, /* "vcpu-of-another-domain": a vCPU thread of another domain */
	VN_DTL_CLASS_HOST_KTHREAD = 2, /* "host-kernel-thread" */
	VN_DTL_CLASS_HOST_USER = 3, /* "host-user-task" */
	VN_DTL_CLASS_QEMU =
	    4, /* "qemu-emulator": this domain's QEMU threads (main loop, iothreads, ...) */
	VN_DTL_CLASS_IDLE = 5, /* "idle": nothing ran in the vCPU's place */
	VN_DTL_CLASS_MAX = 6,
};

/* vn_dtl_entry.flags */
#define VN_DTL_F_CONT \
	0x01 /* continues the previous entry of the same out interval (cut at a period end) */
#define VN_DTL_F_GUESSED 0x02 /* the host inferred the end (a switch-in was not seen) */
/* The vCPU was halted for this entry (its thread slept: the guest idled on that CPU), not runnable: the
 * time is no guest noise, and what ran on the pCPU meanwhile preempted nothing. Readers keep it apart. */
#define VN_DTL_F_HALTED 0x04
#define VN_DTL_F_MASK 0x07

/* vn_dtl_status.flags */
#define VN_DTL_S_CLOCK \
	0x01 /* the clock mapping is valid: its bound is <= 1 ms (entries are published only then) */
#define VN_DTL_S_STALE \
	0x02 /* stale (no recent exchange) or its bound grew past 1 ms: no new entries */
#define VN_DTL_S_MASK 0x03

/*
 * Host status, 64 bytes at header offset 128, written by the host under seq at least every heartbeat.
 * Mapping: guest_ns = host_ns + offset_ns + drift_ppb * (host_ns - anchor_host_ns) / 1e9, valid around
 * anchor_host_ns, with a bound uncertainty_ns on its error. horizon_ns (guest ns): every interval of every
 * vCPU that ends at or before it has been published (heads cover it); it never decreases within an epoch.
 */
struct vn_dtl_status {
	__u32 seq; /* odd while the host rewrites this struct, even when stable */
	__u32 flags; /* VN_DTL_S_* */
	__u64 horizon_ns; /* guest CLOCK_MONOTONIC; 0 = nothing published yet */
	__u64
	    heartbeat_ns; /* guest CLOCK_MONOTONIC (converted) of the host's last status update; 0 = none */
	__s64 offset_ns; /* guest - host at anchor_host_ns */
	__s64 drift_ppb; /* d(guest - host)/d(host), parts per billion */
	__u64 anchor_host_ns; /* host CLOCK_MONOTONIC the mapping is anchored at */
	__u64 uncertainty_ns; /* bound on the conversion error; UINT64_MAX without a mapping */
	__u8 reserved[8]; /* 0 */
};
_Static_assert(sizeof(struct vn_dtl_status) == 64, "vn_dtl_status is ABI");
_Static_assert(offsetof(struct vn_dtl_status, horizon_ns) == 8, "vn_dtl_status is ABI");
_Static_assert(offsetof(struct vn_dtl_status, heartbeat_ns) == 16, "vn_dtl_status is ABI");
_Static_assert(offsetof(struct vn_dtl_status, offset_ns) == 24, "vn_dtl_status is ABI");
_Static_assert(offsetof(struct vn_dtl_status, drift_ppb) == 32, "vn_dtl_status is ABI");
_Static_assert(offsetof(struct vn_dtl_status, anchor_host_ns) == 40, "vn_dtl_status is ABI");
_Static_assert(offsetof(struct vn_dtl_status, uncertainty_ns) == 48, "vn_dtl_status is ABI");

/*
 * The bell (64 bytes at header offset 320, host-written): how the host asks to be woken instead of reading
 * the guest area every few milliseconds. The guest side is a virtio-serial port named "org.vnoise.bell.0";
 * the host holds its socket. Before it sleeps for longer than its short round, the host (the publisher of
 * this epoch) stores arm_seq + 1 (release). A guest agent that has the port open rings it (writes one byte)
 * at most once per arm_seq value of a host epoch: once to say it rings at all, then only after it published a
 * gap (a vn_sample of kind GAP) since its last ring. The host reads and discards the bytes, trusts nothing in
 * them, and wakes for a ring at most once per short round. arm_seq 0: never armed (no bell this epoch).
 */
struct vn_dtl_bell {
	__u64 arm_seq; /* bumped by the host each time it arms; 0: not armed */
	__u8 reserved[56]; /* 0 */
};
_Static_assert(sizeof(struct vn_dtl_bell) == 64, "vn_dtl_bell is ABI");

/*
 * Host area header, 512 bytes at host area offset 0. Bytes 0..127 are written while host_epoch is 0 and never
 * change within the epoch. The clock-sync mailbox (request: struct vn_shm_mbox_host, reply: struct
 * vn_shm_mbox_guest, same meaning as in protocol/shm.h) lives here in layout v2: any guest responder that holds
 * VN_DTL_RESPONDER_LOCK answers, with or without a guest agent.
 */
struct vn_dtl_header {
	/* identity and geometry: immutable within a host epoch */
	char magic[VN_DTL_MAGIC_LEN]; /* "VNOISDTL" */
	__u32 version; /* VN_DTL_VERSION */
	__u32 header_size; /* VN_DTL_HEADER_SIZE */
	__u64 area_size; /* bytes of the host area (region_size / 2) */
	__u64 host_epoch; /* 0: not initialised; else a new value per publisher start */
	__u32 nvcpus; /* 1 .. VN_DTL_MAX_VCPUS; ring v carries vCPU v */
	__u32 entries_per_vcpu; /* power of two, VN_DTL_MIN_ENTRIES .. VN_DTL_MAX_ENTRIES */
	__u32 entry_size; /* sizeof(struct vn_dtl_entry) */
	__u32 ring_ctl_size; /* sizeof(struct vn_dtl_ring) */
	__u32 agg_size; /* sizeof(struct vn_dtl_agg) */
	__u32 cause_size; /* sizeof(struct vn_dtl_cause) */
	__u32 ncauses; /* cause table entries, 1 .. VN_DTL_MAX_CAUSES */
	__u32 detail; /* enum vn_dtl_detail */
	__u64 ring_ctl_offset; /* struct vn_dtl_ring[nvcpus] */
	__u64 agg_offset; /* struct vn_dtl_agg[nvcpus][VN_DTL_AGGS] */
	__u64 cause_offset; /* struct vn_dtl_cause[ncauses] */
	__u64 entries_offset; /* entries of vCPU 0, then 1, ... */
	__u64 period_ns; /* the host's aggregate period */
	__u8 reserved0[24]; /* 0 */
	struct vn_dtl_status status; /* offset 128: host-written */
	struct vn_shm_mbox_host request; /* offset 192: host-written clock request */
	struct vn_shm_mbox_guest reply; /* offset 256: guest-written clock reply */
	struct vn_dtl_bell bell; /* offset 320: host-written, the bell's arming */
	__u8 reserved1[128]; /* 0 */
};
_Static_assert(sizeof(struct vn_dtl_header) == VN_DTL_HEADER_SIZE, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, version) == 8, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, area_size) == 16, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, host_epoch) == 24, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, nvcpus) == 32, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, entries_per_vcpu) == 36, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, entry_size) == 40, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, ncauses) == 56, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, detail) == 60, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, ring_ctl_offset) == 64, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, entries_offset) == 88, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, period_ns) == 96, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, status) == VN_DTL_IMMUTABLE_SIZE,
	       "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, request) == 192, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, reply) == 256, "vn_dtl_header is ABI");
_Static_assert(offsetof(struct vn_dtl_header, bell) == 320, "vn_dtl_header is ABI");

/*
 * Per-vCPU producer counters, 64 bytes. head: entries ever published for this vCPU in this epoch (stored with
 * release ordering after the entry is complete). dropped: intervals the host could not publish (no clock
 * mapping yet, its own buffers full, an interval not convertible). Both only grow within an epoch.
 */
struct vn_dtl_ring {
	__u64 head;
	__u64 dropped;
	__u64 agg_period; /* newest aggregate period id published for this vCPU + 1 (0: none) */
	__u8 reserved[40]; /* 0 */
};
_Static_assert(sizeof(struct vn_dtl_ring) == 64, "vn_dtl_ring is ABI");

/*
 * One DTL entry, 32 bytes: [start_ns, end_ns) in guest CLOCK_MONOTONIC when vCPU v was not running guest
 * code. Entries of a vCPU are published in time order and do not overlap. The entry at position p lives in
 * slot p % entries_per_vcpu; seq is 2L+1 while the host writes it and 2L+2 when complete (L = p / entries),
 * as vn_shm_slot. cause: (gen << 16) | index into the cause table, 0 = no cause (class only).
 */
struct vn_dtl_entry {
	__u32 seq;
	__u8 kind; /* enum vn_dtl_kind */
	__u8 cls; /* enum vn_dtl_class */
	__u16 flags; /* VN_DTL_F_* */
	__u32 cause; /* see above; with VN_DTL_DETAIL_CLASS the table holds classes only */
	__u32 pad; /* 0 */
	__u64 start_ns;
	__u64 end_ns; /* > start_ns, end - start <= VN_DTL_MAX_SPAN_NS */
};
_Static_assert(sizeof(struct vn_dtl_entry) == 32, "vn_dtl_entry is ABI");
_Static_assert(offsetof(struct vn_dtl_entry, cause) == 8, "vn_dtl_entry is ABI");
_Static_assert(offsetof(struct vn_dtl_entry, start_ns) == 16, "vn_dtl_entry is ABI");

#define VN_DTL_CAUSE_INDEX(c) ((c)&0xffffu)
#define VN_DTL_CAUSE_GEN(c) ((c) >> 16)
#define VN_DTL_CAUSE(index, gen) ((__u32)(((gen)&0xffffu) << 16 | ((index)&0xffffu)))

/*
 * One cause, 48 bytes, under seq. gen changes (never to 0) each time the host reuses the index for another
 * cause, so an entry whose cause gen differs from the table's names a cause that is gone (the reader counts
 * it and keeps the entry's class). comm and pid are zero unless detail is VN_DTL_DETAIL_TASK.
 */
struct vn_dtl_cause {
	__u32 seq;
	__u16 gen; /* 0: unused */
	__u8 cls; /* enum vn_dtl_class */
	__u8 pad; /* 0 */
	__u32 pid; /* host pid (detail task), else 0 */
	__u32 pad2; /* 0 */
	char comm[VN_DTL_COMM_LEN]; /* host comm (detail task), NUL-padded, else all 0 */
	__u8 reserved[16]; /* 0 */
};
_Static_assert(sizeof(struct vn_dtl_cause) == 48, "vn_dtl_cause is ABI");
_Static_assert(offsetof(struct vn_dtl_cause, pid) == 8, "vn_dtl_cause is ABI");
_Static_assert(offsetof(struct vn_dtl_cause, comm) == 16, "vn_dtl_cause is ABI");

/* One VM exit reason's share of an aggregate. */
struct vn_dtl_exit {
	__u32 reason; /* exit reason (isa below) */
	__u32 count;
	__u64 total_ns;
};
_Static_assert(sizeof(struct vn_dtl_exit) == 16, "vn_dtl_exit is ABI");

/*
 * One period's aggregate for one vCPU, 256 bytes, under seq: what the host did while the vCPU *ran* (so it is
 * in no entry): VM exits by reason and host IRQ time. No timestamps below the period: a reader may apportion
 * them to the time it could not explain inside [start_ns, end_ns) (guest ns). Period N lives in entry
 * N % VN_DTL_AGGS; the ring counter agg_period says which is newest.
 */
struct vn_dtl_agg {
	__u32 seq;
	__u16 isa; /* exit reasons: 1 VMX, 2 SVM, 0 unknown */
	__u16 nexit; /* used entries of exit[], <= VN_DTL_AGG_TOP */
	__u64 period; /* period id */
	__u64 start_ns; /* guest CLOCK_MONOTONIC */
	__u64 end_ns; /* > start_ns */
	__u64 exit_count; /* all VM exits in the period */
	__u64 exit_ns; /* their total time, = sum(exit[].total_ns) + other_exit_ns */
	__u64 other_exit_ns; /* reasons beyond VN_DTL_AGG_TOP */
	__u64 irq_count; /* host hardirqs + softirqs while the vCPU ran */
	__u64 irq_ns;
	struct vn_dtl_exit exit[VN_DTL_AGG_TOP];
	__u8 reserved[56]; /* 0 */
};
_Static_assert(sizeof(struct vn_dtl_agg) == 256, "vn_dtl_agg is ABI");
_Static_assert(offsetof(struct vn_dtl_agg, period) == 8, "vn_dtl_agg is ABI");
_Static_assert(offsetof(struct vn_dtl_agg, exit) == 72, "vn_dtl_agg is ABI");

/* Offset of the host area in a region of region_size bytes (layout v2). */
static inline __u64 vn_dtl_area_offset(__u64 region_size)
{
	return region_size / 2;
}

#endif
