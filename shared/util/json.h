/* SPDX-License-Identifier: MIT */
/*
 * json: a small streaming JSON writer to a FILE*. It keeps a nesting stack, inserts commas, colons and (in
 * pretty mode) newlines with 2-space indentation, escapes strings (quote, backslash, control characters as
 * \u00XX, invalid UTF-8 bytes as \ufffd) and writes non-finite doubles as null. Writing calls return
 * nothing: misuse (a value where a key is due, unbalanced ends, too deep nesting) and stream errors are
 * remembered, further output is suppressed, and json_finish() reports the first problem. The writer does not
 * own the FILE*. One writer per thread.
 */
#ifndef VNOISE_UTIL_JSON_H
#define VNOISE_UTIL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 64
#define JSON_PRETTY 0x1u /* 2-space indentation, one member/element per line, ": " after keys */

struct json_writer {
	FILE *f;
	unsigned flags;
	int err; /* first error (-errno), 0 if none */
	int depth; /* open containers */
	bool done; /* a complete top-level value was written */
	bool key; /* in an object, a key was written and its value is due */
	uint8_t stack[JSON_MAX_DEPTH]; /* per level: container kind and "has members" */
};

/* Start a document on f (not owned); flags: 0 (compact) or JSON_PRETTY. */
void json_init(struct json_writer *w, FILE *f, unsigned flags);

/* Open and close containers. */
void json_obj_begin(struct json_writer *w);
void json_obj_end(struct json_writer *w);
void json_arr_begin(struct json_writer *w);
void json_arr_end(struct json_writer *w);

/* Member name inside an object; the next call must write its value. */
void json_key(struct json_writer *w, const char *key);

/* Values. json_str(NULL) writes null; json_strn() takes len bytes that may hold NULs. */
void json_str(struct json_writer *w, const char *s);
void json_strn(struct json_writer *w, const char *s, size_t len);
void json_u64(struct json_writer *w, uint64_t v);
void json_i64(struct json_writer *w, int64_t v);
void json_double(struct json_writer *w,
		 double v); /* shortest of %.15g/%.17g that reads back exactly */
void json_bool(struct json_writer *w, bool v);
void json_null(struct json_writer *w);

/* Key and value in one call. */
void json_kv_str(struct json_writer *w, const char *key, const char *s);
void json_kv_u64(struct json_writer *w, const char *key, uint64_t v);
void json_kv_i64(struct json_writer *w, const char *key, int64_t v);
void json_kv_double(struct json_writer *w, const char *key, double v);
void json_kv_bool(struct json_writer *w, const char *key, bool v);

/*
 * Length of the valid UTF-8 sequence (RFC 3629: no overlongs, surrogates or code points above U+10FFFF) at s,
 * with n >= 1 bytes available; 0 if the byte at s starts none.
 */
size_t json_utf8_len(const unsigned char *s, size_t n);

/*
 * End the document: checks that exactly one complete value was written, writes a newline and flushes.
 * Returns 0, -EINVAL on misuse (unbalanced, missing value, key outside an object, ...) or -EIO / -errno
 * on a stream error. The writer is then ready for another document on the same stream (JSON lines).
 */
int json_finish(struct json_writer *w) __attribute__((warn_unused_result));

#endif
