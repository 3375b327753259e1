/* SPDX-License-Identifier: MIT */
/*
 * htmlplot: self-contained HTML with inline SVG plots (see htmlplot.h). Plots are drawn in a fixed viewBox
 * (PLOT_W units wide) that CSS scales to the page width, so a 1280x800 window shows them whole.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "format/htmlplot.h"
#include "util/outfile.h"

#define PLOT_W 1200.0 /* viewBox width */
#define MARGIN_L 80.0 /* y labels */
#define MARGIN_R 190.0 /* legend */
#define MARGIN_T 34.0 /* title */
#define MARGIN_B 42.0 /* x labels */
#define BAR_COLOR "#6b7b8c" /* a bar of no group: neutral, no class's colour */

void htmlplot_hist_add(struct htmlplot_hist *h, uint64_t ns, uint64_t n)
{
	h->count[htmlplot_hist_bin(ns)] += n;
}

unsigned htmlplot_hist_bin(uint64_t ns)
{
	return ns < 2 ? 0 : (unsigned)(63 - __builtin_clzll(ns));
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one (overlong, surrogate, > U+10FFFF). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

void htmlplot_escape(FILE *f, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t shown = 0, n;

	while (p && *p) {
		if (max && shown == max) {
			fputs("...", f);
			return;
		}
		n = utf8_len(p);
		if (!n || (*p < 0x20 && *p != '\t') || *p == 0x7f) {
			fputs("&#xFFFD;", f);
			p++;
		} else if (n > 1) {
			fwrite(p, 1, n, f);
			p += n;
		} else {
			switch (*p) {
			case '&':
				fputs("&amp;", f);
				break;
			case '<':
				fputs("&lt;", f);
				break;
			case '>':
				fputs("&gt;", f);
				break;
			case '"':
				fputs("&quot;", f);
				break;
			case '\'':
				fputs("&#39;", f);
				break;
			default:
				fputc(*p, f);
			}
			p++;
		}
		shown++;
	}
}

const char *htmlplot_ns(char *buf, size_t len, double ns)
{
	static const struct {
		double div;
		const char *unit;
	} units[] = { { 1e9, "s" }, { 1e6, "ms" }, { 1e3, "us" }, { 1, "ns" } };
	double a = fabs(ns), v;
	size_t i;

	if (!isfinite(ns) || a < 0.5) {
		snprintf(buf, len, "0");
		return buf;
	}
	for (i = 0; i < 3 && a < units[i].div; i++)
		;
	v = ns / units[i].div;
	a = fabs(v);
	snprintf(buf, len,
		 a >= 100 || i == 3 ? "%.0f %s"
		 : a >= 10	    ? "%.1f %s"
				    : "%.2f %s",
		 v, units[i].unit);
	return buf;
}

double htmlplot_nice(double v)
{
	static const double steps[] = { 1, 2, 2.5, 5, 10 };
	double p;
	size_t i;

	if (!isfinite(v) || v <= 0)
		return 1;
	p = pow(10, floor(log10(v)));
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i] * p >= v * (1 - 1e-12))
			return steps[i] * p;
	return 10 * p;
}

/* A value on an axis in the plot's unit: "12.5%", "3.20 ms", or a count. */
static const char *axis_label(char *buf, size_t len, const char *unit, double v)
{
	if (unit && !strcmp(unit, "%"))
		snprintf(buf, len, v >= 10 || v == 0 ? "%.0f%%" : v >= 1 ? "%.1f%%" : "%.2f%%", v);
	else if (unit && !strcmp(unit, "ns"))
		htmlplot_ns(buf, len, v);
	else
		snprintf(buf, len, v >= 100 || v == floor(v) ? "%.0f" : "%.2f", v);
	return buf;
}

static double finite_or0(double v)
{
	return isfinite(v) && v > 0 ? v : 0;
}

void htmlplot_head(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
	      f);
	htmlplot_escape(f, title, 0);
	fputs(
	    "</title>\n<style>\n"
	    "body{font:14px/1.4 sans-serif;margin:16px auto;max-width:1240px;color:#222;"
	    "background:#fff;padding:0 12px}\n"
	    "h1{font-size:22px;margin:4px 0 8px}h2{font-size:17px;margin:22px 0 6px;"
	    "border-bottom:1px solid #ccc}\n"
	    "svg.plot{width:100%;height:auto;display:block;margin:4px 0 10px}\n"
	    "svg text{font:12px sans-serif;fill:#333}svg .title{font-size:14px;font-weight:bold}\n"
	    "svg .axis{stroke:#888;stroke-width:1}svg .grid{stroke:#e4e4e4;stroke-width:1}\n"
	    "table.facts{border-collapse:collapse}table.facts td{padding:2px 14px 2px 0;"
	    "vertical-align:top}\n"
	    "table.facts td:first-child{color:#555}p.note{color:#555;margin:2px 0}\n"
	    "</style>\n</head>\n<body>\n<h1>",
	    f);
	htmlplot_escape(f, title, 0);
	fputs("</h1>\n", f);
}

void htmlplot_tail(FILE *f)
{
	/* The one script: counts the plots into data-plots (a test sees that it ran without error). */
	fputs("<script>document.body.setAttribute(\"data-plots\","
	      "String(document.querySelectorAll(\"svg.plot\").length));</script>\n"
	      "</body>\n</html>\n",
	      f);
}

void htmlplot_section(FILE *f, const char *heading, const char *text)
{
	fputs("<h2>", f);
	htmlplot_escape(f, heading, 0);
	fputs("</h2>\n", f);
	if (text) {
		fputs("<p class=\"note\">", f);
		htmlplot_escape(f, text, 0);
		fputs("</p>\n", f);
	}
}

void htmlplot_facts(FILE *f, const struct htmlplot_fact *facts, size_t n)
{
	size_t i;

	fputs("<table class=\"facts\">\n", f);
	for (i = 0; i < n; i++) {
		fputs("<tr><td>", f);
		htmlplot_escape(f, facts[i].label, 0);
		fputs("</td><td>", f);
		htmlplot_escape(f, facts[i].value, 0);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

/* <svg> of height h with a title; the caller closes it with "</svg>". */
static void svg_open(FILE *f, const char *cls, double h, const char *title)
{
	fprintf(f,
		"<svg class=\"plot %s\" viewBox=\"0 0 %.0f %.0f\" "
		"role=\"img\">\n<text class=\"title\" x=\"%.0f\" y=\"20\">",
		cls, PLOT_W, h, MARGIN_L);
	htmlplot_escape(f, title, 0);
	fputs("</text>\n", f);
}

/* Horizontal grid lines and y labels from 0 to ymax over [top, bottom] (5 ticks). */
static void y_axis(FILE *f, double top, double bottom, double ymax, const char *unit)
{
	char lab[32];
	int k;

	for (k = 0; k <= 4; k++) {
		double y = bottom - (bottom - top) * k / 4.0;

		fprintf(f,
			"<line class=\"%s\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
			"<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			k ? "grid" : "axis", MARGIN_L, y, PLOT_W - MARGIN_R, y, MARGIN_L - 6, y + 4,
			axis_label(lab, sizeof(lab), unit, ymax * k / 4.0));
	}
}

/* x axis in seconds: ticks every nice step over [t0, t1]. */
static void x_axis_time(FILE *f, double bottom, double t0, double t1)
{
	double span = t1 > t0 ? t1 - t0 : 1, step = htmlplot_nice(span / 8), t;
	double x0 = MARGIN_L, w = PLOT_W - MARGIN_L - MARGIN_R;

	for (t = ceil(t0 / step) * step; t <= t1 + step * 1e-9; t += step) {
		double x = x0 + w * (t - t0) / span;

		fprintf(f,
			"<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g s</text>\n",
			x, bottom, x, bottom + 5, x, bottom + 18, t);
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">time since start</text>\n",
		x0 + w / 2, bottom + 36);
}

/* The legend: a swatch and the (escaped) name per series, right of the plot. */
static void legend(FILE *f, const struct htmlplot_series *s, size_t n, double top)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double y = top + 4 + 18.0 * (double)i;

		fprintf(f,
			"<rect x=\"%.0f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.0f\" y=\"%.1f\">",
			PLOT_W - MARGIN_R + 14, y, s[i].color, PLOT_W - MARGIN_R + 32, y + 10);
		htmlplot_escape(f, s[i].name, 24);
		fputs("</text>\n", f);
	}
}

/* The axis top of a timeline: its ymax or the largest bar (stacked) or value. */
static double timeline_top(const struct htmlplot_timeline *tl)
{
	double top = finite_or0(tl->ymax), sum;
	size_t i, k;

	for (i = 0; i < tl->n; i++) {
		sum = 0;
		for (k = 0; k < tl->nseries; k++) {
			double v = finite_or0(tl->series[k].y[i]);

			if (tl->stacked)
				sum += v;
			else if (v > sum)
				sum = v;
		}
		if (sum > top)
			top = sum;
	}
	return 4 * htmlplot_nice(top / 4); /* the 4 grid steps are nice numbers */
}

/* The bars (stacked) or polylines of a timeline inside [x0, x0 + w] x [top, bottom]. */
static void timeline_data(FILE *f, const struct htmlplot_timeline *tl, double ymax, double top,
			  double bottom)
{
	double x0 = MARGIN_L, w = PLOT_W - MARGIN_L - MARGIN_R, bw = w / (double)tl->n;
	double scale = (bottom - top) / ymax;
	char lab[32];
	size_t i, k;

	for (k = 0; !tl->stacked && k < tl->nseries; k++) {
		char cmd = 'M'; /* a value that is not a number (no data) breaks the line */

		fprintf(f, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\" d=\"",
			tl->series[k].color);
		for (i = 0; i < tl->n; i++) {
			if (isnan(tl->series[k].y[i])) {
				cmd = 'M';
				continue;
			}
			fprintf(f, "%c%.1f,%.1f ", cmd, x0 + bw * ((double)i + 0.5),
				bottom - scale * finite_or0(tl->series[k].y[i]));
			cmd = 'L';
		}
		fputs("\"/>\n", f);
	}
	for (i = 0; tl->stacked && i < tl->n; i++) {
		double y = bottom;

		for (k = 0; k < tl->nseries; k++) {
			double v = finite_or0(tl->series[k].y[i]), hgt = scale * v;

			if (hgt <= 0)
				continue;
			y -= hgt;
			fprintf(f,
				"<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
				"fill=\"%s\"><title>",
				x0 + bw * (double)i, y, bw > 1.5 ? bw - 0.5 : bw, hgt,
				tl->series[k].color);
			htmlplot_escape(f, tl->series[k].name, 0);
			fprintf(f, " %s at %g s</title></rect>\n",
				axis_label(lab, sizeof(lab), tl->unit, v),
				tl->t0_s + tl->dt_s * (double)i);
		}
	}
}

void htmlplot_timeline(FILE *f, const struct htmlplot_timeline *tl)
{
	double h = 260, top = MARGIN_T, bottom = h - MARGIN_B;
	double ymax = timeline_top(tl);

	if (h < top + 18.0 * (double)tl->nseries + MARGIN_B)
		h = top + 18.0 * (double)tl->nseries + MARGIN_B, bottom = h - MARGIN_B;
	svg_open(f, "timeline", h, tl->title);
	y_axis(f, top, bottom, ymax, tl->unit);
	x_axis_time(f, bottom, tl->t0_s, tl->t0_s + tl->dt_s * (double)(tl->n ? tl->n : 1));
	if (tl->n && tl->nseries && !tl->nodata)
		timeline_data(f, tl, ymax, top, bottom);
	else {
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">no data",
			(PLOT_W - MARGIN_R + MARGIN_L) / 2, (top + bottom) / 2);
		if (tl->nodata_why) {
			fputs(": ", f);
			htmlplot_escape(f, tl->nodata_why, 0);
		}
		fputs("</text>\n", f);
	}
	legend(f, tl->series, tl->nseries, top);
	fputs("</svg>\n", f);
}

/* The non-empty range of h: [*lo, *hi]; returns the largest count (0: empty). */
static uint64_t hist_range(const struct htmlplot_hist *h, unsigned *lo, unsigned *hi)
{
	uint64_t max = 0;
	unsigned k;

	*lo = HTMLPLOT_BINS;
	*hi = 0;
	for (k = 0; k < HTMLPLOT_BINS; k++) {
		if (!h->count[k])
			continue;
		if (*lo == HTMLPLOT_BINS)
			*lo = k;
		*hi = k;
		if (h->count[k] > max)
			max = h->count[k];
	}
	return max;
}

/* The log10 count axis of a histogram from 1 (its bottom) to 10^decades, a tick at every power of ten. */
static void hist_y_axis(FILE *f, double top, double bottom, int decades, const char *label)
{
	int d;

	for (d = 0; d <= decades; d++) {
		double y = bottom - (bottom - top) * d / decades;

		fprintf(f,
			"<line class=\"%s\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>"
			"<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n",
			d ? "grid" : "axis", MARGIN_L, y, PLOT_W - MARGIN_R, y, MARGIN_L - 6, y + 4,
			pow(10, d));
	}
	fprintf(f, "<text x=\"%.0f\" y=\"%.1f\">", PLOT_W - MARGIN_R + 14, top + 12);
	htmlplot_escape(f, label, 24);
	fputs(" (log scale)</text>\n", f);
}

void htmlplot_histogram(FILE *f, const char *title, const struct htmlplot_hist *h,
			const char *count_label)
{
	double hgt = 260, top = MARGIN_T, bottom = hgt - MARGIN_B, w = PLOT_W - MARGIN_L - MARGIN_R;
	unsigned lo, hi, k;
	uint64_t max = hist_range(h, &lo, &hi);
	int decades = max ? (int)ceil(log10((double)max)) : 1;
	char a[32], b[32];

	svg_open(f, "histogram", hgt, title);
	hist_y_axis(f, top, bottom, decades < 1 ? 1 : decades, count_label);
	if (!max) {
		fprintf(
		    f,
		    "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">no data</text>\n</svg>\n",
		    MARGIN_L + w / 2, (top + bottom) / 2);
		return;
	}
	if (decades < 1)
		decades = 1;
	for (k = lo; k <= hi; k++) {
		double bw = w / (double)(hi - lo + 1), x = MARGIN_L + bw * (k - lo);
		/* count 1 sits on the axis' bottom: a bar of 2 px keeps it visible (empty bins: none) */
		double bh = h->count[k]
				? fmax(2, (bottom - top) * log10((double)h->count[k]) / decades)
				: 0;
		double from = k ? ldexp(1, (int)k) : 0, to = ldexp(1, (int)k + 1);

		fprintf(
		    f,
		    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"" BAR_COLOR
		    "\">"
		    "<title>%s .. %s: %llu</title></rect>\n",
		    x + 1, bottom - bh, bw - 2, bh, htmlplot_ns(a, sizeof(a), from),
		    htmlplot_ns(b, sizeof(b), to), (unsigned long long)h->count[k]);
		if ((k - lo) % ((hi - lo) / 12 + 1) == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
				x, bottom + 18, htmlplot_ns(a, sizeof(a), from));
	}
	fprintf(f,
		"<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"middle\">duration (bins of x2)</text>\n",
		MARGIN_L + w / 2, bottom + 36);
	fputs("</svg>\n", f);
}

/* The distinct groups of the bars as one legend row at y: a swatch and the (escaped) group each. */
static void bars_legend(FILE *f, const struct htmlplot_bar *b, size_t n, double x, double y)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		if (!b[i].group)
			continue;
		for (j = 0; j < i; j++)
			if (b[j].group && !strcmp(b[j].group, b[i].group))
				break;
		if (j < i)
			continue;
		fprintf(f,
			"<rect x=\"%.0f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%.0f\" y=\"%.1f\">",
			x, y, b[i].color ? b[i].color : BAR_COLOR, x + 16, y + 10);
		htmlplot_escape(f, b[i].group, 24);
		fputs("</text>\n", f);
		x += 24 + 8.0 * (double)(strlen(b[i].group) < 24 ? strlen(b[i].group) : 24);
	}
}

void htmlplot_bars(FILE *f, const char *title, const char *unit, const struct htmlplot_bar *b,
		   size_t n)
{
	double row = 22, top = MARGIN_T + 4, hgt = top + row * (double)(n ? n : 1) + 16;
	double x0 = 380, w = PLOT_W - x0 - 330, max = 0;
	char lab[32];
	size_t i;
	bool groups = false;

	for (i = 0; i < n; i++) {
		if (finite_or0(b[i].value) > max)
			max = finite_or0(b[i].value);
		groups |= b[i].group != NULL;
	}
	if (groups)
		hgt += row;
	svg_open(f, "bars", hgt, title);
	if (!n)
		fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">(none)</text>\n", x0, top + 14);
	for (i = 0; i < n; i++) {
		double y = top + row * (double)i,
		       bw = max > 0 ? w * finite_or0(b[i].value) / max : 0;

		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\"><title>", x0 - 8,
			y + 15);
		htmlplot_escape(f, b[i].name, 0);
		if (b[i].group) {
			fputs(" (", f);
			htmlplot_escape(f, b[i].group, 0);
			fputs(")", f);
		}
		fputs("</title>", f);
		htmlplot_escape(f, b[i].name, HTMLPLOT_NAME_MAX);
		fprintf(f,
			"</text><rect x=\"%.0f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" "
			"fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">%s",
			x0, y + 3, bw, row - 6, b[i].color ? b[i].color : BAR_COLOR, x0 + bw + 6,
			y + 15, axis_label(lab, sizeof(lab), unit, finite_or0(b[i].value)));
		if (b[i].note) {
			fputs(" ", f);
			htmlplot_escape(f, b[i].note, HTMLPLOT_NAME_MAX);
		}
		fputs("</text>\n", f);
	}
	if (groups)
		bars_legend(f, b, n, x0, top + row * (double)n + 4);
	fputs("</svg>\n", f);
}

FILE *htmlplot_open(const char *path, char *tmp, size_t tmplen)
{
	int fd = outfile_tmp_open(path, tmp, tmplen, OUTFILE_MODE);
	FILE *f;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		int e = errno;

		close(fd);
		unlink(tmp);
		errno = e;
	}
	return f;
}

int htmlplot_commit(FILE *f, const char *tmp, const char *path)
{
	int err = 0;

	if (!f)
		return -EINVAL;
	errno = 0;
	/* fsync is meaningless (EINVAL) on a device such as /dev/null, written in place */
	if (ferror(f) || fflush(f) || (fsync(fileno(f)) && (errno != EINVAL || tmp[0])))
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = errno ? -errno : -EIO;
	if (err) {
		if (tmp[0])
			unlink(tmp);
		return err;
	}
	return outfile_tmp_commit(tmp, path);
}

int htmlplot_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

void htmlplot_abandon(FILE *f, const char *tmp)
{
	if (f)
		fclose(f);
	if (tmp[0])
		unlink(tmp);
}

int htmlplot_top_add(struct htmlplot_top *t, const char *name, const char *group, const char *color,
		     double value, uint64_t count, double max)
{
	struct htmlplot_topent *e;
	size_t i;

	for (i = 0; i < t->n; i++)
		if (!strncmp(t->e[i].name, name, sizeof(t->e[i].name) - 1))
			break;
	if (i == t->n) {
		if (t->n == t->cap) {
			size_t nc = t->cap ? t->cap * 2 : 32;
			void *ne = realloc(t->e, nc * sizeof(*t->e));

			if (!ne)
				return -ENOMEM;
			t->e = ne;
			t->cap = nc;
		}
		e = &t->e[t->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", name);
		e->group = group;
		e->color = color;
	}
	e = &t->e[i];
	e->value += finite_or0(value);
	e->count += count;
	if (finite_or0(max) > e->max)
		e->max = max;
	return 0;
}

static int top_cmp(const void *a, const void *b)
{
	const struct htmlplot_topent *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return strcmp(x->name, y->name);
}

void htmlplot_top_sort(struct htmlplot_top *t)
{
	if (t->n > 1)
		qsort(t->e, t->n, sizeof(*t->e), top_cmp);
}

size_t htmlplot_top_bars(const struct htmlplot_top *t, struct htmlplot_bar *b, char (*notes)[48],
			 size_t n)
{
	char mx[32];
	size_t i;

	if (n > t->n)
		n = t->n;
	for (i = 0; i < n; i++) {
		if (t->e[i].max > 0)
			snprintf(notes[i], sizeof(notes[i]), "(%llu times, max %s)",
				 (unsigned long long)t->e[i].count,
				 htmlplot_ns(mx, sizeof(mx), t->e[i].max));
		else
			snprintf(notes[i], sizeof(notes[i]), "(%llu times)",
				 (unsigned long long)t->e[i].count);
		b[i].name = t->e[i].name;
		b[i].value = t->e[i].value;
		b[i].note = notes[i];
		b[i].group = t->e[i].group;
		b[i].color = t->e[i].color;
	}
	return n;
}

void htmlplot_top_free(struct htmlplot_top *t)
{
	free(t->e);
	memset(t, 0, sizeof(*t));
}
