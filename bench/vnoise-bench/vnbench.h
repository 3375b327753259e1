/* SPDX-License-Identifier: MIT */
/*
 * vnoise-bench: seed 003's collective-operation noise detector and its sensitivity study.
 *   detect  (an MPI program, under mpirun) times R runs of a loop of N collectives after W warm-ups;
 *   sweep   (not under mpirun) runs detect at injection levels 0 .. 1% with `vnoise-guest inject` on one
 *           CPU and `vnoise-guest monitor` on the ranks, and prints the paper's Tables 3-6 layout with what
 *           vnoise attributed to the injector beside it.
 * This header is private to bench/vnoise-bench/: the option parsers (pure functions, opts.c), the child
 * process helpers of the sweep (child.c) and the sweep's result types shared by sweep.c and sweepout.c.
 */
#ifndef VNOISE_VNBENCH_H
#define VNOISE_VNBENCH_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include "lib/nstats.h"

#include "cli/exitcode.h"

enum vnb_op { VNB_OP_BARRIER = 0, VNB_OP_ALLREDUCE = 1, VNB_OP_ALLTOALL = 2 };

#define VNB_COUNT_DEFAULT 200000
#define VNB_SIZE_DEFAULT 2048 /* bytes: seed 003's most stable alltoall */
#define VNB_SIZE_MAX (16 << 20) /* bytes per peer (alltoall) or per rank (allreduce) */
#define VNB_RUNS_DEFAULT 10
#define VNB_WARMUP_DEFAULT 2
#define VNB_WARMUP_MAX 1000
#define VNB_PATH_MAX 4096

/* `vnoise-bench detect` options. */
struct detect_params {
	int op; /* enum vnb_op */
	int count; /* collectives per run */
	int size; /* bytes: alltoall per peer, allreduce as size / 8 doubles (at least one) */
	int runs; /* counted runs, 1 .. NSTATS_MAX */
	int warmup; /* runs done first and not counted */
	int json; /* -j: one vnoise.detect/1 line instead of the text */
	char gate
	    [VNB_PATH_MAX]; /* --gate FILE: rank 0 waits for FILE before the first run; "" = none */
	int help;
};

#define SWEEP_LEVELS_MAX 16
#define SWEEP_LEVEL_TXT 16 /* "0.0000001" and the NUL fit */
#define SWEEP_RUNS_MAX 1000 /* the detect line must fit the JSON reader (qga: 1024 values) */
#define SWEEP_NP_MAX 64
#define SWEEP_MPIRUN_ARGS 32
#define SWEEP_MPIRUN_DEFAULT "mpirun --oversubscribe --allow-run-as-root"

/* `vnoise-bench sweep` options. */
struct sweep_params {
	int nlevels;
	double level[SWEEP_LEVELS_MAX]; /* percent, ascending, level[0] == 0 (the baseline) */
	char level_txt[SWEEP_LEVELS_MAX][SWEEP_LEVEL_TXT]; /* as given, for `inject --level` */
	struct detect_params
	    d; /* what each level's detect runs (json, gate are set by the sweep) */
	int np; /* ranks */
	int passes; /* runs of a level are split over this many jobs, one per pass over all levels */
	int cpu; /* injector CPU; -1 = the last online CPU */
	double
	    run_secs; /* --run-length in s; > 0: calibrate the count for runs of about this long */
	int quick;
	int json;
	int quiet; /* no progress lines on stderr */
	char mpirun[1024]; /* the launcher command, split on blanks */
	int help;
};

/*
 * Parsers on the common option table (shared/cli/cliopt.h): pure but for the warning line of a deprecated
 * spelling (sweep --run-length). argv[0] is the subcommand's name and is skipped. Options take their value as
 * the next argument or after '='; a TIME takes a unit (a bare number is in microseconds). Return 0 and fill
 * *p (p->help set for -h/--help), or -EINVAL with a one-line message (no prefix, no newline) in err.
 */
int opts_detect_parse(int argc, char **argv, struct detect_params *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));
int opts_sweep_parse(int argc, char **argv, struct sweep_params *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));
const char *opts_op_name(int op);
extern const char detect_usage[];
extern const char sweep_usage[];

/* The subcommands; they return the process exit status. */
int detect_main(int argc, char **argv);
int sweep_main(int argc, char **argv, const char *argv0);

/* ---- child processes of the sweep (child.c) ---- */

#define CHILD_BUF 65536 /* longest line kept from a child's stdout */

/*
 * A child with its stdout on a pipe (stdin /dev/null, stderr shared with ours or relayed: child_relay_open),
 * in its own process group
 * (terminal signals reach only the sweep, which stops its children in order) and killed with SIGTERM should
 * the sweep die first (PR_SET_PDEATHSIG). Lines are collected by child_poll() and taken with
 * child_line().
 */
struct child {
	const char *name; /* for messages */
	pid_t pid; /* -1: not started or reaped */
	int fd; /* read end of its stdout, -1 at EOF */
	int status; /* wait status once reaped */
	int reaped;
	int overflow; /* a line longer than CHILD_BUF was dropped */
	size_t len; /* bytes in buf */
	char buf[CHILD_BUF];
};

/*
 * The signal number set by the sweep's SIGINT/SIGTERM/SIGHUP handler, 0 before; every wait below returns
 * -EINTR once it is set.
 */
extern volatile sig_atomic_t vnb_stop;

void child_init(struct child *c, const char *name);
/* Start argv[0] (searched in PATH) with argv. 0 or -errno (reported). */
int child_spawn(struct child *c, char *const argv[]) __attribute__((warn_unused_result));
/*
 * Wait up to timeout_ms (-1: no limit) until one of the n children has a complete line or reached EOF, and
 * collect what is readable. 0, -ETIMEDOUT or -EINTR (vnb_stop).
 */
int child_poll(struct child *const *cs, int n, int timeout_ms);
/*
 * Take the next complete line of c (without its newline) into line. 1 a line, 0 none buffered (check
 * c->fd < 0 for EOF; a last unterminated line is returned at EOF).
 */
int child_line(struct child *c, char *line, size_t len);
/* Wait for one line of c for up to timeout_ms: 1 a line, 0 EOF, -ETIMEDOUT or -EINTR. */
int child_wait_line(struct child *c, char *line, size_t len, int timeout_ms);
/*
 * Reap c if it has exited, waiting up to timeout_ms (0: just look). 1 reaped (c->status), 0 still running,
 * -EINTR.
 */
int child_reap(struct child *c, int timeout_ms);
/*
 * Stop c: sig to the child, up to grace_ms for it to exit, then SIGKILL to its whole process group; always
 * reaps it and closes its pipe. Safe on a child that never started or was reaped.
 */
void child_stop(struct child *c, int sig, int grace_ms);

/*
 * SIGKILL whatever children are left and reap them, waiting up to timeout_ms: with PR_SET_CHILD_SUBREAPER,
 * ranks orphaned by a killed mpirun. Only once every struct child is reaped (it kills and waits for any).
 */
void child_reap_orphans(int timeout_ms);

/*
 * While the sweep's progress line p is on the terminal: every child started from now on writes its stderr
 * (and its ranks theirs) into one pipe that child_poll() also reads, and whole lines of it are printed on
 * our stderr after the line is erased (progress_clear), so they are never glued to it. p NULL: nothing (the
 * children share our stderr). 0 or -errno (then the children share our stderr).
 */
struct progress;
int child_relay_open(struct progress *p) __attribute__((warn_unused_result));
/* Print what the children wrote so far (whole lines); called before the sweep prints a line itself. */
void child_relay_drain(void);
/* Print the rest (an unterminated last line too) and close the pipe; then children share our stderr. */
void child_relay_close(void);

/*
 * Pids of the processes whose parent is ppid and whose comm is comm (NULL: any), ascending, at most max.
 * Returns the number found.
 */
int child_proc_named(pid_t ppid, const char *comm, pid_t *pids, int max);

/* ---- sweep results (sweep.c fills, sweepout.c prints) ---- */

/* One level; the figures of its jobs (one per pass) are summed. */
struct sweep_level {
	double level; /* percent */
	const char *level_txt;
	int jobs; /* jobs run */
	size_t n; /* runs, all jobs */
	double runs_s[SWEEP_RUNS_MAX];
	struct nstats_summary sum;
	int cmp_ok; /* cmp holds the comparison with the baseline (levels after the first) */
	struct nstats_cmp cmp;
	/* vnoise-guest monitor on the ranks */
	int mon_ok; /* every job's monitor output was read */
	const char *mon_why; /* else why not ("needs root", ...) */
	int mon_jobs; /* jobs whose monitor output was read */
	int mon_periods; /* period lines read */
	uint64_t mon_ns; /* its wall time (summary t_ns) */
	uint64_t mon_charged_ns; /* to thread:vnb-inject[...], the ranks' period lines summed */
	uint64_t mon_summary_charged_ns; /* the same from the summaries (lose evicted causes) */
	uint64_t mon_run_ns; /* the ranks' run time */
	double attributed_pct; /* 100 * charged / wall */
	/* vnoise-guest inject's ground truth */
	int inj_ok; /* the injector ran in every job and its line was read */
	int inj_jobs;
	uint64_t inj_busy_ns, inj_cpu_ns, inj_wall_ns, inj_count;
	double inj_pct; /* 100 * cpu / wall (cpu: busy when the injector does not print it) */
	double secs; /* the level's wall time, everything included */
};

struct sweep_result {
	const struct sweep_params *p;
	int cpu; /* the injector's CPU */
	char command[2048]; /* the command that reproduces the sweep */
	int nlevels; /* levels done */
	struct sweep_level lv[SWEEP_LEVELS_MAX];
	int lowest_detected; /* index into lv, -1 none */
	int lowest_attributed; /* index into lv, -1 none */
	double secs;
};

/* The comm of the injector thread: causes named thread:SWEEP_INJ_COMM[TID] are the injector's. */
#define SWEEP_INJ_COMM "vnb-inject"

/* Fill lowest_detected and lowest_attributed from the levels. */
void sweepout_verdicts(struct sweep_result *r);
/* Print the table and the verdict lines (text) or one vnoise.sweep/1 document (json). 0 or -EIO. */
int sweepout_print(const struct sweep_result *r, int json);

struct json_writer;
/* "key":[lo,hi] of a confidence interval, or null when it is not usable (detect.c; the sweep's JSON too). */
void detect_json_ci(struct json_writer *w, const char *key, int ok, double lo, double hi);

#endif
