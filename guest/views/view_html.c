/* SPDX-License-Identifier: MIT */
/*
 * view_html: the HTML report of a guest record file (see view_html.h). A gap's parts are spread over the time
 * bins it overlaps in proportion to the overlap, so a bin holds the noise time by class that fell inside it;
 * the timeline shows it as a percentage of the bin's time.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/classes.h"
#include "format/htmlplot.h"
#include "views/view_html.h"
#include "views/view_worst.h"

struct view_html {
	int ncpus;
	uint64_t t0_ns, tend_ns; /* the samples' span */
	uint64_t width_ns; /* bin width */
	size_t nbins; /* bins used (the latest gap's end) */
	double *bins; /* [ncpus][VIEW_HTML_BINS][VIEW_NSHOWN] ns */
	int have_span;
};

static double *bin_at(const struct view_html *h, int idx, size_t bin)
{
	return h->bins + ((size_t)idx * VIEW_HTML_BINS + bin) * VIEW_NSHOWN;
}

struct view_html *view_html_new(int ncpus)
{
	struct view_html *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->ncpus = ncpus > 0 ? ncpus : 0;
	h->width_ns = VIEW_HTML_BIN0_NS;
	h->bins = calloc((size_t)h->ncpus * VIEW_HTML_BINS * VIEW_NSHOWN + 1, sizeof(double));
	if (!h->bins) {
		free(h);
		return NULL;
	}
	return h;
}

void view_html_free(struct view_html *h)
{
	if (!h)
		return;
	free(h->bins);
	free(h);
}

void view_html_sample(struct view_html *h, const struct vn_sample *s)
{
	if (!h || s->end_ns < s->start_ns)
		return;
	if (!h->have_span || s->start_ns < h->t0_ns)
		h->t0_ns = s->start_ns;
	if (!h->have_span || s->end_ns > h->tend_ns)
		h->tend_ns = s->end_ns;
	h->have_span = 1;
}

/* Double the bin width: bins 2k and 2k+1 become bin k. */
static void widen(struct view_html *h)
{
	int i, k;
	size_t b;

	for (i = 0; i < h->ncpus; i++)
		for (b = 0; b < VIEW_HTML_BINS; b++) {
			double *dst = bin_at(h, i, b);

			for (k = 0; k < VIEW_NSHOWN; k++) {
				double v = 0;

				if (2 * b < VIEW_HTML_BINS)
					v += bin_at(h, i, 2 * b)[k];
				if (2 * b + 1 < VIEW_HTML_BINS)
					v += bin_at(h, i, 2 * b + 1)[k];
				dst[k] = v;
			}
		}
	h->width_ns *= 2;
	h->nbins = (h->nbins + 1) / 2;
}

void view_html_gap(struct view_html *h, int idx, uint64_t start_ns, uint64_t end_ns,
		   const uint64_t class_ns[VN_CLASS_MAX])
{
	uint64_t s, e, dur, b, last;
	int k;

	if (!h || idx < 0 || idx >= h->ncpus || end_ns <= start_ns)
		return;
	s = start_ns > h->t0_ns ? start_ns - h->t0_ns : 0;
	e = end_ns > h->t0_ns ? end_ns - h->t0_ns : 0;
	if (e <= s)
		return;
	dur = e - s;
	while ((e - 1) / h->width_ns >= VIEW_HTML_BINS && h->width_ns < UINT64_MAX / 4)
		widen(h);
	last = (e - 1) / h->width_ns;
	if (last >= VIEW_HTML_BINS)
		return;
	if (last + 1 > h->nbins)
		h->nbins = (size_t)last + 1;
	for (b = s / h->width_ns; b <= last; b++) {
		uint64_t lo = b * h->width_ns, hi = lo + h->width_ns;
		uint64_t ov = (e < hi ? e : hi) - (s > lo ? s : lo);
		double frac = (double)ov / (double)dur, *bin = bin_at(h, idx, (size_t)b);

		for (k = 0; k < VIEW_NSHOWN; k++)
			bin[k] += (double)class_ns[view_shown[k]] * frac;
	}
}

static void fact(struct htmlplot_fact *f, size_t *n, const char *label, const char *value)
{
	f[*n].label = label;
	f[(*n)++].value = value;
}

/* The run's facts: recording version, span, CPUs, settings, drops, whether the file was read whole. */
static void write_facts(FILE *f, const struct view *v)
{
	char ver[128], span[64], cpus[512], thr[32], per[64], helper[128], drops[96];
	struct htmlplot_fact facts[10];
	size_t n = 0, o;
	int i;

	snprintf(ver, sizeof(ver), "%s", v->version ? v->version : "(the file does not say)");
	htmlplot_ns(span, sizeof(span), (double)v->duration_ns);
	o = (size_t)snprintf(cpus, sizeof(cpus), "%d (", v->ncpus);
	for (i = 0; i < v->ncpus && o < sizeof(cpus) - 16; i++)
		o += (size_t)snprintf(cpus + o, sizeof(cpus) - o, "%s%d", i ? "," : "", v->cpus[i]);
	snprintf(cpus + o, sizeof(cpus) - o, "%s)", i < v->ncpus ? ",..." : "");
	htmlplot_ns(thr, sizeof(thr), (double)v->threshold_ns);
	htmlplot_ns(per, sizeof(per), (double)v->period_ns);
	snprintf(helper, sizeof(helper), "%s, steal %s, %d hypercall wrappers, dtl %s",
		 v->helper ? v->helper : "?", v->steal_source ? v->steal_source : "?", v->nhcalls,
		 v->dtl ? v->dtl : "absent");
	snprintf(drops, sizeof(drops), "%llu (kernel helper %llu, samplers %llu)",
		 (unsigned long long)(v->bpf_dropped + v->sampler_dropped),
		 (unsigned long long)v->bpf_dropped, (unsigned long long)v->sampler_dropped);
	fact(facts, &n, "recorded by vnoise", ver);
	fact(facts, &n, "span", span);
	fact(facts, &n, "CPUs", cpus);
	fact(facts, &n, "threshold", thr);
	fact(facts, &n, "period", per);
	fact(facts, &n, "kernel helper", helper);
	fact(facts, &n, "drops", drops);
	fact(facts, &n, "partial file", v->partial ? v->partial : "no: the file was read whole");
	htmlplot_section(f, "Run", NULL);
	htmlplot_facts(f, facts, n);
}

/* Noise per CPU as a percentage of its runtime (one bar each). */
static int write_cpu_bars(FILE *f, const struct view *v)
{
	struct htmlplot_bar *b = calloc((size_t)v->ncpus + 1, sizeof(*b));
	char(*names)[32] = calloc((size_t)v->ncpus + 1, sizeof(*names));
	int i;

	if (!b || !names) {
		free(b);
		free(names);
		return -ENOMEM;
	}
	for (i = 0; i < v->ncpus; i++) {
		struct view_row r;

		view_row(v, i, &r);
		snprintf(names[i], sizeof(names[i]), "CPU %d", v->cpus[i]);
		b[i].name = names[i];
		b[i].value = r.runtime_ns ? 100.0 * (double)r.noise_ns / (double)r.runtime_ns : 0;
	}
	htmlplot_bars(f, "noise per CPU (% of the sampler's runtime)", "%", b, (size_t)v->ncpus);
	free(b);
	free(names);
	return 0;
}

/* One CPU's timeline: each bin's noise by class as a percentage of the bin's time. */
static int write_timeline(FILE *f, const struct view_html *h, const struct view *v, int idx)
{
	struct htmlplot_series s[VIEW_NSHOWN];
	double *y = calloc(h->nbins * VIEW_NSHOWN + 1, sizeof(double));
	char title[96];
	size_t b;
	int k;

	if (!y)
		return -ENOMEM;
	for (b = 0; idx < h->ncpus && b < h->nbins; b++) {
		uint64_t lo = b * h->width_ns, span = h->tend_ns - h->t0_ns;
		double cover =
		    (double)(span > lo && span - lo < h->width_ns ? span - lo : h->width_ns);

		for (k = 0; k < VIEW_NSHOWN; k++)
			y[(size_t)k * h->nbins + b] = 100.0 * bin_at(h, idx, b)[k] / cover;
	}
	for (k = 0; k < VIEW_NSHOWN; k++) {
		s[k].name = classes_guest_label(view_shown[k]);
		s[k].color = classes_guest_color(view_shown[k]);
		s[k].y = y + (size_t)k * h->nbins;
	}
	snprintf(title, sizeof(title), "CPU %d: noise by class (%% of each %s bin)", v->cpus[idx],
		 htmlplot_ns((char[32]){ 0 }, 32, (double)h->width_ns));
	htmlplot_timeline(f, &(struct htmlplot_timeline){ .title = title,
							  .unit = "%",
							  .dt_s = (double)h->width_ns / 1e9,
							  .n = h->nbins,
							  .series = s,
							  .nseries = VIEW_NSHOWN,
							  .stacked = 1 });
	free(y);
	return 0;
}

/* The noise sample durations of every CPU in one histogram. */
static void write_hist(FILE *f, const struct view *v)
{
	struct htmlplot_hist hh = { { 0 } };
	struct hist_iter it;
	struct hist_bucket bk;
	int i;

	for (i = 0; v->hist && i < v->ncpus; i++) {
		hist_iter_init(&it, &v->hist[i].all);
		while (hist_iter_next(&it, &bk))
			htmlplot_hist_add(&hh, bk.lower_ns, bk.count);
	}
	htmlplot_section(f, "Noise sample durations", NULL);
	htmlplot_histogram(f, "noise samples by duration, all CPUs", &hh, "samples");
}

/* The top sources over all CPUs by net time (and with a DTL the hypervisor's). */
static int write_sources(FILE *f, const struct view *v)
{
	struct merge_source src[64];
	struct hypsplit_source hsrc[64];
	struct htmlplot_top t = { 0 }, ht = { 0 };
	struct htmlplot_bar bars[64];
	char notes[64][48], name[112];
	size_t n, k, top = v->top_n > 64 ? 64 : v->top_n > 0 ? (size_t)v->top_n : 0;
	int i, rc = 0;

	for (i = 0; !rc && i < v->ncpus; i++) {
		n = merge_top_sources(v->m, v->cpus[i], src, 64);
		for (k = 0; !rc && k < n; k++) {
			merge_source_name(&src[k], v->irq_name, v->irq_ctx, name, 96);
			if (view_is_self(v, &src[k]))
				strcat(name, " (vnoise)");
			rc = htmlplot_top_add(&t, name, classes_guest_label(src[k].cls),
					      classes_guest_color(src[k].cls),
					      (double)src[k].total_ns, src[k].count,
					      (double)src[k].max_ns);
		}
		n = view_has_dtl(v) ? hypsplit_top(v->hs, v->cpus[i], hsrc, 64) : 0;
		for (k = 0; !rc && k < n; k++) {
			snprintf(name, sizeof(name), "%s %s", classes_hyp_name(hsrc[k].hclass),
				 hsrc[k].name);
			rc = htmlplot_top_add(&ht, name, classes_hyp_label(hsrc[k].hclass),
					      classes_hyp_color(hsrc[k].hclass),
					      (double)hsrc[k].total_ns, hsrc[k].count,
					      (double)hsrc[k].max_ns);
		}
	}
	htmlplot_top_sort(&t);
	htmlplot_top_sort(&ht);
	htmlplot_section(f, "Top noise sources", "net time inside noise samples, all CPUs");
	n = htmlplot_top_bars(&t, bars, notes, top);
	htmlplot_bars(f, "top noise sources", "ns", bars, n);
	if (view_has_dtl(v)) {
		n = htmlplot_top_bars(&ht, bars, notes, top);
		htmlplot_bars(f, "hypervisor sources (from the dispatch trace log)", "ns", bars, n);
	}
	htmlplot_top_free(&t);
	htmlplot_top_free(&ht);
	return rc;
}

/* Counters only (kernel helper proc): the busiest interrupt sources of every CPU by count. */
static int write_proc_sources(FILE *f, const struct view *v)
{
	struct htmlplot_top t = { 0 };
	struct htmlplot_bar bars[64];
	char notes[64][48], name[64];
	size_t n, top = v->top_n > 64 ? 64 : v->top_n > 0 ? (size_t)v->top_n : 0;
	int i, j, rc = 0;

	for (i = 0; !rc && i < v->ncpus; i++)
		for (j = 0; !rc && v->proc[i].valid && j < v->proc[i].nsrc; j++) {
			snprintf(name, sizeof(name), "%s:%s",
				 classes_guest_name(v->proc[i].src[j].cls), v->proc[i].src[j].name);
			rc = htmlplot_top_add(&t, name, classes_guest_label(v->proc[i].src[j].cls),
					      classes_guest_color(v->proc[i].src[j].cls),
					      (double)v->proc[i].src[j].count, 0, 0);
		}
	htmlplot_top_sort(&t);
	htmlplot_section(f, "Busiest interrupt sources",
			 "counts only (kernel helper proc: no durations), all CPUs");
	n = htmlplot_top_bars(&t, bars, notes, top);
	for (size_t k = 0; k < n; k++)
		bars[k].note = NULL;
	htmlplot_bars(f, "interrupts counted", NULL, bars, n);
	htmlplot_top_free(&t);
	return rc;
}

/* Each CPU's worst gap as bars of its parts (coloured by class) and the tail of every CPU as facts. */
static int write_worst(FILE *f, const struct view *v)
{
	struct view_worst_gap *g = malloc(sizeof(*g));
	struct htmlplot_bar b[VIEW_WORST_PARTS];
	struct htmlplot_fact *facts = calloc((size_t)v->ncpus + 1, sizeof(*facts));
	char(*tails)[160] = calloc((size_t)v->ncpus + 1, sizeof(*tails));
	char(*labels)[24] = calloc((size_t)v->ncpus + 1, sizeof(*labels));
	char notes[VIEW_WORST_PARTS][16], title[160], at[32], d[32];
	size_t k, off;
	int i, t;

	if (!g || !facts || !tails || !labels) {
		free(g);
		free(facts);
		free(tails);
		free(labels);
		return -ENOMEM;
	}
	htmlplot_section(
	    f, "Worst gap",
	    "each CPU's longest noise sample, broken into its net parts (they add up to it)");
	for (i = 0; i < v->ncpus; i++) {
		if (!view_worst(v, i, g))
			continue;
		for (k = 0; k < g->nparts; k++) {
			snprintf(notes[k], sizeof(notes[k]), "(%.1f%%)",
				 100.0 * (double)g->parts[k].ns / (double)g->duration_ns);
			b[k] = (struct htmlplot_bar){
				.name = g->parts[k].source,
				.value = (double)g->parts[k].ns,
				.note = notes[k],
				.group = g->parts[k].hyp ? classes_hyp_label(g->parts[k].cls)
							 : classes_guest_label(g->parts[k].cls),
				.color = g->parts[k].hyp ? classes_hyp_color(g->parts[k].cls)
							 : classes_guest_color(g->parts[k].cls),
			};
		}
		snprintf(title, sizeof(title), "CPU %d: %s at %s%s", g->cpu,
			 htmlplot_ns(d, sizeof(d), (double)g->duration_ns),
			 view_since_start(at, sizeof(at), v, g->start_ns),
			 g->split ? ", split with the host's log" : "");
		htmlplot_bars(f, title, "ns", b, g->nparts);
	}
	for (i = 0; i < v->ncpus; i++) {
		const struct hist *h = &v->hist[i].all;

		snprintf(labels[i], sizeof(labels[i]), "CPU %d", v->cpus[i]);
		off = (size_t)snprintf(tails[i], sizeof(tails[i]), "%llu samples",
				       (unsigned long long)hist_count(h));
		for (t = 0; t < VIEW_TAIL_N && off < sizeof(tails[i]); t++)
			off += (size_t)snprintf(
			    tails[i] + off, sizeof(tails[i]) - off, ", %s %s", view_tail_key[t],
			    htmlplot_ns(d, sizeof(d),
					(double)hist_percentile(h, view_tail_pct[t])));
		if (off < sizeof(tails[i]))
			snprintf(tails[i] + off, sizeof(tails[i]) - off, ", max %s",
				 htmlplot_ns(d, sizeof(d), (double)hist_max(h)));
		facts[i] = (struct htmlplot_fact){ labels[i], tails[i] };
	}
	htmlplot_section(f, "Tail", "percentiles of the noise sample durations, per CPU");
	htmlplot_facts(f, facts, (size_t)v->ncpus);
	free(g);
	free(facts);
	free(tails);
	free(labels);
	return 0;
}

static int write_page(FILE *f, const struct view_html *h, const struct view *v)
{
	int i, rc;

	htmlplot_head(f, "vnoise guest report");
	write_facts(f, v);
	htmlplot_section(f, "Noise over time",
			 "per CPU, stacked by class; hover a bar for its value");
	rc = write_cpu_bars(f, v);
	for (i = 0; !rc && i < v->ncpus; i++)
		rc = write_timeline(f, h, v, i);
	if (rc)
		return rc;
	write_hist(f, v);
	rc = v->proc ? write_proc_sources(f, v) : write_sources(f, v);
	if (!rc && !v->proc && v->hist)
		rc = write_worst(f, v);
	htmlplot_tail(f);
	return rc;
}

int view_html_write(const struct view_html *h, const struct view *v, const char *path)
{
	char tmp[PATH_MAX];
	FILE *f = htmlplot_open(path, tmp, sizeof(tmp));
	int rc;

	if (!f)
		return -errno;
	rc = write_page(f, h, v);
	if (rc) {
		htmlplot_abandon(f, tmp);
		return rc;
	}
	return htmlplot_commit(f, tmp, path);
}
