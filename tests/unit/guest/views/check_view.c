/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/views: the view chosen for each command (view_pick), the JSON view through the JSON
 * writer (a comm holding a quote and a control byte stays valid JSON; the version after the schema), the text,
 * top and hist views' framing, the shape of every text table (heading and rows have the same columns) and
 * their width (80 columns with 2 and 4 CPUs; --wide is wider), top's last period, the lead-up's times from the
 * start, vnoise's own threads labelled, a report's version and "partial" marks, and the recorder writing
 * META (with the version and vnoise's thread ids), SAMPLES, EVENTS and STATS chunks that the reader reads back.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "format/recreader.h"
#include "util/version.h"
#include "views/view.h"
#include "views/view_record.h"

/* ---- helpers ---- */

/* A one-CPU bpf view with one 10 us gap holding 4 us of a thread named comm, attributed. */
static void view_one(struct view *v, const char *comm)
{
	struct vn_sample win = {
		.start_ns = 1000, .end_ns = 1000000, .cpu = 2, .kind = VN_SAMPLE_WINDOW
	};
	struct vn_sample gap = {
		.start_ns = 2000, .end_ns = 12000, .cpu = 2, .kind = VN_SAMPLE_GAP
	};
	struct vn_event e = { .start_ns = 3000,
			      .end_ns = 7000,
			      .net_ns = 4000,
			      .id = 42,
			      .cpu = 2,
			      .cls = VN_CLASS_THREAD };

	memset(v, 0, sizeof(*v));
	memcpy(e.comm, comm, strnlen(comm, sizeof(e.comm)));
	v->helper = "bpf";
	v->steal_source = "none";
	v->threshold_ns = 5000;
	v->duration_ns = 1000000;
	v->ncpus = 1;
	v->cpus[0] = 2;
	v->top_n = 10;
	v->hist = calloc(1, sizeof(*v->hist));
	v->m = merge_new(view_gap_cb, v);
	ck_assert_ptr_nonnull(v->hist);
	ck_assert_ptr_nonnull(v->m);
	ck_assert_int_eq(merge_add_sample(v->m, &win), 0);
	ck_assert_int_eq(merge_add_sample(v->m, &gap), 0);
	ck_assert_int_eq(merge_add_event(v->m, &e), 0);
	ck_assert_int_eq(view_period_new(v), 0); /* top's period maximum follows the gaps */
	ck_assert_int_eq(merge_process(v->m, UINT64_MAX), 0);
}

static void view_done(struct view *v)
{
	merge_free(v->m);
	view_period_free(v);
	free(v->hist);
}

/* An event of class cls on cpu over [a, a + net) ns (a top-level event: its net time is its wall time). */
static struct vn_event ev(int cpu, uint8_t cls, uint32_t id, const char *comm, uint64_t a,
			  uint64_t net)
{
	struct vn_event e = { .start_ns = a, .end_ns = a + net, .net_ns = (uint32_t)net, .id = id };

	e.cpu = (uint16_t)cpu;
	e.cls = cls;
	if (comm)
		memcpy(e.comm, comm, strnlen(comm, sizeof(e.comm)));
	return e;
}

#define BIG_GAPS 500
#define BIG_SELF 4194300 /* vnoise's main thread in view_big */

static uint64_t big_long_ns; /* view_big adds one gap this long at 6 s (0: none) */

/*
 * A bpf view of ncpus CPUs (1, 3, 5...) measured for 10 s, wide values: per CPU 500 noise samples of 200 us
 * holding a thread with a 15-byte comm and a 7-digit pid, vnoise's own main thread, the local timer and a
 * softirq.
 */
static void view_big(struct view *v, int ncpus)
{
	int i, k;

	memset(v, 0, sizeof(*v));
	v->helper = "bpf";
	v->steal_source = "kvm-steal-clock";
	v->nhcalls = 8;
	v->version = "0.9.0 (git a1fdfa4-dirty)";
	v->threshold_ns = 5000;
	v->duration_ns = 10000000000ULL;
	v->bpf_events = 123456789;
	v->bpf_run_cnt = 1000;
	v->bpf_run_ns = 300000;
	v->sampler_iterations = 1000;
	v->sampler_loop_ns = 24300;
	v->ncpus = ncpus;
	v->top_n = 10;
	v->self[v->nself++] = BIG_SELF;
	v->hist = calloc((size_t)ncpus, sizeof(*v->hist));
	v->m = merge_new(view_gap_cb, v);
	ck_assert_ptr_nonnull(v->hist);
	ck_assert_ptr_nonnull(v->m);
	ck_assert_int_eq(view_period_new(v), 0);
	for (i = 0; i < ncpus; i++) {
		int cpu = 2 * i + 1;
		struct vn_sample win = { .start_ns = 0,
					 .end_ns = 10000000000ULL,
					 .cpu = (uint16_t)cpu,
					 .kind = VN_SAMPLE_WINDOW };

		v->cpus[i] = cpu;
		ck_assert_int_eq(merge_add_sample(v->m, &win), 0);
		for (k = 0; k < BIG_GAPS; k++) {
			uint64_t a = 1000000 + (uint64_t)k * 10000000;
			struct vn_sample gap = { .start_ns = a,
						 .end_ns = a + 200000,
						 .cpu = (uint16_t)cpu,
						 .kind = VN_SAMPLE_GAP };
			struct vn_event e[] = {
				ev(cpu, VN_CLASS_THREAD, 4194304, "kworker/u8:1234", a + 10000,
				   100000),
				ev(cpu, VN_CLASS_THREAD, BIG_SELF, "vnoise-guest", a + 120000,
				   30000),
				ev(cpu, VN_CLASS_IRQ, VN_VEC_BASE, NULL, a + 160000, 10000),
				ev(cpu, VN_CLASS_SOFTIRQ, 1, NULL, a + 175000, 10000),
			};

			ck_assert_int_eq(merge_add_sample(v->m, &gap), 0);
			for (size_t j = 0; j < sizeof(e) / sizeof(e[0]); j++)
				ck_assert_int_eq(merge_add_event(v->m, &e[j]), 0);
		}
		if (big_long_ns) { /* a long stall: a loaded machine takes the CPU for seconds */
			struct vn_sample gap = { .start_ns = 6000000000ULL,
						 .end_ns = 6000000000ULL + big_long_ns,
						 .cpu = (uint16_t)cpu,
						 .kind = VN_SAMPLE_GAP };
			struct vn_event e = ev(cpu, VN_CLASS_THREAD, 4194301, "cc1",
					       6000000000ULL + 1000, big_long_ns - 2000);

			ck_assert_int_eq(merge_add_sample(v->m, &gap), 0);
			ck_assert_int_eq(merge_add_event(v->m, &e), 0);
		}
	}
	ck_assert_int_eq(merge_process(v->m, UINT64_MAX), 0);
}

/* ---- table shape and width ---- */

/* Display columns of the line [s, s + n): UTF-8 code points. */
static int display_columns(const char *s, size_t n)
{
	int cols = 0;

	for (size_t i = 0; i < n; i++)
		cols += ((unsigned char)s[i] & 0xc0) != 0x80;
	return cols;
}

/* Every line of out fits in max columns; returns the widest. */
static int widest_line(const char *out)
{
	int widest = 0;

	while (*out) {
		size_t n = strcspn(out, "\n");
		int c = display_columns(out, n);

		widest = c > widest ? c : widest;
		out += n + (out[n] == '\n');
	}
	return widest;
}

#define MAX_TOKENS 32

/* The whitespace-separated tokens of the line [s, s + n) into tok; returns their count. */
static int tokens(const char *s, size_t n, char tok[MAX_TOKENS][128])
{
	int nt = 0;
	size_t i = 0;

	while (i < n) {
		size_t b;

		while (i < n && s[i] == ' ')
			i++;
		b = i;
		while (i < n && s[i] != ' ')
			i++;
		if (i > b && nt < MAX_TOKENS) {
			snprintf(tok[nt], 128, "%.*s", (int)(i - b), s + b);
			nt++;
		}
	}
	return nt;
}

/* A row of a table starts with a value (CPU, count, bucket) or a statistic of hist. */
static int row_start(const char *t)
{
	return (t[0] >= '0' && t[0] <= '9') || !strcmp(t, "count") || !strcmp(t, "max") ||
	       (t[0] == 'p' && t[1] >= '0' && t[1] <= '9');
}

/* A cell: a number (hist: with a k/M/G suffix when it is too long for its column), "count/time", or the
 * "partial" / "-" marks of a CPU without runtime. */
static int is_value(const char *t)
{
	size_t n = strspn(t, "0123456789.-+/");

	return n == strlen(t) || (n && n + 1 == strlen(t) && strchr("kMG", t[n])) ||
	       !strcmp(t, "partial");
}

/*
 * Every table of out whose heading starts with the tokens h1 h2: each row under it (the lines up to the first
 * that is not a row) has the heading's columns, every cell a value; with free_last the last column is free
 * text (a name, possibly with spaces), so a row has at least as many tokens. Returns the rows checked.
 */
static int check_tables(const char *out, const char *h1, const char *h2, int free_last)
{
	static char head[MAX_TOKENS][128], tok[MAX_TOKENS][128];
	int nh = 0, rows = 0, in = 0;

	while (*out) {
		size_t n = strcspn(out, "\n");
		int nt = tokens(out, n, tok), k, cells;

		if (nt >= 2 && !strcmp(tok[0], h1) && !strcmp(tok[1], h2)) {
			memcpy(head, tok, sizeof(head));
			nh = nt;
			in = 1;
		} else if (in && nt && row_start(tok[0])) {
			ck_assert_msg(free_last ? nt >= nh : nt == nh,
				      "row of %d columns under a heading of %d: '%.*s'", nt, nh,
				      (int)n, out);
			cells = free_last ? nh - 1 : nt;
			for (k = 1; k < cells; k++)
				ck_assert_msg(is_value(tok[k]), "column %s is '%s' in '%.*s'",
					      head[k], tok[k], (int)n, out);
			rows++;
		} else {
			in = 0;
		}
		out += n + (out[n] == '\n');
	}
	return rows;
}

/*
 * The class tables of out (a heading CLASS CPU<n>... [TOTAL %NOISE], a row per part, a TOTAL row): every row
 * has the heading's columns, every cell is a value, and in every column the parts add up to the TOTAL row
 * (within the cells' rounding to 0.1). Returns the parts' rows over all blocks.
 */
static int class_tables(const char *out)
{
	static char tok[MAX_TOKENS][128];
	double sum[MAX_TOKENS];
	int nh = 0, rows = 0, nrow = 0, k;

	while (*out) {
		size_t n = strcspn(out, "\n");
		int nt = tokens(out, n, tok);

		if (nt >= 2 && !strcmp(tok[0], "CLASS") && !strncmp(tok[1], "CPU", 3)) {
			nh = nt;
			nrow = 0;
			memset(sum, 0, sizeof(sum));
		} else if (nh) {
			ck_assert_msg(nt == nh, "row of %d columns under a heading of %d: '%.*s'",
				      nt, nh, (int)n, out);
			for (k = 1; k < nt; k++) {
				double c = strtod(tok[k], NULL);

				ck_assert_msg(is_value(tok[k]), "cell '%s' in '%.*s'", tok[k],
					      (int)n, out);
				if (strcmp(tok[0], "TOTAL")) {
					sum[k] += c;
				} else {
					ck_assert_msg(c - sum[k] < 0.06 * nrow + 0.1 &&
							  sum[k] - c < 0.06 * nrow + 0.1,
						      "column %d: parts %.1f, TOTAL %.1f", k,
						      sum[k], c);
				}
			}
			if (!strcmp(tok[0], "TOTAL"))
				nh = 0;
			else
				nrow++, rows++;
		}
		out += n + (out[n] == '\n');
	}
	return rows;
}

/* What op(f, v) prints; the caller frees it. */
static char *printed(void (*op)(FILE *, const struct view *), const struct view *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	op(f, v);
	fclose(f);
	return buf;
}

/* ---- view_pick ---- */

START_TEST(pick_by_command)
{
	struct measure_sink sink = { 0 };
	struct measure_params p = { .cmd = CMD_MEASURE };

	ck_assert_ptr_eq(view_pick(&p), &view_text_ops);
	p.json = 1;
	ck_assert_ptr_eq(view_pick(&p), &view_json_ops);
	p.cmd = CMD_RECORD;
	ck_assert_ptr_eq(view_pick(&p), &view_json_ops);
	p.json = 0;
	ck_assert_ptr_eq(view_pick(&p), &view_text_ops);
	p.cmd = CMD_HIST;
	ck_assert_ptr_eq(view_pick(&p), &view_hist_ops);
	p.cmd = CMD_TOP;
	ck_assert_ptr_eq(view_pick(&p), &view_top_ops);
	p.cmd = CMD_REPORT;
	p.report_hist = 1;
	p.json = 1;
	ck_assert_ptr_eq(view_pick(&p), &view_hist_ops); /* report --hist wins over --json */
	p.sink = &sink; /* an embedder prints nothing */
	ck_assert_ptr_null(view_pick(&p)->start);
	ck_assert_ptr_null(view_pick(&p)->tick);
	ck_assert_ptr_null(view_pick(&p)->end);
}
END_TEST

START_TEST(ops_shape)
{
	ck_assert_ptr_nonnull(view_text_ops.end);
	ck_assert_ptr_null(view_text_ops.tick);
	ck_assert_ptr_nonnull(view_hist_ops.end);
	ck_assert_ptr_nonnull(view_json_ops.end);
	ck_assert_ptr_null(view_json_ops.start); /* JSON runs say nothing on stderr */
	ck_assert_ptr_nonnull(view_top_ops.tick);
	ck_assert_ptr_eq(view_top_ops.end, view_text_ops.end); /* top ends with the summary */
}
END_TEST

/* ---- printers ---- */

START_TEST(json_escapes_comm)
{
	struct view v;
	char *out;

	view_one(&v, "a\"b\x01"
		     "c");
	out = printed(view_json_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(out, "\"schema\": \"vnoise.measure/1\""));
	ck_assert_ptr_nonnull(strstr(out, "\"name\": \"a\\\"b\\u0001c\""));
	ck_assert_ptr_nonnull(strstr(out, "\"pid\": 42"));
	ck_assert_ptr_nonnull(strstr(out, "\"partial\": false"));
	ck_assert_ptr_null(strstr(out, "\"vnoise\": true"));
	ck_assert_ptr_nonnull(strstr(out, "\"noise_ns\": 10000"));
	ck_assert_ptr_null(strchr(out, '\x01'));
	ck_assert_int_eq(out[strlen(out) - 1], '\n');
	free(out);
	view_done(&v);
}
END_TEST

START_TEST(text_and_top)
{
	struct view v;
	char *text, *top;

	view_one(&v, "worker");
	text = printed(view_text_ops.end, &v);
	top = printed(view_top_ops.tick, &v);
	ck_assert_ptr_nonnull(strstr(text, "kernel helper bpf, steal none"));
	ck_assert_ptr_nonnull(strstr(text, "thread:worker[42]"));
	ck_assert_ptr_null(strstr(text, "(vnoise)")); /* not one of vnoise's threads */
	ck_assert_ptr_nonnull(strstr(text, "overhead: sampler loop"));
	ck_assert_ptr_eq(strstr(top, "vnoise top: the last period"), top); /* no tty: no clear */
	ck_assert_ptr_nonnull(strstr(top, "thread:worker[42]"));
	free(text);
	free(top);
	view_done(&v);
}
END_TEST

START_TEST(hist_rows)
{
	struct view v;
	char *out;

	view_one(&v, "worker");
	out = printed(view_hist_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(out, "# CPU 2: noise sample durations"));
	ck_assert_ptr_nonnull(strstr(out, "count                      1"));
	free(out);
	view_done(&v);
}
END_TEST

/* Sum of the ALL column of hist's first table (the rows between BUCKET(us) and count); its rows into *rows. */
static uint64_t hist_all_sum(const char *out, int *rows, char *first, size_t flen)
{
	const char *l = strstr(out, "BUCKET(us)");
	uint64_t sum = 0;

	*rows = 0;
	first[0] = 0;
	ck_assert_ptr_nonnull(l);
	for (l = strchr(l, '\n') + 1; l && strncmp(l, "count", 5); l = strchr(l, '\n') + 1) {
		char lab[32];
		unsigned long long n;

		ck_assert_int_eq(sscanf(l, "%31s %llu", lab, &n), 2);
		if (!*rows)
			snprintf(first, flen, "%s", lab);
		sum += n;
		(*rows)++;
	}
	return sum;
}

/* hist's rows: 4 an octave from the threshold, the time below it in one row; --bucket-size and --entries
 * as rtla's -b and -E, the rest in "over"; every layout counts every sample once. */
START_TEST(hist_layout)
{
	struct view v;
	char *out, first[32];
	uint64_t x = 5000, n = 0;
	int rows;

	view_one(&v, "worker");
	hist_init(&v.hist[0].all);
	for (; x < 10000000; x = x * 1009 / 1000 + 1, n++) /* 5 us .. 10 ms, about 1 octave in 70 */
		hist_add(&v.hist[0].all, x);
	hist_add(&v.hist[0].all, 3000); /* one below the threshold */
	n++;
	out = printed(view_hist_ops.end, &v);
	ck_assert_uint_eq(hist_all_sum(out, &rows, first, sizeof(first)), n);
	/* 11 octaves from 5 us: at most 4 rows each, and the row below */
	ck_assert_msg(rows >= 40 && rows <= 4 * 11 + 2, "%d rows:\n%s", rows, out);
	ck_assert_str_eq(first, "0.000-4.999"); /* the time below the threshold */
	ck_assert_msg(strstr(out, "\n5.000-"), "the rows do not start at the threshold:\n%s", out);
	free(out);
	v.bucket_ns = 100000; /* 100 us rows from 0, 20 of them, the rest over */
	v.entries = 20;
	out = printed(view_hist_ops.end, &v);
	ck_assert_uint_eq(hist_all_sum(out, &rows, first, sizeof(first)), n);
	ck_assert_int_le(rows, 21);
	ck_assert_str_eq(first, "0.000-99.999");
	ck_assert_msg(strstr(out, "\nover "), "no over row:\n%s", out);
	ck_assert_msg(strstr(out, "\n1900.000-1999.999 "), "no last row:\n%s", out);
	free(out);
	view_done(&v);
}
END_TEST

/* hist on two CPUs: rtla's layout first, a column per CPU and ALL, whose rows add up across. */
START_TEST(hist_cpus)
{
	struct view v;
	char *out;
	const char *l;
	int k, rows = 0;

	memset(&v, 0, sizeof(v));
	v.helper = "bpf";
	v.steal_source = "none";
	v.threshold_ns = 5000;
	v.duration_ns = 1000000;
	v.ncpus = 2;
	v.cpus[0] = 0;
	v.cpus[1] = 3;
	v.hist = calloc(2, sizeof(*v.hist));
	v.m = merge_new(view_gap_cb, &v);
	ck_assert_ptr_nonnull(v.hist);
	for (k = 0; k < 100; k++) {
		hist_add(&v.hist[0].all, 6000 + 100 * (uint64_t)k);
		hist_add(&v.hist[1].all, 50000 + 1000 * (uint64_t)(k % 7));
	}
	out = printed(view_hist_ops.end, &v);
	l = strstr(out, "# noise sample durations per CPU");
	ck_assert_msg(l != NULL, "no per-CPU table:\n%s", out);
	l = strstr(l, "BUCKET(us)");
	ck_assert_ptr_nonnull(l);
	ck_assert_msg(!strncmp(l, "BUCKET(us)               ALL   CPU0   CPU3\n", 43), "%s", out);
	for (l = strchr(l, '\n') + 1; strncmp(l, "count", 5); l = strchr(l, '\n') + 1) {
		char lab[32];
		unsigned long long all, a, b;

		ck_assert_int_eq(sscanf(l, "%31s %llu %llu %llu", lab, &all, &a, &b), 4);
		ck_assert_uint_eq(all, a + b);
		rows++;
	}
	ck_assert_int_gt(rows, 2);
	ck_assert_ptr_nonnull(strstr(l, "count                    200    100    100"));
	free(out);
	merge_free(v.m);
	free(v.hist);
}
END_TEST

/* The version right after the schema (the one that wrote the document); a report adds the recording's. */
START_TEST(json_version)
{
	char want[160], *out;
	struct view v;

	view_one(&v, "worker");
	out = printed(view_json_ops.end, &v);
	snprintf(want, sizeof(want), "\"schema\": \"vnoise.measure/1\",\n  \"version\": \"%s\",\n",
		 version_string());
	ck_assert_msg(strstr(out, want), "no version after the schema: %.200s", out);
	ck_assert_ptr_null(strstr(out, "recorded_version"));
	free(out);
	v.replayed = 1;
	v.version = "0.1.0 (git 1234567)";
	v.partial = "the file ends at chunk 3 (truncated); the last period is incomplete";
	out = printed(view_json_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(out, want));
	ck_assert_ptr_nonnull(strstr(out, "\"recorded_version\": \"0.1.0 (git 1234567)\""));
	ck_assert_ptr_nonnull(strstr(out, "\"partial\": true"));
	free(out);
	view_done(&v);
}
END_TEST

/* A gap of 1.9 s (a loaded machine): hist's bucket labels and values still fit 80 columns, tables whole. */
START_TEST(hist_long_gap_fits_80)
{
	struct view v;
	char *hist;

	big_long_ns = 1900000000ULL;
	view_big(&v, 2);
	big_long_ns = 0;
	hist = printed(view_hist_ops.end, &v);
	ck_assert_msg(widest_line(hist) <= 80, "hist: %d columns:\n%s", widest_line(hist), hist);
	ck_assert_int_ge(check_tables(hist, "BUCKET(us)", "ALL", 0), 14);
	ck_assert_ptr_nonnull(strstr(hist, "1879048-"));
	free(hist);
	view_done(&v);
}
END_TEST

/* Every text view with 2 and 4 CPUs: every line fits 80 columns, every table has its heading's columns. */
START_TEST(text_views_fit_80)
{
	static const int ncpus[] = { 2, 4, 5 };
	struct view v;

	for (size_t t = 0; t < sizeof(ncpus) / sizeof(ncpus[0]); t++) {
		char *text, *top, *hist;
		int n = ncpus[t];

		view_big(&v, n);
		text = printed(view_text_ops.end, &v);
		top = printed(view_top_ops.tick, &v);
		hist = printed(view_hist_ops.end, &v);
		ck_assert_msg(widest_line(text) <= 80, "text: %d columns:\n%s", widest_line(text),
			      text);
		ck_assert_msg(widest_line(top) <= 80, "top: %d columns:\n%s", widest_line(top),
			      top);
		ck_assert_msg(widest_line(hist) <= 80, "hist: %d columns:\n%s", widest_line(hist),
			      hist);
		for (int k = 0; k < 2; k++) {
			const char *out = k ? top : text;

			ck_assert_int_eq(check_tables(out, "CPU", "RUNTIME(us)", 0), n);
			/* no split: the guest classes with UNEXPL, in blocks of 4 CPUs */
			ck_assert_int_eq(class_tables(out), VIEW_NSHOWN * ((n + 3) / 4));
			ck_assert_int_eq(check_tables(out, "COUNT", "TOTAL(us)", 1), 4 * n);
		}
		ck_assert_int_ge(check_tables(hist, "BUCKET(us)", "ALL", 0), 7 * n);
		ck_assert_ptr_nonnull(strstr(text, "thread:kworker/u8:1234[4194304]\n"));
		ck_assert_ptr_nonnull(strstr(text, "thread:vnoise-guest[4194300] (vnoise)\n"));
		ck_assert_ptr_nonnull(strstr(top, "thread:vnoise-guest[4194300] (vnoise)\n"));
		free(text);
		free(top);
		free(hist);
		view_done(&v);
	}
}
END_TEST

/* --wide: the one table of before (a count/time cell per class on the CPU's row), same shape rules. */
START_TEST(wide_tables)
{
	char *text, *hist;
	struct view v;

	view_big(&v, 2);
	v.wide = 1;
	text = printed(view_text_ops.end, &v);
	hist = printed(view_hist_ops.end, &v);
	ck_assert_int_gt(widest_line(text), 80);
	ck_assert_int_eq(check_tables(text, "CPU", "RUNTIME(us)", 0), 2);
	ck_assert_ptr_nonnull(strstr(text, "THREAD(n/us)"));
	ck_assert_msg(strstr(text, " 1000/65000.0 "), "%s", text); /* 2 threads x 500 samples */
	ck_assert_ptr_null(strstr(text, "noise time by class"));
	ck_assert_int_eq(check_tables(text, "COUNT", "TOTAL(us)", 1), 8);
	ck_assert_int_gt(widest_line(hist), 80);
	ck_assert_int_ge(check_tables(hist, "BUCKET(us)", "ALL", 0), 14);
	free(text);
	free(hist);
	view_done(&v);
}
END_TEST

/* A report of a damaged file: its version, the "partial:" line, "partial" for a CPU left without runtime. */
START_TEST(report_marks)
{
	struct view v;
	char *text;

	view_one(&v, "worker");
	v.cpus[1] = 7; /* no record of CPU 7 survived */
	v.ncpus = 2;
	v.replayed = 1;
	v.version = "0.1.0 (git 1234567)";
	v.partial = "the file ends at chunk 3 (truncated); the last period is incomplete";
	text = printed(view_text_ops.end, &v);
	ck_assert_msg(strstr(text, "recorded by vnoise 0.1.0 (git 1234567): threshold 5.0 us"),
		      "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "\npartial: the file ends at chunk 3 (truncated)"));
	ck_assert_int_eq(check_tables(text, "CPU", "RUNTIME(us)", 0), 2);
	ck_assert_msg(strstr(text, "   7            0            0     partial "), "%s", text);
	ck_assert_ptr_null(strstr(text, " 0.000 "));
	free(text);
	v.version = NULL;
	v.partial = NULL;
	text = printed(view_text_ops.end, &v);
	ck_assert_ptr_nonnull(
	    strstr(text, "recorded by vnoise (the file does not say which version)"));
	ck_assert_ptr_null(strstr(text, "partial"));
	ck_assert_msg(strstr(text, "   7            0            0           - "), "%s", text);
	free(text);
	v.ncpus = 1;
	view_done(&v);
}
END_TEST

/* The first row under the heading "CPU RUNTIME(us)" after from: runtime, noise, max (us) and samples. */
static void first_row(const char *from, double *runtime, double *noise, double *max,
		      unsigned *samples)
{
	const char *h = strstr(from, "RUNTIME(us)");
	char avail[32];
	int cpu;

	ck_assert_ptr_nonnull(h);
	h = strchr(h, '\n') + 1;
	ck_assert_int_eq(
	    sscanf(h, "%d %lf %lf %31s %lf %u", &cpu, runtime, noise, avail, max, samples), 6);
}

/* top: each refresh shows the last period only, its largest sample and its sources. */
START_TEST(top_last_period)
{
	struct vn_sample win = { .start_ns = 1000000, .end_ns = 3000000, .cpu = 2 };
	struct vn_sample gap = { .start_ns = 2000000, .end_ns = 2008000, .cpu = 2 };
	struct vn_event e = ev(2, VN_CLASS_IRQ, VN_VEC_BASE, NULL, 2001000, 6000);
	double run, noise, max;
	unsigned samples;
	struct view v;
	char *first, *second;

	view_one(&v, "worker"); /* period 1: a 1 ms window with a 10 us sample, 4 us of thread */
	first = printed(view_top_ops.tick, &v);
	first_row(first, &run, &noise, &max, &samples);
	ck_assert_msg(run == 999 && noise == 10 && max == 10.0 && samples == 1,
		      "run %g noise %g max %g samples %u:\n%s", run, noise, max, samples, first);
	ck_assert_ptr_nonnull(strstr(first, "thread:worker[42]"));
	win.kind = VN_SAMPLE_WINDOW;
	gap.kind = VN_SAMPLE_GAP;
	ck_assert_int_eq(merge_add_sample(v.m, &win), 0); /* period 2: 2 ms, an 8 us sample */
	ck_assert_int_eq(merge_add_sample(v.m, &gap), 0);
	ck_assert_int_eq(merge_add_event(v.m, &e), 0);
	ck_assert_int_eq(merge_process(v.m, UINT64_MAX), 0);
	v.duration_ns = 3000000;
	second = printed(view_top_ops.tick, &v);
	ck_assert_msg(strstr(second, "vnoise top: the last period, 0.0 s (0.0 s since the start"),
		      "%s", second);
	first_row(second, &run, &noise, &max, &samples);
	ck_assert_msg(run == 2000 && noise == 8 && max == 8.0 && samples == 1,
		      "run %g noise %g max %g samples %u:\n%s", run, noise, max, samples, second);
	ck_assert_ptr_nonnull(strstr(second, "irq:local_timer"));
	ck_assert_ptr_null(strstr(second, "thread:worker[42]")); /* not in the last period */
	ck_assert_int_eq(check_tables(second, "COUNT", "TOTAL(us)", 1), 1);
	/* a period keeps no maximum per source: the run's, and the title says so */
	ck_assert_ptr_nonnull(strstr(second, "MAX(us)"));
	ck_assert_ptr_nonnull(strstr(second, "MAX: the run's"));
	free(first);
	free(second);
	view_done(&v);
}
END_TEST

/* The lead-up of a --stop-* hit: times from the start of the run, as rtla shows them; vnoise's own labelled. */
START_TEST(leadup_from_start)
{
	struct view v;
	char *out;

	view_one(&v, "worker");
	v.t0_ns = 1000;
	v.self[v.nself++] = 42;
	out = printed(view_leadup, &v);
	ck_assert_msg(strstr(out, "CPU 2 last noise sample at +0.000001 s, 10.0 us; last events "
				  "inside noise:\n"),
		      "%s", out);
	ck_assert_msg(
	    strstr(out, "\n  +0.000002 s  net       4.0 us  thread:worker[42] (vnoise)\n"), "%s",
	    out);
	ck_assert_ptr_null(strstr(out, " ns")); /* no raw CLOCK_MONOTONIC nanoseconds */
	free(out);
	view_done(&v);
}
END_TEST

/* vnoise's own threads (v->self) are labelled in the text sources and marked in the JSON ones. */
START_TEST(self_labelled)
{
	struct view v;
	char *text, *json;

	view_one(&v, "vnoise-guest");
	v.self[v.nself++] = 7;
	v.self[v.nself++] = 42;
	text = printed(view_text_ops.end, &v);
	json = printed(view_json_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(text, "  thread:vnoise-guest[42] (vnoise)\n"));
	ck_assert_ptr_nonnull(strstr(json, "\"vnoise\": true"));
	free(text);
	free(json);
	view_done(&v);
}
END_TEST

/* ---- recorder ---- */

START_TEST(record_chunks)
{
	char path[] = "/tmp/check_view_XXXXXX";
	struct vn_sample s = { .start_ns = 1, .end_ns = 2, .kind = VN_SAMPLE_GAP };
	struct vn_event e = { .start_ns = 1, .end_ns = 2, .cls = VN_CLASS_IRQ };
	struct recfile_reader *rd;
	struct recfile_chunk c;
	struct view_record *rec;
	struct view v;
	int fd = mkstemp(path), seen[16] = { 0 };
	char version[128];

	ck_assert_int_ge(fd, 0);
	close(fd);
	view_one(&v, "worker");
	v.self[v.nself++] = 42;
	v.self[v.nself++] = 43;
	snprintf(version, sizeof(version), "\nversion=%s\n", version_string());
	rec = view_record_open(path);
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(view_record_start(rec, &v), 0);
	view_record_sample(rec, &s);
	view_record_event(rec, &e);
	ck_assert_int_eq(view_record_flush(rec), 0);
	ck_assert_uint_eq(view_record_dropped(rec), 0);
	ck_assert_int_eq(view_record_seal(rec, &v, "", NULL, 0), 0);
	rd = recreader_open(path);
	ck_assert_ptr_nonnull(rd);
	while (recreader_next(rd, &c) == 1) {
		if (c.type < 16)
			seen[c.type]++;
		if (c.type == VN_CHUNK_META) {
			ck_assert_ptr_nonnull(memmem(c.payload, c.len, "threshold_ns=5000\n", 18));
			ck_assert_ptr_nonnull(memmem(c.payload, c.len, version, strlen(version)));
			ck_assert_ptr_nonnull(
			    memmem(c.payload, c.len, "\nvnoise_tids=42,43\n", 19));
		}
		if (c.type == VN_CHUNK_STATS)
			ck_assert_ptr_nonnull(
			    memmem(c.payload, c.len, "duration_ns=1000000\n", 20));
	}
	ck_assert_int_eq(seen[VN_CHUNK_META], 1);
	ck_assert_int_eq(seen[VN_CHUNK_SAMPLES], 1);
	ck_assert_int_eq(seen[VN_CHUNK_EVENTS], 1);
	ck_assert_int_eq(seen[VN_CHUNK_STATS], 1);
	recreader_close(rd);
	unlink(path);
	view_done(&v);
}
END_TEST

static Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *tc;

	tc = tcase_create("pick");
	tcase_add_test(tc, pick_by_command);
	tcase_add_test(tc, ops_shape);
	suite_add_tcase(s, tc);
	tc = tcase_create("printers");
	tcase_add_test(tc, json_escapes_comm);
	tcase_add_test(tc, text_and_top);
	tcase_add_test(tc, hist_rows);
	tcase_add_test(tc, hist_layout);
	tcase_add_test(tc, hist_cpus);
	tcase_add_test(tc, json_version);
	tcase_add_test(tc, self_labelled);
	tcase_add_test(tc, leadup_from_start);
	tcase_add_test(tc, top_last_period);
	tcase_add_test(tc, report_marks);
	suite_add_tcase(s, tc);
	tc = tcase_create("shape");
	tcase_add_test(tc, text_views_fit_80);
	tcase_add_test(tc, hist_long_gap_fits_80);
	tcase_add_test(tc, wide_tables);
	suite_add_tcase(s, tc);
	tc = tcase_create("record");
	tcase_add_test(tc, record_chunks);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(view_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
