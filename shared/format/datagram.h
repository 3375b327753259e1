/* SPDX-License-Identifier: MIT */
/*
 * datagram: build, seal and parse the UDP report datagrams of protocol/cluster.h, and account for lost,
 * late, duplicated and replayed ones by sequence number. Pure C: no allocation, no syscall, no clock (the
 * caller gives the times), so it runs in a rank's reporter and in the collector's receive loop alike.
 * Thread-safe on distinct objects.
 *
 * Sender:   datagram_init(), datagram_add() until -ENOSPC, set VN_REPORT_F_LAST on the last part,
 *           datagram_seal(), send; datagram_next() continues the interval in a new datagram (seq + 1).
 * Receiver: datagram_parse() (validates every byte, MAC in constant time), then datagram_seq_track() per
 *           node to count losses and drop duplicates and replays.
 */
#ifndef VNOISE_FORMAT_DATAGRAM_H
#define VNOISE_FORMAT_DATAGRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "cluster.h"

/*
 * A datagram being built. The header is filled by datagram_init(); the caller may change hdr.flags
 * (VN_REPORT_F_LAST) and hdr.send_realtime_ns until it seals. Records are copied into data as they come.
 */
struct datagram_buf {
	union {
		struct vn_report_hdr hdr;
		uint8_t data[VN_REPORT_MAX_LEN];
	};
	size_t len; /* bytes of header + records so far (the MAC goes after them at seal) */
};

/* Header fields of a new datagram (magic, version, lengths and counts are datagram's). */
struct datagram_meta {
	uint16_t kind; /* enum vn_report_kind */
	uint16_t key_id; /* the key datagram_seal() will be given */
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
int datagram_init(struct datagram_buf *b, const struct datagram_meta *m)
    __attribute__((warn_unused_result));

/*
 * Append a copy of *r; a version 2 record (hypervisor class, HOST source) makes the datagram version 2 (it
 * starts as version 1, which any collector reads). -ENOSPC: it would make the datagram longer than VN_REPORT_MAX_LEN (seal and send
 * this one, datagram_next(), add again); -EINVAL: the record is one datagram_parse() would reject
 * (datagram_rec_ok()), or the datagram is a HELLO or SAMPLE, which carry no record.
 */
int datagram_add(struct datagram_buf *b, const struct vn_report_rec *r)
    __attribute__((warn_unused_result));

/*
 * Turn a datagram that was sealed into the next one of the same interval: seq + 1, part + 1, no records,
 * VN_REPORT_F_LAST cleared, every other field kept. -EOVERFLOW when part would wrap.
 */
int datagram_next(struct datagram_buf *b) __attribute__((warn_unused_result));

/*
 * Write the lengths and the record count, then the HMAC-SHA256 under key (keylen bytes, any length; 32
 * random bytes recommended), which must be the key of the hdr.key_id given to datagram_init(). Returns the
 * datagram's length (send b->data[0..len)), or -EINVAL for an empty key. May be called again after a header
 * change (flags, send time): the MAC is recomputed.
 */
int datagram_seal(struct datagram_buf *b, const void *key, size_t keylen)
    __attribute__((warn_unused_result));

/*
 * The key of key_id, and its length in *keylen; NULL (or *keylen 0) when the id is unknown. Called once per
 * datagram from datagram_parse(), in the caller's thread.
 */
typedef const void *datagram_key_fn(void *ctx, uint16_t key_id, size_t *keylen);

/* A ready-made key lookup over a table: pass datagram_keytab_lookup with ctx = a struct datagram_keytab. */
struct datagram_key {
	uint16_t id;
	const void *key; /* not owned */
	size_t len; /* bytes, > 0 */
};
struct datagram_keytab {
	const struct datagram_key *keys; /* not owned */
	size_t n;
};
const void *datagram_keytab_lookup(void *ctx, uint16_t key_id, size_t *keylen);

/* A validated datagram, copied out (aligned, independent of the receive buffer). */
struct datagram_view {
	struct vn_report_hdr
	    hdr; /* on error: the bytes received (up to 88), unauthenticated, or zeros */
	struct vn_report_rec rec[VN_REPORT_MAX_RECS]; /* hdr.nrec of them */
};

/*
 * Validate dgram[0..len) as received from the network (nothing in it is trusted) and copy it into *out.
 * Checks, in order: magic; version; lengths (header and record sizes of v1, total_len == len, at most 1400
 * bytes, hdr_len + nrec * rec_len + MAC == len); key_id known; MAC (constant time); kind, flags, times; every
 * record (datagram_rec_ok()). Returns 0, or:
 *   -ENOMSG        not a vnoise report (shorter than the magic, or another magic): stray traffic
 *   -EPROTO        a version this build does not read
 *   -EBADMSG       malformed: truncated, lengths inconsistent, or (after a valid MAC) a field out of range
 *   -ENOKEY        unknown key_id
 *   -EKEYREJECTED  MAC mismatch: forged, corrupted, or made with another key
 * A receiver drops the datagram on any error and counts it by reason.
 */
int datagram_parse(const void *dgram, size_t len, datagram_key_fn *key, void *ctx,
		   struct datagram_view *out) __attribute__((warn_unused_result));

/* Whether a record's fields are all in range (the rules of protocol/README.md, version 2: a version 1
 * datagram also may not carry a hypervisor class or the HOST source). */
bool datagram_rec_ok(const struct vn_report_rec *r);

/* A record class by name: the guest classes as classes_guest_name() names them, then the hypervisor
 * classes as classes_hyp_name() does: "host_preempt", "host_wait", "vmexit", "host_irq" (version 2); "?" out
 * of range. */
const char *datagram_class_name(unsigned cls);
/* The record class (vn_report_rec.cls, version 2) of hypervisor class hc (< VN_HCLASS_MAX):
 * VN_REPORT_CLS_HYP_BASE + hc, 8 host_preempt .. 11 host_irq. */
uint8_t datagram_cls_of_hclass(enum vn_hclass hc);
/* The hypervisor class (enum vn_hclass) record class cls encodes; -1 for a guest class or out of range. */
int datagram_hclass_of_cls(unsigned cls);

/* job_id of a job name: the first 8 bytes of SHA-256(name), little-endian. */
uint64_t datagram_job_id(const char *name);

/* What datagram_seq_track() made of the last sequence number. */
enum datagram_seq_class {
	DATAGRAM_SEQ_FIRST = 0, /* first datagram seen from this node: nothing known before it */
	DATAGRAM_SEQ_NEXT = 1, /* the one expected */
	DATAGRAM_SEQ_GAP = 2, /* newer than expected: the ones in between are counted lost */
	DATAGRAM_SEQ_LATE = 3, /* older than the newest, not seen yet (reordered): accept */
	DATAGRAM_SEQ_DUP = 4, /* seen already (network duplicate or replay): drop */
	DATAGRAM_SEQ_STALE = 5, /* older than the window or than the session: cannot tell, drop */
	DATAGRAM_SEQ_RESTART =
	    6, /* a newer session_id, or a resume: the node restarted, counting starts over */
};

#define DATAGRAM_SEQ_WINDOW \
	64 /* datagrams behind the newest that can still be told late from dup */

/*
 * Loss accounting of one node (zero it to start). received counts accepted datagrams (FIRST, NEXT, GAP,
 * LATE, RESTART); lost is net: a datagram counted lost in a gap and arriving late afterwards is taken off
 * again (late counts it). Losses at the tail of a session (before a restart) cannot be seen.
 */
struct datagram_seq {
	uint64_t session_id; /* current sender instance */
	uint64_t top; /* newest sequence number seen */
	uint64_t window; /* bit i: top - i was seen */
	uint64_t floor; /* losses are counted from this seq on (the first one seen) */
	uint64_t received, lost, late, dup, stale, restarts;
	uint64_t
	    resumed; /* of the restarts, those taken with an older session or behind the window */
	uint32_t started; /* 0 until the first datagram */
	uint32_t last; /* enum datagram_seq_class of the last call */
};

/*
 * Account for datagram seq of session_id (both from a datagram datagram_parse() accepted). Returns how many
 * datagrams this one shows lost (the gap between the newest seen and it; 0 in order, late, duplicate or
 * stale: never negative). Then s->last says whether to use the datagram: drop it when DUP or STALE.
 */
uint64_t datagram_seq_track(struct datagram_seq *s, uint64_t session_id, uint64_t seq);

/*
 * 1 when datagram_seq_track() would call (session_id, seq) stale: an older session than the current one, or
 * the current one's seq behind the window. Whether such a datagram is a replay or the node coming back (its
 * clock stepped back, its VM restored from a snapshot) is the receiver's call, from what else it knows.
 */
int datagram_seq_behind(const struct datagram_seq *s, uint64_t session_id, uint64_t seq);

/*
 * Take a datagram datagram_seq_behind() called stale as the first of a restarted sender: counting starts
 * over at seq (nothing before it is counted lost, the window's earlier numbers count as seen: duplicates);
 * last is DATAGRAM_SEQ_RESTART, restarts and resumed grow.
 */
void datagram_seq_resume(struct datagram_seq *s, uint64_t session_id, uint64_t seq);

/* Count a datagram stale without tracking it: the receiver refused the session change it brings. */
void datagram_seq_refuse(struct datagram_seq *s);

#endif
