/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/lockfile: a new lock file is private (0600, this user's); a private one is
 * kept as it is; one another may open (mode 0644) or a symbolic link is replaced by a private file, the
 * link's target left alone; no directory is an error.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check_main.h"
#include "tmpdir_check.h"
#include "util/lockfile.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 16];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "check_lockfile");
	snprintf(path, sizeof(path), "%s/x.lock", dir);
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

static mode_t mode_of(int fd)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_uint_eq(st.st_uid, geteuid());
	return st.st_mode & 0777;
}

START_TEST(test_new_and_kept)
{
	bool replaced = true;
	struct stat a, b;
	int fd = lockfile_open(path, &replaced);

	ck_assert_int_ge(fd, 0);
	ck_assert(!replaced);
	ck_assert_uint_eq(mode_of(fd), 0600);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	ck_assert_int_eq(fstat(fd, &a), 0);
	close(fd);
	fd = lockfile_open(path, &replaced); /* private: the same file, its bytes kept */
	ck_assert_int_ge(fd, 0);
	ck_assert(!replaced);
	ck_assert_int_eq(fstat(fd, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_int_eq(b.st_size, 1);
	close(fd);
}
END_TEST

START_TEST(test_not_private_replaced)
{
	char target[PATH_MAX + 8];
	bool replaced = false;
	struct stat st;
	int fd;

	fd = open(path, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0644), 0); /* whatever the umask */
	close(fd);
	fd = lockfile_open(path, &replaced);
	ck_assert_int_ge(fd, 0);
	ck_assert(replaced);
	ck_assert_uint_eq(mode_of(fd), 0600);
	close(fd);
	/* a symbolic link: replaced by a file, its target untouched */
	snprintf(target, sizeof(target), "%s/target", dir);
	fd = open(target, O_CREAT | O_WRONLY, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(symlink(target, path), 0);
	fd = lockfile_open(path, &replaced);
	ck_assert_int_ge(fd, 0);
	ck_assert(replaced);
	ck_assert_uint_eq(mode_of(fd), 0600);
	close(fd);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_uint_eq(st.st_mode & 0777, 0644);
	/* no directory there: the error */
	ck_assert_int_lt(lockfile_open("/nonexistent-vnoise-dir/x.lock", &replaced), 0);
}
END_TEST

static Suite *lockfile_suite(void)
{
	Suite *s = suite_create("lockfile");
	TCase *t = tcase_create("lockfile");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_new_and_kept);
	tcase_add_test(t, test_not_private_replaced);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(lockfile_suite());
}
