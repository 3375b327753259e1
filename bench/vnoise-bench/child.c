/* SPDX-License-Identifier: MIT */
/*
 * child: the sweep's child processes (injector, mpirun, monitor) with their stdout on pipes read line by
 * line through poll(), and the /proc scan that finds mpirun's ranks. Every wait is bounded and returns
 * -EINTR once vnb_stop is set, so that a signal to the sweep always reaches the code that stops the
 * children; child_stop() ends with SIGKILL to the child's process group and a reap, so nothing is left.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/log.h"
#include "util/monotime.h"
#include "util/progress.h"
#include "vnbench.h"

volatile sig_atomic_t vnb_stop;

/* The children's stderr relay (child_relay_open): the pipe, its progress line, a partial line. */
static struct {
	int rd, wr;
	struct progress *prog;
	size_t len;
	char buf[4096];
} relay = { .rd = -1, .wr = -1 };

int child_relay_open(struct progress *p)
{
	int fds[2];

	if (!p || relay.rd >= 0)
		return 0;
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	/* Only our end is non-blocking: the write end is the children's stderr. */
	if (fcntl(fds[0], F_SETFL, O_NONBLOCK)) {
		int err = -errno;

		close(fds[0]);
		close(fds[1]);
		return err;
	}
	relay.rd = fds[0];
	relay.wr = fds[1];
	relay.prog = p;
	relay.len = 0;
	return 0;
}

/* Write n bytes of the relay's buffer to our stderr (the progress line erased first) and drop them. */
static void relay_put(size_t n)
{
	size_t off = 0;

	if (!n)
		return;
	progress_clear(relay.prog);
	while (off < n) {
		ssize_t w = write(STDERR_FILENO, relay.buf + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	memmove(relay.buf, relay.buf + n, relay.len - n);
	relay.len -= n;
}

/* Read what is in the pipe; print the whole lines (a full buffer without a newline: all of it). */
static void relay_read(void)
{
	for (;;) {
		ssize_t r;
		char *nl;

		if (relay.len == sizeof(relay.buf))
			relay_put(relay.len);
		r = read(relay.rd, relay.buf + relay.len, sizeof(relay.buf) - relay.len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		relay.len += (size_t)r;
		nl = memrchr(relay.buf, '\n', relay.len);
		if (nl)
			relay_put((size_t)(nl - relay.buf) + 1);
	}
}

void child_relay_drain(void)
{
	if (relay.rd >= 0)
		relay_read();
}

void child_relay_close(void)
{
	if (relay.rd < 0)
		return;
	relay_read();
	relay_put(relay.len);
	close(relay.rd);
	close(relay.wr);
	relay.rd = relay.wr = -1;
	relay.prog = NULL;
}

void child_init(struct child *c, const char *name)
{
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->pid = -1;
	c->fd = -1;
}

int child_spawn(struct child *c, char *const argv[])
{
	pid_t parent = getpid(), pid;
	int pfd[2], err;

	if (pipe2(pfd, O_CLOEXEC)) {
		err = -errno;
		log_err("%s: pipe: %s", c->name, strerror(errno));
		return err;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		log_err("%s: fork: %s", c->name, strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return err;
	}
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		/* Own process group: Ctrl-C reaches the sweep only, which stops us in order. */
		setpgid(0, 0);
		/* Never outlive the sweep, even when it is SIGKILLed. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		if (nul >= 0) {
			dup2(nul, STDIN_FILENO);
			close(nul);
		}
		dup2(pfd[1], STDOUT_FILENO);
		if (relay.wr >= 0)
			dup2(relay.wr, STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "vnoise-bench sweep: error: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid); /* also here: no window where a signal to the group misses it */
	close(pfd[1]);
	c->pid = pid;
	c->fd = pfd[0];
	c->len = 0;
	c->reaped = 0;
	return 0;
}

static int has_line(const struct child *c)
{
	return c->len && memchr(c->buf, '\n', c->len);
}

/* Read what is available from c's pipe into its buffer; EOF closes the pipe. */
static void child_read(struct child *c)
{
	ssize_t n;

	if (c->len == sizeof(c->buf)) {
		/* No newline in a full buffer: drop the line, keep reading. */
		c->overflow = 1;
		c->len = 0;
	}
	n = read(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);
	if (n > 0) {
		c->len += (size_t)n;
	} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
		close(c->fd);
		c->fd = -1;
	}
}

int child_poll(struct child *const *cs, int n, int timeout_ms)
{
	uint64_t end = timeout_ms >= 0 ? now_ns() + (uint64_t)timeout_ms * 1000000ULL : 0;

	for (;;) {
		struct pollfd pf[9]; /* the children's, then the stderr relay's */
		struct child *who[8];
		int np = 0, nr, wait_ms = -1, r;

		if (vnb_stop)
			return -EINTR;
		for (int i = 0; i < n; i++) {
			if (has_line(cs[i]))
				return 0;
			if (cs[i]->fd >= 0 && np < 8) {
				pf[np].fd = cs[i]->fd;
				pf[np].events = POLLIN;
				who[np++] = cs[i];
			}
		}
		if (!np)
			return 0; /* every pipe at EOF */
		nr = np;
		if (relay.rd >= 0) {
			pf[nr].fd = relay.rd;
			pf[nr++].events = POLLIN;
		}
		if (end) {
			uint64_t now = now_ns();

			if (now >= end)
				return -ETIMEDOUT;
			wait_ms = (int)((end - now + 999999) / 1000000);
		}
		r = poll(pf, (nfds_t)nr, wait_ms);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && nr > np && pf[np].revents)
			relay_read();
		for (int i = 0; r > 0 && i < np; i++) {
			if (!pf[i].revents)
				continue;
			child_read(who[i]);
			if (who[i]->fd < 0 || has_line(who[i]))
				return 0;
		}
	}
}

int child_line(struct child *c, char *line, size_t len)
{
	char *nl = c->len ? memchr(c->buf, '\n', c->len) : NULL;
	size_t n, take;

	if (!nl && (c->fd >= 0 || !c->len))
		return 0;
	n = nl ? (size_t)(nl - c->buf) : c->len; /* at EOF: the last line without its newline */
	take = n < len - 1 ? n : len - 1;
	memcpy(line, c->buf, take);
	line[take] = 0;
	if (nl)
		n++;
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
	return 1;
}

int child_wait_line(struct child *c, char *line, size_t len, int timeout_ms)
{
	struct child *one[1] = { c };
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ULL;

	for (;;) {
		uint64_t now;
		int r;

		if (child_line(c, line, len))
			return 1;
		if (c->fd < 0)
			return 0;
		now = now_ns();
		if (now >= end)
			return -ETIMEDOUT;
		r = child_poll(one, 1, (int)((end - now + 999999) / 1000000));
		if (r == -EINTR)
			return r;
	}
}

int child_reap(struct child *c, int timeout_ms)
{
	const struct timespec ts = { 0, 10000000L };
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ULL;

	if (c->pid <= 0 || c->reaped)
		return 1;
	for (;;) {
		pid_t r = waitpid(c->pid, &c->status, WNOHANG);

		if (r == c->pid || (r < 0 && errno == ECHILD)) {
			c->reaped = 1;
			return 1;
		}
		if (vnb_stop)
			return -EINTR;
		if (now_ns() >= end)
			return 0;
		nanosleep(&ts, NULL);
	}
}

void child_stop(struct child *c, int sig, int grace_ms)
{
	const struct timespec ts = { 0, 10000000L };
	uint64_t end = now_ns() + (uint64_t)grace_ms * 1000000ULL;

	if (c->pid > 0 && !c->reaped) {
		kill(c->pid, sig);
		/* Not child_reap(): this must work after vnb_stop too. */
		while (waitpid(c->pid, &c->status, WNOHANG) == 0 && now_ns() < end)
			nanosleep(&ts, NULL);
		/* The group: mpirun's ranks are in it, and must go too. */
		kill(-c->pid, SIGKILL);
		if (waitpid(c->pid, &c->status, 0) == c->pid || errno == ECHILD)
			c->reaped = 1;
		/* A child that exited in the first waitpid: its group may still hold ranks. */
	}
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

void child_reap_orphans(int timeout_ms)
{
	const struct timespec ts = { 0, 10000000L };
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000ULL;
	pid_t left[64];
	int n = child_proc_named(getpid(), NULL, left, 64);

	for (int i = 0; i < n; i++)
		kill(left[i], SIGKILL);
	for (;;) {
		pid_t r = waitpid(-1, NULL, WNOHANG);

		if (r > 0)
			continue;
		if (r < 0 || now_ns() >= end)
			return;
		nanosleep(&ts, NULL);
	}
}

int child_proc_named(pid_t ppid, const char *comm, pid_t *pids, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char path[288], buf[512], *rp;
		int pid, parent;
		FILE *f;
		size_t len;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		len = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[len] = 0;
		/* "pid (comm) state ppid ...": comm may hold blanks and parentheses; the last ')' ends it. */
		rp = strrchr(buf, ')');
		if (!rp || sscanf(buf, "%d", &pid) != 1 || sscanf(rp + 1, " %*c %d", &parent) != 1)
			continue;
		if (parent != ppid)
			continue;
		*rp = 0;
		if (comm && strcmp(strchr(buf, '(') ? strchr(buf, '(') + 1 : "", comm))
			continue;
		pids[n++] = pid;
	}
	closedir(d);
	/* ascending, for stable --pid lists */
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && pids[j] < pids[j - 1]; j--) {
			pid_t t = pids[j];

			pids[j] = pids[j - 1];
			pids[j - 1] = t;
		}
	return n;
}
