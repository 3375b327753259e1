/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the command line of guest/monitor/monitor (monitor_parse): the targets, the time rule (a
 * bare --period or --duration, once seconds, is rejected; old -p PID points to --pid), the deprecated
 * letters -g and -P (they work and warn) and the common letters.
 */
#include <stdlib.h>
#include "monitor/monitor.h"

#define CLI_PARAMS struct monitor_params
#define CLI_PARSE monitor_parse
#include "cli_check.h"

START_TEST(test_targets)
{
	OK("monitor", "--pid", "12,34", "-C", "/sys/fs/cgroup/a", "--cgroup", "/b", "-c", "0-1");
	ck_assert_int_eq(P.npid, 2);
	ck_assert_int_eq(P.pids[1], 34);
	ck_assert_int_eq(P.ncg, 2);
	ck_assert_str_eq(P.cgroups[1], "/b");
	ck_assert_int_eq(P.ncpus, 2);
	ck_assert_uint_eq(P.period_ns, 1000000000ULL);
	ck_assert_uint_eq(P.duration_ns, 0);
	FAILS("no target", "monitor");
	FAILS("--pid x", "monitor", "--pid", "x");
	FAILS("--cpus 0-x", "monitor", "--cpus", "0-x");
	FAILS("unexpected", "monitor", "--pid", "1", "stray");
	ck_assert_int_eq(parse("monitor", "-h", NULL), 1);
}
END_TEST

START_TEST(test_times)
{
	OK("monitor", "--pid", "1", "-p", "250ms", "-d", "3s", "-j", "-q");
	ck_assert_uint_eq(P.period_ns, 250000000ULL);
	ck_assert_uint_eq(P.duration_ns, 3000000000ULL);
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.quiet, 1);
	ck_assert_int_eq(P.wide, 0);
	OK("monitor", "--pid", "1", "--wide");
	ck_assert_int_eq(P.wide, 1);
	FAILS("-d 2: microseconds 2s", "monitor", "--pid", "1", "-d", "2");
	FAILS("--period 2: 2s", "monitor", "--pid", "1", "--period", "2");
	FAILS("--period 10ms", "monitor", "--pid", "1", "--period", "1ms");
	FAILS("--duration soon", "monitor", "--pid", "1", "--duration", "soon");
	/* -p was the pid: the old usage fails and names --pid */
	FAILS("-p 1234 microseconds --pid 1234", "monitor", "-p", "1234");
}
END_TEST

START_TEST(test_aliases)
{
	char out[512];
	int rc;

	STDERR_OF(out, rc = parse("monitor", "-g", "/x", "-P", "2s", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.cgroups[0], "/x");
	ck_assert_uint_eq(P.period_ns, 2000000000ULL);
	ck_assert_ptr_nonnull(strstr(out, "-g is deprecated, use -C (--cgroup)"));
	ck_assert_ptr_nonnull(strstr(out, "-P is deprecated, use -p (--period)"));
	/* an alias keeps the time rule of its option */
	FAILS("-P 2: 2s", "monitor", "--pid", "1", "-P", "2");
}
END_TEST

static Suite *monitor_suite(void)
{
	Suite *s = suite_create("monitor");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, test_targets);
	tcase_add_test(tc, test_times);
	tcase_add_test(tc, test_aliases);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(monitor_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
