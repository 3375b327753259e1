/* SPDX-License-Identifier: MIT */
/*
 * view_worst: the worst gap explained and the tail (see view_worst.h for the contract).
 */
#include <stdlib.h>
#include <string.h>
#include "attrib/classes.h"
#include "attrib/gapsplit.h"
#include "views/view_worst.h"

const double view_tail_pct[VIEW_TAIL_N] = { 50, 90, 99, 99.9, 99.99 };
const char *const view_tail_key[VIEW_TAIL_N + 1] = { "p50", "p90", "p99", "p999", "p9999", "max" };

static void add_part(struct view_worst_gap *g, int hyp, int cls, const char *source, uint64_t ns)
{
	size_t i;

	if (!ns)
		return;
	for (i = 0; i < g->nparts;
	     i++) /* two causes of one name (the log's names fold) are one part */
		if (g->parts[i].hyp == hyp && g->parts[i].cls == cls &&
		    !strcmp(g->parts[i].source, source)) {
			g->parts[i].ns += ns;
			return;
		}
	if (g->nparts == VIEW_WORST_PARTS) { /* cannot happen: sized for every part */
		g->parts[g->nparts - 1].ns += ns;
		return;
	}
	g->parts[g->nparts].hyp = hyp;
	g->parts[g->nparts].cls = cls;
	snprintf(g->parts[g->nparts].source, VIEW_WORST_NAME, "%s", source);
	g->parts[g->nparts++].ns = ns;
}

static int part_cmp(const void *a, const void *b)
{
	const struct view_worst_part *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return strcmp(x->source, y->source);
}

static void source_name(const struct view *v, const struct merge_source *s, char *buf, size_t len)
{
	merge_source_name(s, v->irq_name, v->irq_ctx, buf, len - 10);
	if (s->cls == VN_CLASS_THREAD && view_is_self(v, s))
		strcat(buf, " (vnoise)");
}

/* g from the merge engine's worst gap w of CPU index idx (with the host's split when the view kept it). */
static int worst_fill(const struct view *v, int idx, const struct merge_worst *w,
		      struct view_worst_gap *g)
{
	const struct view_worst_split *ws = v->hist ? &v->hist[idx].worst : NULL;
	uint64_t v_ns[MERGE_WORST_PARTS], sum = 0, dur;
	char name[VIEW_WORST_NAME];
	uint32_t i, k, n;
	int cl;

	memset(g, 0, sizeof(*g));
	g->cpu = v->cpus[idx];
	if (!w || w->end_ns <= w->start_ns)
		return 0;
	dur = w->end_ns - w->start_ns;
	g->start_ns = w->start_ns;
	g->duration_ns = dur;
	g->split = view_has_dtl(v) && ws && ws->start_ns == w->start_ns && ws->end_ns == w->end_ns;
	for (cl = 0; cl < VN_CLASS_MAX; cl++) {
		/* the class's sources, scaled to what stays in it after the split (all of it without one) */
		for (i = 0, n = 0; i < w->nparts; i++)
			if (w->parts[i].cls == cl)
				v_ns[n++] = w->parts[i].total_ns;
		if (g->split)
			gapsplit_scale(v_ns, n, w->class_ns[cl], ws->res.guest_ns[cl]);
		for (i = 0, k = 0; i < w->nparts; i++)
			if (w->parts[i].cls == cl) {
				source_name(v, &w->parts[i], name, sizeof(name));
				add_part(g, 0, cl, name, v_ns[k++]);
			}
	}
	if (g->split) {
		for (i = 0; i < ws->nsrc; i++)
			add_part(g, 1, ws->src[i].hclass, ws->src[i].name, ws->src[i].ns);
		add_part(g, 1, VN_HCLASS_HW, classes_hyp_name(VN_HCLASS_HW),
			 ws->res.hyp_ns[VN_HCLASS_HW]);
	}
	for (i = 0; i < g->nparts; i++)
		sum += g->parts[i].ns;
	/* the parts add up by construction; a rounding rest (never seen) goes to the unexplained part */
	if (sum < dur)
		add_part(g, g->split, g->split ? VN_HCLASS_HW : VN_CLASS_UNEXPLAINED,
			 g->split ? classes_hyp_name(VN_HCLASS_HW)
				  : classes_guest_name(VN_CLASS_UNEXPLAINED),
			 dur - sum);
	qsort(g->parts, g->nparts, sizeof(g->parts[0]), part_cmp);
	for (i = 0; i < w->nbefore; i++) {
		struct merge_source s = { .cls = w->before[i].cls, .id = w->before[i].id };

		memcpy(s.comm, w->before[i].comm, VN_COMM_LEN);
		source_name(v, &s, g->before[i].source, VIEW_WORST_NAME);
		g->before[i].cls = w->before[i].cls;
		g->before[i].start_ns = w->before[i].start_ns;
		g->before[i].ns = w->before[i].net_ns;
	}
	g->nbefore = w->nbefore;
	return 1;
}

int view_worst(const struct view *v, int idx, struct view_worst_gap *g)
{
	const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[idx]);

	return worst_fill(v, idx, mc ? &mc->worst : NULL, g);
}

int view_worst_period(const struct view *v, int idx, struct view_worst_gap *g)
{
	const struct merge_cpu *mc = merge_cpu(v->m, v->cpus[idx]);

	return worst_fill(v, idx, mc ? &mc->pworst : NULL, g);
}

static const char *part_class(const struct view_worst_part *p)
{
	return p->hyp ? classes_hyp_name(p->cls) : classes_guest_name(p->cls);
}

/* ---- text ---- */

static void worst_text(FILE *f, const struct view *v, const struct view_worst_gap *g)
{
	char at[32];
	size_t i;

	fprintf(f, "worst gap on CPU %d: %.1f us at %s, %s\n", g->cpu, g->duration_ns / 1e3,
		view_since_start(at, sizeof(at), v, g->start_ns),
		g->split	  ? "split with the host's log"
		: view_has_dtl(v) ? "not split (the host's log did not cover it)"
				  : "guest view (no host log)");
	for (i = 0; i < g->nparts; i++) {
		const struct view_worst_part *p = &g->parts[i];
		const char *cls = part_class(p), *src = p->source, *colon = strchr(src, ':');

		if (!strcmp(src, cls)) /* steal, unexplained, hw: the class is the whole name */
			src = "";
		else if (!p->hyp && colon) /* "thread:hog[12]" under the class thread: "hog[12]" */
			src = colon + 1;
		fprintf(f, "  %10.1f us %5.1f%%  %s%s%.52s\n", p->ns / 1e3,
			100.0 * (double)p->ns / (double)g->duration_ns, cls, *src ? " " : "", src);
	}
	for (i = 0; i < g->nbefore; i++)
		fprintf(f, "  %s %s %s %.1f us\n", i ? "      " : "before",
			view_since_start(at, sizeof(at), v, g->before[i].start_ns),
			g->before[i].source, g->before[i].ns / 1e3);
}

static void tail_text(FILE *f, const struct view *v)
{
	int i, k;

	fputs("tail of the noise samples (us)\n", f);
	fprintf(f, "%-5s %9s", "CPU", "samples");
	for (k = 0; k < VIEW_TAIL_N; k++)
		fprintf(f, " %9s", view_tail_key[k]);
	fprintf(f, " %9s\n", "max");
	for (i = 0; i < v->ncpus; i++) {
		const struct hist *h = &v->hist[i].all;

		fprintf(f, "%-5d %9llu", v->cpus[i], (unsigned long long)hist_count(h));
		for (k = 0; k < VIEW_TAIL_N; k++)
			fprintf(f, " %9.1f", hist_percentile(h, view_tail_pct[k]) / 1e3);
		fprintf(f, " %9.1f\n", hist_max(h) / 1e3);
	}
}

void view_worst_text(FILE *f, const struct view *v)
{
	struct view_worst_gap g;
	int i;

	if (!v->hist || v->proc)
		return;
	for (i = 0; i < v->ncpus; i++)
		if (view_worst(v, i, &g))
			worst_text(f, v, &g);
	tail_text(f, v);
}

/* ---- JSON ---- */

static void tail_json(struct json_writer *w, const char *key, const struct hist *h)
{
	int k;

	json_key(w, key);
	json_obj_begin(w);
	for (k = 0; k < VIEW_TAIL_N; k++)
		json_kv_u64(w, view_tail_key[k], hist_percentile(h, view_tail_pct[k]));
	json_kv_u64(w, "max", hist_max(h));
	json_obj_end(w);
}

void view_worst_json(struct json_writer *w, const struct view *v, int idx)
{
	struct view_worst_gap g;
	size_t i;
	int k;

	if (!v->hist || v->proc)
		return;
	json_key(w, "worst");
	if (!view_worst(v, idx, &g)) {
		json_null(w);
	} else {
		json_obj_begin(w);
		json_kv_u64(w, "start_ns", g.start_ns);
		json_kv_u64(w, "since_start_ns", g.start_ns > v->t0_ns ? g.start_ns - v->t0_ns : 0);
		json_kv_u64(w, "duration_ns", g.duration_ns);
		json_kv_bool(w, "split", g.split);
		json_key(w, "parts");
		json_arr_begin(w);
		for (i = 0; i < g.nparts; i++) {
			json_obj_begin(w);
			json_kv_str(w, "class", part_class(&g.parts[i]));
			json_kv_str(w, "source", g.parts[i].source);
			json_kv_u64(w, "ns", g.parts[i].ns);
			json_kv_double(w, "share_pct",
				       100.0 * (double)g.parts[i].ns / (double)g.duration_ns);
			json_obj_end(w);
		}
		json_arr_end(w);
		json_key(w, "before");
		json_arr_begin(w);
		for (i = 0; i < g.nbefore; i++) {
			json_obj_begin(w);
			json_kv_str(w, "class", classes_guest_name(g.before[i].cls));
			json_kv_str(w, "source", g.before[i].source);
			json_kv_u64(w, "start_ns", g.before[i].start_ns);
			json_kv_u64(w, "ns", g.before[i].ns);
			json_obj_end(w);
		}
		json_arr_end(w);
		json_obj_end(w);
	}
	tail_json(w, "percentiles_ns", &v->hist[idx].all);
	json_key(w, "percentiles_by_class_ns");
	json_obj_begin(w);
	for (k = 0; k < VN_CLASS_MAX; k++)
		if (hist_count(&v->hist[idx].cls[k]))
			tail_json(w, classes_guest_name(k), &v->hist[idx].cls[k]);
	for (k = 0; view_has_dtl(v) && k < VN_HCLASS_PARTS; k++)
		if (hist_count(&v->hist[idx].hyp[k]))
			tail_json(w, classes_hyp_name(k), &v->hist[idx].hyp[k]);
	json_obj_end(w);
}
