/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the command-line suites (check_params, check_hostparams). Define CLI_PARAMS (the params struct)
 * and CLI_PARSE (the parse function: (argc, argv, params*, err, errlen) -> 0, 1 or -EINVAL) before including.
 * Gives P (the parsed params), err (its message), parse(arg0, ..., NULL), OK(args...) and
 * FAILS("words", args...): -EINVAL with a one-line message that mentions each word, and
 * STDERR_OF(buf, call): what call wrote on stderr (the warning lines of deprecated aliases), and
 * cli_check_main(suite, repeated): the suite's main.
 */
#ifndef VNOISE_CLI_CHECK_H
#define VNOISE_CLI_CHECK_H

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static CLI_PARAMS P;
static char err[256];

/* CLI_PARSE on the NULL-terminated argument list (the first is the command). */
static int parse(const char *arg0, ...)
{
	char *argv[64];
	int argc = 0;
	const char *a;
	va_list ap;

	va_start(ap, arg0);
	for (a = arg0; a; a = va_arg(ap, const char *)) {
		ck_assert_int_lt(argc, 63);
		argv[argc++] = (char *)a;
	}
	va_end(ap);
	argv[argc] = NULL;
	memset(err, 0, sizeof(err));
	return CLI_PARSE(argc, argv, &P, err, sizeof(err));
}

#define OK(...) ck_assert_msg(parse(__VA_ARGS__, NULL) == 0, "unexpected error: %s", err)

/* The call must fail with -EINVAL and a one-line message that contains each of the words. */
#define FAILS(words, ...)                                                                  \
	do {                                                                               \
		int rc_ = parse(__VA_ARGS__, NULL);                                        \
		ck_assert_msg(rc_ == -EINVAL, "rc %d, want -EINVAL (err '%s')", rc_, err); \
		check_message(words);                                                      \
	} while (0)

static void check_message(const char *words)
{
	char buf[128], *w, *save = NULL;

	ck_assert_msg(err[0], "empty error message");
	ck_assert_msg(!strchr(err, '\n'), "message is not one line: '%s'", err);
	snprintf(buf, sizeof(buf), "%s", words);
	for (w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		ck_assert_msg(strstr(err, w), "message '%s' does not mention '%s'", err, w);
}

/* Run call with stderr going to a temporary file, then read that file into buf (NUL-terminated). */
#define STDERR_OF(buf, call)                                    \
	do {                                                    \
		FILE *tmp_ = tmpfile();                         \
		int saved_, n_;                                 \
                                                                \
		ck_assert_ptr_nonnull(tmp_);                    \
		fflush(stderr);                                 \
		saved_ = dup(2);                                \
		ck_assert_int_ge(saved_, 0);                    \
		ck_assert_int_ge(dup2(fileno(tmp_), 2), 0);     \
		call;                                           \
		fflush(stderr);                                 \
		dup2(saved_, 2);                                \
		close(saved_);                                  \
		rewind(tmp_);                                   \
		n_ = (int)fread(buf, 1, sizeof(buf) - 1, tmp_); \
		buf[n_ > 0 ? n_ : 0] = 0;                       \
		fclose(tmp_);                                   \
	} while (0)

/*
 * Add the test case "repeated" (the test repeated: parses one after the other, getopt state reset) to s and
 * run s in this process, not forked, since repeated calls in one process are part of what is tested.
 * Returns the exit status of main: EXIT_SUCCESS when every test passed.
 */
static inline int cli_check_main(Suite *s, const TTest *repeated)
{
	TCase *tc = tcase_create("repeated");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, repeated);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
