/* SPDX-License-Identifier: MIT */
/* view: the shared model of the views (rows, histograms, lead-up), the choice of a view and the pieces several
 * views print (see view.h). */
#include <string.h>
#include "views/view.h"

const int view_shown[] = { VN_CLASS_NMI,   VN_CLASS_IRQ,   VN_CLASS_SOFTIRQ,	VN_CLASS_THREAD,
			   VN_CLASS_HCALL, VN_CLASS_STEAL, VN_CLASS_UNEXPLAINED };
_Static_assert(sizeof(view_shown) / sizeof(view_shown[0]) == VIEW_NSHOWN, "VIEW_NSHOWN");

static const struct view_ops view_silent_ops; /* an embedder's sink reports itself */

const struct view_ops *view_pick(const struct measure_params *p)
{
	if (p->sink)
		return &view_silent_ops;
	if (p->cmd == CMD_HIST || p->report_hist)
		return &view_hist_ops;
	if (p->cmd == CMD_TOP)
		return &view_top_ops;
	return p->json ? &view_json_ops : &view_text_ops;
}

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

const char *view_fmt_us(char *b, size_t n, uint64_t ns)
{
	if (ns >= 10000000000ULL)
		snprintf(b, n, "%.1fs", ns / 1e9);
	else if (ns >= 10000000ULL)
		snprintf(b, n, "%.1fms", ns / 1e6);
	else
		snprintf(b, n, "%.0fus", ns / 1e3);
	return b;
}

void view_table(FILE *f, const struct view *v)
{
	char a[32], b[32];
	int i, k;

	fprintf(f, "%4s %12s %12s %11s %12s %8s", "CPU", "RUNTIME(us)", "NOISE(us)", "%CPU_AVAIL",
		"MAX_SINGLE", "SAMPLES");
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %15s", merge_class_label(view_shown[k]));
	fprintf(f, "\n%64s", "");
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %15s", "count/net");
	fputc('\n', f);
	for (i = 0; i < v->ncpus; i++) {
		struct view_row r;

		view_row(v, i, &r);
		fprintf(f, "%4d %12.0f %12.0f %11.5f %12s %8llu", v->cpus[i], r.runtime_ns / 1e3,
			r.noise_ns / 1e3, r.available_pct,
			view_fmt_us(a, sizeof(a), r.max_single_ns), (unsigned long long)r.samples);
		for (k = 0; k < VIEW_NSHOWN; k++) {
			char cell[40];

			snprintf(cell, sizeof(cell), "%llu/%s",
				 (unsigned long long)r.class_count[view_shown[k]],
				 view_fmt_us(b, sizeof(b), r.class_ns[view_shown[k]]));
			fprintf(f, " %15s", cell);
		}
		fputc('\n', f);
	}
}

void view_sources(FILE *f, const struct view *v)
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
				view_fmt_us(a, sizeof(a), src[k].total_ns),
				r.runtime_ns
				    ? 100.0 * (double)src[k].total_ns / (double)r.runtime_ns
				    : 0.0,
				view_fmt_us(b, sizeof(b), src[k].max_ns));
		}
	}
}

void view_overhead_line(FILE *f, const struct view *v)
{
	fprintf(f, "overhead: sampler loop %.1f ns/iteration", view_loop_ns(v));
	if (!strcmp(v->helper, "bpf"))
		fprintf(f, ", bpf %llu events, %.0f ns/event", (unsigned long long)v->bpf_events,
			view_bpf_ns(v));
	fprintf(f, ", dropped %llu\n", (unsigned long long)(v->bpf_dropped + v->sampler_dropped));
}

void view_header(FILE *f, const struct view *v)
{
	fprintf(f,
		"vnoise: kernel helper %s%s (steal: %s, hypercall wrappers traced: %d), threshold "
		"%.1f us, "
		"duration %.1f s\n",
		v->helper,
		strcmp(v->helper, "proc") ? "" : " [counters only: no per-event durations]",
		v->steal_source, v->nhcalls, v->threshold_ns / 1e3, v->duration_ns / 1e9);
}

double view_loop_ns(const struct view *v)
{
	return v->sampler_iterations ? (double)v->sampler_loop_ns / (double)v->sampler_iterations
				     : 0.0;
}

double view_bpf_ns(const struct view *v)
{
	return v->bpf_run_cnt ? (double)v->bpf_run_ns / (double)v->bpf_run_cnt : 0.0;
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
