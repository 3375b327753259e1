/* SPDX-License-Identifier: MIT */
/* view_text: the text summary view, whose ops other views reuse (see view.h for the ops contract). */
#ifndef VNOISE_GUEST_VIEWS_VIEW_TEXT_H
#define VNOISE_GUEST_VIEWS_VIEW_TEXT_H

#include "views/view.h"

/* Announce the run on stderr (log_info): its CPUs, kernel helper and whether it runs until Ctrl-C. */
void view_text_start(const struct view *v, uint64_t planned_ns);
/* Header, table, sources and overhead line. */
void view_text_end(FILE *f, const struct view *v);

#endif
