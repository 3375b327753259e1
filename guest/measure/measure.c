/* SPDX-License-Identifier: MIT */
/*
 * measure: the live engine. It runs samplers on the chosen CPUs, the eBPF kernel helper (or the /proc counters
 * fallback), feeds the merge engine from the main thread every 50 ms and drives one view (chosen once:
 * views/view.h) and, for record, the recorder. What it changes — its own threads' affinity and policy, BPF
 * programs, BPF run-time stats (held by an fd, so dropped even on SIGKILL) — is undone on every exit path;
 * SIGINT/SIGTERM/SIGHUP/SIGQUIT end the run through the same path.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include "bpf/ktrace_loader.h"
#include "dtl/dtl.h"
#include "measure/hypsplit.h"
#include "util/log.h"
#include "util/outfile.h"
#include "measure/cpuclaim.h"
#include "measure/measure.h"
#include "util/parse.h"
#include "util/progress.h"
#include "procfs/procstat.h"
#include "record.h"
#include "measure/sampler.h"
#include "views/view.h"
#include "views/view_worst.h"
#include "format/recwriter.h"
#include "views/view_record.h"
#include "util/monotime.h"
#include "util/version.h"

#define POLL_NS 50000000ULL
#define HORIZON_LAG_NS \
	100000000ULL /* attribute gaps once every event that can touch them arrived */
#define REFRESH_MIN_NS 1000000000ULL /* a view refreshes every period, at most once a second */
#define NSIGS 4

static const int sigs[NSIGS] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

struct run {
	const struct measure_params *p;
	const struct view_ops *ops; /* the view, chosen once */
	struct view v;
	struct sampler *smp;
	struct ktrace *kh;
	struct procstat_irqnames *irqn;
	struct procstat_snap *snap0;
	struct view_record *rec; /* record only */
	int quit; /* an interactive view's q */
	/* the host's dispatch trace log (state absent without one), NULL for a sink */
	struct dtl *dtl;
	int merge_err;
	int stop; /* the samplers' stop flag */
	int started; /* the samplers were let go at t0 */
	int stopped; /* 1: --stop-single hit, 2: --stop-total hit */
	int hitfd; /* eventfd the samplers write on a --stop-single hit; -1: none */
	uint64_t *hits_seen; /* per sampler: its hits already acted on */
	unsigned char *total_hit; /* per CPU: --stop-total crossed (acted on once) */
	uint64_t nhits, nchains; /* threshold hits, and chains run for them */
	uint64_t t0, now; /* ns: when the samplers were let go, the latest drain */
	uint64_t *lost_seen; /* per sampler: drops already reported to the sink */
	uint64_t ktrace_lost_seen;
	struct progress *prog; /* measure/record -d on a terminal, NULL otherwise */
	struct cpuclaim claims; /* one vnoise sampler per CPU */
	char doing[PATH_MAX + 64]; /* its phrase: "measuring CPUs 0-1" */
};

static const char *irq_name_cb(void *ctx, uint32_t irq)
{
	return ctx ? procstat_irq_name(ctx, irq) : NULL;
}

/* Online CPUs from sysfs into cpus[]; returns count or -errno. */
static int online_cpus(int *cpus, int max)
{
	char buf[4096];
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	int n = 0, rc;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	rc = parse_cpulist(buf, cpus, max, PARAMS_MAX_CPUS, &n);
	return rc ? rc : n;
}

/* Whether this run attributes its records itself: always, but for an embedder's sink (which attributes them)
 * unless it also records (-o: the file holds the run's own split, as record's does). */
static bool merges(const struct run *r)
{
	return !r->p->sink || r->p->output;
}

/* Every record taken in goes to the merge engine (or the embedder's sink, which attributes) and the recorder. */
static void on_event(void *ctx, const struct vn_event *e)
{
	struct run *r = ctx;
	int err = merges(r) ? merge_add_event(r->v.m, e) : 0;

	if (err == -ENOMEM)
		r->merge_err = err;
	if (r->p->sink && r->p->sink->event)
		r->p->sink->event(r->p->sink->ctx, e);
	if (r->rec)
		view_record_event(r->rec, e);
}

static void on_sample(struct run *r, const struct vn_sample *s)
{
	int err = merges(r) ? merge_add_sample(r->v.m, s) : 0;

	if (err == -ENOMEM)
		r->merge_err = err;
	if (r->p->sink && r->p->sink->sample)
		r->p->sink->sample(r->p->sink->ctx, s);
	if (r->rec)
		view_record_sample(r->rec, s);
}

/* Tell the sink about records lost before it saw them: sampler rings per CPU, the BPF ring buffer. */
static void sink_lost(struct run *r)
{
	const struct measure_sink *t = r->p->sink;
	uint64_t kd;
	int i;

	for (i = 0; i < r->v.ncpus && r->lost_seen; i++) {
		uint64_t d = __atomic_load_n(&r->smp[i].dropped, __ATOMIC_RELAXED);

		if (d > r->lost_seen[i] && t->lost)
			t->lost(t->ctx, r->v.cpus[i], d - r->lost_seen[i]);
		r->lost_seen[i] = d;
	}
	if (r->kh && t->lost && (kd = ktrace_dropped(r->kh)) > r->ktrace_lost_seen) {
		t->lost(t->ctx, -1, kd - r->ktrace_lost_seen);
		r->ktrace_lost_seen = kd;
	}
}

static void drain(struct run *r)
{
	struct vn_sample buf[1024];
	int i;
	size_t n, k;

	for (i = 0; i < r->v.ncpus; i++) {
		while ((n = sampler_drain(&r->smp[i], buf, 1024)) > 0)
			for (k = 0; k < n; k++)
				on_sample(r, &buf[k]);
	}
	if (r->kh && ktrace_drain(r->kh, on_event, r) < 0)
		log_warn("draining the kernel helper failed");
	if (r->p->sink)
		sink_lost(r);
}

static void collect_overhead(struct run *r)
{
	struct ktrace_stats st;
	int i;

	r->v.sampler_dropped = r->v.sampler_iterations = r->v.sampler_loop_ns = 0;
	for (i = 0; i < r->v.ncpus; i++) {
		r->v.sampler_dropped += __atomic_load_n(&r->smp[i].dropped, __ATOMIC_RELAXED);
		r->v.sampler_iterations += __atomic_load_n(&r->smp[i].iterations, __ATOMIC_RELAXED);
		r->v.sampler_loop_ns += __atomic_load_n(&r->smp[i].loop_ns, __ATOMIC_RELAXED);
	}
	r->v.sampler_dropped += view_record_dropped(r->rec);
	if (r->kh && !ktrace_get_stats(r->kh, &st)) {
		r->v.bpf_events = st.events;
		r->v.bpf_dropped = st.dropped;
		r->v.bpf_desync = st.desync;
		r->v.bpf_run_cnt = st.run_cnt;
		r->v.bpf_run_ns = st.run_time_ns;
		r->v.nprogs = 0;
		for (i = 0; i < st.nprogs && i < VIEW_MAX_PROGS; i++) {
			snprintf(r->v.progs[i].name, sizeof(r->v.progs[i].name), "%s",
				 st.progs[i].name);
			r->v.progs[i].run_cnt = st.progs[i].run_cnt;
			r->v.progs[i].run_ns = st.progs[i].run_time_ns;
			r->v.nprogs++;
		}
	}
}

/* proc fallback: per-CPU counter deltas between the start snapshot and now. */
static void proc_finish(struct run *r)
{
	struct procstat_snap *s1 = procstat_snap_new();
	int i, k;

	if (!s1 || procstat_snap_read(s1)) {
		log_warn("reading /proc counters at the end failed");
		procstat_snap_free(s1);
		return;
	}
	for (i = 0; i < r->v.ncpus; i++) {
		struct procstat_delta d;
		struct view_proc *vp = &r->v.proc[i];

		if (procstat_delta(r->snap0, s1, (unsigned int)r->v.cpus[i], &d))
			continue;
		vp->valid = 1;
		vp->count[VN_CLASS_NMI] = d.nmi;
		vp->count[VN_CLASS_IRQ] = d.irq;
		vp->count[VN_CLASS_SOFTIRQ] = d.softirq;
		vp->count[VN_CLASS_THREAD] = d.ctxsw;
		vp->steal_ns = d.steal_ns;
		vp->count[VN_CLASS_STEAL] = d.steal_ns ? 1 : 0;
		for (k = 0; k < (int)d.ntop && k < 8; k++) {
			snprintf(vp->src[k].name, sizeof(vp->src[k].name), "%s", d.top[k].name);
			vp->src[k].cls = d.top[k].cls;
			vp->src[k].count = d.top[k].count;
		}
		vp->nsrc = k;
	}
	procstat_snap_free(s1);
}

static int setup_cpus(struct run *r)
{
	const struct measure_params *p = r->p;
	int online[PARAMS_MAX_CPUS], non, i, j;

	non = online_cpus(online, PARAMS_MAX_CPUS);
	if (non < 0) {
		log_err("cannot read the online CPUs: %s", strerror(-non));
		return EXIT_FAIL;
	}
	if (p->cpus_all) {
		memcpy(r->v.cpus, online, (size_t)non * sizeof(int));
		r->v.ncpus = non;
		return 0;
	}
	for (i = 0; i < p->ncpus; i++) {
		for (j = 0; j < non && online[j] != p->cpus[i]; j++)
			;
		if (j == non) {
			char path[64];

			snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d", p->cpus[i]);
			log_err("CPU %d is %s", p->cpus[i],
				access(path, F_OK) ? "not present on this machine" : "offline");
			return EXIT_CANNOT;
		}
		r->v.cpus[i] = p->cpus[i];
	}
	r->v.ncpus = p->ncpus;
	return 0;
}

/* Keep the main thread off the measured CPUs when another CPU is available. */
static void housekeeping_affinity(struct run *r)
{
	cpu_set_t set;
	int i, any = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (i = 0; i < r->v.ncpus; i++)
		CPU_CLR(r->v.cpus[i], &set);
	for (i = 0; i < CPU_SETSIZE; i++)
		any |= CPU_ISSET(i, &set);
	if (any && sched_setaffinity(0, sizeof(set), &set))
		log_debug("could not move the main thread off the measured CPUs");
}

static int start_helper(struct run *r)
{
	const struct measure_params *p = r->p;
	struct ktrace_opts ko = { .cpus = r->v.cpus, .ncpus = r->v.ncpus, .no_hcall = p->no_hcall };
	const char *why = "";
	int err;

	r->v.helper = "proc";
	r->v.steal_source = "proc-stat";
	if (p->helper == HELPER_PROC)
		goto proc;
	if (geteuid() != 0) {
		if (p->helper == HELPER_BPF) {
			log_err("--helper bpf needs root (or CAP_BPF+CAP_PERFMON)");
			return EXIT_CANNOT;
		}
		log_warn("not root: no eBPF kernel helper; using the counters-only /proc fallback "
			 "(kernel_helper \"proc\": no per-source durations)");
		goto proc;
	}
	err = ktrace_open(&r->kh, &ko, &why);
	if (err) {
		if (p->helper == HELPER_BPF) {
			log_err("eBPF kernel helper unavailable: %s (%s)", why, strerror(-err));
			return EXIT_CANNOT;
		}
		log_warn("eBPF kernel helper unavailable: %s (%s); using the counters-only /proc "
			 "fallback",
			 why, strerror(-err));
		goto proc;
	}
	r->v.helper = "bpf";
	r->v.steal_source = ktrace_steal_source(r->kh);
	r->v.nhcalls = ktrace_nhcalls(r->kh);
	return 0;
proc:
	r->v.proc = calloc((size_t)r->v.ncpus, sizeof(*r->v.proc));
	r->snap0 = procstat_snap_new();
	if (!r->v.proc || !r->snap0 || procstat_snap_read(r->snap0)) {
		log_err("cannot read the /proc counters");
		return EXIT_FAIL;
	}
	return 0;
}

/* The view's overhead counters and duration as of now. */
static void snapshot(struct run *r)
{
	collect_overhead(r);
	r->v.duration_ns = r->now - r->t0;
}

/* A CPU for the clock responder off the measured ones (-1: every online CPU is measured). */
static int responder_cpu(const struct run *r)
{
	int online[PARAMS_MAX_CPUS], non = online_cpus(online, PARAMS_MAX_CPUS), i, j;

	for (i = 0; i < non; i++) {
		for (j = 0; j < r->v.ncpus && r->v.cpus[j] != online[i]; j++)
			;
		if (j == r->v.ncpus)
			return online[i];
	}
	return -1;
}

/*
 * The host's dispatch trace log and the hypervisor split over it; this process answers the host's clock
 * requests unless another one does. No DTL is not an error (the views say "dtl":"absent").
 */
static int setup_dtl(struct run *r)
{
	/* an embedder (the agent) answers the clock itself */
	struct dtl_params dp = { .responder = !r->p->sink, .responder_cpu = responder_cpu(r) };
	char why[160] = "";
	int err = dtl_open(&r->dtl, &dp, why, sizeof(why));

	if (err) {
		log_warn("host dispatch trace log unavailable: %s (%s)", why, strerror(-err));
		r->dtl = NULL;
	}
	r->v.dtl = dtl_state_name(r->dtl ? dtl_state(r->dtl) : DTL_ABSENT);
	if (!r->dtl)
		return 0;
	r->v.hs = hypsplit_new(r->dtl, 0);
	if (!r->v.hs) {
		log_err("out of memory");
		return -ENOMEM;
	}
	hypsplit_set_part_fn(r->v.hs, view_hyp_cb, &r->v);
	log_debug("host dispatch trace log: %s", r->v.dtl);
	return 0;
}

/* Read what the host published and split the gaps its horizon passed (now_ns: UINT64_MAX at the end). */
static void take_dtl(struct run *r, uint64_t now_ns)
{
	if (!r->dtl)
		return;
	dtl_poll(r->dtl);
	hypsplit_process(r->v.hs, now_ns);
	r->v.dtl = dtl_state_name(dtl_state(r->dtl));
	r->v.dtl_late = hypsplit_late(r->v.hs);
	if (r->v.hs_err)
		r->merge_err = -ENOMEM;
}

/*
 * At the end: wait (at most HYPSPLIT_WAIT_NS) for the horizon of a publishing host to pass the last gaps,
 * then split them; what it did not reach is attributed without the DTL (counted late).
 */
static void finish_dtl(struct run *r)
{
	uint64_t deadline = now_ns() + HYPSPLIT_WAIT_NS;

	if (!r->dtl)
		return;
	take_dtl(r, now_ns());
	while (hypsplit_pending_end(r->v.hs) && dtl_state(r->dtl) == DTL_OK &&
	       now_ns() < deadline) {
		struct timespec ts = { 0, 50000000L };

		nanosleep(&ts, NULL);
		take_dtl(r, now_ns());
	}
	take_dtl(r, UINT64_MAX);
}

/* The view's settings and tables for the chosen CPUs, the IRQ names and the kernel helper. */
/*
 * One vnoise sampler per CPU (measure/cpuclaim), before anything is attached: a CPU another holds is
 * refused (exit 8), or with --force measured, said and marked (its sampler thread among vnoise's own).
 */
static int claim_cpus(struct run *r)
{
	const char *what = r->p->sink ? "agent" : params_cmd_name(r->p->cmd);
	int warned = 0;

	cpuclaim_init(&r->claims, NULL);
	for (int i = 0; i < r->v.ncpus; i++) {
		struct cpuclaim_holder h;
		int err = cpuclaim_take(&r->claims, r->v.cpus[i], what, &h);

		if (err == -EBUSY && !r->p->force) {
			log_err("CPU %d is sampled by vnoise-guest %s (pid %d): two samplers on "
				"one CPU "
				"count each other as noise; stop it, choose other CPUs (-c) or add "
				"--force",
				h.cpu, h.what, h.pid);
			return EXIT_CONFLICT;
		}
		if (err == -EBUSY) {
			struct view_shared *sh = &r->v.shared[r->v.nshared++];

			sh->cpu = h.cpu;
			sh->pid = h.pid;
			snprintf(sh->what, sizeof(sh->what), "%s", h.what);
			if (h.tid > 0)
				r->v.self[r->v.nself++] = h.tid;
			log_warn(
			    "CPU %d is sampled by vnoise-guest %s (pid %d) too (--force): each "
			    "counts the other as noise; its sampler is marked (vnoise)",
			    h.cpu, h.what, h.pid);
		} else if (err && !warned) {
			warned =
			    1; /* not root: /run is root's (and so are the samplers that matter most) */
			if (err == -EACCES || err == -EPERM)
				log_debug(
				    "cannot check for another vnoise sampler on CPU %d (%s: %s)",
				    r->v.cpus[i], CPUCLAIM_DIR, strerror(-err));
			else
				log_warn(
				    "cannot check for another vnoise sampler on CPU %d (%s: %s)",
				    r->v.cpus[i], CPUCLAIM_DIR, strerror(-err));
		}
	}
	return 0;
}

static int setup_view(struct run *r)
{
	const struct measure_params *p = r->p;
	int rc;

	r->v.threshold_ns = p->threshold_ns;
	r->v.period_ns = p->period_ns;
	r->v.runtime_ns = p->runtime_ns;
	r->v.top_n = p->top_n;
	r->v.wide = p->wide;
	r->v.bucket_ns = p->bucket_ns;
	r->v.entries = p->entries;
	r->v.version = version_string();
	r->v.irq_name = irq_name_cb;
	r->v.self[r->v.nself++] =
	    (int)getpid(); /* the main thread; the samplers join in start_samplers */
	rc = setup_cpus(r);
	if (!rc)
		rc = claim_cpus(r);
	if (rc)
		return rc;
	if (p->cmd == CMD_TOP && view_period_new(&r->v)) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	r->v.m = merge_new(view_gap_cb, &r->v);
	r->v.hist = calloc((size_t)r->v.ncpus, sizeof(*r->v.hist)); /* zero-filled: empty */
	r->smp = calloc((size_t)r->v.ncpus, sizeof(*r->smp));
	r->lost_seen = calloc((size_t)r->v.ncpus, sizeof(*r->lost_seen));
	r->hits_seen = calloc((size_t)r->v.ncpus + 1, sizeof(*r->hits_seen));
	r->total_hit = calloc((size_t)r->v.ncpus + 1, 1);
	if (!r->v.m || !r->v.hist || !r->smp || !r->lost_seen || !r->hits_seen || !r->total_hit) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	r->irqn = procstat_irqnames_read();
	r->v.irq_ctx = r->irqn;
	if (merges(r) && setup_dtl(r))
		return EXIT_FAIL;
	return start_helper(r);
}

/* The record file could not be written (err, -errno): one line, and 4 for a full disk, else 1. */
static int record_failed(struct run *r, int err)
{
	char why[512];

	view_record_error_text(r->rec, err, r->p->output, why, sizeof(why));
	log_err("%s", why);
	return outfile_exit_code(err);
}

/* record: create the file and write its META chunk. */
static int setup_record(struct run *r)
{
	const char *path = r->p->output;
	int err;

	r->rec = view_record_open(path);
	if (!r->rec) {
		err = errno;
		log_err("cannot create '%s': %s", path, outfile_strerror(-err));
		return outfile_exit_code(-err);
	}
	if (r->v.hs)
		hypsplit_set_recorder(r->v.hs, view_record_dtl_span, view_record_dtl_gap, r->rec);
	err = view_record_start(r->rec, &r->v);
	return err ? record_failed(r, err) : 0;
}

/* One pinned sampler per CPU, each ready (its tid given to the kernel helper) before any is let go. */
static int start_samplers(struct run *r)
{
	const struct measure_params *p = r->p;
	int i, err;

	if (p->stop_single_ns &&
	    !p->sink) { /* a hit wakes the main loop at once (its actions, the stop) */
		r->hitfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (r->hitfd < 0) {
			log_err("cannot make an eventfd for the threshold hits: %s",
				strerror(errno));
			return EXIT_FAIL;
		}
	}
	for (i = 0; i < r->v.ncpus; i++) {
		struct sampler *s = &r->smp[i];

		s->cpu = r->v.cpus[i];
		s->policy = p->policy;
		s->prio = p->prio;
		s->threshold_ns = p->threshold_ns;
		s->period_ns = p->period_ns;
		s->runtime_ns = p->runtime_ns;
		s->stop_single_ns = p->stop_single_ns;
		s->stop = &r->stop;
		s->hit_fd = r->hitfd;
		s->keep_going = actions_continues(&p->on_threshold);
		err = sampler_start(s);
		if (!err)
			err = sampler_wait_ready(s);
		if (err) {
			log_err("CPU %d: cannot %s: %s", s->cpu,
				s->err_what ? s->err_what : "start the sampler", strerror(-err));
			return err == -EPERM ? EXIT_CANNOT : EXIT_FAIL;
		}
		ktrace_set_sampler(r->kh, s->cpu, s->tid);
		cpuclaim_set_tid(&r->claims, s->cpu, s->tid);
		r->v.self[r->v.nself++] = s->tid;
	}
	return 0;
}

/* The view, the samplers (waiting for their go), then the record file, whose META names their tids. */
static int run_setup(struct run *r)
{
	int rc = setup_view(r);

	if (rc)
		return rc;
	housekeeping_affinity(r);
	rc = start_samplers(r);
	if (!rc && r->p->output) /* record, or an embedder that records too */
		rc = setup_record(r);
	if (!rc && r->ops->start)
		r->ops->start(&r->v, r->p->duration_ns);
	return rc;
}

/* One pass of the loop at r->now: take in what arrived, attribute the gaps up to the horizon, record. */
static int run_take(struct run *r, uint64_t horizon)
{
	int err;

	drain(r);
	if (merges(r) && merge_process(r->v.m, horizon))
		r->merge_err = -ENOMEM;
	take_dtl(r, r->now);
	if (r->rec && (err = view_record_flush(r->rec)))
		return record_failed(r, err);
	if (r->merge_err) {
		log_err("out of memory while attributing noise");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* --on-threshold trace, --on-end trace: the worst gap of every CPU so far with its parts, the tail and the
 * lead-up, into file (replaced atomically; a later hit replaces it again). A hit waits first until every
 * event of its gap can have arrived (HORIZON_LAG_NS after its end) and attributes up to then. */
static int trace_write(void *ctx, const char *file, const struct action_hit *hit)
{
	struct run *r = ctx;
	char tmp[PATH_MAX], at[32];
	int fd, err;
	FILE *f;

	if (hit->cpu >= 0) {
		uint64_t until = hit->end_ns + HORIZON_LAG_NS;

		r->now = now_ns();
		if (r->now < until) {
			struct timespec ts = { (time_t)((until - r->now) / 1000000000ULL),
					       (long)((until - r->now) % 1000000000ULL) };

			nanosleep(&ts, NULL);
			r->now = now_ns();
		}
		if (run_take(r, r->now - HORIZON_LAG_NS))
			return -1;
	}
	fd = outfile_tmp_open(file, tmp, sizeof(tmp), 0644);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		err = fd < 0 ? fd : -errno;
		if (fd >= 0)
			close(fd);
		log_err("trace: %s: %s (the chain stops)", file, outfile_strerror(err));
		return -1;
	}
	if (hit->cpu >= 0)
		fprintf(f,
			"vnoise-guest --on-threshold trace: CPU %d, a %.1f us gap ending at %s\n",
			hit->cpu, hit->duration_ns / 1e3,
			view_since_start(at, sizeof(at), &r->v, hit->end_ns));
	else
		fprintf(f, "vnoise-guest --on-end trace: %.3f s measured\n",
			(r->now - r->t0) / 1e9);
	view_worst_text(f, &r->v);
	view_leadup(f, &r->v);
	err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -errno;
	if (!err)
		err = outfile_tmp_commit(tmp, file);
	else if (tmp[0])
		unlink(tmp);
	if (err) {
		log_err("trace: %s: %s (the chain stops)", file, outfile_strerror(err));
		return -1;
	}
	return 0;
}

/* A hit: the --on-threshold chain (if any); whether the run goes on (the chain reached continue). */
static bool on_hit(struct run *r, const struct action_hit *hit)
{
	r->nhits++;
	if (!r->p->on_threshold.n)
		return false;
	r->nchains++;
	return actions_run(&r->p->on_threshold, "--on-threshold", hit, trace_write, r) == 1;
}

/* The hits since the last look: each acted on once (--stop-single by its sampler's count, --stop-total when a
 * CPU's noise first crosses it); r->stopped when one stops the run. */
static void run_hits(struct run *r)
{
	const struct measure_params *p = r->p;
	uint64_t one;
	int i;

	if (r->hitfd >= 0 && read(r->hitfd, &one, sizeof(one)) < 0) {
		/* EAGAIN: no sampler woke us */
	}
	for (i = 0; i < r->v.ncpus && !r->stopped; i++) {
		struct sampler *s = &r->smp[i];
		uint64_t h = __atomic_load_n(&s->hits, __ATOMIC_ACQUIRE);

		if (h > r->hits_seen[i]) {
			struct action_hit hit = {
				s->cpu, __atomic_load_n(&s->hit_ns, __ATOMIC_RELAXED),
				__atomic_load_n(&s->hit_end_ns, __ATOMIC_RELAXED)
			};

			r->hits_seen[i] = h;
			if (!on_hit(r, &hit))
				r->stopped = 1;
		}
	}
	for (i = 0; p->stop_total_ns && i < r->v.ncpus && !r->stopped; i++) {
		const struct merge_cpu *mc = merge_cpu(r->v.m, r->v.cpus[i]);

		if (mc && mc->noise_ns > p->stop_total_ns && !r->total_hit[i]) {
			struct action_hit hit = { r->v.cpus[i], mc->noise_ns, r->now };

			r->total_hit[i] = 1;
			if (!on_hit(r, &hit))
				r->stopped = 2;
		}
	}
}

/* Whether the run is over: a signal, q on the screen, the embedder's stop, --duration, or a --stop-* hit
 * that its chain did not continue (r->stopped). */
static int run_over(struct run *r)
{
	const struct measure_params *p = r->p;

	if (got_signal || r->quit || (p->sink && __atomic_load_n(p->sink->stop, __ATOMIC_ACQUIRE)))
		return 1;
	if (p->duration_ns && r->now - r->t0 >= p->duration_ns)
		return 1;
	run_hits(r);
	return r->stopped;
}

/* Sleep until the next poll, or until a sampler's hit wakes us. */
static void run_wait(struct run *r, uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ULL), (long)(ns % 1000000000ULL) };
	struct pollfd pf = { .fd = r->hitfd, .events = POLLIN };

	if (r->hitfd < 0)
		nanosleep(&ts, NULL);
	else
		ppoll(&pf, 1, &ts, NULL);
}

/* The CPUs as a short list, runs of consecutive ones as "a-b": "0-3,6". */
static void cpus_text(char *buf, size_t len, const int *cpus, int n)
{
	size_t k = 0;
	int i, j;

	buf[0] = 0;
	for (i = 0; i < n && k < len; i = j + 1) {
		for (j = i; j + 1 < n && cpus[j + 1] == cpus[j] + 1; j++)
			;
		if (j > i)
			snprintf(buf + k, len - k, "%s%d-%d", i ? "," : "", cpus[i], cpus[j]);
		else
			snprintf(buf + k, len - k, "%s%d", i ? "," : "", cpus[i]);
		k += strlen(buf + k);
	}
}

/* measure -d and record -d: the progress line on stderr (NULL when quiet, not a terminal or short). */
static void run_progress_open(struct run *r)
{
	const struct measure_params *p = r->p;
	char cpus[256];
	int one = r->v.ncpus == 1;

	if (p->sink || !p->duration_ns || (p->cmd != CMD_MEASURE && p->cmd != CMD_RECORD))
		return;
	r->prog =
	    progress_start(p->cmd == CMD_RECORD ? "record" : "measure", p->duration_ns, p->quiet);
	if (!r->prog)
		return;
	cpus_text(cpus, sizeof(cpus), r->v.cpus, r->v.ncpus);
	if (p->cmd == CMD_RECORD)
		snprintf(r->doing, sizeof(r->doing), "recording CPU%s %s to %s", one ? "" : "s",
			 cpus, p->output);
	else
		snprintf(r->doing, sizeof(r->doing), "measuring CPU%s %s", one ? "" : "s", cpus);
	progress_update(r->prog, r->t0, r->doing);
}

/* Let the samplers go; then every poll interval take in, refresh the view once per period, until over. */
static int run_loop(struct run *r)
{
	const struct measure_params *p = r->p;
	uint64_t poll_ns = p->sink && p->sink->poll_ns ? p->sink->poll_ns : POLL_NS;
	uint64_t refresh = p->period_ns < REFRESH_MIN_NS ? REFRESH_MIN_NS : p->period_ns;
	uint64_t prev_drain, next_tick;
	int i, rc;

	r->t0 = now_ns();
	r->v.t0_ns = r->t0;
	for (i = 0; i < r->v.ncpus; i++)
		sampler_go(&r->smp[i]);
	r->started = 1;
	run_progress_open(r);
	prev_drain = r->t0;
	next_tick = r->t0 + refresh;
	do {
		run_wait(r, poll_ns);
		r->now = now_ns();
		if (r->hitfd >= 0)
			run_hits(r); /* the actions first: a signal leaves before the drain's work */
		rc = run_take(r, prev_drain > HORIZON_LAG_NS ? prev_drain - HORIZON_LAG_NS : 0);
		if (rc)
			return rc;
		prev_drain = r->now;
		progress_update(r->prog, r->now, NULL);
		if (r->ops->input && r->ops->input(stdout, &r->v))
			r->quit = 1;
		if (r->ops->tick && r->now >= next_tick) {
			/* the view prints on stdout, maybe the same terminal */
			progress_clear(r->prog);
			snapshot(r);
			r->ops->tick(stdout, &r->v);
			next_tick += refresh;
		}
		if (p->sink && p->sink->tick)
			p->sink->tick(p->sink->ctx, r->now);
	} while (!run_over(r));
	return EXIT_OK;
}

/* Seal the record file (the STATS and END chunks) and say where it went. */
static int finish_record(struct run *r, int rc)
{
	char why[512];
	int err = view_record_seal(r->rec, &r->v, r->p->output, why, sizeof(why));

	r->rec = NULL;
	if (err) {
		log_err("%s", why);
		return outfile_exit_code(err);
	}
	if (!r->p->quiet)
		log_info("recorded to %s", r->p->output);
	return rc;
}

/* Stop and join the samplers; after a clean run take the last records and show the final view. */
static int run_finish(struct run *r, int rc)
{
	int i;

	progress_end(r->prog); /* before anything else is printed */
	r->prog = NULL;
	__atomic_store_n(&r->stop, 1, __ATOMIC_RELEASE);
	for (i = 0; r->smp && i < r->v.ncpus; i++)
		sampler_join(&r->smp[i]);
	if (!r->started || rc != EXIT_OK)
		return rc;
	r->now = now_ns();
	drain(r);
	if (merge_process(r->v.m, UINT64_MAX))
		log_err("out of memory while attributing noise");
	finish_dtl(r);
	snapshot(r);
	if (r->v.proc)
		proc_finish(r);
	if (r->stopped) {
		rc = EXIT_STOPPED;
		fprintf(stdout, "stop: %s threshold hit\n",
			r->stopped == 1 ? "--stop-single" : "--stop-total");
		view_leadup(stdout, &r->v);
	}
	if (r->ops->end)
		r->ops->end(stdout, &r->v);
	fflush(stdout);
	if (r->nchains && !r->p->quiet)
		log_info("--on-threshold: %llu hit%s, the chain ran %llu time%s",
			 (unsigned long long)r->nhits, r->nhits == 1 ? "" : "s",
			 (unsigned long long)r->nchains, r->nchains == 1 ? "" : "s");
	if (r->p->on_end.n) {
		struct action_hit end = { -1, 0, r->now };

		actions_run(&r->p->on_end, "--on-end", &end, trace_write, r);
	}
	if (r->rec)
		rc = finish_record(r, rc);
	if (got_signal && !r->p->quiet)
		log_info("interrupted by signal %d after %.1f s", (int)got_signal,
			 (r->now - r->t0) / 1e9);
	return rc;
}

static void run_free(struct run *r)
{
	int i;

	progress_end(r->prog);
	view_record_abort(r->rec);
	for (i = 0; r->smp && i < r->v.ncpus; i++)
		sampler_free(&r->smp[i]);
	ktrace_close(r->kh);
	procstat_snap_free(r->snap0);
	procstat_irqnames_free(r->irqn);
	merge_free(r->v.m);
	hypsplit_free(r->v.hs);
	dtl_close(r->dtl);
	view_period_free(&r->v);
	free(r->v.hist);
	free(r->v.proc);
	free(r->smp);
	free(r->lost_seen);
	free(r->hits_seen);
	free(r->total_hit);
	if (r->hitfd >= 0)
		close(r->hitfd);
	cpuclaim_release(&r->claims);
}

/* The ending signals end the run through the normal path; an embedder stops it through its sink instead. */
static void signals_catch(const struct measure_params *p, struct sigaction old[NSIGS])
{
	struct sigaction sa = { .sa_handler = on_signal };
	int i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NSIGS && !p->sink; i++)
		sigaction(sigs[i], &sa, &old[i]);
}

static void signals_restore(const struct measure_params *p, const struct sigaction old[NSIGS])
{
	int i;

	for (i = 0; i < NSIGS && !p->sink; i++)
		sigaction(sigs[i], &old[i], NULL);
}

int measure_run(const struct measure_params *p)
{
	struct run r = { .p = p, .ops = view_pick(p), .hitfd = -1 };
	struct sigaction old[NSIGS];
	int rc;

	signals_catch(p, old);
	rc = run_setup(&r);
	if (!rc)
		rc = run_loop(&r);
	rc = run_finish(&r, rc);
	run_free(&r);
	signals_restore(p, old);
	return rc;
}
