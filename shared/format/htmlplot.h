/* SPDX-License-Identifier: MIT */
/*
 * htmlplot: a small writer of self-contained HTML reports with inline SVG plots, shared by `vnoise-guest report
 * --html` (guest/views/view_html) and `vnoise-host report --html` (host/views/hosthtml). One file, inline CSS,
 * one small inline script that only counts the plots; no external URL of any kind, so the page needs no network
 * at view time. Plots: a timeline (stacked bars per time bin, or lines), a histogram of durations over
 * power-of-two bins (log count axis), a horizontal bar list (top sources), and a table of run facts. Axes carry
 * readable units (ns/us/ms/s, %, counts). Every text that reaches the page goes through htmlplot_escape():
 * names come from guests and host tasks and are hostile. Sized for a 1280x800 browser window.
 *
 * The writers print to a FILE the caller owns; htmlplot_open()/htmlplot_commit() write a report atomically
 * (a temporary file beside the target, renamed over it only when complete). Single-threaded, no global state.
 */
#ifndef VNOISE_FORMAT_HTMLPLOT_H
#define VNOISE_FORMAT_HTMLPLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HTMLPLOT_BINS \
	64 /* power-of-two duration bins: bin k holds [2^k, 2^(k+1)) ns, bin 0 also 0 */
#define HTMLPLOT_NAME_MAX \
	64 /* characters of a name shown in a plot (the whole name is its tooltip) */

/* Durations counted in power-of-two bins (zero-filled = empty). */
struct htmlplot_hist {
	uint64_t count[HTMLPLOT_BINS];
};

/* Count n values of ns each. */
void htmlplot_hist_add(struct htmlplot_hist *h, uint64_t ns, uint64_t n);
/* The bin of a duration: floor(log2(ns)), 0 for 0 and 1. */
unsigned htmlplot_hist_bin(uint64_t ns);

/* One series of a timeline: y[i] in the timeline's unit at point i; color a CSS colour (#rrggbb). */
struct htmlplot_series {
	const char *name;
	const char *color;
	const double *y;
};

/*
 * A timeline: n points, point i covers [t0_s + i * dt_s, t0_s + (i + 1) * dt_s) seconds from the run's start.
 * stacked: the series are stacked bars (each bin's bar is the sum); else each series is a line, broken where
 * a value is NaN (no data). Negative and infinite values are drawn as 0. ymax: the
 * axis' top at least this (0: from the data); unit is "%" or a duration unit chosen by the writer ("ns").
 */
struct htmlplot_timeline {
	const char *title;
	const char
	    *unit; /* "%" (values in percent) or "ns" (values in ns, shown in readable units) */
	double t0_s, dt_s;
	size_t n;
	const struct htmlplot_series *series;
	size_t nseries;
	int stacked;
	double ymax;
	int nodata; /* draw the axes over the n points but no data: "no data" (n == 0 also says so) */
	const char *nodata_why; /* with "no data": why (escaped); NULL: no reason given */
};

/* One bar of a bar list: its name (hostile), its value (in unit) and an optional note shown after it; its group
 * (the class it belongs to: a legend entry per distinct group) drawn in its colour. */
struct htmlplot_bar {
	const char *name;
	double value;
	const char *note; /* NULL: none */
	const char *group; /* NULL: none (no legend entry) */
	const char *color; /* "#rrggbb"; NULL: the neutral bar colour */
};

/* One fact of the facts table: a label and its value (both escaped). */
struct htmlplot_fact {
	const char *label;
	const char *value;
};

/* Sources summed by name over CPUs or vCPUs (the top lists): a growing table, zero-filled = empty. */
struct htmlplot_topent {
	char name[128];
	double value; /* summed (ns) */
	uint64_t count; /* summed */
	double max; /* largest single part (ns) */
	const char *group, *color; /* of the first add (static strings: a class and its colour) */
};
struct htmlplot_top {
	struct htmlplot_topent *e;
	size_t n, cap;
};

/* Add value, count and max to the entry named name (made if new, in group/color: static strings or NULL).
 * 0 or -ENOMEM. */
int htmlplot_top_add(struct htmlplot_top *t, const char *name, const char *group, const char *color,
		     double value, uint64_t count, double max) __attribute__((warn_unused_result));
/* Sort the entries by value, largest first (ties by name). */
void htmlplot_top_sort(struct htmlplot_top *t);
/* The first n (at most) entries as bars with a note "(N times, max D)" ("(N times)" without a max; notes into
 * notes[n][48]); returns n. */
size_t htmlplot_top_bars(const struct htmlplot_top *t, struct htmlplot_bar *b, char (*notes)[48],
			 size_t n);
/* Free the table (accepts an empty one); it is empty again. */
void htmlplot_top_free(struct htmlplot_top *t);

/*
 * The text s as HTML text or attribute value: & < > " ' as entities, control characters and bytes that are not
 * valid UTF-8 as U+FFFD, at most max characters (0: all) and then "...". NULL prints nothing.
 */
void htmlplot_escape(FILE *f, const char *s, size_t max);

/* "850 ns", "12.5 us", "3.20 ms", "1.50 s" (3 significant digits) into buf; returns buf. */
const char *htmlplot_ns(char *buf, size_t len, double ns);
/* The smallest "nice" axis top >= v (1, 2, 2.5, 5 times a power of ten); 1 for v <= 0 or not finite. */
double htmlplot_nice(double v);

/* The document's start: doctype, title (escaped), inline style; the heading h1. */
void htmlplot_head(FILE *f, const char *title);
/* The document's end: the small script and the closing tags. */
void htmlplot_tail(FILE *f);
/* A section heading (h2, escaped) and an optional paragraph (escaped; NULL: none). */
void htmlplot_section(FILE *f, const char *heading, const char *text);
/* The facts as a two-column table. */
void htmlplot_facts(FILE *f, const struct htmlplot_fact *facts, size_t n);
/* A timeline plot (svg class "plot timeline"); with n == 0 the axes and "no data". */
void htmlplot_timeline(FILE *f, const struct htmlplot_timeline *tl);
/* A histogram of h (svg class "plot histogram"); count_label names what is counted ("samples"). */
void htmlplot_histogram(FILE *f, const char *title, const struct htmlplot_hist *h,
			const char *count_label);
/* A horizontal bar list of b[n], in the order given (svg class "plot bars"); unit as for timelines. */
void htmlplot_bars(FILE *f, const char *title, const char *unit, const struct htmlplot_bar *b,
		   size_t n);

/*
 * Open a temporary file beside path for writing (outfile_tmp_open(): mode 0640, ELOOP when path is a
 * symbolic link); its name into tmp. NULL with errno on failure. htmlplot_commit() closes it and, if every
 * write succeeded, renames it over path (a reader sees the old page or the new one, never half of one); on any
 * error it removes the temporary file and returns -errno (0 on success). htmlplot_abandon() closes and
 * removes it.
 */
FILE *htmlplot_open(const char *path, char *tmp, size_t tmplen) __attribute__((warn_unused_result));
/* Whether paths a and b name the same existing file (the page must not replace the record it reports). */
int htmlplot_same_file(const char *a, const char *b);
int htmlplot_commit(FILE *f, const char *tmp, const char *path) __attribute__((warn_unused_result));
void htmlplot_abandon(FILE *f, const char *tmp);

#endif
