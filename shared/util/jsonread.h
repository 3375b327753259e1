/* SPDX-License-Identifier: MIT */
/*
 * jsonread: a strict RFC 8259 JSON reader, the writer's (util/json.h) counterpart, for text from peers that
 * may be hostile (the QEMU guest agent protocol, QMP replies relayed by libvirt, vnoise's own JSON lines).
 * One text is parsed into a document (struct jsonr_doc) whose limits are fixed when it is created: the
 * longest text, the most values; nothing is allocated while parsing. Strings must be valid UTF-8; \uXXXX
 * escapes (surrogate pairs included) are decoded to UTF-8; \u0000 is rejected (as QEMU does), so every
 * decoded string is a C string. Integers are exact int64/uint64 (out of range: -ERANGE, never silently
 * rounded); other numbers are doubles (strtod, C locale). Duplicate member names are REJECTED: a hostile
 * peer must not be able to say {"return":1,"return":2} and have two readers see different values. The
 * parser never reads past len; the input need not be NUL-terminated.
 *
 * Thread safety: a document is used by one thread at a time.
 */
#ifndef VNOISE_UTIL_JSONREAD_H
#define VNOISE_UTIL_JSONREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/json.h"

#define JSONR_MAX_DEPTH 32 /* deepest container nesting accepted */

enum jsonr_kind {
	JSONR_NULL = 0,
	JSONR_BOOL,
	JSONR_INT, /* exact integer: neg ? -mag : mag, within [INT64_MIN, UINT64_MAX] */
	JSONR_DOUBLE, /* a number with a fraction or exponent, finite */
	JSONR_STR,
	JSONR_ARR,
	JSONR_OBJ,
};

/* One value; values live in a struct jsonr_doc and stay valid until its next jsonr_parse(). */
struct jsonr_value {
	const struct jsonr_value *child; /* JSONR_ARR/JSONR_OBJ: first element/member */
	const struct jsonr_value *next; /* next sibling in the parent container */
	const char *key; /* member of an object: its name (decoded, NUL-terminated); else NULL */
	const char *str; /* JSONR_STR: decoded UTF-8, NUL-terminated, no NUL inside */
	uint64_t mag; /* JSONR_INT: magnitude */
	double d; /* JSONR_DOUBLE: value */
	uint32_t len; /* JSONR_STR: bytes; JSONR_ARR/JSONR_OBJ: elements/members */
	uint32_t key_len; /* bytes of key */
	uint8_t kind; /* enum jsonr_kind */
	bool b; /* JSONR_BOOL: value */
	bool neg; /* JSONR_INT: negative (never set for 0) */
};

/* A parse arena. Read err / err_off after a failure; the rest is the parser's. */
struct jsonr_doc {
	const char *err; /* after a failed jsonr_parse(): what was wrong (static text), else NULL */
	size_t err_off; /* byte offset of the problem in the input */
	size_t text_max; /* longest text accepted, bytes */
	uint32_t max_nodes; /* most values (scalars + containers) in one text */
	uint32_t nodes_used;
	size_t strs_used, strs_cap;
	struct jsonr_value *nodes; /* max_nodes */
	char *
	    strs; /* decoded strings: strs_cap = text_max + 8 bytes, never more than the input + 1 */
};

/*
 * A document for texts of at most text_max bytes holding at most max_nodes values (both >= 1), owned by
 * the caller: NULL + errno (EINVAL, ENOMEM) on failure. jsonr_doc_free() accepts NULL.
 */
struct jsonr_doc *jsonr_doc_new(size_t text_max, uint32_t max_nodes)
    __attribute__((warn_unused_result));
void jsonr_doc_free(struct jsonr_doc *doc);

/*
 * Parse exactly one JSON text (surrounding whitespace allowed) of len bytes at text into doc; *root is
 * then the top value (owned by doc). Returns 0, -EINVAL (syntax, encoding, duplicate member name), -ERANGE
 * (integer outside int64/uint64, double overflow), -E2BIG (len > text_max, deeper than JSONR_MAX_DEPTH,
 * more than max_nodes values). doc->err and doc->err_off describe a failure.
 */
int jsonr_parse(struct jsonr_doc *doc, const char *text, size_t len,
		const struct jsonr_value **root) __attribute__((warn_unused_result));

/* Accessors; all accept NULL (absent value) and then return NULL / -ENOENT. */
const struct jsonr_value *jsonr_obj_get(const struct jsonr_value *obj, const char *key);
/* The integer in v: 0, -ENOENT (v NULL), -EINVAL (not an integer), -ERANGE (does not fit). */
int jsonr_get_i64(const struct jsonr_value *v, int64_t *out) __attribute__((warn_unused_result));
int jsonr_get_u64(const struct jsonr_value *v, uint64_t *out) __attribute__((warn_unused_result));
/* The string in v, or NULL if v is not a string. */
const char *jsonr_get_str(const struct jsonr_value *v);

/* Write v (recursively) with the JSON writer, e.g. to echo a request id or re-serialise arguments. */
void jsonr_write_value(struct json_writer *w, const struct jsonr_value *v);

#endif
