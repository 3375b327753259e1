/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/views: the view chosen for each command (view_pick), the JSON view through the JSON
 * writer (a comm holding a quote and a control byte stays valid JSON), the text and top views' framing, and
 * the recorder writing META, SAMPLES, EVENTS and STATS chunks that the record reader reads back.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "format/recreader.h"
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
	ck_assert_int_eq(merge_process(v->m, UINT64_MAX), 0);
}

static void view_done(struct view *v)
{
	merge_free(v->m);
	free(v->hist);
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
	ck_assert_ptr_nonnull(strstr(text, "vnoise: kernel helper bpf (steal: none"));
	ck_assert_ptr_nonnull(strstr(text, "thread:worker[42]"));
	ck_assert_ptr_nonnull(strstr(text, "overhead: sampler loop"));
	ck_assert_ptr_eq(strstr(top, "vnoise top — 0.0 s, kernel helper bpf"),
			 top); /* no tty: no clear */
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
	ck_assert_ptr_nonnull(strstr(out, "count                           1"));
	free(out);
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

	ck_assert_int_ge(fd, 0);
	close(fd);
	view_one(&v, "worker");
	rec = view_record_open(path);
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(view_record_start(rec, &v), 0);
	view_record_sample(rec, &s);
	view_record_event(rec, &e);
	ck_assert_int_eq(view_record_flush(rec), 0);
	ck_assert_uint_eq(view_record_dropped(rec), 0);
	ck_assert_int_eq(view_record_close(rec, &v), 0);
	rd = recreader_open(path);
	ck_assert_ptr_nonnull(rd);
	while (recreader_next(rd, &c) == 1) {
		if (c.type < 16)
			seen[c.type]++;
		if (c.type == VN_CHUNK_META)
			ck_assert_ptr_nonnull(memmem(c.payload, c.len, "threshold_ns=5000\n", 18));
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
