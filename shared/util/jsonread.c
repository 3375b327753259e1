/* SPDX-License-Identifier: MIT */
/*
 * jsonread: recursive descent bounded by JSONR_MAX_DEPTH into a node array and a string arena, both sized
 * when the document is created; every read is checked against the end of the input.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonread.h"

_Static_assert(JSONR_MAX_DEPTH + 2 <= JSON_MAX_DEPTH,
	       "echoed values must fit the writer's nesting");

static bool is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

struct pctx {
	struct jsonr_doc *doc;
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

static struct jsonr_value *node_new(struct pctx *c)
{
	struct jsonr_value *v;

	if (c->doc->nodes_used >= c->doc->max_nodes)
		return NULL;
	v = &c->doc->nodes[c->doc->nodes_used++];
	memset(v, 0, sizeof(*v));
	return v;
}

/* Room for n more bytes in the string arena. */
static bool strs_room(struct pctx *c, size_t n)
{
	return n <= c->doc->strs_cap - c->doc->strs_used;
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

static int parse_number(struct pctx *c, struct jsonr_value *v)
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
		v->kind = JSONR_INT;
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
	v->kind = JSONR_DOUBLE;
	return 0;
}

static int parse_literal(struct pctx *c, const char *word, struct jsonr_value *v, uint8_t kind,
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

static int parse_value(struct pctx *c, struct jsonr_value *v, int depth);

static int parse_container(struct pctx *c, struct jsonr_value *v, int depth)
{
	bool obj = *c->p == '{';
	char close = obj ? '}' : ']';
	struct jsonr_value *last = NULL, *child;
	const unsigned char *kstart;
	const struct jsonr_value *m;
	const char *key = NULL;
	uint32_t key_len = 0;
	int err;

	if (depth >= JSONR_MAX_DEPTH)
		return perr(c, -E2BIG, "nesting too deep");
	v->kind = obj ? JSONR_OBJ : JSONR_ARR;
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

static int parse_value(struct pctx *c, struct jsonr_value *v, int depth)
{
	skip_ws(c);
	if (c->p >= c->end)
		return perr(c, -EINVAL, "unexpected end of input");
	switch (*c->p) {
	case '{':
	case '[':
		return parse_container(c, v, depth);
	case '"':
		v->kind = JSONR_STR;
		return parse_string(c, &v->str, &v->len);
	case 't':
		return parse_literal(c, "true", v, JSONR_BOOL, true);
	case 'f':
		return parse_literal(c, "false", v, JSONR_BOOL, false);
	case 'n':
		return parse_literal(c, "null", v, JSONR_NULL, false);
	default:
		if (*c->p == '-' || is_digit(*c->p))
			return parse_number(c, v);
		return perr(c, -EINVAL, "unexpected character");
	}
}

struct jsonr_doc *jsonr_doc_new(size_t text_max, uint32_t max_nodes)
{
	struct jsonr_doc *doc = NULL;

	if (!text_max || !max_nodes || text_max > SIZE_MAX / 2) {
		errno = EINVAL;
		return NULL;
	}
	doc = calloc(1, sizeof(*doc));
	if (doc) {
		doc->text_max = text_max;
		doc->max_nodes = max_nodes;
		doc->strs_cap = text_max + 8;
		doc->nodes = calloc(max_nodes, sizeof(*doc->nodes));
		doc->strs = malloc(doc->strs_cap);
	}
	if (!doc || !doc->nodes || !doc->strs) {
		jsonr_doc_free(doc);
		errno = ENOMEM;
		return NULL;
	}
	return doc;
}

void jsonr_doc_free(struct jsonr_doc *doc)
{
	if (!doc)
		return;
	free(doc->nodes);
	free(doc->strs);
	free(doc);
}

int jsonr_parse(struct jsonr_doc *doc, const char *text, size_t len,
		const struct jsonr_value **root)
{
	struct pctx c = { .doc = doc, .start = (const unsigned char *)text };
	struct jsonr_value *v;
	int err;

	doc->err = NULL;
	doc->err_off = 0;
	doc->nodes_used = 0;
	doc->strs_used = 0;
	*root = NULL;
	c.p = c.start;
	if (len > doc->text_max)
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

const struct jsonr_value *jsonr_obj_get(const struct jsonr_value *obj, const char *key)
{
	const struct jsonr_value *m;
	size_t n;

	if (!obj || obj->kind != JSONR_OBJ || !key)
		return NULL;
	n = strlen(key);
	for (m = obj->child; m; m = m->next)
		if (m->key_len == n && memcmp(m->key, key, n) == 0)
			return m;
	return NULL;
}

int jsonr_get_i64(const struct jsonr_value *v, int64_t *out)
{
	if (!v)
		return -ENOENT;
	if (v->kind != JSONR_INT)
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

int jsonr_get_u64(const struct jsonr_value *v, uint64_t *out)
{
	if (!v)
		return -ENOENT;
	if (v->kind != JSONR_INT)
		return -EINVAL;
	if (v->neg)
		return -ERANGE;
	*out = v->mag;
	return 0;
}

const char *jsonr_get_str(const struct jsonr_value *v)
{
	return v && v->kind == JSONR_STR ? v->str : NULL;
}

void jsonr_write_value(struct json_writer *w, const struct jsonr_value *v)
{
	const struct jsonr_value *m;

	if (!v) {
		json_null(w);
		return;
	}
	switch (v->kind) {
	case JSONR_BOOL:
		json_bool(w, v->b);
		break;
	case JSONR_INT:
		if (v->neg)
			json_i64(w,
				 v->mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v->mag);
		else
			json_u64(w, v->mag);
		break;
	case JSONR_DOUBLE:
		json_double(w, v->d);
		break;
	case JSONR_STR:
		json_strn(w, v->str, v->len);
		break;
	case JSONR_ARR:
		json_arr_begin(w);
		for (m = v->child; m; m = m->next)
			jsonr_write_value(w, m);
		json_arr_end(w);
		break;
	case JSONR_OBJ:
		json_obj_begin(w);
		for (m = v->child; m; m = m->next) {
			json_key(w, m->key);
			jsonr_write_value(w, m);
		}
		json_obj_end(w);
		break;
	default:
		json_null(w);
	}
}
