/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/jsonread: structure, escapes, surrogates, UTF-8, numbers at their limits,
 * invalid texts and the error position, duplicate member names, the depth, value-count and size limits of
 * a document (at its creation sizes), every truncation of a valid text in an exact-size buffer, and
 * re-serialisation through the writer.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/jsonread.h"
#include "check_main.h"

#define TEST_TEXT_MAX 65536 /* the fixture's document: longest text, bytes */
#define TEST_NODES 1024 /* and most values */

/* Parse from an exact-size heap copy (no NUL after it), so ASan catches any overread. */
static int parse_exact(struct jsonr_doc *doc, const char *text, size_t len,
		       const struct jsonr_value **root)
{
	char *copy = malloc(len ? len : 1);
	int rc;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, text, len);
	rc = jsonr_parse(doc, copy, len, root);
	free(copy);
	return rc;
}

static int parse_str(struct jsonr_doc *doc, const char *text, const struct jsonr_value **root)
{
	return parse_exact(doc, text, strlen(text), root);
}

static struct jsonr_doc *doc;

static void doc_setup(void)
{
	doc = jsonr_doc_new(TEST_TEXT_MAX, TEST_NODES);
	ck_assert_ptr_nonnull(doc);
}

static void doc_teardown(void)
{
	jsonr_doc_free(doc);
	doc = NULL;
}

/* Re-serialise a parsed value compactly into a static buffer. */
static const char *reserialise(const struct jsonr_value *v)
{
	static char buf[8192];
	struct json_writer w;
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	ck_assert_ptr_nonnull(f);
	json_init(&w, f, 0);
	jsonr_write_value(&w, v);
	ck_assert_int_eq(json_finish(&w), 0);
	buf[ftell(f) - 1] = '\0'; /* drop the newline */
	fclose(f);
	return buf;
}

START_TEST(test_parse_structure)
{
	const struct jsonr_value *root, *m, *a;
	int64_t i;

	ck_assert_int_eq(
	    parse_str(doc,
		      " {\"s\":\"x\",\"n\":-5,\"u\":18446744073709551615,\"d\":1.5e2,"
		      "\"t\":true,\"f\":false,\"z\":null,\"a\":[1,[],{}],\"o\":{\"k\":\"v\"}} \n",
		      &root),
	    0);
	ck_assert_int_eq(root->kind, JSONR_OBJ);
	ck_assert_uint_eq(root->len, 9);
	ck_assert_str_eq(jsonr_get_str(jsonr_obj_get(root, "s")), "x");
	ck_assert_int_eq(jsonr_get_i64(jsonr_obj_get(root, "n"), &i), 0);
	ck_assert_int_eq(i, -5);
	m = jsonr_obj_get(root, "u");
	ck_assert_int_eq(m->kind, JSONR_INT);
	ck_assert(m->mag == UINT64_MAX && !m->neg);
	ck_assert_int_eq(jsonr_get_i64(m, &i), -ERANGE);
	m = jsonr_obj_get(root, "d");
	ck_assert_int_eq(m->kind, JSONR_DOUBLE);
	ck_assert(m->d == 150.0);
	ck_assert_int_eq(jsonr_get_i64(m, &i), -EINVAL);
	ck_assert(jsonr_obj_get(root, "t")->kind == JSONR_BOOL && jsonr_obj_get(root, "t")->b);
	ck_assert(jsonr_obj_get(root, "f")->kind == JSONR_BOOL && !jsonr_obj_get(root, "f")->b);
	ck_assert_int_eq(jsonr_obj_get(root, "z")->kind, JSONR_NULL);
	a = jsonr_obj_get(root, "a");
	ck_assert_int_eq(a->kind, JSONR_ARR);
	ck_assert_uint_eq(a->len, 3);
	ck_assert_int_eq(a->child->kind, JSONR_INT);
	ck_assert_int_eq(a->child->next->kind, JSONR_ARR);
	ck_assert_uint_eq(a->child->next->len, 0);
	ck_assert_int_eq(a->child->next->next->kind, JSONR_OBJ);
	ck_assert_ptr_null(a->child->next->next->next);
	ck_assert_ptr_null(a->child->key);
	ck_assert_str_eq(jsonr_get_str(jsonr_obj_get(jsonr_obj_get(root, "o"), "k")), "v");
	/* member order kept */
	ck_assert_str_eq(root->child->key, "s");
	ck_assert_str_eq(root->child->next->key, "n");
	ck_assert_ptr_null(jsonr_obj_get(root, "missing"));
	ck_assert_ptr_null(jsonr_obj_get(a, "s"));
	ck_assert_ptr_null(jsonr_obj_get(NULL, "s"));
	ck_assert_int_eq(jsonr_get_i64(NULL, &i), -ENOENT);
	ck_assert_ptr_null(jsonr_get_str(a));
	ck_assert_str_eq(reserialise(root),
			 "{\"s\":\"x\",\"n\":-5,\"u\":18446744073709551615,\"d\":150,\"t\":true,"
			 "\"f\":false,\"z\":null,\"a\":[1,[],{}],\"o\":{\"k\":\"v\"}}");

	/* any value at top level */
	ck_assert_int_eq(parse_str(doc, "\"just a string\"", &root), 0);
	ck_assert_int_eq(root->kind, JSONR_STR);
	ck_assert_int_eq(parse_str(doc, "7", &root), 0);
	ck_assert_int_eq(root->kind, JSONR_INT);
}
END_TEST

START_TEST(test_parse_strings)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{ "\"\"", "" },
		{ "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\/\b\f\n\r\t" },
		{ "\"\\u0041\\u00e9\\u20AC\"", "A\xc3\xa9\xe2\x82\xac" },
		{ "\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80" }, /* U+1F600 */
		{ "\"\\uDBFF\\uDFFF\"", "\xf4\x8f\xbf\xbf" }, /* U+10FFFF */
		{ "\"\\u0001\"", "\x01" },
		{ "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
		{ "\"\x7f\"", "\x7f" },
	};
	static const char *const bad[] = {
		"\"abc", /* unterminated */
		"\"abc\\", /* unterminated after backslash */
		"\"\\x41\"", /* unknown escape */
		"\"\\u12\"", /* short \u */
		"\"\\u12g4\"", /* bad hex */
		"\"\\u0000\"", /* NUL */
		"\"\\ud83d\"", /* lone high surrogate */
		"\"\\ud83dx\"", /* high surrogate then text */
		"\"\\ud83d\\u0041\"", /* high surrogate then non-low */
		"\"\\ud83d\\ud83d\"", /* two highs */
		"\"\\ude00\"", /* lone low surrogate */
		"\"\\ud83d\\u", /* truncated pair */
		"\"a\nb\"", /* raw control character */
		"\"a\tb\"",
		"\"\x80\"", /* continuation byte alone */
		"\"\xc0\x80\"", /* overlong NUL */
		"\"\xc1\xbf\"", /* overlong */
		"\"\xe0\x80\xaf\"", /* overlong 3-byte */
		"\"\xed\xa0\x80\"", /* encoded surrogate */
		"\"\xf4\x90\x80\x80\"", /* above U+10FFFF */
		"\"\xf5\x80\x80\x80\"",
		"\"\xff\"",
		"\"\xc3\"", /* truncated sequence at the end of the string */
		"\"\xe2\x82\"",
		"'single'",
	};
	const struct jsonr_value *root;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(parse_str(doc, ok[i].in, &root) == 0, "%s: %s", ok[i].in, doc->err);
		ck_assert_int_eq(root->kind, JSONR_STR);
		ck_assert_str_eq(root->str, ok[i].out);
		ck_assert_uint_eq(root->len, strlen(ok[i].out));
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_str(doc, bad[i], &root) == -EINVAL, "accepted #%zu", i);
		ck_assert_ptr_null(root);
		ck_assert_ptr_nonnull(doc->err);
	}
	/* a raw NUL byte inside a string (length-delimited input) */
	ck_assert_int_eq(parse_exact(doc, "\"a\0b\"", 5, &root), -EINVAL);
	/* keys decode the same way */
	ck_assert_int_eq(parse_str(doc, "{\"\\u006b\\u00e9\":1}", &root), 0);
	ck_assert_ptr_nonnull(jsonr_obj_get(root, "k\xc3\xa9"));
	ck_assert_str_eq(reserialise(root), "{\"k\xc3\xa9\":1}");
}
END_TEST

START_TEST(test_parse_numbers)
{
	static const struct {
		const char *in;
		int rc;
		int kind;
		int64_t i; /* checked when kind == JSONR_INT and i64 fits */
	} cases[] = {
		{ "0", 0, JSONR_INT, 0 },
		{ "-0", 0, JSONR_INT, 0 },
		{ "42", 0, JSONR_INT, 42 },
		{ "-42", 0, JSONR_INT, -42 },
		{ "1234567890123", 0, JSONR_INT, 1234567890123LL },
		{ "9223372036854775807", 0, JSONR_INT, INT64_MAX },
		{ "-9223372036854775808", 0, JSONR_INT, INT64_MIN },
		{ "9223372036854775808", 0, JSONR_INT, 0 }, /* uint64 only */
		{ "18446744073709551615", 0, JSONR_INT, 0 }, /* UINT64_MAX */
		{ "18446744073709551616", -ERANGE, 0, 0 },
		{ "99999999999999999999999", -ERANGE, 0, 0 },
		{ "-9223372036854775809", -ERANGE, 0, 0 },
		{ "1.5", 0, JSONR_DOUBLE, 0 },
		{ "-0.25e-2", 0, JSONR_DOUBLE, 0 },
		{ "1E3", 0, JSONR_DOUBLE, 0 },
		{ "1e+3", 0, JSONR_DOUBLE, 0 },
		{ "1e-400", 0, JSONR_DOUBLE, 0 }, /* underflow to 0 is fine */
		{ "1e400", -ERANGE, 0, 0 },
		{ "-1e400", -ERANGE, 0, 0 },
		{ "01", -EINVAL, 0, 0 },
		{ "-01", -EINVAL, 0, 0 },
		{ "+1", -EINVAL, 0, 0 },
		{ "-", -EINVAL, 0, 0 },
		{ "1.", -EINVAL, 0, 0 },
		{ ".5", -EINVAL, 0, 0 },
		{ "1e", -EINVAL, 0, 0 },
		{ "1e+", -EINVAL, 0, 0 },
		{ "0x10", -EINVAL, 0, 0 },
		{ "1 2", -EINVAL, 0, 0 },
		{ "NaN", -EINVAL, 0, 0 },
		{ "Infinity", -EINVAL, 0, 0 },
		{ "-Infinity", -EINVAL, 0, 0 },
	};
	const struct jsonr_value *root;
	uint64_t u;
	int64_t i;
	size_t k;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int rc = parse_str(doc, cases[k].in, &root);

		ck_assert_msg(rc == cases[k].rc, "%s: rc %d", cases[k].in, rc);
		if (rc)
			continue;
		ck_assert_int_eq(root->kind, cases[k].kind);
		if (cases[k].kind == JSONR_INT && jsonr_get_i64(root, &i) == 0)
			ck_assert_msg(i == cases[k].i, "%s", cases[k].in);
	}
	ck_assert_int_eq(parse_str(doc, "18446744073709551615", &root), 0);
	ck_assert_int_eq(jsonr_get_u64(root, &u), 0);
	ck_assert(u == UINT64_MAX);
	ck_assert_int_eq(jsonr_get_i64(root, &i), -ERANGE);
	ck_assert_int_eq(parse_str(doc, "-1", &root), 0);
	ck_assert_int_eq(jsonr_get_u64(root, &u), -ERANGE);
	ck_assert_int_eq(parse_str(doc, "-0", &root), 0);
	ck_assert_int_eq(jsonr_get_u64(root, &u), 0);
	ck_assert(!root->neg);
	ck_assert_int_eq(parse_str(doc, "[-9223372036854775808,18446744073709551615,-0.5]", &root),
			 0);
	ck_assert_str_eq(reserialise(root), "[-9223372036854775808,18446744073709551615,-0.5]");
}
END_TEST

START_TEST(test_parse_invalid)
{
	static const char *const bad[] = {
		"",	      "   ",	    "{",	  "}",
		"[",	      "]",	    "{]",	  "[}",
		"{\"a\"}",    "{\"a\":}",   "{\"a\" 1}",  "{a:1}",
		"{\"a\":1,}", "[1,]",	    "[,1]",	  "[1 2]",
		"{,}",	      "tru",	    "truex",	  "nul",
		"True",	      "{\"a\":1}x", "{} {}",	  "\"a\" \"b\"",
		"[1]]",	      "{\"a\":1}}", "{\"a\":1;}", "{\"a\":1 \"b\":2}",
		"/*c*/{}",    "\x01",
	};
	const struct jsonr_value *root;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(parse_str(doc, bad[i], &root) == -EINVAL, "accepted \"%s\"", bad[i]);
		ck_assert_ptr_null(root);
	}
	/* no input at all */
	ck_assert_int_eq(jsonr_parse(doc, NULL, 0, &root), -EINVAL);
	/* the error position */
	ck_assert_int_eq(parse_str(doc, "{\"a\":[1,2,x]}", &root), -EINVAL);
	ck_assert_uint_eq(doc->err_off, 10);
	ck_assert_str_eq(doc->err, "unexpected character");
}
END_TEST

START_TEST(test_parse_duplicates)
{
	const struct jsonr_value *root;

	ck_assert_int_eq(parse_str(doc, "{\"return\":1,\"return\":2}", &root), -EINVAL);
	ck_assert_str_eq(doc->err, "duplicate member name");
	/* the same name after decoding counts as a duplicate */
	ck_assert_int_eq(parse_str(doc, "{\"id\":1,\"\\u0069d\":2}", &root), -EINVAL);
	/* same key in different objects, or a prefix of another, is fine */
	ck_assert_int_eq(parse_str(doc, "{\"a\":{\"a\":1},\"b\":{\"a\":2},\"ab\":3}", &root), 0);
}
END_TEST

START_TEST(test_parse_limits)
{
	char buf[4 * TEST_NODES + 16];
	const struct jsonr_value *root;
	char *big;
	int i, n;

	/* depth: JSONR_MAX_DEPTH nested containers accepted, one more rejected */
	for (i = 0; i < JSONR_MAX_DEPTH; i++) {
		buf[i] = '[';
		buf[2 * JSONR_MAX_DEPTH - 1 - i] = ']';
	}
	ck_assert_int_eq(parse_exact(doc, buf, 2 * JSONR_MAX_DEPTH, &root), 0);
	for (i = 0; i < JSONR_MAX_DEPTH + 1; i++) {
		buf[i] = '[';
		buf[2 * JSONR_MAX_DEPTH + 1 - i] = ']';
	}
	ck_assert_int_eq(parse_exact(doc, buf, 2 * JSONR_MAX_DEPTH + 2, &root), -E2BIG);
	ck_assert_str_eq(doc->err, "nesting too deep");
	/* very deep input does not recurse past the limit */
	big = malloc(TEST_TEXT_MAX);
	memset(big, '[', TEST_TEXT_MAX);
	ck_assert_int_eq(parse_exact(doc, big, TEST_TEXT_MAX, &root), -E2BIG);

	/* nodes: the root plus TEST_NODES - 1 elements fit, one more does not */
	n = 0;
	buf[n++] = '[';
	for (i = 0; i < TEST_NODES - 1; i++) {
		buf[n++] = '0';
		buf[n++] = ',';
	}
	buf[n - 1] = ']';
	ck_assert_int_eq(parse_exact(doc, buf, n, &root), 0);
	ck_assert_uint_eq(root->len, TEST_NODES - 1);
	buf[n - 1] = ',';
	buf[n++] = '0';
	buf[n++] = ']';
	ck_assert_int_eq(parse_exact(doc, buf, n, &root), -E2BIG);
	ck_assert_str_eq(doc->err, "too many values");

	/* size: TEST_TEXT_MAX accepted, one more byte rejected */
	big = realloc(big, TEST_TEXT_MAX + 1);
	big[0] = '"';
	memset(big + 1, 'a', TEST_TEXT_MAX - 2);
	big[TEST_TEXT_MAX - 1] = '"';
	ck_assert_int_eq(parse_exact(doc, big, TEST_TEXT_MAX, &root), 0);
	ck_assert_uint_eq(root->len, TEST_TEXT_MAX - 2);
	big[TEST_TEXT_MAX] = ' ';
	ck_assert_int_eq(parse_exact(doc, big, TEST_TEXT_MAX + 1, &root), -E2BIG);
	/* a full-size text of escapes and doubles still fits the arena */
	for (i = 0; i + 6 <= TEST_TEXT_MAX - 2; i += 6)
		memcpy(big + 1 + i, "\\u20ac", 6);
	big[1 + i] = '"';
	ck_assert_int_eq(parse_exact(doc, big, i + 2, &root), 0);
	free(big);
}
END_TEST

START_TEST(test_parse_truncations)
{
	static const char text[] =
	    "{\"execute\":\"__com.vnoise_start\",\"arguments\":{\"cpus\":[0,1],\"x\":-1.5e3,"
	    "\"s\":\"\\ud83d\\ude00\\n\xc3\xa9\",\"b\":true,\"n\":null},\"id\":\"abc\"}";
	const struct jsonr_value *root;
	size_t i, len = sizeof(text) - 1;

	ck_assert_int_eq(parse_exact(doc, text, len, &root), 0);
	for (i = 0; i < len; i++) {
		int rc = parse_exact(doc, text, i, &root);

		ck_assert_msg(rc == -EINVAL, "prefix of %zu bytes: %d", i, rc);
		ck_assert_uint_le(doc->err_off, i);
	}
}
END_TEST

/* A document's limits are its own: a small one refuses what the fixture's accepts. */
START_TEST(test_doc_sizes)
{
	const struct jsonr_value *root;
	struct jsonr_doc *small;

	errno = 0;
	ck_assert_ptr_null(jsonr_doc_new(0, 4));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(jsonr_doc_new(16, 0));
	ck_assert_int_eq(errno, EINVAL);
	jsonr_doc_free(NULL);

	small = jsonr_doc_new(16, 4);
	ck_assert_ptr_nonnull(small);
	ck_assert_int_eq(parse_str(small, "[1,2,3]", &root), 0);
	ck_assert_uint_eq(root->len, 3);
	ck_assert_int_eq(parse_str(small, "[1,2,3,4]", &root), -E2BIG);
	ck_assert_str_eq(small->err, "too many values");
	ck_assert_int_eq(parse_str(small, "\"0123456789abcd\"", &root), 0);
	ck_assert_str_eq(root->str, "0123456789abcd");
	ck_assert_int_eq(parse_str(small, "\"0123456789abcde\"", &root), -E2BIG);
	ck_assert_str_eq(small->err, "text too long");
	/* the document is reusable after a failure */
	ck_assert_int_eq(parse_str(small, "{\"a\":[]}", &root), 0);
	ck_assert_ptr_null(small->err);
	jsonr_doc_free(small);
}
END_TEST

static Suite *jsonread_suite(void)
{
	Suite *s = suite_create("jsonread");
	TCase *tc = tcase_create("parser");

	tcase_add_checked_fixture(tc, doc_setup, doc_teardown);
	tcase_add_test(tc, test_parse_structure);
	tcase_add_test(tc, test_parse_strings);
	tcase_add_test(tc, test_parse_numbers);
	tcase_add_test(tc, test_parse_invalid);
	tcase_add_test(tc, test_parse_duplicates);
	tcase_add_test(tc, test_parse_limits);
	tcase_add_test(tc, test_parse_truncations);
	tcase_add_test(tc, test_doc_sizes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(jsonread_suite());
}
