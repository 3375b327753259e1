/* SPDX-License-Identifier: MIT */
/*
 * view_top: the live table of `top`, refreshed every period (the screen is cleared first when stdout is a
 * terminal); at the end the text summary.
 */
#include <unistd.h>
#include "views/view_text.h"

static void view_top_tick(FILE *f, const struct view *v)
{
	if (isatty(fileno(f)))
		fputs("\033[H\033[2J", f);
	fprintf(f, "vnoise top — %.1f s, kernel helper %s, threshold %.1f us (Ctrl-C to stop)\n",
		v->duration_ns / 1e9, v->helper, v->threshold_ns / 1e3);
	view_table(f, v);
	view_sources(f, v);
	view_overhead_line(f, v);
	fflush(f);
}

const struct view_ops view_top_ops = {
	.tick = view_top_tick,
	.end = view_text_end,
};
