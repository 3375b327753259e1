/* SPDX-License-Identifier: MIT */
/*
 * view: the shared model of the views (rows, histograms, top's periods, vnoise's own threads, lead-up), the choice
 * of a view, and the pieces the text views print (see view.h): the run header, the per-CPU tables, the source
 * tables and the overhead line. By default every line fits 80 columns: one unit per column, said in its heading;
 * the time by class is one table, a row per class (the parts of view.h's class table) and a column per CPU, with
 * TOTAL; under it the notes (uncovered samples, the footer of shared/attrib/explain); each source is a row of
 * its own with its name last. --wide prints one row per CPU with a count/time cell per part and TOTAL.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attrib/classes.h"
#include "attrib/explain.h"
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
	if (p->cmd == CMD_TOP) {
		const char *term = getenv("TERM");

		return p->batch || !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO) || !term ||
			       !*term || !strcmp(term, "dumb")
			   ? &view_top_ops
			   : &view_screen_ops;
	}
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
		 const struct gapsplit_res *res)
{
	struct view *v = ctx;
	int i, k;

	for (i = 0; i < v->ncpus && v->cpus[i] != (int)cpu; i++)
		;
	if (i == v->ncpus || !v->hist)
		return;
	{
		const struct merge_cpu *mc = merge_cpu(v->m, (int)cpu);
		struct view_worst_split *ws = &v->hist[i].worst;

		if (mc && mc->worst.start_ns == start_ns && mc->worst.end_ns == end_ns) {
			ws->start_ns = start_ns;
			ws->end_ns = end_ns;
			ws->res = *res;
			ws->nsrc =
			    v->hs ? hypsplit_gap_sources(v->hs, ws->src, HYPSPLIT_GAP_SOURCES) : 0;
		}
	}
	for (k = 0; k < VN_HCLASS_PARTS; k++)
		if (res->hyp_ns[k])
			hist_add(&v->hist[i].hyp[k], res->hyp_ns[k]);
}

int view_has_dtl(const struct view *v)
{
	return v->hs && v->dtl && strcmp(v->dtl, "absent");
}

uint64_t view_part_ns(const struct view_row *r, int p)
{
	if (p >= 0 && p < VIEW_PART_HYP)
		return r->class_ns[view_shown[p]];
	if (p >= VIEW_PART_HYP && p < VIEW_PART_UNEXPL)
		return r->hyp_ns[p - VIEW_PART_HYP];
	return p == VIEW_PART_UNEXPL ? r->class_ns[VN_CLASS_UNEXPLAINED] : 0;
}

const char *view_part_label(int p)
{
	if (p >= VIEW_PART_HYP && p < VIEW_PART_UNEXPL)
		return classes_hyp_label(p - VIEW_PART_HYP);
	return classes_guest_label(p == VIEW_PART_UNEXPL	 ? VN_CLASS_UNEXPLAINED
				   : p >= 0 && p < VIEW_PART_HYP ? view_shown[p]
								 : -1);
}

uint64_t view_parts_total(const struct view_row *r)
{
	uint64_t sum = 0;

	for (int p = 0; p < VIEW_NPARTS; p++)
		sum += view_part_ns(r, p); /* unsigned: a period's wrapped differences add up too */
	return sum;
}

int view_split(const struct view *v)
{
	for (int i = 0; view_has_dtl(v) && i < v->ncpus; i++) {
		const struct hypsplit_cpu *h = hypsplit_cpu(v->hs, v->cpus[i]);

		if (h && h->split)
			return 1;
	}
	return 0;
}

int view_part_shown(const struct view *v, const struct view_row *rows, int p)
{
	if (p < VIEW_PART_HYP)
		return 1;
	if (p < VIEW_PART_UNEXPL)
		return view_split(v);
	if (!view_split(v))
		return 1;
	for (int i = 0; i < v->ncpus; i++)
		if (rows[i].class_ns[VN_CLASS_UNEXPLAINED])
			return 1;
	return 0;
}

/* The hypervisor split of the CPU: out of the guest classes (steal and unexplained first) into hyp_ns[]
 * (the sums stay exact). */
static void row_hyp(const struct view *v, int idx, struct view_row *r)
{
	const struct hypsplit_cpu *h = hypsplit_cpu(v->hs, v->cpus[idx]);
	int k;

	if (!h)
		return;
	for (k = 0; k < VN_CLASS_MAX; k++)
		if (h->from_class_ns[k] > r->class_ns[k])
			return; /* not this run's totals: never take what is not there */
	for (k = 0; k < VN_CLASS_MAX; k++)
		r->class_ns[k] -= h->from_class_ns[k];
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

const char *view_since_start(char *b, size_t n, const struct view *v, uint64_t t_ns)
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
			v->cpus[i], view_since_start(at, sizeof(at), v, mc->last_gap_start),
			(mc->last_gap_end - mc->last_gap_start) / 1e3);
		for (k = 0; k < n; k++) {
			const struct vn_event *e =
			    &mc->recent[(mc->nrecent - n + k) % MERGE_RECENT];
			struct merge_source s = { .cls = e->cls, .id = e->id };

			memcpy(s.comm, e->comm, VN_COMM_LEN);
			merge_source_name(&s, v->irq_name, v->irq_ctx, name, sizeof(name));
			fprintf(f, "  %s  net %9.1f us  %s%s\n",
				view_since_start(at, sizeof(at), v, e->start_ns), e->net_ns / 1e3,
				name, view_is_self(v, &s) ? " (vnoise)" : "");
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
	if (view_split(v))
		fprintf(f, "dtl %s: the host's log split STEAL and UNEXPL (HW: no host cause)\n",
			v->dtl);
	else if (view_has_dtl(v))
		fprintf(f, "dtl %s: nothing was split (%s)\n", v->dtl,
			!strcmp(v->dtl, "stale") ? "the host stopped publishing its log"
						 : "the host's log covered no sample");
	if (v->partial)
		fprintf(f, "partial: %s\n", v->partial);
	for (int i = 0; i < v->nshared; i++)
		fprintf(f,
			"CPU %d shared with vnoise-guest %s (pid %d, --force): each sampler counts "
			"the other as noise\n",
			v->shared[i].cpu, v->shared[i].what, v->shared[i].pid);
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

#define TABLE_CPUS 4 /* CPU columns per block of the class table: a block fits 80 columns */

/* A part's time as printed: signed (a period's difference may be below 0), in us. */
static double part_us(uint64_t ns)
{
	return (double)(int64_t)ns / 1e3;
}

/* A sum of parts as the footer takes it: 0 when a period's difference is below 0. */
static uint64_t nonneg(uint64_t ns)
{
	return (int64_t)ns < 0 ? 0 : ns;
}

/* One row of the class table over the CPU indices [b, e): the label, the CPUs' cells, with last the
 * TOTAL over all CPUs and its share of their NOISE. */
static void parts_row(FILE *f, const struct view *v, const struct view_row *rows, int p, int b,
		      int e, int last, uint64_t all_ns)
{
	uint64_t sum = 0;
	int i;

	fprintf(f, "%-9s", p < 0 ? "TOTAL" : view_part_label(p));
	for (i = b; i < e; i++)
		fprintf(f, " %10.1f",
			part_us(p < 0 ? view_parts_total(&rows[i]) : view_part_ns(&rows[i], p)));
	for (i = 0; last && i < v->ncpus; i++)
		sum += p < 0 ? view_parts_total(&rows[i]) : view_part_ns(&rows[i], p);
	if (last)
		fprintf(f, " %10.1f %7.1f", part_us(sum),
			(int64_t)all_ns > 0 ? 100.0 * (double)(int64_t)sum / (double)all_ns : 0.0);
	fputc('\n', f);
}

/* The class table: a column per CPU (blocks of TABLE_CPUS), a row per shown part, TOTAL (= NOISE). */
static void table_parts(FILE *f, const struct view *v, const struct view_row *rows)
{
	uint64_t all_ns = 0;
	char lab[32];
	int b, e, i, p;

	for (i = 0; i < v->ncpus; i++)
		all_ns += view_parts_total(&rows[i]);
	fputs("noise by class (us, net; each CPU's column adds up to its NOISE):\n", f);
	for (b = 0; b < v->ncpus; b = e) {
		e = b + TABLE_CPUS < v->ncpus ? b + TABLE_CPUS : v->ncpus;
		fprintf(f, "%-9s", "CLASS");
		for (i = b; i < e; i++) {
			snprintf(lab, sizeof(lab), "CPU%d", v->cpus[i]);
			fprintf(f, " %10s", lab);
		}
		if (e == v->ncpus)
			fprintf(f, " %10s %7s", "TOTAL", "%NOISE");
		fputc('\n', f);
		for (p = 0; p < VIEW_NPARTS; p++)
			if (view_part_shown(v, rows, p))
				parts_row(f, v, rows, p, b, e, e == v->ncpus, all_ns);
		parts_row(f, v, rows, -1, b, e, e == v->ncpus, all_ns);
	}
}

/* "1.35 s", "12.3 ms", "45.6 us": a time in the unit that suits it. */
static const char *human(char *b, size_t n, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(b, n, "%.2f s", ns / 1e9);
	else if (ns >= 1000000ull)
		snprintf(b, n, "%.1f ms", ns / 1e6);
	else
		snprintf(b, n, "%.1f us", ns / 1e3);
	return b;
}

void view_explain(const struct view *v, const struct view_row *rows, struct explain_totals *t)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < v->ncpus; i++) {
		t->total_ns += view_parts_total(&rows[i]);
		t->steal_ns += rows[i].class_ns[VN_CLASS_STEAL];
		t->unexpl_ns += rows[i].class_ns[VN_CLASS_UNEXPLAINED];
		t->hw_ns += rows[i].hyp_ns[VN_HCLASS_HW];
	}
	t->total_ns = nonneg(t->total_ns);
	t->steal_ns = nonneg(t->steal_ns);
	t->unexpl_ns = nonneg(t->unexpl_ns);
	t->hw_ns = nonneg(t->hw_ns);
}

void view_notes(FILE *f, const struct view *v, const struct view_row *rows)
{
	struct explain_totals t;
	uint64_t unc_n = 0;
	char a[32];
	int i;

	view_explain(v, rows, &t);
	for (i = 0; i < v->ncpus; i++)
		unc_n += rows[i].class_count[VN_CLASS_UNEXPLAINED];
	if (view_split(v) && t.unexpl_ns)
		fprintf(f,
			"%s in %llu samples came before the host's log covered them: not split "
			"(left in UNEXPL, their steal in STEAL)\n",
			human(a, sizeof(a), t.unexpl_ns), (unsigned long long)unc_n);
	for (i = 0; view_split(v) && i < v->ncpus; i++)
		if (rows[i].hyp_in_guest_ns)
			fprintf(
			    f,
			    "CPU %d: %.1f us of host time lay inside guest events: counted as the "
			    "host's, out of their classes\n",
			    v->cpus[i], rows[i].hyp_in_guest_ns / 1e3);
	explain_footer(f, &t, 80);
}

/* --wide: one row per CPU with a count/time (us) cell per shown part, and TOTAL (us). */
static void table_wide(FILE *f, const struct view *v, const struct view_row *rows)
{
	char lab[32], cell[48];
	int i, p;

	table_head(f);
	for (p = 0; p < VIEW_NPARTS; p++)
		if (view_part_shown(v, rows, p)) {
			snprintf(lab, sizeof(lab), "%s(n/us)", view_part_label(p));
			fprintf(f, " %15s", lab);
		}
	fprintf(f, " %12s\n", "TOTAL(us)");
	for (i = 0; i < v->ncpus; i++) {
		table_row(f, v, i, &rows[i]);
		for (p = 0; p < VIEW_NPARTS; p++) {
			uint64_t n = p < VIEW_PART_HYP ? rows[i].class_count[view_shown[p]]
				     : p < VIEW_PART_UNEXPL
					 ? rows[i].hyp_count[p - VIEW_PART_HYP]
					 : rows[i].class_count[VN_CLASS_UNEXPLAINED];

			if (!view_part_shown(v, rows, p))
				continue;
			snprintf(cell, sizeof(cell), "%llu/%.1f", (unsigned long long)n,
				 part_us(view_part_ns(&rows[i], p)));
			fprintf(f, " %15s", cell);
		}
		fprintf(f, " %12.1f\n", part_us(view_parts_total(&rows[i])));
	}
}

void view_table_rows(FILE *f, const struct view *v, const struct view_row *rows)
{
	int i;

	if (v->wide) {
		table_wide(f, v, rows);
	} else {
		table_head(f);
		fputc('\n', f);
		for (i = 0; i < v->ncpus; i++) {
			table_row(f, v, i, &rows[i]);
			fputc('\n', f);
		}
		table_parts(f, v, rows);
	}
	view_notes(f, v, rows);
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
		view_source_table(f, v, src, n, r.runtime_ns, VIEW_MAX);
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
