/* SPDX-License-Identifier: MIT */
/*
 * view: the shared model of the views (rows, histograms, top's periods, vnoise's own threads, lead-up), the choice
 * of a view, and the pieces the text views print (see view.h): the run header, the per-CPU tables, the source
 * tables and the overhead line. By default every line fits 80 columns: one unit per column, said in its heading;
 * the time and the count by class are tables of their own; each source is a row of its own with its name last.
 * --wide prints the one table of before (a count/time cell per class on the CPU's row).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/classes.h"
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

	for (i = 0; i < v->ncpus; i++)
		if (v->cpus[i] == cpu)
			break;
	if (i == v->ncpus)
		return;
	if (v->period && dur_ns > v->period[i].max_ns)
		v->period[i].max_ns = dur_ns;
	if (v->hs) {
		const struct merge_cpu *mc = merge_cpu(v->m, cpu); /* its last gap is this one */

		if (mc && hypsplit_gap(v->hs, cpu, mc->last_gap_start, mc->last_gap_end, class_ns))
			v->hs_err = 1;
	}
	if (!v->hist)
		return;
	hist_add(&v->hist[i].all, dur_ns);
	for (c = 0; c < VN_CLASS_MAX; c++)
		if (class_ns[c])
			hist_add(&v->hist[i].cls[c], class_ns[c]);
}

void view_hyp_cb(void *ctx, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		 const uint64_t parts[VN_HCLASS_PARTS])
{
	struct view *v = ctx;
	int i, k;

	(void)start_ns;
	(void)end_ns;

	for (i = 0; i < v->ncpus && v->cpus[i] != (int)cpu; i++)
		;
	if (i == v->ncpus || !v->hist)
		return;
	for (k = 0; k < VN_HCLASS_PARTS; k++)
		if (parts[k])
			hist_add(&v->hist[i].hyp[k], parts[k]);
}

int view_has_dtl(const struct view *v)
{
	return v->hs && v->dtl && strcmp(v->dtl, "absent");
}

/* The hypervisor split of the CPU: out of steal and unexplained into hyp_ns[] (the sums stay exact). */
static void row_hyp(const struct view *v, int idx, struct view_row *r)
{
	const struct hypsplit_cpu *h = hypsplit_cpu(v->hs, v->cpus[idx]);
	uint64_t *st = &r->class_ns[VN_CLASS_STEAL], *un = &r->class_ns[VN_CLASS_UNEXPLAINED];
	int k;

	if (!h || h->from_steal_ns > *st || h->from_unexpl_ns > *un)
		return; /* nothing split (or not this run's totals: never take what is not there) */
	*st -= h->from_steal_ns;
	*un -= h->from_unexpl_ns;
	r->class_count[VN_CLASS_UNEXPLAINED] -=
	    h->unexpl_gaps < r->class_count[VN_CLASS_UNEXPLAINED]
		? h->unexpl_gaps
		: r->class_count[VN_CLASS_UNEXPLAINED];
	for (k = 0; k < VN_HCLASS_MAX; k++) {
		r->hyp_ns[k] = h->hyp_ns[k];
		r->hyp_count[k] = h->hyp_count[k];
	}
	r->hyp_ns[VN_HCLASS_HW] = h->hw_ns;
	r->hyp_count[VN_HCLASS_HW] = h->hw_count;
	r->hyp_in_guest_ns = h->in_guest_ns;
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
	if (mc && view_has_dtl(v))
		row_hyp(v, idx, r);
	r->available_pct =
	    r->runtime_ns ? 100.0 - 100.0 * (double)r->noise_ns / (double)r->runtime_ns : 0;
	if (r->available_pct < 0)
		r->available_pct = 0;
	return mc != NULL;
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

int view_is_self(const struct view *v, const struct merge_source *s)
{
	int i;

	if (s->cls != VN_CLASS_THREAD)
		return 0;
	for (i = 0; i < v->nself; i++)
		if ((uint32_t)v->self[i] == s->id)
			return 1;
	return 0;
}

int view_period_new(struct view *v)
{
	v->period = calloc((size_t)v->ncpus + 1, sizeof(*v->period));
	return v->period ? 0 : -ENOMEM;
}

void view_period_free(struct view *v)
{
	int i;

	for (i = 0; v->period && i < v->ncpus; i++)
		free(v->period[i].src);
	free(v->period);
	v->period = NULL;
}

/* "+1.234567 s": t_ns in seconds from the start of the run (t0_ns), as rtla shows its traces. */
static const char *since_start(char *b, size_t n, const struct view *v, uint64_t t_ns)
{
	if (t_ns >= v->t0_ns)
		snprintf(b, n, "+%.6f s", (t_ns - v->t0_ns) / 1e9);
	else
		snprintf(b, n, "-%.6f s", (v->t0_ns - t_ns) / 1e9);
	return b;
}

void view_leadup(FILE *f, const struct view *v)
{
	char name[96], at[32];
	int i;

	for (i = 0; i < v->ncpus; i++) {
		const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[i]);
		uint32_t k, n;

		if (!mc)
			continue;
		n = mc->nrecent < MERGE_RECENT ? mc->nrecent : MERGE_RECENT;
		fprintf(f, "CPU %d last noise sample at %s, %.1f us; last events inside noise:\n",
			v->cpus[i], since_start(at, sizeof(at), v, mc->last_gap_start),
			(mc->last_gap_end - mc->last_gap_start) / 1e3);
		for (k = 0; k < n; k++) {
			const struct vn_event *e =
			    &mc->recent[(mc->nrecent - n + k) % MERGE_RECENT];
			struct merge_source s = { .cls = e->cls, .id = e->id };

			memcpy(s.comm, e->comm, VN_COMM_LEN);
			merge_source_name(&s, v->irq_name, v->irq_ctx, name, sizeof(name));
			fprintf(f, "  %s  net %9.1f us  %s%s\n",
				since_start(at, sizeof(at), v, e->start_ns), e->net_ns / 1e3, name,
				view_is_self(v, &s) ? " (vnoise)" : "");
		}
	}
}

/* ---- the printed pieces ---- */

#define SOURCES_MAX 64 /* sources listed per CPU at most */

void view_header(FILE *f, const struct view *v)
{
	if (!v->replayed)
		fprintf(f, "vnoise %s: ", v->version ? v->version : "?");
	else if (v->version)
		fprintf(f, "recorded by vnoise %s: ", v->version);
	else
		fputs("recorded by vnoise (the file does not say which version): ", f);
	fprintf(f, "threshold %.1f us, duration %.1f s\n", v->threshold_ns / 1e3,
		v->duration_ns / 1e9);
	fprintf(f, "kernel helper %s, steal %s, %d hypercall wrappers traced\n", v->helper,
		v->steal_source, v->nhcalls);
	if (!strcmp(v->helper, "proc"))
		fputs("counters only: no per-event durations (kernel helper proc)\n", f);
	if (view_has_dtl(v))
		fprintf(
		    f,
		    "dtl %s: STEAL and UNEXPL split into hypervisor classes, %llu samples late\n",
		    v->dtl, (unsigned long long)v->dtl_late);
	if (v->partial)
		fprintf(f, "partial: %s\n", v->partial);
}

/* The %CPU_AVAIL cell: 3 decimals; "partial" when a damaged file left the CPU without its runtime. */
static const char *avail_cell(char *b, size_t n, const struct view *v, const struct view_row *r)
{
	if (!r->runtime_ns || r->noise_ns > r->runtime_ns)
		snprintf(b, n, "%s", v->partial ? "partial" : "-");
	else
		snprintf(b, n, "%.3f", r->available_pct);
	return b;
}

/* CPU, runtime, noise, %CPU_AVAIL, largest sample, samples: the first columns of both layouts. */
static void table_head(FILE *f)
{
	fprintf(f, "%4s %12s %12s %11s %15s %9s", "CPU", "RUNTIME(us)", "NOISE(us)", "%CPU_AVAIL",
		"MAX_SINGLE(us)", "SAMPLES");
}

static void table_row(FILE *f, const struct view *v, int idx, const struct view_row *r)
{
	char a[32];

	fprintf(f, "%4d %12.0f %12.0f %11s %15.1f %9llu", v->cpus[idx], r->runtime_ns / 1e3,
		r->noise_ns / 1e3, avail_cell(a, sizeof(a), v, r), r->max_single_ns / 1e3,
		(unsigned long long)r->samples);
}

/* Net time (us) or count by class: a title, a heading and a row per CPU. */
static void table_classes(FILE *f, const struct view *v, const struct view_row *rows, int times)
{
	char lab[32];
	int i, k, w[VIEW_NSHOWN];

	fputs(times ? "noise time by class (us, net: a nested event counts once):\n"
		    : "noise count by class (events inside noise samples):\n",
	      f);
	fprintf(f, "%4s", "CPU");
	for (k = 0; k < VIEW_NSHOWN; k++) {
		snprintf(lab, sizeof(lab), "%s%s", classes_guest_label(view_shown[k]),
			 times ? "(us)" : "");
		w[k] = strlen(lab) > 9 ? (int)strlen(lab) : 9;
		fprintf(f, " %*s", w[k], lab);
	}
	fputc('\n', f);
	for (i = 0; i < v->ncpus; i++) {
		fprintf(f, "%4d", v->cpus[i]);
		for (k = 0; k < VIEW_NSHOWN; k++)
			if (times)
				fprintf(f, " %*.1f", w[k], rows[i].class_ns[view_shown[k]] / 1e3);
			else
				fprintf(f, " %*llu", w[k],
					(unsigned long long)rows[i].class_count[view_shown[k]]);
		fputc('\n', f);
	}
}

/* With a DTL: the hypervisor time (us) and count of each CPU, a table of its own (80 columns). */
static void table_hyp(FILE *f, const struct view *v, const struct view_row *rows)
{
	char lab[32];
	int i, k;

	fputs("hypervisor time by class (us, out of STEAL and UNEXPL; HW: no host cause):\n", f);
	fprintf(f, "%4s", "CPU");
	for (k = 0; k < VN_HCLASS_PARTS; k++) {
		snprintf(lab, sizeof(lab), "%s(us)", classes_hyp_label(k));
		fprintf(f, " %12s", lab);
	}
	fputc('\n', f);
	for (i = 0; i < v->ncpus; i++) {
		fprintf(f, "%4d", v->cpus[i]);
		for (k = 0; k < VN_HCLASS_PARTS; k++)
			fprintf(f, " %12.1f", rows[i].hyp_ns[k] / 1e3);
		fputc('\n', f);
	}
	for (i = 0; i < v->ncpus; i++)
		if (rows[i].hyp_in_guest_ns)
			fprintf(f,
				"CPU %d: also %.1f us of host time inside guest events (left in "
				"their class)\n",
				v->cpus[i], rows[i].hyp_in_guest_ns / 1e3);
}

/* --wide: one row per CPU with a count/time (us) cell per class (and per hypervisor class with a DTL). */
static void table_wide(FILE *f, const struct view *v, const struct view_row *rows)
{
	char lab[32], cell[48];
	int i, k;

	table_head(f);
	for (k = 0; k < VIEW_NSHOWN; k++) {
		snprintf(lab, sizeof(lab), "%s(n/us)", classes_guest_label(view_shown[k]));
		fprintf(f, " %15s", lab);
	}
	for (k = 0; view_has_dtl(v) && k < VN_HCLASS_PARTS; k++) {
		snprintf(lab, sizeof(lab), "%s(n/us)", classes_hyp_label(k));
		fprintf(f, " %15s", lab);
	}
	fputc('\n', f);
	for (i = 0; i < v->ncpus; i++) {
		table_row(f, v, i, &rows[i]);
		for (k = 0; k < VIEW_NSHOWN; k++) {
			snprintf(cell, sizeof(cell), "%llu/%.1f",
				 (unsigned long long)rows[i].class_count[view_shown[k]],
				 rows[i].class_ns[view_shown[k]] / 1e3);
			fprintf(f, " %15s", cell);
		}
		for (k = 0; view_has_dtl(v) && k < VN_HCLASS_PARTS; k++) {
			snprintf(cell, sizeof(cell), "%llu/%.1f",
				 (unsigned long long)rows[i].hyp_count[k], rows[i].hyp_ns[k] / 1e3);
			fprintf(f, " %15s", cell);
		}
		fputc('\n', f);
	}
}

void view_table_rows(FILE *f, const struct view *v, const struct view_row *rows)
{
	int i;

	if (v->wide) {
		table_wide(f, v, rows);
		return;
	}
	table_head(f);
	fputc('\n', f);
	for (i = 0; i < v->ncpus; i++) {
		table_row(f, v, i, &rows[i]);
		fputc('\n', f);
	}
	table_classes(f, v, rows, 1);
	table_classes(f, v, rows, 0);
	if (view_has_dtl(v))
		table_hyp(f, v, rows);
}

void view_table(FILE *f, const struct view *v)
{
	struct view_row *rows = calloc((size_t)v->ncpus + 1, sizeof(*rows));
	int i;

	if (!rows) {
		fputs("(out of memory)\n", f);
		return;
	}
	for (i = 0; i < v->ncpus; i++)
		view_row(v, i, &rows[i]);
	view_table_rows(f, v, rows);
	free(rows);
}

void view_source_table(FILE *f, const struct view *v, const struct merge_source *src, size_t n,
		       uint64_t runtime_ns, int with_max)
{
	char name[96];
	size_t k;

	if (!n) {
		fputs("  (none)\n", f);
		return;
	}
	fprintf(f, "  %8s %11s %8s", "COUNT", "TOTAL(us)", "%RUNTIME");
	if (with_max)
		fprintf(f, " %9s", "MAX(us)");
	fputs("  SOURCE\n", f);
	for (k = 0; k < n; k++) {
		merge_source_name(&src[k], v->irq_name, v->irq_ctx, name, sizeof(name));
		fprintf(f, "  %8llu %11.1f %8.4f", (unsigned long long)src[k].count,
			src[k].total_ns / 1e3,
			runtime_ns ? 100.0 * (double)src[k].total_ns / (double)runtime_ns : 0.0);
		if (with_max)
			fprintf(f, " %9.1f", src[k].max_ns / 1e3);
		fprintf(f, "  %s%s\n", name, view_is_self(v, &src[k]) ? " (vnoise)" : "");
	}
}

/* The proc fallback's busiest interrupt counters of CPU index i (no durations). */
static void proc_sources(FILE *f, const struct view *v, int i, int top)
{
	const struct view_proc *p = &v->proc[i];
	int j;

	fprintf(f, "CPU %d busiest interrupt sources (counts only in proc mode):\n", v->cpus[i]);
	if (!p->nsrc || !top) {
		fputs("  (none)\n", f);
		return;
	}
	fprintf(f, "  %10s %-8s %s\n", "COUNT", "CLASS", "SOURCE");
	for (j = 0; j < p->nsrc && j < top; j++)
		fprintf(f, "  %10llu %-8s %s\n", (unsigned long long)p->src[j].count,
			classes_guest_name(p->src[j].cls), p->src[j].name);
}

void view_sources(FILE *f, const struct view *v)
{
	struct merge_source src[SOURCES_MAX];
	int i, top = v->top_n > SOURCES_MAX ? SOURCES_MAX : v->top_n;
	size_t n;

	for (i = 0; i < v->ncpus && top > 0; i++) {
		struct view_row r;

		if (v->proc && v->proc[i].valid) {
			proc_sources(f, v, i, top);
			continue;
		}
		view_row(v, i, &r);
		n = merge_top_sources(v->m, v->cpus[i], src, (size_t)top);
		fprintf(f, "CPU %d top noise sources (net time inside noise samples):\n",
			v->cpus[i]);
		view_source_table(f, v, src, n, r.runtime_ns, 1);
	}
}

void view_hyp_sources(FILE *f, const struct view *v)
{
	struct hypsplit_source src[SOURCES_MAX];
	int i, top = v->top_n > SOURCES_MAX ? SOURCES_MAX : v->top_n;
	size_t n, k;

	for (i = 0; view_has_dtl(v) && i < v->ncpus && top > 0; i++) {
		n = hypsplit_top(v->hs, v->cpus[i], src, (size_t)top);
		fprintf(f, "CPU %d hypervisor sources (host time inside noise samples):\n",
			v->cpus[i]);
		if (!n) {
			fputs("  (none)\n", f);
			continue;
		}
		fprintf(f, "  %8s %11s %9s  %-12s %s\n", "COUNT", "TOTAL(us)", "MAX(us)", "CLASS",
			"SOURCE");
		for (k = 0; k < n; k++)
			fprintf(f, "  %8llu %11.1f %9.1f  %-12s %s\n",
				(unsigned long long)src[k].count, src[k].total_ns / 1e3,
				src[k].max_ns / 1e3, classes_hyp_name(src[k].hclass), src[k].name);
	}
}

void view_overhead_line(FILE *f, const struct view *v)
{
	fprintf(f, "overhead: sampler loop %.1f ns/iter", view_loop_ns(v));
	if (!strcmp(v->helper, "bpf"))
		fprintf(f, ", bpf %llu events at %.0f ns", (unsigned long long)v->bpf_events,
			view_bpf_ns(v));
	fprintf(f, ", dropped %llu\n", (unsigned long long)(v->bpf_dropped + v->sampler_dropped));
}
