/* SPDX-License-Identifier: MIT */
/*
 * vnreport: build, seal and parse the UDP report datagrams of protocol/report.h, and account for lost,
 * late, duplicated and replayed ones by sequence number. Pure C: no allocation, no syscall, no clock (the
 * caller gives the times), so it runs in a rank's reporter and in the collector's receive loop alike.
 * Thread-safe on distinct objects.
 *
 * Sender:   vnreport_init(), vnreport_add() until -ENOSPC, set VN_REPORT_F_LAST on the last part,
 *           vnreport_seal(), send; vnreport_next() continues the interval in a new datagram (seq + 1).
 * Receiver: vnreport_parse() (validates every byte, MAC in constant time), then vnreport_seq_track() per
 *           node to count losses and drop duplicates and replays.
 */
#ifndef VNOISE_VNREPORT_H
#define VNOISE_VNREPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "report.h"

/*
 * A datagram being built. The header is filled by vnreport_init(); the caller may change hdr.flags
 * (VN_REPORT_F_LAST) and hdr.send_realtime_ns until it seals. Records are copied into data as they come.
 */
struct vnreport_buf {
	union {
		struct vn_report_hdr hdr;
		uint8_t data[VN_REPORT_MAX_LEN];
	};
	size_t len; /* bytes of header + records so far (the MAC goes after them at seal) */
};

/* Header fields of a new datagram (magic, version, lengths and counts are vnreport's). */
struct vnreport_meta {
	uint16_t kind; /* enum vn_report_kind */
	uint16_t key_id; /* the key vnreport_seal() will be given */
	uint16_t part; /* 0 for the first datagram of an interval */
	uint32_t flags; /* VN_REPORT_F_* */
	uint64_t node_id;
	uint64_t session_id;
	uint64_t job_id;
	uint64_t interval_id;
	uint64_t seq;
	uint64_t send_realtime_ns;
	uint64_t start_realtime_ns;
	uint64_t end_realtime_ns; /* >= start_realtime_ns */
};

/* Start a datagram with no record. -EINVAL: unknown kind or flag, or end before start. */
int vnreport_init(struct vnreport_buf *b, const struct vnreport_meta *m)
    __attribute__((warn_unused_result));

/*
 * Append a copy of *r. -ENOSPC: it would make the datagram longer than VN_REPORT_MAX_LEN (seal and send
 * this one, vnreport_next(), add again); -EINVAL: the record is one vnreport_parse() would reject
 * (vnreport_rec_ok()), or the datagram is a HELLO or SAMPLE, which carry no record.
 */
int vnreport_add(struct vnreport_buf *b, const struct vn_report_rec *r)
    __attribute__((warn_unused_result));

/*
 * Turn a datagram that was sealed into the next one of the same interval: seq + 1, part + 1, no records,
 * VN_REPORT_F_LAST cleared, every other field kept. -EOVERFLOW when part would wrap.
 */
int vnreport_next(struct vnreport_buf *b) __attribute__((warn_unused_result));

/*
 * Write the lengths and the record count, then the HMAC-SHA256 under key (keylen bytes, any length; 32
 * random bytes recommended), which must be the key of the hdr.key_id given to vnreport_init(). Returns the
 * datagram's length (send b->data[0..len)), or -EINVAL for an empty key. May be called again after a header
 * change (flags, send time): the MAC is recomputed.
 */
int vnreport_seal(struct vnreport_buf *b, const void *key, size_t keylen)
    __attribute__((warn_unused_result));

/*
 * The key of key_id, and its length in *keylen; NULL (or *keylen 0) when the id is unknown. Called once per
 * datagram from vnreport_parse(), in the caller's thread.
 */
typedef const void *vnreport_key_fn(void *ctx, uint16_t key_id, size_t *keylen);

/* A ready-made key lookup over a table: pass vnreport_keytab_lookup with ctx = a struct vnreport_keytab. */
struct vnreport_key {
	uint16_t id;
	const void *key; /* not owned */
	size_t len; /* bytes, > 0 */
};
struct vnreport_keytab {
	const struct vnreport_key *keys; /* not owned */
	size_t n;
};
const void *vnreport_keytab_lookup(void *ctx, uint16_t key_id, size_t *keylen);

/* A validated datagram, copied out (aligned, independent of the receive buffer). */
struct vnreport_view {
	struct vn_report_hdr
	    hdr; /* on error: the bytes received (up to 88), unauthenticated, or zeros */
	struct vn_report_rec rec[VN_REPORT_MAX_RECS]; /* hdr.nrec of them */
};

/*
 * Validate dgram[0..len) as received from the network (nothing in it is trusted) and copy it into *out.
 * Checks, in order: magic; version; lengths (header and record sizes of v1, total_len == len, at most 1400
 * bytes, hdr_len + nrec * rec_len + MAC == len); key_id known; MAC (constant time); kind, flags, times; every
 * record (vnreport_rec_ok()). Returns 0, or:
 *   -ENOMSG        not a vnoise report (shorter than the magic, or another magic): stray traffic
 *   -EPROTO        a version this build does not read
 *   -EBADMSG       malformed: truncated, lengths inconsistent, or (after a valid MAC) a field out of range
 *   -ENOKEY        unknown key_id
 *   -EKEYREJECTED  MAC mismatch: forged, corrupted, or made with another key
 * A receiver drops the datagram on any error and counts it by reason (vnreport_err_name()).
 */
int vnreport_parse(const void *dgram, size_t len, vnreport_key_fn *key, void *ctx,
		   struct vnreport_view *out) __attribute__((warn_unused_result));

/* Whether a record's fields are all in range (the rules of protocol/README.md). */
bool vnreport_rec_ok(const struct vn_report_rec *r);

/*
 * Short stable name of a vnreport_parse() result, for counters and metric labels: "ok", "not-report",
 * "version", "malformed", "unknown-key", "bad-mac", "other".
 */
const char *vnreport_err_name(int err);

/* job_id of a job name: the first 8 bytes of SHA-256(name), little-endian. */
uint64_t vnreport_job_id(const char *name);

/* What vnreport_seq_track() made of the last sequence number. */
enum vnreport_seq_class {
	VNREPORT_SEQ_FIRST = 0, /* first datagram seen from this node: nothing known before it */
	VNREPORT_SEQ_NEXT = 1, /* the one expected */
	VNREPORT_SEQ_GAP = 2, /* newer than expected: the ones in between are counted lost */
	VNREPORT_SEQ_LATE = 3, /* older than the newest, not seen yet (reordered): accept */
	VNREPORT_SEQ_DUP = 4, /* seen already (network duplicate or replay): drop */
	VNREPORT_SEQ_STALE = 5, /* older than the window or than the session: cannot tell, drop */
	VNREPORT_SEQ_RESTART = 6, /* a newer session_id: the node restarted, counting starts over */
};

#define VNREPORT_SEQ_WINDOW \
	64 /* datagrams behind the newest that can still be told late from dup */

/*
 * Loss accounting of one node (zero it to start). received counts accepted datagrams (FIRST, NEXT, GAP,
 * LATE, RESTART); lost is net: a datagram counted lost in a gap and arriving late afterwards is taken off
 * again (late counts it). Losses at the tail of a session (before a restart) cannot be seen.
 */
struct vnreport_seq {
	uint64_t session_id; /* current sender instance */
	uint64_t top; /* newest sequence number seen */
	uint64_t window; /* bit i: top - i was seen */
	uint64_t floor; /* losses are counted from this seq on (the first one seen) */
	uint64_t received, lost, late, dup, stale, restarts;
	uint32_t started; /* 0 until the first datagram */
	uint32_t last; /* enum vnreport_seq_class of the last call */
};

/*
 * Account for datagram seq of session_id (both from a datagram vnreport_parse() accepted). Returns how many
 * datagrams this one shows lost (the gap between the newest seen and it; 0 in order, late, duplicate or
 * stale: never negative). Then s->last says whether to use the datagram: drop it when DUP or STALE.
 */
uint64_t vnreport_seq_track(struct vnreport_seq *s, uint64_t session_id, uint64_t seq);

#endif
