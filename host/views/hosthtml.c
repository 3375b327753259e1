/* SPDX-License-Identifier: MIT */
/*
 * hosthtml: the HTML report of a host record file (see hosthtml.h). The per-period records of each vCPU are
 * kept as points (one per period start); the plots sum them into at most HOSTHTML_SHOWN_BINS time bins shared
 * by every vCPU, as a percentage of the time the bin covers (combined view: of the guest sampler's runtime).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/classes.h"
#include "format/htmlplot.h"
#include "format/recfile.h"
#include "match/matchview.h"
#include "views/hosthtml.h"

/* One vCPU over one period: what the plots need of its records. */
struct hh_point {
	uint64_t start_ns, end_ns;
	uint64_t out_r_ns, irq_ns, exit_ns; /* HOST_PERIOD, HOST_AGG */
	uint64_t preempt_ns; /* HOST_RUN: other tasks ran while it was out and runnable */
	uint64_t runtime_ns, guest_ns, host_ns[VN_HCLASS_MAX], residual_ns; /* HOST_MATCH */
};

struct hh_vcpu {
	struct hh_point *p;
	size_t n, cap;
	uint64_t pending_ns; /* an out interval cut at a period boundary, so far */
};

/* A domain's channel at the end of one period: the clock uncertainty (~0: no model). */
struct hh_chan {
	uint64_t end_ns, unc_ns;
};

struct hh_dom {
	struct hh_vcpu vcpu[VN_HOST_MAX_VCPUS];
	struct hh_chan *chan;
	size_t nchan, chancap;
};

struct hosthtml {
	struct hh_dom *dom[VN_HOST_MAX_DOMAINS];
	struct htmlplot_hist out_r, out_all,
	    per_period; /* preempted and all out intervals; out_r_ns */
	uint64_t nout; /* out intervals seen */
	uint64_t
	    nrun; /* run records seen (none: the timeline's preempted is the periods' out_r_ns) */
	uint64_t dropped; /* records left out (memory) */
	char version[96], hostname[96], kernel[96];
};

struct hosthtml *hosthtml_new(void)
{
	return calloc(1, sizeof(struct hosthtml));
}

void hosthtml_free(struct hosthtml *h)
{
	uint32_t d, j;

	for (d = 0; h && d < VN_HOST_MAX_DOMAINS; d++) {
		if (!h->dom[d])
			continue;
		for (j = 0; j < VN_HOST_MAX_VCPUS; j++)
			free(h->dom[d]->vcpu[j].p);
		free(h->dom[d]->chan);
		free(h->dom[d]);
	}
	free(h);
}

static struct hh_dom *dom_get(struct hosthtml *h, uint32_t dom)
{
	if (dom >= VN_HOST_MAX_DOMAINS)
		return NULL;
	if (!h->dom[dom])
		h->dom[dom] = calloc(1, sizeof(struct hh_dom));
	return h->dom[dom];
}

/* The point of (dom, vcpu) for the period starting at start_ns, made if new; NULL when out of room. */
static struct hh_point *point_get(struct hosthtml *h, uint32_t dom, uint32_t vcpu,
				  uint64_t start_ns, uint64_t end_ns)
{
	struct hh_dom *d = vcpu < VN_HOST_MAX_VCPUS ? dom_get(h, dom) : NULL;
	struct hh_vcpu *v;
	size_t i;

	if (!d)
		return NULL;
	v = &d->vcpu[vcpu];
	for (i = v->n; i > 0 && i + 16 > v->n; i--)
		if (v->p[i - 1].start_ns == start_ns)
			return &v->p[i - 1];
	if (v->n == v->cap) {
		size_t nc = v->cap ? v->cap * 2 : 64;
		void *np = v->n < HOSTHTML_MAX_POINTS ? realloc(v->p, nc * sizeof(*v->p)) : NULL;

		if (!np)
			return NULL;
		v->p = np;
		v->cap = nc;
	}
	memset(&v->p[v->n], 0, sizeof(v->p[0]));
	v->p[v->n].start_ns = start_ns;
	v->p[v->n].end_ns = end_ns > start_ns ? end_ns : start_ns;
	return &v->p[v->n++];
}

static int take_period(struct hosthtml *h, const struct vn_host_period *r)
{
	struct hh_point *p = point_get(h, r->dom, r->vcpu, r->start_ns, r->end_ns);

	if (!p)
		return -ENOMEM;
	p->out_r_ns += r->out_r_ns;
	if (r->flags & VN_HOST_PERIOD_F_SCHEDLOG)
		htmlplot_hist_add(&h->per_period, r->out_r_ns, 1);
	return 0;
}

/* A task's run while the vCPU was out: runnable (not halted), it is preempted time of the period it lies in
 * (the period record came first). */
static void take_run(struct hosthtml *h, const struct vn_host_run *r)
{
	struct hh_dom *d = r->vcpu < VN_HOST_MAX_VCPUS ? dom_get(h, r->dom) : NULL;
	struct hh_vcpu *v;
	size_t i;

	h->nrun++;
	if (!d || !r->pid || (r->flags & VN_HOST_RUN_F_HALTED) || r->end_ns <= r->start_ns)
		return;
	v = &d->vcpu[r->vcpu];
	for (i = v->n; i > 0 && i + 16 > v->n; i--)
		if (v->p[i - 1].start_ns <= r->start_ns && r->start_ns < v->p[i - 1].end_ns) {
			v->p[i - 1].preempt_ns += r->end_ns - r->start_ns;
			return;
		}
}

static int take_agg(struct hosthtml *h, const struct vn_host_agg *g)
{
	struct hh_point *p = point_get(h, g->dom, g->vcpu, g->start_ns, g->end_ns);

	if (!p)
		return -ENOMEM;
	if (g->kind == VN_HOST_AGG_EXIT)
		p->exit_ns += g->total_ns;
	else
		p->irq_ns += g->total_ns;
	return 0;
}

/* An out interval: pieces cut at period boundaries are joined before they are counted. */
static void take_out(struct hosthtml *h, const struct vn_host_out *o)
{
	struct hh_dom *d = o->vcpu < VN_HOST_MAX_VCPUS ? dom_get(h, o->dom) : NULL;
	uint64_t dur = o->end_ns > o->start_ns ? o->end_ns - o->start_ns : 0;
	struct hh_vcpu *v;

	if (!d)
		return;
	v = &d->vcpu[o->vcpu];
	if (o->flags & VN_HOST_OUT_F_CONT)
		dur += v->pending_ns;
	v->pending_ns = 0;
	if (o->flags & VN_HOST_OUT_F_SPLIT) {
		v->pending_ns = dur;
		return;
	}
	h->nout++;
	htmlplot_hist_add(&h->out_all, dur, 1);
	if (o->state == 'R')
		htmlplot_hist_add(&h->out_r, dur, 1);
}

static int take_match(struct hosthtml *h, const struct vn_host_match *m)
{
	struct hh_point *p = point_get(h, m->dom, m->vcpu, m->start_ns, m->end_ns);
	int k;

	if (!p)
		return -ENOMEM;
	p->runtime_ns += m->runtime_ns;
	for (k = 0; k < 8; k++)
		p->guest_ns += m->guest_ns[k];
	for (k = 0; k < (int)VN_HCLASS_MAX; k++)
		p->host_ns[k] += m->host_ns[k];
	p->residual_ns += m->residual_ns;
	return 0;
}

static int take_chan(struct hosthtml *h, const struct vn_host_chan *c)
{
	struct hh_dom *d = dom_get(h, c->dom);

	if (!d)
		return -ENOMEM;
	if (d->nchan == d->chancap) {
		size_t nc = d->chancap ? d->chancap * 2 : 64;
		void *np =
		    d->nchan < HOSTHTML_MAX_POINTS ? realloc(d->chan, nc * sizeof(*d->chan)) : NULL;

		if (!np)
			return -ENOMEM;
		d->chan = np;
		d->chancap = nc;
	}
	d->chan[d->nchan].end_ns = c->end_ns;
	d->chan[d->nchan++].unc_ns = c->state == VN_HOST_CHAN_OK ? c->clock_uncertainty_ns : ~0ull;
	return 0;
}

static void meta_str(const void *pl, size_t len, const char *key, char *out, size_t cap)
{
	const char *v;
	size_t vl;

	if (recfile_kv_get(pl, len, key, &v, &vl))
		snprintf(out, cap, "%.*s", (int)(vl < cap ? vl : cap - 1), v);
}

/* The domain and vCPU a record names (CHAN: vCPU 0). */
static void record_owner(uint16_t type, const void *rec, uint32_t *dom, uint32_t *vcpu)
{
	const struct vn_host_period *p = rec;
	const struct vn_host_agg *g = rec;
	const struct vn_host_out *o = rec;
	const struct vn_host_run *r = rec;
	const struct vn_host_match *m = rec;
	const struct vn_host_chan *c = rec;

	*vcpu = 0;
	if (type == VN_CHUNK_HOST_PERIOD)
		*dom = p->dom, *vcpu = p->vcpu;
	else if (type == VN_CHUNK_HOST_AGG)
		*dom = g->dom, *vcpu = g->vcpu;
	else if (type == VN_CHUNK_HOST_OUT)
		*dom = o->dom, *vcpu = o->vcpu;
	else if (type == VN_CHUNK_HOST_RUN)
		*dom = r->dom, *vcpu = r->vcpu;
	else if (type == VN_CHUNK_HOST_MATCH)
		*dom = m->dom, *vcpu = m->vcpu;
	else
		*dom = c->dom;
}

/* One record of a record-array chunk (aligned copy in rec). A record that names a domain or vCPU out of range is
 * passed over (the engine counts it); -ENOMEM: no room. */
static int take_record(struct hosthtml *h, uint16_t type, const void *rec)
{
	uint32_t dom, vcpu;

	record_owner(type, rec, &dom, &vcpu);
	if (dom >= VN_HOST_MAX_DOMAINS || vcpu >= VN_HOST_MAX_VCPUS)
		return 0;
	switch (type) {
	case VN_CHUNK_HOST_PERIOD:
		return take_period(h, rec);
	case VN_CHUNK_HOST_AGG:
		return take_agg(h, rec);
	case VN_CHUNK_HOST_OUT:
		take_out(h, rec);
		return 0;
	case VN_CHUNK_HOST_RUN:
		take_run(h, rec);
		return 0;
	case VN_CHUNK_HOST_MATCH:
		return take_match(h, rec);
	default:
		return take_chan(h, rec);
	}
}

int hosthtml_chunk(struct hosthtml *h, uint16_t type, const void *payload, size_t len)
{
	union {
		struct vn_host_period p;
		struct vn_host_agg g;
		struct vn_host_out o;
		struct vn_host_run r;
		struct vn_host_match m;
		struct vn_host_chan c;
	} rec;
	size_t size, k;
	int rc = 0;

	switch (type) {
	case VN_CHUNK_HOST_META:
		meta_str(payload, len, "version", h->version, sizeof(h->version));
		meta_str(payload, len, "hostname", h->hostname, sizeof(h->hostname));
		meta_str(payload, len, "kernel", h->kernel, sizeof(h->kernel));
		return 0;
	case VN_CHUNK_HOST_PERIOD:
		size = sizeof(rec.p);
		break;
	case VN_CHUNK_HOST_AGG:
		size = sizeof(rec.g);
		break;
	case VN_CHUNK_HOST_OUT:
		size = sizeof(rec.o);
		break;
	case VN_CHUNK_HOST_RUN:
		size = sizeof(rec.r);
		break;
	case VN_CHUNK_HOST_MATCH:
		size = sizeof(rec.m);
		break;
	case VN_CHUNK_HOST_CHAN:
		size = sizeof(rec.c);
		break;
	default:
		return 0;
	}
	if (len % size)
		return 0; /* malformed: the engine says so */
	for (k = 0; k + size <= len; k += size) {
		memcpy(&rec, (const char *)payload + k, size);
		if (take_record(h, type, &rec)) {
			h->dropped++;
			rc = -ENOMEM;
		}
	}
	return rc;
}

/* ---- the page ---- */

/* The time axis shared by every plot: the span of all points, periods summed into bins. */
struct hh_axis {
	uint64_t t0_ns, period_ns, bin_ns;
	size_t nbins;
};

static void axis_of(const struct hosthtml *h, const struct hostinfo *in, struct hh_axis *ax)
{
	uint64_t t1 = 0, slots;
	uint32_t d, j;
	size_t i;

	memset(ax, 0, sizeof(*ax));
	ax->t0_ns = UINT64_MAX;
	for (d = 0; d < VN_HOST_MAX_DOMAINS; d++)
		for (j = 0; h->dom[d] && j < VN_HOST_MAX_VCPUS; j++)
			for (i = 0; i < h->dom[d]->vcpu[j].n; i++) {
				const struct hh_point *p = &h->dom[d]->vcpu[j].p[i];

				if (p->start_ns < ax->t0_ns)
					ax->t0_ns = p->start_ns;
				if (p->end_ns > t1)
					t1 = p->end_ns;
				if (!ax->period_ns && p->end_ns > p->start_ns)
					ax->period_ns = p->end_ns - p->start_ns;
			}
	if (in->period_ns)
		ax->period_ns = in->period_ns;
	if (ax->t0_ns == UINT64_MAX || !ax->period_ns) {
		ax->t0_ns = 0;
		ax->period_ns = 1000000000ull;
		ax->bin_ns = ax->period_ns;
		return;
	}
	slots = (t1 - ax->t0_ns) / ax->period_ns + 1;
	ax->bin_ns = ax->period_ns * ((slots + HOSTHTML_SHOWN_BINS - 1) / HOSTHTML_SHOWN_BINS);
	if (!ax->bin_ns)
		ax->bin_ns = ax->period_ns;
	ax->nbins = (size_t)((t1 - ax->t0_ns) / ax->bin_ns) + 1;
	if (ax->nbins > HOSTHTML_SHOWN_BINS + 1)
		ax->nbins = HOSTHTML_SHOWN_BINS + 1;
}

static size_t bin_of(const struct hh_axis *ax, uint64_t t_ns)
{
	size_t b = t_ns > ax->t0_ns ? (size_t)((t_ns - ax->t0_ns) / ax->bin_ns) : 0;

	return b < ax->nbins ? b : ax->nbins - 1;
}

#define HH_HOST_SERIES 3
#define HH_MATCH_SERIES 6

static const char *const host_names[HH_HOST_SERIES] = { "preempted", "host IRQs", "VM exits" };
/* the host view's series by the hypervisor class each is part of */
static const int host_hclass[HH_HOST_SERIES] = { VN_HCLASS_HOST_PREEMPT, VN_HCLASS_HOST_IRQ,
						 VN_HCLASS_VMEXIT };
static const char *const match_names[HH_MATCH_SERIES] = {
	"guest", "host preempt", "host wait", "VM exit", "host IRQ", "hw (residual)"
};
#define GUEST_COLOR "#59a14f" /* the combined view's guest part (every guest class) */

/* The parts of point p for series k (host or combined view) and its base (the time they are a share of). */
static uint64_t point_part(const struct hh_point *p, bool guest, bool runs, int k, uint64_t *base)
{
	if (!guest) {
		*base = p->end_ns - p->start_ns;
		return k == 0	? (runs ? p->preempt_ns : p->out_r_ns)
		       : k == 1 ? p->irq_ns
				: p->exit_ns;
	}
	*base = p->runtime_ns ? p->runtime_ns : p->end_ns - p->start_ns;
	if (k == 0)
		return p->guest_ns;
	return k <= (int)VN_HCLASS_MAX ? p->host_ns[k - 1] : p->residual_ns;
}

/* One vCPU's timeline: its series summed into the axis' bins, as % of their base. */
static int write_vcpu(FILE *f, const struct hh_vcpu *v, const struct hh_axis *ax, bool guest,
		      bool runs, const char *title, const char *why)
{
	int ns = guest ? HH_MATCH_SERIES : HH_HOST_SERIES, k;
	double *y = calloc((size_t)(ns + 1) * (ax->nbins + 1), sizeof(double)), *base;
	struct htmlplot_series s[HH_MATCH_SERIES];
	size_t i, b, any = 0;

	if (!y)
		return -ENOMEM;
	base = y + (size_t)ns * (ax->nbins + 1);
	for (i = 0; ax->nbins && i < v->n; i++) {
		uint64_t bs = 0;

		if (guest && !v->p[i].runtime_ns)
			continue; /* the guest did not measure this vCPU in this period */
		any++;

		b = bin_of(ax, v->p[i].start_ns);
		for (k = 0; k < ns; k++)
			y[(size_t)k * (ax->nbins + 1) + b] +=
			    (double)point_part(&v->p[i], guest, runs, k, &bs);
		base[b] += (double)bs;
	}
	for (k = 0; k < ns; k++) {
		for (b = 0; b < ax->nbins; b++)
			y[(size_t)k * (ax->nbins + 1) + b] =
			    base[b] > 0 ? 100.0 * y[(size_t)k * (ax->nbins + 1) + b] / base[b] : 0;
		s[k].name = guest ? match_names[k] : host_names[k];
		s[k].color = !guest ? classes_hyp_color(host_hclass[k])
			     : k    ? classes_hyp_color(k - 1)
				    : GUEST_COLOR;
		s[k].y = y + (size_t)k * (ax->nbins + 1);
	}
	htmlplot_timeline(f, &(struct htmlplot_timeline){ .title = title,
							  .unit = "%",
							  .dt_s = (double)ax->bin_ns / 1e9,
							  .n = ax->nbins,
							  .nodata = !any,
							  .nodata_why = why,
							  .series = s,
							  .nseries = (size_t)ns,
							  .stacked = 1 });
	free(y);
	return 0;
}

/* Why vCPU j of domain d may have no point in the view (shown only with "no data"). */
static const char *nodata_why(const struct hosthtml *h, uint32_t d, uint32_t j, bool guest)
{
	const struct hh_dom *hd = h->dom[d];
	uint32_t k;
	size_t i;

	if (!guest || !hd)
		return !hd || !hd->vcpu[j].n ? "the host recorded no period of this vCPU" : NULL;
	for (k = 0; k < VN_HOST_MAX_VCPUS; k++)
		for (i = 0; i < hd->vcpu[k].n; i++)
			if (hd->vcpu[k].p[i].runtime_ns)
				return "the guest's sampler did not run on this vCPU (vnoise-guest "
				       "-c "
				       "left it out)";
	return "no vnoise-guest report reached the host from this domain (none running, or its "
	       "channel not attached)";
}

/* Per domain and vCPU the timelines of the view. */
static int write_timelines(FILE *f, const struct hosthtml *h, const struct hostagg *a,
			   const struct hh_axis *ax, bool guest)
{
	char title[HOSTAGG_NAME_LEN + 160], bin[32];
	static const struct hh_vcpu none;
	uint32_t d, j;
	int rc = 0;

	htmlplot_ns(bin, sizeof(bin), (double)ax->bin_ns);
	for (d = 0; !rc && d < VN_HOST_MAX_DOMAINS; d++) {
		const struct hostagg_domain *dm = &a->dom[d];

		for (j = 0; !rc && dm->seen && j < dm->nvcpus && j < VN_HOST_MAX_VCPUS; j++) {
			snprintf(title, sizeof(title), "%.127s vCPU %u: %s (%% of each %s bin)",
				 dm->name[0] ? dm->name : "?", j,
				 guest ? "the guest's noise, guest vs hypervisor, % of its runtime"
				       : "out-time by cause",
				 bin);
			rc = write_vcpu(f, h->dom[d] ? &h->dom[d]->vcpu[j] : &none, ax, guest,
					h->nrun > 0, title, nodata_why(h, d, j, guest));
		}
	}
	return rc;
}

/* Each domain's clock uncertainty over time (the largest in each bin; periods without a model left out). */
static int write_clock(FILE *f, const struct hosthtml *h, const struct hostagg *a,
		       const struct hh_axis *ax)
{
	char title[HOSTAGG_NAME_LEN + 64];
	uint32_t d;
	size_t i, n;

	for (d = 0; d < VN_HOST_MAX_DOMAINS; d++) {
		const struct hh_dom *hd = h->dom[d];
		double *y;

		if (!a->dom[d].seen || !hd || !hd->nchan)
			continue;
		y = calloc(ax->nbins + 1, sizeof(double));
		if (!y)
			return -ENOMEM;
		for (i = 0; i < ax->nbins; i++)
			y[i] = NAN; /* no model in the bin: a break in the line */
		for (i = 0, n = 0; ax->nbins && i < hd->nchan; i++) {
			size_t b = bin_of(ax, hd->chan[i].end_ns ? hd->chan[i].end_ns - 1 : 0);

			if (hd->chan[i].unc_ns >= 1000000000000ull) /* no model */
				continue;
			n++;
			if (isnan(y[b]) || (double)hd->chan[i].unc_ns > y[b])
				y[b] = (double)hd->chan[i].unc_ns;
		}
		snprintf(title, sizeof(title), "%.127s: clock uncertainty (guest to host time)",
			 a->dom[d].name);
		htmlplot_timeline(
		    f, &(struct htmlplot_timeline){
			   .title = title,
			   .unit = "ns",
			   .dt_s = (double)ax->bin_ns / 1e9,
			   .n = ax->nbins,
			   .nodata = !n,
			   .series = &(struct htmlplot_series){ "uncertainty", "#4e79a7", y },
			   .nseries = 1 });
		free(y);
	}
	return 0;
}

/* The top preemptors of every vCPU (host view), summed by task; halted: instead the tasks that ran while a
 * vCPU was halted (the guest idle on it: not preemptors), by their halted time. */
static int top_preempt(const struct hostagg *a, const struct hostinfo *in, bool halted,
		       struct htmlplot_top *t)
{
	const struct hostagg_preempt *pr[HOSTAGG_MAX_PREEMPT + 1];
	char name[64];
	uint32_t d, j, k, n;
	int rc = 0;

	for (d = 0; d < VN_HOST_MAX_DOMAINS; d++)
		for (j = 0; a->dom[d].seen && j < a->dom[d].nvcpus_alloc; j++) {
			const struct hostagg_vcpu *v = &a->dom[d].vcpus[j];

			n = !v->seen ? 0
			    : halted ? hostagg_halted_sorted(v, pr, HOSTAGG_MAX_PREEMPT + 1)
				     : hostagg_preempt_sorted(v, pr, HOSTAGG_MAX_PREEMPT + 1);
			for (k = 0; !rc && k < n; k++) {
				/* "<other>": the tasks the table had no room for */
				if (!pr[k]->pid || (halted && !pr[k]->halted_ns))
					continue;
				snprintf(name, sizeof(name), "%s[%u]%s", pr[k]->comm, pr[k]->pid,
					 hostview_is_self(in, pr[k]->pid) ? " (vnoise)" : "");
				rc = halted ? htmlplot_top_add(t, name, NULL, NULL,
							       (double)pr[k]->halted_ns,
							       pr[k]->halted_count, 0)
					    : htmlplot_top_add(
						  t, name, NULL,
						  classes_hyp_color(VN_HCLASS_HOST_PREEMPT),
						  (double)pr[k]->total_ns, pr[k]->count, 0);
			}
		}
	return rc;
}

/* The combined view's sources of one kind over every vCPU, summed by name. */
static int top_msrc(const struct hostagg *a, const struct hostinfo *in, uint8_t kind,
		    struct htmlplot_top *t)
{
	const struct hostagg_msrc *s[HOSTAGG_MAX_MSRC];
	char name[112];
	uint32_t d, j, k, n;
	int rc = 0;

	for (d = 0; d < VN_HOST_MAX_DOMAINS; d++)
		for (j = 0; a->dom[d].seen && j < a->dom[d].nvcpus_alloc; j++) {
			const struct hostagg_vcpu *v = &a->dom[d].vcpus[j];

			n = v->seen ? hostagg_msrc_sorted(v, kind, s, HOSTAGG_MAX_MSRC) : 0;
			for (k = 0; !rc && k < n; k++) {
				matchview_source_name(a, v, s[k], name, 96);
				if (matchview_is_vnoise(in, s[k]))
					strcat(name, " (vnoise)");
				rc = htmlplot_top_add(t, name, classes_guest_label(s[k]->cls),
						      classes_guest_color(s[k]->cls),
						      (double)s[k]->total_ns, s[k]->count,
						      (double)s[k]->max_ns);
			}
		}
	return rc;
}

/* A top list as bars (top_n entries). */
static void write_top(FILE *f, struct htmlplot_top *t, const char *title, int top_n)
{
	struct htmlplot_bar bars[64];
	char notes[64][48];
	size_t n;

	htmlplot_top_sort(t);
	n = htmlplot_top_bars(t, bars, notes, top_n > 64 ? 64 : top_n > 0 ? (size_t)top_n : 0);
	htmlplot_bars(f, title, "ns", bars, n);
}

static int write_sources(FILE *f, const struct hostagg *a, const struct hostinfo *in, bool guest)
{
	struct htmlplot_top t = { 0 };
	int rc;

	htmlplot_section(f, guest ? "Top sources" : "Top preemptors",
			 guest ? "time attributed inside the guest's noise, all vCPUs"
			       : "host tasks that ran while a vCPU was out, all vCPUs");
	rc = guest ? top_msrc(a, in, VN_HOST_MSRC_GUEST, &t) : top_preempt(a, in, false, &t);
	if (!rc)
		write_top(f, &t, guest ? "guest sources" : "top preemptors", in->top_n);
	htmlplot_top_free(&t);
	if (!rc && !guest) {
		rc = top_preempt(a, in, true, &t);
		if (!rc && t.n)
			write_top(f, &t, "ran while the vCPU was halted (not preemptors)",
				  in->top_n);
		htmlplot_top_free(&t);
	}
	if (!rc && guest) {
		rc = top_msrc(a, in, VN_HOST_MSRC_HOST, &t);
		if (!rc)
			write_top(f, &t, "hypervisor sources", in->top_n);
		htmlplot_top_free(&t);
	}
	return rc;
}

static void fact(struct htmlplot_fact *f, size_t *n, const char *label, const char *value)
{
	f[*n].label = label;
	f[(*n)++].value = value;
}

/* The run's facts: version, host, span, period, domains and vCPUs, tracing, drops, partial file. */
static void write_facts(FILE *f, const struct hosthtml *h, const struct hostagg *a,
			const struct hostinfo *in, const char *partial)
{
	char span[32], per[32], doms[512], trace[96], drops[160], host[224], nv[16];
	struct htmlplot_fact facts[10];
	uint32_t d, ndom = 0, nvcpu = 0;
	size_t n = 0, o = 0;

	for (d = 0; d < VN_HOST_MAX_DOMAINS; d++)
		if (a->dom[d].seen) {
			ndom++;
			nvcpu += a->dom[d].nvcpus;
			if (o < sizeof(doms) - 1)
				o += (size_t)snprintf(doms + o, sizeof(doms) - o,
						      "%s%.64s: %u vCPUs", ndom > 1 ? ", " : "",
						      a->dom[d].name, a->dom[d].nvcpus);
		}
	if (!ndom)
		snprintf(doms, sizeof(doms), "none");
	htmlplot_ns(span, sizeof(span), (double)(in->end_ns - in->start_ns));
	htmlplot_ns(per, sizeof(per), (double)in->period_ns);
	snprintf(host, sizeof(host), "%s (kernel %s)", h->hostname[0] ? h->hostname : "?",
		 h->kernel[0] ? h->kernel : "?");
	snprintf(trace, sizeof(trace), "dispatch %s, host IRQs %s, VM exits %s", in->dispatch,
		 in->irqs ? "on" : "off", in->kvm ? "on" : "off");
	snprintf(drops, sizeof(drops),
		 "%" PRIu64 " dispatch records, %" PRIu64 " lifecycle events, %" PRIu64
		 " anomalies repaired",
		 in->schedlog_drops, in->events_dropped, in->schedlog_anomalies);
	fact(facts, &n, "recorded by vnoise",
	     h->version[0] ? h->version : "(the file does not say)");
	fact(facts, &n, "file", in->source);
	fact(facts, &n, "host", host);
	fact(facts, &n, "span", span);
	fact(facts, &n, "period", per);
	snprintf(nv, sizeof(nv), "%u", nvcpu);
	fact(facts, &n, "vCPUs", nv);
	fact(facts, &n, "domains", doms);
	fact(facts, &n, "tracing", trace);
	fact(facts, &n, "drops", drops);
	fact(facts, &n, "partial file", partial ? partial : "no: the file was read whole");
	htmlplot_section(f, "Run", NULL);
	htmlplot_facts(f, facts, n);
}

/* The out intervals the vCPUs were preempted (all of them if none was; preemption per period without). */
static void write_hist(FILE *f, const struct hosthtml *h)
{
	uint64_t nr = 0;
	unsigned k;

	for (k = 0; k < HTMLPLOT_BINS; k++)
		nr += h->out_r.count[k];
	htmlplot_section(f, "Out intervals", NULL);
	if (nr)
		htmlplot_histogram(f, "preempted out intervals (vCPU runnable, another task ran)",
				   &h->out_r, "intervals");
	else if (h->nout)
		htmlplot_histogram(f, "out intervals (none was preempted)", &h->out_all,
				   "intervals");
	else
		htmlplot_histogram(f,
				   "preempted time per vCPU and period (no out intervals recorded)",
				   &h->per_period, "periods");
}

static int write_page(FILE *f, const struct hosthtml *h, const struct hostagg *a,
		      const struct hostinfo *in, bool guest, const char *partial)
{
	struct hh_axis ax;
	int rc;

	axis_of(h, in, &ax);
	htmlplot_head(f, guest ? "vnoise combined guest + host report" : "vnoise host report");
	write_facts(f, h, a, in, partial);
	htmlplot_section(f, guest ? "Guest vs hypervisor over time" : "Out-time over time",
			 guest
			     ? "per vCPU: the guest's noise split into guest classes, hypervisor "
			       "classes and the residual nobody explains; hover a bar for its value"
			     : "per vCPU: time preempted, in host IRQs and in VM exits; hover a "
			       "bar for its value");
	rc = write_timelines(f, h, a, &ax, guest);
	if (!rc && guest) {
		htmlplot_section(f, "Clock uncertainty",
				 "bound on the error of converting guest to host time, per domain");
		rc = write_clock(f, h, a, &ax);
	}
	if (rc)
		return rc;
	write_hist(f, h);
	rc = write_sources(f, a, in, guest);
	htmlplot_tail(f);
	return rc;
}

int hosthtml_write(const struct hosthtml *h, const struct hostagg *a, const struct hostinfo *in,
		   bool guest, const char *partial, const char *path)
{
	char tmp[PATH_MAX];
	FILE *f = htmlplot_open(path, tmp, sizeof(tmp));
	int rc;

	if (!f)
		return -errno;
	rc = write_page(f, h, a, in, guest, partial);
	if (rc) {
		htmlplot_abandon(f, tmp);
		return rc;
	}
	return htmlplot_commit(f, tmp, path);
}
