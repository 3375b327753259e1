/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include "util/bufout.h"

void bufout_put(struct bufout *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full || o->off >= o->len) {
		o->full = 1;
		return;
	}
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->off, o->len - o->off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->off) {
		o->full = 1;
		return;
	}
	o->off += (size_t)n;
}

void bufout_str(struct bufout *o, const char *s, size_t max)
{
	bufout_put(o, "\"");
	for (size_t i = 0; s && i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			bufout_put(o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			bufout_put(o, "\\u%04x", c);
		else
			bufout_put(o, "%c", c);
	}
	bufout_put(o, "\"");
}

int bufout_result(const struct bufout *o)
{
	return o->full ? -ENOSPC : (int)o->off;
}
