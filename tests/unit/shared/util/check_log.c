/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/log: every message is one line "prog: tag: text" on stderr (never stdout), the
 * verbosity gates info and debug, long messages are truncated to one line, and concurrent messages do not
 * interleave. stderr and stdout are captured by dup2-ing temporary files over fds 2 and 1.
 */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/log.h"

static char cap[1 << 18];
static char cap_out[4096];
static FILE *tmp_err, *tmp_out;
static int saved_err = -1, saved_out = -1;

static void cap_start(void)
{
	fflush(stderr);
	fflush(stdout);
	tmp_err = tmpfile();
	tmp_out = tmpfile();
	ck_assert_ptr_nonnull(tmp_err);
	ck_assert_ptr_nonnull(tmp_out);
	saved_err = dup(STDERR_FILENO);
	saved_out = dup(STDOUT_FILENO);
	ck_assert_int_ge(saved_err, 0);
	ck_assert_int_ge(saved_out, 0);
	ck_assert_int_ge(dup2(fileno(tmp_err), STDERR_FILENO), 0);
	ck_assert_int_ge(dup2(fileno(tmp_out), STDOUT_FILENO), 0);
}

static size_t slurp(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	ck_assert_msg(feof(f) || n < len - 1, "capture buffer too small");
	buf[n] = '\0';
	fclose(f);
	return n;
}

/* Restores stderr and stdout; returns what went to stderr (stdout is in cap_out). */
static const char *cap_end(void)
{
	fflush(stderr);
	fflush(stdout);
	dup2(saved_err, STDERR_FILENO);
	dup2(saved_out, STDOUT_FILENO);
	close(saved_err);
	close(saved_out);
	saved_err = saved_out = -1;
	slurp(tmp_err, cap, sizeof(cap));
	slurp(tmp_out, cap_out, sizeof(cap_out));
	return cap;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* log_reason: formats into the caller's buffer, cuts to fit, accepts no buffer at all */
START_TEST(test_reason)
{
	char err[8] = "xxxxxxx";

	log_reason(err, sizeof(err), "%s %d", "port", 70000);
	ck_assert_str_eq(err, "port 70");
	log_reason(err, 0, "%s", "untouched");
	ck_assert_str_eq(err, "port 70");
	log_reason(NULL, 8, "%s", "nowhere");
}
END_TEST

START_TEST(test_default_prog)
{
	log_set_verbosity(0);
	cap_start();
	log_err("boom");
	ck_assert_str_eq(cap_end(), "vnoise: error: boom\n");
}
END_TEST

START_TEST(test_levels)
{
	log_set_prog("vnoise-guest");
	log_set_verbosity(1);
	cap_start();
	log_err("disk %s", "full");
	log_warn("cpu %d offline", 3);
	log_info("measuring %d CPUs", 4);
	log_debug("period %llu ns", 1000000000ULL);
	ck_assert_str_eq(cap_end(), "vnoise-guest: error: disk full\n"
				    "vnoise-guest: warning: cpu 3 offline\n"
				    "vnoise-guest: measuring 4 CPUs\n"
				    "vnoise-guest: debug: period 1000000000 ns\n");
	ck_assert_str_eq(cap_out, ""); /* nothing on stdout */
}
END_TEST

START_TEST(test_empty_message)
{
	log_set_prog("p");
	log_set_verbosity(0);
	cap_start();
	log_info("%s", "");
	log_warn("%s", "");
	ck_assert_str_eq(cap_end(), "p: \np: warning: \n");
}
END_TEST

START_TEST(test_verbosity_quiet)
{
	log_set_prog("p");
	log_set_verbosity(-1);
	ck_assert_int_eq(log_verbosity(), -1);
	cap_start();
	log_err("e");
	log_warn("w");
	log_info("i");
	log_debug("d");
	ck_assert_str_eq(cap_end(), "p: error: e\np: warning: w\n");
}
END_TEST

START_TEST(test_verbosity_default)
{
	log_set_prog("p");
	log_set_verbosity(0);
	ck_assert_int_eq(log_verbosity(), 0);
	cap_start();
	log_err("e");
	log_warn("w");
	log_info("i");
	log_debug("d");
	ck_assert_str_eq(cap_end(), "p: error: e\np: warning: w\np: i\n");
}
END_TEST

START_TEST(test_verbosity_debug)
{
	log_set_prog("p");
	log_set_verbosity(1);
	ck_assert_int_eq(log_verbosity(), 1);
	cap_start();
	log_info("i");
	log_debug("d");
	ck_assert_str_eq(cap_end(), "p: i\np: debug: d\n");
	log_set_verbosity(3);
	ck_assert_int_eq(log_verbosity(), 3);
	cap_start();
	log_debug("d%d", 3);
	ck_assert_str_eq(cap_end(), "p: debug: d3\n");
	log_set_verbosity(0);
	cap_start();
	log_debug("gone");
	ck_assert_str_eq(cap_end(), "");
}
END_TEST

START_TEST(test_long_message)
{
	static char big[20000];
	const char *out;
	size_t len;

	memset(big, 'a', sizeof(big) - 1);
	log_set_prog("p");
	log_set_verbosity(1);
	cap_start();
	log_err("%s", big);
	log_warn("%s%s", big, big);
	log_info("%s", big);
	log_debug("%s", big);
	log_err("after");
	out = cap_end();
	len = strlen(out);
	ck_assert_int_eq(count_lines(out), 5);
	ck_assert_uint_lt(len, 5 * 1100);
	ck_assert_int_eq(strncmp(out, "p: error: aaa", 13), 0);
	ck_assert_ptr_nonnull(strstr(out, "\np: warning: aaa"));
	ck_assert_ptr_nonnull(strstr(out, "\np: aaa"));
	ck_assert_ptr_nonnull(strstr(out, "\np: debug: aaa"));
	ck_assert_int_eq(strcmp(out + len - strlen("\np: error: after\n"), "\np: error: after\n"),
			 0);
}
END_TEST

START_TEST(test_long_prog)
{
	static char prog[3000];
	const char *out;

	memset(prog, 'P', sizeof(prog) - 1);
	log_set_prog(prog);
	cap_start();
	log_err("x%d", 1);
	out = cap_end();
	ck_assert_int_eq(count_lines(out), 1);
	ck_assert_uint_lt(strlen(out), 1100);
	ck_assert_int_eq(out[strlen(out) - 1], '\n');
	log_set_prog("p");
}
END_TEST

#define NTHREADS 4
#define NMSGS 300

static void *writer(void *arg)
{
	long id = (long)arg;
	int i;

	for (i = 0; i < NMSGS; i++)
		log_warn("thread %ld message %d %s", id, i,
			 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	return NULL;
}

START_TEST(test_threads_whole_lines)
{
	pthread_t t[NTHREADS];
	int seen[NTHREADS] = { 0 };
	char *line, *save = NULL;
	long i;

	log_set_prog("p");
	cap_start();
	for (i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, writer, (void *)i), 0);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	cap_end();
	ck_assert_int_eq(count_lines(cap), NTHREADS * NMSGS);
	for (line = strtok_r(cap, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long id;
		int n, end = 0;

		ck_assert_msg(sscanf(line,
				     "p: warning: thread %ld message %d "
				     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx%n",
				     &id, &n, &end) == 2 &&
				  end == (int)strlen(line),
			      "torn line '%s'", line);
		ck_assert_int_ge(id, 0);
		ck_assert_int_lt(id, NTHREADS);
		ck_assert_int_eq(n, seen[id]); /* in order within a thread */
		seen[id]++;
	}
	for (i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(seen[i], NMSGS);
}
END_TEST

static Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc;

	tc = tcase_create("format");
	tcase_add_test(tc, test_default_prog);
	tcase_add_test(tc, test_levels);
	tcase_add_test(tc, test_empty_message);
	suite_add_tcase(s, tc);

	tc = tcase_create("verbosity");
	tcase_add_test(tc, test_verbosity_quiet);
	tcase_add_test(tc, test_verbosity_default);
	tcase_add_test(tc, test_verbosity_debug);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_test(tc, test_long_message);
	tcase_add_test(tc, test_long_prog);
	tcase_add_test(tc, test_threads_whole_lines);
	tcase_add_test(tc, test_reason);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(log_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
