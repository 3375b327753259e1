/* SPDX-License-Identifier: MIT */
/*
 * cliopt: the one option table of every vnoise command (rtla's common_params style) and the helpers each
 * command parser is built from (docs/CLI.md).
 *
 * The common options have one letter, one long name, one argument kind and one help line in every command
 * that accepts them (-p is --period everywhere). A command lists the common options it accepts plus its own
 * options, which are long-only, and hidden deprecated aliases of old spellings (they still work, print one
 * warning line on stderr and never appear in the help). cliopt_init() rejects a table that breaks the
 * convention (an own option with a letter, a letter or name used twice, an alias of a letter that the
 * command uses with its common meaning).
 *
 * Times: a TIME without a unit is in microseconds everywhere (units ns us ms s m h d; 0 needs none). An option
 * whose bare number used to mean another unit names that unit (bare_unit); for one release a bare non-zero
 * number is rejected there with one line ("-d 10: a time without a unit is in microseconds; write 10s (or
 * 10us)") instead of being silently reinterpreted.
 *
 * Every command also takes -V, --version without listing it: cliopt_init adds it to the table, cliopt_help
 * shows it after -h, and cliopt_next prints "PROG VERSION" on stdout and exits 0 when it is given (as a
 * command's --help would: nothing was set up yet). PROG is the program name given to cliopt_dispatch.
 *
 * A parser is a pure function of argv (STYLE.md 9) apart from the warning lines of deprecated aliases
 * (log_warn) and --version. Errors are one line in the caller's err buffer, the caller returns -EINVAL
 * (EXIT_USAGE). Built on getopt_long, which is not reentrant: one parser at a time per process.
 *
 * cliopt_dispatch is the other half: a program's command table (PROG COMMAND [options]), its --help,
 * --version and the line for an unknown command, all derived from that table.
 */
#ifndef VNOISE_CLI_CLIOPT_H
#define VNOISE_CLI_CLIOPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include "cli/exitcode.h"
#include <stdint.h>
#include "util/log.h"

/*
 * Ids of the common options. One with a letter is that letter: the same letter means the same option in
 * every command. The long-only common options (--pid, --job...) have ids from 128.
 */
enum cliopt_id {
	CLIOPT_CPUS = 'c', /* -c --cpus LIST */
	CLIOPT_CGROUP = 'C', /* -C --cgroup PATH */
	CLIOPT_PERIOD = 'p', /* -p --period TIME */
	CLIOPT_RUNTIME = 'r', /* -r --runtime TIME */
	CLIOPT_THRESHOLD = 'T', /* -T --threshold TIME */
	CLIOPT_STOP_SINGLE = 's', /* -s --stop-single TIME */
	CLIOPT_STOP_TOTAL = 'S', /* -S --stop-total TIME */
	CLIOPT_DURATION = 'd', /* -d --duration TIME (a bare number was seconds) */
	CLIOPT_PRIORITY = 'P', /* -P --priority POL */
	CLIOPT_JSON = 'j', /* -j --json */
	CLIOPT_OUTPUT = 'o', /* -o --output FILE */
	CLIOPT_TOP = 'n', /* -n --top N */
	CLIOPT_QUIET = 'q', /* -q --quiet */
	CLIOPT_VERBOSE = 'v', /* -v --verbose */
	CLIOPT_HELP = 'h', /* -h --help */
	CLIOPT_VERSION = 'V', /* -V --version: every command, implicitly */
	CLIOPT_DOMAIN = 'D', /* -D --domain NAME (host) */
	CLIOPT_KEY_FILE = 'k', /* -k --key-file FILE */
	CLIOPT_GUEST = 'g', /* -g --guest (host) */
	CLIOPT_PID = 128, /* --pid PID[,PID...] */
	CLIOPT_JOB, /* --job ID */
	CLIOPT_CONNECT, /* --connect URI */
	CLIOPT_COLLECTOR, /* --collector ADDR:PORT */
	CLIOPT_NODE_ID, /* --node-id N */
	CLIOPT_OWN = 256, /* a command's own options: CLIOPT_OWN, CLIOPT_OWN + 1... */
};

/*
 * One option of a command's table; a table ends with an entry whose id and alias_of are 0.
 * - A common option: only id (and optionally help, to name the command's default, or bare_unit); name,
 *   letter, has_arg and arg come from the common table.
 * - An own option: id >= CLIOPT_OWN, name, has_arg, arg, help; no letter.
 * - A hidden deprecated alias: alias_of = the id of the option that replaces it, and the old name and/or
 *   letter; the argument kind is the replacement's.
 */
struct cliopt {
	int id;
	const char *name; /* long name without "--" */
	int letter; /* 0: long only */
	int has_arg; /* 0 or 1 (required value) */
	const char *arg; /* the value's name in the help: "TIME", "LIST" */
	const char *help; /* one line; NULL for a common option: the common help */
	const char
	    *bare_unit; /* a TIME whose bare number used to be in this unit ("s", "ms"); common
				  --duration: "s" */
	int alias_of; /* non-zero: deprecated alias of this id */
};

#define CLIOPT_MAX 64 /* entries of a command's table, without the implicit --version */

/* The state of one parse; the fields above the line are for the caller to read. */
struct cliopt_parser {
	const char *arg; /* value of the option cliopt_next() returned; NULL without one */
	const char *spelled; /* that option as written: "-d" or "--duration" */
	/* private */
	int argc;
	char **argv;
	char *err;
	size_t errlen;
	const struct cliopt *cur; /* the resolved entry of the returned option */
	struct cliopt ent[CLIOPT_MAX + 1];
	int n;
	struct option lopts[CLIOPT_MAX + 2];
	char shorts[2 * CLIOPT_MAX + 6];
	char spell[64];
	char lname[64];
};

/* The common entry of id, or NULL. */
const struct cliopt *cliopt_common(int id);

/*
 * Start parsing argv[1..argc-1] (argv[0] is the command name) with the table opts. Options stop at the
 * first non-option argument or at "--" (getopt's "+" mode); getopt's optind is then the first argument not
 * parsed. Returns 0, or -EINVAL with a line in err when the table breaks the convention (a bug).
 */
int cliopt_init(struct cliopt_parser *ps, const struct cliopt *opts, int argc, char **argv,
		char *err, size_t errlen) __attribute__((warn_unused_result));

/*
 * The next option: its id (> 0; a deprecated alias gives its replacement's id after printing the warning
 * line), 0 at the end of the options, or -EINVAL with a line in err (unknown option, missing value, a
 * value given to a flag). ps->arg is the option's value. May be called again after 0 once the caller
 * consumed a positional argument (optind++), to parse options that follow it. -V/--version does not
 * return: it prints "PROG VERSION" on stdout and exits 0.
 */
int cliopt_next(struct cliopt_parser *ps) __attribute__((warn_unused_result));

/* "--period": the long name of the option cliopt_next() returned, for messages. */
const char *cliopt_name(const struct cliopt_parser *ps);

/*
 * ps->arg as a TIME in ns (a bare number is in us; units may be combined, largest first: 1m30s). -EINVAL
 * with a line in err when it is not a time ("want a time such as..."), when it does not fit in 64 bits of
 * ns ("out of range"), or when it is a bare non-zero number and the option's bare number used to mean
 * another unit.
 */
int cliopt_time(struct cliopt_parser *ps, uint64_t *ns) __attribute__((warn_unused_result));

/*
 * The same rule outside a parser (a command that forwards its other options): value s of the option
 * spelled ("-d"), bare_unit as in struct cliopt (NULL: a bare number is simply in us). 0 or -EINVAL with
 * a line in err.
 */
int cliopt_parse_time(const char *spelled, const char *s, const char *bare_unit, uint64_t *ns,
		      char *err, size_t errlen) __attribute__((warn_unused_result));

/*
 * ps->arg as a scheduling policy: "other" (or "o"), "fifo:N" ("f:N") or "rr:N" ("r:N"), N in 1..99, into
 * *policy (SCHED_OTHER, SCHED_FIFO, SCHED_RR) and *prio (0 for other). -EINVAL with a line in err.
 */
int cliopt_priority(struct cliopt_parser *ps, int *policy, int *prio)
    __attribute__((warn_unused_result));

/*
 * For an own hidden option kept one release whose value differs from its replacement's (inject --fifo
 * PRIO -> -P fifo:PRIO): print the alias warning line "--fifo is deprecated, use -P fifo:N".
 */
void cliopt_deprecated(const struct cliopt_parser *ps, const char *use);

/* ps->arg as an integer in [min, max]; -EINVAL with "invalid --top 'x': want 0..1000" in err. */
int cliopt_int(struct cliopt_parser *ps, int min, int max, int *out)
    __attribute__((warn_unused_result));

/* Where a command keeps the common flags; NULL for one it does not take. */
struct cliopt_flags {
	int *json; /* -j: set to 1 */
	int *quiet; /* -q: set to 1 */
	int *verbose; /* -v: counts how often it is given */
};

/* If option c is one of the common flags f keeps, store it and return 1; else return 0. */
int cliopt_flag(int c, const struct cliopt_flags *f);

/* Print the one-line error into err (as log_reason) and return -EINVAL. */
int cliopt_fail(struct cliopt_parser *ps, const char *fmt, ...) VN_FMT(2, 3);

/*
 * The option lines of a command's help ("  -c, --cpus LIST        CPUs to measure...\n"), aliases and
 * hidden options left out, -V, --version after -h, into buf. Returns the length it needed (as snprintf).
 */
size_t cliopt_help(const struct cliopt *opts, char *buf, size_t len);

/* A command's exit codes (cli/exitcode.h), for its help: CLIOPT_EXITS(EXIT_OK, EXIT_FAIL, ...) is a mask. */
#define CLIOPT_EXIT(code) (1u << (code))
/* The codes of every command: 0 ok, 1 failed, 2 usage, 4 cannot here. */
#define CLIOPT_EXITS_COMMON                                                        \
	(CLIOPT_EXIT(EXIT_OK) | CLIOPT_EXIT(EXIT_FAIL) | CLIOPT_EXIT(EXIT_USAGE) | \
	 CLIOPT_EXIT(EXIT_CANNOT))
/*
 * Append the help's exit-code line of the codes in mask ("exit: 0 ok, 1 failed, 2 usage, ..." from the one
 * table of their words, wrapped within 80 columns) to buf at n; returns the new length.
 */
size_t cliopt_exit_help(char *buf, size_t len, size_t n, unsigned mask);
/* The same line printed on f (a help that is a fixed text). */
void cliopt_exit_print(FILE *f, unsigned mask);

/* The one line every command's help says about TIME values (parse_duration's units; bare: us). */
#define CLIOPT_TIME_LINE "TIME: a number and a unit (ns us ms s m h d), e.g. 2s; without one: us\n"

/* One command of a program's table; a table ends with an entry whose name is NULL. */
struct cliopt_cmd {
	const char *name; /* "measure" */
	const char *summary; /* one line of the program's --help */
	/* the command: argv[0] is its name; returns the exit code (shared/cli/exitcode.h) */
	int (*run)(int argc, char **argv);
};

/*
 * The program PROG COMMAND [options]: sets prog as the name of the log lines and of --version, then
 * - no argument: one line "no command (want a, b or c; see 'PROG --help')", EXIT_USAGE;
 * - -h, --help or help: the usage (the commands and their summaries from cmds) on stdout, EXIT_OK;
 * - -V or --version: "PROG VERSION" on stdout (version_print), EXIT_OK;
 * - a command of cmds: its run(argc - 1, argv + 1);
 * - anything else: one line "unknown command 'x' (want a, b or c; see 'PROG --help')", EXIT_USAGE.
 */
int cliopt_dispatch(const char *prog, const struct cliopt_cmd *cmds, int argc, char **argv);

/* The usage cliopt_dispatch prints for --help, into buf; returns the length it needed (as snprintf). */
size_t cliopt_usage(const char *prog, const struct cliopt_cmd *cmds, char *buf, size_t len);

#endif
