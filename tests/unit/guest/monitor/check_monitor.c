/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the command line of guest/monitor/monitor (monitor_parse): the targets, the time rule (a
 * bare --period or --duration, once seconds, is rejected; old -p PID points to --pid), the deprecated
 * letters -g and -P (they work and warn) and the common letters; and monitor_split, a target's row split
 * with the host's time: its parts add up to NOISE exactly, the host's time comes out of steal, then the run.
 */
#include <stdlib.h>
#include <string.h>
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
	ck_assert_int_eq(P.verbose, 0);
	OK("monitor", "--pid", "1", "--wide", "-v", "-v");
	ck_assert_int_eq(P.wide, 1);
	ck_assert_int_eq(P.verbose, 2); /* -v: libbpf's own lines too */
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

#define MS 1000000ull

/* b - a: run 10 ms, IRQ 1 ms and STEAL 2 ms inside it, THREAD 3 ms (the target waited) */
static void row(struct vn_tgt *a, struct vn_tgt *b)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	a->run_ns = 5 * MS;
	b->run_ns = 15 * MS;
	b->ns[VN_CLASS_IRQ] = 1 * MS;
	b->ns[VN_CLASS_STEAL] = 2 * MS;
	b->ns[VN_CLASS_THREAD] = 3 * MS;
}

static uint64_t parts(const struct gapsplit_res *r)
{
	uint64_t s = 0;

	for (int c = 0; c < VN_CLASS_MAX; c++)
		s += r->guest_ns[c];
	for (int k = 0; k < VN_HCLASS_PARTS; k++)
		s += r->hyp_ns[k];
	return s;
}

START_TEST(test_split)
{
	struct vn_tgt a, b;
	struct gapsplit_res r;
	uint64_t n;

	row(&a, &b);
	/* no host time: the guest's noise as it is, the run less its interrupts and steal quiet */
	n = monitor_split(&a, &b, 0, 0, &r);
	ck_assert_uint_eq(n, 6 * MS);
	ck_assert_uint_eq(parts(&r), n);
	ck_assert_uint_eq(r.quiet_ns, 7 * MS);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_STEAL], 2 * MS);
	/* 4.5 ms of host time: 2 ms out of STEAL, 2.5 ms out of the run (the guest saw it as the target's) */
	n = monitor_split(&a, &b, 4 * MS, MS / 2, &r);
	ck_assert_uint_eq(parts(&r), n);
	ck_assert_uint_eq(n, 13 * MS - r.quiet_ns);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_STEAL], 0);
	ck_assert_uint_eq(r.quiet_ns, 7 * MS - 5 * MS / 2);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 4 * MS);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_WAIT], MS / 2);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_IRQ], 1 * MS);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_THREAD], 3 * MS);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HW], 0);
	/* 12 ms: steal and the run give all, the classes the rest pro rata (THREAD 3/4, IRQ 1/4) */
	n = monitor_split(&a, &b, 12 * MS, 0, &r);
	ck_assert_uint_eq(parts(&r), n);
	ck_assert_uint_eq(n, 13 * MS);
	ck_assert_uint_eq(r.quiet_ns, 0);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_THREAD] + r.guest_ns[VN_CLASS_IRQ], 1 * MS);
	ck_assert_uint_eq(r.guest_ns[VN_CLASS_THREAD], 3 * MS / 4);
	/* more host time than the row's wall time: the excess is left out, counted in over_ns */
	n = monitor_split(&a, &b, 20 * MS, 0, &r);
	ck_assert_uint_eq(parts(&r), n);
	ck_assert_uint_eq(n, 13 * MS);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 13 * MS);
	ck_assert_uint_eq(r.over_ns, 7 * MS);
	/* interrupts beyond the run (counters read apart): no quiet time, still exact */
	b.ns[VN_CLASS_IRQ] = 20 * MS;
	n = monitor_split(&a, &b, MS, 0, &r);
	ck_assert_uint_eq(parts(&r), n);
	ck_assert_uint_eq(r.quiet_ns, 0);
}
END_TEST

static Suite *monitor_suite(void)
{
	Suite *s = suite_create("monitor");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, test_targets);
	tcase_add_test(tc, test_times);
	tcase_add_test(tc, test_aliases);
	tcase_add_test(tc, test_split);
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
