/* SPDX-License-Identifier: MIT */
/*
 * injectopt: command-line parsing for `vnoise-guest inject`, the noise source with known ground truth
 * (DESIGN.md "inject", seed 003). A pure function turns argv into a struct inject_params; it prints nothing
 * but the warning line of a deprecated spelling (cli/cliopt.h; getopt's state is reset on every call) and
 * does not look at the machine (whether the CPU is online is checked by the injector itself). Every number
 * goes through a strict parser that rejects signs, blanks, trailing junk and overflow.
 */
#ifndef VNOISE_GUEST_INJECT_INJECTOPT_H
#define VNOISE_GUEST_INJECT_INJECTOPT_H

#include <stddef.h>
#include <stdint.h>

#define INJECT_COMM_MAX 15 /* longest thread name (TASK_COMM_LEN - 1) */
#define INJECT_CPU_MAX 65535 /* highest --cpu accepted by the parser */
#define INJECT_EVERY_MAX_MS 3600000ULL /* --every at most one hour */
#define INJECT_DEFAULT_COMM "vnoise-inject"

enum inject_mode {
	INJECT_MODE_NONE = 0,
	INJECT_MODE_LEVEL = 1, /* duty cycle: busy_ns of thread CPU time in every 1 s period */
	INJECT_MODE_SPIKE = 2, /* spikes: busy_ns of thread CPU time every period_ns */
};

struct inject_params {
	unsigned int cpu; /* --cpu: CPU to pin the injecting thread to */
	int mode; /* enum inject_mode */
	uint64_t busy_ns; /* thread CPU time per burst (LEVEL: PCT x 10^7 ns) */
	uint64_t period_ns; /* burst period (LEVEL: 10^9 ns; SPIKE: --every) */
	uint64_t duration_ns; /* --duration; 0 = until SIGINT/SIGTERM */
	int fifo_prio; /* 0 = SCHED_OTHER, 1..99 = SCHED_FIFO priority */
	char comm[INJECT_COMM_MAX + 1]; /* thread name, NUL-terminated */
	int quiet; /* --quiet: no start line, no informational messages */
	int help; /* -h/--help given: nothing else was validated */
};

/*
 * Parse `inject [options]` (argv[0] is the subcommand name). The options (docs/CLI.md): --cpu N (required),
 * --level PCT (0 < PCT <= 100, up to 7 decimals) or --spike TIME --every TIME (spike < every <= 1 h; a bare
 * --every number, once milliseconds, is rejected), -P other|fifo:N (N 1..99; the old --fifo N still works
 * with a warning), -d --duration TIME (> 0; a bare number, once seconds, is rejected), --comm NAME (1..15
 * chars), -q --quiet, -h --help. TIME: a number and a unit ns us ms s m h, microseconds without one. Each
 * option at most once. Returns 0 and fills *p, or -EINVAL with a one-line message (no prefix, no newline)
 * in err. err may be NULL when errlen is 0.
 */
int injectopt_parse(int argc, char **argv, struct inject_params *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * Human description of the mode for the start line: "level 30%", "level 0.05%", "spike 200us/20ms".
 * Always NUL-terminates buf (when buflen > 0).
 */
void injectopt_describe(const struct inject_params *p, char *buf, size_t buflen);

/* The usage text (several lines, newline-terminated). */
const char *injectopt_usage(void);

#endif
