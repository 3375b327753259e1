/* SPDX-License-Identifier: MIT */
/*
 * vnoise UDP report datagram: how a node tells the collector, per interval, the filtered noise of
 * its ranks and CPUs by class and source. One datagram = a fixed header, fixed-size records, and an
 * HMAC-SHA256 over both with a key shared by the nodes and the collector (chosen by key_id). Reports are
 * authenticated, not encrypted. Every datagram fits in 1400 bytes so that it is never IP-fragmented; an
 * interval with more records goes out as several datagrams (part 0, 1, ..., the last one flagged).
 *
 * This header is an ABI: fixed-width little-endian fields, explicit padding, sizes and offsets asserted.
 * protocol/README.md ("UDP report datagram") is the human spec; shared/datagram.h builds and parses it.
 */
#ifndef VNOISE_CLUSTER_H
#define VNOISE_CLUSTER_H

#include <stddef.h>
#include <linux/types.h>
#include "noise.h"

/* The wire format is little-endian and the structs are copied to and from it as they are: x86 only. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "report datagrams are little-endian");

#define VN_REPORT_MAGIC 0x31524e56u /* "VNR1" as little-endian bytes */
/*
 * Version 2 adds the hypervisor classes and the HOST source to the records; layout unchanged. A
 * sender writes version 1 unless a datagram carries one of them (so an old collector still reads the rest);
 * a receiver takes versions VN_REPORT_VERSION_MIN..VN_REPORT_VERSION and rejects v2 fields in a v1 datagram.
 */
#define VN_REPORT_VERSION 2
#define VN_REPORT_VERSION_MIN 1
#define VN_REPORT_MAX_LEN \
	1400 /* bytes of UDP payload: + IPv6 (40) + UDP (8) stays under a 1500 MTU */
#define VN_REPORT_MAC_LEN 32 /* HMAC-SHA256, after the records */

/* vn_report_hdr.kind */
enum vn_report_kind {
	VN_REPORT_INTERVAL = 1, /* interval report of a node under detailed tracing (sampled) */
	VN_REPORT_COUNTERS =
	    2, /* interval report from counters only (round-robin: not sampled now) */
	VN_REPORT_HELLO = 3, /* registration with the collector: no records */
	VN_REPORT_SAMPLE =
	    4, /* collector -> node: trace in detail for a while (round-robin); no records */
	VN_REPORT_KIND_MAX = 5,
};

/*
 * The SAMPLE command (round-robin sampling, seed 001) travels the other way, from the collector to the node's
 * address that sent the HELLO, in the same format under the same keys:
 *   node_id, session_id, job_id  the node instance it is for (a node drops any other: an old session's
 *                                command is a replay);
 *   seq                          the collector's CLOCK_REALTIME when it sealed it; a node accepts only
 *                                increasing values, so a captured command cannot be played again;
 *   interval_id                  the collector's slot number;
 *   start/end_realtime_ns        the slot. The node traces in detail for end - start nanoseconds of its own
 *                                monotonic clock from receipt (a lease: a lost "stop" cannot leave it on);
 *                                end == start stops at once (the node was taken out of the rotation).
 */

/* vn_report_hdr.flags */
#define VN_REPORT_F_LAST 0x1u /* the last datagram (part) of this interval's report */
#define VN_REPORT_F_KNOWN VN_REPORT_F_LAST /* a v1 receiver rejects any other bit */

/*
 * Datagram header, at offset 0. total_len is the datagram's size including the MAC and must equal the size
 * received; hdr_len + nrec * rec_len + VN_REPORT_MAC_LEN == total_len. A sequence (seq) counts datagrams of
 * one sender instance (node_id, session_id) from 0, +1 per datagram sent, whatever its kind: a gap is loss.
 * Times are the node's CLOCK_REALTIME (comparable between nodes as far as their clocks are synchronised).
 */
struct vn_report_hdr {
	__u32 magic; /* VN_REPORT_MAGIC */
	__u16 version; /* VN_REPORT_VERSION */
	__u16 kind; /* enum vn_report_kind */
	__u16 hdr_len; /* bytes, sizeof(struct vn_report_hdr) in v1 */
	__u16 total_len; /* bytes, header + records + MAC */
	__u16 rec_len; /* bytes, sizeof(struct vn_report_rec) in v1 */
	__u16 nrec; /* records following the header */
	__u16 key_id; /* which shared key made the MAC */
	__u16 part; /* index of this datagram in the interval's report, from 0 */
	__u32 flags; /* VN_REPORT_F_* */
	__u64 node_id; /* chosen by the node, stable across restarts */
	__u64
	    session_id; /* the sender instance: grows at each restart (its start time, CLOCK_REALTIME ns) */
	__u64 job_id; /* e.g. the first 8 bytes of SHA-256(job name) */
	__u64 interval_id; /* interval number of the job (0 in HELLO) */
	__u64 seq; /* datagram sequence number of (node_id, session_id), from 0 */
	__u64 send_realtime_ns; /* when the datagram was sealed */
	__u64 start_realtime_ns; /* interval start (0 in HELLO) */
	__u64 end_realtime_ns; /* interval end, >= start (0 in HELLO) */
};
_Static_assert(sizeof(struct vn_report_hdr) == 88, "vn_report_hdr is ABI");
_Static_assert(offsetof(struct vn_report_hdr, hdr_len) == 8, "vn_report_hdr is ABI");
_Static_assert(offsetof(struct vn_report_hdr, nrec) == 14, "vn_report_hdr is ABI");
_Static_assert(offsetof(struct vn_report_hdr, flags) == 20, "vn_report_hdr is ABI");
_Static_assert(offsetof(struct vn_report_hdr, node_id) == 24, "vn_report_hdr is ABI");
_Static_assert(offsetof(struct vn_report_hdr, seq) == 56, "vn_report_hdr is ABI");
_Static_assert(offsetof(struct vn_report_hdr, end_realtime_ns) == 80, "vn_report_hdr is ABI");

/* vn_report_rec.kind */
enum vn_report_rec_kind {
	VN_REPORT_REC_RANK = 1, /* id is an MPI_COMM_WORLD rank */
	VN_REPORT_REC_CPU = 2, /* id is a CPU of the node */
	VN_REPORT_REC_KIND_MAX = 3,
};

/* vn_report_rec.src_kind: what src_id names. Each class allows NONE and at most one other kind. */
enum vn_report_src {
	VN_REPORT_SRC_NONE = 0, /* the whole class (all sources), src_id and name 0 */
	VN_REPORT_SRC_THREAD = 1, /* class THREAD: src_id = pid (kernel tid), name = comm */
	VN_REPORT_SRC_IRQ =
	    2, /* class IRQ: irq number, or VN_VEC_BASE + enum vn_vec; name = irq name */
	VN_REPORT_SRC_SOFTIRQ = 3, /* class SOFTIRQ: softirq vector < VN_REPORT_SOFTIRQ_MAX */
	VN_REPORT_SRC_HCALL = 4, /* class HCALL: enum vn_hcall */
	VN_REPORT_SRC_HOST =
	    5, /* version 2, class host_preempt (8): src_id = enum vn_dtl_class (1..4), name =
				   the host cause's key (its comm when the host publishes task detail) */
	VN_REPORT_SRC_MAX = 6,
};

/*
 * vn_report_rec.cls beyond enum vn_class (version 2): the hypervisor noise of a rank from the guest's
 * dispatch trace log (guest/dtl, protocol/dtl.h), one class of enum vn_hclass (protocol/noise.h) encoded as
 * VN_REPORT_CLS_HYP_BASE + the class: 8 host_preempt, 9 host_wait, 10 vmexit, 11 host_irq
 * (datagram_cls_of_hclass() and datagram_hclass_of_cls() in shared/format/datagram map them).
 */
#define VN_REPORT_CLS_HYP_BASE 8
#define VN_REPORT_CLS_MAX (VN_REPORT_CLS_HYP_BASE + VN_HCLASS_MAX)
_Static_assert(VN_REPORT_CLS_HYP_BASE == VN_CLASS_MAX, "hypervisor classes follow enum vn_class");
_Static_assert(VN_REPORT_CLS_MAX == 12,
	       "vn_report_rec.cls is ABI: 8..11 are the hypervisor classes");
#define VN_REPORT_SOFTIRQ_MAX 10 /* HI = 0 .. RCU = 9 */
#define VN_REPORT_NAME_LEN 16

/*
 * One record: the noise one rank or CPU took in the interval from one class (and one source of it, or all).
 * A record with cls VN_CLASS_NONE (and src NONE) is the rank's or CPU's summary: its total noise, events,
 * compute time and verdict. No padding: every byte is a field.
 */
struct vn_report_rec {
	__u64 noise_ns; /* net noise in the interval */
	__u64 compute_ns; /* RANK: the rank's compute time in the interval; CPU: 0 */
	__u32 count; /* events */
	__u32 id; /* rank or CPU, by kind */
	__u32 src_id; /* by src_kind; 0 for NONE */
	__u8 kind; /* enum vn_report_rec_kind */
	__u8 cls; /* enum vn_class, or VN_REPORT_CLS_HYP_BASE + enum vn_hclass (version 2) */
	__u8 src_kind; /* enum vn_report_src */
	__u8 verdict; /* RANK: enum vn_pipe_verdict (protocol/app.h) of the rank; CPU: 0 */
	char name[VN_REPORT_NAME_LEN]; /* source name, NUL-padded; 16 bytes without NUL allowed */
};
_Static_assert(sizeof(struct vn_report_rec) == 48, "vn_report_rec is ABI");
_Static_assert(offsetof(struct vn_report_rec, count) == 16, "vn_report_rec is ABI");
_Static_assert(offsetof(struct vn_report_rec, src_id) == 24, "vn_report_rec is ABI");
_Static_assert(offsetof(struct vn_report_rec, kind) == 28, "vn_report_rec is ABI");
_Static_assert(offsetof(struct vn_report_rec, verdict) == 31, "vn_report_rec is ABI");
_Static_assert(offsetof(struct vn_report_rec, name) == 32, "vn_report_rec is ABI");

/* Records that fit in one datagram: (1400 - 88 - 32) / 48 = 26 (1368 bytes). */
#define VN_REPORT_MAX_RECS                                                        \
	((VN_REPORT_MAX_LEN - sizeof(struct vn_report_hdr) - VN_REPORT_MAC_LEN) / \
	 sizeof(struct vn_report_rec))
_Static_assert(VN_REPORT_MAX_RECS == 26, "records per datagram");

#endif
