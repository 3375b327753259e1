/* SPDX-License-Identifier: MIT */
/*
 * qga: the QEMU guest agent (QGA) wire protocol, transport-agnostic: bytes in, bytes out, no I/O. Used by
 * vnoise-guest's agent (answers vnoise-host on its own channel org.vnoise.0, and libvirt on
 * org.qemu.guest_agent.0 with --qga-port) and by `vnoise-host agent` (host/agent/agentcmd), which treats
 * every byte the agent sends as hostile. Three parts:
 *
 *  - framer (qga_framer_*): splits a byte stream (partial and coalesced reads) into top-level JSON texts
 *    by brace/bracket depth, aware of strings and escapes. Whitespace between texts is ignored, other bytes
 *    outside texts are skipped and counted, a text longer than QGA_MSG_MAX is dropped (reported once), and
 *    a 0xFF byte anywhere resets the framer (guest-sync-delimited). No allocation.
 *  - agent (qga_agent_*): the guest-side dispatcher with QEMU's request checks and error texts, the
 *    built-in commands guest-sync, guest-sync-delimited, guest-ping, guest-info, and a table of downstream
 *    commands named __RFQDN_name (e.g. __com.vnoise_start). guest-shutdown is deliberately NOT implemented
 *    and answers CommandNotFound at once: vnoise's agent must never power a guest off, and a fast
 *    CommandNotFound makes libvirt fall back to ACPI for `virsh shutdown`. Every reply is one line.
 *  - host helpers (qga_request*, qga_reply_*): request lines, and validation of a reply as hostile input.
 *
 * Requests and replies are read with util/jsonread (strict RFC 8259; duplicate member names rejected) into
 * a document made with jsonr_doc_new(QGA_MSG_MAX, QGA_MAX_NODES).
 *
 * Thread safety: none of these objects is shared; one framer / doc / agent per thread.
 */
#ifndef VNOISE_FORMAT_QGA_H
#define VNOISE_FORMAT_QGA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "util/json.h"
#include "util/jsonread.h"

#define QGA_MSG_MAX 65536 /* largest JSON text the framer yields / the parser accepts, bytes */
#define QGA_REPLY_MAX 65536 /* reply lines are shorter, bytes (a leading 0xFF not counted) */
#define QGA_MAX_NODES 1024 /* most values (scalars + containers) in one text */
#define QGA_NAME_MAX 64 /* command names are at most QGA_NAME_MAX - 1 bytes */
#define QGA_MAX_COMMANDS 32 /* downstream commands one agent can register */
#define QGA_CLASS_MAX 32 /* error class copied from a reply, with NUL */
#define QGA_DESC_MAX \
	256 /* error description copied from a reply / written by a handler, with NUL */
#define QGA_DELIM 0xff /* guest-sync-delimited sentinel; resets the receiving framer */

/* ---- framer ---- */

enum qga_frame_event {
	QGA_FRAME_NEED = 0, /* input exhausted: feed more */
	QGA_FRAME_MSG = 1, /* a complete JSON text (object or array) */
	QGA_FRAME_OVERSIZE =
	    2, /* a text exceeded QGA_MSG_MAX and is being dropped; reply GenericError */
	QGA_FRAME_RESET = 3, /* a 0xFF byte: any partial text was dropped */
};

struct qga_framer {
	/* counters since qga_framer_init(), for diagnostics */
	uint64_t messages; /* QGA_FRAME_MSG events */
	uint64_t garbage; /* non-whitespace bytes skipped outside texts */
	uint64_t oversize; /* QGA_FRAME_OVERSIZE events */
	uint64_t resets; /* 0xFF bytes */
	uint64_t dropped; /* bytes of partial or oversize texts thrown away */
	/* internal state */
	size_t len; /* bytes of the current text in buf */
	size_t skip; /* discard mode: bytes discarded so far */
	uint32_t depth; /* open braces/brackets, 0 = between texts */
	uint8_t in_str, esc, discard;
	char buf[QGA_MSG_MAX + 1];
};

/* Zero everything, counters included. */
void qga_framer_init(struct qga_framer *f);
/* Drop any partial text (e.g. the peer went away); counters are kept. */
void qga_framer_reset(struct qga_framer *f);

/*
 * Consume bytes from *in (advancing *in and *in_len) until an event. On QGA_FRAME_MSG, *msg / *msg_len are
 * the text (NUL-terminated, in f's buffer, valid until the next call on f). An oversize text is reported when
 * it crosses the limit; its remainder is then discarded by structure up to its end, or for at most another
 * QGA_MSG_MAX bytes, after which the framer starts afresh (so even an unbalanced stream resynchronises).
 */
enum qga_frame_event qga_framer_next(struct qga_framer *f, const char **in, size_t *in_len,
				     const char **msg, size_t *msg_len);

/* ---- command arguments (for handlers) ---- */

/*
 * Argument helpers with QEMU's error texts, written into err (err_cap bytes). args is the "arguments"
 * object or NULL (absent). A present key of the right type: 0. Absent: -ENOENT if !required (err untouched),
 * else -EINVAL "Parameter 'KEY' is missing". Wrong type or out of range: -EINVAL "Invalid parameter type
 * for 'KEY', expected: integer" (or string, boolean).
 */
int qga_arg_i64(const struct jsonr_value *args, const char *key, bool required, int64_t *out,
		char *err, size_t err_cap) __attribute__((warn_unused_result));
/*
 * Reject members of args not named in allowed (a NULL-terminated list; NULL list = no members allowed):
 * 0 or -EINVAL "Parameter 'KEY' is unexpected".
 */
int qga_args_only(const struct jsonr_value *args, const char *const *allowed, char *err,
		  size_t err_cap) __attribute__((warn_unused_result));

/* ---- agent (guest side) ---- */

/*
 * A command handler. args: the request's "arguments" object, or NULL if absent. On success it writes
 * exactly ONE JSON value, the command's "return" value, with w (json_obj_begin() ... json_obj_end() for an
 * object; never json_finish()) and returns 0. On failure it returns -errno and may put a description in
 * err (QGA_DESC_MAX bytes, NUL-terminated; default: the errno text); whatever it wrote is discarded and the
 * reply is a GenericError. A handler that writes no value, several values, or something unbalanced gets a
 * GenericError reply too. Handlers run in the thread that calls qga_agent_dispatch/feed.
 */
typedef int (*qga_handler_fn)(void *ctx, const struct jsonr_value *args, struct json_writer *w,
			      char *err);

struct qga_command {
	const char *name; /* QAPI downstream form __RFQDN_name, see qga_name_downstream() */
	qga_handler_fn fn;
	void *ctx; /* passed to fn; not owned */
};

struct qga_agent;

/* New agent answering guest-info with version (copied, truncated to 63 bytes). NULL + errno on failure. */
struct qga_agent *qga_agent_new(const char *version) __attribute__((warn_unused_result));
void qga_agent_free(struct qga_agent *a);

/*
 * Register n downstream commands (entries are copied; ctx pointers are not owned). All or nothing: returns
 * 0, -EINVAL (a name is not in downstream form, or fn is NULL), -EEXIST (a name is already registered or
 * appears twice), -ENOSPC (more than QGA_MAX_COMMANDS in total).
 */
int qga_agent_register(struct qga_agent *a, const struct qga_command *cmds, size_t n)
    __attribute__((warn_unused_result));

/*
 * Handle one complete request text. *reply / *reply_len: the reply line (ends with \n, NUL-terminated,
 * preceded by a 0xFF byte after a successful guest-sync-delimited), in a's buffer, valid until the next
 * call on a. There is always a reply (errors are replies).
 */
void qga_agent_dispatch(struct qga_agent *a, const char *msg, size_t len, const char **reply,
			size_t *reply_len);

/* Sink for replies: returns 0 or -errno (which stops qga_agent_feed). */
typedef int (*qga_emit_fn)(void *ctx, const char *reply, size_t len);

/*
 * Feed received bytes: frames them, dispatches each complete request and emits its reply (an oversize
 * request gets a GenericError reply). Returns 0, or the first error of emit (the rest of data is then
 * dropped; the framer keeps its state).
 */
int qga_agent_feed(struct qga_agent *a, const void *data, size_t len, qga_emit_fn emit, void *ctx)
    __attribute__((warn_unused_result));

/* Drop any partial request (the host side went away); counters are kept. */
void qga_agent_reset(struct qga_agent *a);

/*
 * True if name is a QAPI downstream command name: "__" RFQDN "_" stem, where RFQDN is at least two
 * dot-separated labels of [a-z0-9-] (a label neither starts nor ends with '-') and stem is [a-z][a-z0-9-]*
 * (QAPI: lower case, words separated by '-'), at most QGA_NAME_MAX - 1 bytes in all.
 */
bool qga_name_downstream(const char *name);

/* ---- host side ---- */

/*
 * Build a request line {"execute":NAME[,"arguments":ARGS][,"id":ID]}\n into buf (cap bytes, NUL-terminated).
 * args_json: NULL, or the text of a JSON object (parsed, and re-serialised compactly so the line has no
 * other newline). id < 0: no "id" member (the agent echoes "id" in its reply). name: a QGA name
 * ([a-z][a-z0-9-]*) or a downstream name. Returns the length without the NUL, or -EINVAL (bad name or
 * args), -ENOSPC (cap too small), -ENOMEM.
 */
ssize_t qga_request(char *buf, size_t cap, const char *name, const char *args_json, int64_t id)
    __attribute__((warn_unused_result));

/*
 * The synchronisation request: delimited: a 0xFF byte then guest-sync-delimited (only on a channel we own:
 * libvirt chokes on the 0xFF of the reply); else plain guest-sync. Same returns as qga_request().
 */
ssize_t qga_request_sync(char *buf, size_t cap, bool delimited, int64_t sync_id)
    __attribute__((warn_unused_result));

/* A validated reply. ret and id point into the doc passed to qga_reply_parse(). */
struct qga_reply {
	bool is_error;
	const struct jsonr_value *ret; /* "return" value (any kind); NULL for an error reply */
	const struct jsonr_value *id; /* echoed "id", NULL if absent */
	char err_class[QGA_CLASS_MAX]; /* error: class, 1-31 ASCII letters */
	char err_desc[QGA_DESC_MAX]; /* error: description, truncated on a UTF-8 boundary, control
					characters replaced by '?' (safe to log) */
};

/*
 * Parse and validate one reply text (as yielded by the framer; a leading 0xFF is the framer's business) as
 * hostile input: a JSON object with exactly one of "return" (any value) and "error" (an object with exactly
 * "class" and "desc", both strings), optionally "id", nothing else. Returns 0, a jsonr_parse() error, or
 * -EPROTO (well-formed JSON, wrong shape). r is zeroed first.
 */
int qga_reply_parse(struct jsonr_doc *doc, const char *msg, size_t len, struct qga_reply *r)
    __attribute__((warn_unused_result));

/*
 * Check a parsed reply to guest-sync[-delimited] {"id":sync_id}: 0 if it returns sync_id; -ESTALE if it
 * returns another integer (an old reply: keep reading, as libvirt does); -EREMOTEIO if it is an error reply;
 * -EPROTO if the return value is not an integer.
 */
int qga_reply_sync_check(const struct qga_reply *r, int64_t sync_id)
    __attribute__((warn_unused_result));

/* True if the reply carries "id" equal to the integer id. */
bool qga_reply_id_is(const struct qga_reply *r, int64_t id);

#endif
