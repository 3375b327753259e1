/* SPDX-License-Identifier: MIT */
/*
 * vnoise record file: the on-disk format written by `vnoise-guest record -o FILE` and read by `report FILE`.
 * A file header (magic "VNOISREC", version, CRC) is followed by a sequence of chunks, each a fixed 32-byte
 * chunk header (magic "VNCK", type, payload length and CRC, sequence number, header CRC) and its payload.
 * Payloads are text "key=value\n" lines (META, STATS, END) or arrays of the noise records of
 * protocol/noise.h (SAMPLES, EVENTS). The END chunk marks a cleanly closed file. This header is an ABI:
 * fixed-width little-endian fields, explicit padding, sizes and offsets asserted. protocol/README.md
 * ("Record file") is the human spec; shared/format/recwriter.h writes it, recreader.h reads it.
 */
#ifndef VNOISE_RECORD_H
#define VNOISE_RECORD_H

#include <stddef.h>
#include <linux/types.h>
#include "noise.h"
#include "dtl.h"

/* The format is little-endian on disk and the structs are used in place: x86 (little-endian) only. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "record files are little-endian");

#define VN_REC_MAGIC "VNOISREC" /* 8 bytes, no NUL on disk */
#define VN_REC_MAGIC_LEN 8
#define VN_REC_VERSION 1u
#define VN_REC_HEADER_MAX 4096u /* a reader rejects a larger header_size */

/*
 * File header, at offset 0. header_size is the number of bytes before the first chunk (64 in version 1; a
 * later minor extension may append fields, which old readers skip). header_crc32 is the CRC-32 of the
 * header_size bytes with header_crc32 itself set to 0. flags: none defined, written 0, ignored on read.
 */
struct vn_rec_header {
	char magic[VN_REC_MAGIC_LEN]; /* "VNOISREC" */
	__u32 version; /* VN_REC_VERSION */
	__u32 header_size; /* bytes, >= sizeof(struct vn_rec_header) */
	__u64 created_realtime_ns; /* CLOCK_REALTIME when the file was created */
	__u32 flags; /* 0 */
	__u32 header_crc32; /* CRC-32 of the header with this field 0 */
	__u8 reserved[32]; /* 0 */
};
_Static_assert(sizeof(struct vn_rec_header) == 64, "vn_rec_header is ABI");
_Static_assert(offsetof(struct vn_rec_header, version) == 8, "vn_rec_header is ABI");
_Static_assert(offsetof(struct vn_rec_header, header_size) == 12, "vn_rec_header is ABI");
_Static_assert(offsetof(struct vn_rec_header, created_realtime_ns) == 16, "vn_rec_header is ABI");
_Static_assert(offsetof(struct vn_rec_header, flags) == 24, "vn_rec_header is ABI");
_Static_assert(offsetof(struct vn_rec_header, header_crc32) == 28, "vn_rec_header is ABI");
_Static_assert(offsetof(struct vn_rec_header, reserved) == 32, "vn_rec_header is ABI");

#define VN_CHUNK_MAGIC 0x4b434e56u /* "VNCK" as little-endian bytes */
#define VN_CHUNK_MAX_PAYLOAD (64u * 1024 * 1024) /* bytes; larger lengths are corruption */

/* Chunk types. Readers pass unknown types through (consumers skip them). */
enum vn_chunk_type {
	VN_CHUNK_META =
	    1, /* text key=value lines: params, hostname, kernel helper, irq.<n>=<name> */
	VN_CHUNK_SAMPLES = 2, /* struct vn_sample[payload_len / 24] */
	VN_CHUNK_EVENTS = 3, /* struct vn_event[payload_len / 56] */
	VN_CHUNK_STATS = 4, /* text key=value lines: counters (dropped, bpf run time, ...) */
	VN_CHUNK_END = 5, /* text key=value totals; last chunk of a cleanly closed file */
	VN_CHUNK_DTL_SPANS = 6, /* struct vn_rec_dtl_span[payload_len / 32]: host intervals used */
	VN_CHUNK_DTL_GAPS = 7, /* struct vn_rec_dtl_gap[payload_len / 192]: gaps split by the DTL */
	VN_CHUNK_DTL_CAUSES = 8, /* text: dtl_detail=class|task, cause.<word>=<cls> <pid> <comm> */
};

/*
 * The host's dispatch trace log (protocol/dtl.h) as a recording used it, so that `report FILE` splits the
 * gaps exactly as the live run did, from the file alone. A span is one host interval of one CPU (guest
 * CLOCK_MONOTONIC ns) that overlapped a gap the run split; spans of a CPU are in time order, each written
 * once. A gap record names a gap the run split with the DTL (gaps the run attributed without it, late or
 * with no DTL, have none) and the host aggregates (VM exits, host IRQs) it used for that gap.
 */
struct vn_rec_dtl_span {
	__u64 start_ns;
	__u64 end_ns; /* > start_ns */
	__u32 cause; /* the entry's cause word (names in VN_CHUNK_DTL_CAUSES) */
	__u16 cpu;
	__u8 kind; /* enum vn_dtl_kind */
	__u8 cls; /* enum vn_dtl_class */
	__u8 hclass; /* enum vn_hclass: 0 host_preempt, 1 host_wait */
	__u8 flags; /* VN_DTL_F_* */
	__u8 pad[6]; /* 0 */
};
_Static_assert(sizeof(struct vn_rec_dtl_span) == 32, "vn_rec_dtl_span is ABI");
_Static_assert(offsetof(struct vn_rec_dtl_span, cause) == 16, "vn_rec_dtl_span is ABI");
_Static_assert(offsetof(struct vn_rec_dtl_span, cpu) == 20, "vn_rec_dtl_span is ABI");

struct vn_rec_dtl_gap {
	__u64 start_ns; /* the gap, as in its SAMPLES record */
	__u64 end_ns;
	__u64 exit_ns; /* VM exit time of the gap's CPU over the gap (prorated host aggregates) */
	__u64 exit_count;
	__u64 irq_ns; /* host IRQ time, the same way */
	__u64 irq_count;
	__u16 cpu;
	__u16 isa; /* exit reasons: 1 VMX, 2 SVM, 0 unknown */
	__u16 nexit; /* used entries of exit[] */
	__u16 pad; /* 0 */
	__u8 reserved[8]; /* 0 */
	struct vn_dtl_exit exit[VN_DTL_AGG_TOP]; /* exit time by reason, largest first */
};
_Static_assert(sizeof(struct vn_rec_dtl_gap) == 192, "vn_rec_dtl_gap is ABI");
_Static_assert(offsetof(struct vn_rec_dtl_gap, cpu) == 48, "vn_rec_dtl_gap is ABI");
_Static_assert(offsetof(struct vn_rec_dtl_gap, exit) == 64, "vn_rec_dtl_gap is ABI");

/*
 * Chunk header, followed directly by payload_len bytes of payload (no alignment padding: a reader copies
 * records out rather than casting file bytes in place). seq counts chunks from 0 without gaps.
 * header_crc32 is the CRC-32 of the 32 header bytes with header_crc32 set to 0; pad must be 0.
 */
struct vn_rec_chunk {
	__u32 magic; /* VN_CHUNK_MAGIC */
	__u16 type; /* enum vn_chunk_type */
	__u16 flags; /* none defined: 0 */
	__u32 payload_len; /* bytes, <= VN_CHUNK_MAX_PAYLOAD */
	__u32 payload_crc32; /* CRC-32 of the payload bytes */
	__u64 seq; /* 0, 1, 2, ... in file order */
	__u32 header_crc32; /* CRC-32 of this header with this field 0 */
	__u32 pad; /* 0 */
};
_Static_assert(sizeof(struct vn_rec_chunk) == 32, "vn_rec_chunk is ABI");
_Static_assert(offsetof(struct vn_rec_chunk, type) == 4, "vn_rec_chunk is ABI");
_Static_assert(offsetof(struct vn_rec_chunk, flags) == 6, "vn_rec_chunk is ABI");
_Static_assert(offsetof(struct vn_rec_chunk, payload_len) == 8, "vn_rec_chunk is ABI");
_Static_assert(offsetof(struct vn_rec_chunk, payload_crc32) == 12, "vn_rec_chunk is ABI");
_Static_assert(offsetof(struct vn_rec_chunk, seq) == 16, "vn_rec_chunk is ABI");
_Static_assert(offsetof(struct vn_rec_chunk, header_crc32) == 24, "vn_rec_chunk is ABI");
_Static_assert(offsetof(struct vn_rec_chunk, pad) == 28, "vn_rec_chunk is ABI");

#endif
