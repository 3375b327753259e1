/* SPDX-License-Identifier: MIT */
/*
 * view_html: `vnoise-guest report FILE --html OUT.html`, the report of a record file as one self-contained
 * HTML page (format/htmlplot): the run's facts (recording version, span, CPUs, drops, partial file), a noise
 * timeline per CPU stacked by class, the histogram of noise sample durations, the top noise sources over all
 * CPUs (and the hypervisor sources with a DTL). The replay (measure/replay) feeds it the file's samples (their
 * span) and every attributed gap beside the view; at the end it writes the page from both. Memory: a few
 * hundred time bins per CPU (their width doubles as the run grows). Single-threaded; the caller owns it.
 */
#ifndef VNOISE_GUEST_VIEWS_VIEW_HTML_H
#define VNOISE_GUEST_VIEWS_VIEW_HTML_H

#include <stdint.h>
#include "noise.h"
#include "views/view.h"

#define VIEW_HTML_BINS 300 /* time bins per CPU at most */
#define VIEW_HTML_BIN0_NS 10000000ull /* the first bin width: 10 ms (doubled while needed) */

struct view_html;

/* A collector for ncpus CPUs (the view's CPU indices); NULL with errno. view_html_free() accepts NULL. */
struct view_html *view_html_new(int ncpus) __attribute__((warn_unused_result));
void view_html_free(struct view_html *h);
/* A sample record of the file (any kind): the timeline spans the earliest start to the latest end. Feed
 * every sample before the first gap. */
void view_html_sample(struct view_html *h, const struct vn_sample *s);
/* One attributed gap [start_ns, end_ns) of CPU index idx with its parts by class (merge's callback). */
void view_html_gap(struct view_html *h, int idx, uint64_t start_ns, uint64_t end_ns,
		   const uint64_t class_ns[VN_CLASS_MAX]);
/* Write the page of view v to path atomically. 0 or -errno (nothing is left at path on failure). */
int view_html_write(const struct view_html *h, const struct view *v, const char *path)
    __attribute__((warn_unused_result));

#endif
