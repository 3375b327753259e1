/* SPDX-License-Identifier: MIT */
/*
 * view_top: top's stream of tables (top --batch, or top whose stdout or stdin is not a terminal; the
 * interactive screen is view_screen.c), refreshed every period (the screen is cleared first when stdout is a
 * terminal). Each refresh shows the last period only: the totals since the previous refresh (kept per CPU in
 * v->period), its largest noise sample and its sources. At the end, the text summary of the whole run.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "views/view_text.h"
#include "views/view_top.h"

#define SINCE(b, a) ((b) > (a) ? (b) - (a) : 0)

/* b - a, field by field (a row of totals at two refreshes). */
static void row_since(struct view_row *d, const struct view_row *b, const struct view_row *a,
		      uint64_t max_ns)
{
	int c;

	memset(d, 0, sizeof(*d));
	d->runtime_ns = b->runtime_ns - a->runtime_ns;
	d->noise_ns = b->noise_ns - a->noise_ns;
	d->samples = b->samples - a->samples;
	d->max_single_ns = max_ns;
	/* The hypervisor split lags the merge (it waits for the DTL's horizon): in a period it may take more
	 * out of steal/unexplained than the period added (samples of an earlier period it split now). The
	 * times are plain differences (unsigned, wrapping below 0: the views read them signed), so the
	 * period's parts still add up to its noise exactly; counts below 0 show 0. */
	for (c = 0; c < VN_CLASS_MAX; c++) {
		d->class_ns[c] = b->class_ns[c] - a->class_ns[c];
		d->class_count[c] = SINCE(b->class_count[c], a->class_count[c]);
	}
	for (c = 0; c < VN_HCLASS_PARTS; c++) {
		d->hyp_ns[c] = b->hyp_ns[c] - a->hyp_ns[c];
		d->hyp_count[c] = SINCE(b->hyp_count[c], a->hyp_count[c]);
	}
	d->hyp_in_guest_ns = SINCE(b->hyp_in_guest_ns, a->hyp_in_guest_ns);
	d->available_pct =
	    d->runtime_ns ? 100.0 - 100.0 * (double)d->noise_ns / (double)d->runtime_ns : 0;
	if (d->available_pct < 0)
		d->available_pct = 0;
}

static int src_by_total(const void *a, const void *b)
{
	const struct merge_source *x = a, *y = b;

	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

size_t view_top_period_sources(const struct view *v, int i, struct merge_source **out)
{
	const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[i]);
	struct view_period *p = &v->period[i];
	struct merge_source *d = NULL;
	size_t k, n = 0, nsrc = mc ? mc->nsrc : 0;

	if (nsrc)
		d = malloc(nsrc * sizeof(*d));
	for (k = 0; d && k < nsrc; k++) {
		d[n] = mc->src[k];
		if (k < p->nsrc) {
			d[n].count -= p->src[k].count;
			d[n].total_ns -= p->src[k].total_ns;
		}
		n += d[n].total_ns > 0;
	}
	if (n)
		qsort(d, n, sizeof(*d), src_by_total);
	*out = d;
	if (nsrc > p->cap) {
		struct merge_source *ns = realloc(p->src, nsrc * sizeof(*ns));

		if (!ns)
			return n; /* out of memory: the next period counts this one's new sources too */
		p->src = ns;
		p->cap = nsrc;
	}
	if (nsrc)
		memcpy(p->src, mc->src, nsrc * sizeof(*p->src));
	p->nsrc = nsrc;
	return n;
}

/* The stream's source table of CPU index i in the last period. */
static void period_sources(FILE *f, const struct view *v, int i, uint64_t runtime_ns)
{
	struct merge_source *d = NULL;
	size_t n = view_top_period_sources(v, i, &d);

	fprintf(f, "CPU %d top noise sources in the period (net time in gaps; MAX: the run's):\n",
		v->cpus[i]);
	view_source_table(f, v, d, n < (size_t)v->top_n ? n : (size_t)v->top_n, runtime_ns,
			  VIEW_MAX_RUN);
	free(d);
}

void view_top_period(const struct view *v, struct view_row *rows)
{
	struct view_row cur;
	int i;

	for (i = 0; i < v->ncpus; i++) {
		view_row(v, i, &cur);
		row_since(&rows[i], &cur, &v->period[i].row, v->period[i].max_ns);
		v->period[i].row = cur;
		v->period[i].max_ns = 0;
		v->period[i].t_ns = v->duration_ns;
	}
	merge_period_worst_reset(v->m); /* the next period's worst gap */
}

static void view_top_tick(FILE *f, const struct view *v)
{
	struct view_row *rows = calloc((size_t)v->ncpus + 1, sizeof(*rows));
	uint64_t since = v->period ? v->period[0].t_ns : 0;
	int i;

	if (!rows || !v->period) {
		free(rows);
		return;
	}
	if (isatty(fileno(f)))
		fputs("\033[H\033[2J", f);
	fprintf(f, "vnoise top: the last period, %.1f s (%.1f s since the start; Ctrl-C stops)\n",
		(v->duration_ns - since) / 1e9, v->duration_ns / 1e9);
	fprintf(f, "kernel helper %s, threshold %.1f us%s%s\n", v->helper, v->threshold_ns / 1e3,
		view_has_dtl(v) ? ", host dispatch trace log " : "", view_has_dtl(v) ? v->dtl : "");
	view_top_period(v, rows);
	view_table_rows(f, v, rows);
	for (i = 0; i < v->ncpus && v->top_n > 0; i++)
		period_sources(f, v, i, rows[i].runtime_ns);
	view_hyp_sources(f, v); /* the run's so far */
	view_overhead_line(f, v);
	fflush(f);
	free(rows);
}

const struct view_ops view_top_ops = {
	.tick = view_top_tick,
	.end = view_text_end,
};
