/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/progress: the pure parts (times as MM:SS / H:MM:SS, the timed and the steps
 * line, cutting to a width on UTF-8 character boundaries, control characters, NULL-safety) and the drawing
 * on a pseudo terminal put over stderr: "\r" + text cut to the width - 1 + "\033[K", at most every 250 ms,
 * erased by a log line (which then prints at column 0), by progress_clear and progress_end; nothing at all
 * when quiet, short, or when stderr is not a terminal.
 */
#include <check.h>
#include "check_main.h"
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>
#include "util/log.h"
#include "util/monotime.h"
#include "util/progress.h"

#define S 1000000000ULL

/* ---- pure parts ---- */

START_TEST(test_fmt_time)
{
	char b[32], small[4] = "xyz";

	ck_assert_str_eq(progress_fmt_time(b, sizeof(b), 0), "00:00");
	ck_assert_str_eq(progress_fmt_time(b, sizeof(b), 999999999ULL), "00:00");
	ck_assert_str_eq(progress_fmt_time(b, sizeof(b), 59 * S + S / 2), "00:59");
	ck_assert_str_eq(progress_fmt_time(b, sizeof(b), 60 * S), "01:00");
	ck_assert_str_eq(progress_fmt_time(b, sizeof(b), 3599 * S), "59:59");
	ck_assert_str_eq(progress_fmt_time(b, sizeof(b), 3600 * S), "1:00:00");
	ck_assert_str_eq(progress_fmt_time(b, sizeof(b), 100 * 3600 * S + 61 * S), "100:01:01");
	ck_assert_str_eq(progress_fmt_time(small, sizeof(small), 60 * S), ""); /* does not fit */
	ck_assert_ptr_null(progress_fmt_time(NULL, 8, 0));
	ck_assert_ptr_eq(progress_fmt_time(b, 0, 0), b);
}
END_TEST

START_TEST(test_truncate)
{
	char a[] = "abcdef", u[] = "h\xc3\xa9llo", e[] = "";

	ck_assert_uint_eq(progress_truncate(a, 0), 6);
	ck_assert_str_eq(a, "abcdef");
	ck_assert_uint_eq(progress_truncate(a, 10), 6);
	ck_assert_uint_eq(progress_truncate(a, 4), 4);
	ck_assert_str_eq(a, "abcd");
	/* é is two bytes, one column: never cut in the middle */
	ck_assert_uint_eq(progress_truncate(u, 2), 3);
	ck_assert_str_eq(u, "h\xc3\xa9");
	ck_assert_uint_eq(progress_truncate(u, 1), 1);
	ck_assert_str_eq(u, "h");
	ck_assert_uint_eq(progress_truncate(e, 3), 0);
	ck_assert_uint_eq(progress_truncate(NULL, 3), 0);
}
END_TEST

START_TEST(test_format_timed)
{
	char b[256];
	size_t n;

	n = progress_format(b, sizeof(b), "record", 12 * S + S / 3, 60 * S, "recording to r.vnr",
			    0);
	ck_assert_str_eq(b, "record: 00:12 / 01:00, 00:48 left - recording to r.vnr");
	ck_assert_uint_eq(n, strlen(b));
	/* left rounds up: 0.1 s in is still 01:00 left, the last 0.1 s is 00:01 */
	progress_format(b, sizeof(b), "measure", S / 10, 60 * S, NULL, 0);
	ck_assert_str_eq(b, "measure: 00:00 / 01:00, 01:00 left");
	progress_format(b, sizeof(b), "measure", 59 * S + 9 * S / 10, 60 * S, "", 0);
	ck_assert_str_eq(b, "measure: 00:59 / 01:00, 00:01 left");
	/* past the end (the last drain): the total, nothing left */
	progress_format(b, sizeof(b), "record", 75 * S, 60 * S, "x", 0);
	ck_assert_str_eq(b, "record: 01:00 / 01:00, 00:00 left - x");
	/* no label */
	progress_format(b, sizeof(b), NULL, 0, 3 * 3600 * S, NULL, 0);
	ck_assert_str_eq(b, "00:00 / 3:00:00, 3:00:00 left");
	/* a file name with a newline or an escape cannot move the cursor */
	progress_format(b, sizeof(b), "re\tc", 0, 10 * S, "to a\nb\033[2J", 0);
	ck_assert_str_eq(b, "re?c: 00:00 / 00:10, 00:10 left - to a?b?[2J");
}
END_TEST

START_TEST(test_format_width)
{
	const char *full = "record: 00:12 / 01:00, 00:48 left - recording to r.vnr";
	char b[256], tiny[8];
	size_t n;

	/* cols - 1 columns: the last column stays empty */
	n = progress_format(b, sizeof(b), "record", 12 * S, 60 * S, "recording to r.vnr", 30);
	ck_assert_uint_eq(n, 29);
	ck_assert_uint_eq(strlen(b), 29);
	ck_assert_int_eq(strncmp(b, full, 29), 0);
	n = progress_format(b, sizeof(b), "record", 12 * S, 60 * S, "recording to r.vnr",
			    (int)strlen(full) + 1);
	ck_assert_str_eq(b, full);
	n = progress_format(b, sizeof(b), "record", 12 * S, 60 * S, "recording to r.vnr", 1);
	ck_assert_uint_eq(n, 0);
	ck_assert_str_eq(b, "");
	/* UTF-8 in the phrase counts one column per character */
	progress_format(b, sizeof(b), "m", 0, 10 * S, "\xc3\xa9\xc3\xa9\xc3\xa9", 34);
	ck_assert_str_eq(b, "m: 00:00 / 00:10, 00:10 left - \xc3\xa9\xc3\xa9");
	/* a small buffer: cut, terminated */
	n = progress_format(tiny, sizeof(tiny), "record", 0, 60 * S, NULL, 0);
	ck_assert_uint_eq(n, 7);
	ck_assert_str_eq(tiny, "record:");
	ck_assert_uint_eq(progress_format(NULL, 10, "x", 0, 10 * S, NULL, 0), 0);
	ck_assert_uint_eq(progress_format(b, 0, "x", 0, 10 * S, NULL, 0), 0);
}
END_TEST

START_TEST(test_format_steps)
{
	struct progress_steps st = { .unit = "level", .done = 0, .n = 8, .done_ns = 0 };
	char b[256];

	/* no step done: no estimate */
	progress_format_steps(b, sizeof(b), "sweep", &st, 5 * S, "calibrating", 0);
	ck_assert_str_eq(b, "sweep: level 1/8 (0%), 00:05 elapsed - calibrating");
	/* 2 done in 40 s: 20 s a step, 6 to go = 120 s, 10 s into this one: 110 s left */
	st.done = 2;
	st.done_ns = 40 * S;
	progress_format_steps(b, sizeof(b), "sweep", &st, 50 * S, NULL, 0);
	ck_assert_str_eq(b, "sweep: level 3/8 (25%), 00:50 elapsed, 01:50 left");
	/* a slow step: the estimate never goes below zero */
	st.done = 7;
	st.done_ns = 70 * S;
	progress_format_steps(b, sizeof(b), "sweep", &st, 200 * S, NULL, 0);
	ck_assert_str_eq(b, "sweep: level 8/8 (87%), 03:20 elapsed, 00:00 left");
	st.done = 8;
	st.done_ns = 80 * S;
	progress_format_steps(b, sizeof(b), "sweep", &st, 80 * S, "done", 0);
	ck_assert_str_eq(b, "sweep: level 8/8 (100%), 01:20 elapsed, 00:00 left - done");
	/* out of range and missing: clamped, "step" */
	st.unit = NULL;
	st.done = 12;
	progress_format_steps(b, sizeof(b), NULL, &st, 80 * S, NULL, 0);
	ck_assert_str_eq(b, "step 8/8 (100%), 01:20 elapsed, 00:00 left");
	progress_format_steps(b, sizeof(b), "x", NULL, 0, NULL, 0);
	ck_assert_str_eq(b, "x: step 1/1 (0%), 00:00 elapsed");
	progress_format_steps(b, sizeof(b), "sweep", &st, 0, NULL, 12);
	ck_assert_str_eq(b, "sweep: step");
	ck_assert_uint_eq(progress_format_steps(NULL, 9, "x", &st, 0, NULL, 0), 0);
}
END_TEST

START_TEST(test_null_safe)
{
	progress_update(NULL, now_ns(), "x");
	progress_step(NULL, 1, now_ns());
	progress_clear(NULL);
	progress_end(NULL);
}
END_TEST

/* ---- drawing on a pseudo terminal ---- */

static int master = -1;

/* A pty of cols columns over stderr (raw: no "\n" -> "\r\n"); the master end in `master`. */
static void pty_stderr(int cols)
{
	struct winsize ws = { .ws_row = 24, .ws_col = (unsigned short)cols };
	struct termios t;
	int slave;

	master = posix_openpt(O_RDWR | O_NOCTTY);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	ck_assert_int_ge(slave, 0);
	ck_assert_int_eq(tcgetattr(slave, &t), 0);
	cfmakeraw(&t);
	ck_assert_int_eq(tcsetattr(slave, TCSANOW, &t), 0);
	ck_assert_int_eq(ioctl(slave, TIOCSWINSZ, &ws), 0);
	ck_assert_int_ge(dup2(slave, STDERR_FILENO), 0);
	close(slave);
	unsetenv("TERM");
	setenv("TERM", "xterm", 1);
	log_set_prog("prog");
}

/* What the terminal got since the last call (waits up to 200 ms for the first byte). */
static const char *pty_read(void)
{
	static char buf[4096];
	size_t n = 0;
	struct pollfd pf = { .fd = master, .events = POLLIN };
	int wait = 200;

	while (n < sizeof(buf) - 1 && poll(&pf, 1, wait) > 0) {
		ssize_t r = read(master, buf + n, sizeof(buf) - 1 - n);

		if (r <= 0)
			break;
		n += (size_t)r;
		wait = 20;
	}
	buf[n] = 0;
	return buf;
}

START_TEST(test_draw)
{
	struct progress *p;
	uint64_t t;
	char want[256];

	pty_stderr(40);
	p = progress_start("record", 60 * S, false);
	ck_assert_ptr_nonnull(p);
	t = now_ns();
	progress_update(p, t, "recording CPUs 0-1 to a-long-file-name.vnr");
	/* 39 columns of "record: 00:00 / 01:00, 01:00 left - recording CPUs..." */
	snprintf(want, sizeof(want), "\r%.39s\033[K",
		 "record: 00:00 / 01:00, 01:00 left - recording CPUs 0-1 to a-long-file-name.vnr");
	ck_assert_str_eq(pty_read(), want);
	/* within 250 ms: nothing; after: the same phrase (NULL keeps it), a second later */
	progress_update(p, t + PROGRESS_REDRAW_NS - 1, NULL);
	ck_assert_str_eq(pty_read(), "");
	progress_update(p, t + S + S / 2, NULL);
	snprintf(want, sizeof(want), "\r%.39s\033[K",
		 "record: 00:01 / 01:00, 00:59 left - recording CPUs 0-1");
	ck_assert_str_eq(pty_read(), want);
	/* a log line erases the line first and is printed whole; the next update draws at once */
	log_warn("disk %s", "slow");
	ck_assert_str_eq(pty_read(), "\r\033[Kprog: warning: disk slow\n");
	progress_update(p, t + S + S / 2 + 1, "x");
	ck_assert_str_eq(pty_read(), "\rrecord: 00:01 / 01:00, 00:59 left - x\033[K");
	progress_clear(p);
	ck_assert_str_eq(pty_read(), "\r\033[K");
	progress_clear(p); /* not shown: nothing to erase */
	ck_assert_str_eq(pty_read(), "");
	progress_update(p, t + S + S / 2 + 2, NULL);
	ck_assert_str_eq(pty_read(), "\rrecord: 00:01 / 01:00, 00:59 left - x\033[K");
	progress_end(p);
	ck_assert_str_eq(pty_read(), "\r\033[K");
	/* the sink is gone with it */
	log_warn("after");
	ck_assert_str_eq(pty_read(), "prog: warning: after\n");
}
END_TEST

START_TEST(test_draw_steps)
{
	struct progress *p;
	uint64_t t;

	pty_stderr(120);
	p = progress_start_steps("sweep", "level", 4, false);
	ck_assert_ptr_nonnull(p);
	t = now_ns();
	/* nothing in the first 2 s, not even for a step */
	progress_update(p, t, "calibrating");
	progress_step(p, 0, t + PROGRESS_STEPS_DELAY_NS - S / 10);
	ck_assert_str_eq(pty_read(), "");
	progress_update(p, t + PROGRESS_STEPS_DELAY_NS + S / 10, NULL);
	ck_assert_str_eq(pty_read(), "\rsweep: level 1/4 (0%), 00:02 elapsed - calibrating\033[K");
	/* a step done redraws at once, whatever the last draw */
	progress_step(p, 1, t + 10 * S);
	ck_assert_str_eq(pty_read(),
			 "\rsweep: level 2/4 (25%), 00:10 elapsed, 00:30 left - calibrating\033[K");
	progress_end(p);
	ck_assert_str_eq(pty_read(), "\r\033[K");
}
END_TEST

START_TEST(test_silent)
{
	FILE *f;

	pty_stderr(80);
	ck_assert_ptr_null(progress_start("record", 60 * S, true)); /* -q */
	ck_assert_ptr_null(progress_start("record", PROGRESS_MIN_NS - 1, false)); /* short */
	ck_assert_ptr_null(progress_start_steps("sweep", "level", 3, true));
	ck_assert_ptr_null(progress_start_steps("sweep", "level", 0, false));
	setenv("TERM", "dumb", 1);
	ck_assert_ptr_null(progress_start("record", 60 * S, false));
	ck_assert_ptr_null(progress_start_steps("sweep", "level", 3, false));
	setenv("TERM", "xterm", 1);
	ck_assert_str_eq(pty_read(), "");
	/* stderr a file: nothing */
	f = tmpfile();
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(dup2(fileno(f), STDERR_FILENO), 0);
	ck_assert_ptr_null(progress_start("record", 60 * S, false));
	ck_assert_ptr_null(progress_start_steps("sweep", "level", 3, false));
	fclose(f);
}
END_TEST

static Suite *progress_suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc;

	tc = tcase_create("format");
	tcase_add_test(tc, test_fmt_time);
	tcase_add_test(tc, test_truncate);
	tcase_add_test(tc, test_format_timed);
	tcase_add_test(tc, test_format_width);
	tcase_add_test(tc, test_format_steps);
	tcase_add_test(tc, test_null_safe);
	suite_add_tcase(s, tc);

	tc = tcase_create("draw");
	tcase_add_test(tc, test_draw);
	tcase_add_test(tc, test_draw_steps);
	tcase_add_test(tc, test_silent);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(progress_suite());
}
