/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/json: exact compact and pretty output of nested documents, string escaping
 * (quotes, backslash, control characters, valid and invalid UTF-8), numbers (integer limits, doubles that
 * read back exactly, NaN/inf as null), misuse detection, stream errors, and that a rich document parses
 * with Python's json module when python3 is available.
 */
#include <check.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/json.h"

struct mem {
	char *buf;
	size_t len;
	FILE *f;
	struct json_writer w;
};

static void mem_open(struct mem *m, unsigned flags)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	ck_assert_ptr_nonnull(m->f);
	json_init(&m->w, m->f, flags);
}

/* Finish the document, check the result code and the exact output, free everything. */
static void mem_check(struct mem *m, int want_rc, const char *want)
{
	int rc = json_finish(&m->w);

	ck_assert_int_eq(rc, want_rc);
	ck_assert_int_eq(fclose(m->f), 0);
	if (want)
		ck_assert_str_eq(m->buf, want);
	free(m->buf);
}

static void write_doc(struct json_writer *w)
{
	json_obj_begin(w);
	json_kv_str(w, "name", "vnoise");
	json_kv_u64(w, "cpus", 4);
	json_key(w, "samples");
	json_arr_begin(w);
	json_u64(w, 1);
	json_obj_begin(w);
	json_kv_i64(w, "d", -2);
	json_obj_end(w);
	json_arr_begin(w);
	json_arr_end(w);
	json_arr_end(w);
	json_key(w, "empty");
	json_obj_begin(w);
	json_obj_end(w);
	json_kv_bool(w, "ok", true);
	json_key(w, "none");
	json_null(w);
	json_obj_end(w);
}

/* ---- structure ---- */

START_TEST(test_compact_nesting)
{
	struct mem m;

	mem_open(&m, 0);
	write_doc(&m.w);
	mem_check(&m, 0,
		  "{\"name\":\"vnoise\",\"cpus\":4,\"samples\":[1,{\"d\":-2},[]],\"empty\":{},"
		  "\"ok\":true,\"none\":null}\n");
}
END_TEST

START_TEST(test_pretty_nesting)
{
	struct mem m;

	mem_open(&m, JSON_PRETTY);
	write_doc(&m.w);
	mem_check(&m, 0,
		  "{\n"
		  "  \"name\": \"vnoise\",\n"
		  "  \"cpus\": 4,\n"
		  "  \"samples\": [\n"
		  "    1,\n"
		  "    {\n"
		  "      \"d\": -2\n"
		  "    },\n"
		  "    []\n"
		  "  ],\n"
		  "  \"empty\": {},\n"
		  "  \"ok\": true,\n"
		  "  \"none\": null\n"
		  "}\n");
}
END_TEST

START_TEST(test_scalars_top_level)
{
	struct mem m;

	mem_open(&m, 0);
	json_u64(&m.w, 42);
	mem_check(&m, 0, "42\n");
	mem_open(&m, JSON_PRETTY);
	json_str(&m.w, "x");
	mem_check(&m, 0, "\"x\"\n");
}
END_TEST

START_TEST(test_json_lines)
{
	struct mem m;

	mem_open(&m, 0);
	json_arr_begin(&m.w);
	json_arr_end(&m.w);
	ck_assert_int_eq(json_finish(&m.w), 0);
	json_obj_begin(&m.w);
	json_kv_u64(&m.w, "a", 1);
	json_obj_end(&m.w);
	mem_check(&m, 0, "[]\n{\"a\":1}\n");
}
END_TEST

/* ---- strings ---- */

START_TEST(test_escaping)
{
	struct mem m;

	mem_open(&m, 0);
	json_arr_begin(&m.w);
	json_str(&m.w, "a\"b\\c/d");
	json_str(&m.w, "\n\r\t\b\f");
	json_str(&m.w, "\x01\x1f\x7f");
	json_strn(&m.w, "nul\0in", 6);
	json_str(&m.w, "");
	json_str(&m.w, NULL);
	json_arr_end(&m.w);
	mem_check(&m, 0,
		  "[\"a\\\"b\\\\c/d\",\"\\n\\r\\t\\b\\f\",\"\\u0001\\u001f\x7f\",\"nul\\u0000in\","
		  "\"\",null]\n");
}
END_TEST

START_TEST(test_utf8)
{
	struct mem m;

	mem_open(&m, 0);
	json_arr_begin(&m.w);
	/* valid: 2, 3 and 4 byte sequences pass through */
	json_str(&m.w, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	/* invalid: lone continuation, bad lead, truncated sequence, overlong, surrogate, > U+10FFFF */
	json_str(&m.w, "a\x80z");
	json_str(&m.w, "\xff\xfe");
	json_str(&m.w, "\xe2\x82");
	json_str(&m.w, "\xc0\xaf");
	json_str(&m.w, "\xed\xa0\x80");
	json_str(&m.w, "\xf4\x90\x80\x80");
	json_arr_end(&m.w);
	mem_check(&m, 0,
		  "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\",\"a\\ufffdz\",\"\\ufffd\\ufffd\","
		  "\"\\ufffd\\ufffd\",\"\\ufffd\\ufffd\",\"\\ufffd\\ufffd\\ufffd\","
		  "\"\\ufffd\\ufffd\\ufffd\\ufffd\"]\n");
}
END_TEST

START_TEST(test_key_escaping)
{
	struct mem m;

	mem_open(&m, 0);
	json_obj_begin(&m.w);
	json_kv_str(&m.w, "irq \"24\"\n", "virtio0");
	json_obj_end(&m.w);
	mem_check(&m, 0, "{\"irq \\\"24\\\"\\n\":\"virtio0\"}\n");
}
END_TEST

/* ---- numbers ---- */

START_TEST(test_integers)
{
	struct mem m;

	mem_open(&m, 0);
	json_arr_begin(&m.w);
	json_u64(&m.w, 0);
	json_u64(&m.w, UINT64_MAX);
	json_i64(&m.w, INT64_MIN);
	json_i64(&m.w, INT64_MAX);
	json_arr_end(&m.w);
	mem_check(&m, 0, "[0,18446744073709551615,-9223372036854775808,9223372036854775807]\n");
}
END_TEST

START_TEST(test_doubles)
{
	struct mem m;

	mem_open(&m, 0);
	json_arr_begin(&m.w);
	json_double(&m.w, 0.0);
	json_double(&m.w, 1.5);
	json_double(&m.w, 0.1);
	json_double(&m.w, -2.5e-7);
	json_double(&m.w, 1e300);
	json_double(&m.w, NAN);
	json_double(&m.w, INFINITY);
	json_double(&m.w, -INFINITY);
	json_arr_end(&m.w);
	mem_check(&m, 0, "[0,1.5,0.1,-2.5e-07,1e+300,null,null,null]\n");
}
END_TEST

START_TEST(test_doubles_roundtrip)
{
	double vals[] = {
		1.0 / 3, M_PI, DBL_MAX, DBL_MIN, 5e-324, 123456789.123456789, 0.30000000000000004
	};
	size_t i;

	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		struct mem m;

		mem_open(&m, 0);
		json_double(&m.w, vals[i]);
		ck_assert_int_eq(json_finish(&m.w), 0);
		fclose(m.f);
		ck_assert(strtod(m.buf, NULL) == vals[i]);
		ck_assert_uint_le(strlen(m.buf), 25);
		free(m.buf);
	}
}
END_TEST

/* ---- misuse and errors ---- */

START_TEST(test_misuse)
{
	struct mem m;
	int i;

	/* value without key in an object: nothing after the error is written */
	mem_open(&m, 0);
	json_obj_begin(&m.w);
	json_u64(&m.w, 1);
	json_obj_end(&m.w);
	mem_check(&m, -EINVAL, "{");

	/* key in an array */
	mem_open(&m, 0);
	json_arr_begin(&m.w);
	json_key(&m.w, "k");
	mem_check(&m, -EINVAL, "[");

	/* key without value before the end */
	mem_open(&m, 0);
	json_obj_begin(&m.w);
	json_key(&m.w, "k");
	json_obj_end(&m.w);
	mem_check(&m, -EINVAL, NULL);

	/* mismatched end, unclosed container, nothing written, two top-level values */
	mem_open(&m, 0);
	json_arr_begin(&m.w);
	json_obj_end(&m.w);
	mem_check(&m, -EINVAL, NULL);
	mem_open(&m, 0);
	json_arr_begin(&m.w);
	mem_check(&m, -EINVAL, NULL);
	mem_open(&m, 0);
	mem_check(&m, -EINVAL, "");
	mem_open(&m, 0);
	json_u64(&m.w, 1);
	json_u64(&m.w, 2);
	mem_check(&m, -EINVAL, "1");

	/* nesting limit */
	mem_open(&m, 0);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_arr_begin(&m.w);
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		json_arr_end(&m.w);
	mem_check(&m, 0, NULL);
	mem_open(&m, 0);
	for (i = 0; i <= JSON_MAX_DEPTH; i++)
		json_arr_begin(&m.w);
	mem_check(&m, -EINVAL, NULL);
}
END_TEST

START_TEST(test_stream_error)
{
	struct json_writer w;
	FILE *f = fopen("/dev/full", "w");
	int i;

	if (!f)
		return;
	json_init(&w, f, 0);
	json_arr_begin(&w);
	for (i = 0; i < 10000; i++)
		json_u64(&w, (uint64_t)i);
	json_arr_end(&w);
	ck_assert_int_eq(json_finish(&w), -ENOSPC);
	fclose(f);
}
END_TEST

/* ---- interoperability ---- */

START_TEST(test_python_parses)
{
	char tmpl[] = "/tmp/check_json.XXXXXX";
	char cmd[1024];
	struct json_writer w;
	FILE *f;
	int fd, rc, mode;

	if (system("python3 -c 'import json' >/dev/null 2>&1") != 0)
		return; /* no python3: skip this interoperability check */
	for (mode = 0; mode < 2; mode++) {
		fd = mkstemp(tmpl);
		ck_assert_int_ge(fd, 0);
		f = fdopen(fd, "w");
		ck_assert_ptr_nonnull(f);
		json_init(&w, f, mode ? JSON_PRETTY : 0);
		json_obj_begin(&w);
		json_kv_str(&w, "esc", "q\"b\\n\n\x01\x7f caf\xc3\xa9 bad\xff\xc0 end");
		json_kv_double(&w, "pi", M_PI);
		json_kv_double(&w, "nan", NAN);
		json_kv_u64(&w, "big", UINT64_MAX);
		json_kv_i64(&w, "neg", INT64_MIN);
		json_key(&w, "nested");
		json_arr_begin(&w);
		json_obj_begin(&w);
		json_obj_end(&w);
		json_arr_begin(&w);
		json_bool(&w, false);
		json_null(&w);
		json_arr_end(&w);
		json_arr_end(&w);
		json_obj_end(&w);
		ck_assert_int_eq(json_finish(&w), 0);
		ck_assert_int_eq(fclose(f), 0);
		snprintf(cmd, sizeof(cmd),
			 "python3 -c 'import json,sys,math; d=json.load(sys.stdin); "
			 "assert d[\"esc\"]==\"q\\\"b\\\\n\\n\\x01\\x7f caf\\xe9 bad\\ufffd\\ufffd "
			 "end\", d; "
			 "assert d[\"pi\"]==math.pi and d[\"nan\"] is None; "
			 "assert d[\"big\"]==2**64-1 and d[\"neg\"]==-2**63; "
			 "assert d[\"nested\"]==[{},[False,None]]' < %s",
			 tmpl);
		rc = system(cmd);
		unlink(tmpl);
		strcpy(tmpl, "/tmp/check_json.XXXXXX");
		ck_assert_int_eq(rc, 0);
	}
}
END_TEST

static Suite *json_suite(void)
{
	Suite *s = suite_create("json");
	TCase *tc;

	tc = tcase_create("structure");
	tcase_add_test(tc, test_compact_nesting);
	tcase_add_test(tc, test_pretty_nesting);
	tcase_add_test(tc, test_scalars_top_level);
	tcase_add_test(tc, test_json_lines);
	suite_add_tcase(s, tc);

	tc = tcase_create("strings");
	tcase_add_test(tc, test_escaping);
	tcase_add_test(tc, test_utf8);
	tcase_add_test(tc, test_key_escaping);
	suite_add_tcase(s, tc);

	tc = tcase_create("numbers");
	tcase_add_test(tc, test_integers);
	tcase_add_test(tc, test_doubles);
	tcase_add_test(tc, test_doubles_roundtrip);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_misuse);
	tcase_add_test(tc, test_stream_error);
	suite_add_tcase(s, tc);

	tc = tcase_create("interop");
	tcase_add_test(tc, test_python_parses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(json_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
