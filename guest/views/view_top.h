/* SPDX-License-Identifier: MIT */
/*
 * view_top: the last period of a live run, for top's stream (view_top_ops) and its screen (view_screen_ops).
 * Both move the per-CPU snapshot (v->period, view_period_new()) to now: call each once per period.
 */
#ifndef VNOISE_GUEST_VIEWS_VIEW_TOP_H
#define VNOISE_GUEST_VIEWS_VIEW_TOP_H

#include "views/view.h"

/* The last period's row of each CPU into rows[v->ncpus] (differences: see row_since in view_top.c); the
 * merge engine's period worst gaps start again. */
void view_top_period(const struct view *v, struct view_row *rows);
/*
 * CPU index i's sources in the last period, largest net time first, into *out (malloc'd, the caller frees;
 * NULL when none or out of memory); returns how many. max_ns of each is its run's largest event.
 */
size_t view_top_period_sources(const struct view *v, int i, struct merge_source **out);

#endif
