/* SPDX-License-Identifier: MIT */
/*
 * view_hist: per CPU, the distribution of noise sample durations and, per shown class, of each sample's time of
 * that class: one row per histogram bucket in use, then count, percentiles and max (all in us).
 */
#include "views/view_text.h"

static const double pct[] = { 50, 90, 99, 99.9, 99.99 };

/* Count of h in the bucket b (b comes from a histogram with the same bucket scheme). */
static uint64_t bucket_count(const struct hist *h, const struct hist_bucket *b)
{
	return h->buckets[hist_index(b->lower_ns)];
}

static void columns(FILE *f, int cpu)
{
	int k;

	fprintf(
	    f, "# CPU %d: noise sample durations (us), per class: time of that class in a sample\n",
	    cpu);
	fprintf(f, "%-22s %10s", "# bucket(us)", "ALL");
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %8s", merge_class_label(view_shown[k]));
	fputc('\n', f);
}

/* Rows: every bucket any of the histograms uses (same bucket scheme, so bounds match). */
static void buckets(FILE *f, const struct view_cpu_hist *h)
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
		fprintf(f, "%-22s %10llu", lab, (unsigned long long)bucket_count(&h->all, &b));
		for (k = 0; k < VIEW_NSHOWN; k++)
			fprintf(f, " %8llu",
				(unsigned long long)bucket_count(&h->cls[view_shown[k]], &b));
		fputc('\n', f);
	}
}

static void summary(FILE *f, const struct view_cpu_hist *h)
{
	int k, c;

	fprintf(f, "%-22s %10llu", "count", (unsigned long long)hist_count(&h->all));
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %8llu", (unsigned long long)hist_count(&h->cls[view_shown[k]]));
	fputc('\n', f);
	for (c = 0; c < (int)(sizeof(pct) / sizeof(pct[0])); c++) {
		char lab[16];

		snprintf(lab, sizeof(lab), "p%g", pct[c]);
		fprintf(f, "%-22s %10.3f", lab, hist_percentile(&h->all, pct[c]) / 1e3);
		for (k = 0; k < VIEW_NSHOWN; k++)
			fprintf(f, " %8.1f", hist_percentile(&h->cls[view_shown[k]], pct[c]) / 1e3);
		fputc('\n', f);
	}
	fprintf(f, "%-22s %10.3f", "max", hist_max(&h->all) / 1e3);
	for (k = 0; k < VIEW_NSHOWN; k++)
		fprintf(f, " %8.1f", hist_max(&h->cls[view_shown[k]]) / 1e3);
	fputc('\n', f);
}

static void view_hist_end(FILE *f, const struct view *v)
{
	int i;

	view_header(f, v);
	for (i = 0; i < v->ncpus && v->hist; i++) {
		columns(f, v->cpus[i]);
		buckets(f, &v->hist[i]);
		summary(f, &v->hist[i]);
	}
	view_overhead_line(f, v);
}

const struct view_ops view_hist_ops = {
	.start = view_text_start,
	.end = view_hist_end,
};
