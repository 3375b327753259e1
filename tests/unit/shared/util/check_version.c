/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/version: the version is the first line of the VERSION file at the top of the
 * tree (the tests run from there), version_string() is that number alone or followed by " (git REV)", and
 * version_print() writes "PROG VERSION_STRING\n" — what every --version prints.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/version.h"

/* The first line of VERSION, without its newline. */
static void version_file(char *buf, size_t len)
{
	FILE *f = fopen("VERSION", "r");

	ck_assert_msg(f != NULL, "VERSION not found: run the suite from the top of the tree");
	ck_assert_ptr_nonnull(fgets(buf, (int)len, f));
	fclose(f);
	buf[strcspn(buf, "\r\n")] = 0;
}

START_TEST(test_number_is_version_file)
{
	char want[64];

	version_file(want, sizeof(want));
	ck_assert_uint_gt(strlen(want), 0);
	ck_assert_str_eq(version_number(), want);
}
END_TEST

START_TEST(test_string)
{
	const char *n = version_number(), *s = version_string();
	size_t len = strlen(n);

	ck_assert_int_eq(strncmp(s, n, len), 0);
	if (s[len]) {
		/* " (git REV)": a revision of hex digits, "-dirty" when the tree had changes */
		ck_assert_int_eq(strncmp(s + len, " (git ", 6), 0);
		ck_assert_uint_gt(strspn(s + len + 6, "0123456789abcdef"), 0);
		ck_assert_int_eq(s[strlen(s) - 1], ')');
	}
	ck_assert_ptr_eq(version_string(), s); /* static storage, the same every call */
}
END_TEST

START_TEST(test_print)
{
	char buf[256], want[256];
	FILE *f = tmpfile();

	ck_assert_ptr_nonnull(f);
	version_print(f, "vnoise-test");
	rewind(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	ck_assert_ptr_null(fgets(want, sizeof(want), f)); /* one line */
	fclose(f);
	snprintf(want, sizeof(want), "vnoise-test %s\n", version_string());
	ck_assert_str_eq(buf, want);
}
END_TEST

static Suite *version_suite(void)
{
	Suite *s = suite_create("version");
	TCase *tc = tcase_create("version");

	tcase_add_test(tc, test_number_is_version_file);
	tcase_add_test(tc, test_string);
	tcase_add_test(tc, test_print);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(version_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
