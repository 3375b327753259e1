/* SPDX-License-Identifier: MIT */
/*
 * bufout: printf into a fixed buffer that remembers running out of room, and JSON strings from fixed-size
 * fields. No allocation, no stdio FILE: the preload library formats its lines with it inside MPI calls.
 */
#ifndef VNOISE_UTIL_BUFOUT_H
#define VNOISE_UTIL_BUFOUT_H

#include <stddef.h>

struct bufout {
	char *buf;
	size_t len, off;
	int full; /* something did not fit: the text is cut, do not use it */
};

/* Append; once something does not fit nothing more is appended. buf stays NUL-terminated (len > 0). */
void bufout_put(struct bufout *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * Append s (at most max bytes, NUL-terminated or not: names come from the kernel) as a quoted JSON string:
 * quote and backslash escaped, control bytes and bytes above ASCII as \u00XX (a name cut in the middle of a
 * UTF-8 sequence still makes valid JSON).
 */
void bufout_str(struct bufout *o, const char *s, size_t max);
/* The length written, or -ENOSPC when something did not fit. */
int bufout_result(const struct bufout *o);

#endif
