/* SPDX-License-Identifier: MIT */
/*
 * json: streaming writer. Every value goes through json_pre(), which validates the position (value due in
 * an array, after a key, or at top level), writes the separator and indentation, and marks the container
 * non-empty. Strings are decoded as UTF-8 (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF)
 * so that invalid bytes can be replaced one by one with U+FFFD.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/json.h"

#define LVL_OBJ 0x1u /* this level is an object (else an array) */
#define LVL_FILLED 0x2u /* it already has a member/element */

void json_init(struct json_writer *w, FILE *f, unsigned flags)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->flags = flags;
}

static void json_fail(struct json_writer *w, int err)
{
	if (!w->err)
		w->err = err;
}

static void json_indent(struct json_writer *w, int depth)
{
	int i;

	fputc('\n', w->f);
	for (i = 0; i < depth; i++)
		fputs("  ", w->f);
}

/* Before a key (is_key) or a value: check the position and write the separator. false: suppress output. */
static bool json_pre(struct json_writer *w, bool is_key)
{
	uint8_t *lvl;

	if (w->err)
		return false;
	if (w->depth == 0) {
		if (is_key || w->done) {
			json_fail(w, -EINVAL);
			return false;
		}
		return true;
	}
	lvl = &w->stack[w->depth - 1];
	if (*lvl & LVL_OBJ) {
		if (is_key == w->key) { /* key after key, or value without key */
			json_fail(w, -EINVAL);
			return false;
		}
		if (!is_key) {
			w->key = false;
			return true; /* the key wrote the separator */
		}
	} else if (is_key) {
		json_fail(w, -EINVAL);
		return false;
	}
	if (*lvl & LVL_FILLED)
		fputc(',', w->f);
	if (w->flags & JSON_PRETTY)
		json_indent(w, w->depth);
	*lvl |= LVL_FILLED;
	return true;
}

/* After a value: a top-level value completes the document. */
static void json_post(struct json_writer *w)
{
	if (w->depth == 0)
		w->done = true;
}

static void json_begin(struct json_writer *w, uint8_t kind, char c)
{
	if (!json_pre(w, false))
		return;
	if (w->depth >= JSON_MAX_DEPTH) {
		json_fail(w, -EINVAL);
		return;
	}
	w->stack[w->depth++] = kind;
	fputc(c, w->f);
}

static void json_end(struct json_writer *w, uint8_t kind, char c)
{
	uint8_t lvl;

	if (w->err)
		return;
	if (w->depth == 0 || (w->stack[w->depth - 1] & LVL_OBJ) != kind || w->key) {
		json_fail(w, -EINVAL);
		return;
	}
	lvl = w->stack[--w->depth];
	if ((lvl & LVL_FILLED) && (w->flags & JSON_PRETTY))
		json_indent(w, w->depth);
	fputc(c, w->f);
	json_post(w);
}

void json_obj_begin(struct json_writer *w)
{
	json_begin(w, LVL_OBJ, '{');
}

void json_obj_end(struct json_writer *w)
{
	json_end(w, LVL_OBJ, '}');
}

void json_arr_begin(struct json_writer *w)
{
	json_begin(w, 0, '[');
}

void json_arr_end(struct json_writer *w)
{
	json_end(w, 0, ']');
}

size_t json_utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static void json_write_string(struct json_writer *w, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, n;

	fputc('"', w->f);
	while (i < len) {
		unsigned char c = s[i];

		switch (c) {
		case '"':
			fputs("\\\"", w->f);
			break;
		case '\\':
			fputs("\\\\", w->f);
			break;
		case '\n':
			fputs("\\n", w->f);
			break;
		case '\r':
			fputs("\\r", w->f);
			break;
		case '\t':
			fputs("\\t", w->f);
			break;
		case '\b':
			fputs("\\b", w->f);
			break;
		case '\f':
			fputs("\\f", w->f);
			break;
		default:
			if (c < 0x20) {
				fprintf(w->f, "\\u%04x", c);
			} else if (c < 0x80) {
				fputc(c, w->f);
			} else {
				n = json_utf8_len(s + i, len - i);
				if (!n) {
					fputs("\\ufffd", w->f);
				} else {
					fwrite(s + i, 1, n, w->f);
					i += n;
					continue;
				}
			}
		}
		i++;
	}
	fputc('"', w->f);
}

void json_key(struct json_writer *w, const char *key)
{
	if (!key) {
		json_fail(w, -EINVAL);
		return;
	}
	if (!json_pre(w, true))
		return;
	json_write_string(w, key, strlen(key));
	fputs(w->flags & JSON_PRETTY ? ": " : ":", w->f);
	w->key = true;
}

void json_strn(struct json_writer *w, const char *s, size_t len)
{
	if (!s && len) {
		json_fail(w, -EINVAL);
		return;
	}
	if (!json_pre(w, false))
		return;
	json_write_string(w, s ? s : "", len);
	json_post(w);
}

void json_str(struct json_writer *w, const char *s)
{
	if (!s)
		json_null(w);
	else
		json_strn(w, s, strlen(s));
}

void json_u64(struct json_writer *w, uint64_t v)
{
	if (!json_pre(w, false))
		return;
	fprintf(w->f, "%" PRIu64, v);
	json_post(w);
}

void json_i64(struct json_writer *w, int64_t v)
{
	if (!json_pre(w, false))
		return;
	fprintf(w->f, "%" PRId64, v);
	json_post(w);
}

void json_double(struct json_writer *w, double v)
{
	char buf[32];

	if (!isfinite(v)) {
		json_null(w);
		return;
	}
	if (!json_pre(w, false))
		return;
	/* %.15g is exact for most values people print; fall back to 17 digits when it is not */
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, w->f);
	json_post(w);
}

void json_bool(struct json_writer *w, bool v)
{
	if (!json_pre(w, false))
		return;
	fputs(v ? "true" : "false", w->f);
	json_post(w);
}

void json_null(struct json_writer *w)
{
	if (!json_pre(w, false))
		return;
	fputs("null", w->f);
	json_post(w);
}

void json_kv_str(struct json_writer *w, const char *key, const char *s)
{
	json_key(w, key);
	json_str(w, s);
}

void json_kv_u64(struct json_writer *w, const char *key, uint64_t v)
{
	json_key(w, key);
	json_u64(w, v);
}

void json_kv_i64(struct json_writer *w, const char *key, int64_t v)
{
	json_key(w, key);
	json_i64(w, v);
}

void json_kv_double(struct json_writer *w, const char *key, double v)
{
	json_key(w, key);
	json_double(w, v);
}

void json_kv_bool(struct json_writer *w, const char *key, bool v)
{
	json_key(w, key);
	json_bool(w, v);
}

int json_finish(struct json_writer *w)
{
	int err = w->err;

	if (!err && (!w->done || w->depth != 0))
		err = -EINVAL;
	if (!err) {
		fputc('\n', w->f);
		errno = 0;
		if (fflush(w->f) != 0)
			err = errno ? -errno : -EIO;
		else if (ferror(w->f))
			err = -EIO;
	}
	json_init(w, w->f, w->flags);
	return err;
}
