/* SPDX-License-Identifier: MIT */
/*
 * qga: framer (a byte-at-a-time state machine over a fixed buffer), parser (recursive descent bounded by
 * QGA_MAX_DEPTH into a node array and a string arena; every read is checked against the end of the input),
 * agent (QEMU's qmp_dispatch checks and texts; replies are written with the json writer into a fixed buffer
 * through an unbuffered fmemopen stream, so a failed or misbehaving handler is simply rewound) and the host
 * helpers (request lines, strict reply shape checks).
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/qga.h"

_Static_assert(QGA_MAX_DEPTH + 2 <= JSON_MAX_DEPTH, "echoed values must fit the writer's nesting");

/* ==== framer ==== */

void qga_framer_init(struct qga_framer *f)
{
	memset(f, 0, offsetof(struct qga_framer, buf));
	f->buf[0] = '\0';
}

void qga_framer_reset(struct qga_framer *f)
{
	if (f->depth || f->discard)
		f->dropped += f->len;
	f->len = 0;
	f->skip = 0;
	f->depth = 0;
	f->in_str = f->esc = f->discard = 0;
	f->buf[0] = '\0';
}

/* Follow strings, escapes and nesting for one byte inside a text. */
static void framer_track(struct qga_framer *f, unsigned char c)
{
	if (f->in_str) {
		if (f->esc)
			f->esc = 0;
		else if (c == '\\')
			f->esc = 1;
		else if (c == '"')
			f->in_str = 0;
		return;
	}
	if (c == '"')
		f->in_str = 1;
	else if (c == '{' || c == '[')
		f->depth++;
	else if ((c == '}' || c == ']') && f->depth)
		f->depth--;
}

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

enum qga_frame_event qga_framer_next(struct qga_framer *f, const char **in, size_t *in_len,
				     const char **msg, size_t *msg_len)
{
	const unsigned char *p = (const unsigned char *)*in;
	size_t n = *in_len;
	enum qga_frame_event ev = QGA_FRAME_NEED;

	while (n && ev == QGA_FRAME_NEED) {
		unsigned char c = *p++;

		n--;
		if (c == QGA_DELIM) {
			qga_framer_reset(f);
			f->resets++;
			ev = QGA_FRAME_RESET;
		} else if (f->discard) {
			framer_track(f, c);
			f->dropped++;
			if (f->depth == 0 || ++f->skip > QGA_MSG_MAX)
				qga_framer_reset(
				    f); /* end of the text, or give up and start afresh */
		} else if (f->depth == 0) {
			if (c == '{' || c == '[') {
				f->buf[0] = (char)c;
				f->len = 1;
				f->depth = 1;
			} else if (!is_ws(c)) {
				f->garbage++;
			}
		} else if (f->len == QGA_MSG_MAX) {
			f->dropped += f->len + 1;
			f->len = 0;
			f->skip = 1;
			f->discard = 1;
			f->oversize++;
			framer_track(f, c);
			if (f->depth == 0)
				qga_framer_reset(f);
			ev = QGA_FRAME_OVERSIZE;
		} else {
			f->buf[f->len++] = (char)c;
			framer_track(f, c);
			if (f->depth == 0) {
				f->buf[f->len] = '\0';
				*msg = f->buf;
				*msg_len = f->len;
				f->messages++;
				ev = QGA_FRAME_MSG;
			}
		}
	}
	*in = (const char *)p;
	*in_len = n;
	return ev;
}

/* ==== parser ==== */

struct pctx {
	struct qga_doc *doc;
	const unsigned char *start, *p, *end;
};

static int perr(struct pctx *c, int err, const char *what)
{
	if (!c->doc->err) {
		c->doc->err = what;
		c->doc->err_off = (size_t)(c->p - c->start);
	}
	return err;
}

static void skip_ws(struct pctx *c)
{
	while (c->p < c->end && is_ws(*c->p))
		c->p++;
}

static struct qga_value *node_new(struct pctx *c)
{
	struct qga_value *v;

	if (c->doc->nodes_used >= QGA_MAX_NODES)
		return NULL;
	v = &c->doc->nodes[c->doc->nodes_used++];
	memset(v, 0, sizeof(*v));
	return v;
}

/* Room for n more bytes in the string arena. */
static bool strs_room(struct pctx *c, size_t n)
{
	return n <= sizeof(c->doc->strs) - c->doc->strs_used;
}

static int hex4(struct pctx *c, uint32_t *out)
{
	uint32_t v = 0;
	int i;

	if (c->end - c->p < 4)
		return perr(c, -EINVAL, "truncated \\u escape");
	for (i = 0; i < 4; i++) {
		unsigned char h = c->p[i];

		v <<= 4;
		if (h >= '0' && h <= '9')
			v |= h - '0';
		else if (h >= 'a' && h <= 'f')
			v |= h - 'a' + 10;
		else if (h >= 'A' && h <= 'F')
			v |= h - 'A' + 10;
		else
			return perr(c, -EINVAL, "bad hex digit in \\u escape");
	}
	c->p += 4;
	*out = v;
	return 0;
}

/* \uXXXX (the "\u" consumed) to a code point, pairing surrogates. */
static int parse_uescape(struct pctx *c, uint32_t *cp)
{
	uint32_t hi, lo;
	int err;

	err = hex4(c, &hi);
	if (err)
		return err;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return perr(c, -EINVAL, "unpaired low surrogate");
	if (hi >= 0xd800 && hi <= 0xdbff) {
		if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u')
			return perr(c, -EINVAL, "unpaired high surrogate");
		c->p += 2;
		err = hex4(c, &lo);
		if (err)
			return err;
		if (lo < 0xdc00 || lo > 0xdfff)
			return perr(c, -EINVAL, "unpaired high surrogate");
		hi = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (hi == 0)
		return perr(c, -EINVAL, "\\u0000 is not supported");
	*cp = hi;
	return 0;
}

static size_t utf8_put(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string at c->p (opening quote) decoded into the arena: *out, *out_len (NUL-terminated). */
static int parse_string(struct pctx *c, const char **out, uint32_t *out_len)
{
	char *dst = c->doc->strs + c->doc->strs_used;
	size_t n = 0, k;
	uint32_t cp;
	int err;

	c->p++;
	for (;;) {
		unsigned char ch;

		if (c->p >= c->end)
			return perr(c, -EINVAL, "unterminated string");
		ch = *c->p;
		if (ch == '"')
			break;
		if (ch < 0x20)
			return perr(c, -EINVAL, "control character in string");
		if (!strs_room(c, n + 5))
			return perr(c, -E2BIG, "strings too long");
		if (ch == '\\') {
			if (c->end - c->p < 2)
				return perr(c, -EINVAL, "unterminated string");
			c->p += 2;
			switch (c->p[-1]) {
			case '"':
				dst[n++] = '"';
				break;
			case '\\':
				dst[n++] = '\\';
				break;
			case '/':
				dst[n++] = '/';
				break;
			case 'b':
				dst[n++] = '\b';
				break;
			case 'f':
				dst[n++] = '\f';
				break;
			case 'n':
				dst[n++] = '\n';
				break;
			case 'r':
				dst[n++] = '\r';
				break;
			case 't':
				dst[n++] = '\t';
				break;
			case 'u':
				err = parse_uescape(c, &cp);
				if (err)
					return err;
				n += utf8_put(dst + n, cp);
				break;
			default:
				c->p--;
				return perr(c, -EINVAL, "bad escape in string");
			}
			continue;
		}
		k = json_utf8_len(c->p, (size_t)(c->end - c->p));
		if (!k)
			return perr(c, -EINVAL, "invalid UTF-8 in string");
		memcpy(dst + n, c->p, k);
		n += k;
		c->p += k;
	}
	if (n > UINT32_MAX - 1 || !strs_room(c, n + 1))
		return perr(c, -E2BIG, "strings too long");
	c->p++;
	dst[n] = '\0';
	c->doc->strs_used += n + 1;
	*out = dst;
	*out_len = (uint32_t)n;
	return 0;
}

static bool is_digit(unsigned char ch)
{
	return ch >= '0' && ch <= '9';
}

static int parse_number(struct pctx *c, struct qga_value *v)
{
	const unsigned char *s = c->p, *digits;
	bool is_int = true;
	uint64_t mag = 0;
	size_t len;
	char *tmp, *endp;

	if (c->p < c->end && *c->p == '-')
		c->p++;
	digits = c->p;
	if (c->p >= c->end || !is_digit(*c->p))
		return perr(c, -EINVAL, "bad number");
	if (*c->p == '0') {
		c->p++;
		if (c->p < c->end && is_digit(*c->p))
			return perr(c, -EINVAL, "leading zero in number");
	} else {
		while (c->p < c->end && is_digit(*c->p))
			c->p++;
	}
	if (c->p < c->end && *c->p == '.') {
		is_int = false;
		c->p++;
		if (c->p >= c->end || !is_digit(*c->p))
			return perr(c, -EINVAL, "bad fraction in number");
		while (c->p < c->end && is_digit(*c->p))
			c->p++;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		is_int = false;
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (c->p >= c->end || !is_digit(*c->p))
			return perr(c, -EINVAL, "bad exponent in number");
		while (c->p < c->end && is_digit(*c->p))
			c->p++;
	}
	if (is_int) {
		const unsigned char *q;

		for (q = digits; q < c->p; q++) {
			unsigned d = *q - '0';

			if (mag > (UINT64_MAX - d) / 10) {
				c->p = s;
				return perr(c, -ERANGE, "integer out of range");
			}
			mag = mag * 10 + d;
		}
		if (*s == '-' && mag > (uint64_t)INT64_MAX + 1) {
			c->p = s;
			return perr(c, -ERANGE, "integer out of range");
		}
		v->kind = QGA_INT;
		v->mag = mag;
		v->neg = *s == '-' && mag != 0;
		return 0;
	}
	/* strtod needs a NUL-terminated copy: borrow the top of the string arena (not kept) */
	len = (size_t)(c->p - s);
	if (!strs_room(c, len + 1))
		return perr(c, -E2BIG, "strings too long");
	tmp = c->doc->strs + c->doc->strs_used;
	memcpy(tmp, s, len);
	tmp[len] = '\0';
	v->d = strtod(tmp, &endp);
	if (endp != tmp + len) {
		c->p = s;
		return perr(c, -EINVAL, "bad number");
	}
	if (!isfinite(v->d)) {
		c->p = s;
		return perr(c, -ERANGE, "number out of range");
	}
	v->kind = QGA_DOUBLE;
	return 0;
}

static int parse_literal(struct pctx *c, const char *word, struct qga_value *v, uint8_t kind,
			 bool b)
{
	size_t n = strlen(word);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0)
		return perr(c, -EINVAL, "unexpected character");
	c->p += n;
	v->kind = kind;
	v->b = b;
	return 0;
}

static int parse_value(struct pctx *c, struct qga_value *v, int depth);

static int parse_container(struct pctx *c, struct qga_value *v, int depth)
{
	bool obj = *c->p == '{';
	char close = obj ? '}' : ']';
	struct qga_value *last = NULL, *child;
	const unsigned char *kstart;
	const struct qga_value *m;
	const char *key = NULL;
	uint32_t key_len = 0;
	int err;

	if (depth >= QGA_MAX_DEPTH)
		return perr(c, -E2BIG, "nesting too deep");
	v->kind = obj ? QGA_OBJ : QGA_ARR;
	c->p++;
	skip_ws(c);
	if (c->p < c->end && *c->p == close) {
		c->p++;
		return 0;
	}
	for (;;) {
		skip_ws(c);
		if (obj) {
			if (c->p >= c->end || *c->p != '"')
				return perr(c, -EINVAL, "expected a member name");
			kstart = c->p;
			err = parse_string(c, &key, &key_len);
			if (err)
				return err;
			for (m = v->child; m; m = m->next) {
				if (m->key_len == key_len && memcmp(m->key, key, key_len) == 0) {
					c->p = kstart;
					return perr(c, -EINVAL, "duplicate member name");
				}
			}
			skip_ws(c);
			if (c->p >= c->end || *c->p != ':')
				return perr(c, -EINVAL, "expected ':'");
			c->p++;
		}
		child = node_new(c);
		if (!child)
			return perr(c, -E2BIG, "too many values");
		child->key = key;
		child->key_len = key_len;
		err = parse_value(c, child, depth + 1);
		if (err)
			return err;
		if (last)
			last->next = child;
		else
			v->child = child;
		last = child;
		v->len++;
		skip_ws(c);
		if (c->p >= c->end)
			return perr(c, -EINVAL, "unterminated container");
		if (*c->p == close) {
			c->p++;
			return 0;
		}
		if (*c->p != ',')
			return perr(c, -EINVAL,
				    obj ? "expected ',' or '}'" : "expected ',' or ']'");
		c->p++;
	}
}

static int parse_value(struct pctx *c, struct qga_value *v, int depth)
{
	skip_ws(c);
	if (c->p >= c->end)
		return perr(c, -EINVAL, "unexpected end of input");
	switch (*c->p) {
	case '{':
	case '[':
		return parse_container(c, v, depth);
	case '"':
		v->kind = QGA_STR;
		return parse_string(c, &v->str, &v->len);
	case 't':
		return parse_literal(c, "true", v, QGA_BOOL, true);
	case 'f':
		return parse_literal(c, "false", v, QGA_BOOL, false);
	case 'n':
		return parse_literal(c, "null", v, QGA_NULL, false);
	default:
		if (*c->p == '-' || is_digit(*c->p))
			return parse_number(c, v);
		return perr(c, -EINVAL, "unexpected character");
	}
}

struct qga_doc *qga_doc_new(void)
{
	struct qga_doc *doc = malloc(sizeof(*doc));

	if (doc) {
		doc->err = NULL;
		doc->err_off = 0;
		doc->nodes_used = 0;
		doc->strs_used = 0;
	}
	return doc;
}

void qga_doc_free(struct qga_doc *doc)
{
	free(doc);
}

int qga_parse(struct qga_doc *doc, const char *text, size_t len, const struct qga_value **root)
{
	struct pctx c = { .doc = doc, .start = (const unsigned char *)text };
	struct qga_value *v;
	int err;

	doc->err = NULL;
	doc->err_off = 0;
	doc->nodes_used = 0;
	doc->strs_used = 0;
	*root = NULL;
	c.p = c.start;
	if (len > QGA_MSG_MAX)
		return perr(&c, -E2BIG, "text too long");
	if (!text)
		return perr(&c, -EINVAL, "no input");
	c.end = c.start + len;
	v = node_new(&c);
	err = parse_value(&c, v, 0);
	if (err)
		return err;
	skip_ws(&c);
	if (c.p != c.end)
		return perr(&c, -EINVAL, "trailing characters");
	*root = v;
	return 0;
}

const struct qga_value *qga_obj_get(const struct qga_value *obj, const char *key)
{
	const struct qga_value *m;
	size_t n;

	if (!obj || obj->kind != QGA_OBJ || !key)
		return NULL;
	n = strlen(key);
	for (m = obj->child; m; m = m->next)
		if (m->key_len == n && memcmp(m->key, key, n) == 0)
			return m;
	return NULL;
}

int qga_get_i64(const struct qga_value *v, int64_t *out)
{
	if (!v)
		return -ENOENT;
	if (v->kind != QGA_INT)
		return -EINVAL;
	if (v->neg) {
		if (v->mag > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = v->mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v->mag;
	} else {
		if (v->mag > INT64_MAX)
			return -ERANGE;
		*out = (int64_t)v->mag;
	}
	return 0;
}

int qga_get_u64(const struct qga_value *v, uint64_t *out)
{
	if (!v)
		return -ENOENT;
	if (v->kind != QGA_INT)
		return -EINVAL;
	if (v->neg)
		return -ERANGE;
	*out = v->mag;
	return 0;
}

const char *qga_get_str(const struct qga_value *v)
{
	return v && v->kind == QGA_STR ? v->str : NULL;
}

void qga_write_value(struct json_writer *w, const struct qga_value *v)
{
	const struct qga_value *m;

	if (!v) {
		json_null(w);
		return;
	}
	switch (v->kind) {
	case QGA_BOOL:
		json_bool(w, v->b);
		break;
	case QGA_INT:
		if (v->neg)
			json_i64(w,
				 v->mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v->mag);
		else
			json_u64(w, v->mag);
		break;
	case QGA_DOUBLE:
		json_double(w, v->d);
		break;
	case QGA_STR:
		json_strn(w, v->str, v->len);
		break;
	case QGA_ARR:
		json_arr_begin(w);
		for (m = v->child; m; m = m->next)
			qga_write_value(w, m);
		json_arr_end(w);
		break;
	case QGA_OBJ:
		json_obj_begin(w);
		for (m = v->child; m; m = m->next) {
			json_key(w, m->key);
			qga_write_value(w, m);
		}
		json_obj_end(w);
		break;
	default:
		json_null(w);
	}
}

/* ==== command arguments ==== */

static int arg_get(const struct qga_value *args, const char *key, bool required,
		   const struct qga_value **v, char *err, size_t err_cap)
{
	*v = qga_obj_get(args, key);
	if (*v)
		return 0;
	if (!required)
		return -ENOENT;
	snprintf(err, err_cap, "Parameter '%s' is missing", key);
	return -EINVAL;
}

static int arg_type(const char *key, const char *type, char *err, size_t err_cap)
{
	snprintf(err, err_cap, "Invalid parameter type for '%s', expected: %s", key, type);
	return -EINVAL;
}

int qga_arg_i64(const struct qga_value *args, const char *key, bool required, int64_t *out,
		char *err, size_t err_cap)
{
	const struct qga_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (qga_get_i64(v, out))
		return arg_type(key, "integer", err, err_cap);
	return 0;
}

int qga_arg_u64(const struct qga_value *args, const char *key, bool required, uint64_t *out,
		char *err, size_t err_cap)
{
	const struct qga_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (qga_get_u64(v, out))
		return arg_type(key, "integer", err, err_cap);
	return 0;
}

int qga_arg_str(const struct qga_value *args, const char *key, bool required, const char **out,
		char *err, size_t err_cap)
{
	const struct qga_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (v->kind != QGA_STR)
		return arg_type(key, "string", err, err_cap);
	*out = v->str;
	return 0;
}

int qga_arg_bool(const struct qga_value *args, const char *key, bool required, bool *out, char *err,
		 size_t err_cap)
{
	const struct qga_value *v;
	int rc = arg_get(args, key, required, &v, err, err_cap);

	if (rc)
		return rc;
	if (v->kind != QGA_BOOL)
		return arg_type(key, "boolean", err, err_cap);
	*out = v->b;
	return 0;
}

int qga_args_only(const struct qga_value *args, const char *const *allowed, char *err,
		  size_t err_cap)
{
	const struct qga_value *m;
	const char *const *k;

	if (!args || args->kind != QGA_OBJ)
		return 0;
	for (m = args->child; m; m = m->next) {
		for (k = allowed; k && *k; k++)
			if (strcmp(*k, m->key) == 0)
				break;
		if (!k || !*k) {
			snprintf(err, err_cap, "Parameter '%.128s' is unexpected", m->key);
			return -EINVAL;
		}
	}
	return 0;
}

/* ==== agent ==== */

#define CMD_DELIMITED 0x1u /* successful reply is preceded by 0xFF */

struct cmd_entry {
	char name[QGA_NAME_MAX];
	qga_handler_fn fn;
	void *ctx;
	unsigned flags;
};

struct qga_agent {
	struct qga_framer fr;
	struct qga_doc doc;
	char version[64];
	struct cmd_entry cmds[QGA_MAX_COMMANDS];
	size_t ncmds;
	FILE *f; /* unbuffered memory stream over out + 1 */
	struct json_writer w;
	char out[1 + QGA_REPLY_MAX + 1]; /* 0xFF prefix slot, reply, NUL */
};

static const char *const no_args[] = { NULL };

static int cmd_sync(void *ctx, const struct qga_value *args, struct json_writer *w, char *err)
{
	static const char *const allowed[] = { "id", NULL };
	int64_t id;
	int rc;

	rc = qga_args_only(args, allowed, err, QGA_DESC_MAX);
	if (!rc)
		rc = qga_arg_i64(args, "id", true, &id, err, QGA_DESC_MAX);
	if (rc)
		return rc;
	json_i64(w, id);
	return 0;
}

static int cmd_ping(void *ctx, const struct qga_value *args, struct json_writer *w, char *err)
{
	int rc = qga_args_only(args, no_args, err, QGA_DESC_MAX);

	if (rc)
		return rc;
	json_obj_begin(w);
	json_obj_end(w);
	return 0;
}

static void info_entry(struct json_writer *w, const char *name)
{
	json_obj_begin(w);
	json_kv_str(w, "name", name);
	json_kv_bool(w, "enabled", true);
	json_kv_bool(w, "success-response", true);
	json_obj_end(w);
}

static int cmd_info(void *ctx, const struct qga_value *args, struct json_writer *w, char *err);

static const struct {
	const char *name;
	qga_handler_fn fn;
	unsigned flags;
} builtins[] = {
	{ "guest-sync-delimited", cmd_sync, CMD_DELIMITED },
	{ "guest-sync", cmd_sync, 0 },
	{ "guest-ping", cmd_ping, 0 },
	{ "guest-info", cmd_info, 0 },
};

#define NBUILTINS (sizeof(builtins) / sizeof(builtins[0]))

static int cmd_info(void *ctx, const struct qga_value *args, struct json_writer *w, char *err)
{
	const struct qga_agent *a = ctx;
	size_t i;
	int rc = qga_args_only(args, no_args, err, QGA_DESC_MAX);

	if (rc)
		return rc;
	json_obj_begin(w);
	json_kv_str(w, "version", a->version);
	json_key(w, "supported_commands");
	json_arr_begin(w);
	for (i = 0; i < NBUILTINS; i++)
		info_entry(w, builtins[i].name);
	for (i = 0; i < a->ncmds; i++)
		info_entry(w, a->cmds[i].name);
	json_arr_end(w);
	json_obj_end(w);
	return 0;
}

struct qga_agent *qga_agent_new(const char *version)
{
	struct qga_agent *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	snprintf(a->version, sizeof(a->version), "%s", version ? version : "");
	qga_framer_init(&a->fr);
	a->f = fmemopen(a->out + 1, QGA_REPLY_MAX, "w");
	if (!a->f) {
		free(a);
		return NULL;
	}
	setvbuf(a->f, NULL, _IONBF, 0); /* nothing pending: rewind() always starts clean */
	return a;
}

void qga_agent_free(struct qga_agent *a)
{
	if (!a)
		return;
	fclose(a->f);
	free(a);
}

static bool lower_alnum(char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
}

/* [a-z][a-z0-9-]* over [s, e) */
static bool stem_ok(const char *s, const char *e)
{
	if (s >= e || *s < 'a' || *s > 'z')
		return false;
	for (; s < e; s++)
		if (!lower_alnum(*s) && *s != '-')
			return false;
	return true;
}

bool qga_name_downstream(const char *name)
{
	const char *p, *label, *us;
	size_t n;
	int labels = 0;

	if (!name)
		return false;
	n = strnlen(name, QGA_NAME_MAX);
	if (n >= QGA_NAME_MAX || n < 2 || name[0] != '_' || name[1] != '_')
		return false;
	us = memchr(name + 2, '_', n - 2);
	if (!us)
		return false;
	/* RFQDN: labels of [a-z0-9-], not starting or ending with '-', separated by '.' */
	for (label = p = name + 2; p <= us; p++) {
		if (p < us && *p != '.') {
			if (!lower_alnum(*p) && *p != '-')
				return false;
			continue;
		}
		if (p == label || *label == '-' || p[-1] == '-')
			return false;
		labels++;
		label = p + 1;
	}
	return labels >= 2 && stem_ok(us + 1, name + n);
}

/* A name vnoise-host may send: a QGA name [a-z][a-z0-9-]* or a downstream one. */
static bool name_sendable(const char *name)
{
	size_t n;

	if (!name)
		return false;
	n = strnlen(name, QGA_NAME_MAX);
	if (n >= QGA_NAME_MAX)
		return false;
	return stem_ok(name, name + n) || qga_name_downstream(name);
}

static bool name_taken(const struct qga_agent *a, const char *name)
{
	size_t i;

	for (i = 0; i < NBUILTINS; i++)
		if (strcmp(builtins[i].name, name) == 0)
			return true;
	for (i = 0; i < a->ncmds; i++)
		if (strcmp(a->cmds[i].name, name) == 0)
			return true;
	return false;
}

int qga_agent_register(struct qga_agent *a, const struct qga_command *cmds, size_t n)
{
	size_t i, j;

	if (n && !cmds)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!qga_name_downstream(cmds[i].name) || !cmds[i].fn)
			return -EINVAL;
		if (name_taken(a, cmds[i].name))
			return -EEXIST;
		for (j = 0; j < i; j++)
			if (strcmp(cmds[j].name, cmds[i].name) == 0)
				return -EEXIST;
	}
	if (n > QGA_MAX_COMMANDS - a->ncmds)
		return -ENOSPC;
	for (i = 0; i < n; i++) {
		struct cmd_entry *e = &a->cmds[a->ncmds++];

		snprintf(e->name, sizeof(e->name), "%s", cmds[i].name);
		e->fn = cmds[i].fn;
		e->ctx = cmds[i].ctx;
		e->flags = 0;
	}
	return 0;
}

static void reply_begin(struct qga_agent *a)
{
	rewind(a->f);
	clearerr(a->f);
	json_init(&a->w, a->f, 0);
	json_obj_begin(&a->w);
}

/* Close the reply object (echoing id), end the line. 0 or -EINVAL (misuse) / -ENOSPC (too long). */
static int reply_end(struct qga_agent *a, const struct qga_value *id, size_t *len)
{
	long pos;
	int rc;

	if (id) {
		json_key(&a->w, "id");
		qga_write_value(&a->w, id);
	}
	json_obj_end(&a->w);
	rc = json_finish(&a->w);
	pos = ftell(a->f);
	if (rc == -EIO || ferror(a->f) || pos < 0 || pos >= QGA_REPLY_MAX)
		return -ENOSPC;
	if (rc)
		return rc;
	a->out[1 + pos] = '\0';
	*len = (size_t)pos;
	return 0;
}

static const char fallback_reply[] =
    "{\"error\":{\"class\":\"GenericError\",\"desc\":\"reply too large\"}}\n";

static void reply_error(struct qga_agent *a, const char *cls, const char *desc,
			const struct qga_value *id, const char **reply, size_t *reply_len)
{
	size_t len;

	for (;; id = NULL) {
		reply_begin(a);
		json_key(&a->w, "error");
		json_obj_begin(&a->w);
		json_kv_str(&a->w, "class", cls);
		json_kv_str(&a->w, "desc", desc);
		json_obj_end(&a->w);
		if (reply_end(a, id, &len) == 0) {
			*reply = a->out + 1;
			*reply_len = len;
			return;
		}
		if (!id)
			break;
	}
	*reply = fallback_reply;
	*reply_len = sizeof(fallback_reply) - 1;
}

/* QEMU's qmp_dispatch_check_obj: members in order; returns the error text or NULL. */
static const char *check_request(const struct qga_value *root, const char **name,
				 const struct qga_value **args, char *err)
{
	const struct qga_value *m;

	*name = NULL;
	*args = NULL;
	if (root->kind != QGA_OBJ)
		return "QMP input must be a JSON object";
	for (m = root->child; m; m = m->next) {
		if (strcmp(m->key, "execute") == 0) {
			if (m->kind != QGA_STR)
				return "QMP input member 'execute' must be a string";
			*name = m->str;
		} else if (strcmp(m->key, "arguments") == 0) {
			if (m->kind != QGA_OBJ)
				return "QMP input member 'arguments' must be an object";
			*args = m;
		} else if (strcmp(m->key, "id") != 0) {
			snprintf(err, QGA_DESC_MAX, "QMP input member '%.128s' is unexpected",
				 m->key);
			return err;
		}
	}
	if (!*name)
		return "QMP input lacks member 'execute'";
	return NULL;
}

void qga_agent_dispatch(struct qga_agent *a, const char *msg, size_t len, const char **reply,
			size_t *reply_len)
{
	const struct qga_value *root = NULL, *id = NULL, *args;
	qga_handler_fn fn = NULL;
	void *ctx = NULL;
	unsigned flags = 0;
	char err[QGA_DESC_MAX], ebuf[64];
	const char *name, *why;
	size_t i, out_len;
	int rc;

	err[0] = '\0';
	rc = qga_parse(&a->doc, msg, len, &root);
	if (rc) {
		snprintf(err, sizeof(err), "JSON parse error at byte %zu: %s", a->doc.err_off,
			 a->doc.err ? a->doc.err : "invalid");
		reply_error(a, "GenericError", err, NULL, reply, reply_len);
		return;
	}
	id = qga_obj_get(root, "id");
	why = check_request(root, &name, &args, err);
	if (why) {
		reply_error(a, "GenericError", why, id, reply, reply_len);
		return;
	}
	for (i = 0; i < NBUILTINS && !fn; i++) {
		if (strcmp(builtins[i].name, name) == 0) {
			fn = builtins[i].fn;
			ctx = a;
			flags = builtins[i].flags;
		}
	}
	for (i = 0; i < a->ncmds && !fn; i++) {
		if (strcmp(a->cmds[i].name, name) == 0) {
			fn = a->cmds[i].fn;
			ctx = a->cmds[i].ctx;
			flags = a->cmds[i].flags;
		}
	}
	if (!fn) {
		/* guest-shutdown lands here on purpose: see the header */
		snprintf(err, sizeof(err), "The command %.128s has not been found", name);
		reply_error(a, "CommandNotFound", err, id, reply, reply_len);
		return;
	}
	reply_begin(a);
	json_key(&a->w, "return");
	rc = fn(ctx, args, &a->w, err);
	if (rc) {
		err[sizeof(err) - 1] = '\0';
		if (!err[0])
			snprintf(err, sizeof(err), "%.128s failed: %s", name,
				 strerror_r(-rc, ebuf, sizeof(ebuf)));
		reply_error(a, "GenericError", err, id, reply, reply_len);
		return;
	}
	rc = reply_end(a, id, &out_len);
	if (rc) {
		snprintf(err, sizeof(err),
			 rc == -ENOSPC ? "%.128s: reply too large"
				       : "%.128s: internal error: invalid return value",
			 name);
		reply_error(a, "GenericError", err, id, reply, reply_len);
		return;
	}
	if (flags & CMD_DELIMITED) {
		a->out[0] = (char)QGA_DELIM;
		*reply = a->out;
		*reply_len = out_len + 1;
	} else {
		*reply = a->out + 1;
		*reply_len = out_len;
	}
}

int qga_agent_feed(struct qga_agent *a, const void *data, size_t len, qga_emit_fn emit, void *ctx)
{
	const char *in = data, *msg = NULL, *reply;
	size_t msg_len = 0, reply_len;
	enum qga_frame_event ev;
	char err[80];
	int rc;

	while ((ev = qga_framer_next(&a->fr, &in, &len, &msg, &msg_len)) != QGA_FRAME_NEED) {
		if (ev == QGA_FRAME_MSG) {
			qga_agent_dispatch(a, msg, msg_len, &reply, &reply_len);
		} else if (ev == QGA_FRAME_OVERSIZE) {
			snprintf(err, sizeof(err), "JSON message exceeds %d bytes", QGA_MSG_MAX);
			reply_error(a, "GenericError", err, NULL, &reply, &reply_len);
		} else {
			continue;
		}
		rc = emit(ctx, reply, reply_len);
		if (rc)
			return rc;
	}
	return 0;
}

void qga_agent_reset(struct qga_agent *a)
{
	qga_framer_reset(&a->fr);
}

const struct qga_framer *qga_agent_framer(const struct qga_agent *a)
{
	return &a->fr;
}

/* ==== host side ==== */

/* Write the request into buf via a memory stream. */
static ssize_t request_write(char *buf, size_t cap, bool delim, const char *name,
			     const struct qga_value *args, int64_t id)
{
	struct json_writer w;
	size_t off = delim ? 1 : 0;
	ssize_t ret;
	FILE *f;
	long pos;
	int rc;

	if (cap < off + 2)
		return -ENOSPC;
	f = fmemopen(buf + off, cap - off, "w");
	if (!f)
		return -ENOMEM;
	setvbuf(f, NULL, _IONBF, 0);
	json_init(&w, f, 0);
	json_obj_begin(&w);
	json_kv_str(&w, "execute", name);
	if (args) {
		json_key(&w, "arguments");
		qga_write_value(&w, args);
	}
	if (id >= 0)
		json_kv_i64(&w, "id", id);
	json_obj_end(&w);
	rc = json_finish(&w);
	pos = ftell(f);
	if (rc == -EIO || ferror(f) || pos < 0 || (size_t)pos >= cap - off)
		ret = -ENOSPC;
	else if (rc)
		ret = rc;
	else
		ret = pos + (ssize_t)off;
	fclose(f);
	if (ret < 0)
		return ret;
	if (delim)
		buf[0] = (char)QGA_DELIM;
	buf[ret] = '\0';
	return ret;
}

ssize_t qga_request(char *buf, size_t cap, const char *name, const char *args_json, int64_t id)
{
	const struct qga_value *args = NULL;
	struct qga_doc *doc = NULL;
	ssize_t ret;

	if (!buf || !name_sendable(name))
		return -EINVAL;
	if (args_json) {
		doc = qga_doc_new();
		if (!doc)
			return -ENOMEM;
		if (qga_parse(doc, args_json, strlen(args_json), &args) || args->kind != QGA_OBJ) {
			ret = -EINVAL;
			goto out;
		}
	}
	ret = request_write(buf, cap, false, name, args, id);
out:
	qga_doc_free(doc);
	return ret;
}

ssize_t qga_request_sync(char *buf, size_t cap, bool delimited, int64_t sync_id)
{
	struct qga_value args = { .kind = QGA_OBJ, .len = 1 }, idv = { .kind = QGA_INT };

	if (!buf)
		return -EINVAL;
	idv.key = "id";
	idv.key_len = 2;
	idv.neg = sync_id < 0;
	idv.mag = sync_id < 0 ? (uint64_t)0 - (uint64_t)sync_id : (uint64_t)sync_id;
	args.child = &idv;
	return request_write(buf, cap, delimited, delimited ? "guest-sync-delimited" : "guest-sync",
			     &args, -1);
}

/* Copy a hostile description: bounded, cut on a UTF-8 boundary, control characters made '?'. */
static void copy_desc(char *dst, size_t cap, const struct qga_value *v)
{
	const unsigned char *s = (const unsigned char *)v->str;
	size_t i = 0, n = 0, k;

	while (i < v->len) {
		k = json_utf8_len(s + i, v->len - i); /* the parser validated it: k >= 1 */
		if (!k)
			k = 1;
		if (n + k >= cap)
			break;
		if (k == 1 && (s[i] < 0x20 || s[i] == 0x7f))
			dst[n] = '?';
		else
			memcpy(dst + n, s + i, k);
		n += k;
		i += k;
	}
	dst[n] = '\0';
}

static int reply_error_parse(const struct qga_value *e, struct qga_reply *r)
{
	const struct qga_value *cls, *desc;
	uint32_t i;

	/* exactly two members, both found (duplicates are parse errors): nothing else */
	if (e->kind != QGA_OBJ || e->len != 2)
		return -EPROTO;
	cls = qga_obj_get(e, "class");
	desc = qga_obj_get(e, "desc");
	if (!cls || !desc || cls->kind != QGA_STR || desc->kind != QGA_STR)
		return -EPROTO;
	if (cls->len == 0 || cls->len >= QGA_CLASS_MAX)
		return -EPROTO;
	for (i = 0; i < cls->len; i++) {
		char ch = cls->str[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')))
			return -EPROTO;
	}
	memcpy(r->err_class, cls->str, cls->len);
	r->err_class[cls->len] = '\0';
	copy_desc(r->err_desc, sizeof(r->err_desc), desc);
	return 0;
}

int qga_reply_parse(struct qga_doc *doc, const char *msg, size_t len, struct qga_reply *r)
{
	const struct qga_value *root, *m, *err = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = qga_parse(doc, msg, len, &root);
	if (rc)
		return rc;
	rc = -EPROTO;
	if (root->kind != QGA_OBJ)
		goto out;
	for (m = root->child; m; m = m->next) {
		if (strcmp(m->key, "return") == 0)
			r->ret = m;
		else if (strcmp(m->key, "error") == 0)
			err = m;
		else if (strcmp(m->key, "id") == 0)
			r->id = m;
		else
			goto out;
	}
	if (!r->ret == !err)
		goto out;
	rc = 0;
	if (err) {
		r->is_error = true;
		rc = reply_error_parse(err, r);
	}
out:
	if (rc)
		memset(r, 0, sizeof(*r));
	return rc;
}

int qga_reply_sync_check(const struct qga_reply *r, int64_t sync_id)
{
	int64_t v;

	if (r->is_error)
		return -EREMOTEIO;
	if (!r->ret || r->ret->kind != QGA_INT)
		return -EPROTO;
	if (qga_get_i64(r->ret, &v) || v != sync_id)
		return -ESTALE;
	return 0;
}

bool qga_reply_id_is(const struct qga_reply *r, int64_t id)
{
	int64_t v;

	return r->id && qga_get_i64(r->id, &v) == 0 && v == id;
}
