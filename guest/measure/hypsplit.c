/* SPDX-License-Identifier: MIT */
/*
 * hypsplit: the hypervisor split of the gaps' steal and unexplained time (see hypsplit.h). Per gap: the DTL
 * spans overlapping it, summed by cause, then capped to what steal + unexplained hold (scaled down, the
 * largest taking the rounding rest); the aggregates' VM exit and host IRQ time capped to what is still
 * unexplained; the rest of unexplained is hw. All sums are exact integers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/hypsplit.h"
#include "attrib/classes.h"
#include "attrib/gapsplit.h"

#define GAP_PARTS \
	16 /* distinct causes kept per gap; more are folded into the last of their class */
#define MAX_SOURCES 4096 /* per CPU; more are folded into the last one */
#define MIN(a, b) ((a) < (b) ? (a) : (b))

struct pending {
	uint64_t start_ns, end_ns;
	uint64_t class_ns[VN_CLASS_MAX];
	uint32_t cpu;
};

struct hypsplit {
	struct dtl *d;
	uint64_t wait_ns;
	struct hypsplit_cpu *cpu[HYPSPLIT_MAX_CPUS];
	struct pending *q;
	size_t nq, qcap;
	int replay; /* split only the recorded gaps */
	uint64_t
	    rh[HYPSPLIT_MAX_CPUS]; /* replay: per CPU, the store holds every span ending before */
	struct vn_rec_dtl_gap *rec;
	size_t nrec, reccap;
	int rec_sorted;
	hypsplit_span_fn span_fn;
	hypsplit_rgap_fn gap_fn;
	void *rctx;
	hypsplit_part_fn part_fn;
	void *pctx;
	struct hypsplit_gsrc gsrc[HYPSPLIT_GAP_SOURCES]; /* the gap being split: its sources */
	size_t ngsrc;
};

/* One cause's overlap with the gap being split. */
struct part {
	uint8_t hclass, cls;
	uint32_t cause;
	uint64_t ns;
};

struct gapwork {
	struct hypsplit *hs;
	struct hypsplit_cpu *c;
	uint32_t cpu;
	struct part p[GAP_PARTS];
	size_t n;
	uint64_t tot[2]; /* PREEMPT, WAIT: sums of the parts */
	uint64_t halted_ns; /* of the host time, what the host's log had as the vCPU halted */
};

struct hypsplit *hypsplit_new(struct dtl *d, uint64_t wait_ns)
{
	struct hypsplit *hs = calloc(1, sizeof(*hs));

	if (!hs)
		return NULL;
	hs->d = d;
	hs->wait_ns = wait_ns ? wait_ns : HYPSPLIT_WAIT_NS;
	return hs;
}

void hypsplit_free(struct hypsplit *hs)
{
	int i;

	if (!hs)
		return;
	for (i = 0; i < HYPSPLIT_MAX_CPUS; i++) {
		if (hs->cpu[i])
			free(hs->cpu[i]->src);
		free(hs->cpu[i]);
	}
	free(hs->q);
	free(hs->rec);
	free(hs);
}

void hypsplit_set_recorder(struct hypsplit *hs, hypsplit_span_fn span, hypsplit_rgap_fn gap,
			   void *ctx)
{
	hs->span_fn = span;
	hs->gap_fn = gap;
	hs->rctx = ctx;
}

void hypsplit_set_part_fn(struct hypsplit *hs, hypsplit_part_fn fn, void *ctx)
{
	hs->part_fn = fn;
	hs->pctx = ctx;
}

static int grow(void **arr, size_t *cap, size_t want, size_t size)
{
	size_t nc = *cap ? *cap : 64;
	void *na;

	if (want <= *cap)
		return 0;
	while (nc < want)
		nc *= 2;
	na = realloc(*arr, nc * size);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = nc;
	return 0;
}

int hypsplit_add_recorded(struct hypsplit *hs, const struct vn_rec_dtl_gap *g)
{
	if (g->cpu >= HYPSPLIT_MAX_CPUS || g->end_ns <= g->start_ns)
		return -EINVAL;
	if (grow((void **)&hs->rec, &hs->reccap, hs->nrec + 1, sizeof(*hs->rec)))
		return -ENOMEM;
	hs->rec[hs->nrec++] = *g;
	hs->replay = 1;
	hs->rec_sorted = 0;
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct vn_rec_dtl_gap *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static const struct vn_rec_dtl_gap *rec_find(struct hypsplit *hs, const struct pending *p)
{
	struct vn_rec_dtl_gap key = { .start_ns = p->start_ns,
				      .end_ns = p->end_ns,
				      .cpu = (uint16_t)p->cpu };

	if (!hs->rec_sorted && hs->nrec) {
		qsort(hs->rec, hs->nrec, sizeof(*hs->rec), rec_cmp);
		hs->rec_sorted = 1;
	}
	return hs->nrec ? bsearch(&key, hs->rec, hs->nrec, sizeof(*hs->rec), rec_cmp) : NULL;
}

static struct hypsplit_cpu *cpu_get(struct hypsplit *hs, uint32_t cpu)
{
	if (cpu >= HYPSPLIT_MAX_CPUS)
		return NULL;
	if (!hs->cpu[cpu])
		hs->cpu[cpu] = calloc(1, sizeof(*hs->cpu[cpu]));
	return hs->cpu[cpu];
}

const struct hypsplit_cpu *hypsplit_cpu(const struct hypsplit *hs, int cpu)
{
	return hs && cpu >= 0 && cpu < HYPSPLIT_MAX_CPUS ? hs->cpu[cpu] : NULL;
}

int hypsplit_gap(struct hypsplit *hs, int cpu, uint64_t start_ns, uint64_t end_ns,
		 const uint64_t class_ns[VN_CLASS_MAX])
{
	struct pending *p;

	if (!hs || cpu < 0 || cpu >= HYPSPLIT_MAX_CPUS || end_ns <= start_ns)
		return 0;
	if (!hs->replay && (!hs->d || (dtl_state(hs->d) == DTL_ABSENT && !dtl_horizon(hs->d))))
		return 0;
	if (grow((void **)&hs->q, &hs->qcap, hs->nq + 1, sizeof(*hs->q)))
		return -ENOMEM;
	p = &hs->q[hs->nq];
	p->cpu = (uint32_t)cpu;
	p->start_ns = start_ns;
	p->end_ns = end_ns;
	memcpy(p->class_ns, class_ns, sizeof(p->class_ns));
	if (!hs->replay || rec_find(hs, p)) /* a replay queues only the gaps the recording split */
		hs->nq++;
	return 0;
}

/* The source (hclass, name) of c, created if new; past MAX_SOURCES the last one takes it. */
static struct hypsplit_source *src_get(struct hypsplit_cpu *c, uint8_t hclass, const char *name)
{
	struct hypsplit_source *s;
	uint32_t i;

	for (i = 0; i < c->nsrc; i++)
		if (c->src[i].hclass == hclass && !strcmp(c->src[i].name, name))
			return &c->src[i];
	if (c->nsrc >= MAX_SOURCES)
		return &c->src[c->nsrc - 1];
	if (c->nsrc == c->cap) {
		uint32_t nc = c->cap ? 2 * c->cap : 16;
		struct hypsplit_source *ns = realloc(c->src, nc * sizeof(*ns));

		if (!ns)
			return NULL;
		c->src = ns;
		c->cap = nc;
	}
	s = &c->src[c->nsrc++];
	memset(s, 0, sizeof(*s));
	s->hclass = hclass;
	snprintf(s->name, sizeof(s->name), "%s", name);
	return s;
}

static int src_add(struct hypsplit *hs, struct hypsplit_cpu *c, uint8_t hclass, const char *name,
		   uint64_t ns, struct hypsplit_source **out)
{
	struct hypsplit_source *s;

	if (!ns)
		return 0;
	if (hs->ngsrc < HYPSPLIT_GAP_SOURCES) {
		struct hypsplit_gsrc *g = &hs->gsrc[hs->ngsrc++];

		g->hclass = hclass;
		g->ns = ns;
		snprintf(g->name, sizeof(g->name), "%s", name);
	} else {
		hs->gsrc[HYPSPLIT_GAP_SOURCES - 1].ns +=
		    ns; /* cannot happen: sized for every source */
	}
	s = src_get(c, hclass, name);
	if (!s)
		return -ENOMEM;
	s->count++;
	s->total_ns += ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
	if (out)
		*out = s;
	return 0;
}

/* dtl_overlap callback: sum the span's overlap by cause; pass a span not yet recorded to the recorder. */
static void on_span(void *ctx, const struct dtl_span *s, uint64_t ov_start, uint64_t ov_end)
{
	struct gapwork *w = ctx;
	uint8_t hc =
	    s->hclass == VN_HCLASS_HOST_WAIT ? VN_HCLASS_HOST_WAIT : VN_HCLASS_HOST_PREEMPT;
	size_t i;

	if (ov_end <= ov_start)
		return;
	/* A gap is time the guest's sampler was busy on the vCPU: it was not idle there, so out time the host
	 * took for a halt (a block whose wakeup it did not see) is the hypervisor's, as the host's matcher has it. */
	if (s->flags & VN_DTL_F_HALTED)
		w->halted_ns += ov_end - ov_start;
	if (w->hs->span_fn && s->start_ns >= w->c->rec_end_ns) {
		char name[HYPSPLIT_NAME_LEN];

		w->hs->span_fn(w->hs->rctx, w->cpu, s,
			       dtl_cause_name(w->hs->d, s->cause, s->cls, name, sizeof(name)));
		w->c->rec_end_ns = s->end_ns;
	}
	for (i = 0; i < w->n; i++)
		if (w->p[i].hclass == hc && w->p[i].cause == s->cause && w->p[i].cls == s->cls)
			break;
	if (i == w->n && w->n < GAP_PARTS) {
		w->p[w->n++] = (struct part){ .hclass = hc, .cls = s->cls, .cause = s->cause };
	} else if (i == w->n) { /* no room: the last part of its class, else the last part */
		for (i = GAP_PARTS; i > 0 && w->p[i - 1].hclass != hc; i--)
			;
		i = i ? i - 1 : GAP_PARTS - 1;
	}
	w->p[i].ns += ov_end - ov_start;
}

/* The sources of host_preempt and host_wait: each cause's overlap scaled to what the split gave its class. */
static int span_sources(struct gapwork *w, const struct gapsplit_res *res)
{
	uint64_t v[GAP_PARTS];
	size_t i, hc, k, idx[GAP_PARTS];
	char name[HYPSPLIT_NAME_LEN];

	for (hc = 0; hc < 2; hc++) {
		for (i = 0, k = 0; i < w->n; i++)
			if (w->p[i].hclass == hc) {
				idx[k] = i;
				v[k++] = w->p[i].ns;
			}
		gapsplit_scale(v, k, w->tot[hc], res->hyp_ns[hc]);
		for (i = 0; i < k; i++) {
			const struct part *p = &w->p[idx[i]];
			struct hypsplit_source *src = NULL;

			if (src_add(w->hs, w->c, (uint8_t)hc,
				    dtl_cause_name(w->hs->d, p->cause, p->cls, name, sizeof(name)),
				    v[i], &src))
				return -ENOMEM;
			if (src)
				src->cls = p->cls;
		}
	}
	return 0;
}

/* The sources of vmexit (by reason, scaled to what the split gave it) and host_irq. */
static int agg_sources(struct hypsplit *hs, struct hypsplit_cpu *c, const struct vn_rec_dtl_gap *a,
		       const struct gapsplit_res *res)
{
	uint64_t vm = res->hyp_ns[VN_HCLASS_VMEXIT], v[VN_DTL_AGG_TOP + 1];
	uint64_t sum = 0;
	size_t k, n = a ? (a->nexit < VN_DTL_AGG_TOP ? a->nexit : VN_DTL_AGG_TOP) : 0;
	char name[32];

	if (vm && a) {
		for (k = 0; k < n; k++) {
			v[k] = a->exit[k].total_ns;
			sum += v[k];
		}
		v[n] = a->exit_ns > sum ? a->exit_ns - sum : 0;
		gapsplit_scale(v, n + 1, sum + v[n], vm);
		for (k = 0; k <= n; k++) {
			struct hypsplit_source *s = NULL;

			if (k < n)
				snprintf(name, sizeof(name), "exit:%u", a->exit[k].reason);
			else
				snprintf(name, sizeof(name), "exit:other");
			if (src_add(hs, c, VN_HCLASS_VMEXIT, name, v[k], &s))
				return -ENOMEM;
			if (s) {
				s->isa = a->isa;
				s->reason = k < n ? a->exit[k].reason : HYPSPLIT_REASON_OTHER;
			}
		}
	}
	if (src_add(hs, c, VN_HCLASS_HOST_IRQ, classes_hyp_name(VN_HCLASS_HOST_IRQ),
		    res->hyp_ns[VN_HCLASS_HOST_IRQ], NULL))
		return -ENOMEM;
	return 0;
}

int hypsplit_split(struct hypsplit *hs, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		   const uint64_t class_ns[VN_CLASS_MAX], const struct vn_rec_dtl_gap *agg)
{
	struct gapwork w = { .hs = hs, .cpu = cpu };
	struct gapsplit_host h;
	struct gapsplit_res res;
	uint64_t moved = 0;
	size_t i;
	int k;

	w.c = cpu_get(hs, cpu);
	if (!w.c)
		return cpu >= HYPSPLIT_MAX_CPUS ? 0 : -ENOMEM;
	if (hs->d)
		dtl_overlap(hs->d, cpu, start_ns, end_ns, on_span, &w);
	for (i = 0; i < w.n; i++)
		w.tot[w.p[i].hclass] += w.p[i].ns;
	memset(&h, 0, sizeof(h));
	h.ns[VN_HCLASS_HOST_PREEMPT] = w.tot[0];
	h.ns[VN_HCLASS_HOST_WAIT] = w.tot[1];
	h.ns[VN_HCLASS_VMEXIT] = agg ? agg->exit_ns : 0;
	h.ns[VN_HCLASS_HOST_IRQ] = agg ? agg->irq_ns : 0;
	gapsplit_apportion(end_ns - start_ns, class_ns, 0, &h, &res);
	hs->ngsrc = 0;
	if (span_sources(&w, &res) || agg_sources(hs, w.c, agg, &res))
		return -ENOMEM;
	for (k = 0; k < VN_HCLASS_MAX; k++) {
		w.c->hyp_ns[k] += res.hyp_ns[k];
		w.c->hyp_count[k] += res.hyp_ns[k] > 0;
	}
	w.c->hw_ns += res.hyp_ns[VN_HCLASS_HW];
	w.c->hw_count += res.hyp_ns[VN_HCLASS_HW] > 0;
	for (k = 0; k < VN_CLASS_MAX; k++) {
		w.c->from_class_ns[k] += res.from_guest_ns[k];
		if (k != VN_CLASS_STEAL && k != VN_CLASS_UNEXPLAINED)
			moved += res.from_guest_ns[k];
	}
	w.c->from_steal_ns += res.from_guest_ns[VN_CLASS_STEAL];
	w.c->from_unexpl_ns += res.from_guest_ns[VN_CLASS_UNEXPLAINED];
	w.c->unexpl_gaps += class_ns[VN_CLASS_UNEXPLAINED] > 0;
	w.c->in_guest_ns += moved;
	w.c->in_guest_count += moved > 0;
	w.c->halted_ns += w.halted_ns;
	w.c->split++;
	if (hs->part_fn)
		hs->part_fn(hs->pctx, cpu, start_ns, end_ns, &res);
	return 0;
}

/* The aggregates of the gap from the live DTL, as a record (zero without any). */
static void live_aggs(struct hypsplit *hs, const struct pending *p, struct vn_rec_dtl_gap *g)
{
	struct dtl_aggsum a;
	uint32_t k;

	memset(g, 0, sizeof(*g));
	g->start_ns = p->start_ns;
	g->end_ns = p->end_ns;
	g->cpu = (uint16_t)p->cpu;
	if (dtl_aggs(hs->d, p->cpu, p->start_ns, p->end_ns, &a))
		return;
	g->exit_ns = a.exit_ns;
	g->exit_count = a.exit_count;
	g->irq_ns = a.irq_ns;
	g->irq_count = a.irq_count;
	g->isa = (uint16_t)a.isa;
	g->nexit = (uint16_t)(a.nexit < VN_DTL_AGG_TOP ? a.nexit : VN_DTL_AGG_TOP);
	for (k = 0; k < g->nexit; k++)
		g->exit[k] = a.exit[k];
}

/* One queued gap: 1 when it is done (split, late, or not recorded in a replay), 0 to keep it, <0 error. */
static int settle(struct hypsplit *hs, const struct pending *p, uint64_t horizon, uint64_t now_ns)
{
	struct vn_rec_dtl_gap g;
	const struct vn_rec_dtl_gap *rg;

	if (hs->replay) { /* a gap the recording did not split stays as it is */
		if (now_ns != UINT64_MAX && p->end_ns > hs->rh[p->cpu])
			return 0;
		rg = rec_find(hs, p);
		if (rg && hypsplit_split(hs, p->cpu, p->start_ns, p->end_ns, p->class_ns, rg))
			return -ENOMEM;
		return 1;
	}
	if (gapsplit_uncovered(p->start_ns, dtl_covered_from(hs->d))) {
		/* the log is complete only from its epoch's first horizon: the gap stays as it is */
		if (cpu_get(hs, p->cpu))
			hs->cpu[p->cpu]->uncovered++;
		return 1;
	}
	if (gapsplit_ready(p->end_ns, HYPSPLIT_MARGIN_NS, horizon)) {
		live_aggs(hs, p, &g);
		if (hypsplit_split(hs, p->cpu, p->start_ns, p->end_ns, p->class_ns, &g))
			return -ENOMEM;
		if (hs->gap_fn)
			hs->gap_fn(hs->rctx, &g);
		return 1;
	}
	if (now_ns != UINT64_MAX && p->end_ns + hs->wait_ns > now_ns)
		return 0;
	if (cpu_get(hs, p->cpu))
		hs->cpu[p->cpu]->late++;
	return 1;
}

size_t hypsplit_process(struct hypsplit *hs, uint64_t now_ns)
{
	uint64_t horizon;
	size_t i, j;

	if (!hs)
		return 0;
	horizon = hs->d && !hs->replay ? dtl_horizon(hs->d) : 0;
	for (i = 0, j = 0; i < hs->nq; i++) {
		int rc = settle(hs, &hs->q[i], horizon, now_ns);

		if (rc <= 0)
			hs->q[j++] = hs->q[i]; /* kept (or out of memory: tried again next time) */
	}
	hs->nq = j;
	return j;
}

void hypsplit_replay_horizon(struct hypsplit *hs, uint32_t cpu, uint64_t end_ns)
{
	if (cpu < HYPSPLIT_MAX_CPUS && end_ns > hs->rh[cpu])
		hs->rh[cpu] = end_ns;
}

uint64_t hypsplit_pending_end(const struct hypsplit *hs)
{
	uint64_t end = 0;
	size_t i;

	for (i = 0; hs && i < hs->nq; i++)
		if (!end || hs->q[i].end_ns < end)
			end = hs->q[i].end_ns;
	return end;
}

static int src_cmp(const void *a, const void *b)
{
	const struct hypsplit_source *x = a, *y = b;

	return x->total_ns < y->total_ns   ? 1
	       : x->total_ns > y->total_ns ? -1
					   : strcmp(x->name, y->name);
}

size_t hypsplit_gap_sources(const struct hypsplit *hs, struct hypsplit_gsrc *out, size_t max)
{
	size_t n = hs->ngsrc < max ? hs->ngsrc : max;

	memcpy(out, hs->gsrc, n * sizeof(*out));
	return n;
}

size_t hypsplit_top(const struct hypsplit *hs, int cpu, struct hypsplit_source *out, size_t max)
{
	const struct hypsplit_cpu *c = hypsplit_cpu(hs, cpu);
	struct hypsplit_source *all;
	size_t n;

	if (!c || !c->nsrc || !max)
		return 0;
	all = malloc(c->nsrc * sizeof(*all));
	if (!all)
		return 0;
	memcpy(all, c->src, c->nsrc * sizeof(*all));
	qsort(all, c->nsrc, sizeof(*all), src_cmp);
	n = c->nsrc < max ? c->nsrc : max;
	memcpy(out, all, n * sizeof(*out));
	free(all);
	return n;
}

uint64_t hypsplit_late(const struct hypsplit *hs)
{
	uint64_t n = 0;
	int i;

	for (i = 0; hs && i < HYPSPLIT_MAX_CPUS; i++)
		if (hs->cpu[i])
			n += hs->cpu[i]->late;
	return n;
}
