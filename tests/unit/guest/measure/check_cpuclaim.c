/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/measure/cpuclaim, with a child process as the other sampler: a CPU another process
 * claimed is refused with its pid, its sampler thread and what it is; another CPU is free; the claim goes
 * when the holder ends, even killed (-9); a claim file naming its holder with terminal controls shows "sampler". The real
 * commands' behaviour (exit 8, --force) is tests/integration/sampler_claim.sh.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check_main.h"
#include "tmpdir_check.h"
#include "measure/cpuclaim.h"

static char dir[PATH_MAX];

static void setup(void)
{
	tmpdir_make(dir, sizeof(dir), "check_cpuclaim");
}

static void teardown(void)
{
	tmpdir_remove(dir);
}

/* A child that claims cpu as "agent" with sampler thread 4242, says so on a pipe, then waits to be killed. */
static pid_t holder(int cpu)
{
	int p[2];
	char ok;
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		struct cpuclaim c;
		struct cpuclaim_holder h;

		cpuclaim_init(&c, dir);
		if (cpuclaim_take(&c, cpu, "agent", &h))
			_exit(1);
		cpuclaim_set_tid(&c, cpu, 4242);
		if (write(p[1], "k", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], &ok, 1), 1);
	close(p[0]);
	return pid;
}

START_TEST(test_busy_names_holder)
{
	struct cpuclaim c;
	struct cpuclaim_holder h;
	pid_t child = holder(3);
	int st;

	cpuclaim_init(&c, dir);
	ck_assert_int_eq(cpuclaim_take(&c, 3, "measure", &h), -EBUSY);
	ck_assert_int_eq(h.cpu, 3);
	ck_assert_int_eq(h.pid, child);
	ck_assert_int_eq(h.tid, 4242);
	ck_assert_str_eq(h.what, "agent");
	ck_assert_int_eq(cpuclaim_take(&c, 4, "measure", &h), 0); /* another CPU is free */
	ck_assert_int_eq(kill(child, SIGKILL), 0);
	ck_assert_int_eq(waitpid(child, &st, 0), child);
	ck_assert_int_eq(cpuclaim_take(&c, 3, "measure", &h),
			 0); /* killed: its lock went with it */
	cpuclaim_release(&c);
	child = holder(4); /* released: another process takes it */
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
}
END_TEST

START_TEST(test_garbage_file)
{
	struct cpuclaim c;
	struct cpuclaim_holder h;
	char path[PATH_MAX + 32];
	FILE *f;
	int fd;

	snprintf(path, sizeof(path), "%s/vnoise-sampler-cpu7.lock", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("12 13 \x1b]0;x\x07\n", f); /* a name with terminal controls is not shown */
	fclose(f);
	ck_assert_int_eq(chmod(path, 0600), 0);
	fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0); /* held, as by a process of another build */
	cpuclaim_init(&c, dir);
	ck_assert_int_eq(cpuclaim_take(&c, 7, "measure", &h), -EBUSY);
	ck_assert_int_eq(h.pid, 12);
	ck_assert_str_eq(h.what, "sampler");
	close(fd);
	ck_assert_int_eq(cpuclaim_take(&c, 7, "measure", &h), 0);
	cpuclaim_release(&c);
	/* no such directory: an error the caller says, not a refusal */
	cpuclaim_init(&c, "/nonexistent-vnoise-dir");
	ck_assert_int_eq(cpuclaim_take(&c, 0, "measure", &h), -ENOENT);
}
END_TEST

static Suite *cpuclaim_suite(void)
{
	Suite *s = suite_create("cpuclaim");
	TCase *t = tcase_create("cpuclaim");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_busy_names_holder);
	tcase_add_test(t, test_garbage_file);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(cpuclaim_suite());
}
