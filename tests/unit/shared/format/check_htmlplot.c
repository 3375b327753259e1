/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/format/htmlplot: escaping of hostile names (markup, quotes, control bytes, invalid
 * UTF-8, truncation on a character boundary), readable units and nice axis tops, the bars' scale (a value at
 * the axis top fills the plot), empty data (axes and "no data", "(none)"), the top tables, and the atomic
 * write (nothing at the target after a failed write).
 */
#include <check.h>
#include "check_main.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "format/htmlplot.h"

/* What fn printed, as a string (free it). */
#define CAPTURE(out, stmt)                               \
	do {                                             \
		size_t len_;                             \
		FILE *f = open_memstream(&(out), &len_); \
		ck_assert_ptr_nonnull(f);                \
		stmt;                                    \
		fclose(f);                               \
	} while (0)

static int count(const char *s, const char *what)
{
	int n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

START_TEST(escape_markup)
{
	char *o = NULL;

	CAPTURE(o, htmlplot_escape(f, "<script>alert(\"x\")</script>&'", 0));
	ck_assert_str_eq(o, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;");
	free(o);
	CAPTURE(o, htmlplot_escape(f, NULL, 0));
	ck_assert_str_eq(o, "");
	free(o);
}
END_TEST

START_TEST(escape_bytes)
{
	char *o = NULL;

	/* control bytes, a lone continuation byte, an overlong '/', a surrogate, 0xff: U+FFFD each */
	CAPTURE(o, htmlplot_escape(f,
				   "a\x01\x1b\x7f\x80\xc0\xaf\xed\xa0\x80\xff"
				   "b\tc",
				   0));
	ck_assert_str_eq(o,
			 "a&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD;&#xFFFD;"
			 "&#xFFFD;b\tc");
	free(o);
	/* valid UTF-8 passes whole, and truncation never cuts a character */
	CAPTURE(o, htmlplot_escape(f, "d\xc3\xa9j\xc3\xa0 vu \xf0\x9f\x98\x80", 0));
	ck_assert_str_eq(o, "d\xc3\xa9j\xc3\xa0 vu \xf0\x9f\x98\x80");
	free(o);
	CAPTURE(o, htmlplot_escape(f, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 3));
	ck_assert_str_eq(o, "\xc3\xa9\xc3\xa9\xc3\xa9...");
	free(o);
	CAPTURE(o, htmlplot_escape(f, "<<<<", 2));
	ck_assert_str_eq(o, "&lt;&lt;...");
	free(o);
}
END_TEST

START_TEST(units)
{
	char b[32];

	ck_assert_str_eq(htmlplot_ns(b, sizeof(b), 850), "850 ns");
	ck_assert_str_eq(htmlplot_ns(b, sizeof(b), 12500), "12.5 us");
	ck_assert_str_eq(htmlplot_ns(b, sizeof(b), 3.2e6), "3.20 ms");
	ck_assert_str_eq(htmlplot_ns(b, sizeof(b), 1.5e9), "1.50 s");
	ck_assert_str_eq(htmlplot_ns(b, sizeof(b), 250e9), "250 s");
	ck_assert_str_eq(htmlplot_ns(b, sizeof(b), 0), "0");
	ck_assert_str_eq(htmlplot_ns(b, sizeof(b), NAN), "0");
	ck_assert(fabs(htmlplot_nice(3.5) - 5) < 1e-9);
	ck_assert(fabs(htmlplot_nice(1) - 1) < 1e-9);
	ck_assert(fabs(htmlplot_nice(0.023) - 0.025) < 1e-12);
	ck_assert(fabs(htmlplot_nice(101) - 200) < 1e-9);
	ck_assert(fabs(htmlplot_nice(0) - 1) < 1e-9);
	ck_assert(fabs(htmlplot_nice(-4) - 1) < 1e-9);
	ck_assert(fabs(htmlplot_nice(INFINITY) - 1) < 1e-9);
	ck_assert_uint_eq(htmlplot_hist_bin(0), 0);
	ck_assert_uint_eq(htmlplot_hist_bin(1), 0);
	ck_assert_uint_eq(htmlplot_hist_bin(2), 1);
	ck_assert_uint_eq(htmlplot_hist_bin(1023), 9);
	ck_assert_uint_eq(htmlplot_hist_bin(1024), 10);
	ck_assert_uint_eq(htmlplot_hist_bin(UINT64_MAX), 63);
}
END_TEST

START_TEST(timeline_empty)
{
	struct htmlplot_series s = { "a", "#000000", NULL };
	struct htmlplot_timeline tl = {
		.title = "t", .unit = "%", .dt_s = 1, .series = &s, .nseries = 1
	};
	char *o = NULL;

	CAPTURE(o, htmlplot_timeline(f, &tl));
	ck_assert_int_eq(count(o, "<svg class=\"plot timeline\""), 1);
	ck_assert_int_eq(count(o, "</svg>"), 1);
	ck_assert_ptr_nonnull(strstr(o, ">no data<"));
	ck_assert_int_eq(count(o, "<rect"), 1); /* the legend's swatch only */
	free(o);
	/* nodata: the time axis of the run, no data drawn */
	{
		const double y[20] = { 5, 5, 5 };

		s.y = y;
		tl.n = 20;
		tl.nodata = 1;
		CAPTURE(o, htmlplot_timeline(f, &tl));
		ck_assert_ptr_nonnull(strstr(o, ">no data<"));
		ck_assert_ptr_nonnull(strstr(o, ">20 s<"));
		ck_assert_int_eq(count(o, "<rect"), 1);
		free(o);
		tl.nodata_why = "<why>";
		CAPTURE(o, htmlplot_timeline(f, &tl));
		ck_assert_ptr_nonnull(strstr(o, ">no data: &lt;why&gt;<"));
		free(o);
	}
}
END_TEST

/* Stacked bars: 50 + 30 -> axis top 80 (4 nice steps of 20); 50% fills 50/80 of the 184-unit plot. */
START_TEST(timeline_scale)
{
	const double a[2] = { 50, 0 }, b[2] = { 30, 10 };
	struct htmlplot_series s[2] = { { "<b>evil</b>", "#111111", a }, { "b", "#222222", b } };
	struct htmlplot_timeline tl = { .title = "CPU <1>",
					.unit = "%",
					.dt_s = 0.5,
					.n = 2,
					.series = s,
					.nseries = 2,
					.stacked = 1 };
	char *o = NULL;

	CAPTURE(o, htmlplot_timeline(f, &tl));
	ck_assert_ptr_null(strstr(o, "<b>"));
	ck_assert_ptr_nonnull(strstr(o, "&lt;b&gt;evil&lt;/b&gt;"));
	ck_assert_ptr_nonnull(strstr(o, "CPU &lt;1&gt;"));
	ck_assert_ptr_nonnull(strstr(o, ">80%<"));
	ck_assert_ptr_nonnull(strstr(o, ">20%<"));
	ck_assert_ptr_nonnull(strstr(o, "height=\"115.00\"")); /* 184 * 50 / 80 */
	ck_assert_ptr_nonnull(strstr(o, "height=\"69.00\"")); /* 184 * 30 / 80 */
	ck_assert_int_eq(count(o, "<rect"), 3 + 2); /* three non-zero parts, two swatches */
	free(o);
	/* lines: one path per series, broken at NaN (no data), negative values drawn at 0 */
	{
		const double c[4] = { 1, NAN, -5, INFINITY }, d[4] = { 1, 2, 3, 4 };

		s[0].y = c;
		s[1].y = d;
		tl.n = 4;
		tl.stacked = 0;
		tl.unit = "ns";
		CAPTURE(o, htmlplot_timeline(f, &tl));
		ck_assert_int_eq(count(o, "<path"), 2);
		ck_assert_int_eq(count(o, "M"), 2 + 1); /* a break after the first value */
		ck_assert_int_eq(count(o, "L"), 1 + 3);
		ck_assert_ptr_null(strstr(o, "nan"));
		ck_assert_ptr_null(strstr(o, "inf"));
		ck_assert_ptr_nonnull(strstr(o, ">4 ns<"));
		free(o);
	}
}
END_TEST

START_TEST(histogram)
{
	struct htmlplot_hist h = { { 0 } };
	char *o = NULL;

	CAPTURE(o, htmlplot_histogram(f, "d", &h, "samples"));
	ck_assert_ptr_nonnull(strstr(o, ">no data<"));
	ck_assert_int_eq(count(o, "</svg>"), 1);
	free(o);
	htmlplot_hist_add(&h, 1500, 5);
	htmlplot_hist_add(&h, 9000, 999);
	CAPTURE(o, htmlplot_histogram(f, "d", &h, "<samples>"));
	ck_assert_ptr_nonnull(strstr(o, "<title>1.02 us .. 2.05 us: 5</title>"));
	ck_assert_ptr_nonnull(strstr(o, "<title>8.19 us .. 16.4 us: 999</title>"));
	ck_assert_ptr_nonnull(strstr(o, "&lt;samples&gt;"));
	ck_assert_ptr_nonnull(strstr(o, ">1000<")); /* log axis up to 10^3 ... */
	ck_assert_ptr_nonnull(
	    strstr(o, "text-anchor=\"end\">1<")); /* ... from 1 (no 0 on a log axis) */
	ck_assert_ptr_null(strstr(o, "text-anchor=\"end\">0<"));
	ck_assert_int_eq(count(o, "<rect"), 4); /* bins 10..13, empty ones at height 0 */
	free(o);
}
END_TEST

START_TEST(bars)
{
	char longname[200], *o = NULL;
	struct htmlplot_bar b[2];

	CAPTURE(o, htmlplot_bars(f, "t", "ns", NULL, 0));
	ck_assert_ptr_nonnull(strstr(o, ">(none)<"));
	free(o);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	memcpy(longname, "<img onerror=1>", 15);
	b[0] = (struct htmlplot_bar){ longname, 2e6, "\"note\"", NULL, NULL };
	b[1] = (struct htmlplot_bar){ "b", NAN, NULL, NULL, NULL };
	CAPTURE(o, htmlplot_bars(f, "t", "ns", b, 2));
	ck_assert_ptr_null(strstr(o, "<img"));
	ck_assert_ptr_nonnull(strstr(o, ">2.00 ms &quot;note&quot;<"));
	ck_assert_ptr_nonnull(strstr(o, "xxx...</text>")); /* shown truncated ... */
	ck_assert_ptr_nonnull(strstr(o, "xxxx</title>")); /* ... whole in the tooltip */
	ck_assert_ptr_nonnull(strstr(o, ">0</text>"));
	ck_assert_ptr_nonnull(strstr(o, "width=\"490.0\"")); /* the largest fills the bar area */
	ck_assert_ptr_nonnull(strstr(o, "fill=\"#6b7b8c\"")); /* no group: the neutral colour */
	free(o);
	/* groups: each bar in its group's colour, one legend entry per distinct group */
	{
		struct htmlplot_bar g[3] = { { "x", 3, NULL, "IRQ", "#e15759" },
					     { "y", 2, NULL, "THREAD", "#4e79a7" },
					     { "z", 1, NULL, "IRQ", "#e15759" } };

		CAPTURE(o, htmlplot_bars(f, "t", "ns", g, 3));
		ck_assert_int_eq(count(o, "fill=\"#e15759\""), 3); /* 2 bars + 1 swatch */
		ck_assert_int_eq(count(o, "fill=\"#4e79a7\""), 2);
		ck_assert_int_eq(count(o, ">IRQ</text>"), 1);
		ck_assert_int_eq(count(o, ">THREAD</text>"), 1);
		ck_assert_ptr_nonnull(strstr(o, "<title>x (IRQ)</title>"));
		free(o);
	}
}
END_TEST

START_TEST(top)
{
	struct htmlplot_top t = { 0 };
	struct htmlplot_bar b[4];
	char notes[4][48];
	size_t n;

	ck_assert_int_eq(htmlplot_top_add(&t, "a", "IRQ", "#e15759", 100, 1, 100), 0);
	ck_assert_int_eq(htmlplot_top_add(&t, "b", NULL, NULL, 300, 2, 200), 0);
	ck_assert_int_eq(htmlplot_top_add(&t, "a", "IRQ", "#e15759", 250, 3, 150), 0);
	htmlplot_top_sort(&t);
	n = htmlplot_top_bars(&t, b, notes, 4);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(b[0].name, "a");
	ck_assert(fabs(b[0].value - 350) < 1e-9);
	ck_assert_str_eq(b[0].note, "(4 times, max 150 ns)");
	ck_assert_str_eq(b[0].group, "IRQ");
	ck_assert_str_eq(b[0].color, "#e15759");
	ck_assert_ptr_null(b[1].group);
	ck_assert_str_eq(b[1].name, "b");
	ck_assert_uint_eq(htmlplot_top_bars(&t, b, notes, 1), 1);
	htmlplot_top_free(&t);
	ck_assert_uint_eq(t.n, 0);
	ck_assert_uint_eq(htmlplot_top_bars(&t, b, notes, 4), 0);
}
END_TEST

START_TEST(page)
{
	char *o = NULL;
	struct htmlplot_fact facts[] = { { "CPUs", "2 (<0>,1)" } };

	CAPTURE(o, {
		htmlplot_head(f, "<title>");
		htmlplot_facts(f, facts, 1);
		htmlplot_section(f, "s", "p&");
		htmlplot_tail(f);
	});
	ck_assert_ptr_nonnull(strstr(o, "<!DOCTYPE html>"));
	ck_assert_ptr_nonnull(strstr(o, "<td>2 (&lt;0&gt;,1)</td>"));
	ck_assert_ptr_nonnull(strstr(o, "p&amp;"));
	ck_assert_ptr_null(strstr(o, "://")); /* nothing to fetch */
	ck_assert_int_eq(count(o, "<script>"), 1);
	ck_assert_ptr_nonnull(strstr(o, "</html>\n"));
	free(o);
}
END_TEST

START_TEST(atomic)
{
	char dir[] = "/tmp/htmlplot.XXXXXX", path[128], tmp[160], link_tmp[192];
	struct stat st;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.html", dir);
	f = htmlplot_open(path, tmp, sizeof(tmp));
	ck_assert_ptr_nonnull(f);
	fputs("page", f);
	ck_assert_int_ne(stat(path, &st), 0); /* not there before the commit */
	ck_assert_int_eq(htmlplot_commit(f, tmp, path), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_int_ne(stat(tmp, &st), 0);
	/* a symbolic link at the path is refused; the page it points to stays */
	snprintf(tmp, sizeof(tmp), "%s/link.html", dir);
	ck_assert_int_eq(symlink(path, tmp), 0);
	errno = 0;
	ck_assert_ptr_null(htmlplot_open(tmp, link_tmp, sizeof(link_tmp)));
	ck_assert_int_eq(errno, ELOOP);
	unlink(tmp);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	snprintf(tmp, sizeof(tmp), "%s/../%s/out.html", dir, strrchr(dir, '/') + 1);
	ck_assert(htmlplot_same_file(path, tmp));
	ck_assert(!htmlplot_same_file(path, dir));
	ck_assert(!htmlplot_same_file(path, "/nonexistent/x"));
	/* abandoned: the old page stays, no temporary file */
	f = htmlplot_open(path, tmp, sizeof(tmp));
	ck_assert_ptr_nonnull(f);
	fputs("other page", f);
	htmlplot_abandon(f, tmp);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	ck_assert_int_ne(stat(tmp, &st), 0);
	/* a write error (a full disk) leaves the old page and no temporary file */
	snprintf(tmp, sizeof(tmp), "%s/full.tmp", dir);
	close(open(tmp, O_CREAT | O_WRONLY, 0600));
	f = fopen("/dev/full", "w");
	ck_assert_ptr_nonnull(f);
	fputs("lost", f);
	ck_assert_int_eq(htmlplot_commit(f, tmp, path), -ENOSPC);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 4);
	ck_assert_int_ne(stat(tmp, &st), 0);
	/* a device (a private /dev/null: c 1 3) is written in place and stays a device */
	snprintf(tmp, sizeof(tmp), "%s/null", dir);
	ck_assert_int_eq(mknod(tmp, S_IFCHR | 0666, makedev(1, 3)), 0);
	f = htmlplot_open(tmp, link_tmp, sizeof(link_tmp));
	ck_assert_ptr_nonnull(f);
	fputs("page", f);
	ck_assert_int_eq(htmlplot_commit(f, link_tmp, tmp), 0);
	ck_assert_int_eq(stat(tmp, &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
	unlink(tmp);
	/* a directory that does not exist */
	snprintf(path, sizeof(path), "%s/no/such/dir.html", dir);
	errno = 0;
	ck_assert_ptr_null(htmlplot_open(path, tmp, sizeof(tmp)));
	ck_assert_int_eq(errno, ENOENT);
	snprintf(path, sizeof(path), "%s/out.html", dir);
	unlink(path);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("htmlplot");
	TCase *esc = tcase_create("escape"), *plot = tcase_create("plots"),
	      *file = tcase_create("file");

	tcase_add_test(esc, escape_markup);
	tcase_add_test(esc, escape_bytes);
	tcase_add_test(plot, units);
	tcase_add_test(plot, timeline_empty);
	tcase_add_test(plot, timeline_scale);
	tcase_add_test(plot, histogram);
	tcase_add_test(plot, bars);
	tcase_add_test(plot, top);
	tcase_add_test(plot, page);
	tcase_add_test(file, atomic);
	suite_add_tcase(s, esc);
	suite_add_tcase(s, plot);
	suite_add_tcase(s, file);
	return s;
}

int main(void)
{
	return check_main(suite());
}
