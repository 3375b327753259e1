/* SPDX-License-Identifier: MIT */
/*
 * termcell: text in terminal cells, for the interactive screens of both tools (vnoise-host top, vnoise-guest
 * top). A cell is one UTF-8 code point (the screens print no wide characters). Pure functions, no state.
 */
#ifndef VNOISE_SHARED_UTIL_TERMCELL_H
#define VNOISE_SHARED_UTIL_TERMCELL_H

#include <stdbool.h>
#include <stddef.h>

/* The cells of UTF-8 s; the byte offset of its cell k (its length when s has fewer cells). */
int termcell_count(const char *s);
size_t termcell_off(const char *s, int k);

/*
 * s in at most w cells: whole when it fits, else cut in the middle with an ellipsis ("…", or "~" without
 * UTF-8) so that both ends stay (web-p…d-01 and web-p…d-02 stay apart); a trailing "[pid]" is kept whole.
 * w < 3: the first w cells. Returns buf.
 */
const char *termcell_fit(const char *s, int w, bool utf8, char *buf, size_t len);

/*
 * The last w of hist[n] (oldest first; <= 0: no bar) as a sparkline of 8 levels over (0, max(1, top)]:
 * block characters with UTF-8, " .:-=+*#" without. Returns buf (cut to len).
 */
const char *termcell_spark(const float *hist, int n, int w, bool utf8, char *buf, size_t len);

#endif
