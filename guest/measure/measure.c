/* SPDX-License-Identifier: MIT */
/*
 * measure: runs samplers on the chosen CPUs, the eBPF kernel helper (or the /proc counters fallback), feeds
 * the merge engine from the main thread every 50 ms, and prints the chosen view. What it changes — its own
 * threads' affinity and policy, BPF programs, BPF run-time stats (held by an fd, so dropped even on SIGKILL)
 * — is undone on every exit path; SIGINT/SIGTERM/SIGHUP/SIGQUIT end the run through the same path.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "bpf/ktrace_loader.h"
#include "util/log.h"
#include "measure/measure.h"
#include "util/parse.h"
#include "procfs/procstat.h"
#include "format/recfile.h"
#include "record.h"
#include "measure/sampler.h"
#include "views/view.h"
#include "util/monotime.h"

#define POLL_NS 50000000ULL
#define HORIZON_LAG_NS \
	100000000ULL /* attribute gaps once every event that can touch them arrived */
#define EVBUF 65536

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal = sig;
}

struct run {
	const struct measure_params *p;
	struct view v;
	struct sampler *smp;
	struct ktrace *kh;
	struct procstat_irqnames *irqn;
	struct procstat_snap *snap0;
	struct recfile_writer *rec;
	struct vn_event *evbuf;
	size_t nev;
	struct vn_sample *sbuf;
	size_t ns;
	int merge_err;
	int stop;
	uint64_t rec_dropped;
	uint64_t *lost_seen; /* per sampler: drops already reported to the sink */
	uint64_t ktrace_lost_seen;
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

static int flush_record(struct run *r)
{
	int err = 0;

	if (r->rec && r->ns)
		err = recwriter_chunk(r->rec, VN_CHUNK_SAMPLES, r->sbuf,
				      (uint32_t)(r->ns * sizeof(*r->sbuf)));
	if (!err && r->rec && r->nev)
		err = recwriter_chunk(r->rec, VN_CHUNK_EVENTS, r->evbuf,
				      (uint32_t)(r->nev * sizeof(*r->evbuf)));
	r->ns = r->nev = 0;
	return err;
}

static void on_event(void *ctx, const struct vn_event *e)
{
	struct run *r = ctx;
	int err = r->p->sink ? 0 : merge_add_event(r->v.m, e); /* an embedder attributes */

	if (err == -ENOMEM)
		r->merge_err = err;
	if (r->p->sink && r->p->sink->event)
		r->p->sink->event(r->p->sink->ctx, e);
	if (r->rec) {
		if (r->nev == EVBUF && flush_record(r))
			r->rec_dropped++;
		if (r->nev < EVBUF)
			r->evbuf[r->nev++] = *e;
	}
}

static void on_sample(struct run *r, const struct vn_sample *s)
{
	int err = r->p->sink ? 0 : merge_add_sample(r->v.m, s);

	if (err == -ENOMEM)
		r->merge_err = err;
	if (r->p->sink && r->p->sink->sample)
		r->p->sink->sample(r->p->sink->ctx, s);
	if (r->rec) {
		if (r->ns == EVBUF && flush_record(r))
			r->rec_dropped++;
		if (r->ns < EVBUF)
			r->sbuf[r->ns++] = *s;
	}
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
	r->v.sampler_dropped += r->rec_dropped;
	if (r->kh && !ktrace_get_stats(r->kh, &st)) {
		r->v.bpf_events = st.events;
		r->v.bpf_dropped = st.dropped;
		r->v.bpf_desync = st.desync;
		r->v.bpf_run_cnt = st.run_cnt;
		r->v.bpf_run_ns = st.run_time_ns;
		r->v.nprogs = 0;
		for (i = 0; i < st.nprogs && i < 48; i++) {
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

static int write_meta(struct run *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	char host[256] = "";
	unsigned int irq;
	int i, err;

	if (!f)
		return -ENOMEM;
	gethostname(host, sizeof(host) - 1);
	fprintf(f,
		"tool=vnoise-guest\nhostname=%s\nkernel_helper=%s\nsteal_source=%s\nhypercall_"
		"wrappers=%d\n"
		"threshold_ns=%llu\nperiod_ns=%llu\nruntime_ns=%llu\ncpus=",
		host, r->v.helper, r->v.steal_source, r->v.nhcalls,
		(unsigned long long)r->v.threshold_ns, (unsigned long long)r->v.period_ns,
		(unsigned long long)r->v.runtime_ns);
	for (i = 0; i < r->v.ncpus; i++)
		fprintf(f, "%s%d", i ? "," : "", r->v.cpus[i]);
	fputc('\n', f);
	for (irq = 0; r->irqn && irq < 4096; irq++) {
		const char *n = procstat_irq_name(r->irqn, irq);

		if (n)
			fprintf(f, "irq.%u=%s\n", irq, n);
	}
	fclose(f);
	err = recwriter_chunk(r->rec, VN_CHUNK_META, buf, (uint32_t)len);
	free(buf);
	return err;
}

static int write_stats(struct run *r, char **out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i, c;

	if (!f)
		return -ENOMEM;
	fprintf(f,
		"duration_ns=%llu\nbpf_events=%llu\nbpf_dropped=%llu\nbpf_desync=%llu\nbpf_run_cnt="
		"%llu\n"
		"bpf_run_ns=%llu\nsampler_dropped=%llu\nsampler_iterations=%llu\nsampler_loop_ns=%"
		"llu\n",
		(unsigned long long)r->v.duration_ns, (unsigned long long)r->v.bpf_events,
		(unsigned long long)r->v.bpf_dropped, (unsigned long long)r->v.bpf_desync,
		(unsigned long long)r->v.bpf_run_cnt, (unsigned long long)r->v.bpf_run_ns,
		(unsigned long long)r->v.sampler_dropped,
		(unsigned long long)r->v.sampler_iterations,
		(unsigned long long)r->v.sampler_loop_ns);
	for (i = 0; i < r->v.nprogs; i++)
		fprintf(f, "bpf_prog.%s=%llu %llu\n", r->v.progs[i].name,
			(unsigned long long)r->v.progs[i].run_cnt,
			(unsigned long long)r->v.progs[i].run_ns);
	for (i = 0; r->v.proc && i < r->v.ncpus; i++) {
		const struct view_proc *vp = &r->v.proc[i];

		if (!vp->valid)
			continue;
		for (c = 0; c < VN_CLASS_MAX; c++)
			fprintf(f, "proc.%d.count.%d=%llu\n", r->v.cpus[i], c,
				(unsigned long long)vp->count[c]);
		fprintf(f, "proc.%d.steal_ns=%llu\n", r->v.cpus[i],
			(unsigned long long)vp->steal_ns);
		for (c = 0; c < vp->nsrc; c++)
			fprintf(f, "proc.%d.src.%d=%u %llu %s\n", r->v.cpus[i], c, vp->src[c].cls,
				(unsigned long long)vp->src[c].count, vp->src[c].name);
	}
	fclose(f);
	*out = buf;
	return 0;
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

int measure_run(const struct measure_params *p)
{
	struct sigaction sa = { .sa_handler = on_signal }, old[4];
	static const int sigs[4] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
	struct run r = { .p = p };
	uint64_t t0, now, prev_drain, next_top, refresh;
	int rc = EXIT_OK, i, started = 0, stopped = 0, tty = isatty(STDOUT_FILENO);
	char *stats = NULL;

	r.v.threshold_ns = p->threshold_ns;
	r.v.period_ns = p->period_ns;
	r.v.runtime_ns = p->runtime_ns;
	r.v.top_n = p->top_n;
	r.v.irq_name = irq_name_cb;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 4 && !p->sink; i++)
		sigaction(sigs[i], &sa, &old[i]);

	rc = setup_cpus(&r);
	if (rc)
		goto out;
	r.v.m = merge_new(view_gap_cb, &r.v);
	r.v.hist = calloc((size_t)r.v.ncpus, sizeof(*r.v.hist));
	r.smp = calloc((size_t)r.v.ncpus, sizeof(*r.smp));
	r.lost_seen = calloc((size_t)r.v.ncpus, sizeof(*r.lost_seen));
	if (!r.v.m || !r.v.hist || !r.smp || !r.lost_seen) {
		rc = EXIT_FAIL;
		log_err("out of memory");
		goto out;
	}
	for (i = 0; i < r.v.ncpus; i++) {
		int c;

		hist_init(&r.v.hist[i].all);
		for (c = 0; c < VN_CLASS_MAX; c++)
			hist_init(&r.v.hist[i].cls[c]);
	}
	r.irqn = procstat_irqnames_read();
	r.v.irq_ctx = r.irqn;
	rc = start_helper(&r);
	if (rc)
		goto out;
	if (p->cmd == CMD_RECORD) {
		r.evbuf = malloc(EVBUF * sizeof(*r.evbuf));
		r.sbuf = malloc(EVBUF * sizeof(*r.sbuf));
		r.rec = recwriter_open(p->output);
		if (!r.rec || !r.evbuf || !r.sbuf) {
			log_err("cannot create '%s': %s", p->output, strerror(errno));
			rc = EXIT_FAIL;
			goto out;
		}
		if (write_meta(&r)) {
			log_err("cannot write '%s'", p->output);
			rc = EXIT_FAIL;
			goto out;
		}
	}
	housekeeping_affinity(&r);
	for (i = 0; i < r.v.ncpus; i++) {
		struct sampler *s = &r.smp[i];
		int err;

		s->cpu = r.v.cpus[i];
		s->policy = p->policy;
		s->prio = p->prio;
		s->threshold_ns = p->threshold_ns;
		s->period_ns = p->period_ns;
		s->runtime_ns = p->runtime_ns;
		s->stop_single_ns = p->stop_single_ns;
		s->stop = &r.stop;
		err = sampler_start(s);
		if (!err)
			err = sampler_wait_ready(s);
		if (err) {
			log_err("CPU %d: cannot %s: %s", s->cpu,
				s->err_what ? s->err_what : "start the sampler", strerror(-err));
			rc = err == -EPERM ? EXIT_CANNOT : EXIT_FAIL;
			goto out;
		}
		ktrace_set_sampler(r.kh, s->cpu, s->tid);
	}
	if (!p->quiet && !p->json && p->cmd != CMD_TOP && !p->sink) {
		char list[256];
		size_t off = 0;

		for (i = 0; i < r.v.ncpus && off < sizeof(list) - 16; i++)
			off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d",
						i ? "," : "", r.v.cpus[i]);
		log_info("measuring CPU%s %s with kernel helper %s %s", r.v.ncpus > 1 ? "s" : "",
			 list, r.v.helper, p->duration_ns ? "" : "until Ctrl-C");
	}
	t0 = now_ns();
	for (i = 0; i < r.v.ncpus; i++)
		sampler_go(&r.smp[i]);
	started = 1;
	prev_drain = t0;
	refresh = p->period_ns < 1000000000ULL ? 1000000000ULL : p->period_ns;
	next_top = t0 + refresh;
	for (;;) {
		uint64_t poll_ns = p->sink && p->sink->poll_ns ? p->sink->poll_ns : POLL_NS;
		struct timespec ts = { 0, (long)poll_ns };
		uint64_t horizon;

		nanosleep(&ts, NULL);
		now = now_ns();
		drain(&r);
		horizon = prev_drain > HORIZON_LAG_NS ? prev_drain - HORIZON_LAG_NS : 0;
		if (!p->sink && merge_process(r.v.m, horizon))
			r.merge_err = -ENOMEM;
		prev_drain = now;
		if (r.rec && flush_record(&r)) {
			log_err("writing '%s' failed", p->output);
			rc = EXIT_FAIL;
			break;
		}
		if (r.merge_err) {
			log_err("out of memory while attributing noise");
			rc = EXIT_FAIL;
			break;
		}
		if (p->cmd == CMD_TOP && now >= next_top) {
			collect_overhead(&r);
			r.v.duration_ns = now - t0;
			view_top(stdout, &r.v, (now - t0) / 1e9, tty);
			next_top += refresh;
		}
		if (p->sink && p->sink->tick)
			p->sink->tick(p->sink->ctx, now);
		if (got_signal || (p->sink && __atomic_load_n(p->sink->stop, __ATOMIC_ACQUIRE)))
			break;
		if (p->duration_ns && now - t0 >= p->duration_ns)
			break;
		for (i = 0; i < r.v.ncpus; i++)
			if (__atomic_load_n(&r.smp[i].stop_hit, __ATOMIC_ACQUIRE))
				stopped = 1;
		for (i = 0; p->stop_total_ns && i < r.v.ncpus; i++) {
			const struct merge_cpu *mc = merge_cpu(r.v.m, r.v.cpus[i]);

			if (mc && mc->noise_ns > p->stop_total_ns)
				stopped = 2;
		}
		if (stopped)
			break;
	}
out:
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; r.smp && i < r.v.ncpus; i++)
		sampler_join(&r.smp[i]);
	if (started && rc == EXIT_OK) {
		now = now_ns();
		drain(&r);
		if (merge_process(r.v.m, UINT64_MAX))
			log_err("out of memory while attributing noise");
		collect_overhead(&r);
		r.v.duration_ns = now - t0;
		if (r.v.proc)
			proc_finish(&r);
		if (stopped) {
			rc = EXIT_STOPPED;
			fprintf(stdout, "stop: %s threshold hit\n",
				stopped == 1 ? "--stop-single" : "--stop-total");
			view_leadup(stdout, &r.v);
		}
		if (p->sink)
			; /* the embedder reports */
		else if (p->cmd == CMD_HIST)
			view_hist(stdout, &r.v);
		else if (p->json)
			view_json(stdout, &r.v);
		else
			view_text(stdout, &r.v);
		if (r.rec) {
			if (flush_record(&r) || write_stats(&r, &stats) ||
			    recwriter_chunk(r.rec, VN_CHUNK_STATS, stats,
					    (uint32_t)strlen(stats)) ||
			    recwriter_close(r.rec, stats)) {
				log_err("writing '%s' failed", p->output);
				rc = EXIT_FAIL;
			} else if (!p->quiet) {
				log_info("recorded to %s", p->output);
			}
			r.rec = NULL;
		}
		if (got_signal && !p->quiet)
			log_info("interrupted by signal %d after %.1f s", (int)got_signal,
				 (now - t0) / 1e9);
	}
	if (r.rec)
		recwriter_abort(r.rec);
	free(stats);
	for (i = 0; r.smp && i < r.v.ncpus; i++)
		sampler_free(&r.smp[i]);
	ktrace_close(r.kh);
	procstat_snap_free(r.snap0);
	procstat_irqnames_free(r.irqn);
	merge_free(r.v.m);
	free(r.v.hist);
	free(r.v.proc);
	free(r.smp);
	free(r.evbuf);
	free(r.sbuf);
	free(r.lost_seen);
	for (i = 0; i < 4 && !p->sink; i++)
		sigaction(sigs[i], &old[i], NULL);
	return rc;
}
