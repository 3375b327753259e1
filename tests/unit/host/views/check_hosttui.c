/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the crash path of host/views/hosttui: a child opens the screen on a pseudo-terminal and
 * gets a fatal signal; it must die of that signal (not exit), and the terminal must be back: the alternate
 * screen left after it was entered, the cursor shown, canonical mode and echo on. Once with curses intact,
 * once with curses' screen already freed (the state a crash may leave): the handler must not need it.
 */
#include <check.h>
#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>
#include "check_main.h"
#include "cmd/hostparams.h"
#include "views/hosttui.h"

enum { INTACT, SCREEN_GONE };

static void child(int how, int sig)
{
	struct rlimit no_core = { 0, 0 };
	struct host_params p;
	struct hosttui *t;
	char err[128];

	setrlimit(RLIMIT_CORE, &no_core);
	setenv("TERM", "xterm", 1);
	memset(&p, 0, sizeof(p));
	p.cmd = HCMD_TOP;
	p.period_ns = 1000000000ull;
	t = hosttui_open(&p, err, sizeof(err));
	if (!t)
		_exit(3);
	if (how == SCREEN_GONE) {
		/* curses' screen freed under the handler's feet (as a corrupted heap can leave it) */
		SCREEN *s = set_term(NULL);

		delscreen(s);
	}
	raise(sig);
	_exit(4);
}

/* The output of the child on the pty (NUL-free text up to cap - 1 bytes), its wait status, the pty's
 * settings after it died (the slave is held open here so that they outlive it). */
static int run(int how, int sig, char *out, size_t cap, struct termios *after)
{
	size_t len = 0;
	int master, slave = -1, status = 0;
	pid_t pid = forkpty(&master, NULL, NULL, NULL);

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		child(how, sig);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	ck_assert_int_ge(slave, 0);
	for (int done = 0; !done;) {
		struct pollfd pf = { master, POLLIN, 0 };
		int r = poll(&pf, 1, 100);

		if (r > 0) {
			ssize_t n = read(master, out + len, cap - 1 - len);

			if (n > 0)
				len += (size_t)n;
		} else if (waitpid(pid, &status, WNOHANG) == pid) {
			done = 1;
		}
		ck_assert_uint_lt(len, cap - 1);
	}
	out[len] = '\0';
	for (size_t i = 0; i < len; i++) /* curses may send NULs as padding */
		if (!out[i])
			out[i] = ' ';
	ck_assert_int_eq(tcgetattr(slave, after), 0);
	close(slave);
	close(master);
	return status;
}

static void check_restored(const char *out, const struct termios *tio)
{
	const char *enter = strstr(out, "\033[?1049h"), *leave;

	ck_assert_msg(enter, "the screen never entered the alternate screen");
	leave = strstr(enter, "\033[?1049l");
	ck_assert_msg(leave, "the alternate screen was not left");
	ck_assert_ptr_nonnull(strstr(enter, "\033[?25h")); /* the cursor shown again */
	ck_assert_msg((tio->c_lflag & (ICANON | ECHO)) == (ICANON | ECHO),
		      "canonical mode and echo not back (c_lflag 0%o)", (unsigned)tio->c_lflag);
}

START_TEST(test_segv_intact)
{
	static char out[65536];
	struct termios tio;
	int st = run(INTACT, SIGSEGV, out, sizeof(out), &tio);

	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV,
		      "status 0x%x, not killed by SIGSEGV", st);
	check_restored(out, &tio);
}
END_TEST

START_TEST(test_bus_screen_gone)
{
	static char out[65536];
	struct termios tio;
	int st = run(SCREEN_GONE, SIGBUS, out, sizeof(out), &tio);

	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS,
		      "status 0x%x, not killed by SIGBUS", st);
	check_restored(out, &tio);
}
END_TEST

static Suite *hosttui_suite(void)
{
	Suite *s = suite_create("hosttui");
	TCase *tc = tcase_create("crash");

	tcase_add_test(tc, test_segv_intact);
	tcase_add_test(tc, test_bus_screen_gone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(hosttui_suite());
}
