/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/actions: every action spelled as documented parses and every wrong spelling is
 * refused with its option's name; a chain runs in order: a signal reaches its target once with the hit's end
 * in si_value, a shell command sees the hit in its environment, continue ends the chain with 1, and an
 * action that fails (a dead pid, a command that exits 1, a trace that fails) stops the chain before the rest.
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check_main.h"
#include "tmpdir_check.h"
#include "util/actions.h"

static char dir[PATH_MAX];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "check_actions");
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

static int parse(struct action_chain *c, const char *arg, char *err)
{
	return actions_parse(c, "--on-threshold", arg, err, 256);
}

START_TEST(test_parse)
{
	struct action_chain c = { 0 };
	char err[256];

	ck_assert_int_eq(parse(&c, "trace", err), 0);
	ck_assert_str_eq(c.a[0].file, ACTIONS_TRACE_FILE);
	ck_assert_int_eq(parse(&c, "trace,file=/tmp/x.txt", err), 0);
	ck_assert_str_eq(c.a[1].file, "/tmp/x.txt");
	ck_assert_int_eq(parse(&c, "signal,num=10,pid=parent", err), 0);
	ck_assert_int_eq(c.a[2].kind, ACTION_SIGNAL);
	ck_assert_int_eq(c.a[2].signum, 10);
	ck_assert_int_eq(c.a[2].pid, 0);
	ck_assert_int_eq(parse(&c, "signal,pid=123,num=12", err), 0);
	ck_assert_int_eq(c.a[3].pid, 123);
	ck_assert_int_eq(parse(&c, "shell,command=echo a,b", err), 0);
	ck_assert_str_eq(c.a[4].command, "echo a,b"); /* the rest, commas too */
	ck_assert_int_eq(actions_continues(&c), 0);
	ck_assert_int_eq(parse(&c, "continue", err), 0);
	ck_assert_int_eq(actions_continues(&c), 1);
	ck_assert_int_eq(c.n, 6);
	/* refused, each with the option's name */
	const char *bad[] = { "",
			      "stop",
			      "trace,file=",
			      "trace,size=3",
			      "trace,file=a,b",
			      "signal",
			      "signal,num=10",
			      "signal,num=0,pid=1",
			      "signal,num=10,pid=me",
			      "signal,num=10,pid=1,x=2",
			      "shell",
			      "shell,command=",
			      "continue,now",
			      NULL };
	for (int i = 0; bad[i]; i++) {
		struct action_chain d = { 0 };

		err[0] = 0;
		ck_assert_msg(parse(&d, bad[i], err) == -EINVAL, "accepted '%s'", bad[i]);
		ck_assert_msg(!strncmp(err, "--on-threshold", 14), "'%s': %s", bad[i], err);
		ck_assert_int_eq(d.n, 0);
	}
	/* a full chain */
	while (c.n < ACTIONS_MAX)
		ck_assert_int_eq(parse(&c, "continue", err), 0);
	ck_assert_int_eq(parse(&c, "continue", err), -EINVAL);
}
END_TEST

static int traced;
static int trace_ok(void *ctx, const char *file, const struct action_hit *hit)
{
	(void)ctx;
	(void)file;
	(void)hit;
	traced++;
	return 0;
}

static int trace_fail(void *ctx, const char *file, const struct action_hit *hit)
{
	(void)ctx;
	(void)file;
	(void)hit;
	traced++;
	return -EIO;
}

START_TEST(test_run)
{
	struct action_chain c = { 0 };
	struct action_hit hit = { 1, 2500000, 123456789012ull };
	char err[256], cmd[PATH_MAX * 2], path[PATH_MAX + 8], sig[64], buf[128];
	sigset_t set;
	siginfo_t si;
	struct timespec zero = { 0, 0 };
	FILE *f;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	snprintf(path, sizeof(path), "%s/env", dir);
	snprintf(cmd, sizeof(cmd),
		 "shell,command=echo \"$VNOISE_HIT_CPU $VNOISE_HIT_NS $VNOISE_HIT_END_NS\" >%s",
		 path);
	snprintf(sig, sizeof(sig), "signal,num=%d,pid=%d", SIGUSR1, (int)getpid());
	ck_assert_int_eq(parse(&c, "trace", err), 0);
	ck_assert_int_eq(parse(&c, sig, err), 0);
	ck_assert_int_eq(parse(&c, cmd, err), 0);
	ck_assert_int_eq(actions_run(&c, "--on-threshold", &hit, trace_ok, NULL), 0);
	ck_assert_int_eq(traced, 1);
	/* the signal: once, with the hit's end */
	ck_assert_int_eq(sigtimedwait(&set, &si, &zero), SIGUSR1);
	ck_assert_uint_eq((uint64_t)(uintptr_t)si.si_value.sival_ptr, hit.end_ns);
	ck_assert_int_eq(sigtimedwait(&set, &si, &zero), -1);
	/* the shell: the hit in its environment */
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	ck_assert_str_eq(buf, "1 2500000 123456789012\n");
	/* continue: 1, and nothing after it runs */
	c.n = 0;
	ck_assert_int_eq(parse(&c, "continue", err), 0);
	ck_assert_int_eq(parse(&c, sig, err), 0);
	ck_assert_int_eq(actions_run(&c, "--on-threshold", &hit, trace_ok, NULL), 1);
	ck_assert_int_eq(sigtimedwait(&set, &si, &zero), -1);
	/* a failing action stops its chain: a command that exits 1, then a dead pid, then a trace */
	c.n = 0;
	ck_assert_int_eq(parse(&c, "shell,command=exit 1", err), 0);
	ck_assert_int_eq(parse(&c, sig, err), 0);
	ck_assert_int_eq(actions_run(&c, "--on-threshold", &hit, trace_ok, NULL), -1);
	ck_assert_int_eq(sigtimedwait(&set, &si, &zero), -1);
	c.n = 0;
	ck_assert_int_eq(parse(&c, "signal,num=10,pid=4194303", err), 0);
	ck_assert_int_eq(parse(&c, "continue", err), 0);
	ck_assert_int_eq(actions_run(&c, "--on-threshold", &hit, trace_ok, NULL), -1);
	c.n = 0;
	traced = 0;
	ck_assert_int_eq(parse(&c, "trace", err), 0);
	ck_assert_int_eq(parse(&c, sig, err), 0);
	ck_assert_int_eq(actions_run(&c, "--on-threshold", &hit, trace_fail, NULL), -1);
	ck_assert_int_eq(traced, 1);
	ck_assert_int_eq(sigtimedwait(&set, &si, &zero), -1);
}
END_TEST

static Suite *actions_suite(void)
{
	Suite *s = suite_create("actions");
	TCase *t = tcase_create("actions");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_parse);
	tcase_add_test(t, test_run);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(actions_suite());
}
