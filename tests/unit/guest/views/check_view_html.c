/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/views/view_html: a gap's parts spread over the time bins it overlaps in proportion, the
 * bins doubling when the run outgrows them, gaps of unknown CPUs passed over, the run's facts escaped, and a
 * page for a view without any record.
 */
#include <check.h>
#include "check_main.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "views/view_html.h"

#define MS 1000000ull
#define S 1000000000ull
#define T0 (1000 * S)

static char dir[64], path[128];
static struct view v;

static void setup(void)
{
	strcpy(dir, "/tmp/view_html.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/page.html", dir);
	memset(&v, 0, sizeof(v));
	v.m = merge_new(view_gap_cb, &v);
	ck_assert_ptr_nonnull(v.m);
	v.ncpus = 1;
	v.cpus[0] = 3;
	v.helper = "bpf";
	v.steal_source = "none";
	v.version = "9.9 <b>&";
	v.replayed = 1;
	v.duration_ns = S;
	v.period_ns = S;
	v.threshold_ns = 5000;
	v.top_n = 10;
}

static void teardown(void)
{
	merge_free(v.m);
	unlink(path);
	rmdir(dir);
}

static char *slurp(void)
{
	FILE *f = fopen(path, "r");
	char *buf = calloc(1, 1 << 22);
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, (1 << 22) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void sample(struct view_html *h, uint64_t start, uint64_t end)
{
	struct vn_sample s = { .start_ns = start, .end_ns = end, .cpu = 3 };

	view_html_sample(h, &s);
}

static void gap(struct view_html *h, int idx, uint64_t start, uint64_t end, int cls)
{
	uint64_t parts[VN_CLASS_MAX] = { 0 };

	parts[cls] = end - start;
	view_html_gap(h, idx, start, end, parts);
}

START_TEST(spread)
{
	struct view_html *h = view_html_new(1);
	char *o;

	ck_assert_ptr_nonnull(h);
	sample(h, T0 + 500 * MS, T0 + S);
	sample(h, T0, T0 + 500 * MS); /* the earliest start is the origin, in any order */
	/* 10 ms of THREAD across the first bin boundary: 5 ms each side, 50% of each 10 ms bin */
	gap(h, 0, T0 + 5 * MS, T0 + 15 * MS, VN_CLASS_THREAD);
	/* 2 ms of IRQ inside bin 50 */
	gap(h, 0, T0 + 502 * MS, T0 + 504 * MS, VN_CLASS_IRQ);
	gap(h, 1, T0, T0 + S, VN_CLASS_STEAL); /* no such CPU index */
	gap(h, -1, T0, T0 + S, VN_CLASS_STEAL);
	gap(h, 0, T0 + 9 * MS, T0 + 9 * MS, VN_CLASS_STEAL); /* empty */
	ck_assert_int_eq(view_html_write(h, &v, path), 0);
	o = slurp();
	ck_assert_ptr_nonnull(strstr(o, "% of each 10.0 ms bin"));
	ck_assert_ptr_nonnull(strstr(o, "<title>THREAD 50% at 0 s</title>"));
	ck_assert_ptr_nonnull(strstr(o, "<title>THREAD 50% at 0.01 s</title>"));
	ck_assert_ptr_nonnull(strstr(o, "<title>IRQ 20% at 0.5 s</title>"));
	ck_assert_ptr_null(strstr(o, "<title>STEAL"));
	ck_assert_ptr_nonnull(strstr(o, "<td>CPUs</td><td>1 (3)</td>"));
	ck_assert_ptr_nonnull(strstr(o, "9.9 &lt;b&gt;&amp;"));
	ck_assert_ptr_null(strstr(o, "<b>"));
	ck_assert_ptr_null(strstr(o, "://"));
	free(o);
	view_html_free(h);
}
END_TEST

START_TEST(widen)
{
	struct view_html *h = view_html_new(1);
	char *o;

	sample(h, T0, T0 + 6 * S);
	gap(h, 0, T0 + 5 * MS, T0 + 15 * MS, VN_CLASS_THREAD); /* bin 0 and 1 of 10 ms ... */
	gap(h, 0, T0 + 5 * S, T0 + 5 * S + 4 * MS, VN_CLASS_SOFTIRQ); /* ... 5 s: 20 ms bins */
	ck_assert_int_eq(view_html_write(h, &v, path), 0);
	o = slurp();
	ck_assert_ptr_nonnull(strstr(o, "% of each 20.0 ms bin"));
	ck_assert_ptr_nonnull(strstr(o, "<title>THREAD 50% at 0 s</title>")); /* 10 of 20 ms */
	ck_assert_ptr_null(strstr(o, "<title>THREAD 50% at 0.02 s</title>"));
	ck_assert_ptr_nonnull(strstr(o, "<title>SIRQ 20% at 5 s</title>"));
	free(o);
	view_html_free(h);
}
END_TEST

START_TEST(empty)
{
	struct view_html *h = view_html_new(1);
	char bad[160], *o;

	v.version = NULL;
	v.partial = "the file ends at chunk 3 (truncated)";
	ck_assert_int_eq(view_html_write(h, &v, path), 0);
	o = slurp();
	ck_assert_ptr_nonnull(strstr(o, "(the file does not say)"));
	ck_assert_ptr_nonnull(strstr(o, "<td>partial file</td><td>the file ends at chunk 3"));
	ck_assert_ptr_nonnull(strstr(o, ">no data<"));
	ck_assert_ptr_nonnull(strstr(o, ">(none)<"));
	free(o);
	snprintf(bad, sizeof(bad), "%s/no/such/page.html", dir);
	ck_assert_int_eq(view_html_write(h, &v, bad), -ENOENT);
	view_html_free(h);
	view_html_free(NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("view_html");
	TCase *tc = tcase_create("page");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, spread);
	tcase_add_test(tc, widen);
	tcase_add_test(tc, empty);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite());
}
