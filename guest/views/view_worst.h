/* SPDX-License-Identifier: MIT */
/*
 * view_worst: the worst gap of each CPU explained, and the tail of its gap durations, for every printer of the
 * measuring commands (text, JSON, HTML; measure, record and report FILE alike). The worst gap is the CPU's
 * longest (merge keeps it by source); with the host's dispatch trace log its split too (kept by view_hyp_cb()
 * when the split is of that gap): its parts are then the guest sources with what stays in their classes, the
 * hypervisor causes and hw. Parts add up to the gap's duration exactly, largest first, each with its share.
 * "before": the last noise events on the CPU before the gap (its lead-up). The tail: p50 .. p99.99 and max
 * from the view's histograms (hist_percentile(): never below the exact order statistic, above it by less than
 * one bucket, 6.25 %; max exact).
 */
#ifndef VNOISE_GUEST_VIEWS_VIEW_WORST_H
#define VNOISE_GUEST_VIEWS_VIEW_WORST_H

#include <stdint.h>
#include <stdio.h>
#include "util/json.h"
#include "views/view.h"

#define VIEW_WORST_PARTS (MERGE_WORST_PARTS + HYPSPLIT_GAP_SOURCES + 1)
#define VIEW_WORST_NAME 112

struct view_worst_part {
	int hyp; /* 0: a guest class (cls: enum vn_class), 1: a hypervisor class or hw (cls: enum vn_hclass) */
	int cls;
	char source
	    [VIEW_WORST_NAME]; /* "thread:hog[12]", "host-user-task:hog[123]", "exit:30", "hw" */
	uint64_t ns;
};

struct view_worst_gap {
	int cpu;
	uint64_t start_ns, duration_ns; /* CLOCK_MONOTONIC (the view's t0_ns is the run's start) */
	int split; /* the host's log split it */
	size_t nparts;
	struct view_worst_part parts[VIEW_WORST_PARTS]; /* largest first; sum == duration_ns */
	size_t nbefore;
	struct {
		int cls; /* enum vn_class */
		char source[VIEW_WORST_NAME];
		uint64_t start_ns, ns; /* ns: its net time */
	} before[MERGE_WORST_BEFORE]; /* oldest first */
};

/* The tail's points, in the order printed: p50, p90, p99, p99.9, p99.99 (then max). */
#define VIEW_TAIL_N 5
extern const double view_tail_pct[VIEW_TAIL_N];
extern const char *const view_tail_key[VIEW_TAIL_N + 1]; /* "p50" .. "p9999", "max" (JSON keys) */

/* The worst gap of CPU index idx into out: 1, or 0 when the CPU had no gap. */
int view_worst(const struct view *v, int idx, struct view_worst_gap *out);
/* The same for the longest gap since the last merge_period_worst_reset() (top's period: view_top_period()
 * starts the next); split only when it is the run's worst too (the view keeps that one split). */
int view_worst_period(const struct view *v, int idx, struct view_worst_gap *out);
/* "worst gap" and "tail" sections of every CPU (text: 80 columns, no tabs). */
void view_worst_text(FILE *f, const struct view *v);
/* "worst": {...} and "percentiles_ns": {...}, "percentiles_by_class_ns": {...} of CPU index idx. */
void view_worst_json(struct json_writer *w, const struct view *v, int idx);

#endif
