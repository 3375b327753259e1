/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/agent/agent's command line: `agent --passive` is documented in --help and refuses
 * what would measure (--cpus). The agent's channel itself (ports, region, clock) runs in the test VMs; its
 * clock responder is guest/dtl/clockresp, tested in tests/unit/guest/dtl/check_dtl.c.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent/agent.h"
#include "cli/exitcode.h"

/* Run agent_main with argv, stdout into out (cap bytes). Returns its exit code. */
static int run_agent(char **argv, char *out, size_t cap)
{
	int argc = 0, rc;
	FILE *f = tmpfile();
	size_t n;

	ck_assert_ptr_nonnull(f);
	while (argv[argc])
		argc++;
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);

	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fileno(f), STDOUT_FILENO), 0);
	rc = agent_main(argc, argv);
	fflush(stdout);
	ck_assert_int_ge(dup2(saved, STDOUT_FILENO), 0);
	close(saved);
	rewind(f);
	n = fread(out, 1, cap - 1, f);
	out[n] = 0;
	fclose(f);
	return rc;
}

START_TEST(test_help_passive)
{
	char *argv[] = { "agent", "--help", NULL };
	char out[8192];

	ck_assert_int_eq(run_agent(argv, out, sizeof(out)), EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out, "vnoise-guest agent --passive"));
	ck_assert_ptr_nonnull(strstr(out, "--passive          never measure"));
	ck_assert_ptr_nonnull(strstr(out, "--idle"));
}
END_TEST

START_TEST(test_passive_refuses_cpus)
{
	char *argv[] = { "agent", "--passive", "--cpus", "0", NULL };
	char *argv2[] = { "agent", "--passive", "-c0", NULL };
	char out[256];

	ck_assert_int_eq(run_agent(argv, out, sizeof(out)), EXIT_USAGE);
	ck_assert_int_eq(run_agent(argv2, out, sizeof(out)), EXIT_USAGE);
}
END_TEST

START_TEST(test_bad_option)
{
	char *argv[] = { "agent", "--passive", "--json", NULL };
	char out[256];

	ck_assert_int_eq(run_agent(argv, out, sizeof(out)), EXIT_USAGE);
}
END_TEST

static Suite *agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("cli");

	tcase_add_test(tc, test_help_passive);
	tcase_add_test(tc, test_passive_refuses_cpus);
	tcase_add_test(tc, test_bad_option);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(agent_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
