/* SPDX-License-Identifier: MIT */
/*
 * view_json: the vnoise.measure/1 document (measure --json, record --json, report FILE --json), written
 * through the JSON writer: schema and version (and a report's recorded version, whether the file was read
 * whole), settings, one object per CPU (totals, time and count per class, top sources, vnoise's own threads
 * marked "vnoise": true, the merge engine's diagnostics) and the overhead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/classes.h"
#include "channel/dtlregion.h"
#include "util/json.h"
#include "util/log.h"
#include "util/version.h"
#include "views/view.h"
#include "views/view_worst.h"

#define JSON_MAX_SOURCES 256

static void settings(struct json_writer *w, const struct view *v)
{
	json_kv_str(w, "schema", "vnoise.measure/1");
	json_kv_str(w, "version", version_string());
	if (v->replayed && v->version)
		json_kv_str(w, "recorded_version", v->version);
	json_kv_bool(w, "partial", v->partial != NULL);
	json_kv_str(w, "kernel_helper", v->helper);
	json_kv_str(w, "steal_source", v->steal_source);
	json_kv_u64(w, "hypercall_wrappers", (uint64_t)v->nhcalls);
	json_kv_u64(w, "threshold_ns", v->threshold_ns);
	json_kv_u64(w, "duration_ns", v->duration_ns);
	json_kv_u64(w, "period_ns", v->period_ns);
	json_kv_u64(w, "runtime_ns", v->runtime_ns);
	json_kv_str(w, "dtl", v->dtl ? v->dtl : "absent");
	if (view_has_dtl(v)) {
		json_kv_u64(w, "dtl_late", v->dtl_late);
		json_kv_bool(w, "dtl_split", view_split(v));
	}
	json_key(w, "shared_cpus"); /* --force: CPUs another vnoise sampler sampled too */
	json_arr_begin(w);
	for (int i = 0; i < v->nshared; i++) {
		json_obj_begin(w);
		json_kv_u64(w, "cpu", (uint64_t)v->shared[i].cpu);
		json_kv_u64(w, "pid", (uint64_t)v->shared[i].pid);
		json_kv_str(w, "by", v->shared[i].what);
		json_obj_end(w);
	}
	json_arr_end(w);
}

/* "notes": the footer of the text views (shared/attrib/explain), a string each. */
static void notes(struct json_writer *w, const struct view *v)
{
	struct view_row *rows = calloc((size_t)v->ncpus + 1, sizeof(*rows));
	char lines[EXPLAIN_LINES][EXPLAIN_LINE_LEN];
	struct explain_totals t;
	size_t n = 0;

	if (rows) {
		for (int i = 0; i < v->ncpus; i++)
			view_row(v, i, &rows[i]);
		view_explain(v, rows, &t);
		n = explain_lines(&t, lines);
	}
	free(rows);
	json_key(w, "notes");
	json_arr_begin(w);
	for (size_t k = 0; k < n; k++)
		json_str(w, lines[k]);
	json_arr_end(w);
}

/* One member per shown class: its time (ns) or its count; with a DTL also the hypervisor classes and hw. */
static void by_class(struct json_writer *w, const struct view *v, const char *key,
		     const uint64_t val[VN_CLASS_MAX], const uint64_t hyp[VN_HCLASS_PARTS])
{
	int k;

	json_key(w, key);
	json_obj_begin(w);
	for (k = 0; k < VIEW_NSHOWN; k++)
		json_kv_u64(w, classes_guest_name(view_shown[k]), val[view_shown[k]]);
	for (k = 0; view_has_dtl(v) && k < VN_HCLASS_PARTS; k++)
		json_kv_u64(w, classes_hyp_name(k), hyp[k]);
	json_obj_end(w);
}

/* "hypervisor": the DTL's split of the CPU's noise; in_guest_ns: host time inside guest events (out of their classes). */
static void hypervisor(struct json_writer *w, const struct view_row *r)
{
	char key[32];
	int k;

	json_key(w, "hypervisor");
	json_obj_begin(w);
	for (k = 0; k < VN_HCLASS_PARTS; k++) {
		snprintf(key, sizeof(key), "%s_ns", classes_hyp_name(k));
		json_kv_u64(w, key, r->hyp_ns[k]);
	}
	json_kv_u64(
	    w, "in_guest_ns",
	    r->hyp_in_guest_ns); /* host time inside guest events: in by_class as the host's */
	json_obj_end(w);
}

/* A hypervisor source: a host cause ("cause_class", with detail task its "comm" and "pid"), an exit
 * reason, or host IRQs. */
static void hyp_source(struct json_writer *w, const struct hypsplit_source *s)
{
	const char *colon = strchr(s->name, ':'), *br = strrchr(s->name, '[');
	char buf[HYPSPLIT_NAME_LEN];
	unsigned long pid;

	json_obj_begin(w);
	json_kv_str(w, "kind", "hypervisor");
	json_kv_str(w, "class", classes_hyp_name(s->hclass));
	json_kv_str(w, "name", s->name);
	if (s->hclass == VN_HCLASS_HOST_PREEMPT || s->hclass == VN_HCLASS_HOST_WAIT) {
		json_kv_str(w, "cause_class", dtlregion_class_name(s->cls));
		if (colon && br && br > colon && sscanf(br, "[%lu]", &pid) == 1) {
			snprintf(buf, sizeof(buf), "%.*s", (int)(br - colon - 1), colon + 1);
			json_kv_str(w, "comm", buf);
			json_kv_u64(w, "pid", pid);
		}
	} else if (s->hclass == VN_HCLASS_VMEXIT) {
		if (s->reason != HYPSPLIT_REASON_OTHER)
			json_kv_u64(w, "reason", s->reason);
		json_kv_u64(w, "isa", s->isa);
	}
	json_kv_u64(w, "count", s->count);
	json_kv_u64(w, "total_ns", s->total_ns);
	json_kv_u64(w, "max_ns", s->max_ns);
	json_obj_end(w);
}

/* The proc fallback's busiest interrupt counters: class, name, count. */
static void proc_sources(struct json_writer *w, const struct view_proc *p, int top)
{
	int k;

	for (k = 0; k < p->nsrc && k < top; k++) {
		json_obj_begin(w);
		json_kv_str(w, "class", classes_guest_name(p->src[k].cls));
		json_kv_str(w, "name", p->src[k].name);
		json_kv_u64(w, "count", p->src[k].count);
		json_obj_end(w);
	}
}

/* One attributed source; its name without the "class:" prefix, a thread's is its comm (and it has a pid). */
static void source(struct json_writer *w, const struct view *v, const struct merge_source *s)
{
	char name[96];

	json_obj_begin(w);
	json_kv_str(w, "class", classes_guest_name(s->cls));
	if (s->cls == VN_CLASS_THREAD) {
		snprintf(name, sizeof(name), "%.*s", VN_COMM_LEN, s->comm);
		json_kv_str(w, "name", name);
		json_kv_u64(w, "pid", s->id);
	} else {
		const char *nm = merge_source_name(s, v->irq_name, v->irq_ctx, name, sizeof(name));

		json_kv_str(w, "name", strchr(nm, ':') ? strchr(nm, ':') + 1 : nm);
	}
	json_kv_u64(w, "count", s->count);
	json_kv_u64(w, "total_ns", s->total_ns);
	json_kv_u64(w, "max_ns", s->max_ns);
	if (view_is_self(v, s))
		json_kv_bool(w, "vnoise", 1);
	json_obj_end(w);
}

static void sources(struct json_writer *w, const struct view *v, int idx)
{
	struct merge_source src[JSON_MAX_SOURCES];
	int top = v->top_n > JSON_MAX_SOURCES ? JSON_MAX_SOURCES : v->top_n;
	size_t n, j;

	json_key(w, "sources");
	json_arr_begin(w);
	if (v->proc && v->proc[idx].valid) {
		proc_sources(w, &v->proc[idx], top);
	} else {
		n = merge_top_sources(v->m, v->cpus[idx], src, (size_t)top);
		for (j = 0; j < n; j++)
			source(w, v, &src[j]);
	}
	if (view_has_dtl(v)) {
		struct hypsplit_source hsrc[JSON_MAX_SOURCES];

		n = hypsplit_top(v->hs, v->cpus[idx], hsrc, (size_t)top);
		for (j = 0; j < n; j++)
			hyp_source(w, &hsrc[j]);
	}
	json_arr_end(w);
}

static void cpu(struct json_writer *w, const struct view *v, int idx)
{
	const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[idx]);
	struct view_row r;

	view_row(v, idx, &r);
	json_obj_begin(w);
	json_kv_u64(w, "cpu", (uint64_t)v->cpus[idx]);
	json_kv_u64(w, "runtime_ns", r.runtime_ns);
	json_kv_u64(w, "noise_ns", r.noise_ns);
	json_kv_double(w, "available_pct", r.available_pct);
	json_kv_u64(w, "max_single_ns", r.max_single_ns);
	json_kv_u64(w, "samples", r.samples);
	by_class(w, v, "by_class_ns", r.class_ns, r.hyp_ns);
	by_class(w, v, "by_class_count", r.class_count, r.hyp_count);
	if (view_has_dtl(v)) {
		hypervisor(w, &r);
		/* the samples the host's log left as they were: their unexplained time, their count */
		json_kv_u64(w, "dtl_uncovered_ns", r.class_ns[VN_CLASS_UNEXPLAINED]);
		json_kv_u64(w, "dtl_uncovered_samples", r.class_count[VN_CLASS_UNEXPLAINED]);
	}
	sources(w, v, idx);
	view_worst_json(w, v, idx);
	if (mc) {
		json_kv_u64(w, "steal_seen_ns", mc->steal_seen_ns);
		json_kv_u64(w, "steal_outside_samples_ns", mc->steal_unplaced_ns);
		json_kv_u64(w, "clamped_samples", mc->clamped);
		json_kv_u64(w, "late_records", mc->late);
	}
	json_obj_end(w);
}

static void overhead(struct json_writer *w, const struct view *v)
{
	int i;

	json_key(w, "overhead");
	json_obj_begin(w);
	json_kv_u64(w, "bpf_events", v->bpf_events);
	json_kv_double(w, "bpf_run_ns_per_event", view_bpf_ns(v));
	json_kv_u64(w, "bpf_runs", v->bpf_run_cnt);
	json_kv_u64(w, "dropped", v->bpf_dropped + v->sampler_dropped);
	json_kv_u64(w, "bpf_dropped", v->bpf_dropped);
	json_kv_u64(w, "sampler_dropped", v->sampler_dropped);
	json_kv_u64(w, "bpf_desync", v->bpf_desync);
	json_kv_double(w, "sampler_loop_ns", view_loop_ns(v));
	json_key(w, "bpf_programs");
	json_arr_begin(w);
	for (i = 0; i < v->nprogs; i++) {
		json_obj_begin(w);
		json_kv_str(w, "name", v->progs[i].name);
		json_kv_u64(w, "runs", v->progs[i].run_cnt);
		json_kv_double(w, "run_ns_per_event",
			       v->progs[i].run_cnt
				   ? (double)v->progs[i].run_ns / (double)v->progs[i].run_cnt
				   : 0.0);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_obj_end(w);
}

static void view_json_end(FILE *f, const struct view *v)
{
	struct json_writer w;
	int i;

	json_init(&w, f, JSON_PRETTY);
	json_obj_begin(&w);
	settings(&w, v);
	json_key(&w, "cpus");
	json_arr_begin(&w);
	for (i = 0; i < v->ncpus; i++)
		cpu(&w, v, i);
	json_arr_end(&w);
	notes(&w, v);
	overhead(&w, v);
	json_obj_end(&w);
	if (json_finish(&w))
		log_err("JSON output incomplete");
}

const struct view_ops view_json_ops = {
	.end = view_json_end,
};
