/* SPDX-License-Identifier: MIT */
/* cpuclaim: one vnoise sampler per CPU (see cpuclaim.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>
#include "measure/cpuclaim.h"
#include "util/lockfile.h"

void cpuclaim_init(struct cpuclaim *c, const char *dir)
{
	memset(c, 0, sizeof(*c));
	c->dir = dir ? dir : CPUCLAIM_DIR;
}

/* Write "PID TID WHAT\n" over the claim's file. */
static void say(int fd, int tid, const char *what)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%d %d %.*s\n", (int)getpid(), tid,
			 CPUCLAIM_WHAT_LEN - 1, what);

	if (ftruncate(fd, 0) || pwrite(fd, line, (size_t)n, 0) != n)
		return; /* the claim holds; only its description is missing */
}

/* Who the file says holds the claim (zeros and "another vnoise sampler" when it cannot say). */
static void holder(int fd, int cpu, struct cpuclaim_holder *h)
{
	char line[64] = "";
	ssize_t n = pread(fd, line, sizeof(line) - 1, 0);
	char what[CPUCLAIM_WHAT_LEN];

	memset(h, 0, sizeof(*h));
	h->cpu = cpu;
	snprintf(h->what, sizeof(h->what), "sampler");
	if (n > 0) {
		line[n] = 0;
		if (sscanf(line, "%d %d %15s", &h->pid, &h->tid, what) == 3 &&
		    strspn(what, "abcdefghijklmnopqrstuvwxyz") == strlen(what))
			snprintf(h->what, sizeof(h->what), "%s",
				 what); /* a word: safe on a terminal */
	}
}

int cpuclaim_take(struct cpuclaim *c, int cpu, const char *what, struct cpuclaim_holder *h)
{
	char path[256];
	bool replaced;
	int fd, i;

	if (c->n >= PARAMS_MAX_CPUS)
		return -ENOSPC;
	i = c->n;
	snprintf(path, sizeof(path), "%s/vnoise-sampler-cpu%d.lock", c->dir, cpu);
	fd = lockfile_open(path, &replaced);
	if (fd < 0)
		return fd;
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int e = errno;

		if (e == EWOULDBLOCK)
			holder(fd, cpu, h);
		close(fd);
		return e == EWOULDBLOCK ? -EBUSY : -e;
	}
	say(fd, 0, what);
	c->cpu[i] = cpu;
	c->fd[i] = fd;
	c->n++;
	return 0;
}

void cpuclaim_set_tid(struct cpuclaim *c, int cpu, int tid)
{
	char line[64], what[CPUCLAIM_WHAT_LEN];
	int pid, old;

	for (int i = 0; i < c->n; i++) {
		ssize_t n;

		if (c->cpu[i] != cpu || c->fd[i] < 0)
			continue;
		n = pread(c->fd[i], line, sizeof(line) - 1, 0);
		if (n <= 0)
			return;
		line[n] = 0;
		if (sscanf(line, "%d %d %15s", &pid, &old, what) == 3)
			say(c->fd[i], tid, what);
		return;
	}
}

void cpuclaim_release(struct cpuclaim *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->fd[i] >= 0)
			close(c->fd[i]);
	c->n = 0;
}
