/* SPDX-License-Identifier: MIT */
/*
 * termsafe: the one sanitizer for a string from a guest or a node (thread names, causes, agent replies, job
 * names, domain and task names) on its way to a terminal in a text output. Printable ASCII stays as it is;
 * a backslash becomes "\\" and every other byte (C0 controls such as ESC, CR and BEL, DEL, and every byte
 * >= 0x80, so no C1 control and no terminal sequence survives) becomes "\xHH": visible, and nothing lost.
 * JSON, HTML, Prometheus and the TUI have their own escaping; this is for printf'd text. Any thread.
 */
#ifndef VNOISE_UTIL_TERMSAFE_H
#define VNOISE_UTIL_TERMSAFE_H

#include <stddef.h>

/* Room for any max-byte string: 4 bytes each, and the NUL. */
#define TERMSAFE_LEN(max) ((max)*4 + 1)

/* s (at most max bytes, NUL-terminated or not; NULL: "") escaped into out (cap > 0 bytes, always
 * NUL-terminated; a sequence that does not fit whole is left out). Returns out. */
const char *termsafe(char *out, size_t cap, const char *s, size_t max);

#endif
