/* SPDX-License-Identifier: MIT */
/* termsafe: strings from guests and nodes made safe for a terminal (see termsafe.h). */
#include "util/termsafe.h"

const char *termsafe(char *out, size_t cap, const char *s, size_t max)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	for (size_t i = 0; s && i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];
		char e[4];
		size_t n;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			e[0] = (char)c;
			n = 1;
		} else if (c == '\\') {
			e[0] = e[1] = '\\';
			n = 2;
		} else {
			e[0] = '\\';
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			n = 4;
		}
		if (o + n >= cap)
			break;
		for (size_t k = 0; k < n; k++)
			out[o++] = e[k];
	}
	out[o] = 0;
	return out;
}
