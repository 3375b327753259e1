/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/crc32: the standard check value, known vectors shared with zlib, incremental
 * updates equal to one-shot ones, and sensitivity to every single-bit change.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "util/crc32.h"

START_TEST(test_check_value)
{
	ck_assert_uint_eq(crc32_update(0, "123456789", 9), 0xCBF43926u);
}
END_TEST

START_TEST(test_known_vectors)
{
	static const unsigned char zeros[32];
	static const unsigned char ff[4] = { 0xff, 0xff, 0xff, 0xff };

	ck_assert_uint_eq(crc32_update(0, NULL, 0), 0);
	ck_assert_uint_eq(crc32_update(0, "a", 1), 0xE8B7BE43u);
	ck_assert_uint_eq(crc32_update(0, "abc", 3), 0x352441C2u);
	ck_assert_uint_eq(crc32_update(0, "The quick brown fox jumps over the lazy dog", 43),
			  0x414FA339u);
	ck_assert_uint_eq(crc32_update(0, zeros, sizeof(zeros)), 0x190A55ADu);
	ck_assert_uint_eq(crc32_update(0, ff, sizeof(ff)), 0xFFFFFFFFu);
}
END_TEST

START_TEST(test_incremental)
{
	unsigned char buf[1000];
	uint32_t whole, part;
	size_t i, cut;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (unsigned char)(i * 131u + 7u);
	whole = crc32_update(0, buf, sizeof(buf));
	for (cut = 0; cut <= sizeof(buf); cut += 37) {
		part = crc32_update(0, buf, cut);
		part = crc32_update(part, buf + cut, sizeof(buf) - cut);
		ck_assert_uint_eq(part, whole);
	}
	/* an empty update is the identity */
	ck_assert_uint_eq(crc32_update(whole, buf, 0), whole);
}
END_TEST

START_TEST(test_bit_flips_detected)
{
	unsigned char buf[64];
	uint32_t ref;
	size_t bit;

	memset(buf, 0x5a, sizeof(buf));
	ref = crc32_update(0, buf, sizeof(buf));
	for (bit = 0; bit < sizeof(buf) * 8; bit++) {
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		ck_assert_uint_ne(crc32_update(0, buf, sizeof(buf)), ref);
		buf[bit / 8] ^= (unsigned char)(1u << (bit % 8));
	}
	ck_assert_uint_eq(crc32_update(0, buf, sizeof(buf)), ref);
}
END_TEST

static Suite *crc32_suite(void)
{
	Suite *s = suite_create("crc32");
	TCase *tc;

	tc = tcase_create("vectors");
	tcase_add_test(tc, test_check_value);
	tcase_add_test(tc, test_known_vectors);
	suite_add_tcase(s, tc);

	tc = tcase_create("properties");
	tcase_add_test(tc, test_incremental);
	tcase_add_test(tc, test_bit_flips_detected);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(crc32_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
