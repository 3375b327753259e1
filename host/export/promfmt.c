/* SPDX-License-Identifier: MIT */
/*
 * promfmt: Prometheus text exposition 0.0.4. Text is copied in runs between the bytes that need care;
 * UTF-8 is checked with shared/util/json's validator (RFC 3629) and, as in JSON strings, each byte that starts
 * no valid sequence becomes one U+FFFD.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/json.h"
#include "export/promfmt.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD */

/* Append n bytes as bufout_put() does: all or nothing, then full for good; buf stays NUL-terminated. */
static void put_mem(struct bufout *o, const char *s, size_t n)
{
	if (o->full || o->off >= o->len || n >= o->len - o->off) {
		o->full = 1;
		return;
	}
	memcpy(o->buf + o->off, s, n);
	o->off += n;
	o->buf[o->off] = '\0';
}

static void put_str(struct bufout *o, const char *s)
{
	put_mem(o, s, strlen(s));
}

/* s (at most max bytes, up to a NUL) escaped for a label value (quote) or a HELP line (!quote). */
static void put_text(struct bufout *o, const char *s, size_t max, bool quote)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n, run = 0, i = 0;

	if (!s)
		return;
	n = strnlen(s, max);
	while (i < n) {
		const char *rep = NULL;
		size_t step = 1;

		if (p[i] == '\\') {
			rep = "\\\\";
		} else if (p[i] == '\n') {
			rep = "\\n";
		} else if (p[i] == '"' && quote) {
			rep = "\\\"";
		} else if (p[i] < 0x20 || p[i] == 0x7f) {
			rep = REPLACEMENT; /* the format has no escape for them */
		} else if (p[i] >= 0x80) {
			step = json_utf8_len(p + i, n - i);
			if (!step) {
				rep = REPLACEMENT; /* one per byte that starts no valid sequence */
				step = 1;
			} else if (p[i] == 0xc2 && p[i + 1] < 0xa0) {
				rep = REPLACEMENT; /* C1 control U+0080..U+009F */
			}
		}
		if (rep) {
			put_mem(o, s + run, i - run);
			put_str(o, rep);
			run = i + step;
		}
		i += step;
	}
	put_mem(o, s + run, n - run);
}

void promfmt_label_value(struct bufout *o, const char *value, size_t max)
{
	put_text(o, value, max, true);
}

void promfmt_family(struct bufout *o, const char *name, const char *type, const char *help)
{
	put_str(o, "# HELP ");
	put_str(o, name);
	put_str(o, " ");
	put_text(o, help, SIZE_MAX, false);
	put_str(o, "\n# TYPE ");
	put_str(o, name);
	put_str(o, " ");
	put_str(o, type);
	put_str(o, "\n");
}

static void put_head(struct bufout *o, const char *name, const struct promfmt_label *labels,
		     size_t nlabels)
{
	put_str(o, name);
	for (size_t i = 0; i < nlabels; i++) {
		put_str(o, i ? "," : "{");
		put_str(o, labels[i].name);
		put_str(o, "=\"");
		put_text(o, labels[i].value, labels[i].max, true);
		put_str(o, "\"");
	}
	if (nlabels)
		put_str(o, "}");
	put_str(o, " ");
}

/*
 * printf's %g follows LC_NUMERIC: whatever the locale puts between the digits (a decimal comma, a
 * multi-byte separator) becomes one '.', the only thing Prometheus (Go's ParseFloat) reads.
 */
static void put_double(struct bufout *o, double v)
{
	char s[40], t[40];
	size_t j = 0;

	if (isnan(v)) {
		put_str(o, "NaN");
		return;
	}
	if (isinf(v)) {
		put_str(o, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(s, sizeof(s), "%.*g", prec, v);
		if (strtod(s, NULL) == v)
			break; /* %.17g always reads back (IEEE 754 binary64) */
	}
	for (size_t i = 0; s[i]; i++) {
		if (strchr("0123456789+-eE", s[i]))
			t[j++] = s[i];
		else if (!j || t[j - 1] != '.')
			t[j++] = '.';
	}
	put_mem(o, t, j);
}

void promfmt_sample(struct bufout *o, const char *name, const struct promfmt_label *labels,
		    size_t nlabels, double value)
{
	put_head(o, name, labels, nlabels);
	put_double(o, value);
	put_str(o, "\n");
}

void promfmt_sample_u64(struct bufout *o, const char *name, const struct promfmt_label *labels,
			size_t nlabels, uint64_t value)
{
	char s[24];

	put_head(o, name, labels, nlabels);
	snprintf(s, sizeof(s), "%" PRIu64, value);
	put_str(o, s);
	put_str(o, "\n");
}

static bool name_char(char c, bool first, bool colon)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (c == ':')
		return colon;
	return !first && c >= '0' && c <= '9';
}

static bool name_ok(const char *name, bool colon)
{
	if (!name || !name[0])
		return false;
	for (size_t i = 0; name[i]; i++) {
		if (!name_char(name[i], i == 0, colon))
			return false;
	}
	return true;
}

bool promfmt_name_ok(const char *name)
{
	return name_ok(name, true);
}

bool promfmt_label_name_ok(const char *name)
{
	return name_ok(name, false) && strncmp(name, "__", 2) != 0;
}
