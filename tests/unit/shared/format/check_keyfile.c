/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/format/keyfile: keys parsed and loaded (one per line, comments, bad lines named);
 * a file others may read refused; the key bytes live in pages left out of core dumps (VmFlags "dd") and
 * keyfile_clear() wipes them before unmapping them.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check_main.h"
#include "secmem_check.h"
#include "format/keyfile.h"

#define HEX32 "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

START_TEST(test_parse)
{
	struct keyfile kf;
	char err[160] = "";

	ck_assert_int_eq(keyfile_parse("# keys\n\n7 " HEX32
				       "\n9 0123456789abcdef0123456789abcdef\n",
				       &kf, err, sizeof(err)),
			 0);
	ck_assert_uint_eq(kf.n, 2);
	ck_assert_uint_eq(kf.keys[0].id, 7);
	ck_assert_uint_eq(kf.keys[0].len, 32);
	ck_assert_uint_eq(((const unsigned char *)kf.keys[0].key)[1], 0x11);
	ck_assert_uint_eq(kf.keys[1].len, 16);
	ck_assert_ptr_eq(kf.tab.keys, kf.keys);
	keyfile_clear(&kf);
	ck_assert_uint_eq(kf.n, 0);
	ck_assert_ptr_null(kf.bytes);
	keyfile_clear(&kf); /* idempotent */
	ck_assert_int_eq(keyfile_parse("7 abc\n", &kf, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "line 1: key must be 32 to 128 hex digits (an even number)");
	ck_assert_ptr_null(kf.bytes); /* a failed parse keeps nothing */
	ck_assert_int_eq(keyfile_parse("# none\n", &kf, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "no key in it");
	ck_assert_ptr_null(kf.bytes);
}
END_TEST

/* The bytes are out of core dumps while held, and zero when their pages go back. */
START_TEST(test_key_pages)
{
	struct keyfile kf;
	char err[160];

	ck_assert_int_eq(keyfile_parse("1 " HEX32 "\n", &kf, err, sizeof(err)), 0);
	ck_assert_int_eq(vmflag(kf.keys[0].key, "dd"), 1);
	watch(kf.keys[0].key, kf.keys[0].len);
	keyfile_clear(&kf);
	ck_assert_int_eq(watch_unmapped, 1);
	ck_assert_int_eq(watch_zero, 1);
}
END_TEST

START_TEST(test_load)
{
	char dir[] = "/tmp/check_keyfile.XXXXXX", path[64], err[256];
	struct keyfile kf;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keys", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "3 " HEX32 "\n", 67), 67);
	close(fd);
	ck_assert_int_eq(keyfile_load(path, &kf, err, sizeof(err)), 0);
	ck_assert_uint_eq(kf.n, 1);
	ck_assert_uint_eq(kf.keys[0].id, 3);
	ck_assert_int_eq(vmflag(kf.keys[0].key, "dd"), 1);
	keyfile_clear(&kf);
	ck_assert_int_eq(chmod(path, 0640), 0);
	ck_assert_int_eq(keyfile_load(path, &kf, err, sizeof(err)), -EPERM);
	ck_assert_ptr_nonnull(strstr(err, "group or others may read it"));
	ck_assert_ptr_null(kf.bytes);
	unlink(path);
	ck_assert_int_eq(keyfile_load(path, &kf, err, sizeof(err)), -ENOENT);
	rmdir(dir);
}
END_TEST

static Suite *keyfile_suite(void)
{
	Suite *s = suite_create("keyfile");
	TCase *tc = tcase_create("keys");

	tcase_add_test(tc, test_parse);
	tcase_add_test(tc, test_key_pages);
	tcase_add_test(tc, test_load);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(keyfile_suite());
}
