/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the command line of guest/mpi/mpi (mpi_parse): defaults, the long-only options, the
 * outputs that exclude each other, the deprecated letters and --out (they work and warn), -o = --output.
 */
#include <stdlib.h>
#include "mpi/mpi.h"

#define CLI_PARAMS struct mpi_params
#define CLI_PARSE mpi_parse
#include "cli_check.h"

START_TEST(test_defaults)
{
	OK("mpi", "--", "true");
	ck_assert_str_eq(P.job, "mpi");
	ck_assert(P.delay_pct == 10.0);
	ck_assert_uint_eq(P.min_delay_ns, 10000);
	ck_assert_uint_ne(P.classes, 0);
	ck_assert_int_eq(P.helper, 1);
	ck_assert_int_eq(P.dtl, 1); /* the DTL is used when the host publishes it */
	ck_assert_uint_eq(P.dtl_wait_ns, 2000000000ull);
	ck_assert_str_eq(P.cmd[0], "true");
	OK("mpi", "mpirun", "-np", "2");
	ck_assert_str_eq(P.cmd[1], "-np");
	FAILS("no command", "mpi", "--job", "x");
}
END_TEST

START_TEST(test_options)
{
	OK("mpi", "--job", "j", "--delay-pct", "20", "--min-noise", "5", "--min-delay", "1ms",
	   "--classes", "irq,thread", "--all", "--output", "f", "--stats", "s", "--no-helper",
	   "--preload", "p", "--", "x");
	ck_assert_str_eq(P.job, "j");
	ck_assert(P.delay_pct == 20.0);
	ck_assert_uint_eq(P.min_noise_ns, 5000);
	ck_assert_uint_eq(P.min_delay_ns, 1000000);
	ck_assert_str_eq(P.output, "f");
	ck_assert_str_eq(P.stats, "s");
	ck_assert_int_eq(P.helper, 0);
	ck_assert_str_eq(P.preload, "p");
	OK("mpi", "--collector", "127.0.0.1:9", "-k", "keys", "--node-id", "7", "--", "x");
	ck_assert_uint_eq(P.node_id, 7);
	ck_assert_int_eq(P.have_node_id, 1);
	FAILS("--output --udp", "mpi", "-o", "f", "--udp", "127.0.0.1:9", "--", "x");
	FAILS("--collector --key-file", "mpi", "--collector", "127.0.0.1:9", "--", "x");
	FAILS("--collector excludes --udp", "mpi", "--collector", "a", "-k", "k", "--udp",
	      "127.0.0.1:9", "--", "x");
	OK("mpi", "--collector", "127.0.0.1:9", "-k", "keys", "-o", "f", "--", "x"); /* a copy */
	FAILS("--classes", "mpi", "--classes", "irq,bogus", "--", "x");
	FAILS("--min-delay", "mpi", "--min-delay", "5s", "--", "x");
	/* The guest-only view, and the bound on the wait for the host's horizon */
	OK("mpi", "--no-dtl", "--dtl-wait", "500ms", "--", "x");
	ck_assert_int_eq(P.dtl, 0);
	ck_assert_uint_eq(P.dtl_wait_ns, 500000000ull);
	FAILS("--dtl-wait", "mpi", "--dtl-wait", "soon", "--", "x");
	/* -o is --output in every command */
	OK("mpi", "-o", "g", "--", "x");
	ck_assert_str_eq(P.output, "g");
	ck_assert_int_eq(parse("mpi", "--help", NULL), 1);
}
END_TEST

START_TEST(test_aliases)
{
	char out[1024];
	int rc;

	STDERR_OF(out, rc = parse("mpi", "-j", "a", "-D", "30", "-m", "1us", "-M", "2us", "-C",
				  "irq", "-a", "--out", "o", "-s", "st", "--", "x", NULL));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(P.job, "a");
	ck_assert(P.delay_pct == 30.0);
	ck_assert_uint_eq(P.min_noise_ns, 1000);
	ck_assert_uint_eq(P.min_delay_ns, 2000);
	ck_assert_str_eq(P.output, "o");
	ck_assert_str_eq(P.stats, "st");
	ck_assert_ptr_nonnull(strstr(out, "-j is deprecated, use --job"));
	ck_assert_ptr_nonnull(strstr(out, "--out is deprecated, use -o (--output)"));
	ck_assert_ptr_nonnull(strstr(out, "-s is deprecated, use --stats"));
	STDERR_OF(out, rc = parse("mpi", "-u", "127.0.0.1:9", "--", "x", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.udp, "127.0.0.1:9");
	ck_assert_ptr_nonnull(strstr(out, "-u is deprecated, use --udp"));
	STDERR_OF(out, rc = parse("mpi", "-c", "127.0.0.1:9", "-k", "k", "--", "x", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.collector, "127.0.0.1:9");
	ck_assert_ptr_nonnull(strstr(out, "-c is deprecated, use --collector"));
}
END_TEST

static Suite *mpi_suite(void)
{
	Suite *s = suite_create("mpi");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_options);
	tcase_add_test(tc, test_aliases);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mpi_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
