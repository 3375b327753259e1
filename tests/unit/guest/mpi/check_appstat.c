/* SPDX-License-Identifier: MIT */
/*
 * appstat: per-thread call statistics and their JSON line (guest/mpi/appstat).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/appstat.h"
#include "mpi/appstat_priv.h"

START_TEST(test_add)
{
	struct appstat s;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(appstat_add(&s, VN_APP_MPI_BARRIER, 300, 0x1000, 7), 0);
	ck_assert_int_eq(appstat_add(&s, VN_APP_MPI_BARRIER, 100, 0x2000, 8), 0);
	ck_assert_int_eq(appstat_add(&s, VN_APP_MPI_BARRIER, 200, 0x3000, 9), 0);
	ck_assert_uint_eq(s.ev[VN_APP_MPI_BARRIER].count, 3);
	ck_assert_uint_eq(s.ev[VN_APP_MPI_BARRIER].total_ns, 600);
	ck_assert_uint_eq(s.ev[VN_APP_MPI_BARRIER].min_ns, 100);
	ck_assert_uint_eq(s.ev[VN_APP_MPI_BARRIER].max_ns, 300);
	ck_assert_uint_eq(s.last_pc[VN_APP_MPI_BARRIER], 0x3000);
	ck_assert_uint_eq(s.last_arg[VN_APP_MPI_BARRIER], 9);
	/* a zero-length call is a minimum too */
	ck_assert_int_eq(appstat_add(&s, VN_APP_PTHREAD_JOIN, 0, 0, 0), 0);
	ck_assert_int_eq(appstat_add(&s, VN_APP_PTHREAD_JOIN, 5, 0, 0), 0);
	ck_assert_uint_eq(s.ev[VN_APP_PTHREAD_JOIN].min_ns, 0);
	ck_assert_int_eq(appstat_add(&s, VN_APP_MAX, 1, 0, 0), -1);
	ck_assert_str_eq(appstat_name(VN_APP_PTHREAD_COND_WAIT), "pthread_cond_wait");
	ck_assert_str_eq(appstat_name(VN_APP_MAX), "?");
}
END_TEST

START_TEST(test_merge)
{
	struct appstat a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	appstat_add(&a, VN_APP_MPI_ALLREDUCE, 50, 1, 1);
	appstat_add(&b, VN_APP_MPI_ALLREDUCE, 10, 2, 2);
	appstat_add(&b, VN_APP_MPI_ALLREDUCE, 90, 3, 3);
	appstat_add(&b, VN_APP_MPI_BCAST, 4, 4, 4);
	appstat_merge(&a, &b);
	ck_assert_uint_eq(a.ev[VN_APP_MPI_ALLREDUCE].count, 3);
	ck_assert_uint_eq(a.ev[VN_APP_MPI_ALLREDUCE].total_ns, 150);
	ck_assert_uint_eq(a.ev[VN_APP_MPI_ALLREDUCE].min_ns, 10);
	ck_assert_uint_eq(a.ev[VN_APP_MPI_ALLREDUCE].max_ns, 90);
	ck_assert_uint_eq(a.ev[VN_APP_MPI_BCAST].count, 1);
	ck_assert_uint_eq(a.ev[VN_APP_MPI_BCAST].min_ns, 4);
}
END_TEST

START_TEST(test_json)
{
	struct appstat s;
	char buf[2048];
	int n;

	memset(&s, 0, sizeof(s));
	appstat_add(&s, VN_APP_PTHREAD_MUTEX_LOCK, 30, 0xabc, 0xdef);
	appstat_add(&s, VN_APP_PTHREAD_MUTEX_LOCK, 10, 0xabc, 0xdef);
	n = appstat_json(&s, 12, 13, 2, "a\"b\\c\n", buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq((size_t)n, strlen(buf));
	ck_assert_str_eq(buf,
			 "{\"schema\":\"vnoise.app/1\",\"pid\":12,\"tid\":13,\"rank\":2,\"comm\":"
			 "\"a\\\"b\\\\c\\u000a\",\"events\":[{\"event\":\"pthread_mutex_lock\","
			 "\"id\":9,\"count\":2,\"total_ns\":40,\"min_ns\":10,\"max_ns\":30,"
			 "\"avg_ns\":20,\"last_pc\":2748,\"last_arg\":3567}]}\n");
	/* nothing called: an empty list */
	memset(&s, 0, sizeof(s));
	n = appstat_json(&s, 1, 1, -1, NULL, buf, sizeof(buf));
	ck_assert_str_eq(
	    buf, "{\"schema\":\"vnoise.app/1\",\"pid\":1,\"tid\":1,\"rank\":-1,\"comm\":\"\","
		 "\"events\":[]}\n");
	/* too small a buffer is said, never a cut line taken for a whole one */
	ck_assert_int_eq(appstat_json(&s, 1, 1, -1, "x", buf, 20), -ENOSPC);
	ck_assert_int_eq(appstat_json(&s, 1, 1, -1, "x", buf, 0), -ENOSPC);
}
END_TEST

static Suite *appstat_suite(void)
{
	Suite *s = suite_create("appstat");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_add);
	tcase_add_test(tc, test_merge);
	tcase_add_test(tc, test_json);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(appstat_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
