/* SPDX-License-Identifier: MIT */
/*
 * prompb: exposition text -> remote-write WriteRequest bytes (see prompb.h). The wire format, from
 * prometheus/prompb/{remote,types}.proto:
 *   WriteRequest { repeated TimeSeries timeseries = 1; }
 *   TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
 *   Label        { string name = 1; string value = 2; }
 *   Sample       { double value = 1; int64 timestamp = 2; }
 * Length-delimited fields are tag, varint length, bytes; the double is fixed64 little-endian; the int64 a
 * varint of its two's complement. Sizes are known before writing, so one pass writes each series.
 */
#include <errno.h>
#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "export/prompb.h"

#define TAG_LEN(field) ((uint8_t)((field) << 3 | 2)) /* wire type 2: length-delimited */
#define TAG_I64(field) ((uint8_t)((field) << 3 | 1)) /* wire type 1: fixed64 */
#define TAG_VARINT(field) ((uint8_t)((field) << 3 | 0))

void prompb_buf_free(struct prompb_buf *b)
{
	if (!b)
		return;
	free(b->p);
	*b = (struct prompb_buf){ 0 };
}

static int reserve(struct prompb_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	uint8_t *p;

	if (b->len + more <= b->cap)
		return 0;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p)
		return -ENOMEM;
	b->p = p;
	b->cap = cap;
	return 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* The caller reserved the room. */
static void put_varint(struct prompb_buf *b, uint64_t v)
{
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
}

static void put_bytes(struct prompb_buf *b, uint8_t tag, const char *s, size_t n)
{
	b->p[b->len++] = tag;
	put_varint(b, n);
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static size_t field_len(size_t payload)
{
	return 1 + varint_len(payload) + payload;
}

static size_t label_len(const struct prompb_label *l)
{
	return field_len(l->name_len) + field_len(l->value_len);
}

int prompb_put_series(struct prompb_buf *out, const struct prompb_label *labels, size_t n,
		      double value, int64_t ts_ms)
{
	size_t sample = 1 + 8 + 1 + varint_len((uint64_t)ts_ms), series = field_len(sample);
	uint64_t bits;

	for (size_t i = 0; i < n; i++)
		series += field_len(label_len(&labels[i]));
	if (reserve(out, field_len(series)))
		return -ENOMEM;
	out->p[out->len++] = TAG_LEN(1); /* WriteRequest.timeseries */
	put_varint(out, series);
	for (size_t i = 0; i < n; i++) {
		out->p[out->len++] = TAG_LEN(1); /* TimeSeries.labels */
		put_varint(out, label_len(&labels[i]));
		put_bytes(out, TAG_LEN(1), labels[i].name, labels[i].name_len);
		put_bytes(out, TAG_LEN(2), labels[i].value, labels[i].value_len);
	}
	out->p[out->len++] = TAG_LEN(2); /* TimeSeries.samples */
	put_varint(out, sample);
	out->p[out->len++] = TAG_I64(1);
	memcpy(&bits, &value, 8);
	for (int k = 0; k < 8; k++)
		out->p[out->len++] = (uint8_t)(bits >> (8 * k));
	out->p[out->len++] = TAG_VARINT(2);
	put_varint(out, (uint64_t)ts_ms);
	return 0;
}

static int name_cmp(const struct prompb_label *a, const struct prompb_label *b)
{
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, n);

	if (c)
		return c;
	return a->name_len < b->name_len ? -1 : a->name_len > b->name_len;
}

/* Insertion sort: a few labels per series, and it is stable. */
void prompb_sort_labels(struct prompb_label *labels, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct prompb_label x = labels[i];
		size_t j = i;

		for (; j > 0 && name_cmp(&labels[j - 1], &x) > 0; j--)
			labels[j] = labels[j - 1];
		labels[j] = x;
	}
}

/* ---- the exposition parser ---- */

struct line {
	struct prompb_label l[PROMPB_MAX_LABELS];
	size_t n;
	double value;
};

static bool name_start(char c, bool colon)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}

static bool name_char(char c, bool colon)
{
	return name_start(c, colon) || (c >= '0' && c <= '9');
}

static const char *skip_blank(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/* A quoted value at s (after the quote), unescaped into *scratch: the byte after the closing quote. */
static const char *take_value(const char *s, const char *end, char **scratch,
			      struct prompb_label *l)
{
	char *d = *scratch;

	l->value = d;
	for (; s < end && *s != '"'; s++) {
		if (*s != '\\') {
			*d++ = *s;
			continue;
		}
		if (++s >= end)
			return NULL;
		if (*s == 'n')
			*d++ = '\n';
		else if (*s == '\\' || *s == '"')
			*d++ = *s;
		else
			return NULL;
	}
	if (s >= end)
		return NULL;
	l->value_len = (size_t)(d - l->value);
	*scratch = d;
	return s + 1;
}

/* `{l="v",...}` from s (after the brace): the byte after the closing brace, or NULL. */
static const char *take_labels(const char *s, const char *end, char **scratch, struct line *ln)
{
	for (;;) {
		struct prompb_label *l = &ln->l[ln->n];

		s = skip_blank(s, end);
		if (s < end && *s == '}')
			return s + 1;
		if (s >= end || !name_start(*s, false) || ln->n >= PROMPB_MAX_LABELS)
			return NULL;
		l->name = s;
		while (s < end && name_char(*s, false))
			s++;
		l->name_len = (size_t)(s - l->name);
		s = skip_blank(s, end);
		if (s >= end || *s++ != '=')
			return NULL;
		s = skip_blank(s, end);
		if (s >= end || *s++ != '"')
			return NULL;
		s = take_value(s, end, scratch, l);
		if (!s)
			return NULL;
		ln->n++;
		s = skip_blank(s, end);
		if (s < end && *s == ',')
			s++;
		else if (s >= end || *s != '}')
			return NULL;
	}
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void c_locale_init(void)
{
	c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* The value token (and an optional integer timestamp, ignored) up to end. */
static int take_number(const char *s, const char *end, double *v)
{
	char tok[64], *e;
	size_t n;

	s = skip_blank(s, end);
	for (n = 0; s + n < end && s[n] != ' ' && s[n] != '\t'; n++)
		;
	if (!n || n >= sizeof(tok))
		return -1;
	memcpy(tok, s, n);
	tok[n] = '\0';
	pthread_once(&c_locale_once, c_locale_init);
	*v = c_locale ? strtod_l(tok, &e, c_locale) : strtod(tok, &e);
	if (*e)
		return -1;
	s = skip_blank(s + n, end);
	if (s < end && *s == '-')
		s++;
	if (s < end && !(*s >= '0' && *s <= '9'))
		return -1;
	while (s < end && *s >= '0' && *s <= '9')
		s++;
	return skip_blank(s, end) == end ? 0 : -1;
}

/* One sample line [s, end): 0, or -1 when it is not one. ln->l[0] is __name__. */
static int parse_line(const char *s, const char *end, char *scratch, struct line *ln)
{
	static const char name_label[] = "__name__";

	if (!name_start(*s, true))
		return -1;
	ln->l[0] = (struct prompb_label){ .name = name_label,
					  .name_len = sizeof(name_label) - 1,
					  .value = s };
	while (s < end && name_char(*s, true))
		s++;
	ln->l[0].value_len = (size_t)(s - ln->l[0].value);
	ln->n = 1;
	if (s < end && *s == '{') {
		s = take_labels(s + 1, end, &scratch, ln);
		if (!s)
			return -1;
	}
	if (s >= end || (*s != ' ' && *s != '\t'))
		return -1;
	return take_number(s, end, &ln->value);
}

/* Drop empty values, sort, refuse a name given twice. */
static int normalise(struct line *ln)
{
	size_t k = 0;

	for (size_t i = 0; i < ln->n; i++)
		if (ln->l[i].value_len)
			ln->l[k++] = ln->l[i];
	ln->n = k;
	prompb_sort_labels(ln->l, ln->n);
	for (size_t i = 1; i < ln->n; i++)
		if (!name_cmp(&ln->l[i - 1], &ln->l[i]))
			return -1;
	return 0;
}

/* ---- duplicate series: a set of 64-bit hashes of the label set ---- */

struct seen {
	uint64_t *h;
	size_t mask;
};

/* A word at a time: multiply-xorshift per 8 bytes, murmur3's fmix64 at the end (a dedup key, not crypto). */
static uint64_t mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const char *p, size_t n)
{
	uint64_t w;

	h = mix(h, n);
	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = mix(h, w);
	}
	if (n) {
		w = 0;
		memcpy(&w, p, n);
		h = mix(h, w);
	}
	return h;
}

static uint64_t series_hash(const struct line *ln)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < ln->n; i++) {
		h = hash_bytes(h, ln->l[i].name, ln->l[i].name_len);
		h = hash_bytes(h, ln->l[i].value, ln->l[i].value_len);
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h ? h : 1;
}

/* true when h was already there (else it is added). */
static bool seen_add(struct seen *s, uint64_t h)
{
	size_t i = (size_t)h & s->mask;

	for (; s->h[i]; i = (i + 1) & s->mask)
		if (s->h[i] == h)
			return true;
	s->h[i] = h;
	return false;
}

static int seen_init(struct seen *s, const char *text, size_t len)
{
	size_t lines = 1, cap = 16;

	for (const char *p = text; (p = memchr(p, '\n', len - (size_t)(p - text))); p++)
		lines++;
	while (cap < 2 * lines)
		cap *= 2;
	s->h = calloc(cap, sizeof(*s->h));
	s->mask = cap - 1;
	return s->h ? 0 : -ENOMEM;
}

static int encode_line(struct prompb_buf *out, struct line *ln, struct seen *seen, int64_t ts_ms,
		       struct prompb_counts *c)
{
	if (normalise(ln)) {
		c->bad_lines++;
		return 0;
	}
	if (seen_add(seen, series_hash(ln))) {
		c->duplicates++;
		return 0;
	}
	c->samples++;
	return prompb_put_series(out, ln->l, ln->n, ln->value, ts_ms);
}

int prompb_write_request(struct prompb_buf *out, const char *text, size_t len, int64_t ts_ms,
			 struct prompb_counts *counts)
{
	struct prompb_counts c = { 0 };
	struct seen seen = { 0 };
	const char *s = text, *end = text + len;
	char *scratch = malloc(len + 1);
	struct line *ln = malloc(sizeof(*ln));
	int err = -ENOMEM;

	if (!scratch || !ln || seen_init(&seen, text, len))
		goto out;
	err = 0;
	while (s < end && !err) {
		const char *nl = memchr(s, '\n', (size_t)(end - s)), *e = nl ? nl : end;
		const char *b = skip_blank(s, e);

		if (e > b && e[-1] == '\r')
			e--;
		if (b < e && *b != '#') {
			if (parse_line(b, e, scratch, ln))
				c.bad_lines++;
			else
				err = encode_line(out, ln, &seen, ts_ms, &c);
		}
		s = nl ? nl + 1 : end;
	}
out:
	*counts = c;
	free(seen.h);
	free(scratch);
	free(ln);
	return err;
}
