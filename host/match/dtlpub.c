/* SPDX-License-Identifier: MIT */
/*
 * dtlpub: one domain's DTL publisher (see dtlpub.h). Runs wait in a small per-vCPU buffer (in time order, as
 * outlog delivers them) until their piece arrives; a full buffer folds its shortest neighbouring pair of one
 * class (or the new run into the last one) so memory stays bounded and busy time never turns into IDLE.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "host.h"
#include "match/dtlpub.h"

struct drun {
	uint64_t start_ns, end_ns;
	uint32_t pid;
	char comm[VN_DTL_COMM_LEN];
};

struct dvcpu {
	struct drun run[DTLPUB_RUNS];
	uint32_t nrun;
	bool in_interval; /* the last piece was split at a period end: the next one continues it */
	/* the period's aggregate */
	bool any;
	uint16_t isa;
	uint64_t exit_count, exit_ns, irq_count, irq_ns, other_count, other_ns;
	struct vn_dtl_exit ex[DTLPUB_EXITS];
	uint32_t nex;
};

/* The sub-span being built (merged with the next while the cause is the same). */
struct span {
	bool open;
	bool halted; /* before the interval's wakeup: published with VN_DTL_F_HALTED */
	uint64_t start_ns, end_ns;
	uint32_t cls, cause, flags;
};

struct dtlpub {
	struct dtl_writer *w;
	struct taskclass *tc;
	uint32_t dom, nvcpus, detail;
	uint64_t max_unc; /* bound on the clock error of a published time */
	uint64_t period; /* aggregate period ids, from 1 */
	struct dtlpub_stats st;
	struct dvcpu *v;
};

uint64_t dtlpub_new_epoch(void)
{
	static uint64_t last;
	struct timespec ts;
	uint64_t e;

	clock_gettime(CLOCK_REALTIME, &ts);
	e = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	if (e <= last)
		e = last + 1;
	last = e;
	return e;
}

struct dtlpub *dtlpub_new(void *area, size_t area_size, const struct dtlpub_params *p,
			  uint64_t epoch, struct taskclass *tc, char *why, size_t whylen)
{
	struct dtlwriter_params wp = { .nvcpus = p->nvcpus,
				       .max_entries = p->max_entries,
				       .detail = p->detail,
				       .period_ns = p->period_ns };
	struct dtlpub *d = calloc(1, sizeof(*d));

	if (!d || !(d->v = calloc(p->nvcpus ? p->nvcpus : 1, sizeof(*d->v)))) {
		free(d);
		snprintf(why, whylen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	d->w = dtlwriter_init(area, area_size, &wp, epoch, why, whylen);
	if (!d->w) {
		int e = errno;

		free(d->v);
		free(d);
		errno = e;
		return NULL;
	}
	d->tc = tc;
	d->dom = p->dom;
	d->nvcpus = p->nvcpus;
	d->detail = p->detail;
	d->max_unc = p->max_uncertainty_ns ? p->max_uncertainty_ns : DTLPUB_MAX_UNCERTAINTY_NS;
	return d;
}

void dtlpub_free(struct dtlpub *p)
{
	if (!p)
		return;
	dtlwriter_free(p->w);
	free(p->v);
	free(p);
}

struct dtl_writer *dtlpub_writer(struct dtlpub *p)
{
	return p->w;
}

/* ---- entries ---- */

/*
 * host_ns in guest time, only when the model's bound on that conversion is within max_unc: a model fitted to
 * a few high-rtt exchanges (a responder still finding the request grid, answers picked up a round late) can
 * be ~rtt/2 off, and what is published is never corrected.
 */
static int to_guest(const struct dtlpub *p, const struct clocksync *cs, uint64_t host_ns,
		    uint64_t *guest_ns)
{
	if (clocksync_h2g(cs, host_ns, guest_ns))
		return -1;
	return clocksync_uncertainty_ns(cs, *guest_ns) <= p->max_unc ? 0 : -1;
}

/* Make room in a full buffer: fold the shortest neighbouring pair, one of the same task if there is one
 * (the folded run keeps the longer one's task). Returns the free slot. */
static struct drun *make_room(struct dtlpub *p, struct dvcpu *v)
{
	uint32_t best = 0, i;
	uint64_t best_len = UINT64_MAX;
	bool same = false;

	p->st.runs_merged++;
	for (i = 0; i + 1 < v->nrun; i++) {
		uint64_t len = v->run[i + 1].end_ns - v->run[i].start_ns;
		bool s = v->run[i].pid == v->run[i + 1].pid;

		if ((s && !same) || (s == same && len < best_len)) {
			best = i;
			best_len = len;
			same = s;
		}
	}
	if (v->run[best + 1].end_ns - v->run[best + 1].start_ns >
	    v->run[best].end_ns - v->run[best].start_ns) {
		v->run[best].pid = v->run[best + 1].pid;
		memcpy(v->run[best].comm, v->run[best + 1].comm, sizeof(v->run[best].comm));
	}
	v->run[best].end_ns = v->run[best + 1].end_ns;
	memmove(&v->run[best + 1], &v->run[best + 2], (v->nrun - best - 2) * sizeof(v->run[0]));
	v->nrun--;
	return &v->run[v->nrun++];
}

void dtlpub_run(struct dtlpub *p, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, uint32_t pid,
		const char *comm, int idle)
{
	struct dvcpu *v;
	struct drun nr = { .start_ns = start_ns, .end_ns = end_ns, .pid = pid }, *r;

	if (vcpu >= p->nvcpus || idle || !pid || end_ns <= start_ns)
		return; /* idle time is what no run covers */
	v = &p->v[vcpu];
	if (v->nrun && v->run[v->nrun - 1].pid == pid && v->run[v->nrun - 1].end_ns == start_ns) {
		v->run[v->nrun - 1].end_ns = end_ns; /* the same task again, contiguous */
		return;
	}
	if (comm)
		memcpy(nr.comm, comm, strnlen(comm, VN_DTL_COMM_LEN - 1));
	r = v->nrun < DTLPUB_RUNS ? &v->run[v->nrun++] : make_room(p, v);
	*r = nr;
}

/* Publish one sub-span (host ns) of vcpu in guest ns; without a mapping it is dropped. */
static void put_span(struct dtlpub *p, uint32_t vcpu, uint32_t kind, const struct span *s,
		     const struct clocksync *cs)
{
	uint64_t gs, ge;

	if (to_guest(p, cs, s->start_ns, &gs) || to_guest(p, cs, s->end_ns, &ge)) {
		dtlwriter_drop(p->w, vcpu, 1);
		return;
	}
	(void)dtlwriter_put(p->w, vcpu, kind, s->cls, s->cause,
			    s->flags | (s->halted ? VN_DTL_F_HALTED : 0), gs, ge);
}

/* Extend the open sub-span with [start, end) of (cls, cause, halted), or publish it and open a new one. */
static void add_one(struct dtlpub *p, uint32_t vcpu, uint32_t kind, struct span *s, uint64_t start,
		    uint64_t end, uint32_t cls, uint32_t cause, bool halted,
		    const struct clocksync *cs)
{
	if (s->open && s->cls == cls && s->cause == cause && s->halted == halted &&
	    s->end_ns == start) {
		s->end_ns = end;
		return;
	}
	if (s->open) {
		put_span(p, vcpu, kind, s, cs);
		s->flags = VN_DTL_F_CONT;
	}
	s->open = true;
	s->halted = halted;
	s->start_ns = start;
	s->end_ns = end;
	s->cls = cls;
	s->cause = cause;
}

/* add_one() for [start, end), cut at halt_end: the part before it was halted (the vCPU slept). */
static void add_span(struct dtlpub *p, uint32_t vcpu, uint32_t kind, struct span *s, uint64_t start,
		     uint64_t end, uint32_t cls, uint32_t cause, uint64_t halt_end,
		     const struct clocksync *cs)
{
	if (start < halt_end)
		add_one(p, vcpu, kind, s, start, end < halt_end ? end : halt_end, cls, cause, true,
			cs);
	if (end > halt_end)
		add_one(p, vcpu, kind, s, start > halt_end ? start : halt_end, end, cls, cause,
			false, cs);
}

static uint32_t run_cause(struct dtlpub *p, const struct drun *r, uint32_t *cls)
{
	*cls = p->tc ? taskclass_of(p->tc, p->dom, r->pid, r->comm, r->end_ns)
		     : VN_DTL_CLASS_HOST_USER;
	return dtlwriter_cause(p->w, *cls, r->pid, r->comm);
}

void dtlpub_out(struct dtlpub *p, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, char state,
		uint64_t wake_ns, uint32_t flags, const struct clocksync *cs)
{
	uint32_t kind = state == 'R' ? VN_DTL_KIND_PREEMPTED : VN_DTL_KIND_BLOCKED, cls, cause;
	struct span s = { 0 };
	uint64_t cur = start_ns, a, b;
	/* blocked: halted until the wakeup (none seen in the piece: all of it) */
	uint64_t halt_end = state == 'R' ? start_ns : !wake_ns ? end_ns : wake_ns;
	struct dvcpu *v;

	if (vcpu >= p->nvcpus)
		return;
	v = &p->v[vcpu];
	p->st.pieces++;
	s.flags = (flags & VN_HOST_OUT_F_CONT) && v->in_interval ? VN_DTL_F_CONT : 0;
	v->in_interval = (flags & VN_HOST_OUT_F_SPLIT) != 0;
	if (end_ns <= start_ns || to_guest(p, cs, start_ns, &a) || to_guest(p, cs, end_ns, &b)) {
		if (end_ns > start_ns) {
			p->st.unsynced++;
			dtlwriter_drop(p->w, vcpu, 1);
		}
		v->nrun = 0;
		return;
	}
	for (uint32_t i = 0; i < v->nrun; i++) {
		const struct drun *r = &v->run[i];

		a = r->start_ns > cur ? r->start_ns : cur;
		b = r->end_ns < end_ns ? r->end_ns : end_ns;
		if (b <= a)
			continue;
		if (a > cur)
			add_span(p, vcpu, kind, &s, cur, a, VN_DTL_CLASS_IDLE, 0, halt_end, cs);
		cause = run_cause(p, r, &cls);
		add_span(p, vcpu, kind, &s, a, b, cls, cause, halt_end, cs);
		cur = b;
	}
	if (cur < end_ns)
		add_span(p, vcpu, kind, &s, cur, end_ns, VN_DTL_CLASS_IDLE, 0, halt_end, cs);
	if (flags & VN_HOST_OUT_F_GUESSED)
		s.flags |= VN_DTL_F_GUESSED;
	put_span(p, vcpu, kind, &s, cs);
	v->nrun = 0;
}

/* ---- aggregates ---- */

static void add_exit(struct dvcpu *v, uint32_t reason, uint64_t count, uint64_t total_ns)
{
	struct vn_dtl_exit *e = NULL;
	uint32_t i;

	for (i = 0; i < v->nex && !e; i++)
		if (v->ex[i].reason == reason)
			e = &v->ex[i];
	if (!e) {
		if (v->nex == DTLPUB_EXITS) {
			v->other_count += count;
			v->other_ns += total_ns;
			return;
		}
		e = &v->ex[v->nex++];
		*e = (struct vn_dtl_exit){ .reason = reason };
	}
	e->count += (uint32_t)(count > UINT32_MAX - e->count ? UINT32_MAX - e->count : count);
	e->total_ns += total_ns;
}

void dtlpub_agg(struct dtlpub *p, uint32_t vcpu, uint16_t kind, uint16_t isa, uint32_t id,
		uint64_t count, uint64_t total_ns)
{
	struct dvcpu *v;

	if (vcpu >= p->nvcpus)
		return;
	v = &p->v[vcpu];
	v->any = true;
	if (kind == VN_HOST_AGG_EXIT) {
		v->isa = isa;
		v->exit_count += count;
		v->exit_ns += total_ns;
		add_exit(v, id, count, total_ns);
	} else if (kind == VN_HOST_AGG_IRQ || kind == VN_HOST_AGG_SOFTIRQ ||
		   kind == VN_HOST_AGG_VECTOR) {
		v->irq_count += count;
		v->irq_ns += total_ns;
	}
}

static int cmp_exit(const void *a, const void *b)
{
	const struct vn_dtl_exit *x = a, *y = b;

	return x->total_ns > y->total_ns ? -1 : x->total_ns < y->total_ns;
}

/* Host sums longer than the guest span (clock rate, a partial period): scaled down to fit it. */
static void clamp_exits(struct vn_dtl_agg *a, uint64_t span)
{
	long double f = (long double)span / (long double)a->exit_ns;
	uint64_t sum = 0;

	for (uint32_t i = 0; i < a->nexit; i++) {
		a->exit[i].total_ns = (uint64_t)((long double)a->exit[i].total_ns * f);
		sum += a->exit[i].total_ns;
	}
	a->other_exit_ns = (uint64_t)((long double)a->other_exit_ns * f);
	if (sum + a->other_exit_ns > span)
		a->other_exit_ns = sum < span ? span - sum : 0;
	a->exit_ns = sum + a->other_exit_ns;
}

/* vcpu's sums as an aggregate over guest [gs, ge): the top exit reasons, the rest in other_exit_ns. */
static void fill_agg(struct dvcpu *v, uint64_t gs, uint64_t ge, struct vn_dtl_agg *a)
{
	uint64_t top_ns = 0;

	memset(a, 0, sizeof(*a));
	qsort(v->ex, v->nex, sizeof(v->ex[0]), cmp_exit);
	a->isa = v->isa;
	a->nexit = (uint16_t)(v->nex < VN_DTL_AGG_TOP ? v->nex : VN_DTL_AGG_TOP);
	memcpy(a->exit, v->ex, a->nexit * sizeof(a->exit[0]));
	for (uint32_t i = 0; i < a->nexit; i++)
		top_ns += a->exit[i].total_ns;
	a->start_ns = gs;
	a->end_ns = ge;
	a->exit_count = v->exit_count;
	a->exit_ns = v->exit_ns;
	a->other_exit_ns = v->exit_ns > top_ns ? v->exit_ns - top_ns : 0;
	a->irq_count = v->irq_count;
	a->irq_ns = v->irq_ns < ge - gs ? v->irq_ns : ge - gs;
	if (a->exit_ns > ge - gs)
		clamp_exits(a, ge - gs);
}

void dtlpub_period(struct dtlpub *p, uint64_t start_ns, uint64_t end_ns, const struct clocksync *cs)
{
	uint64_t gs = 0, ge = 0;
	bool ok = end_ns > start_ns && !to_guest(p, cs, start_ns, &gs) &&
		  !to_guest(p, cs, end_ns, &ge) && ge > gs;

	for (uint32_t i = 0; i < p->nvcpus; i++) {
		struct dvcpu *v = &p->v[i];
		struct vn_dtl_agg a;

		if (ok && v->any) {
			fill_agg(v, gs, ge, &a);
			a.period = ++p->period;
			if (!dtlwriter_agg(p->w, i, &a))
				p->st.aggs++;
		}
		v->any = false;
		v->isa = 0;
		v->nex = 0;
		v->exit_count = v->exit_ns = v->irq_count = v->irq_ns = 0;
		v->other_count = v->other_ns = 0;
	}
}

/* ---- status ---- */

/*
 * The mapping goes out as soon as there is a model (with its uncertainty: the guest shows "waiting"), the
 * flag VN_DTL_S_CLOCK and the horizon only once the uncertainty at now is within max_unc (entries are
 * published from then on, see to_guest); a bound that grows past it again (no recent exchange) sets
 * VN_DTL_S_STALE.
 */
void dtlpub_status(struct dtlpub *p, uint64_t now_ns, uint64_t horizon_ns,
		   const struct clocksync *cs)
{
	struct vn_dtl_status st = { .uncertainty_ns = UINT64_MAX };
	struct clocksync_state cst;
	uint64_t g, h = 0;
	double b;

	clocksync_state(cs, now_ns, &cst);
	if (cst.valid && !clocksync_h2g(cs, now_ns, &g)) {
		st.heartbeat_ns = g;
		st.anchor_host_ns = now_ns;
		st.offset_ns = (int64_t)(g - now_ns);
		/* the model's drift is d(offset)/d(guest) = b; the status wants d(offset)/d(host) */
		b = cst.drift_ppm * 1e-6;
		st.drift_ppb = (int64_t)(b / (1.0 - b) * 1e9);
		st.uncertainty_ns = cst.uncertainty_ns;
		if (!p->st.aligned_ns && cst.uncertainty_ns <= p->max_unc) {
			p->st.aligned_ns = now_ns ? now_ns : 1;
			p->st.aligned_unc_ns = cst.uncertainty_ns;
		}
	}
	if (st.heartbeat_ns && p->st.aligned_ns) {
		st.flags = VN_DTL_S_CLOCK;
		if (cst.stale || cst.uncertainty_ns > p->max_unc)
			st.flags |= VN_DTL_S_STALE;
		if (horizon_ns && !clocksync_h2g(cs, horizon_ns, &h))
			st.horizon_ns = h;
	}
	dtlwriter_status(p->w, &st);
}

void dtlpub_stats(const struct dtlpub *p, struct dtlpub_stats *out)
{
	*out = p->st;
	dtlwriter_stats(p->w, &out->w);
}
