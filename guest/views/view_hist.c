/* SPDX-License-Identifier: MIT */
/*
 * view_hist: on more than one CPU first rtla's layout, a column per CPU and ALL (every CPU's samples); then per
 * CPU, the distribution of noise sample durations and, per shown class, of each sample's time of
 * that class: one row per bucket in use (4 an octave from the threshold, the time below it in one row from 0; with
 * --bucket-size rows of that width from 0, at most --entries of them, the rest in "over"), then count, percentiles and max (all in us); with the host's
 * dispatch trace log, once it split a sample, a second table of each split sample's time by hypervisor class
 * (STEAL and UNEXPL hold the time before the split there); then the notes of the class table (view_notes).
 * The columns fit 80 columns; --wide gives the wider ones of before.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/classes.h"
#include "views/view_text.h"

static const double pct[] = { 50, 90, 99, 99.9, 99.99 };

/* Column widths: bucket label, ALL, each class. */
struct hist_cols {
	int lab, all, cls;
};

static struct hist_cols cols_of(const struct view *v)
{
	return v->wide ? (struct hist_cols){ 22, 10, 8 } : (struct hist_cols){ 19, 8, 6 };
}

#define HIST_MAXCOLS (VIEW_NSHOWN > VN_HCLASS_PARTS ? VIEW_NSHOWN : VN_HCLASS_PARTS)

/* One table: an optional ALL column and n class columns. */
struct hist_table {
	const struct hist *all; /* NULL: no ALL column */
	const struct hist *cls[HIST_MAXCOLS];
	const char *lab[HIST_MAXCOLS];
	int n;
};

/*
 * v with at most dec decimals in at most width characters: fewer decimals first, then k (x1e3) or M (x1e6)
 * with one decimal or none. A multi-second gap on a loaded machine or a million samples in one bucket keep
 * the table inside its columns.
 */
static const char *fit(char *out, size_t len, int width, double v, int dec)
{
	static const struct {
		double div;
		const char *sfx;
	} u[] = { { 1, "" }, { 1e3, "k" }, { 1e6, "M" }, { 1e9, "G" } };

	for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
		for (int d = i ? 1 : dec; d >= 0; d--)
			if (snprintf(out, len, "%.*f%s", d, v / u[i].div, u[i].sfx) <= width)
				return out;
	return out; /* wider than any column: printed whole */
}

/* Count of h in the bucket b (b comes from a histogram with the same bucket scheme). */
static uint64_t bucket_count(const struct hist *h, const struct hist_bucket *b)
{
	return h->buckets[hist_index(b->lower_ns)];
}

static void columns(FILE *f, const struct hist_cols *w, const struct hist_table *t)
{
	int k;

	fprintf(f, "%-*s", w->lab, "BUCKET(us)");
	if (t->all)
		fprintf(f, " %*s", w->all, "ALL");
	for (k = 0; k < t->n; k++)
		fprintf(f, " %*s", w->cls, t->lab[k]);
	fputc('\n', f);
}

#define HIST_PER_OCTAVE 4 /* rows per power of two by default */
#define HIST_LINEAR_ENTRIES 256 /* rows with --bucket-size, by default (as rtla) */
#define ROW_BELOW UINT64_MAX /* the row of the counts below the threshold */
#define ROW_OVER (UINT64_MAX - 1) /* the row of the counts past --entries */

/* A row being summed: its key (ordinal, ROW_BELOW or ROW_OVER), bounds and a count per column. */
struct hist_row {
	uint64_t key, lo, hi;
	uint64_t all, cls[HIST_MAXCOLS];
};

/* The coarse ordinal of v's row (4 an octave): rows of the same ordinal are the same row. */
static uint64_t coarse(uint64_t v)
{
	unsigned idx = hist_index(v), g = HIST_SUB / HIST_PER_OCTAVE;

	return idx < 2 * HIST_SUB ? idx : 2 * HIST_SUB + (idx - 2 * HIST_SUB) / g;
}

/*
 * The row of a kept bucket b: with --bucket-size B, [k B, (k + 1) B) by its lower bound; else 4 an octave,
 * the first row from the threshold, the buckets wholly below it in one row. A kept bucket (1/16 of an
 * octave) lies in one row: a count is exact to that resolution.
 */
static void row_of(const struct view *v, const struct hist_bucket *b, struct hist_row *r)
{
	uint64_t entries = v->entries > 0 ? (uint64_t)v->entries : 0;

	if (v->bucket_ns) {
		r->key = b->lower_ns / v->bucket_ns;
		if (r->key >= (entries ? entries : HIST_LINEAR_ENTRIES)) {
			r->key = ROW_OVER;
			return;
		}
		r->lo = r->key * v->bucket_ns;
		r->hi = r->lo + v->bucket_ns - 1;
		return;
	}
	if (b->upper_ns < v->threshold_ns) { /* one row from 0 to the threshold */
		r->key = ROW_BELOW;
		r->lo = 0;
		r->hi = v->threshold_ns - 1;
		return;
	}
	r->key = coarse(b->lower_ns > v->threshold_ns ? b->lower_ns : v->threshold_ns) -
		 coarse(v->threshold_ns);
	if (entries && r->key >= entries) {
		r->key = ROW_OVER;
		return;
	}
	hist_coarse_bounds(b->lower_ns > v->threshold_ns ? b->lower_ns : v->threshold_ns,
			   HIST_PER_OCTAVE, &r->lo, &r->hi);
	if (r->lo < v->threshold_ns)
		r->lo = v->threshold_ns;
}

static void row_print(FILE *f, const struct view *v, const struct hist_cols *w,
		      const struct hist_table *t, const struct hist_row *r)
{
	char lab[48], num[32];
	int d, k;

	if (r->key == ROW_OVER) {
		snprintf(lab, sizeof(lab), "over");
	} else {
		for (d = 3; d > 0; d--) /* the label in its column: fewer decimals for long gaps */
			if (snprintf(lab, sizeof(lab), "%.*f-%.*f", d, r->lo / 1e3, d,
				     r->hi / 1e3) < w->lab)
				break;
		if (d == 0)
			snprintf(lab, sizeof(lab), "%.0f-%.0f", r->lo / 1e3, r->hi / 1e3);
	}
	fprintf(f, "%-*s", w->lab, lab);
	if (t->all)
		fprintf(f, " %*s", w->all, fit(num, sizeof(num), w->all, (double)r->all, 0));
	for (k = 0; k < t->n; k++)
		fprintf(f, " %*s", w->cls, fit(num, sizeof(num), w->cls, (double)r->cls[k], 0));
	fputc('\n', f);
}

/* Whether row r counts anything. */
static int row_any(const struct hist_row *r, const struct hist_table *t)
{
	int k;

	if (t->all && r->all)
		return 1;
	for (k = 0; k < t->n; k++)
		if (r->cls[k])
			return 1;
	return 0;
}

/*
 * Rows: every row any of the histograms uses (same bucket scheme, so bounds match), low to high; the row
 * below the threshold first and the "over" row last, when they count anything. The kept buckets come in
 * increasing order: those below the threshold first, those past --entries last.
 */
static void buckets(FILE *f, const struct view *v, const struct hist_cols *w,
		    const struct hist_table *t)
{
	static struct hist rows;
	struct hist_row cur = { 0 }, over = { .key = ROW_OVER };
	struct hist_row below = { .key = ROW_BELOW,
				  .hi = v->threshold_ns ? v->threshold_ns - 1 : 0 };
	struct hist_iter it;
	struct hist_bucket b;
	int k, have = 0, below_done = 0;

	hist_init(&rows);
	if (t->all)
		hist_merge(&rows, t->all);
	for (k = 0; k < t->n; k++)
		hist_merge(&rows, t->cls[k]);
	hist_iter_init(&it, &rows);
	while (hist_iter_next(&it, &b)) {
		struct hist_row r = { 0 }, *into = &r;

		row_of(v, &b, &r);
		if (r.key == ROW_BELOW) {
			into = &below;
		} else if (r.key == ROW_OVER) {
			into = &over;
		} else {
			if (!below_done && row_any(&below, t))
				row_print(f, v, w, t, &below);
			below_done = 1;
			if (have && r.key != cur.key) {
				row_print(f, v, w, t, &cur);
				have = 0;
			}
			if (!have) {
				cur = r;
				have = 1;
			}
			into = &cur;
		}
		if (t->all)
			into->all += bucket_count(t->all, &b);
		for (k = 0; k < t->n; k++)
			into->cls[k] += bucket_count(t->cls[k], &b);
	}
	if (!below_done && row_any(&below, t))
		row_print(f, v, w, t, &below);
	if (have)
		row_print(f, v, w, t, &cur);
	if (row_any(&over, t))
		row_print(f, v, w, t, &over);
}

/* One row of a statistic: label, ALL with 3 decimals, each class with 1. */
static void stat_row(FILE *f, const struct hist_cols *w, const struct hist_table *t,
		     const char *lab, double all_ns, const double cls_ns[HIST_MAXCOLS])
{
	char num[32];
	int k;

	fprintf(f, "%-*s", w->lab, lab);
	if (t->all)
		fprintf(f, " %*s", w->all, fit(num, sizeof(num), w->all, all_ns / 1e3, 3));
	for (k = 0; k < t->n; k++)
		fprintf(f, " %*s", w->cls, fit(num, sizeof(num), w->cls, cls_ns[k] / 1e3, 1));
	fputc('\n', f);
}

static void summary(FILE *f, const struct hist_cols *w, const struct hist_table *t)
{
	double cls[HIST_MAXCOLS];
	int k, c;

	char num[32];

	fprintf(f, "%-*s", w->lab, "count");
	if (t->all)
		fprintf(f, " %*s", w->all,
			fit(num, sizeof(num), w->all, (double)hist_count(t->all), 0));
	for (k = 0; k < t->n; k++)
		fprintf(f, " %*s", w->cls,
			fit(num, sizeof(num), w->cls, (double)hist_count(t->cls[k]), 0));
	fputc('\n', f);
	for (c = 0; c < (int)(sizeof(pct) / sizeof(pct[0])); c++) {
		char lab[16];

		snprintf(lab, sizeof(lab), "p%g", pct[c]);
		for (k = 0; k < t->n; k++)
			cls[k] = (double)hist_percentile(t->cls[k], pct[c]);
		stat_row(f, w, t, lab, t->all ? (double)hist_percentile(t->all, pct[c]) : 0, cls);
	}
	for (k = 0; k < t->n; k++)
		cls[k] = (double)hist_max(t->cls[k]);
	stat_row(f, w, t, "max", t->all ? (double)hist_max(t->all) : 0, cls);
}

static void table(FILE *f, const struct view *v, const struct hist_cols *w,
		  const struct hist_table *t)
{
	columns(f, w, t);
	buckets(f, v, w, t);
	summary(f, w, t);
}

/* rtla's layout first: a column per CPU and ALL (every CPU's samples), as many CPUs a table as fit. */
static void cpu_tables(FILE *f, const struct view *v, const struct hist_cols *w)
{
	struct hist *all = calloc(1, sizeof(*all));
	char lab[HIST_MAXCOLS][16];
	struct hist_table t;
	int i, k, per = (80 - w->lab - w->all) / (w->cls + 1);

	if (!all)
		return;
	if (per > HIST_MAXCOLS)
		per = HIST_MAXCOLS;
	if (per < 1)
		per = 1;
	for (i = 0; i < v->ncpus; i++)
		hist_merge(all, &v->hist[i].all);
	for (i = 0; i < v->ncpus; i += per) {
		t = (struct hist_table){ .all = all };
		for (k = 0; k < per && i + k < v->ncpus; k++) {
			snprintf(lab[k], sizeof(lab[k]), "CPU%d", v->cpus[i + k]);
			t.cls[k] = &v->hist[i + k].all;
			t.lab[k] = lab[k];
		}
		t.n = k;
		fprintf(f, "# noise sample durations per CPU, ALL: every CPU's (us)\n");
		table(f, v, w, &t);
	}
	free(all);
}

static void view_hist_end(FILE *f, const struct view *v)
{
	struct hist_cols w = cols_of(v);
	struct view_row *rows = calloc((size_t)v->ncpus + 1, sizeof(*rows));
	struct hist_table t;
	int i, k;

	view_header(f, v);
	if (v->ncpus > 1 && v->hist)
		cpu_tables(f, v, &w);
	for (i = 0; i < v->ncpus && v->hist; i++) {
		t = (struct hist_table){ .all = &v->hist[i].all, .n = VIEW_NSHOWN };
		for (k = 0; k < VIEW_NSHOWN; k++) {
			t.cls[k] = &v->hist[i].cls[view_shown[k]];
			t.lab[k] = classes_guest_label(view_shown[k]);
		}
		fprintf(f,
			"# CPU %d: noise sample durations; per class, its time in a sample (us)\n",
			v->cpus[i]);
		table(f, v, &w, &t);
		if (!view_split(v))
			continue;
		t = (struct hist_table){ .n = VN_HCLASS_PARTS };
		for (k = 0; k < VN_HCLASS_PARTS; k++) {
			t.cls[k] = &v->hist[i].hyp[k];
			t.lab[k] = classes_hyp_abbrev(k);
		}
		fprintf(f, "# CPU %d: per hypervisor class (host DTL), its time in a sample (us)\n",
			v->cpus[i]);
		table(f, v, &w, &t);
	}
	if (rows) {
		for (i = 0; i < v->ncpus; i++)
			view_row(v, i, &rows[i]);
		view_notes(f, v, rows);
	}
	free(rows);
	view_overhead_line(f, v);
}

const struct view_ops view_hist_ops = {
	.start = view_text_start,
	.end = view_hist_end,
};
