/* SPDX-License-Identifier: MIT */
/*
 * vnoise-guest monitor: passive mode. No sampler: the passive kernel helper accumulates the noise
 * that hits target tasks (processes, a cgroup v2, or the user tasks of CPUs) and this loop prints, every
 * period, per target: its run time, its noise by class and its largest causes, as a table or as JSON lines
 * (schema vnoise.monitor/1), then a summary over the whole run. The table fits 80 columns: one unit per
 * column, the target's name last, each cause on a line of its own; vnoise's own thread is marked "(vnoise)".
 *
 * Hypervisor: monitor opens the dispatch trace log (guest/dtl, answering the host's clock exchange
 * if no other process does) and asks the passive helper for the targets' run and runnable spans; hypspan
 * intersects them with the host's intervals once the DTL horizon passes them. Per target: "hypervisor"
 * {host_preempt_ns, host_wait_ns, causes} in JSON as intersected, and the row split with it (monitor_split):
 * "split" in JSON, and a table whose THR..HYP cells add up to its NOISE (--wide: the host's causes); "dtl"
 * says ok|waiting|stale|absent. Without a DTL the output is as before, with "dtl":"absent".
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/exitcode.h"
#include "attrib/classes.h"
#include "attrib/explain.h"
#include "cli/cliopt.h"
#include "util/log.h"
#include "measure/measure.h"
#include "attrib/merge.h"
#include "procfs/procstat.h"
#include "monitor/monitor.h"
#include "util/json.h"
#include "util/monotime.h"
#include "util/parse.h"
#include "util/version.h"
#include "bpf/passive.h"
#include "bpf/passive_loader.h"
#include "dtl/dtl.h"
#include "monitor/hypspan.h"
#include "monitor/tgtdiff.h"

#define MON_DRAIN_NS 3000000000ull /* at the end, wait at most this long for the DTL horizon */

struct mon_target {
	int idx; /* passive target index */
	int pid; /* process target; 0 otherwise */
	char name[64]; /* "pid:1234", "cgroup:/sys/fs/cgroup/x", "cpu:3" */
	char comm[17];
	struct vn_tgt prev, first;
	struct hypspan_tot hprev, hfirst; /* hypervisor totals at the last print, at the start */
	int gone;
};

/* One monitor run: the targets, their counters at the last print, the passive helper, the DTL. */
struct mon_run {
	const struct monitor_params *p;
	struct mon_target t[MONITOR_MAX];
	struct vn_tgt cur[MONITOR_MAX];
	struct hypspan_tot hcur[MONITOR_MAX];
	int nt;
	struct passive *pv;
	struct dtl *dtl; /* NULL: could not open (then as absent) */
	struct hypspan *hs;
	uint64_t t0;
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static const char *irq_name_cb(void *ctx, uint32_t irq)
{
	return procstat_irq_name(ctx, irq);
}

const char *monitor_cause_name(const struct vn_tgt_cause *c, char *buf, size_t len)
{
	/* device IRQs by their action ("irq:virtio0-input"): /proc/interrupts read once, on the first */
	static struct procstat_irqnames *names;
	static int tried;
	struct merge_source s = { .cls = c->cls, .id = c->id };

	if (c->cls == VN_CLASS_IRQ && c->id < VN_VEC_BASE && !tried) {
		tried = 1;
		names = procstat_irqnames_read();
	}
	memcpy(s.comm, c->comm,
	       sizeof(s.comm) < sizeof(c->comm) ? sizeof(s.comm) : sizeof(c->comm));
	return merge_source_name(&s, names ? irq_name_cb : NULL, names, buf, len);
}

uint64_t monitor_noise_total(const struct vn_tgt *t)
{
	uint64_t s = 0;

	for (int c = 1; c < VN_CLASS_MAX; c++)
		s += t->ns[c];
	return s;
}

uint64_t monitor_split(const struct vn_tgt *a, const struct vn_tgt *b, uint64_t host_preempt_ns,
		       uint64_t host_wait_ns, struct gapsplit_res *out)
{
	uint64_t g[VN_CLASS_MAX] = { 0 }, in_run = 0, noise = 0, run = b->run_ns - a->run_ns, quiet;
	struct gapsplit_host h = { .ns = { [VN_HCLASS_HOST_PREEMPT] = host_preempt_ns,
					   [VN_HCLASS_HOST_WAIT] = host_wait_ns } };
	uint64_t sum = 0;

	for (int c = 1; c < VN_CLASS_MAX; c++) {
		g[c] = b->ns[c] - a->ns[c];
		noise += g[c];
		if (c != VN_CLASS_THREAD)
			in_run += g[c];
	}
	quiet = run > in_run ? run - in_run : 0;
	gapsplit_apportion(quiet + noise, g, quiet, &h, out);
	for (int c = 0; c < VN_CLASS_MAX; c++)
		sum += out->guest_ns[c];
	for (int k = 0; k < VN_HCLASS_PARTS; k++)
		sum += out->hyp_ns[k];
	return sum;
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

/* Whether the views show hypervisor time: a DTL region with a host publisher (ever seen). */
static int hyp_on(const struct mon_run *r)
{
	return r->dtl && dtl_state(r->dtl) != DTL_ABSENT;
}

/* Target i's hypervisor time since the last print (summary: since the start) into out. */
static void hyp_delta(const struct mon_run *r, int i, int summary, struct hypspan_tot *out)
{
	const struct mon_target *t = &r->t[i];

	hypspan_diff(summary ? &t->hfirst : &t->hprev, &r->hcur[i], out);
}

/* A host cause as printed: causes with one name (class only, or a cause slot the host reused) merged. */
struct hyp_named {
	char name[96];
	int hclass;
	uint64_t ns;
};

/* h's causes by printed name, largest first, into out (at most HYPSPAN_CAUSES); returns how many. */
static int hyp_names(const struct mon_run *r, const struct hypspan_tot *h, struct hyp_named *out)
{
	int n = 0, j;

	for (uint32_t k = 0; k < h->ncause; k++) {
		const struct hypspan_cause *c = &h->cause[k];
		struct hyp_named e = { .hclass = c->hclass, .ns = c->ns };

		dtl_cause_name(r->dtl, c->cause, c->cls, e.name, sizeof(e.name));
		for (j = 0; j < n; j++)
			if (out[j].hclass == e.hclass && !strcmp(out[j].name, e.name))
				break;
		if (j < n)
			e.ns += out[j].ns;
		else
			j = n++;
		for (; j > 0 && out[j - 1].ns < e.ns; j--)
			out[j] = out[j - 1];
		out[j] = e;
	}
	return n;
}

/* "hypervisor": {host_preempt_ns, host_wait_ns, running_ns, runnable_ns, causes: [...]}. */
static void json_hyp(struct json_writer *w, const struct mon_run *r, const struct hypspan_tot *h)
{
	struct hyp_named hn[HYPSPAN_CAUSES];
	int n = hyp_names(r, h, hn);

	json_key(w, "hypervisor");
	json_obj_begin(w);
	for (int c = VN_HCLASS_HOST_PREEMPT; c <= VN_HCLASS_HOST_WAIT; c++) {
		char key[32];

		snprintf(key, sizeof(key), "%s_ns", classes_hyp_name(c));
		json_kv_u64(w, key, h->ns[c]);
	}
	json_kv_u64(w, "running_ns", h->running_ns);
	json_kv_u64(w, "runnable_ns", h->runnable_ns);
	json_key(w, "causes");
	json_arr_begin(w);
	for (int k = 0; k < n; k++) {
		json_obj_begin(w);
		json_kv_str(w, "cause", hn[k].name);
		json_kv_str(w, "class", classes_hyp_name(hn[k].hclass));
		json_kv_u64(w, "ns", hn[k].ns);
		json_obj_end(w);
	}
	if (h->other_ns) {
		json_obj_begin(w);
		json_kv_str(w, "cause", "other");
		json_kv_str(w, "class", "other");
		json_kv_u64(w, "ns", h->other_ns);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_obj_end(w);
}

/* "split": {noise_ns, run_ns, classes: {...}}: the row split with the host's time (monitor_split); the
 * classes (guest classes, host_preempt, host_wait, hw) add up to noise_ns; run_ns: on the CPU, the host's
 * time out of it. */
static void json_split(struct json_writer *w, const struct vn_tgt *a, const struct vn_tgt *b,
		       const struct hypspan_tot *h)
{
	struct gapsplit_res sp;
	uint64_t noise = monitor_split(a, b, h->ns[VN_HCLASS_HOST_PREEMPT],
				       h->ns[VN_HCLASS_HOST_WAIT], &sp),
		 hyp = 0;

	for (int k = 0; k < VN_HCLASS_PARTS; k++)
		hyp += sp.hyp_ns[k];
	json_key(w, "split");
	json_obj_begin(w);
	json_kv_u64(w, "noise_ns", noise);
	json_kv_u64(w, "run_ns", sp.quiet_ns + noise - sp.guest_ns[VN_CLASS_THREAD] - hyp);
	json_kv_u64(w, "over_ns", sp.over_ns);
	json_key(w, "classes");
	json_obj_begin(w);
	for (int c = 1; c < VN_CLASS_MAX - 1; c++)
		json_kv_u64(w, classes_guest_name(c), sp.guest_ns[c]);
	json_kv_u64(w, classes_hyp_name(VN_HCLASS_HOST_PREEMPT), sp.hyp_ns[VN_HCLASS_HOST_PREEMPT]);
	json_kv_u64(w, classes_hyp_name(VN_HCLASS_HOST_WAIT), sp.hyp_ns[VN_HCLASS_HOST_WAIT]);
	json_kv_u64(w, classes_hyp_name(VN_HCLASS_HW), sp.hyp_ns[VN_HCLASS_HW]);
	json_obj_end(w);
	json_obj_end(w);
}

/* One target's JSON object: the change from a to b (and its hypervisor time, h, when shown). */
static void json_target(struct json_writer *w, const struct mon_target *t, const struct vn_tgt *a,
			const struct vn_tgt *b, const struct mon_run *r,
			const struct hypspan_tot *h)
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
		json_kv_u64(w, classes_guest_name(c), b->ns[c] - a->ns[c]);
	json_obj_end(w);
	json_key(w, "count");
	json_obj_begin(w);
	for (int c = 1; c < VN_CLASS_MAX - 1; c++)
		json_kv_u64(w, classes_guest_name(c), b->count[c] - a->count[c]);
	json_obj_end(w);
	json_key(w, "causes");
	json_arr_begin(w);
	for (int k = 0; k < n; k++) {
		json_obj_begin(w);
		json_kv_str(w, "source", monitor_cause_name(&cs[k], nm, sizeof(nm)));
		json_kv_str(w, "class", classes_guest_name(cs[k].cls));
		json_kv_u64(w, "ns", cs[k].ns);
		if (cause_is_self(&cs[k]))
			json_kv_bool(w, "vnoise", 1);
		json_obj_end(w);
	}
	json_arr_end(w);
	if (h) {
		json_hyp(w, r, h);
		json_split(w, a, b, h);
	}
	json_kv_bool(w, "exited", t->gone);
	json_obj_end(w);
}

/* "dtl_stats": the DTL reader's counters and the span bookkeeping. */
static void json_dtl_stats(struct json_writer *w, const struct mon_run *r)
{
	struct dtl_stats ds;
	struct hypspan_stats hs;

	dtl_stats(r->dtl, &ds);
	hypspan_stats(r->hs, &hs);
	json_key(w, "dtl_stats");
	json_obj_begin(w);
	json_kv_str(w, "detail",
		    ds.detail == VN_DTL_DETAIL_TASK    ? "task"
		    : ds.detail == VN_DTL_DETAIL_CLASS ? "class"
						       : "none");
	json_kv_u64(w, "epoch", ds.epoch);
	json_kv_u64(w, "horizon_ns", ds.horizon_ns);
	json_kv_u64(w, "spans", ds.spans);
	json_kv_u64(w, "spans_dropped", ds.spans_dropped);
	json_kv_u64(w, "lost", ds.lost);
	json_kv_u64(w, "torn", ds.torn);
	json_kv_u64(w, "bad", ds.bad);
	json_kv_u64(w, "backwards", ds.backwards);
	json_kv_u64(w, "bad_header", ds.bad_header);
	json_kv_u64(w, "bad_status", ds.bad_status);
	json_kv_u64(w, "causes_gone", ds.causes_gone);
	json_kv_u64(w, "host_dropped", ds.host_dropped);
	json_kv_bool(w, "responder", ds.responder);
	json_kv_u64(w, "replies", ds.replies);
	json_kv_u64(w, "responder_cpu_ns", ds.responder_cpu_ns);
	json_kv_u64(w, "target_spans", hs.spans);
	json_kv_u64(w, "target_spans_done", hs.done);
	json_kv_u64(w, "target_spans_pending", hs.pending);
	json_kv_u64(w, "target_spans_dropped", passive_span_drops(r->pv) + hs.bad);
	json_kv_u64(w, "dtl_late", hs.late);
	json_kv_u64(w, "dtl_late_ns", hs.late_ns);
	json_obj_end(w);
}

/* One vnoise.monitor/1 line through the JSON writer (a comm may hold any byte). */
static void print_json(const struct mon_run *r, uint64_t t_ns, uint64_t period_ns, int summary)
{
	const struct mon_target *t = r->t;
	const struct vn_tgt *cur = r->cur;
	int nt = r->nt, hyp = hyp_on(r);
	struct hypspan_tot h;
	struct json_writer w;

	json_init(&w, stdout, 0);
	json_obj_begin(&w);
	json_kv_str(&w, "schema", "vnoise.monitor/1");
	json_kv_str(&w, "version", version_string());
	json_kv_str(&w, "kind", summary ? "summary" : "period");
	json_kv_u64(&w, "t_ns", t_ns);
	json_kv_u64(&w, "period_ns", period_ns);
	json_kv_str(&w, "dtl", dtl_state_name(r->dtl ? dtl_state(r->dtl) : DTL_ABSENT));
	if (hyp)
		json_dtl_stats(&w, r);
	json_key(&w, "targets");
	json_arr_begin(&w);
	for (int i = 0; i < nt; i++) {
		if (hyp)
			hyp_delta(r, i, summary, &h);
		json_target(&w, &t[i], summary ? &t[i].first : &t[i].prev, &cur[i], r,
			    hyp ? &h : NULL);
	}
	json_arr_end(&w);
	json_obj_end(&w);
	if (json_finish(&w))
		log_debug("monitor: a JSON line was not written whole");
}

/* The hypervisor causes of a row (--wide), one line each. */
static void table_hyp_causes(const struct mon_run *r, const struct hypspan_tot *h)
{
	struct hyp_named hn[HYPSPAN_CAUSES];
	int n = hyp_names(r, h, hn);

	for (int k = 0; k < n; k++)
		printf("    host  %10.1f us  %s (%s)\n", hn[k].ns / 1e3, hn[k].name,
		       classes_hyp_name(hn[k].hclass));
	if (h->other_ns)
		printf("    host  %10.1f us  other\n", h->other_ns / 1e3);
}

/* A cell of width w for ns shown in us; when the us do not fit, in ms ("12345.6ms"), then s. */
static const char *cell_us(char *buf, size_t len, int w, uint64_t ns)
{
	if (snprintf(buf, len, "%*.1f", w, ns / 1e3) > w &&
	    snprintf(buf, len, "%*.1fms", w - 2, ns / 1e6) > w)
		snprintf(buf, len, "%*.1fs", w - 1, ns / 1e9);
	return buf;
}

/* One target's row (b - a) and its causes, one line each; sp: its split with the host's time (the table
 * with a HYP column: every cell after RUN adds up to NOISE) or NULL; h: the host's time by cause (--wide). */
static void table_row(const struct mon_run *r, const struct mon_target *t, const struct vn_tgt *a,
		      const struct vn_tgt *b, const struct gapsplit_res *sp, uint64_t sp_noise,
		      const struct hypspan_tot *h)
{
	struct vn_tgt_cause cs[VN_TGT_CAUSES];
	int n = cause_delta(a, b, cs);
	uint64_t run = b->run_ns - a->run_ns, tot = monitor_noise_total(b) - monitor_noise_total(a);
	double pct = run + tot ? 100.0 * (double)tot / (double)(run + tot) : 0.0;
	char nm[64];

	if (sp) { /* RUN: on the CPU, the host's time out of it; narrower cells keep 80 columns */
		uint64_t hyp = sp->hyp_ns[VN_HCLASS_HOST_PREEMPT] +
			       sp->hyp_ns[VN_HCLASS_HOST_WAIT] + sp->hyp_ns[VN_HCLASS_VMEXIT] +
			       sp->hyp_ns[VN_HCLASS_HOST_IRQ] + sp->hyp_ns[VN_HCLASS_HW];
		uint64_t on = sp->quiet_ns + sp_noise - sp->guest_ns[VN_CLASS_THREAD] - hyp;

		char c[8][24], top[120] = "";
		struct hyp_named hn[HYPSPAN_CAUSES];

		/* the host's largest cause on the row (--wide lists them all) */
		if (h && !r->p->wide && hyp_names(r, h, hn) > 0)
			snprintf(top, sizeof(top), ", host %.60s", hn[0].name);
		char line[256];
		int len = snprintf(line, sizeof(line), "%7.1f %s %s %s %s %s %s %s %s (%s)%s",
				   on / 1e6, cell_us(c[0], sizeof(c[0]), 9, sp_noise),
				   cell_us(c[1], sizeof(c[1]), 7, sp->guest_ns[VN_CLASS_THREAD]),
				   cell_us(c[2], sizeof(c[2]), 7, sp->guest_ns[VN_CLASS_IRQ]),
				   cell_us(c[3], sizeof(c[3]), 8, sp->guest_ns[VN_CLASS_SOFTIRQ]),
				   cell_us(c[4], sizeof(c[4]), 7, sp->guest_ns[VN_CLASS_NMI]),
				   cell_us(c[5], sizeof(c[5]), 7, sp->guest_ns[VN_CLASS_STEAL]),
				   cell_us(c[6], sizeof(c[6]), 7, hyp), t->name, t->comm,
				   t->gone ? " exited" : "");

		/* the host cause as far as 80 columns leave room for it */
		printf("%s%.*s\n", line, len < 80 ? 80 - len : 0, top);
	} else {
		char c[5][24];

		printf(
		    "%8.1f %8.3f %s %s %s %s %s  %s (%s)%s\n", run / 1e6, pct,
		    cell_us(c[0], sizeof(c[0]), 10,
			    b->ns[VN_CLASS_THREAD] - a->ns[VN_CLASS_THREAD]),
		    cell_us(c[1], sizeof(c[1]), 7, b->ns[VN_CLASS_IRQ] - a->ns[VN_CLASS_IRQ]),
		    cell_us(c[2], sizeof(c[2]), 8,
			    b->ns[VN_CLASS_SOFTIRQ] - a->ns[VN_CLASS_SOFTIRQ]),
		    cell_us(c[3], sizeof(c[3]), 7, b->ns[VN_CLASS_NMI] - a->ns[VN_CLASS_NMI]),
		    cell_us(c[4], sizeof(c[4]), 9, b->ns[VN_CLASS_STEAL] - a->ns[VN_CLASS_STEAL]),
		    t->name, t->comm, t->gone ? " exited" : "");
	}
	for (int k = 0; k < n; k++)
		printf("    cause %10.1f us  %s%s\n", cs[k].ns / 1e3,
		       monitor_cause_name(&cs[k], nm, sizeof(nm)),
		       cause_is_self(&cs[k]) ? " (vnoise)" : "");
	if (h && r->p->wide)
		table_hyp_causes(r, h);
}

/* The summary's line on what the host's log did not cover: the targets' run and runnable spans it never
 * reached (their HYP time is not counted), or that it covered none, so HYP is 0 because nothing was
 * intersected, not because the host took nothing. */
static void hyp_coverage(const struct mon_run *r)
{
	struct hypspan_stats hs;

	hypspan_stats(r->hs, &hs);
	if (!hs.done && hs.spans)
		printf("dtl %s: nothing was split (the host's log covered none of %llu spans)\n",
		       dtl_state_name(dtl_state(r->dtl)), (unsigned long long)hs.spans);
	else if (hs.late)
		printf(
		    "%.1f ms in %llu spans came before the host's log covered them (not in HYP)\n",
		    hs.late_ns / 1e6, (unsigned long long)hs.late);
}

static void print_table(const struct mon_run *r, double secs, int summary)
{
	int hyp = hyp_on(r);
	struct hypspan_tot h;
	struct gapsplit_res sp;
	struct explain_totals ex = { 0 };

	if (summary && hyp)
		printf("summary over %.2f s (dispatch trace log: %s)\n", secs,
		       dtl_state_name(dtl_state(r->dtl)));
	else if (summary)
		printf("summary over %.2f s\n", secs);
	else
		printf("at %.2f s\n", secs);
	if (hyp)
		printf("%7s %9s %7s %7s %8s %7s %7s %7s %s\n", "RUN(ms)", "NOISE(us)", "THR(us)",
		       "IRQ(us)", "SIRQ(us)", "NMI(us)", "STL(us)", "HYP(us)", "TARGET");
	else
		printf("%8s %8s %10s %7s %8s %7s %9s  %s\n", "RUN(ms)", "NOISE(%)", "THREAD(us)",
		       "IRQ(us)", "SIRQ(us)", "NMI(us)", "STEAL(us)", "TARGET");
	for (int i = 0; i < r->nt; i++) {
		const struct mon_target *t = &r->t[i];
		const struct vn_tgt *a = summary ? &t->first : &t->prev, *b = &r->cur[i];

		if (hyp) {
			uint64_t noise;

			hyp_delta(r, i, summary, &h);
			noise = monitor_split(a, b, h.ns[VN_HCLASS_HOST_PREEMPT],
					      h.ns[VN_HCLASS_HOST_WAIT], &sp);
			table_row(r, t, a, b, &sp, noise, &h);
			ex.total_ns += noise;
			ex.steal_ns += sp.guest_ns[VN_CLASS_STEAL];
			ex.hw_ns += sp.hyp_ns[VN_HCLASS_HW];
			continue;
		}
		table_row(r, t, a, b, NULL, 0, NULL);
		ex.total_ns += monitor_noise_total(b) - monitor_noise_total(a);
		ex.steal_ns += b->ns[VN_CLASS_STEAL] - a->ns[VN_CLASS_STEAL];
		ex.unexpl_ns += b->ns[VN_CLASS_UNEXPLAINED] - a->ns[VN_CLASS_UNEXPLAINED];
	}
	if (summary && hyp)
		hyp_coverage(r);
	explain_footer(stdout, &ex, 80);
	fflush(stdout);
}

enum { OPT_WIDE = CLIOPT_OWN };

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
	{ .id = CLIOPT_VERBOSE },
	{ .id = OPT_WIDE,
	  .name = "wide",
	  .help = "the table also lists the host causes of the HYP column" },
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
		    "Passive mode: no sampler; the noise that hits the target tasks (their\n"
		    "preemption while runnable, IRQs/softirqs/NMIs while they ran, steal), per\n"
		    "target, every period. Needs root (eBPF). With a dispatch trace log from the\n"
		    "host (vnoise-host on the host): the time the host took the target's vCPU\n"
		    "while it ran or waited (HYP), by host cause.\n" CLIOPT_TIME_LINE);
		n += (int)cliopt_help(opts, usage + n, sizeof(usage) - (size_t)n);
		cliopt_exit_help(usage, sizeof(usage), (size_t)n, CLIOPT_EXITS_COMMON);
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
	const struct cliopt_flags flags = { .json = &p->json,
					    .quiet = &p->quiet,
					    .verbose = &p->verbose };

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
	case OPT_WIDE:
		p->wide = 1;
		return 0;
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

/* Open the passive helper and follow every target; an exit code on failure. */
static int open_targets(struct mon_run *r)
{
	const struct monitor_params *p = r->p;
	struct passive_opts po = {
		.cpus = p->cpus, .ncpus = p->ncpus, .cgroups = p->ncg, .spans = 1
	};
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

/* Open the DTL (answering the clock exchange if nobody else does) and the span bookkeeping. A DTL that
 * cannot be opened is only a warning: monitor then runs as without one. */
static void open_dtl(struct mon_run *r)
{
	struct dtl_params dp = { .responder = true, .responder_cpu = -1 };
	char why[160] = "";
	int err = dtl_open(&r->dtl, &dp, why, sizeof(why));

	if (err) {
		log_warn("dispatch trace log: %s (no hypervisor view)", why);
		r->dtl = NULL;
		return;
	}
	r->hs = hypspan_new(VN_TGT_MAX, 0, 0);
	if (!r->hs) {
		log_warn("dispatch trace log: no memory for the span list (no hypervisor view)");
		dtl_close(r->dtl);
		r->dtl = NULL;
		return;
	}
	dtl_poll(r->dtl);
}

/* A span record of the passive helper: pending until the DTL horizon passes it. */
static void on_span(void *ctx, const struct pv_span *s)
{
	struct mon_run *r = ctx;

	if (r->hs && dtl_state(r->dtl) != DTL_ABSENT)
		hypspan_add(r->hs, s->tgt, s->cpu, s->kind == PV_SPAN_RUN, s->start_ns, s->end_ns);
}

/* Read the DTL and the span records, intersect what the horizon passed. */
static void hyp_poll(struct mon_run *r)
{
	int n = passive_spans(r->pv, on_span, r);

	if (n < 0)
		log_debug("monitor: span ring: %s", strerror(-n));
	if (!r->dtl)
		return;
	dtl_poll(r->dtl);
	hypspan_process(r->hs, r->dtl, now_ns());
}

/* The end: wait (at most MON_DRAIN_NS) for the horizon to pass the pending spans, the rest is late. */
static void hyp_drain(struct mon_run *r)
{
	uint64_t until = now_ns() + MON_DRAIN_NS, end;
	struct timespec ts = { 0, 50000000L };

	hyp_poll(r);
	if (!r->dtl)
		return;
	end = hypspan_pending_end(r->hs);
	while (end && dtl_state(r->dtl) == DTL_OK && dtl_horizon(r->dtl) < end &&
	       now_ns() < until) {
		nanosleep(&ts, NULL);
		dtl_poll(r->dtl);
	}
	hypspan_process(r->hs, r->dtl, now_ns());
	hypspan_finish(r->hs);
}

/* Read every target's counters into cur. */
static void snapshot(struct mon_run *r)
{
	static const struct hypspan_tot zero;

	for (int i = 0; i < r->nt; i++) {
		const struct hypspan_tot *h =
		    r->hs ? hypspan_tot(r->hs, (uint32_t)r->t[i].idx) : NULL;

		r->cur[i] = *passive_tgt(r->pv, r->t[i].idx);
		r->hcur[i] = h ? *h : zero;
	}
}

/* Only the hypervisor's totals of every target into hcur (after the drain). */
static void hyp_snapshot(struct mon_run *r)
{
	for (int i = 0; r->hs && i < r->nt; i++) {
		const struct hypspan_tot *h = hypspan_tot(r->hs, (uint32_t)r->t[i].idx);

		if (h)
			r->hcur[i] = *h;
	}
}

/* Print cur against the last print (summary: against the start). */
static void report(const struct mon_run *r, uint64_t now, int summary)
{
	if (r->p->json)
		print_json(r, now - r->t0, summary ? now - r->t0 : r->p->period_ns, summary);
	else
		print_table(r, (now - r->t0) / 1e9, summary);
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

	snapshot(r);
	for (int i = 0; i < r->nt; i++) {
		r->t[i].first = r->t[i].prev = r->cur[i];
		r->t[i].hfirst = r->t[i].hprev = r->hcur[i];
	}
	r->t0 = now_ns();
	next = r->t0 + p->period_ns;
	if (!p->json && !p->quiet)
		printf("vnoise-guest monitor: %d target%s, period %.2f s (passive: no sampler)\n",
		       r->nt, r->nt == 1 ? "" : "s", p->period_ns / 1e9);
	while (!g_stop) {
		if (p->duration_ns && now_ns() >= r->t0 + p->duration_ns)
			break;
		wait_until(r, next);
		hyp_poll(r);
		now = now_ns();
		alive = count_alive(r);
		if (now >= next || !alive) {
			snapshot(r);
			if (!p->quiet)
				report(r, now, 0);
			for (int i = 0; i < r->nt; i++) {
				r->t[i].prev = r->cur[i];
				r->t[i].hprev = r->hcur[i];
			}
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
	uint64_t end;
	int rc = monitor_parse(argc, argv, &p, err, sizeof(err));

	if (rc == 1) {
		fputs(monitor_usage(), stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-guest monitor --help')", err);
		return EXIT_USAGE;
	}
	if (p.verbose)
		log_set_verbosity(p.verbose);
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
	open_dtl(r);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	run(r);
	/* the summary covers the run, not the wait for the host's horizon after it: the targets' counters
	 * as the run ended, the hypervisor's share of them once the host's log has covered them */
	end = now_ns();
	snapshot(r);
	hyp_drain(r);
	hyp_snapshot(r);
	report(r, end, 1);
	if (!passive_runs(r->pv))
		log_warn("the passive helper saw no target run: are the targets on this machine?");
out:
	hypspan_free(r->hs);
	dtl_close(r->dtl);
	passive_close(r->pv);
	free(r);
	return rc;
}
