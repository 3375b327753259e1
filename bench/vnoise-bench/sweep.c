/* SPDX-License-Identifier: MIT */
/*
 * sweep: seed 003's sensitivity study (its Tables 3-6) with vnoise beside it. One job per level and pass
 * (levels ascending, the 0% baseline first, then again for the next pass):
 *   1. `vnoise-guest inject --cpu C --level L --comm vnb-inject` (not for 0%), started and running;
 *   2. `MPIRUN -np NP --bind-to core <this binary> detect --json --gate FILE ...`: the ranks start and rank 0
 *      waits at the gate;
 *   3. as root, `vnoise-guest monitor --pid <the ranks> --json` (the ranks are mpirun's children named
 *      vnoise-bench); once it has printed its first line its eBPF helper is loaded and attached, and only
 *      then the gate opens: loading it disturbs no counted run, and its window covers all of them;
 *   4. the detector's line; the monitor ends by itself when the ranks exit and prints its summary; the causes
 *      named thread:vnb-inject[TID] are the injector's share of the ranks' time;
 *   5. SIGINT to the injector and its ground-truth line (busy_ns, cpu_ns, wall_ns).
 * Passes exist because on this VM what a job gets at its start stays for its life (the same barrier loop
 * runs 0.2 or 0.5 us per barrier from one job to the next, +-15% for alltoall): with one job per level the
 * comparison with the baseline would be one draw of that against another. Every child is stopped and reaped
 * on every exit path of a job, signals to the sweep included (they only set vnb_stop; every wait returns
 * -EINTR then).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "util/log.h"
#include "util/monotime.h"
#include "util/progress.h"
#include "lib/nstats.h"
#include "util/parse.h"
#include "util/jsonread.h"
#include "vnbench.h"

#define INJECT_START_MS 5000 /* the injector prints its start line at once */
#define RANKS_APPEAR_MS 15000 /* mpirun forks its ranks within a second here */
#define MONITOR_READY_MS 20000 /* eBPF load + the first period (1 s) */
#define JOB_EXIT_MS 30000 /* mpirun after its stdout closed */
#define MONITOR_EXIT_MS 10000 /* the monitor notices exited ranks within 0.1 s */
#define INJECT_STOP_MS 5000
#define INJECT_STOP_EARLY_NS 20000000ULL /* stop this long before the next burst is due */
#define ALPHA 0.05
#define PROGRESS_POLL_MS 250 /* waits wake this often to redraw the progress line */

/* What the monitor said about one job (its period lines summed, its summary). */
struct job_mon {
	uint64_t charged_ns; /* to thread:vnb-inject[...], over the ranks and the period lines */
	uint64_t summary_charged_ns; /* the same from the summary */
	uint64_t wall_ns; /* the summary's t_ns */
	uint64_t run_ns; /* the ranks' run time */
	int periods, summary, bad; /* lines read; bad: lines that did not parse */
};

/* The injector's ground truth for one job. */
struct job_inj {
	uint64_t busy_ns, cpu_ns, wall_ns, count;
};

struct sweep {
	const struct sweep_params *p;
	struct sweep_result *r;
	char self[PATH_MAX]; /* this binary, for mpirun */
	char guest[PATH_MAX]; /* vnoise-guest */
	char tmpdir[64]; /* holds the gate files */
	char *mpirun_argv[SWEEP_MPIRUN_ARGS + 1];
	char mpirun_words[sizeof(((struct sweep_params *)0)->mpirun)];
	int ncpus;
	int root;
	pid_t ranks[SWEEP_NP_MAX]; /* the current job's ranks */
	int nranks;
	struct child inj, job, mon;
	char line[CHILD_BUF];
	char detect_line[CHILD_BUF]; /* the detector's vnoise.detect/1 line */
	struct job_mon jm; /* the current job's monitor output */
	struct job_inj ji; /* the current job's injector ground truth */
	char inj_line[256]; /* the injector's ground-truth line */
	uint64_t inj_t0; /* when its start line came: its first burst */
	double job_secs; /* the last job's wall time */
	struct jsonr_doc *doc;
	struct progress *prog; /* the progress line on a terminal, NULL otherwise */
	char where[48]; /* the job's place for it: "pass 1/3, level 0.5%" */
};

static void on_signal(int sig)
{
	vnb_stop = sig;
}

/* What the sweep does now, on the progress line: "level 0.5%: running the detector". */
static void doing(struct sweep *s, const char *what)
{
	char buf[128];

	if (!s->prog)
		return;
	snprintf(buf, sizeof(buf), "%s%s%s", s->where, s->where[0] ? ": " : "", what);
	progress_update(s->prog, now_ns(), buf);
}

/* A wait's poll timeout: timeout_ms, or at most PROGRESS_POLL_MS when the line is to be redrawn. */
static int poll_ms(const struct sweep *s, int timeout_ms)
{
	if (!s->prog || (timeout_ms >= 0 && timeout_ms < PROGRESS_POLL_MS))
		return timeout_ms;
	return PROGRESS_POLL_MS;
}

/* A line of the sweep's own on stderr: the progress line erased first (it comes back at its next redraw). */
static void say(const struct sweep *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const struct sweep *s, const char *fmt, ...)
{
	va_list ap;

	child_relay_drain();
	progress_clear(s->prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* The highest CPU in /sys/devices/system/cpu/online, and how many there are. */
static int online_cpus(int *last)
{
	int cpus[1024], n = 0;
	char buf[4096] = "";
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = 0;
	if (parse_cpulist(buf, cpus, 1024, 1024, &n) || !n) {
		*last = 0;
		return 1;
	}
	*last = cpus[n - 1];
	return n;
}

/*
 * Paths of this binary and of vnoise-guest: $VNOISE_GUEST, else beside this binary (the build tree), else in
 * ../sbin from it (make install and the packages put vnoise-bench in bin/ and vnoise-guest in sbin/).
 * 0 or -ENOENT.
 */
static int find_tools(struct sweep *s)
{
	static const char *const where[] = { "vnoise-guest", "../sbin/vnoise-guest" };
	const char *env = getenv("VNOISE_GUEST");
	ssize_t n = readlink("/proc/self/exe", s->self, sizeof(s->self) - 1);
	char *slash;
	size_t i;
	int dir;

	if (n <= 0) {
		log_err("cannot read /proc/self/exe: %s", strerror(errno));
		return -ENOENT;
	}
	s->self[n] = 0;
	if (env && *env) {
		snprintf(s->guest, sizeof(s->guest), "%s", env);
		if (access(s->guest, X_OK)) {
			log_err("VNOISE_GUEST=%s: %s", s->guest, strerror(errno));
			return -ENOENT;
		}
		return 0;
	}
	slash = strrchr(s->self, '/');
	dir = slash ? (int)(slash - s->self) : 0;
	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		int w = snprintf(s->guest, sizeof(s->guest), "%.*s/%s", dir, s->self, where[i]);

		if (w > 0 && (size_t)w < sizeof(s->guest) && !access(s->guest, X_OK))
			return 0;
	}
	log_err("no vnoise-guest beside %s or in ../sbin (build it, or set VNOISE_GUEST)", s->self);
	return -ENOENT;
}

static int split_mpirun(struct sweep *s)
{
	char *save = NULL, *w;
	int n = 0;

	snprintf(s->mpirun_words, sizeof(s->mpirun_words), "%s", s->p->mpirun);
	for (w = strtok_r(s->mpirun_words, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
		if (n == SWEEP_MPIRUN_ARGS) {
			log_err("--mpirun: more than %d words", SWEEP_MPIRUN_ARGS);
			return -EINVAL;
		}
		s->mpirun_argv[n++] = w;
	}
	s->mpirun_argv[n] = NULL;
	return n ? 0 : -EINVAL;
}

/* Append " word" to the reproduce command, quoted when the shell would split or expand it. */
static void cmd_add(char *cmd, size_t len, const char *word)
{
	size_t n = strlen(cmd);
	int plain = *word && strspn(word, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					  "0123456789-_.,/=:+") == strlen(word);

	if (n + 4 + strlen(word) >= len)
		return;
	if (plain) {
		snprintf(cmd + n, len - n, "%s%s", n ? " " : "", word);
		return;
	}
	snprintf(cmd + n, len - n, "%s'", n ? " " : "");
	for (const char *c = word; *c; c++) {
		n = strlen(cmd);
		if (n + 6 >= len)
			return;
		if (*c == '\'')
			snprintf(cmd + n, len - n, "'\\''");
		else
			snprintf(cmd + n, len - n, "%c", *c);
	}
	n = strlen(cmd);
	snprintf(cmd + n, len - n, "'");
}

static void build_command(struct sweep *s, const char *argv0)
{
	const struct sweep_params *p = s->p;
	char *cmd = s->r->command, buf[64], levels[SWEEP_LEVELS_MAX * SWEEP_LEVEL_TXT] = "";
	size_t len = sizeof(s->r->command);

	cmd[0] = 0;
	for (int i = 0; i < p->nlevels; i++)
		snprintf(levels + strlen(levels), sizeof(levels) - strlen(levels), "%s%s",
			 i ? "," : "", p->level_txt[i]);
	cmd_add(cmd, len, argv0);
	cmd_add(cmd, len, "sweep");
	cmd_add(cmd, len, "--levels");
	cmd_add(cmd, len, levels);
	cmd_add(cmd, len, "--op");
	cmd_add(cmd, len, opts_op_name(p->d.op));
	snprintf(buf, sizeof(buf), "%d", p->d.count);
	cmd_add(cmd, len, "--count");
	cmd_add(cmd, len, buf);
	if (p->d.op != VNB_OP_BARRIER) {
		snprintf(buf, sizeof(buf), "%d", p->d.size);
		cmd_add(cmd, len, "--size");
		cmd_add(cmd, len, buf);
	}
	snprintf(buf, sizeof(buf), "%d", p->d.runs);
	cmd_add(cmd, len, "--runs");
	cmd_add(cmd, len, buf);
	snprintf(buf, sizeof(buf), "%d", p->d.warmup);
	cmd_add(cmd, len, "--warmup");
	cmd_add(cmd, len, buf);
	if (p->passes > 1) {
		snprintf(buf, sizeof(buf), "%d", p->passes);
		cmd_add(cmd, len, "--passes");
		cmd_add(cmd, len, buf);
	}
	snprintf(buf, sizeof(buf), "%d", p->np);
	cmd_add(cmd, len, "--np");
	cmd_add(cmd, len, buf);
	snprintf(buf, sizeof(buf), "%d", s->r->cpu);
	cmd_add(cmd, len, "--cpu");
	cmd_add(cmd, len, buf);
	if (strcmp(p->mpirun, SWEEP_MPIRUN_DEFAULT)) {
		cmd_add(cmd, len, "--mpirun");
		cmd_add(cmd, len, p->mpirun);
	}
	if (p->json)
		cmd_add(cmd, len, "--json");
}

/* ---- the children's output ---- */

/* "inject: busy_ns=B wall_ns=W count=C cpu_ns=U" (cpu_ns optional) into ji. 0 or -EINVAL. */
static int parse_inject(const char *line, struct job_inj *ji)
{
	unsigned long long b, w, c, u;
	const char *cpu = strstr(line, " cpu_ns=");

	if (sscanf(line, "inject: busy_ns=%llu wall_ns=%llu count=%llu", &b, &w, &c) != 3 || !w)
		return -EINVAL;
	ji->busy_ns = b;
	ji->wall_ns = w;
	ji->count = c;
	ji->cpu_ns = cpu && sscanf(cpu, " cpu_ns=%llu", &u) == 1 ? u : b;
	return 0;
}

static int json_num(const struct jsonr_value *v, double *out)
{
	if (!v)
		return -ENOENT;
	if (v->kind == JSONR_DOUBLE)
		*out = v->d;
	else if (v->kind == JSONR_INT)
		*out = v->neg ? -(double)v->mag : (double)v->mag;
	else
		return -EINVAL;
	return 0;
}

/* The detector's vnoise.detect/1 line: its runs appended to lv's. 0 or -EINVAL (reported). */
static int parse_detect(struct sweep *s, const char *line, int runs, struct sweep_level *lv)
{
	const struct jsonr_value *root, *arr, *v;
	const char *schema;
	size_t n = lv->n;

	if (jsonr_parse(s->doc, line, strlen(line), &root)) {
		log_err("the detector's JSON line does not parse (%s at byte %zu)", s->doc->err,
			s->doc->err_off);
		return -EINVAL;
	}
	schema = jsonr_get_str(jsonr_obj_get(root, "schema"));
	arr = jsonr_obj_get(root, "runs_s");
	if (!schema || strcmp(schema, "vnoise.detect/1") || !arr || arr->kind != JSONR_ARR) {
		log_err("the detector's line is not vnoise.detect/1 with runs_s");
		return -EINVAL;
	}
	for (v = arr->child; v && n < SWEEP_RUNS_MAX; v = v->next)
		if (json_num(v, &lv->runs_s[n++]) || lv->runs_s[n - 1] <= 0) {
			log_err("the detector's runs_s holds a bad value");
			return -EINVAL;
		}
	if (v || n - lv->n != (size_t)runs) {
		log_err("the detector reported %zu runs, not %d", n - lv->n, runs);
		return -EINVAL;
	}
	lv->n = n;
	return 0;
}

/*
 * One line of the monitor. The kernel keeps a target's few largest causes, and a new cause takes the
 * smallest slot with its earlier total lost; so the injector's share is summed over the period lines (each
 * the growth of the slots since the last one, a replaced slot counting from its replacement), which lose
 * only what was replaced within a period, where the summary (first to last snapshot) would lose all of an
 * evicted cause. The summary gives the wall time (t_ns) and the ranks' run time. 0 or -EINVAL.
 */
static int parse_monitor(struct sweep *s, const char *line)
{
	struct job_mon *jm = &s->jm;
	static const char pfx[] = "thread:" SWEEP_INJ_COMM "[";
	const struct jsonr_value *root, *tg, *t, *c;
	const char *kind;
	double tns, run, ns, charged = 0, runs = 0;
	char seen[512];

	if (jsonr_parse(s->doc, line, strlen(line), &root))
		return -EINVAL;
	kind = jsonr_get_str(jsonr_obj_get(root, "kind"));
	tg = jsonr_obj_get(root, "targets");
	if (!kind || json_num(jsonr_obj_get(root, "t_ns"), &tns) || tns <= 0 || !tg ||
	    tg->kind != JSONR_ARR)
		return -EINVAL;
	seen[0] = 0;
	for (t = tg->child; t; t = t->next) {
		const struct jsonr_value *cs = jsonr_obj_get(t, "causes");

		if (json_num(jsonr_obj_get(t, "run_ns"), &run) || !cs || cs->kind != JSONR_ARR)
			return -EINVAL;
		runs += run;
		for (c = cs->child; c; c = c->next) {
			const char *src = jsonr_get_str(jsonr_obj_get(c, "source"));
			size_t len = strlen(seen);

			if (!src || json_num(jsonr_obj_get(c, "ns"), &ns))
				return -EINVAL;
			if (!strncmp(src, pfx, sizeof(pfx) - 1))
				charged += ns;
			snprintf(seen + len, sizeof(seen) - len, " %.40s=%.0fus", src, ns / 1e3);
		}
	}
	if (!strcmp(kind, "period")) {
		jm->charged_ns += (uint64_t)charged;
		jm->periods++;
		return 0;
	}
	if (strcmp(kind, "summary") || !jm->periods || jm->summary)
		return -EINVAL;
	/* Seen twice in ~100 injected jobs here, cause unknown: say what the monitor saw instead. */
	if (s->inj.pid > 0 && !jm->charged_ns)
		log_warn(
		    "the monitor charged nothing to the injector in this job; the ranks' causes:%s",
		    seen);
	jm->wall_ns = (uint64_t)tns;
	jm->summary_charged_ns = (uint64_t)charged;
	jm->run_ns = (uint64_t)runs;
	jm->summary = 1;
	return 0;
}

/* Take every complete line of the job and the monitor, keeping or adding up what the sweep needs. */
static void drain(struct sweep *s)
{
	while (child_line(&s->job, s->line, sizeof(s->line)))
		if (!strncmp(s->line, "{\"schema\":\"vnoise.detect/1\"", 27))
			snprintf(s->detect_line, sizeof(s->detect_line), "%s", s->line);
	while (child_line(&s->mon, s->line, sizeof(s->line)))
		if (parse_monitor(s, s->line))
			s->jm.bad++;
}

static const char *exit_text(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "status 0x%x", status);
	return buf;
}

/* ---- one job ---- */

static int start_injector(struct sweep *s, int li)
{
	char cpu[16];
	char *argv[] = { s->guest, "inject",	   "--cpu",
			 cpu,	   "--level",	   (char *)s->p->level_txt[li],
			 "--comm", SWEEP_INJ_COMM, NULL };
	int r;

	snprintf(cpu, sizeof(cpu), "%d", s->r->cpu);
	r = child_spawn(&s->inj, argv);
	if (r)
		return r;
	r = child_wait_line(&s->inj, s->line, sizeof(s->line), INJECT_START_MS);
	if (r == 1 && !strncmp(s->line, "inject: pid ", 12)) {
		s->inj_t0 = now_ns();
		return 0;
	}
	if (r == -EINTR)
		return r;
	log_err("the injector did not start (%s)",
		r == 0 ? "it exited; see its message above" : "no start line");
	return -EIO;
}

/* mpirun with the detector of d; gate NULL: none. */
static int start_job(struct sweep *s, const struct detect_params *d, const char *gate)
{
	char np[16], count[16], size[16], runs[16], warmup[16];
	char *argv[SWEEP_MPIRUN_ARGS + 32];
	int n = 0;

	snprintf(np, sizeof(np), "%d", s->p->np);
	snprintf(count, sizeof(count), "%d", d->count);
	snprintf(size, sizeof(size), "%d", d->size);
	snprintf(runs, sizeof(runs), "%d", d->runs);
	snprintf(warmup, sizeof(warmup), "%d", d->warmup);
	for (int i = 0; s->mpirun_argv[i]; i++)
		argv[n++] = s->mpirun_argv[i];
	argv[n++] = "-np";
	argv[n++] = np;
	/* One rank per core, rank i on core i, so the last rank shares the injector's CPU. */
	argv[n++] = "--bind-to";
	argv[n++] = s->p->np <= s->ncpus ? "core" : "none";
	argv[n++] = s->self;
	argv[n++] = "detect";
	argv[n++] = "--json";
	argv[n++] = "--op";
	argv[n++] = (char *)opts_op_name(d->op);
	argv[n++] = "--count";
	argv[n++] = count;
	argv[n++] = "--size";
	argv[n++] = size;
	argv[n++] = "--runs";
	argv[n++] = runs;
	argv[n++] = "--warmup";
	argv[n++] = warmup;
	if (gate) {
		argv[n++] = "--gate";
		argv[n++] = (char *)gate;
	}
	argv[n] = NULL;
	return child_spawn(&s->job, argv);
}

/*
 * The ranks: mpirun's children named vnoise-bench (they start within a second here). They are in process
 * groups of their own, so the sweep keeps their pids to kill them should mpirun not. 0 (s->nranks may be
 * short of np after RANKS_APPEAR_MS: reported), -EINTR, or -EIO when the job ended first.
 */
static int find_ranks(struct sweep *s)
{
	uint64_t end = now_ns() + RANKS_APPEAR_MS * 1000000ULL;
	struct child *one[1] = { &s->job };
	int r;

	for (;;) {
		s->nranks = child_proc_named(s->job.pid, "vnoise-bench", s->ranks, s->p->np);
		if (s->nranks == s->p->np)
			return 0;
		r = child_poll(one, 1, 20);
		if (r == -EINTR)
			return r;
		progress_update(s->prog, now_ns(), NULL);
		drain(s);
		if (s->job.fd < 0) {
			log_err("the detector job ended before its ranks were seen");
			return -EIO;
		}
		if (now_ns() > end) {
			log_warn(
			    "found %d of %d ranks (children of mpirun named vnoise-bench) in %d s",
			    s->nranks, s->p->np, RANKS_APPEAR_MS / 1000);
			return 0;
		}
	}
}

/* SIGKILL to the ranks that are still there (and still vnoise-bench: pids are not reused so soon). */
static void kill_ranks(struct sweep *s)
{
	for (int i = 0; i < s->nranks; i++) {
		char path[64], comm[32] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/comm", (int)s->ranks[i]);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strcmp(comm, "vnoise-bench\n"))
			kill(s->ranks[i], SIGKILL);
		fclose(f);
	}
	s->nranks = 0;
}

/*
 * Start the monitor on the ranks and wait until it has printed its first (period) line, i.e. its eBPF
 * helper follows them. 0 with *why NULL, or 0 with a reason in *why when the sweep goes on
 * without it; -EINTR, or -EIO when the job died.
 */
static int start_monitor(struct sweep *s, const char **why)
{
	struct child *both[2] = { &s->mon, &s->job };
	char list[SWEEP_NP_MAX * 12] = "";
	char *argv[] = { s->guest, "monitor", "--pid", list, "--json", NULL };
	uint64_t end;
	int n = s->nranks, r;

	if (!s->root) {
		*why = "needs root";
		return 0;
	}
	if (n != s->p->np) {
		*why = "ranks not found";
		return 0;
	}
	for (int i = 0; i < n; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", i ? "," : "",
			 (int)s->ranks[i]);
	/* Not -q: its first period line is the sign that the helper is attached. */
	r = child_spawn(&s->mon, argv);
	if (r) {
		*why = "monitor failed";
		return 0;
	}
	end = now_ns() + MONITOR_READY_MS * 1000000ULL;
	for (;;) {
		uint64_t now = now_ns();

		if (now >= end) {
			log_warn("the monitor printed nothing in %d s: no monitor at this level",
				 MONITOR_READY_MS / 1000);
			child_stop(&s->mon, SIGINT, 2000);
			*why = "monitor silent";
			return 0;
		}
		r = child_poll(both, 2, poll_ms(s, (int)((end - now) / 1000000 + 1)));
		if (r == -EINTR)
			return r;
		progress_update(s->prog, now_ns(), NULL);
		drain(s);
		if (s->jm.periods || s->jm.bad) /* a line: it is running */
			return 0;
		if (s->mon.fd < 0) {
			child_stop(&s->mon, SIGINT, 2000);
			log_warn("the monitor failed (%s): no monitor at this level",
				 exit_text(s->mon.status, s->line, sizeof(s->line)));
			*why = "monitor failed";
			return 0;
		}
		if (s->job.fd < 0) {
			log_err("the detector job ended at the gate");
			return -EIO;
		}
	}
}

/*
 * SIGINT to the injector, then its ground-truth line. 0 or -EIO / -EINTR. Its bursts start at its start
 * and every second after; stopping it just before a whole number of seconds makes its own share the duty
 * cycle it ran, not one skewed by a burst at the start of a partial second.
 */
static int stop_injector(struct sweep *s)
{
	uint64_t now = now_ns(), k = (now - s->inj_t0) / 1000000000ULL + 1, stop;
	int r;

	stop = s->inj_t0 + k * 1000000000ULL - INJECT_STOP_EARLY_NS;
	if (stop < now)
		stop += 1000000000ULL;
	while (!vnb_stop && (now = now_ns()) < stop) {
		struct timespec ts = { (time_t)((stop - now) / 1000000000ULL),
				       (long)((stop - now) % 1000000000ULL) };

		nanosleep(&ts, NULL);
	}
	if (vnb_stop)
		return -EINTR;
	kill(s->inj.pid, SIGINT);
	for (;;) {
		r = child_wait_line(&s->inj, s->line, sizeof(s->line), INJECT_STOP_MS);
		if (r != 1)
			break;
		if (!strncmp(s->line, "inject: busy_ns=", 16))
			snprintf(s->inj_line, sizeof(s->inj_line), "%.250s", s->line);
	}
	if (r == -EINTR)
		return r;
	child_stop(&s->inj, SIGTERM, INJECT_STOP_MS);
	if (parse_inject(s->inj_line, &s->ji)) {
		log_err("the injector printed no ground truth line");
		return -EIO;
	}
	return 0;
}

/*
 * Collect the job's line (and the monitor's, when it runs) until mpirun closes its stdout, then reap it.
 * 0 when it exited 0 with a vnoise.detect/1 line, -EIO (reported) or -EINTR.
 */
static int job_wait(struct sweep *s)
{
	struct child *both[2] = { &s->job, &s->mon };
	char st[64];
	int r;

	while (s->job.fd >= 0) {
		r = child_poll(both, 2, poll_ms(s, -1));
		if (r == -EINTR)
			return r;
		progress_update(s->prog, now_ns(), NULL);
		drain(s);
	}
	drain(s);
	r = child_reap(&s->job, JOB_EXIT_MS);
	if (r < 0)
		return r;
	if (!r) {
		log_err("mpirun closed its output but did not exit in %d s", JOB_EXIT_MS / 1000);
		return -EIO;
	}
	if (!WIFEXITED(s->job.status) || WEXITSTATUS(s->job.status)) {
		log_err("the detector job failed (%s)", exit_text(s->job.status, st, sizeof(st)));
		return -EIO;
	}
	if (!s->detect_line[0]) {
		log_err("the detector printed no vnoise.detect/1 line");
		return -EIO;
	}
	return 0;
}

/*
 * --run-length: time short detector jobs (no injector, no monitor), growing the count until a run takes
 * 50 ms, and scale the count to the wanted run time (two significant digits). 0 or -EIO / -EINTR.
 */
static int calibrate(struct sweep *s, int *count)
{
	struct detect_params d = s->p->d;
	struct sweep_level *lv = &s->r->lv[0];
	double per_op = 0, c;
	int err = 0;

	d.count = 1000;
	d.runs = 3;
	d.warmup = 1;
	for (int tries = 0; tries < 5; tries++) {
		child_init(&s->job, "mpirun");
		s->detect_line[0] = 0;
		lv->n = 0;
		err = start_job(s, &d, NULL);
		if (!err)
			err = job_wait(s);
		if (!err)
			err = parse_detect(s, s->detect_line, d.runs, lv);
		child_stop(&s->job, SIGTERM, 5000);
		if (err)
			return err;
		if (nstats_summarize(lv->runs_s, lv->n, &lv->sum))
			return -EIO;
		per_op = lv->sum.median / d.count;
		if (lv->sum.median >= 0.05 || d.count >= 100000000)
			break;
		c = d.count * (lv->sum.median > 0 ? 0.1 / lv->sum.median : 100.0);
		d.count = c > 100000000 ? 100000000 : c < 2.0 * d.count ? 2 * d.count : (int)c;
	}
	c = s->p->run_secs / per_op;
	if (c >= 100) {
		double mag = pow(10, floor(log10(c)) - 1);

		c = floor(c / mag + 0.5) * mag;
	}
	*count = c < 1 ? 1 : c > 2000000000.0 ? 2000000000 : (int)c;
	if (!s->p->quiet)
		say(s,
		    "vnoise-bench sweep: calibration: %.3f us per %s, --count %d for %.2f s runs\n",
		    1e6 * per_op, opts_op_name(d.op), *count, s->p->run_secs);
	memset(lv, 0, sizeof(*lv));
	return 0;
}

/*
 * The monitor ends by itself once the ranks are gone: its last lines, then it is stopped. *why is set when
 * its output is unusable. 0 or -EINTR.
 */
static int monitor_finish(struct sweep *s, const struct sweep_level *lv, const char **why)
{
	struct child *one[1] = { &s->mon };
	uint64_t end = now_ns() + MONITOR_EXIT_MS * 1000000ULL;

	doing(s, "waiting for the monitor's summary");
	while (s->mon.fd >= 0 && now_ns() < end) {
		if (child_poll(one, 1, poll_ms(s, MONITOR_EXIT_MS)) == -EINTR)
			return -EINTR;
		progress_update(s->prog, now_ns(), NULL);
		drain(s);
	}
	drain(s);
	child_stop(&s->mon, SIGINT, 2000);
	if (!s->jm.summary || s->jm.bad) {
		log_warn("the monitor's output at level %s%% is unusable (%d bad lines%s)",
			 lv->level_txt, s->jm.bad, s->jm.summary ? "" : ", no summary");
		*why = "monitor output unusable";
	}
	return 0;
}

/*
 * One job of level li with runs counted runs: injector, detector, monitor, and their figures added to the
 * level's. Every child is stopped and reaped before it returns. 0, -EIO (reported) or -EINTR.
 */
static int sweep_job(struct sweep *s, int li, int runs)
{
	const struct sweep_params *p = s->p;
	struct sweep_level *lv = &s->r->lv[li];
	struct detect_params d = p->d;
	const char *mon_why = NULL;
	char gate[128];
	uint64_t t0 = now_ns();
	int fd, err = 0;

	d.runs = runs;
	child_init(&s->inj, "vnoise-guest inject");
	child_init(&s->job, "mpirun");
	child_init(&s->mon, "vnoise-guest monitor");
	s->detect_line[0] = s->inj_line[0] = 0;
	memset(&s->jm, 0, sizeof(s->jm));
	memset(&s->ji, 0, sizeof(s->ji));
	snprintf(gate, sizeof(gate), "%s/gate", s->tmpdir);

	if (lv->level > 0) {
		doing(s, "starting the injector");
		err = start_injector(s, li);
		if (err)
			goto out;
	}
	doing(s, "starting the detector");
	err = start_job(s, &d, gate);
	if (err)
		goto out;
	err = find_ranks(s);
	if (err)
		goto out;
	doing(s, "starting the monitor");
	err = start_monitor(s, &mon_why);
	if (err)
		goto out;
	fd = open(gate, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		log_err("cannot create the gate %s: %s", gate, strerror(errno));
		goto out;
	}
	close(fd);
	doing(s, "running the detector");
	err = job_wait(s);
	if (err)
		goto out;
	err = parse_detect(s, s->detect_line, runs, lv);
	if (err)
		goto out;

	if (!mon_why) {
		err = monitor_finish(s, lv, &mon_why);
		if (err)
			goto out;
	}
	if (lv->level > 0) {
		doing(s, "stopping the injector");
		err = stop_injector(s);
		if (err)
			goto out;
		lv->inj_busy_ns += s->ji.busy_ns;
		lv->inj_cpu_ns += s->ji.cpu_ns;
		lv->inj_wall_ns += s->ji.wall_ns;
		lv->inj_count += s->ji.count;
		lv->inj_jobs++;
	}
	if (mon_why) {
		lv->mon_why = mon_why;
	} else {
		lv->mon_charged_ns += s->jm.charged_ns;
		lv->mon_summary_charged_ns += s->jm.summary_charged_ns;
		lv->mon_ns += s->jm.wall_ns;
		lv->mon_run_ns += s->jm.run_ns;
		lv->mon_periods += s->jm.periods;
		lv->mon_jobs++;
	}
out:
	/* The injector first: it must never be left running. */
	child_stop(&s->inj, SIGINT, INJECT_STOP_MS);
	child_stop(&s->job, SIGTERM, 5000);
	kill_ranks(s);
	child_stop(&s->mon, SIGINT, 2000);
	child_reap_orphans(1000);
	unlink(gate);
	s->job_secs = (double)(now_ns() - t0) / 1e9;
	lv->secs += s->job_secs;
	lv->jobs++;
	return err;
}

/* After the last pass: the level's shares, summary and comparison with the baseline. 0 or -EINVAL. */
static int level_finish(struct sweep *s, int li)
{
	struct sweep_level *lv = &s->r->lv[li];

	if (nstats_summarize(lv->runs_s, lv->n, &lv->sum)) {
		log_err("cannot summarize the runs of level %s%%", lv->level_txt);
		return -EINVAL;
	}
	if (li > 0) {
		const struct sweep_level *b = &s->r->lv[0];

		lv->cmp_ok = !nstats_compare(b->runs_s, b->n, lv->runs_s, lv->n, ALPHA, &lv->cmp);
	}
	lv->mon_ok = !lv->mon_why && lv->mon_jobs == lv->jobs && lv->mon_ns;
	if (lv->mon_ok)
		lv->attributed_pct = 100.0 * (double)lv->mon_charged_ns / (double)lv->mon_ns;
	lv->inj_ok = lv->level > 0 && lv->inj_jobs == lv->jobs && lv->inj_wall_ns;
	if (lv->inj_ok)
		lv->inj_pct = 100.0 * (double)lv->inj_cpu_ns / (double)lv->inj_wall_ns;
	return 0;
}

static void report_job(const struct sweep *s, int li, int pass, size_t first)
{
	const struct sweep_level *lv = &s->r->lv[li];
	struct nstats_summary sum;

	if (s->p->quiet || nstats_summarize(lv->runs_s + first, lv->n - first, &sum))
		return;
	child_relay_drain();
	progress_clear(s->prog);
	fprintf(stderr, "vnoise-bench sweep: pass %d/%d, level %s%%: %zu runs, median %.6f s",
		pass + 1, s->p->passes, lv->level_txt, lv->n - first, sum.median);
	/* this job's figures (the level's are in the table) */
	if (s->jm.summary && !s->jm.bad && s->jm.wall_ns)
		fprintf(stderr, "; vnoise %.4f%%", 100.0 * s->jm.charged_ns / s->jm.wall_ns);
	if (s->ji.wall_ns)
		fprintf(stderr, ", injector %.4f%%", 100.0 * s->ji.cpu_ns / s->ji.wall_ns);
	fprintf(stderr, " (%.1f s)\n", s->job_secs);
}

/* The signals that stop a sweep, caught (no SA_RESTART: poll and waits return EINTR) from install to
 * restore. */
struct sweep_signals {
	struct sigaction old_int, old_term, old_hup;
	int set;
};

static void signals_install(struct sweep_signals *ss)
{
	struct sigaction sa;

	vnb_stop = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &ss->old_int);
	sigaction(SIGTERM, &sa, &ss->old_term);
	sigaction(SIGHUP, &sa, &ss->old_hup);
	ss->set = 1;
}

static void signals_restore(const struct sweep_signals *ss)
{
	if (!ss->set)
		return;
	sigaction(SIGINT, &ss->old_int, NULL);
	sigaction(SIGTERM, &ss->old_term, NULL);
	sigaction(SIGHUP, &ss->old_hup, NULL);
}

/* Zero sw and res and tie them to p; the injector CPU, the mpirun command, the children, the tools.
 * Returns 0, or the exit code (with a message). */
static int sweep_init(struct sweep *sw, struct sweep_result *res, const struct sweep_params *p)
{
	int last;

	memset(sw, 0, sizeof(*sw));
	memset(res, 0, sizeof(*res));
	sw->p = p;
	sw->r = res;
	res->p = p;
	sw->ncpus = online_cpus(&last);
	res->cpu = p->cpu >= 0 ? p->cpu : last;
	sw->root = geteuid() == 0;
	if (split_mpirun(sw)) {
		log_err("--mpirun: no command");
		return EXIT_USAGE;
	}
	child_init(&sw->inj, "vnoise-guest inject");
	child_init(&sw->job, "mpirun");
	child_init(&sw->mon, "vnoise-guest monitor");
	if (find_tools(sw))
		return EXIT_FAIL;
	return 0;
}

/*
 * Calibrate the job size when asked (p->d.count), then every pass over every level and each level's summary
 * into sw->r. Returns 0 or -errno (-EINTR: a signal came, every child stopped).
 */
static int sweep_run(struct sweep *sw, struct sweep_params *p, const char *argv0)
{
	struct sweep_result *res = sw->r;
	int err = 0;

	sw->prog = progress_start_steps("sweep", p->passes > 1 ? "job" : "level",
					p->passes * p->nlevels, p->quiet);
	/* The children's messages go through us, so that they do not end up glued to the line. */
	err = child_relay_open(sw->prog);
	if (err)
		log_debug("no relay for the children's stderr: %s", strerror(-err));
	err = 0;
	if (p->run_secs > 0) {
		int count;

		doing(sw, "calibrating the count");
		err = calibrate(sw, &count);
		if (err)
			return err;
		p->d.count = count;
	}
	build_command(sw, argv0);
	if (!p->quiet)
		say(sw,
		    "vnoise-bench sweep: %d levels, %s x %d, %d ranks, %d runs per level in %d "
		    "pass(es) (+%d warm-up per job), injector on CPU %d%s\n",
		    p->nlevels, opts_op_name(p->d.op), p->d.count, p->np, p->d.runs, p->passes,
		    p->d.warmup, res->cpu, sw->root ? "" : "; not root: no vnoise attribution");
	for (int li = 0; li < p->nlevels; li++) {
		memset(&res->lv[li], 0, sizeof(res->lv[li]));
		res->lv[li].level = p->level[li];
		res->lv[li].level_txt = p->level_txt[li];
	}
	/* Passes over all levels: what stays fixed for a job's life is spread over every level. */
	for (int pass = 0; pass < p->passes && !err; pass++) {
		for (int li = 0; li < p->nlevels && !err; li++) {
			int runs = p->d.runs / p->passes + (pass < p->d.runs % p->passes);
			size_t first = res->lv[li].n;

			if (p->passes > 1)
				snprintf(sw->where, sizeof(sw->where), "pass %d/%d, level %s%%",
					 pass + 1, p->passes, p->level_txt[li]);
			else
				snprintf(sw->where, sizeof(sw->where), "level %s%%",
					 p->level_txt[li]);
			err = sweep_job(sw, li, runs);
			if (err)
				break;
			report_job(sw, li, pass, first);
			doing(sw, "done");
			progress_step(sw->prog, pass * p->nlevels + li + 1, now_ns());
		}
	}
	child_relay_close(); /* every child is stopped */
	progress_end(sw->prog); /* the results follow */
	sw->prog = NULL;
	for (int li = 0; li < p->nlevels && !err; li++) {
		err = level_finish(sw, li);
		res->nlevels = li + 1;
	}
	return err;
}

/* Stop every child (injector, job, stray ranks, monitor), reap orphans, remove the gate directory. */
static void sweep_teardown(struct sweep *sw)
{
	child_stop(&sw->inj, SIGINT, INJECT_STOP_MS);
	child_stop(&sw->job, SIGTERM, 5000);
	kill_ranks(sw);
	child_stop(&sw->mon, SIGINT, 2000);
	child_reap_orphans(1000);
	child_relay_close();
	progress_end(sw->prog);
	sw->prog = NULL;
	prctl(PR_SET_CHILD_SUBREAPER, 0);
	if (sw->tmpdir[0])
		rmdir(sw->tmpdir);
	jsonr_doc_free(sw->doc);
}

int sweep_main(int argc, char **argv, const char *argv0)
{
	static struct sweep_result res;
	static struct sweep sw;
	struct sweep_params p;
	struct sweep_signals sig = { .set = 0 };
	char msg[256];
	uint64_t t0 = now_ns();
	int ret, err = 0;

	log_set_prog("vnoise-bench sweep");
	if (opts_sweep_parse(argc, argv, &p, msg, sizeof(msg))) {
		log_err("%s", msg);
		return EXIT_USAGE;
	}
	if (p.help) {
		fputs(sweep_usage, stdout);
		cliopt_exit_print(stdout, CLIOPT_EXITS_COMMON);
		return EXIT_OK;
	}
	if (getenv("OMPI_COMM_WORLD_RANK") || getenv("PMIX_RANK")) {
		log_err("run sweep without mpirun: it starts mpirun itself");
		return EXIT_USAGE;
	}
	ret = sweep_init(&sw, &res, &p);
	if (ret)
		return ret;
	ret = EXIT_FAIL;
	sw.doc = jsonr_doc_new(CHILD_BUF, 1024); /* a child's line, at most 1024 values */
	snprintf(sw.tmpdir, sizeof(sw.tmpdir), "/tmp/vnoise-bench.XXXXXX");
	if (!sw.doc || !mkdtemp(sw.tmpdir)) {
		log_err("setup: %s", strerror(errno));
		sw.tmpdir[0] = 0;
		goto out;
	}
	signals_install(&sig);
	/* Orphaned ranks (mpirun killed) become ours to reap, not init's. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	err = sweep_run(&sw, &p, argv0);
	if (err) {
		if (err == -EINTR)
			log_err("interrupted: every child stopped");
		goto out;
	}
	res.secs = (double)(now_ns() - t0) / 1e9;
	sweepout_verdicts(&res);
	if (sweepout_print(&res, p.json)) {
		log_err("writing the results failed");
		goto out;
	}
	ret = EXIT_OK;
out:
	sweep_teardown(&sw);
	signals_restore(&sig);
	if (err == -EINTR)
		ret = 128 + (vnb_stop ? vnb_stop : SIGINT);
	return ret;
}
