/* SPDX-License-Identifier: MIT */
/*
 * promfmt: the Prometheus text exposition format 0.0.4 written through a bufout (no allocation, no I/O):
 * family headers (# HELP, # TYPE) and sample lines. Label values may come from remote nodes (comm names
 * and the like, fixed-size fields that need not be NUL-terminated): they are escaped as the format asks
 * (backslash, double quote, newline) and every byte that is not valid UTF-8, every other control
 * character (C0, DEL, C1) and every byte sequence the format has no escape for becomes U+FFFD, so
 * whatever the input the output is valid UTF-8 and parses. Metric and label names are the caller's
 * constants and are written as given: check them with promfmt_name_ok() / promfmt_label_name_ok() (the
 * unit suite does). Thread-safe on distinct bufouts. Doubles are formatted with "." whatever LC_NUMERIC
 * says.
 *
 * Like bufout_put(), once something does not fit nothing more is written and bufout_result() is -ENOSPC:
 * render into a bigger buffer and start again.
 */
#ifndef VNOISE_HOST_EXPORT_PROMFMT_H
#define VNOISE_HOST_EXPORT_PROMFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/bufout.h"

struct promfmt_label {
	const char *name; /* a valid label name (promfmt_label_name_ok) */
	const char *value; /* untrusted; NULL is the empty string */
	size_t
	    max; /* read at most max bytes of value, stopping early at a NUL (SIZE_MAX: a C string) */
};

/*
 * "# HELP name help" (help escaped: backslash and newline, and made valid UTF-8) and "# TYPE name type"
 * (type: "counter", "gauge", "untyped", ...). Write it once per family, before the family's samples.
 */
void promfmt_family(struct bufout *o, const char *name, const char *type, const char *help);
/*
 * "name{l1="v1",...} value": no braces when nlabels is 0. value: NaN, +Inf, -Inf, or the shortest of
 * 15, 16 or 17 significant digits that reads back as the same double.
 */
void promfmt_sample(struct bufout *o, const char *name, const struct promfmt_label *labels,
		    size_t nlabels, double value);
/* The same with an exact integer value (counters past 2^53 stay exact). */
void promfmt_sample_u64(struct bufout *o, const char *name, const struct promfmt_label *labels,
			size_t nlabels, uint64_t value);

#endif
