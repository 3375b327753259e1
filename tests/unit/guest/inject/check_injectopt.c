/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/inject/injectopt: the pure `vnoise-guest inject` option parser. TCases: valid combinations
 * (values, "--x=v" form, defaults, description strings), mode rules (missing --cpu, no mode, both modes,
 * --spike without --every), strict numbers (junk, signs, overflow, decimals), ranges (level 0 and > 100,
 * spike >= period, fifo 1..99, comm length) and argv structure (unknown options, repeats, missing values).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "inject/injectopt.h"

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])))

static struct inject_params P;
static char E[256];

/* Parse a NULL-free argv literal; returns injectopt_parse's result. */
#define PARSE(...)                                                     \
	({                                                             \
		char *argv_[] = { "inject", __VA_ARGS__ };             \
		injectopt_parse(ARGC(argv_), argv_, &P, E, sizeof(E)); \
	})

#define EXPECT_FAIL(substr, ...)                                                              \
	do {                                                                                  \
		ck_assert_int_eq(PARSE(__VA_ARGS__), -EINVAL);                                \
		ck_assert_msg(strstr(E, substr) != NULL, "error '%s' lacks '%s'", E, substr); \
		ck_assert_ptr_null(strchr(E, '\n'));                                          \
	} while (0)

START_TEST(test_level_basic)
{
	ck_assert_int_eq(PARSE("--cpu", "1", "--level", "30"), 0);
	ck_assert_uint_eq(P.cpu, 1);
	ck_assert_int_eq(P.mode, INJECT_MODE_LEVEL);
	ck_assert_uint_eq(P.busy_ns, 300000000ull);
	ck_assert_uint_eq(P.period_ns, 1000000000ull);
	ck_assert_uint_eq(P.duration_ns, 0);
	ck_assert_int_eq(P.fifo_prio, 0);
	ck_assert_str_eq(P.comm, "vnoise-inject");
	ck_assert_int_eq(P.quiet, 0);
	ck_assert_int_eq(P.help, 0);
	ck_assert_str_eq(E, "");
}
END_TEST

START_TEST(test_level_fraction)
{
	char d[64];

	ck_assert_int_eq(PARSE("--cpu=0", "--level=0.05"), 0);
	ck_assert_uint_eq(P.busy_ns, 500000ull); /* 0.05% of 1 s */
	injectopt_describe(&P, d, sizeof(d));
	ck_assert_str_eq(d, "level 0.05%");
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "100"), 0);
	ck_assert_uint_eq(P.busy_ns, 1000000000ull);
	injectopt_describe(&P, d, sizeof(d));
	ck_assert_str_eq(d, "level 100%");
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "0.0000001"), 0);
	ck_assert_uint_eq(P.busy_ns, 1);
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "12.5"), 0);
	injectopt_describe(&P, d, sizeof(d));
	ck_assert_str_eq(d, "level 12.5%");
}
END_TEST

START_TEST(test_spike_all_options)
{
	char d[64];

	ck_assert_int_eq(PARSE("--spike", "200", "--every", "20ms", "--cpu", "3", "--fifo", "50",
			       "--duration", "2.5s", "--comm", "noisy", "--quiet"),
			 0);
	ck_assert_uint_eq(P.cpu, 3);
	ck_assert_int_eq(P.mode, INJECT_MODE_SPIKE);
	ck_assert_uint_eq(P.busy_ns, 200000ull);
	ck_assert_uint_eq(P.period_ns, 20000000ull);
	ck_assert_uint_eq(P.duration_ns, 2500000000ull);
	ck_assert_int_eq(P.fifo_prio, 50);
	ck_assert_str_eq(P.comm, "noisy");
	ck_assert_int_eq(P.quiet, 1);
	injectopt_describe(&P, d, sizeof(d));
	ck_assert_str_eq(d, "spike 200us/20ms");
	/* tiny buffer: truncated, still terminated */
	injectopt_describe(&P, d, 4);
	ck_assert_str_eq(d, "spi");
}
END_TEST

START_TEST(test_limits_ok)
{
	ck_assert_int_eq(PARSE("--cpu", "0", "--spike", "19999", "--every", "20ms"), 0);
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "1", "--fifo", "1"), 0);
	ck_assert_int_eq(P.fifo_prio, 1);
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "1", "--fifo", "99"), 0);
	ck_assert_int_eq(P.fifo_prio, 99);
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "1", "--comm", "123456789012345"), 0);
	ck_assert_str_eq(P.comm, "123456789012345");
	ck_assert_int_eq(PARSE("--cpu", "65535", "--level", "1"), 0);
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "1", "--duration", "1s"), 0);
	ck_assert_uint_eq(P.duration_ns, 1000000000ull);
	ck_assert_int_eq(PARSE("--cpu", "0", "--level", "1", "--duration", "0.000000001s"), 0);
	ck_assert_uint_eq(P.duration_ns, 1);
}
END_TEST

START_TEST(test_help)
{
	ck_assert_int_eq(PARSE("--help"), 0);
	ck_assert_int_eq(P.help, 1);
	ck_assert_int_eq(PARSE("--cpu", "junk", "-h"), 0);
	ck_assert_int_eq(P.help, 1);
	ck_assert_ptr_nonnull(strstr(injectopt_usage(), "--level"));
}
END_TEST

START_TEST(test_modes)
{
	EXPECT_FAIL("missing --cpu", "--level", "10");
	EXPECT_FAIL("required", "--cpu", "0");
	EXPECT_FAIL("exclusive", "--cpu", "0", "--level", "10", "--spike", "100", "--every",
		    "10ms");
	EXPECT_FAIL("exclusive", "--cpu", "0", "--level", "10", "--every", "10ms");
	EXPECT_FAIL("together", "--cpu", "0", "--spike", "100");
	EXPECT_FAIL("together", "--cpu", "0", "--every", "100ms");
}
END_TEST

START_TEST(test_junk_numbers)
{
	EXPECT_FAIL("--cpu '10x'", "--cpu", "10x", "--level", "1");
	EXPECT_FAIL("not a valid number", "--cpu", "", "--level", "1");
	EXPECT_FAIL("not a valid number", "--cpu", " 1", "--level", "1");
	EXPECT_FAIL("not a valid number", "--cpu", "+1", "--level", "1");
	EXPECT_FAIL("not a valid number", "--cpu", "0x1", "--level", "1");
	EXPECT_FAIL("--level '10x'", "--cpu", "1", "--level", "10x");
	EXPECT_FAIL("--level", "--cpu", "1", "--level", "1.");
	EXPECT_FAIL("--level", "--cpu", "1", "--level", ".5");
	EXPECT_FAIL("--level", "--cpu", "1", "--level", "1.2.3");
	EXPECT_FAIL("--level", "--cpu", "1", "--level", "1e1");
	EXPECT_FAIL("--level", "--cpu", "1", "--level", "0.00000001"); /* below 1 ns/s */
	EXPECT_FAIL("--spike", "--cpu", "1", "--spike", "10usec", "--every", "20ms");
	EXPECT_FAIL("--every", "--cpu", "1", "--spike", "10", "--every", "20msec");
	EXPECT_FAIL("--fifo", "--cpu", "1", "--level", "5", "--fifo", "5x");
	EXPECT_FAIL("--duration", "--cpu", "1", "--level", "5", "--duration", "1sec");
}
END_TEST

START_TEST(test_negative)
{
	EXPECT_FAIL("--cpu '-1'", "--cpu", "-1", "--level", "1");
	EXPECT_FAIL("--level", "--cpu", "1", "--level", "-5");
	EXPECT_FAIL("--spike", "--cpu", "1", "--spike", "-5", "--every", "10ms");
	EXPECT_FAIL("--every", "--cpu", "1", "--spike", "5", "--every", "-10");
	EXPECT_FAIL("--fifo", "--cpu", "1", "--level", "5", "--fifo", "-1");
	EXPECT_FAIL("--duration", "--cpu", "1", "--level", "5", "--duration", "-1");
}
END_TEST

START_TEST(test_overflow)
{
	EXPECT_FAIL("out of range", "--cpu", "18446744073709551616", "--level", "1");
	EXPECT_FAIL("out of range", "--cpu", "99999999999999999999999", "--level", "1");
	EXPECT_FAIL("out of range", "--cpu", "65536", "--level", "1");
	EXPECT_FAIL("out of range", "--cpu", "4294967296", "--level", "1");
	EXPECT_FAIL("--level", "--cpu", "1", "--level", "18446744073709551616");
	EXPECT_FAIL("--every", "--cpu", "1", "--spike", "5", "--every", "18446744073709551617ms");
	EXPECT_FAIL("--every", "--cpu", "1", "--spike", "5", "--every", "3600001ms");
	EXPECT_FAIL("--spike", "--cpu", "1", "--spike", "18446744073709551616", "--every", "10ms");
	EXPECT_FAIL("--duration", "--cpu", "1", "--level", "5", "--duration", "18446744074s");
	EXPECT_FAIL("--fifo", "--cpu", "1", "--level", "5", "--fifo", "4294967297");
}
END_TEST

START_TEST(test_ranges)
{
	EXPECT_FAIL("(0, 100]", "--cpu", "1", "--level", "0");
	EXPECT_FAIL("(0, 100]", "--cpu", "1", "--level", "0.0");
	EXPECT_FAIL("(0, 100]", "--cpu", "1", "--level", "100.0000001");
	EXPECT_FAIL("(0, 100]", "--cpu", "1", "--level", "101");
	EXPECT_FAIL("shorter", "--cpu", "1", "--spike", "20000", "--every", "20ms");
	EXPECT_FAIL("shorter", "--cpu", "1", "--spike", "30000", "--every", "20ms");
	EXPECT_FAIL("> 0", "--cpu", "1", "--spike", "0", "--every", "20ms");
	EXPECT_FAIL("> 0", "--cpu", "1", "--spike", "10", "--every", "0");
	EXPECT_FAIL("1..99", "--cpu", "1", "--level", "5", "--fifo", "0");
	EXPECT_FAIL("1..99", "--cpu", "1", "--level", "5", "--fifo", "100");
	EXPECT_FAIL("> 0", "--cpu", "1", "--level", "5", "--duration", "0");
	EXPECT_FAIL("1..15", "--cpu", "1", "--level", "5", "--comm", "1234567890123456");
	EXPECT_FAIL("1..15", "--cpu", "1", "--level", "5", "--comm", "");
}
END_TEST

START_TEST(test_argv_structure)
{
	EXPECT_FAIL("unknown option '--bogus'", "--cpu", "1", "--level", "5", "--bogus");
	EXPECT_FAIL("unknown option '--cpus'", "--cpus", "1", "--level", "5");
	EXPECT_FAIL("unexpected argument 'extra'", "--cpu", "1", "--level", "5", "extra");
	EXPECT_FAIL("more than once", "--cpu", "1", "--level", "5", "--cpu", "0");
	EXPECT_FAIL("needs a value", "--level", "5", "--cpu");
	EXPECT_FAIL("takes no value", "--cpu", "1", "--level", "5", "--quiet=1");
	/* err may be absent */
	{
		char *argv[] = { "inject", "--cpu" };

		ck_assert_int_eq(injectopt_parse(ARGC(argv), argv, &P, NULL, 0), -EINVAL);
	}
	/* long error text is truncated and terminated */
	{
		char small[8];
		char *argv[] = { "inject", "--level", "1" };

		ck_assert_int_eq(injectopt_parse(ARGC(argv), argv, &P, small, sizeof(small)),
				 -EINVAL);
		ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	}
}
END_TEST

/* The common convention (docs/CLI.md): the time rule, -P, -d and the deprecated --fifo. */
START_TEST(test_convention)
{
	char out[256];
	FILE *tmp;
	int saved, n;

	EXPECT_FAIL("--every 20: a time without a unit is in microseconds; write 20ms", "--cpu",
		    "1", "--spike", "5", "--every", "20");
	EXPECT_FAIL("--duration 2: a time without a unit", "--cpu", "1", "--level", "5",
		    "--duration", "2");
	EXPECT_FAIL("-d 2: a time without a unit", "--cpu", "1", "--level", "5", "-d", "2");
	ck_assert_int_eq(PARSE("--cpu", "1", "--spike", "1500", "--every", "2.5ms", "-d", "1m"), 0);
	ck_assert_uint_eq(P.busy_ns, 1500000ull);
	ck_assert_uint_eq(P.period_ns, 2500000ull);
	ck_assert_uint_eq(P.duration_ns, 60000000000ull);
	ck_assert_int_eq(PARSE("--cpu", "1", "--level", "5", "-P", "fifo:7", "-q"), 0);
	ck_assert_int_eq(P.fifo_prio, 7);
	ck_assert_int_eq(P.quiet, 1);
	ck_assert_int_eq(PARSE("--cpu", "1", "--level", "5", "--priority", "other"), 0);
	ck_assert_int_eq(P.fifo_prio, 0);
	EXPECT_FAIL("--priority 'rr:3'", "--cpu", "1", "--level", "5", "-P", "rr:3");
	EXPECT_FAIL("--priority 'fifo:0'", "--cpu", "1", "--level", "5", "-P", "fifo:0");
	EXPECT_FAIL("--fifo", "--cpu", "1", "--level", "5", "-P", "fifo:3", "--fifo", "3");
	/* --fifo N still works for one release, with one warning line */
	tmp = tmpfile();
	ck_assert_ptr_nonnull(tmp);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	n = PARSE("--cpu", "1", "--level", "5", "--fifo", "9");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(P.fifo_prio, 9);
	rewind(tmp);
	n = (int)fread(out, 1, sizeof(out) - 1, tmp);
	out[n > 0 ? n : 0] = 0;
	fclose(tmp);
	ck_assert_msg(strstr(out, "warning: --fifo is deprecated, use -P fifo:N\n"), "stderr '%s'",
		      out);
}
END_TEST

static Suite *injectopt_suite(void)
{
	Suite *s = suite_create("injectopt");
	TCase *tc;

	tc = tcase_create("valid");
	tcase_add_test(tc, test_level_basic);
	tcase_add_test(tc, test_level_fraction);
	tcase_add_test(tc, test_spike_all_options);
	tcase_add_test(tc, test_limits_ok);
	tcase_add_test(tc, test_help);
	suite_add_tcase(s, tc);

	tc = tcase_create("modes");
	tcase_add_test(tc, test_modes);
	suite_add_tcase(s, tc);

	tc = tcase_create("numbers");
	tcase_add_test(tc, test_junk_numbers);
	tcase_add_test(tc, test_negative);
	tcase_add_test(tc, test_overflow);
	tcase_add_test(tc, test_ranges);
	suite_add_tcase(s, tc);

	tc = tcase_create("argv");
	tcase_add_test(tc, test_argv_structure);
	tcase_add_test(tc, test_convention);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(injectopt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
