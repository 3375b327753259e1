/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/regionguard: a fault in the armed mapping comes back to the guard, again and
 * again (SIGBUS is not left blocked); a SIGBUS that is not the armed mapping's (another mapping, nothing
 * armed, one sent by kill) kills as before, or goes to the handler that was there before the guard.
 */
#include <check.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check_main.h"
#include "match/regionguard.h"

#define LEN 16384

/* A shared mapping of LEN bytes whose file then shrinks to nothing: every access faults. */
static volatile char *shrunk(void)
{
	char path[] = "/tmp/vnoise-unit-guard-XXXXXX";
	int fd = mkstemp(path);
	void *p;

	ck_assert_int_ge(fd, 0);
	unlink(path);
	ck_assert_int_eq(ftruncate(fd, LEN), 0);
	p = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(ftruncate(fd, 0), 0);
	close(fd);
	return p;
}

START_TEST(test_fault_comes_back)
{
	static struct regionguard g;
	volatile char *p = shrunk();
	static volatile int faults;

	ck_assert_int_eq(regionguard_install(), 0);
	for (int i = 0; i < 3; i++) {
		regionguard_arm(&g, (const void *)p, LEN);
		if (sigsetjmp(g.jb, 0)) {
			faults++;
			continue;
		}
		p[i * 4096] = 1;
		regionguard_disarm();
	}
	ck_assert_int_eq(faults, 3);
}
END_TEST

START_TEST(test_other_mapping_kills)
{
	static struct regionguard g;
	volatile char *p = shrunk(), *q = shrunk();

	ck_assert_int_eq(regionguard_install(), 0);
	regionguard_arm(&g, (const void *)p, LEN);
	if (sigsetjmp(g.jb, 0))
		ck_abort_msg("a fault in another mapping came to the guard");
	(void)q[0];
}
END_TEST

START_TEST(test_kill_kills)
{
	static struct regionguard g;
	volatile char *p = shrunk();

	ck_assert_int_eq(regionguard_install(), 0);
	regionguard_arm(&g, (const void *)p, LEN);
	if (sigsetjmp(g.jb, 0))
		ck_abort_msg("a SIGBUS sent by kill came to the guard");
	raise(SIGBUS);
}
END_TEST

static void before(int sig)
{
	(void)sig;
	_exit(42);
}

/* The handler found at install (the screen's cleanup) still gets the SIGBUS that are not the guard's. */
START_TEST(test_chained)
{
	struct sigaction sa = { .sa_handler = before, .sa_flags = SA_RESETHAND };
	volatile char *p = shrunk();

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGBUS, &sa, NULL), 0);
	ck_assert_int_eq(regionguard_install(), 0);
	(void)p[0];
}
END_TEST

static Suite *regionguard_suite(void)
{
	Suite *s = suite_create("regionguard");
	TCase *tc = tcase_create("guard");

	tcase_add_test(tc, test_fault_comes_back);
	tcase_add_test_raise_signal(tc, test_other_mapping_kills, SIGBUS);
	tcase_add_test_raise_signal(tc, test_kill_kills, SIGBUS);
	tcase_add_exit_test(tc, test_chained, 42);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(regionguard_suite());
}
