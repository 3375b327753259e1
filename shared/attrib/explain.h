/* SPDX-License-Identifier: MIT */
/*
 * explain: the footer under a table of noise by class, one line for each part the user cannot act on without
 * being told what it means: STEAL (the hypervisor ran something else on the vCPU's CPU), UNEXPL (no guest
 * event explains it: the guest-only residual) and HW (what the host's dispatch trace log did not explain
 * either: the residual after the hypervisor split); on the host, STEAL of its vCPU table. A part is explained when it is over EXPLAIN_MIN_PCT of
 * the table's total. One copy of the words, for every table printer of the guest and the host (text and
 * JSON). Pure functions over their arguments: any thread.
 */
#ifndef VNOISE_ATTRIB_EXPLAIN_H
#define VNOISE_ATTRIB_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define EXPLAIN_MIN_PCT 1.0 /* a part over this share of the total gets its line */
#define EXPLAIN_LINES 3 /* at most: STEAL, UNEXPL, HW */
#define EXPLAIN_LINE_LEN 256

/* A table's total and the parts the footer speaks of (ns; 0 where the table has no such part). */
struct explain_totals {
	uint64_t total_ns; /* the table's TOTAL: the sum of all its parts */
	uint64_t steal_ns;
	uint64_t unexpl_ns;
	uint64_t hw_ns;
	int host; /* a table of the host (its words: the reader is the host's admin) */
};

/* The footer's lines (no newline) into lines[], in the order STEAL, UNEXPL, HW; returns how many. */
size_t explain_lines(const struct explain_totals *t, char lines[EXPLAIN_LINES][EXPLAIN_LINE_LEN]);
/* The same, printed to f, each folded at spaces to width columns (continued lines indented two spaces;
 * width 0: not folded). */
void explain_footer(FILE *f, const struct explain_totals *t, int width);

#endif
