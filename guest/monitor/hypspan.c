/* SPDX-License-Identifier: MIT */
/* hypspan: targets' run/runnable spans intersected with the DTL once its horizon passes (hypspan.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/gapsplit.h"
#include "monitor/hypspan.h"

struct hs_span {
	uint64_t start_ns, end_ns;
	uint32_t tgt, cpu;
	uint32_t running;
	uint32_t pad;
};

struct hypspan {
	uint32_t ntgt;
	uint32_t cap; /* pending list bound */
	uint64_t late_ns;
	struct hs_span *pend; /* pending spans, a ring in arrival order: npend from head */
	uint32_t head, npend;
	struct hypspan_stats st;
	struct hypspan_tot tot[]; /* per target */
};

struct hypspan *hypspan_new(uint32_t ntgt, uint32_t max_pending, uint64_t late_ns)
{
	struct hypspan *h;

	if (!ntgt || ntgt > 65536) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h) + (size_t)ntgt * sizeof(h->tot[0]));
	if (!h)
		return NULL;
	h->ntgt = ntgt;
	h->cap = max_pending ? max_pending : HYPSPAN_PENDING;
	h->late_ns = late_ns ? late_ns : HYPSPAN_LATE_NS;
	h->pend = calloc(h->cap, sizeof(*h->pend));
	if (!h->pend) {
		free(h);
		return NULL;
	}
	return h;
}

void hypspan_free(struct hypspan *h)
{
	if (!h)
		return;
	free(h->pend);
	free(h);
}

static void hs_late(struct hypspan *h, const struct hs_span *s)
{
	h->st.late++;
	h->st.late_ns += s->end_ns - s->start_ns;
}

void hypspan_add(struct hypspan *h, uint32_t tgt, uint32_t cpu, int running, uint64_t start_ns,
		 uint64_t end_ns)
{
	struct hs_span *s;

	h->st.spans++;
	if (tgt >= h->ntgt || cpu >= 65536 || end_ns <= start_ns) {
		h->st.bad++;
		return;
	}
	if (h->npend == h->cap) { /* full: the oldest gives way */
		hs_late(h, &h->pend[h->head]);
		h->head = (h->head + 1) % h->cap;
		h->npend--;
	}
	s = &h->pend[(h->head + h->npend++) % h->cap];
	*s = (struct hs_span){ .start_ns = start_ns,
			       .end_ns = end_ns,
			       .tgt = tgt,
			       .cpu = cpu,
			       .running = running ? 1 : 0 };
}

/* Add ns of a DTL span to a target's cause table. */
static void hs_cause(struct hypspan_tot *t, const struct dtl_span *ds, uint64_t ns)
{
	for (uint32_t i = 0; i < t->ncause; i++) {
		struct hypspan_cause *c = &t->cause[i];

		if (c->cause == ds->cause && c->cls == ds->cls && c->hclass == ds->hclass) {
			c->ns += ns;
			return;
		}
	}
	if (t->ncause ==
	    HYPSPAN_CAUSES) { /* full: the smallest goes to other_ns, its slot is reused */
		uint32_t v = 0;

		for (uint32_t i = 1; i < t->ncause; i++)
			if (t->cause[i].ns < t->cause[v].ns)
				v = i;
		t->other_ns += t->cause[v].ns;
		t->cause[v] = t->cause[--t->ncause];
	}
	t->cause[t->ncause++] = (struct hypspan_cause){ .cause = ds->cause,
							.cls = ds->cls,
							.hclass = ds->hclass,
							.seq = ++t->next_seq,
							.ns = ns };
}

struct hs_ctx {
	struct hypspan_tot *t;
	int running;
};

static void hs_overlap(void *ctx, const struct dtl_span *ds, uint64_t ov_start, uint64_t ov_end)
{
	struct hs_ctx *c = ctx;
	uint64_t ns = ov_end > ov_start ? ov_end - ov_start : 0;

	if (!ns || ds->hclass >= VN_HCLASS_MAX || (ds->flags & VN_DTL_F_HALTED))
		return; /* halted: the guest idle on the vCPU, not the hypervisor's time */
	c->t->ns[ds->hclass] += ns;
	if (c->running)
		c->t->running_ns += ns;
	else
		c->t->runnable_ns += ns;
	hs_cause(c->t, ds, ns);
}

size_t hypspan_process(struct hypspan *h, const struct dtl *d, uint64_t now_ns)
{
	uint64_t hz = d ? dtl_horizon(d) : 0;
	uint32_t keep = 0;
	size_t n = 0;

	for (uint32_t i = 0; i < h->npend; i++) {
		const struct hs_span *s = &h->pend[(h->head + i) % h->cap];

		if (hz && gapsplit_ready(s->end_ns, 0, hz)) {
			struct hs_ctx c = { .t = &h->tot[s->tgt], .running = (int)s->running };

			dtl_overlap(d, s->cpu, s->start_ns, s->end_ns, hs_overlap, &c);
			h->st.done++;
			n++;
		} else if (now_ns > s->end_ns && now_ns - s->end_ns > h->late_ns) {
			hs_late(h, s);
		} else {
			h->pend[(h->head + keep++) % h->cap] = *s;
		}
	}
	h->npend = keep;
	return n;
}

void hypspan_finish(struct hypspan *h)
{
	for (uint32_t i = 0; i < h->npend; i++)
		hs_late(h, &h->pend[(h->head + i) % h->cap]);
	h->npend = 0;
}

uint64_t hypspan_pending_end(const struct hypspan *h)
{
	uint64_t e = 0;

	for (uint32_t i = 0; i < h->npend; i++)
		if (h->pend[(h->head + i) % h->cap].end_ns > e)
			e = h->pend[(h->head + i) % h->cap].end_ns;
	return e;
}

const struct hypspan_tot *hypspan_tot(const struct hypspan *h, uint32_t tgt)
{
	return tgt < h->ntgt ? &h->tot[tgt] : NULL;
}

static uint64_t hs_sub(uint64_t b, uint64_t a)
{
	return b > a ? b - a : 0;
}

/* The same entry (cause and seq) in t, NULL: not there (new since, or evicted since). */
static const struct hypspan_cause *hs_find(const struct hypspan_tot *t,
					   const struct hypspan_cause *c)
{
	for (uint32_t i = 0; i < t->ncause; i++)
		if (t->cause[i].seq == c->seq && t->cause[i].cause == c->cause &&
		    t->cause[i].cls == c->cls && t->cause[i].hclass == c->hclass)
			return &t->cause[i];
	return NULL;
}

void hypspan_diff(const struct hypspan_tot *a, const struct hypspan_tot *b, struct hypspan_tot *out)
{
	memset(out, 0, sizeof(*out));
	for (int k = 0; k < VN_HCLASS_MAX; k++)
		out->ns[k] = hs_sub(b->ns[k], a->ns[k]);
	out->running_ns = hs_sub(b->running_ns, a->running_ns);
	out->runnable_ns = hs_sub(b->runnable_ns, a->runnable_ns);
	out->other_ns = hs_sub(b->other_ns, a->other_ns);
	for (uint32_t i = 0; i < a->ncause;
	     i++) /* evicted since: its earlier total moved to other */
		if (!hs_find(b, &a->cause[i]))
			out->other_ns = hs_sub(out->other_ns, a->cause[i].ns);
	for (uint32_t i = 0; i < b->ncause; i++) {
		const struct hypspan_cause *was = hs_find(a, &b->cause[i]);
		struct hypspan_cause c = b->cause[i];
		uint32_t j;

		c.ns = hs_sub(c.ns, was ? was->ns : 0);
		if (!c.ns)
			continue;
		for (j = out->ncause; j > 0 && out->cause[j - 1].ns < c.ns; j--)
			out->cause[j] = out->cause[j - 1];
		out->cause[j] = c;
		out->ncause++;
	}
}

void hypspan_stats(const struct hypspan *h, struct hypspan_stats *out)
{
	*out = h->st;
	out->pending = h->npend;
}
