/* SPDX-License-Identifier: MIT */
/* termcell: text in terminal cells (contract in termcell.h). */
#include <string.h>
#include <stdio.h>
#include "util/termcell.h"

size_t termcell_off(const char *s, int k)
{
	size_t b = 0;

	while (s[b] && k-- > 0) {
		b++;
		while ((s[b] & 0xc0) == 0x80)
			b++;
	}
	return b;
}

int termcell_count(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += (*s & 0xc0) != 0x80;
	return n;
}

const char *termcell_fit(const char *s, int w, bool utf8, char *buf, size_t len)
{
	int n = termcell_count(s), keep, tail, pid = 0;
	const char *br = strrchr(s, '[');
	size_t hb, tb;

	if (n <= w || w < 3) {
		snprintf(buf, len, "%.*s", (int)termcell_off(s, w < 0 ? 0 : w), s);
		return buf;
	}
	if (br && s[strlen(s) - 1] == ']')
		pid = termcell_count(br);
	keep = w - 1; /* the ellipsis takes a cell */
	tail = keep / 2 > pid ? keep / 2 : pid;
	if (tail > keep)
		tail = keep;
	hb = termcell_off(s, keep - tail);
	tb = termcell_off(s, n - tail);
	snprintf(buf, len, "%.*s%s%s", (int)hb, s, utf8 ? "\u2026" : "~", s + tb);
	return buf;
}

const char *termcell_spark(const float *hist, int n, int w, bool utf8, char *buf, size_t len)
{
	static const char *const blocks[8] = { "\u2581", "\u2582", "\u2583", "\u2584",
					       "\u2585", "\u2586", "\u2587", "\u2588" };
	static const char ascii[] = " .:-=+*#";
	int first, k;
	float top = 1.0f;
	size_t o = 0;

	if (!len)
		return buf;
	if (w > n)
		w = n;
	if (w < 0)
		w = 0;
	first = n - w;
	for (k = first; k < n; k++)
		if (hist[k] > top)
			top = hist[k];
	for (k = first; k < n; k++) {
		const char *cell;
		char one[2] = { 0, 0 };
		int lvl;
		size_t cl;

		if (hist[k] <= 0.0f) {
			cell = " ";
		} else {
			/* 8 levels over (0, top]: anything above 0 shows at least the lowest */
			lvl = (int)(hist[k] / top * 8.0f - 0.0001f);
			lvl = lvl < 0 ? 0 : lvl > 7 ? 7 : lvl;
			if (utf8) {
				cell = blocks[lvl];
			} else {
				one[0] = ascii[lvl ? lvl : 1];
				cell = one;
			}
		}
		cl = strlen(cell);
		if (o + cl >= len)
			break;
		memcpy(buf + o, cell, cl);
		o += cl;
	}
	buf[o] = 0;
	return buf;
}
