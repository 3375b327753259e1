/* SPDX-License-Identifier: MIT */
/* view: text, JSON, histogram and top printers over one struct view (see view.h). */
#include <string.h>
#include "util/json.h"
#include "views/view.h"

static const int shown[] = { VN_CLASS_NMI,   VN_CLASS_IRQ,   VN_CLASS_SOFTIRQ,	  VN_CLASS_THREAD,
			     VN_CLASS_HCALL, VN_CLASS_STEAL, VN_CLASS_UNEXPLAINED };
#define NSHOWN ((int)(sizeof(shown) / sizeof(shown[0])))

void view_gap_cb(void *ctx, int cpu, uint64_t dur_ns, const uint64_t class_ns[VN_CLASS_MAX])
{
	struct view *v = ctx;
	int i, c;

	if (!v->hist)
		return;
	for (i = 0; i < v->ncpus; i++)
		if (v->cpus[i] == cpu)
			break;
	if (i == v->ncpus)
		return;
	hist_add(&v->hist[i].all, dur_ns);
	for (c = 0; c < VN_CLASS_MAX; c++)
		if (class_ns[c])
			hist_add(&v->hist[i].cls[c], class_ns[c]);
}

int view_row(const struct view *v, int idx, struct view_row *r)
{
	const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[idx]);
	int c;

	memset(r, 0, sizeof(*r));
	if (mc) {
		r->runtime_ns = mc->runtime_ns;
		r->noise_ns = mc->noise_ns;
		r->max_single_ns = mc->max_single_ns;
		r->samples = mc->samples;
		memcpy(r->class_ns, mc->class_ns, sizeof(r->class_ns));
		memcpy(r->class_count, mc->class_count, sizeof(r->class_count));
	}
	if (v->proc && v->proc[idx].valid) {
		const struct view_proc *p = &v->proc[idx];
		uint64_t st = p->steal_ns < r->class_ns[VN_CLASS_UNEXPLAINED]
				  ? p->steal_ns
				  : r->class_ns[VN_CLASS_UNEXPLAINED];

		/* Counters only: no durations but steal; steal fills unexplained noise time. */
		for (c = VN_CLASS_NMI; c <= VN_CLASS_HCALL; c++)
			r->class_count[c] = p->count[c];
		r->class_ns[VN_CLASS_STEAL] += st;
		r->class_ns[VN_CLASS_UNEXPLAINED] -= st;
		r->class_count[VN_CLASS_STEAL] = p->count[VN_CLASS_STEAL];
	}
	r->available_pct =
	    r->runtime_ns ? 100.0 - 100.0 * (double)r->noise_ns / (double)r->runtime_ns : 0;
	if (r->available_pct < 0)
		r->available_pct = 0;
	return mc != NULL;
}

static const char *fmt_us(char *b, size_t n, uint64_t ns)
{
	if (ns >= 10000000000ULL)
		snprintf(b, n, "%.1fs", ns / 1e9);
	else if (ns >= 10000000ULL)
		snprintf(b, n, "%.1fms", ns / 1e6);
	else
		snprintf(b, n, "%.0fus", ns / 1e3);
	return b;
}

static void table(FILE *f, const struct view *v)
{
	char a[32], b[32];
	int i, k;

	fprintf(f, "%4s %12s %12s %11s %12s %8s", "CPU", "RUNTIME(us)", "NOISE(us)", "%CPU_AVAIL",
		"MAX_SINGLE", "SAMPLES");
	for (k = 0; k < NSHOWN; k++)
		fprintf(f, " %15s", merge_class_label(shown[k]));
	fprintf(f, "\n%64s", "");
	for (k = 0; k < NSHOWN; k++)
		fprintf(f, " %15s", "count/net");
	fputc('\n', f);
	for (i = 0; i < v->ncpus; i++) {
		struct view_row r;

		view_row(v, i, &r);
		fprintf(f, "%4d %12.0f %12.0f %11.5f %12s %8llu", v->cpus[i], r.runtime_ns / 1e3,
			r.noise_ns / 1e3, r.available_pct, fmt_us(a, sizeof(a), r.max_single_ns),
			(unsigned long long)r.samples);
		for (k = 0; k < NSHOWN; k++) {
			char cell[40];

			snprintf(cell, sizeof(cell), "%llu/%s",
				 (unsigned long long)r.class_count[shown[k]],
				 fmt_us(b, sizeof(b), r.class_ns[shown[k]]));
			fprintf(f, " %15s", cell);
		}
		fputc('\n', f);
	}
}

static void sources(FILE *f, const struct view *v)
{
	struct merge_source src[64];
	char name[96], a[32], b[32];
	int i, top = v->top_n > 64 ? 64 : v->top_n;
	size_t n, k;

	for (i = 0; i < v->ncpus && top > 0; i++) {
		struct view_row r;

		view_row(v, i, &r);
		if (v->proc && v->proc[i].valid) {
			const struct view_proc *p = &v->proc[i];
			int j;

			fprintf(f,
				"CPU %d busiest interrupt sources (counts only, no durations in "
				"proc mode):\n",
				v->cpus[i]);
			for (j = 0; j < p->nsrc && j < top; j++)
				fprintf(f, "  %-8s %-36s count %llu\n",
					merge_class_name(p->src[j].cls), p->src[j].name,
					(unsigned long long)p->src[j].count);
			continue;
		}
		n = merge_top_sources(v->m, v->cpus[i], src, (size_t)top);
		fprintf(f, "CPU %d top noise sources (net time inside noise samples):\n",
			v->cpus[i]);
		if (!n)
			fprintf(f, "  (none)\n");
		for (k = 0; k < n; k++) {
			merge_source_name(&src[k], v->irq_name, v->irq_ctx, name, sizeof(name));
			fprintf(f, "  %-40s count %8llu  total %10s  %8.4f%% of runtime  max %s\n",
				name, (unsigned long long)src[k].count,
				fmt_us(a, sizeof(a), src[k].total_ns),
				r.runtime_ns
				    ? 100.0 * (double)src[k].total_ns / (double)r.runtime_ns
				    : 0.0,
				fmt_us(b, sizeof(b), src[k].max_ns));
		}
	}
}

static void overhead_line(FILE *f, const struct view *v)
{
	fprintf(f, "overhead: sampler loop %.1f ns/iteration",
		v->sampler_iterations ? (double)v->sampler_loop_ns / (double)v->sampler_iterations
				      : 0.0);
	if (!strcmp(v->helper, "bpf"))
		fprintf(f, ", bpf %llu events, %.0f ns/event", (unsigned long long)v->bpf_events,
			v->bpf_run_cnt ? (double)v->bpf_run_ns / (double)v->bpf_run_cnt : 0.0);
	fprintf(f, ", dropped %llu\n", (unsigned long long)(v->bpf_dropped + v->sampler_dropped));
}

static void header(FILE *f, const struct view *v)
{
	fprintf(f,
		"vnoise: kernel helper %s%s (steal: %s, hypercall wrappers traced: %d), threshold "
		"%.1f us, "
		"duration %.1f s\n",
		v->helper,
		strcmp(v->helper, "proc") ? "" : " [counters only: no per-event durations]",
		v->steal_source, v->nhcalls, v->threshold_ns / 1e3, v->duration_ns / 1e9);
}

void view_text(FILE *f, const struct view *v)
{
	header(f, v);
	table(f, v);
	sources(f, v);
	overhead_line(f, v);
}

void view_top(FILE *f, const struct view *v, double elapsed_s, int tty)
{
	if (tty)
		fputs("\033[H\033[2J", f);
	fprintf(f, "vnoise top — %.1f s, kernel helper %s, threshold %.1f us (Ctrl-C to stop)\n",
		elapsed_s, v->helper, v->threshold_ns / 1e3);
	table(f, v);
	sources(f, v);
	overhead_line(f, v);
	fflush(f);
}

void view_leadup(FILE *f, const struct view *v)
{
	char name[96];
	int i;

	for (i = 0; i < v->ncpus; i++) {
		const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[i]);
		uint32_t k, n;

		if (!mc)
			continue;
		n = mc->nrecent < MERGE_RECENT ? mc->nrecent : MERGE_RECENT;
		fprintf(f,
			"CPU %d last noise sample [%llu, %llu) ns (%.1f us); last events inside "
			"noise:\n",
			v->cpus[i], (unsigned long long)mc->last_gap_start,
			(unsigned long long)mc->last_gap_end,
			(mc->last_gap_end - mc->last_gap_start) / 1e3);
		for (k = 0; k < n; k++) {
			const struct vn_event *e =
			    &mc->recent[(mc->nrecent - n + k) % MERGE_RECENT];
			struct merge_source s = { .cls = e->cls, .id = e->id };

			memcpy(s.comm, e->comm, VN_COMM_LEN);
			merge_source_name(&s, v->irq_name, v->irq_ctx, name, sizeof(name));
			fprintf(f, "  %llu ns  %-40s net %.1f us\n",
				(unsigned long long)e->start_ns, name, e->net_ns / 1e3);
		}
	}
}

void view_json(FILE *f, const struct view *v)
{
	struct json_writer w;
	struct merge_source src[256];
	char name[96];
	int i, k, top = v->top_n > 256 ? 256 : v->top_n;

	json_init(&w, f, JSON_PRETTY);
	json_obj_begin(&w);
	json_kv_str(&w, "schema", "vnoise.measure/1");
	json_kv_str(&w, "kernel_helper", v->helper);
	json_kv_str(&w, "steal_source", v->steal_source);
	json_kv_u64(&w, "hypercall_wrappers", (uint64_t)v->nhcalls);
	json_kv_u64(&w, "threshold_ns", v->threshold_ns);
	json_kv_u64(&w, "duration_ns", v->duration_ns);
	json_kv_u64(&w, "period_ns", v->period_ns);
	json_kv_u64(&w, "runtime_ns", v->runtime_ns);
	json_key(&w, "cpus");
	json_arr_begin(&w);
	for (i = 0; i < v->ncpus; i++) {
		const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[i]);
		struct view_row r;
		size_t n, j;

		view_row(v, i, &r);
		json_obj_begin(&w);
		json_kv_u64(&w, "cpu", (uint64_t)v->cpus[i]);
		json_kv_u64(&w, "runtime_ns", r.runtime_ns);
		json_kv_u64(&w, "noise_ns", r.noise_ns);
		json_kv_double(&w, "available_pct", r.available_pct);
		json_kv_u64(&w, "max_single_ns", r.max_single_ns);
		json_kv_u64(&w, "samples", r.samples);
		json_key(&w, "by_class_ns");
		json_obj_begin(&w);
		for (k = 0; k < NSHOWN; k++)
			json_kv_u64(&w, merge_class_name(shown[k]), r.class_ns[shown[k]]);
		json_obj_end(&w);
		json_key(&w, "by_class_count");
		json_obj_begin(&w);
		for (k = 0; k < NSHOWN; k++)
			json_kv_u64(&w, merge_class_name(shown[k]), r.class_count[shown[k]]);
		json_obj_end(&w);
		json_key(&w, "sources");
		json_arr_begin(&w);
		if (v->proc && v->proc[i].valid) {
			for (k = 0; k < v->proc[i].nsrc && k < top; k++) {
				json_obj_begin(&w);
				json_kv_str(&w, "class", merge_class_name(v->proc[i].src[k].cls));
				json_kv_str(&w, "name", v->proc[i].src[k].name);
				json_kv_u64(&w, "count", v->proc[i].src[k].count);
				json_obj_end(&w);
			}
		} else {
			n = merge_top_sources(v->m, v->cpus[i], src, (size_t)top);
			for (j = 0; j < n; j++) {
				json_obj_begin(&w);
				json_kv_str(&w, "class", merge_class_name(src[j].cls));
				/* name without the "class:" prefix; a thread's is its comm */
				if (src[j].cls == VN_CLASS_THREAD) {
					snprintf(name, sizeof(name), "%.*s", VN_COMM_LEN,
						 src[j].comm);
					json_kv_str(&w, "name", name);
				} else {
					const char *nm = merge_source_name(
					    &src[j], v->irq_name, v->irq_ctx, name, sizeof(name));

					json_kv_str(&w, "name",
						    strchr(nm, ':') ? strchr(nm, ':') + 1 : nm);
				}
				if (src[j].cls == VN_CLASS_THREAD)
					json_kv_u64(&w, "pid", src[j].id);
				json_kv_u64(&w, "count", src[j].count);
				json_kv_u64(&w, "total_ns", src[j].total_ns);
				json_kv_u64(&w, "max_ns", src[j].max_ns);
				json_obj_end(&w);
			}
		}
		json_arr_end(&w);
		if (mc) {
			json_kv_u64(&w, "steal_seen_ns", mc->steal_seen_ns);
			json_kv_u64(&w, "steal_outside_samples_ns", mc->steal_unplaced_ns);
			json_kv_u64(&w, "clamped_samples", mc->clamped);
			json_kv_u64(&w, "late_records", mc->late);
		}
		json_obj_end(&w);
	}
	json_arr_end(&w);
	json_key(&w, "overhead");
	json_obj_begin(&w);
	json_kv_u64(&w, "bpf_events", v->bpf_events);
	json_kv_double(&w, "bpf_run_ns_per_event",
		       v->bpf_run_cnt ? (double)v->bpf_run_ns / (double)v->bpf_run_cnt : 0.0);
	json_kv_u64(&w, "bpf_runs", v->bpf_run_cnt);
	json_kv_u64(&w, "dropped", v->bpf_dropped + v->sampler_dropped);
	json_kv_u64(&w, "bpf_dropped", v->bpf_dropped);
	json_kv_u64(&w, "sampler_dropped", v->sampler_dropped);
	json_kv_u64(&w, "bpf_desync", v->bpf_desync);
	json_kv_double(&w, "sampler_loop_ns",
		       v->sampler_iterations
			   ? (double)v->sampler_loop_ns / (double)v->sampler_iterations
			   : 0.0);
	json_key(&w, "bpf_programs");
	json_arr_begin(&w);
	for (i = 0; i < v->nprogs; i++) {
		json_obj_begin(&w);
		json_kv_str(&w, "name", v->progs[i].name);
		json_kv_u64(&w, "runs", v->progs[i].run_cnt);
		json_kv_double(&w, "run_ns_per_event",
			       v->progs[i].run_cnt
				   ? (double)v->progs[i].run_ns / (double)v->progs[i].run_cnt
				   : 0.0);
		json_obj_end(&w);
	}
	json_arr_end(&w);
	json_obj_end(&w);
	json_obj_end(&w);
	if (json_finish(&w))
		fprintf(stderr, "vnoise: error: JSON output incomplete\n");
}

/* Count of h in the bucket b (b comes from a histogram with the same bucket scheme). */
static uint64_t bucket_count(const struct hist *h, const struct hist_bucket *b)
{
	return h->buckets[hist_index(b->lower_ns)];
}

void view_hist(FILE *f, const struct view *v)
{
	static struct hist rows;
	static const double pct[] = { 50, 90, 99, 99.9, 99.99 };
	int i, k, c;

	header(f, v);
	for (i = 0; i < v->ncpus && v->hist; i++) {
		const struct view_cpu_hist *h = &v->hist[i];
		struct hist_iter it;
		struct hist_bucket b;

		fprintf(f,
			"# CPU %d: noise sample durations (us), per class: time of that class in a "
			"sample\n",
			v->cpus[i]);
		fprintf(f, "%-22s %10s", "# bucket(us)", "ALL");
		for (k = 0; k < NSHOWN; k++)
			fprintf(f, " %8s", merge_class_label(shown[k]));
		fputc('\n', f);
		/* Rows: every bucket any of the histograms uses (same bucket scheme, so bounds match). */
		hist_init(&rows);
		hist_merge(&rows, &h->all);
		for (k = 0; k < NSHOWN; k++)
			hist_merge(&rows, &h->cls[shown[k]]);
		hist_iter_init(&it, &rows);
		while (hist_iter_next(&it, &b)) {
			char lab[48];

			snprintf(lab, sizeof(lab), "%.3f-%.3f", b.lower_ns / 1e3, b.upper_ns / 1e3);
			fprintf(f, "%-22s %10llu", lab,
				(unsigned long long)bucket_count(&h->all, &b));
			for (k = 0; k < NSHOWN; k++)
				fprintf(f, " %8llu",
					(unsigned long long)bucket_count(&h->cls[shown[k]], &b));
			fputc('\n', f);
		}
		fprintf(f, "%-22s %10llu", "count", (unsigned long long)hist_count(&h->all));
		for (k = 0; k < NSHOWN; k++)
			fprintf(f, " %8llu", (unsigned long long)hist_count(&h->cls[shown[k]]));
		fputc('\n', f);
		for (c = 0; c < (int)(sizeof(pct) / sizeof(pct[0])); c++) {
			char lab[16];

			snprintf(lab, sizeof(lab), "p%g", pct[c]);
			fprintf(f, "%-22s %10.3f", lab, hist_percentile(&h->all, pct[c]) / 1e3);
			for (k = 0; k < NSHOWN; k++)
				fprintf(f, " %8.1f",
					hist_percentile(&h->cls[shown[k]], pct[c]) / 1e3);
			fputc('\n', f);
		}
		fprintf(f, "%-22s %10.3f", "max", hist_max(&h->all) / 1e3);
		for (k = 0; k < NSHOWN; k++)
			fprintf(f, " %8.1f", hist_max(&h->cls[shown[k]]) / 1e3);
		fputc('\n', f);
	}
	overhead_line(f, v);
}
