/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/engine/hostinfo, the run's facts of the views: vnoise-host's own thread ids are this
 * process's tasks (the main thread and a second thread among them), bounded by max.
 */
#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "engine/hostinfo.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static uint32_t other_tid;
static bool done;

static void *other(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	other_tid = (uint32_t)syscall(SYS_gettid);
	pthread_cond_broadcast(&cv);
	while (!done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

START_TEST(test_self_tids)
{
	uint32_t tids[HOSTINFO_MAX_SELF];
	bool main_seen = false, other_seen = false;
	pthread_t th;
	int n;

	ck_assert_int_eq(pthread_create(&th, NULL, other, NULL), 0);
	pthread_mutex_lock(&mu);
	while (!other_tid)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	n = hostinfo_self_tids(tids, HOSTINFO_MAX_SELF);
	ck_assert_int_ge(n, 2);
	for (int i = 0; i < n; i++) {
		main_seen |= tids[i] == (uint32_t)getpid();
		other_seen |= tids[i] == other_tid;
	}
	ck_assert(main_seen);
	ck_assert(other_seen);
	ck_assert_int_eq(hostinfo_self_tids(tids, 1), 1);
	ck_assert_int_eq(hostinfo_self_tids(tids, 0), 0);
	pthread_mutex_lock(&mu);
	done = true;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
}
END_TEST

static Suite *hostinfo_suite(void)
{
	Suite *s = suite_create("hostinfo");
	TCase *tc = tcase_create("self");

	tcase_add_test(tc, test_self_tids);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hostinfo_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
