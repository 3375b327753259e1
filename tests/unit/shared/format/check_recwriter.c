/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/format/recwriter: argument checks (nothing is written by a rejected call), a file
 * that cannot even take its header, and a write error in the middle of a file (sticky, counted, the partial
 * chunk cut off again so that the file ends after its last whole chunk and reads back as truncated there),
 * the file's mode, and a symbolic link refused. Round trips through the reader are in check_recreader.
 */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include "format/recreader.h"
#include "format/recwriter.h"
#include "format/recwriter_priv.h"

static char tmpdir[64];
static char path[128];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/check_recwriter.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/rec.vnr", tmpdir);
}

static void teardown(void)
{
	unlink(path);
	rmdir(tmpdir);
}

START_TEST(test_writer_args)
{
	struct vn_sample s[2];
	struct recfile_writer *w;

	errno = 0;
	ck_assert_ptr_null(recwriter_open("/nonexistent-dir-vnoise/x.vnr"));
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(recwriter_close(NULL, "x=1\n"), 0);
	recwriter_abort(NULL);

	memset(s, 0, sizeof(s));
	w = recwriter_open(path);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(recwriter_chunk(w, VN_CHUNK_END, "a=1\n", 4), -EINVAL);
	ck_assert_int_eq(recwriter_chunk(w, 0, "a=1\n", 4), -EINVAL);
	ck_assert_int_eq(recwriter_chunk(w, VN_CHUNK_META, NULL, 4), -EINVAL);
	ck_assert_int_eq(recwriter_chunk(w, VN_CHUNK_SAMPLES, s, sizeof(s) - 1), -EINVAL);
	ck_assert_int_eq(recwriter_chunk(w, VN_CHUNK_EVENTS, s, sizeof(s)), -EINVAL); /* 48 % 56 */
	ck_assert_int_eq(recwriter_chunk(w, VN_CHUNK_META, s, VN_CHUNK_MAX_PAYLOAD + 1), -EMSGSIZE);
	ck_assert_int_eq(recwriter_chunk(NULL, VN_CHUNK_META, s, 1), -EINVAL);
	/* nothing was written by the rejected calls */
	ck_assert_uint_eq(recwriter_chunks(w), 0);
	ck_assert_uint_eq(recwriter_bytes(w), sizeof(struct vn_rec_header));
	ck_assert_int_eq(recwriter_chunk(w, VN_CHUNK_SAMPLES, s, sizeof(s)), 0);
	ck_assert_int_eq(recwriter_close(w, "samples=2\n"), 0);
}
END_TEST

START_TEST(test_write_error)
{
	struct recfile_writer *w;

	if (access("/dev/full", W_OK) != 0)
		return;
	w = recwriter_open("/dev/full");
	/* the header write itself fails on /dev/full */
	ck_assert_ptr_null(w);
	ck_assert_int_eq(errno, ENOSPC);
}
END_TEST

START_TEST(test_write_error_midway)
{
	struct rlimit lim, old;
	struct recfile_writer *w;
	struct recfile_reader *r;
	struct recfile_chunk c;
	char meta[100];
	int rc[4], set, sticky;
	uint64_t lost, chunks, bytes;
	struct stat st;

	/*
	 * The file may not grow past 200 bytes, so the second chunk is cut short. The limit also hits
	 * Check's own result file, so nothing is asserted until it is lifted again.
	 */
	memset(meta, 'x', sizeof(meta));
	meta[0] = 'a';
	meta[1] = '=';
	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 200;
	w = recwriter_open(path);
	ck_assert_ptr_nonnull(w);
	set = setrlimit(RLIMIT_FSIZE, &lim);
	rc[0] = recwriter_chunk(w, VN_CHUNK_META, meta, sizeof(meta));
	rc[1] = recwriter_chunk(w, VN_CHUNK_META, meta, sizeof(meta));
	rc[2] = recwriter_chunk(w, VN_CHUNK_META, meta, 1);
	sticky = recwriter_error(w);
	lost = recwriter_lost(w);
	chunks = recwriter_chunks(w);
	bytes = recwriter_bytes(w);
	rc[3] = recwriter_close(w, "x=1\n");
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &old), 0);
	ck_assert_int_eq(set, 0);
	ck_assert_int_eq(rc[0], 0);
	ck_assert_int_eq(rc[1], -EFBIG);
	ck_assert_int_eq(rc[2], -EFBIG);
	ck_assert_int_eq(rc[3], -EFBIG);
	ck_assert_int_eq(sticky, -EFBIG);
	ck_assert_uint_eq(lost, 2); /* the chunk that failed and the one refused after */
	ck_assert_uint_eq(chunks, 1);
	ck_assert_uint_eq(bytes, 196);
	/* the 4 bytes of chunk 1 that fitted were cut off: the file ends after its last whole chunk */
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 196);
	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_int_eq(recreader_next(r, &c), -ENODATA);
	ck_assert_str_eq(recreader_error(r),
			 "truncated at offset 196 after 1 chunks: no end marker "
			 "(the writer did not close the file)");
	recreader_close(r);
}
END_TEST

/* The file is created 0640 (whatever the umask); a symbolic link is refused and its target kept. */
START_TEST(test_file_mode_link)
{
	char target[160], link_path[160];
	struct recfile_writer *w;
	struct stat st;
	mode_t old = umask(0);

	w = recwriter_open(path);
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(recwriter_close(w, NULL), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	snprintf(target, sizeof(target), "%s/victim", tmpdir);
	snprintf(link_path, sizeof(link_path), "%s/link.vnr", tmpdir);
	ck_assert_int_eq(rename(path, target), 0);
	ck_assert_int_eq(symlink(target, link_path), 0);
	errno = 0;
	ck_assert_ptr_null(recwriter_open(link_path));
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(stat(target, &st), 0);
	ck_assert_int_gt(st.st_size, 0); /* not truncated through the link */
	unlink(link_path);
	unlink(target);
	umask(old);
	ck_assert_int_eq(recwriter_error(NULL), 0);
	ck_assert_uint_eq(recwriter_lost(NULL), 0);
}
END_TEST

static Suite *recwriter_suite(void)
{
	Suite *s = suite_create("recwriter");
	TCase *tc;

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_writer_args);
	tcase_add_test(tc, test_write_error);
	tcase_add_test(tc, test_write_error_midway);
	tcase_add_test(tc, test_file_mode_link);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(recwriter_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
