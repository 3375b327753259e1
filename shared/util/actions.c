/* SPDX-License-Identifier: MIT */
/*
 * actions: the threshold and end action chains (see actions.h for the contract).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "util/actions.h"
#include "util/log.h"
#include "util/parse.h"

/* The value of key in the ",key=value" list s ("" when s has the key with no value); NULL if absent.
 * len: the value's length (to the next comma). */
static const char *field(const char *s, const char *key, size_t *len)
{
	size_t kl = strlen(key);

	for (const char *p = s; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			const char *v = p + kl + 1, *c = strchr(v, ',');

			*len = c ? (size_t)(c - v) : strlen(v);
			return v;
		}
	return NULL;
}

/* Every field of s (after the action's name) is one of the keys (a NULL-ended list); else the first other. */
static const char *unknown_field(const char *s, const char *const *keys)
{
	for (const char *p = s; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
		int ok = 0;

		for (int k = 0; keys[k] && !ok; k++)
			ok = !strncmp(p, keys[k], strlen(keys[k])) && p[strlen(keys[k])] == '=';
		if (!ok)
			return p;
	}
	return NULL;
}

static int parse_signal(struct action *a, const char *opt, const char *arg, const char *rest,
			char *err, size_t errlen)
{
	static const char *const keys[] = { "num", "pid", NULL };
	const char *num, *pid, *bad = unknown_field(rest, keys);
	char buf[32];
	size_t nl = 0, pl = 0;
	int v;

	num = field(rest, "num", &nl);
	pid = field(rest, "pid", &pl);
	if (bad || !num || !pid) {
		log_reason(err, errlen, "%s '%s': want signal,num=N,pid=P (or pid=parent)", opt,
			   arg);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%.*s", (int)(nl < 31 ? nl : 31), num);
	if (parse_int(buf, 1, SIGRTMAX, &v)) {
		log_reason(err, errlen, "%s '%s': num=%s is not a signal number (1..%d)", opt, arg,
			   buf, SIGRTMAX);
		return -EINVAL;
	}
	a->signum = v;
	snprintf(buf, sizeof(buf), "%.*s", (int)(pl < 31 ? pl : 31), pid);
	if (!strcmp(buf, "parent")) {
		a->pid = 0;
	} else if (parse_int(buf, 1, 4194304, &v)) {
		log_reason(err, errlen, "%s '%s': pid=%s is not a pid or 'parent'", opt, arg, buf);
		return -EINVAL;
	} else {
		a->pid = v;
	}
	a->kind = ACTION_SIGNAL;
	return 0;
}

int actions_parse(struct action_chain *c, const char *opt, const char *arg, char *err,
		  size_t errlen)
{
	struct action a = { 0 };
	const char *comma = strchr(arg, ',');
	size_t nl = comma ? (size_t)(comma - arg) : strlen(arg);
	const char *rest = comma ? comma + 1 : "";

	if (c->n == ACTIONS_MAX) {
		log_reason(err, errlen, "%s: at most %d actions", opt, ACTIONS_MAX);
		return -EINVAL;
	}
	if (nl == 5 && !strncmp(arg, "trace", 5)) {
		static const char *const keys[] = { "file", NULL };
		size_t fl = 0;
		const char *f = field(rest, "file", &fl);

		if (unknown_field(rest, keys) || (f && !fl)) {
			log_reason(err, errlen, "%s '%s': want trace or trace,file=F", opt, arg);
			return -EINVAL;
		}
		if (f && strchr(f, ',')) {
			log_reason(err, errlen,
				   "%s '%s': file= takes the rest of the action (no comma after)",
				   opt, arg);
			return -EINVAL;
		}
		a.kind = ACTION_TRACE;
		a.file = f ? f : ACTIONS_TRACE_FILE; /* file= is the last field: the rest of arg */
	} else if (nl == 6 && !strncmp(arg, "signal", 6)) {
		if (parse_signal(&a, opt, arg, rest, err, errlen))
			return -EINVAL;
	} else if (nl == 5 && !strncmp(arg, "shell", 5)) {
		if (strncmp(rest, "command=", 8) || !rest[8]) {
			log_reason(err, errlen, "%s '%s': want shell,command=CMD", opt, arg);
			return -EINVAL;
		}
		a.kind = ACTION_SHELL;
		a.command = rest + 8;
	} else if (nl == 8 && !strncmp(arg, "continue", 8) && !*rest && !comma) {
		a.kind = ACTION_CONTINUE;
	} else {
		log_reason(err, errlen,
			   "%s '%s': want trace[,file=F], signal,num=N,pid=P|parent, "
			   "shell,command=CMD or continue",
			   opt, arg);
		return -EINVAL;
	}
	c->a[c->n++] = a;
	return 0;
}

int actions_continues(const struct action_chain *c)
{
	for (int i = 0; i < c->n; i++)
		if (c->a[i].kind == ACTION_CONTINUE)
			return 1;
	return 0;
}

static int run_signal(const struct action *a, const char *opt, const struct action_hit *hit)
{
	pid_t pid = a->pid ? a->pid : getppid();
	union sigval sv = { .sival_ptr = (void *)(uintptr_t)hit->end_ns };

	if (sigqueue(pid, a->signum, sv)) {
		log_err("%s: signal %d to pid %d: %s (the chain stops)", opt, a->signum, (int)pid,
			strerror(errno));
		return -1;
	}
	return 0;
}

static int run_shell(const struct action *a, const char *opt, const struct action_hit *hit)
{
	char cpu[16], ns[24], end[24];
	int st;
	pid_t pid;

	snprintf(cpu, sizeof(cpu), "%d", hit->cpu);
	snprintf(ns, sizeof(ns), "%llu", (unsigned long long)hit->duration_ns);
	snprintf(end, sizeof(end), "%llu", (unsigned long long)hit->end_ns);
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		log_err("%s: shell: cannot fork: %s (the chain stops)", opt, strerror(errno));
		return -1;
	}
	if (!pid) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setenv("VNOISE_HIT_CPU", cpu, 1);
		setenv("VNOISE_HIT_NS", ns, 1);
		setenv("VNOISE_HIT_END_NS", end, 1);
		execl("/bin/sh", "sh", "-c", a->command, (char *)NULL);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			log_err("%s: shell: %s (the chain stops)", opt, strerror(errno));
			return -1;
		}
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return 0;
	if (WIFEXITED(st))
		log_err("%s: shell command exited with status %d (the chain stops)", opt,
			WEXITSTATUS(st));
	else
		log_err("%s: shell command killed by signal %d (the chain stops)", opt,
			WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return -1;
}

int actions_run(const struct action_chain *c, const char *opt, const struct action_hit *hit,
		action_trace_fn trace, void *ctx)
{
	for (int i = 0; i < c->n; i++) {
		const struct action *a = &c->a[i];

		switch (a->kind) {
		case ACTION_TRACE:
			if (trace && trace(ctx, a->file, hit))
				return -1;
			break;
		case ACTION_SIGNAL:
			if (run_signal(a, opt, hit))
				return -1;
			break;
		case ACTION_SHELL:
			if (run_shell(a, opt, hit))
				return -1;
			break;
		case ACTION_CONTINUE:
			return 1;
		}
	}
	return 0;
}
