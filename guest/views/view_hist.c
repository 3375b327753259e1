/* SPDX-License-Identifier: MIT */
/*
 * view_hist: per CPU, the distribution of noise sample durations and, per shown class, of each sample's time of
 * that class: one row per histogram bucket in use, then count, percentiles and max (all in us). The columns fit
 * 80 columns; --wide gives the wider ones of before.
 */
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

/* Count of h in the bucket b (b comes from a histogram with the same bucket scheme). */
static uint64_t bucket_count(const struct hist *h, const struct hist_bucket *b)
{
	return h->buckets[hist_index(b->lower_ns)];
}

static void columns(FILE *f, const struct hist_cols *w, int cpu)
{
	int k;

	fprintf(f, "# CPU %d: noise sample durations; per class, its time in a sample (us)\n", cpu);
	fprintf(f, "%-*s %*s", w->lab, "BUCKET(us)", w->all, "ALL");
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %*s", w->cls, merge_class_label(view_shown[k]));
	fputc('\n', f);
}

/* Rows: every bucket any of the histograms uses (same bucket scheme, so bounds match). */
static void buckets(FILE *f, const struct hist_cols *w, const struct view_cpu_hist *h)
{
	static struct hist rows;
	struct hist_iter it;
	struct hist_bucket b;
	int k;

	hist_init(&rows);
	hist_merge(&rows, &h->all);
	for (k = 0; k < VIEW_NSHOWN; k++)
		hist_merge(&rows, &h->cls[view_shown[k]]);
	hist_iter_init(&it, &rows);
	while (hist_iter_next(&it, &b)) {
		char lab[48];

		snprintf(lab, sizeof(lab), "%.3f-%.3f", b.lower_ns / 1e3, b.upper_ns / 1e3);
		fprintf(f, "%-*s %*llu", w->lab, lab, w->all,
			(unsigned long long)bucket_count(&h->all, &b));
		for (k = 0; k < VIEW_NSHOWN; k++)
			fprintf(f, " %*llu", w->cls,
				(unsigned long long)bucket_count(&h->cls[view_shown[k]], &b));
		fputc('\n', f);
	}
}

/* One row of a statistic: label, ALL with 3 decimals, each class with 1. */
static void stat_row(FILE *f, const struct hist_cols *w, const char *lab, double all_ns,
		     const double cls_ns[VIEW_NSHOWN])
{
	int k;

	fprintf(f, "%-*s %*.3f", w->lab, lab, w->all, all_ns / 1e3);
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %*.1f", w->cls, cls_ns[k] / 1e3);
	fputc('\n', f);
}

static void summary(FILE *f, const struct hist_cols *w, const struct view_cpu_hist *h)
{
	double cls[VIEW_NSHOWN];
	int k, c;

	fprintf(f, "%-*s %*llu", w->lab, "count", w->all, (unsigned long long)hist_count(&h->all));
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %*llu", w->cls,
			(unsigned long long)hist_count(&h->cls[view_shown[k]]));
	fputc('\n', f);
	for (c = 0; c < (int)(sizeof(pct) / sizeof(pct[0])); c++) {
		char lab[16];

		snprintf(lab, sizeof(lab), "p%g", pct[c]);
		for (k = 0; k < VIEW_NSHOWN; k++)
			cls[k] = (double)hist_percentile(&h->cls[view_shown[k]], pct[c]);
		stat_row(f, w, lab, (double)hist_percentile(&h->all, pct[c]), cls);
	}
	for (k = 0; k < VIEW_NSHOWN; k++)
		cls[k] = (double)hist_max(&h->cls[view_shown[k]]);
	stat_row(f, w, "max", (double)hist_max(&h->all), cls);
}

static void view_hist_end(FILE *f, const struct view *v)
{
	struct hist_cols w = cols_of(v);
	int i;

	view_header(f, v);
	for (i = 0; i < v->ncpus && v->hist; i++) {
		columns(f, &w, v->cpus[i]);
		buckets(f, &w, &v->hist[i]);
		summary(f, &w, &v->hist[i]);
	}
	view_overhead_line(f, v);
}

const struct view_ops view_hist_ops = {
	.start = view_text_start,
	.end = view_hist_end,
};
