/* SPDX-License-Identifier: MIT */
/*
 * vnoise-guest monitor: passive mode (issue 5). No sampler: the passive kernel helper accumulates the noise
 * that hits target tasks (processes, a cgroup v2, or the user tasks of CPUs) and this loop prints, every
 * period, per target: its run time, its noise by class and its largest causes, as a table or as JSON lines
 * (schema vnoise.monitor/1), then a summary over the whole run. The table fits 80 columns: one unit per
 * column, the target's name last, each cause on a line of its own; vnoise's own thread is marked "(vnoise)".
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/cliopt.h"
#include "util/log.h"
#include "measure/measure.h"
#include "attrib/merge.h"
#include "monitor/monitor.h"
#include "util/json.h"
#include "util/monotime.h"
#include "util/parse.h"
#include "util/version.h"
#include "bpf/passive_loader.h"
#include "monitor/tgtdiff.h"

struct mon_target {
	int idx; /* passive target index */
	int pid; /* process target; 0 otherwise */
	char name[64]; /* "pid:1234", "cgroup:/sys/fs/cgroup/x", "cpu:3" */
	char comm[17];
	struct vn_tgt prev, first;
	int gone;
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

const char *monitor_cause_name(const struct vn_tgt_cause *c, char *buf, size_t len)
{
	switch (c->cls) {
	case VN_CLASS_THREAD:
		snprintf(buf, len, "thread:%.16s[%u]", c->comm, c->id);
		break;
	case VN_CLASS_IRQ:
		if (c->id >= VN_VEC_BASE)
			snprintf(buf, len, "irq:%s", merge_vector_name(c->id - VN_VEC_BASE));
		else
			snprintf(buf, len, "irq:%u", c->id);
		break;
	case VN_CLASS_SOFTIRQ:
		snprintf(buf, len, "softirq:%s", merge_softirq_name(c->id));
		break;
	default:
		snprintf(buf, len, "%s", merge_class_name(c->cls));
	}
	return buf;
}

uint64_t monitor_noise_total(const struct vn_tgt *t)
{
	uint64_t s = 0;

	for (int c = 1; c < VN_CLASS_MAX; c++)
		s += t->ns[c];
	return s;
}

static void read_comm(int pid, char *comm, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(comm, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, (int)len, f))
		comm[strcspn(comm, "\n")] = 0;
	fclose(f);
}

/* Whether a cause is this process (monitor's own thread: it runs alone). */
static int cause_is_self(const struct vn_tgt_cause *c)
{
	return c->cls == VN_CLASS_THREAD && c->id == (uint32_t)getpid();
}

/* Causes of b that grew since a, largest first, into out (at most VN_TGT_CAUSES). */
static int cause_delta(const struct vn_tgt *a, const struct vn_tgt *b, struct vn_tgt_cause *out)
{
	int n = 0;

	for (int i = 0; i < VN_TGT_CAUSES; i++) {
		const struct vn_tgt_cause *c = &b->cause[i];
		uint64_t d = tgt_cause_grew(c, &a->cause[i]);

		if (!d)
			continue;
		out[n] = *c;
		out[n].ns = d;
		for (int j = n; j > 0 && out[j].ns > out[j - 1].ns; j--) {
			struct vn_tgt_cause t = out[j];

			out[j] = out[j - 1];
			out[j - 1] = t;
		}
		n++;
	}
	return n;
}

/* One target's JSON object: the change from a to b. */
static void json_target(struct json_writer *w, const struct mon_target *t, const struct vn_tgt *a,
			const struct vn_tgt *b)
{
	struct vn_tgt_cause cs[VN_TGT_CAUSES];
	int n = cause_delta(a, b, cs);
	char nm[64];

	json_obj_begin(w);
	json_kv_str(w, "target", t->name);
	json_kv_str(w, "comm", t->comm);
	json_kv_u64(w, "run_ns", b->run_ns - a->run_ns);
	json_kv_u64(w, "noise_total_ns", monitor_noise_total(b) - monitor_noise_total(a));
	json_key(w, "noise_ns");
	json_obj_begin(w);
	for (int c = 1; c < VN_CLASS_MAX - 1; c++)
		json_kv_u64(w, merge_class_name(c), b->ns[c] - a->ns[c]);
	json_obj_end(w);
	json_key(w, "count");
	json_obj_begin(w);
	for (int c = 1; c < VN_CLASS_MAX - 1; c++)
		json_kv_u64(w, merge_class_name(c), b->count[c] - a->count[c]);
	json_obj_end(w);
	json_key(w, "causes");
	json_arr_begin(w);
	for (int k = 0; k < n; k++) {
		json_obj_begin(w);
		json_kv_str(w, "source", monitor_cause_name(&cs[k], nm, sizeof(nm)));
		json_kv_str(w, "class", merge_class_name(cs[k].cls));
		json_kv_u64(w, "ns", cs[k].ns);
		if (cause_is_self(&cs[k]))
			json_kv_bool(w, "vnoise", 1);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_kv_bool(w, "exited", t->gone);
	json_obj_end(w);
}

/* One vnoise.monitor/1 line through the JSON writer (a comm may hold any byte). */
static void print_json(const struct mon_target *t, int nt, const struct vn_tgt *cur, uint64_t t_ns,
		       uint64_t period_ns, int summary)
{
	struct json_writer w;

	json_init(&w, stdout, 0);
	json_obj_begin(&w);
	json_kv_str(&w, "schema", "vnoise.monitor/1");
	json_kv_str(&w, "version", version_string());
	json_kv_str(&w, "kind", summary ? "summary" : "period");
	json_kv_u64(&w, "t_ns", t_ns);
	json_kv_u64(&w, "period_ns", period_ns);
	json_key(&w, "targets");
	json_arr_begin(&w);
	for (int i = 0; i < nt; i++)
		json_target(&w, &t[i], summary ? &t[i].first : &t[i].prev, &cur[i]);
	json_arr_end(&w);
	json_obj_end(&w);
	if (json_finish(&w))
		log_debug("monitor: a JSON line was not written whole");
}

/* One target's row (b - a) and its causes, one line each. */
static void table_row(const struct mon_target *t, const struct vn_tgt *a, const struct vn_tgt *b)
{
	struct vn_tgt_cause cs[VN_TGT_CAUSES];
	int n = cause_delta(a, b, cs);
	uint64_t run = b->run_ns - a->run_ns, tot = monitor_noise_total(b) - monitor_noise_total(a);
	char nm[64];

	printf("%8.1f %8.3f %10.1f %7.1f %8.1f %7.1f %9.1f  %s (%s)%s\n", run / 1e6,
	       run + tot ? 100.0 * (double)tot / (double)(run + tot) : 0.0,
	       (b->ns[VN_CLASS_THREAD] - a->ns[VN_CLASS_THREAD]) / 1e3,
	       (b->ns[VN_CLASS_IRQ] - a->ns[VN_CLASS_IRQ]) / 1e3,
	       (b->ns[VN_CLASS_SOFTIRQ] - a->ns[VN_CLASS_SOFTIRQ]) / 1e3,
	       (b->ns[VN_CLASS_NMI] - a->ns[VN_CLASS_NMI]) / 1e3,
	       (b->ns[VN_CLASS_STEAL] - a->ns[VN_CLASS_STEAL]) / 1e3, t->name, t->comm,
	       t->gone ? " exited" : "");
	for (int k = 0; k < n; k++)
		printf("    cause %10.1f us  %s%s\n", cs[k].ns / 1e3,
		       monitor_cause_name(&cs[k], nm, sizeof(nm)),
		       cause_is_self(&cs[k]) ? " (vnoise)" : "");
}

static void print_table(const struct mon_target *t, int nt, const struct vn_tgt *cur, double secs,
			int summary)
{
	if (summary)
		printf("summary over %.2f s\n", secs);
	else
		printf("%8.2f s\n", secs);
	printf("%8s %8s %10s %7s %8s %7s %9s  %s\n", "RUN(ms)", "NOISE(%)", "THREAD(us)", "IRQ(us)",
	       "SIRQ(us)", "NMI(us)", "STEAL(us)", "TARGET");
	for (int i = 0; i < nt; i++)
		table_row(&t[i], summary ? &t[i].first : &t[i].prev, &cur[i]);
	fflush(stdout);
}

static const struct cliopt opts[] = {
	{ .id = CLIOPT_PID,
	  .help = "processes (all their threads), e.g. 1234,5678; stops when all have exited" },
	{ .id = CLIOPT_CGROUP, .help = "a cgroup v2 directory (repeatable)" },
	{ .id = CLIOPT_CPUS,
	  .help = "the user tasks running on these CPUs (kernel threads are noise)" },
	{ .id = CLIOPT_DURATION,
	  .help = "stop after TIME (default: until Ctrl-C or the processes exit)" },
	/* a bare --period was in seconds */
	{ .id = CLIOPT_PERIOD,
	  .help = "print every TIME (default 1s, at least 10ms)",
	  .bare_unit = "s" },
	{ .id = CLIOPT_JSON, .help = "JSON lines (schema vnoise.monitor/1) instead of the table" },
	{ .id = CLIOPT_QUIET, .help = "only the summary" },
	{ .id = CLIOPT_HELP },
	/* one release: -g and -P had these meanings here (-p was --pid: now --period, see parse_period) */
	{ .letter = 'g', .alias_of = CLIOPT_CGROUP },
	{ .letter = 'P', .alias_of = CLIOPT_PERIOD },
	{ 0 },
};

const char *monitor_usage(void)
{
	static char usage[4096];
	int n;

	if (!usage[0]) {
		n = snprintf(
		    usage, sizeof(usage), "%s",
		    "usage: vnoise-guest monitor (--pid LIST | --cgroup DIR | --cpus LIST) "
		    "[options]\n"
		    "Passive mode: no sampler; the noise that hits the target tasks (their "
		    "preemption while runnable,\n"
		    "IRQs/softirqs/NMIs while they ran, steal), per target, every period. Needs "
		    "root (eBPF).\n"
		    "TIME: a number and a unit ns us ms s m h (without one: us)\n");
		cliopt_help(opts, usage + n, sizeof(usage) - (size_t)n);
	}
	return usage;
}

static int parse_pids(struct cliopt_parser *ps, struct monitor_params *p)
{
	char buf[1024], *save = NULL, *tok;
	int pid;

	if (snprintf(buf, sizeof(buf), "%s", ps->arg) >= (int)sizeof(buf))
		return cliopt_fail(ps, "--pid: list too long");
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (parse_int(tok, 1, 1 << 30, &pid) || p->npid >= MONITOR_MAX)
			return cliopt_fail(
			    ps, "--pid: '%s' is not a process id (or more than %d targets)", tok,
			    MONITOR_MAX);
		p->pids[p->npid++] = pid;
	}
	return 0;
}

static int parse_duration_opt(struct cliopt_parser *ps, struct monitor_params *p)
{
	if (cliopt_time(ps, &p->duration_ns))
		return -EINVAL;
	if (!p->duration_ns)
		return cliopt_fail(ps, "--duration: bad duration '%s' (want > 0)", ps->arg);
	return 0;
}

/* -p is --period now: "-p 1234" (the old --pid) fails with the time rule's line and a pointer to --pid. */
static int parse_period(struct cliopt_parser *ps, struct monitor_params *p)
{
	size_t n;
	int rc = cliopt_time(ps, &p->period_ns);

	if (rc && !strcmp(ps->spelled, "-p")) {
		n = strlen(ps->err);
		snprintf(ps->err + n, ps->errlen - n, "; for a process write --pid %s", ps->arg);
	}
	if (rc)
		return rc;
	if (p->period_ns < 10000000ULL)
		return cliopt_fail(ps, "invalid --period '%s': at least 10ms", ps->arg);
	return 0;
}

static int parse_opt(struct cliopt_parser *ps, int c, struct monitor_params *p)
{
	const struct cliopt_flags flags = { .json = &p->json, .quiet = &p->quiet };

	if (cliopt_flag(c, &flags))
		return 0;
	switch (c) {
	case CLIOPT_PID:
		return parse_pids(ps, p);
	case CLIOPT_CGROUP:
		if (p->ncg >= MONITOR_MAX)
			return cliopt_fail(ps, "--cgroup: at most %d", MONITOR_MAX);
		p->cgroups[p->ncg++] = ps->arg;
		return 0;
	case CLIOPT_CPUS:
		if (parse_cpulist(ps->arg, p->cpus, VN_TGT_MAX, VN_TGT_MAX, &p->ncpus) || !p->ncpus)
			return cliopt_fail(ps, "--cpus: bad CPU list '%s' (want a list like 0,2-3)",
					   ps->arg);
		return 0;
	case CLIOPT_DURATION:
		return parse_duration_opt(ps, p);
	case CLIOPT_PERIOD:
		return parse_period(ps, p);
	default: /* CLIOPT_HELP */
		return 1;
	}
}

int monitor_parse(int argc, char **argv, struct monitor_params *p, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	int c, rc;

	memset(p, 0, sizeof(*p));
	p->period_ns = 1000000000ULL;
	rc = cliopt_init(&ps, opts, argc, argv, err, errlen);
	while (!rc && (c = cliopt_next(&ps)) != 0)
		rc = c < 0 ? c : parse_opt(&ps, c, p);
	if (rc)
		return rc;
	if (optind < argc)
		return cliopt_fail(&ps, "unexpected argument '%s'", argv[optind]);
	if (!p->npid && !p->ncg && !p->ncpus)
		return cliopt_fail(&ps, "no target: give --pid, --cgroup or --cpus");
	if (p->npid + p->ncg + p->ncpus > MONITOR_MAX)
		return cliopt_fail(&ps, "at most %d targets", MONITOR_MAX);
	return 0;
}

/* The processes and cgroups exist (a usage error when not). */
static int check_targets(const struct monitor_params *p)
{
	struct stat st;
	char procs[4200];

	for (int i = 0; i < p->npid; i++)
		if (kill(p->pids[i], 0) && errno == ESRCH) {
			log_err("--pid: no process %d", p->pids[i]);
			return EXIT_USAGE;
		}
	for (int i = 0; i < p->ncg; i++) {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", p->cgroups[i]);
		if (stat(p->cgroups[i], &st) || !S_ISDIR(st.st_mode) || access(procs, F_OK)) {
			log_err("--cgroup: '%s' is not a cgroup v2 directory", p->cgroups[i]);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

/* One monitor run: the targets, their counters at the last print, the passive helper. */
struct mon_run {
	const struct monitor_params *p;
	struct mon_target t[MONITOR_MAX];
	struct vn_tgt cur[MONITOR_MAX];
	int nt;
	struct passive *pv;
	uint64_t t0;
};

/* Open the passive helper and follow every target; an exit code on failure. */
static int open_targets(struct mon_run *r)
{
	const struct monitor_params *p = r->p;
	struct passive_opts po = { .cpus = p->cpus, .ncpus = p->ncpus, .cgroups = p->ncg };
	struct mon_target *t = r->t;
	const char *why;
	struct stat st;
	int err = passive_open(&r->pv, &po, &why);

	if (err) {
		log_err("passive kernel helper: %s", why);
		return err == -EPERM ? EXIT_CANNOT : EXIT_FAIL;
	}
	for (int i = 0; i < p->npid; i++, r->nt++) {
		t[r->nt].pid = p->pids[i];
		snprintf(t[r->nt].name, sizeof(t[r->nt].name), "pid:%d", p->pids[i]);
		t[r->nt].idx = passive_add_pid(r->pv, p->pids[i]);
		read_comm(p->pids[i], t[r->nt].comm, sizeof(t[r->nt].comm));
		if (t[r->nt].idx < 0) {
			log_err("cannot follow pid %d: %s", p->pids[i], strerror(-t[r->nt].idx));
			return EXIT_FAIL;
		}
	}
	for (int i = 0; i < p->ncg; i++, r->nt++) {
		stat(p->cgroups[i], &st);
		t[r->nt].idx = passive_add_cgroup(r->pv, (uint64_t)st.st_ino);
		if (t[r->nt].idx < 0) {
			log_err("cannot follow cgroup %s: %s", p->cgroups[i],
				strerror(-t[r->nt].idx));
			return EXIT_FAIL;
		}
		snprintf(t[r->nt].name, sizeof(t[r->nt].name), "cgroup:%.50s", p->cgroups[i]);
		snprintf(t[r->nt].comm, sizeof(t[r->nt].comm), "-");
	}
	for (int i = 0; i < p->ncpus; i++, r->nt++) {
		t[r->nt].idx = i;
		snprintf(t[r->nt].name, sizeof(t[r->nt].name), "cpu:%d", p->cpus[i]);
		snprintf(t[r->nt].comm, sizeof(t[r->nt].comm), "user tasks");
	}
	return EXIT_OK;
}

/* Read every target's counters into cur. */
static void snapshot(struct mon_run *r)
{
	for (int i = 0; i < r->nt; i++)
		r->cur[i] = *passive_tgt(r->pv, r->t[i].idx);
}

/* Print cur against the last print (summary: against the start). */
static void report(const struct mon_run *r, uint64_t now, int summary)
{
	if (r->p->json)
		print_json(r->t, r->nt, r->cur, now - r->t0,
			   summary ? now - r->t0 : r->p->period_ns, summary);
	else
		print_table(r->t, r->nt, r->cur, (now - r->t0) / 1e9, summary);
}

/* Sleep until next or the end of the run, at most 0.1 s (to notice exited processes). */
static void wait_until(const struct mon_run *r, uint64_t next)
{
	uint64_t now = now_ns(), end = r->t0 + r->p->duration_ns, d;
	struct timespec ts;

	if (now >= next)
		return;
	d = next - now;
	if (r->p->duration_ns && end < next)
		d = end > now ? end - now : 0;
	if (d > 100000000ULL)
		d = 100000000ULL;
	ts.tv_sec = (time_t)(d / 1000000000ULL);
	ts.tv_nsec = (long)(d % 1000000000ULL);
	nanosleep(&ts, NULL);
}

/* Targets still there (a cgroup or CPU always is); marks the processes that exited. */
static int count_alive(struct mon_run *r)
{
	int alive = 0;

	for (int i = 0; i < r->nt; i++) {
		struct mon_target *t = &r->t[i];

		if (t->pid && !t->gone && kill(t->pid, 0) && errno == ESRCH)
			t->gone = 1;
		alive += !t->pid || !t->gone;
	}
	return alive;
}

/* Print every period until the duration, a signal, or (processes only) all of them exited. */
static void run(struct mon_run *r)
{
	const struct monitor_params *p = r->p;
	uint64_t now, next;
	int alive;

	for (int i = 0; i < r->nt; i++)
		r->t[i].first = r->t[i].prev = *passive_tgt(r->pv, r->t[i].idx);
	r->t0 = now_ns();
	next = r->t0 + p->period_ns;
	if (!p->json && !p->quiet)
		printf("vnoise-guest monitor: %d target%s, period %.2f s (passive: no sampler)\n",
		       r->nt, r->nt == 1 ? "" : "s", p->period_ns / 1e9);
	while (!g_stop) {
		if (p->duration_ns && now_ns() >= r->t0 + p->duration_ns)
			break;
		wait_until(r, next);
		now = now_ns();
		alive = count_alive(r);
		if (now >= next || !alive) {
			snapshot(r);
			if (!p->quiet)
				report(r, now, 0);
			for (int i = 0; i < r->nt; i++)
				r->t[i].prev = r->cur[i];
			next += p->period_ns;
			if (next < now)
				next = now + p->period_ns;
		}
		if (p->npid == r->nt && !alive)
			break;
	}
}

int monitor_main(int argc, char **argv)
{
	struct monitor_params p;
	struct mon_run *r;
	struct sigaction sa = { .sa_handler = on_signal };
	char err[256];
	int rc = monitor_parse(argc, argv, &p, err, sizeof(err));

	if (rc == 1) {
		fputs(monitor_usage(), stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-guest monitor --help')", err);
		return EXIT_USAGE;
	}
	rc = check_targets(&p);
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return EXIT_FAIL;
	r->p = &p;
	rc = open_targets(r);
	if (rc)
		goto out;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	run(r);
	snapshot(r);
	report(r, now_ns(), 1);
	if (!passive_runs(r->pv))
		log_warn("the passive helper saw no target run: are the targets on this machine?");
out:
	passive_close(r->pv);
	free(r);
	return rc;
}
