/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/export/prompb: the exact bytes of a known WriteRequest (checked by hand against
 * prometheus/prompb/types.proto), varints of large and negative timestamps, the exposition parser (comments,
 * escapes, NaN and the infinities, timestamps ignored, bad lines counted, duplicate series skipped, empty
 * label values left out), label sorting, and the text promfmt writes read back through an independent
 * decoder of the protobuf bytes.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "export/promfmt.h"
#include "export/prompb.h"

/* ---- an independent decoder: WriteRequest bytes -> "name=value,name=value v ts\n" lines ---- */

static uint64_t get_varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;

	for (int shift = 0; *p < end; shift += 7) {
		uint8_t b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	ck_abort_msg("varint runs past the end");
	return 0;
}

static void decode_label(const uint8_t *p, const uint8_t *end, char *out, size_t cap)
{
	size_t n;

	ck_assert_int_eq(*p++, 0x0a);
	n = get_varint(&p, end);
	ck_assert_uint_lt(strlen(out) + n, cap);
	strncat(out, (const char *)p, n);
	p += n;
	strcat(out, "=");
	ck_assert_int_eq(*p++, 0x12);
	n = get_varint(&p, end);
	strncat(out, (const char *)p, n);
	p += n;
	ck_assert_ptr_eq(p, end);
}

static void decode_series(const uint8_t *p, const uint8_t *end, char *out, size_t cap)
{
	int labels = 0;

	while (p < end) {
		uint8_t tag = *p++;
		size_t n = get_varint(&p, end);

		if (tag == 0x0a) {
			if (labels++)
				strcat(out, ",");
			decode_label(p, p + n, out, cap);
		} else {
			const uint8_t *s = p;
			uint64_t bits = 0;
			double v;
			int64_t ts;

			ck_assert_int_eq(tag, 0x12);
			ck_assert_int_eq(*s++, 0x09);
			for (int k = 0; k < 8; k++)
				bits |= (uint64_t)*s++ << (8 * k);
			memcpy(&v, &bits, 8);
			ck_assert_int_eq(*s++, 0x10);
			ts = (int64_t)get_varint(&s, p + n);
			ck_assert_ptr_eq(s, p + n);
			snprintf(out + strlen(out), cap - strlen(out), " %.17g %lld\n", v,
				 (long long)ts);
		}
		p += n;
	}
}

static char dec[8192];

static const char *decode(const struct prompb_buf *b)
{
	const uint8_t *p = b->p, *end = b->p + b->len;

	dec[0] = '\0';
	while (p < end) {
		size_t n;

		ck_assert_int_eq(*p++, 0x0a);
		n = get_varint(&p, end);
		ck_assert(p + n <= end);
		decode_series(p, p + n, dec, sizeof(dec));
		p += n;
	}
	return dec;
}

static struct prompb_counts counts;

static const char *convert(const char *text, int64_t ts)
{
	struct prompb_buf b = { 0 };

	ck_assert_int_eq(prompb_write_request(&b, text, strlen(text), ts, &counts), 0);
	decode(&b);
	prompb_buf_free(&b);
	return dec;
}

/* ---- the tests ---- */

START_TEST(test_known_bytes)
{
	/* WriteRequest { timeseries { labels {__name__ up} labels {job a} samples {1.0 @ 1000} } } */
	static const uint8_t want[] = {
		0x0a, 0x28, /* WriteRequest.timeseries, 40 bytes */
		0x0a, 0x0e, /* TimeSeries.labels, 14 bytes */
		0x0a, 0x08, '_',  '_',	'n',  'a',  'm',  'e',	'_',
		'_',  0x12, 0x02, 'u',	'p', /**/
		0x0a, 0x08, /* TimeSeries.labels, 8 bytes */
		0x0a, 0x03, 'j',  'o',	'b',  0x12, 0x01, 'a', /**/
		0x12, 0x0c, /* TimeSeries.samples, 12 bytes */
		0x09, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f, /* value 1.0, fixed64 LE */
		0x10, 0xe8, 0x07, /* timestamp 1000, varint */
	};
	struct prompb_buf b = { 0 };
	const char text[] = "# HELP up Up.\n# TYPE up gauge\nup{job=\"a\"} 1\n";

	ck_assert_int_eq(prompb_write_request(&b, text, strlen(text), 1000, &counts), 0);
	ck_assert_uint_eq(counts.samples, 1);
	ck_assert_uint_eq(counts.bad_lines, 0);
	ck_assert_uint_eq(b.len, sizeof(want));
	ck_assert_mem_eq(b.p, want, sizeof(want));
	prompb_buf_free(&b);
	ck_assert_ptr_null(b.p);
}
END_TEST

START_TEST(test_timestamps)
{
	/* 1.7e12 ms (2023) takes 6 varint bytes; -1 takes 10 (two's complement) */
	static const uint8_t neg[] = { 0x10, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0x01 };
	struct prompb_label l = { "__name__", "x", 8, 1 };
	struct prompb_buf b = { 0 };

	ck_assert_int_eq(prompb_put_series(&b, &l, 1, 0.5, -1), 0);
	ck_assert_uint_ge(b.len, sizeof(neg));
	ck_assert_mem_eq(b.p + b.len - sizeof(neg), neg, sizeof(neg));
	ck_assert_str_eq(decode(&b), "__name__=x 0.5 -1\n");
	b.len = 0;
	ck_assert_int_eq(prompb_put_series(&b, &l, 1, 2, 1700000000123LL), 0);
	ck_assert_str_eq(decode(&b), "__name__=x 2 1700000000123\n");
	prompb_buf_free(&b);
}
END_TEST

START_TEST(test_parse)
{
	const char *text = "# HELP a_total Help with \\n.\n"
			   "# TYPE a_total counter\n"
			   "\n"
			   "a_total{node=\"1\",src=\"q\\\"uo\\\\te\\nnl\"} 42\n"
			   "  b:c 1e3 1700000000000\r\n"
			   "nan_v{x=\"y\",} NaN\n"
			   "inf_v +Inf\n"
			   "minf_v{} -Inf\n"
			   "sp{ a = \"1\" , b=\"2\" }\t7";

	convert(text, 5);
	ck_assert_uint_eq(counts.bad_lines, 0);
	ck_assert_uint_eq(counts.samples, 6);
	ck_assert_str_eq(dec, "__name__=a_total,node=1,src=q\"uo\\te\nnl 42 5\n"
			      "__name__=b:c 1000 5\n"
			      "__name__=nan_v,x=y nan 5\n"
			      "__name__=inf_v inf 5\n"
			      "__name__=minf_v -inf 5\n"
			      "__name__=sp,a=1,b=2 7 5\n");
}
END_TEST

START_TEST(test_bad_lines)
{
	static const char *const bad[] = {
		"bad line",
		"x{y=\"unterminated} 1",
		"1abc 2",
		"x 1 2 3",
		"x 1 ts",
		"x{y=\"a\",y=\"b\"} 1",
		"x{__name__=\"y\"} 1",
		"x{y=\"\\q\"} 1",
		"x{y=1} 1",
		"x{-y=\"1\"} 1",
		"x{y=\"1\"}1",
		"x",
		"x 1.5.5",
		"x{y=\"1\" z=\"2\"} 1",
	};
	char text[4096] = "good 1\n", many[1024] = "x{";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		convert(bad[i], 1);
		ck_assert_msg(counts.bad_lines == 1 && counts.samples == 0, "'%s' was taken",
			      bad[i]);
		strcat(text, bad[i]);
		strcat(text, "\n");
	}
	strcat(text, "good2 2\n");
	convert(text, 1);
	ck_assert_uint_eq(counts.bad_lines, sizeof(bad) / sizeof(bad[0]));
	ck_assert_str_eq(dec, "__name__=good 1 1\n__name__=good2 2 1\n");
	/* PROMPB_MAX_LABELS with __name__ fit, one more does not */
	for (int i = 1; i < PROMPB_MAX_LABELS; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "l%d=\"v\",", i);
	convert(strcat(strcpy(text, many), "} 1"), 1);
	ck_assert_uint_eq(counts.samples, 1);
	convert(strcat(strcat(strcpy(text, many), "l99=\"v\""), "} 1"), 1);
	ck_assert_uint_eq(counts.bad_lines, 1);
}
END_TEST

START_TEST(test_duplicates_and_empty)
{
	convert("a{x=\"1\"} 1\na{x=\"2\"} 2\na{x=\"1\"} 3\nb{x=\"\"} 4\nb 5\nc{y=\"1\",x=\"2\"} 6\n"
		"c{x=\"2\",y=\"1\"} 7\n",
		9);
	ck_assert_uint_eq(counts.samples, 4);
	ck_assert_uint_eq(counts.duplicates, 3);
	ck_assert_str_eq(dec, "__name__=a,x=1 1 9\n__name__=a,x=2 2 9\n__name__=b 4 9\n"
			      "__name__=c,x=2,y=1 6 9\n");
	convert("", 1);
	ck_assert_uint_eq(counts.samples, 0);
	ck_assert_str_eq(dec, "");
}
END_TEST

START_TEST(test_sort)
{
	struct prompb_label l[] = {
		{ "zeta", "", 4, 0 },  { "__name__", "", 8, 0 }, { "ab", "", 2, 0 },
		{ "Alpha", "", 5, 0 }, { "a", "", 1, 0 },	 { "abc", "", 3, 0 },
	};
	static const char *const want[] = { "Alpha", "__name__", "a", "ab", "abc", "zeta" };

	prompb_sort_labels(l, 6);
	for (int i = 0; i < 6; i++)
		ck_assert_str_eq(l[i].name, want[i]);
	/* the order the receiver needs holds in the bytes too */
	convert("m{zeta=\"1\",node=\"2\",a=\"3\"} 1", 1);
	ck_assert_str_eq(dec, "__name__=m,a=3,node=2,zeta=1 1 1\n");
}
END_TEST

/* What promfmt writes (escaped hostile values, exact doubles) comes back the same. */
START_TEST(test_promfmt_round_trip)
{
	static char buf[4096];
	struct bufout o = { buf, sizeof(buf), 0, 0 };
	const struct promfmt_label l[] = { { "comm", "we\"ird\\na\nme", SIZE_MAX },
					   { "class", "irq", SIZE_MAX } };
	struct prompb_buf b = { 0 };

	promfmt_family(&o, "vnoise_x_seconds_total", "counter", "Help \"x\".");
	promfmt_sample(&o, "vnoise_x_seconds_total", l, 2, 0.1);
	promfmt_sample_u64(&o, "vnoise_y_total", NULL, 0, 18446744073709551615ull);
	promfmt_sample(&o, "vnoise_z", l, 1, NAN);
	ck_assert_int_ge(bufout_result(&o), 0);
	ck_assert_int_eq(prompb_write_request(&b, buf, o.off, 77, &counts), 0);
	ck_assert_uint_eq(counts.bad_lines, 0);
	ck_assert_str_eq(decode(&b), "__name__=vnoise_x_seconds_total,class=irq,comm="
				     "we\"ird\\na\nme 0.10000000000000001 77\n"
				     "__name__=vnoise_y_total 1.8446744073709552e+19 77\n"
				     "__name__=vnoise_z,comm=we\"ird\\na\nme nan 77\n");
	prompb_buf_free(&b);
}
END_TEST

/* Random lines from the format's own alphabet: never a crash, always well-formed bytes (seeded). */
START_TEST(test_random)
{
	static const char alpha[] = "ab_:{}=\",\\ \n#0123456789.+-eNaInf\t";
	char text[256];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)(i % 200);

		for (size_t k = 0; k < n; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			text[k] = alpha[x % (sizeof(alpha) - 1)];
		}
		text[n] = '\0';
		convert(text, i);
		ck_assert_uint_le(counts.samples + counts.bad_lines + counts.duplicates, n / 2 + 1);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("prompb");
	TCase *t = tcase_create("encode");

	tcase_add_test(t, test_known_bytes);
	tcase_add_test(t, test_timestamps);
	tcase_add_test(t, test_sort);
	suite_add_tcase(s, t);
	t = tcase_create("parse");
	tcase_add_test(t, test_parse);
	tcase_add_test(t, test_bad_lines);
	tcase_add_test(t, test_duplicates_and_empty);
	tcase_add_test(t, test_promfmt_round_trip);
	tcase_add_test(t, test_random);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
