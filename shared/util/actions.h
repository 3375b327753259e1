/* SPDX-License-Identifier: MIT */
/*
 * actions: what a run does when a threshold is hit and when it ends (--on-threshold ACTION, --on-end ACTION,
 * repeatable: a chain run in the order given, as rtla's). The actions:
 *
 *   trace[,file=F]              the caller writes its trace (the lead-up, the worst gap's parts) to F
 *                               (default vnoise_trace.txt)
 *   signal,num=N,pid=P|parent   send signal N to P (or the parent process) with sigqueue(); its si_value
 *                               (sival_ptr) carries the hit gap's end (CLOCK_MONOTONIC ns), so a receiver can
 *                               tell which hit it is and how late the signal came
 *   shell,command=CMD           run CMD with /bin/sh -c and wait for it (everything after "command=" is
 *                               the command, commas too); VNOISE_HIT_CPU, VNOISE_HIT_NS (the gap's length)
 *                               and VNOISE_HIT_END_NS in its environment; a status other than 0 fails
 *   continue                    keep measuring after this hit (the default is to stop: exit 3)
 *
 * An action that fails logs one line and stops its chain (what follows it, continue too, is not run).
 * Parsing is pure; running forks (shell) and signals: the caller's main thread only.
 */
#ifndef VNOISE_UTIL_ACTIONS_H
#define VNOISE_UTIL_ACTIONS_H

#include <stddef.h>
#include <stdint.h>

#define ACTIONS_MAX 8 /* actions a chain holds */
#define ACTIONS_TRACE_FILE "vnoise_trace.txt"

enum action_kind { ACTION_TRACE = 1, ACTION_SIGNAL, ACTION_SHELL, ACTION_CONTINUE };

struct action {
	enum action_kind kind;
	int signum; /* signal */
	int pid; /* signal: the target; 0: the parent process */
	const char *file; /* trace: into argv's string (not copied) */
	const char *command; /* shell */
};

struct action_chain {
	int n;
	struct action a[ACTIONS_MAX];
};

/* The hit an action is run for (cpu -1 and zeros: the run's end). */
struct action_hit {
	int cpu;
	uint64_t duration_ns, end_ns;
};

/* trace: write the caller's trace to file; 0, or -errno (the caller has logged why). */
typedef int (*action_trace_fn)(void *ctx, const char *file, const struct action_hit *hit);

/* Append the action spelled arg ("signal,num=10,pid=parent") to c: 0, or -EINVAL with a one-line reason in
 * err (the option's name, opt, leads it). arg must outlive c. */
int actions_parse(struct action_chain *c, const char *opt, const char *arg, char *err,
		  size_t errlen) __attribute__((warn_unused_result));
/* Whether the chain holds a continue. */
int actions_continues(const struct action_chain *c);
/* Run the chain for hit (opt names it in error lines): 1 when it reached continue, 0 when it ran through
 * without one, -1 when an action failed (one line logged; the rest of the chain not run). */
int actions_run(const struct action_chain *c, const char *opt, const struct action_hit *hit,
		action_trace_fn trace, void *ctx);

#endif
