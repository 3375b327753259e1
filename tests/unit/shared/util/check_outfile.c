/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/outfile: a new file gets exactly its mode (umask 0 here, so 0644 would show);
 * a symbolic link is refused (-ELOOP) in place and replaced whole, and what it points to is untouched
 * (not truncated, not appended to); an existing file is truncated or appended to in place and loses the
 * bits beyond the mode; a replaced file is the old one or the new one, never half of one, and leaves no
 * temporary file; a device (a private /dev/null) is written in place, in both ways, and stays a device; the
 * exit codes of write errors.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "check_main.h"
#include "cli/exitcode.h"
#include "util/outfile.h"

static char dir[64], target[128], link_path[128], path[128], null_path[128];

static void put(const char *p, const char *text)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static const char *get(const char *p)
{
	static char buf[256];
	int fd = open(p, O_RDONLY);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

static unsigned mode_of(const char *p)
{
	struct stat st;

	ck_assert_int_eq(stat(p, &st), 0);
	return st.st_mode & 07777;
}

/* The entries of dir (. and .. left out). */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void setup(void)
{
	umask(0);
	strcpy(dir, "/tmp/check_outfile.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(target, sizeof(target), "%s/victim", dir);
	snprintf(link_path, sizeof(link_path), "%s/out.link", dir);
	snprintf(path, sizeof(path), "%s/out", dir);
	put(target, "precious\n");
	ck_assert_int_eq(symlink(target, link_path), 0);
	/* a private /dev/null (c 1 3): the machine's own is never at risk here */
	snprintf(null_path, sizeof(null_path), "%s/null", dir);
	ck_assert_int_eq(mknod(null_path, S_IFCHR | 0666, makedev(1, 3)), 0);
}

static void teardown(void)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	umask(022);
}

START_TEST(test_new_mode)
{
	int fd = outfile_open(path, O_TRUNC, OUTFILE_MODE);

	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_eq(mode_of(path), 0640);
	unlink(path);
	fd = outfile_open(path, O_APPEND, OUTFILE_MODE_PRIVATE);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_eq(mode_of(path), 0600);
	/* umask 077 does not widen it back, and a narrower umask is not needed for 0640 */
	unlink(path);
	umask(077);
	fd = outfile_open(path, 0, OUTFILE_MODE);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_eq(mode_of(path), 0640);
	umask(0);
}
END_TEST

START_TEST(test_link_refused_in_place)
{
	static const int flags[] = { O_TRUNC, O_APPEND, 0 };

	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		ck_assert_int_eq(outfile_open(link_path, flags[i], OUTFILE_MODE), -ELOOP);
		ck_assert_str_eq(get(target), "precious\n");
		ck_assert_uint_eq(mode_of(target), 0644);
	}
	/* a dangling link: nothing is created where it points */
	unlink(target);
	ck_assert_int_eq(outfile_open(link_path, O_TRUNC, OUTFILE_MODE), -ELOOP);
	ck_assert_int_ne(access(target, F_OK), 0);
	ck_assert_str_eq(outfile_strerror(-ELOOP),
			 "a symbolic link (refused: vnoise does not write through links)");
	ck_assert_str_eq(outfile_strerror(-ENOENT), strerror(ENOENT));
}
END_TEST

START_TEST(test_link_refused_replaced)
{
	char tmp[192];

	ck_assert_int_eq(outfile_tmp_open(link_path, tmp, sizeof(tmp), OUTFILE_MODE), -ELOOP);
	ck_assert_str_eq(get(target), "precious\n");
	ck_assert_int_eq(entries(), 3); /* no temporary file left */
	ck_assert_int_eq(outfile_tmp_open(path, tmp, 8, OUTFILE_MODE), -ENAMETOOLONG);
}
END_TEST

START_TEST(test_existing_in_place)
{
	int fd;

	put(path, "old contents\n");
	ck_assert_int_eq(chmod(path, 0666), 0);
	fd = outfile_open(path, O_APPEND, OUTFILE_MODE);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "more\n", 5), 5);
	close(fd);
	ck_assert_str_eq(get(path), "old contents\nmore\n");
	ck_assert_uint_eq(mode_of(path), 0640); /* narrowed */
	ck_assert_int_eq(chmod(path, 0400), 0);
	fd = outfile_open(path, O_TRUNC, OUTFILE_MODE);
	if (fd >= 0) /* root may open a 0400 file: truncated, its mode kept (never widened) */
		close(fd);
	ck_assert_uint_eq(mode_of(path), 0400);
	ck_assert_int_eq(chmod(path, 0600), 0);
	fd = outfile_open(path, O_TRUNC, OUTFILE_MODE);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_str_eq(get(path), "");
	ck_assert_uint_eq(mode_of(path), 0600);
	/* a device is written, its mode left alone */
	fd = outfile_open(null_path, O_TRUNC, OUTFILE_MODE);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_uint_eq(mode_of(null_path), 0666);
	ck_assert_int_eq(outfile_open(path, O_RDWR, OUTFILE_MODE), -EINVAL);
	ck_assert_int_eq(outfile_open("", 0, OUTFILE_MODE), -EINVAL);
}
END_TEST

START_TEST(test_replaced_whole)
{
	char tmp[192];
	struct stat before, after;
	int fd;

	put(path, "old page\n");
	ck_assert_int_eq(stat(path, &before), 0);
	fd = outfile_tmp_open(path, tmp, sizeof(tmp), OUTFILE_MODE);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(strncmp(tmp, path, strlen(path)),
			 0); /* beside it: rename stays in one fs */
	ck_assert_int_eq(write(fd, "new ", 4), 4);
	/* half written: the path still shows the whole old page */
	ck_assert_str_eq(get(path), "old page\n");
	ck_assert_int_eq(write(fd, "page\n", 5), 5);
	close(fd);
	ck_assert_str_eq(get(path), "old page\n");
	ck_assert_int_eq(outfile_tmp_commit(tmp, path), 0);
	ck_assert_str_eq(get(path), "new page\n");
	ck_assert_int_eq(stat(path, &after), 0);
	ck_assert(before.st_ino != after.st_ino); /* a new file, not the old one rewritten */
	ck_assert_uint_eq(mode_of(path), 0640);
	ck_assert_int_eq(entries(), 4); /* victim, its link, null, the page: no temporary file */
	/* a failed rename removes the temporary file */
	fd = outfile_tmp_open(path, tmp, sizeof(tmp), OUTFILE_MODE);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(outfile_tmp_commit(tmp, "/nonexistent/dir/page"), -ENOENT);
	ck_assert_int_ne(access(tmp, F_OK), 0);
	ck_assert_int_eq(entries(), 4);
}
END_TEST

/* A device at the path is written in place: a rename would put a regular file where the device was. */
START_TEST(test_replaced_device)
{
	char tmp[192];
	struct stat st;
	int fd = outfile_tmp_open(null_path, tmp, sizeof(tmp), OUTFILE_MODE);

	ck_assert_int_ge(fd, 0);
	ck_assert_str_eq(tmp, "");
	ck_assert_int_eq(write(fd, "page\n", 5), 5);
	close(fd);
	ck_assert_int_eq(outfile_tmp_commit(tmp, null_path), 0);
	ck_assert_int_eq(stat(null_path, &st), 0);
	ck_assert(S_ISCHR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0666);
	ck_assert_int_eq(entries(), 3);
	ck_assert_int_eq(outfile_tmp_open(dir, tmp, sizeof(tmp), OUTFILE_MODE), -EISDIR);
}
END_TEST

/* A link: its own code; a full disk, a quota or a file size limit: the machine cannot (4); else failed (1). */
START_TEST(test_exit_code)
{
	ck_assert_int_eq(outfile_exit_code(-ELOOP), EXIT_SYMLINK);
	ck_assert_int_eq(outfile_exit_code(-ENOSPC), EXIT_CANNOT);
	ck_assert_int_eq(outfile_exit_code(-EDQUOT), EXIT_CANNOT);
	ck_assert_int_eq(outfile_exit_code(-EFBIG), EXIT_CANNOT);
	ck_assert_int_eq(outfile_exit_code(-EIO), EXIT_FAIL);
	ck_assert_int_eq(outfile_exit_code(-EACCES), EXIT_FAIL);
}
END_TEST

static Suite *outfile_suite(void)
{
	Suite *s = suite_create("outfile");
	TCase *tc = tcase_create("files");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_new_mode);
	tcase_add_test(tc, test_link_refused_in_place);
	tcase_add_test(tc, test_link_refused_replaced);
	tcase_add_test(tc, test_existing_in_place);
	tcase_add_test(tc, test_replaced_whole);
	tcase_add_test(tc, test_replaced_device);
	tcase_add_test(tc, test_exit_code);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(outfile_suite());
}
