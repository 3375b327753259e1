/* SPDX-License-Identifier: MIT */
/*
 * view_hist: per CPU, the distribution of noise sample durations and, per shown class, of each sample's time of
 * that class: one row per histogram bucket in use, then count, percentiles and max (all in us); with the host's
 * dispatch trace log, once it split a sample, a second table of each split sample's time by hypervisor class
 * (STEAL and UNEXPL hold the time before the split there); then the notes of the class table (view_notes).
 * The columns fit 80 columns; --wide gives the wider ones of before.
 */
#include <stdlib.h>
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

/* Rows: every bucket any of the histograms uses (same bucket scheme, so bounds match). */
static void buckets(FILE *f, const struct hist_cols *w, const struct hist_table *t)
{
	static struct hist rows;
	struct hist_iter it;
	struct hist_bucket b;
	int k;

	hist_init(&rows);
	if (t->all)
		hist_merge(&rows, t->all);
	for (k = 0; k < t->n; k++)
		hist_merge(&rows, t->cls[k]);
	hist_iter_init(&it, &rows);
	while (hist_iter_next(&it, &b)) {
		char lab[48], num[32];
		int d;

		for (d = 3; d > 0; d--) /* the label in its column: fewer decimals for long gaps */
			if (snprintf(lab, sizeof(lab), "%.*f-%.*f", d, b.lower_ns / 1e3, d,
				     b.upper_ns / 1e3) < w->lab)
				break;
		if (d == 0)
			snprintf(lab, sizeof(lab), "%.0f-%.0f", b.lower_ns / 1e3, b.upper_ns / 1e3);
		fprintf(f, "%-*s", w->lab, lab);
		if (t->all)
			fprintf(f, " %*s", w->all,
				fit(num, sizeof(num), w->all, (double)bucket_count(t->all, &b), 0));
		for (k = 0; k < t->n; k++)
			fprintf(
			    f, " %*s", w->cls,
			    fit(num, sizeof(num), w->cls, (double)bucket_count(t->cls[k], &b), 0));
		fputc('\n', f);
	}
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

static void table(FILE *f, const struct hist_cols *w, const struct hist_table *t)
{
	columns(f, w, t);
	buckets(f, w, t);
	summary(f, w, t);
}

static void view_hist_end(FILE *f, const struct view *v)
{
	struct hist_cols w = cols_of(v);
	struct view_row *rows = calloc((size_t)v->ncpus + 1, sizeof(*rows));
	struct hist_table t;
	int i, k;

	view_header(f, v);
	for (i = 0; i < v->ncpus && v->hist; i++) {
		t = (struct hist_table){ .all = &v->hist[i].all, .n = VIEW_NSHOWN };
		for (k = 0; k < VIEW_NSHOWN; k++) {
			t.cls[k] = &v->hist[i].cls[view_shown[k]];
			t.lab[k] = classes_guest_label(view_shown[k]);
		}
		fprintf(f,
			"# CPU %d: noise sample durations; per class, its time in a sample (us)\n",
			v->cpus[i]);
		table(f, &w, &t);
		if (!view_split(v))
			continue;
		t = (struct hist_table){ .n = VN_HCLASS_PARTS };
		for (k = 0; k < VN_HCLASS_PARTS; k++) {
			t.cls[k] = &v->hist[i].hyp[k];
			t.lab[k] = classes_hyp_abbrev(k);
		}
		fprintf(f, "# CPU %d: per hypervisor class (host DTL), its time in a sample (us)\n",
			v->cpus[i]);
		table(f, &w, &t);
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
