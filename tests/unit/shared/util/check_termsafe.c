/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/termsafe: printable ASCII kept, backslash doubled, ESC, CR, BEL, DEL and bytes
 * >= 0x80 as \xHH; fixed fields without a NUL; a small buffer cuts between sequences, never inside one.
 */
#include <check.h>
#include <string.h>
#include "check_main.h"
#include "util/termsafe.h"

START_TEST(test_escapes)
{
	char out[TERMSAFE_LEN(32)];

	ck_assert_str_eq(termsafe(out, sizeof(out), "kworker/0:1 [x]", 32), "kworker/0:1 [x]");
	ck_assert_str_eq(termsafe(out, sizeof(out), "\x1b[2J\r\a\x7f", 32),
			 "\\x1b[2J\\x0d\\x07\\x7f");
	ck_assert_str_eq(termsafe(out, sizeof(out), "a\\b", 32), "a\\\\b");
	ck_assert_str_eq(termsafe(out, sizeof(out), "\xc3\xbc\x9b", 32), "\\xc3\\xbc\\x9b");
	ck_assert_str_eq(termsafe(out, sizeof(out), NULL, 32), "");
	/* a 4-byte field without a NUL */
	ck_assert_str_eq(termsafe(out, sizeof(out), "abcdefgh", 4), "abcd");
}
END_TEST

START_TEST(test_cut)
{
	char out[7];

	/* "a" + "\x1b" (4) = 5, + "\x1b" would be 9: cut before it, never inside */
	ck_assert_str_eq(termsafe(out, sizeof(out), "a\x1b\x1b", 8), "a\\x1b");
	ck_assert_str_eq(termsafe(out, 1, "abc", 8), "");
}
END_TEST

static Suite *termsafe_suite(void)
{
	Suite *s = suite_create("termsafe");
	TCase *tc = tcase_create("escape");

	tcase_add_test(tc, test_escapes);
	tcase_add_test(tc, test_cut);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(termsafe_suite());
}
