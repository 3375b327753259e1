/* SPDX-License-Identifier: MIT */
/*
 * bufout: bounded printf and JSON strings from fixed-size fields (shared/util/bufout).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/bufout.h"

START_TEST(test_put)
{
	char buf[16];
	struct bufout o = { buf, sizeof(buf), 0, 0 };

	bufout_put(&o, "%s=%d", "ab", 42);
	ck_assert_str_eq(buf, "ab=42");
	ck_assert_int_eq(bufout_result(&o), 5);
	bufout_put(&o, ",%s", "0123456789"); /* 11 more: 16 with the NUL does not fit */
	ck_assert_int_eq(o.full, 1);
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);
	bufout_put(&o, "x"); /* once full, nothing more is appended */
	ck_assert_uint_eq(o.off, 5);
	ck_assert_uint_le(strlen(buf), sizeof(buf) - 1);
}
END_TEST

START_TEST(test_exact_fit)
{
	char buf[6];
	struct bufout o = { buf, sizeof(buf), 0, 0 };

	bufout_put(&o, "12345"); /* 5 + NUL fits exactly */
	ck_assert_int_eq(bufout_result(&o), 5);
	bufout_put(&o, "6");
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);
	ck_assert_str_eq(buf, "12345");
}
END_TEST

START_TEST(test_str)
{
	char buf[64];
	struct bufout o = { buf, sizeof(buf), 0, 0 };
	const char field[4] = { 'a', '"', '\\', 'b' }; /* not NUL-terminated */

	bufout_str(&o, field, sizeof(field));
	ck_assert_str_eq(buf, "\"a\\\"\\\\b\"");
	o.off = 0;
	bufout_str(&o, "t\x01\xc3\xa9", 16);
	ck_assert_str_eq(buf, "\"t\\u0001\\u00c3\\u00a9\"");
	o.off = 0;
	bufout_str(&o, "abcdef", 3); /* at most max bytes */
	ck_assert_str_eq(buf, "\"abc\"");
	o.off = 0;
	bufout_str(&o, NULL, 3);
	ck_assert_str_eq(buf, "\"\"");
	ck_assert_int_eq(bufout_result(&o), 2);
}
END_TEST

START_TEST(test_str_nospace)
{
	char buf[5];
	struct bufout o = { buf, sizeof(buf), 0, 0 };

	bufout_str(&o, "abcdef", 6);
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);
	ck_assert_uint_lt(strlen(buf), sizeof(buf));
}
END_TEST

static Suite *bufout_suite(void)
{
	Suite *s = suite_create("bufout");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_put);
	tcase_add_test(tc, test_exact_fit);
	tcase_add_test(tc, test_str);
	tcase_add_test(tc, test_str_nospace);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(bufout_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
