/* SPDX-License-Identifier: MIT */
/*
 * hosttui_model: rows, order, layout and units of top's interactive screen (see hosttui_model.h).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/merge.h"
#include "match/matchview.h"
#include "views/hosttui_model.h"

#define NAME_MIN 12
#define NAME_MAX 24
#define TOP_MIN 10
#define TOP_MAX 22

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static double per_s(uint64_t n, uint64_t span_ns)
{
	return span_ns ? (double)n * 1e9 / (double)span_ns : 0.0;
}

/* ---- columns ---- */

static const struct {
	const char *name, *help;
	int w; /* fixed width; NAME, TOP and SPARK: their least */
} cols[HOSTTUI_NCOLS] = {
	[HOSTTUI_COL_NAME] = { "domain", "domain name (vCPU rows under it)", NAME_MIN },
	[HOSTTUI_COL_STEAL] = { "steal%", "runnable but not running (libvirt vcpu delay)", 6 },
	[HOSTTUI_COL_OUT] = { "out%",
			      "out-time: preempted + waiting + halted + VM exits + host IRQs", 6 },
	[HOSTTUI_COL_PREEMPT] = { "prmpt%", "runnable while another host task ran: preempted", 6 },
	[HOSTTUI_COL_TOP] = { "top preemptor", "host task that ran longest while it was out",
			      TOP_MIN },
	[HOSTTUI_COL_EXITS] = { "exits/s", "VM exits per second", 7 },
	[HOSTTUI_COL_HIRQ] = { "hirq%", "host IRQs, softirqs, vectors while it ran", 6 },
	[HOSTTUI_COL_GUEST] = { "guest%", "--guest: the guest's own noise", 6 },
	[HOSTTUI_COL_HYP] = { "hyp%", "--guest: noise the hypervisor caused", 6 },
	[HOSTTUI_COL_HW] = { "hw%", "--guest: noise neither side explains", 6 },
	[HOSTTUI_COL_SPARK] = { "prmpt% history", "preempted% over the last periods",
				HOSTTUI_SPARK_MIN },
};

const char *hosttui_col_name(int col)
{
	return col >= 0 && col < HOSTTUI_NCOLS ? cols[col].name : "?";
}

const char *hosttui_col_help(int col)
{
	return col >= 0 && col < HOSTTUI_NCOLS ? cols[col].help : "?";
}

static bool col_is_guest(int c)
{
	return c == HOSTTUI_COL_GUEST || c == HOSTTUI_COL_HYP || c == HOSTTUI_COL_HW;
}

/* Total width of the columns in on[] at their least widths, one space between columns. */
static int layout_need(const bool *on)
{
	int need = 0, n = 0;

	for (int c = 0; c < HOSTTUI_NCOLS; c++)
		if (on[c]) {
			need += cols[c].w;
			n++;
		}
	return need + (n > 1 ? n - 1 : 0);
}

int hosttui_layout(int width, bool guest, struct hosttui_colpos *out)
{
	static const int drop[] = { HOSTTUI_COL_SPARK, HOSTTUI_COL_HW,	  HOSTTUI_COL_HIRQ,
				    HOSTTUI_COL_OUT,   HOSTTUI_COL_EXITS, HOSTTUI_COL_HYP,
				    HOSTTUI_COL_STEAL, HOSTTUI_COL_GUEST, HOSTTUI_COL_TOP };
	static const struct {
		int col, upto;
	} grow[] = { { HOSTTUI_COL_NAME, NAME_MAX },
		     { HOSTTUI_COL_TOP, 18 },
		     { HOSTTUI_COL_SPARK, HOSTTUI_HISTORY },
		     { HOSTTUI_COL_TOP, TOP_MAX } };
	bool on[HOSTTUI_NCOLS];
	int w[HOSTTUI_NCOLS], spare, x = 0, n = 0;
	size_t k;

	for (int c = 0; c < HOSTTUI_NCOLS; c++) {
		on[c] = guest || !col_is_guest(c);
		w[c] = cols[c].w;
	}
	for (k = 0; k < sizeof(drop) / sizeof(drop[0]) && layout_need(on) > width; k++)
		on[drop[k]] = false;
	spare = width - layout_need(on);
	/* what is left: a readable name and top preemptor, the sparkline, then a longer top preemptor */
	for (k = 0; k < sizeof(grow) / sizeof(grow[0]) && spare > 0; k++) {
		int c = grow[k].col, add = grow[k].upto - w[c];

		if (!on[c] || add <= 0)
			continue;
		add = add < spare ? add : spare;
		w[c] += add;
		spare -= add;
	}
	for (int c = 0; c < HOSTTUI_NCOLS; c++) {
		if (!on[c])
			continue;
		if (x + w[c] > width) /* narrower than the name and preempted%: cut the last */
			w[c] = width - x;
		if (w[c] <= 0)
			break;
		out[n].col = c;
		out[n].x = x;
		out[n].w = w[c];
		n++;
		x += w[c] + 1;
	}
	return n;
}

/* ---- units ---- */

const char *hosttui_fmt_pct(double v, char *buf, size_t len)
{
	if (v <= 0.0)
		snprintf(buf, len, "0");
	else if (v < 0.01)
		snprintf(buf, len, "<0.01");
	else if (v < 10.0)
		snprintf(buf, len, "%.2f", v);
	else if (v < 99.95)
		snprintf(buf, len, "%.1f", v);
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}

const char *hosttui_fmt_rate(double v, char *buf, size_t len)
{
	static const char units[] = "kMGT";
	int u = -1;

	if (v < 0.5) {
		snprintf(buf, len, "0");
		return buf;
	}
	while (v >= 999.5 && u < 3) {
		v /= 1000.0;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%.0f", v);
	else if (v < 9.95)
		snprintf(buf, len, "%.1f%c", v, units[u]);
	else
		snprintf(buf, len, "%.0f%c", v, units[u]);
	return buf;
}

const char *hosttui_fmt_ns(uint64_t ns, char *buf, size_t len)
{
	static const struct {
		uint64_t div;
		const char *unit;
	} u[] = { { 1000ULL, "us" }, { 1000000ULL, "ms" }, { 1000000000ULL, "s" } };
	int i;

	if (ns < 1000) {
		snprintf(buf, len, "%" PRIu64 "ns", ns);
		return buf;
	}
	if (ns >= 60000000000ULL) {
		uint64_t s = (ns + 500000000ULL) / 1000000000ULL;

		if (s < 6000)
			snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
		else if (s < 360000)
			snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, s / 60 % 60);
		else
			snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, s / 3600 % 24);
		return buf;
	}
	for (i = 2; i > 0 && ns < u[i].div; i--)
		;
	{
		double v = (double)ns / (double)u[i].div;

		/* 999.96us would print as 1000.0us: the next unit instead */
		if (v >= 999.95 && i < 2)
			v = (double)ns / (double)u[++i].div;
		if (v < 9.995)
			snprintf(buf, len, "%.2f%s", v, u[i].unit);
		else if (v < 99.95)
			snprintf(buf, len, "%.1f%s", v, u[i].unit);
		else
			snprintf(buf, len, "%.0f%s", v, u[i].unit);
	}
	return buf;
}

int hosttui_cpu_parse(const char *text, uint64_t *busy, uint64_t *total)
{
	unsigned long long f[10] = { 0 };
	int n;

	if (strncmp(text, "cpu ", 4))
		return -EINVAL;
	n = sscanf(text + 4, "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &f[0], &f[1],
		   &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9]);
	if (n < 4)
		return -EINVAL;
	/* user nice system idle iowait irq softirq steal (guest and guest_nice are in user) */
	*total = 0;
	for (int i = 0; i < 8 && i < n; i++)
		*total += f[i];
	*busy = *total - f[3] - (n > 4 ? f[4] : 0);
	return 0;
}

uint64_t hosttui_period_step(uint64_t cur, int dir)
{
	static const uint64_t steps[] = { 250000000ULL,	  500000000ULL,	 1000000000ULL,
					  2000000000ULL,  5000000000ULL, 10000000000ULL,
					  30000000000ULL, 60000000000ULL };
	const int n = (int)(sizeof(steps) / sizeof(steps[0]));

	if (dir > 0) {
		for (int i = 0; i < n; i++)
			if (steps[i] > cur)
				return steps[i];
		return cur > steps[n - 1] ? cur : steps[n - 1];
	}
	for (int i = n - 1; i >= 0; i--)
		if (steps[i] < cur)
			return steps[i];
	return cur < steps[0] ? cur : steps[0];
}

bool hosttui_filter_match(const char *name, const char *filter)
{
	size_t nl = strlen(name), fl = strlen(filter);

	if (!fl)
		return true;
	for (size_t i = 0; i + fl <= nl; i++)
		if (!strncasecmp(name + i, filter, fl))
			return true;
	return false;
}

/* ---- rows ---- */

void hosttui_model_free(struct hosttui_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->rows[i].det);
	free(m->rows);
	m->rows = NULL;
	m->n = m->cap = 0;
}

int hosttui_model_copy(struct hosttui_model *dst, const struct hosttui_model *src)
{
	struct hosttui_model t = { .periods = src->periods };

	if (src->n) {
		t.rows = calloc(src->n, sizeof(*t.rows));
		if (!t.rows)
			return -ENOMEM;
		t.cap = src->n;
	}
	for (size_t i = 0; i < src->n; i++) {
		t.rows[i] = src->rows[i];
		t.rows[i].det = NULL;
		t.n++;
		if (src->rows[i].det) {
			t.rows[i].det = malloc(sizeof(*t.rows[i].det));
			if (!t.rows[i].det) {
				hosttui_model_free(&t);
				return -ENOMEM;
			}
			*t.rows[i].det = *src->rows[i].det;
		}
	}
	hosttui_model_free(dst);
	*dst = t;
	return 0;
}

void hosttui_model_expand(struct hosttui_model *m, const char *uuid, int on)
{
	for (size_t i = 0; i < m->n; i++) {
		struct hosttui_row *r = &m->rows[i];

		if (r->is_vcpu || (uuid && strcmp(r->uuid, uuid)))
			continue;
		r->expanded = on < 0 ? !r->expanded : on > 0;
	}
}

/* The row of domain uuid (vcpu < 0) or of its vCPU, created (with no history) if missing; -1 if no memory. */
static long row_get(struct hosttui_model *m, const char *uuid, long vcpu)
{
	struct hosttui_row *r;

	for (size_t i = 0; i < m->n; i++) {
		r = &m->rows[i];
		if (!strcmp(r->uuid, uuid) && r->is_vcpu == (vcpu >= 0) &&
		    (vcpu < 0 || r->vcpu == (uint32_t)vcpu))
			return (long)i;
	}
	if (m->n == m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 16;
		struct hosttui_row *nr = realloc(m->rows, nc * sizeof(*nr));

		if (!nr)
			return -1;
		m->rows = nr;
		m->cap = nc;
	}
	r = &m->rows[m->n];
	memset(r, 0, sizeof(*r));
	snprintf(r->uuid, sizeof(r->uuid), "%s", uuid);
	r->is_vcpu = vcpu >= 0;
	r->vcpu = vcpu >= 0 ? (uint32_t)vcpu : 0;
	for (int k = 0; k < HOSTTUI_HISTORY; k++)
		r->hist[k] = -1.0f;
	if (r->is_vcpu) {
		r->det = calloc(1, sizeof(*r->det));
		if (!r->det)
			return -1;
	}
	return (long)m->n++;
}

static uint64_t agg_sum(const struct hostagg_vcpu *v, uint16_t kind, bool count)
{
	uint64_t s = 0;

	for (uint32_t k = 0; k < v->nagg; k++)
		if (v->agg[k].kind == kind)
			s += count ? v->agg[k].count : v->agg[k].total_ns;
	return s;
}

static uint64_t sum_u64(const __u64 *v, int n)
{
	uint64_t t = 0;

	for (int i = 0; i < n; i++)
		t += v[i];
	return t;
}

/* The label of a host aggregate entry (as the text view names them: "irq 24:virtio0-input", "HLT"). */
static void agg_label(const struct hostagg *a, const struct hostagg_aggent *e, char *buf,
		      size_t len)
{
	int k = 0;

	if (e->kind != VN_HOST_AGG_EXIT)
		k = snprintf(buf, len, "%s ", hostview_agg_kind(e->kind));
	if (k >= 0 && (size_t)k < len)
		hostview_agg_name(a, e, buf + k, len - (size_t)k);
}

/* The host IRQ lists of every kind merged, largest total first, into det->irq. */
static void detail_irqs(struct hosttui_detail *det, const struct hostagg *a,
			const struct hostagg_vcpu *v, uint64_t span)
{
	const struct hostagg_aggent *all[3 * HOSTTUI_DETAIL_N], *t;
	uint32_t n = 0;

	for (uint16_t kind = VN_HOST_AGG_IRQ; kind <= VN_HOST_AGG_VECTOR; kind++)
		n += hostagg_agg_sorted(v, kind, all + n, HOSTTUI_DETAIL_N);
	for (uint32_t i = 1; i < n; i++) /* insertion sort: at most 15 */
		for (uint32_t j = i; j > 0 && all[j]->total_ns > all[j - 1]->total_ns; j--) {
			t = all[j];
			all[j] = all[j - 1];
			all[j - 1] = t;
		}
	det->nirq = 0;
	for (uint32_t i = 0; i < n && i < HOSTTUI_DETAIL_N; i++) {
		struct hosttui_item *it = &det->irq[det->nirq++];

		agg_label(a, all[i], it->name, sizeof(it->name));
		it->a = per_s(all[i]->count, span);
		it->b = pct(all[i]->total_ns, span);
	}
}

static void detail_msrc(struct hosttui_item *items, int *n, const struct hostagg *a,
			const struct hostagg_vcpu *v, uint8_t kind, uint64_t span)
{
	const struct hostagg_msrc *s[HOSTTUI_DETAIL_N];
	uint32_t cnt = hostagg_msrc_sorted(v, kind, s, HOSTTUI_DETAIL_N);

	*n = 0;
	for (uint32_t k = 0; k < cnt; k++) {
		struct hosttui_item *it = &items[(*n)++];

		matchview_source_name(a, v, s[k], it->name, sizeof(it->name));
		it->a = pct(s[k]->total_ns, span);
		it->b = (double)s[k]->count;
	}
}

static void vcpu_detail(struct hosttui_detail *det, const struct hostagg *a,
			const struct hostagg_domain *d, const struct hostagg_vcpu *v,
			const struct hostinfo *in, uint64_t span)
{
	const struct hostagg_preempt *pre[HOSTTUI_DETAIL_N];
	const struct hostagg_aggent *ex[HOSTTUI_DETAIL_N];
	uint32_t n = hostagg_preempt_sorted(v, pre, HOSTTUI_DETAIL_N), k;
	struct hostagg_split sp;

	hostagg_out_split(v, &sp);
	memset(det, 0, sizeof(*det));
	det->tid = v->tid;
	det->cpu = v->cpu;
	det->idle_pct = pct(v->idle_ns, v->out_ns);
	hostview_out_line(v, span, 3, det->out_line, sizeof(det->out_line));
	hostview_steal_line(v, span, det->steal_line, sizeof(det->steal_line));
	for (k = 0; k < n; k++) {
		struct hosttui_item *it = &det->pre[det->npre++];

		snprintf(it->name, sizeof(it->name), "%.16s[%u]%s", pre[k]->comm, pre[k]->pid,
			 hostview_is_self(in, pre[k]->pid) ? " (vnoise)" : "");
		it->a = pct(pre[k]->total_ns, sp.out_ns);
		it->b = pct(pre[k]->total_ns, span);
	}
	n = hostagg_agg_sorted(v, VN_HOST_AGG_EXIT, ex, HOSTTUI_DETAIL_N);
	for (k = 0; k < n; k++) {
		struct hosttui_item *it = &det->exit[det->nexit++];

		agg_label(a, ex[k], it->name, sizeof(it->name));
		it->a = per_s(ex[k]->count, span);
		it->b = ex[k]->count ? (double)ex[k]->total_ns / 1e3 / (double)ex[k]->count : 0.0;
	}
	if (!strcmp(d->virt, "qemu"))
		snprintf(det->note, sizeof(det->note), "TCG domain: no VM exits");
	else if (!in->kvm)
		snprintf(det->note, sizeof(det->note), "VM-exit tracing off");
	detail_irqs(det, a, v, span);
	if (v->match.seen) {
		uint64_t ms = v->match.sum.end_ns > v->match.sum.start_ns
				  ? v->match.sum.end_ns - v->match.sum.start_ns
				  : span;

		detail_msrc(det->hyp, &det->nhyp, a, v, VN_HOST_MSRC_HOST, ms);
		detail_msrc(det->guest, &det->nguest, a, v, VN_HOST_MSRC_GUEST, ms);
	}
}

/* "comm[pid]", "<other>" (the overflow entry of a full table) or "-" (none). */
static void preempt_label(char *buf, size_t len, const struct hostagg_preempt *e)
{
	if (!e)
		snprintf(buf, len, "-");
	else if (!e->pid)
		snprintf(buf, len, "%.16s", e->comm);
	else
		snprintf(buf, len, "%.16s[%u]", e->comm, e->pid);
}

/* One vCPU's columns over the period. */
static void vcpu_fill(struct hosttui_row *r, const struct hostagg *a,
		      const struct hostagg_domain *d, const struct hostagg_vcpu *v,
		      const struct hostinfo *in, uint64_t span)
{
	const struct hostagg_preempt *top[1];
	struct hostagg_split sp;

	hostagg_out_split(v, &sp);
	r->seen = true;
	r->running = d->running;
	snprintf(r->name, sizeof(r->name), "%s", d->name);
	r->val[HOSTTUI_COL_STEAL] = pct(v->steal_ns, span);
	r->val[HOSTTUI_COL_OUT] = pct(sp.out_ns, span);
	r->val[HOSTTUI_COL_PREEMPT] = pct(sp.preempt_ns, span);
	r->val[HOSTTUI_COL_EXITS] = per_s(agg_sum(v, VN_HOST_AGG_EXIT, true), span);
	r->val[HOSTTUI_COL_HIRQ] =
	    pct(agg_sum(v, VN_HOST_AGG_IRQ, false) + agg_sum(v, VN_HOST_AGG_SOFTIRQ, false) +
		    agg_sum(v, VN_HOST_AGG_VECTOR, false),
		span);
	preempt_label(r->top, sizeof(r->top), hostagg_preempt_sorted(v, top, 1) ? top[0] : NULL);
	r->has_guest = v->match.seen;
	if (v->match.seen) {
		const struct vn_host_match *s = &v->match.sum;
		uint64_t ms = s->end_ns > s->start_ns ? s->end_ns - s->start_ns : span;

		r->val[HOSTTUI_COL_GUEST] = pct(sum_u64(s->guest_ns, 8), ms);
		r->val[HOSTTUI_COL_HYP] = pct(sum_u64(s->host_ns, VN_HCLASS_MAX), ms);
		r->val[HOSTTUI_COL_HW] = pct(s->residual_ns, ms);
	}
	if (r->det)
		vcpu_detail(r->det, a, d, v, in, span);
}

/* The domain's top preemptor: of each vCPU's top few, the one with the most time over all vCPUs. */
static void dom_top(struct hosttui_row *r, const struct hostagg_domain *d)
{
	const struct hostagg_preempt *best = NULL, *cand[HOSTTUI_DETAIL_N];
	uint64_t best_ns = 0;
	uint32_t nv = d->nvcpus < d->nvcpus_alloc ? d->nvcpus : d->nvcpus_alloc;

	for (uint32_t j = 0; j < nv; j++) {
		uint32_t nc = hostagg_preempt_sorted(&d->vcpus[j], cand, HOSTTUI_DETAIL_N);

		for (uint32_t k = 0; k < nc; k++) {
			uint64_t t = 0;

			for (uint32_t i = 0; i < nv; i++)
				for (uint32_t q = 0; q < d->vcpus[i].npreempt; q++)
					if (d->vcpus[i].preempt[q].pid == cand[k]->pid &&
					    !strcmp(d->vcpus[i].preempt[q].comm, cand[k]->comm))
						t += d->vcpus[i].preempt[q].total_ns;
			if (t > best_ns) {
				best_ns = t;
				best = cand[k];
			}
		}
	}
	preempt_label(r->top, sizeof(r->top), best);
}

/* The domain row: means of its vCPU rows' shares (of the domain's vCPU time), sums of their rates. */
static void dom_fill(struct hosttui_model *m, size_t di, const struct hostagg_domain *d)
{
	struct hosttui_row *r = &m->rows[di];
	int nv = 0, ng = 0;

	memset(r->val, 0, sizeof(r->val));
	r->seen = true;
	r->running = d->running;
	r->nvcpus = d->nvcpus;
	r->has_guest = false;
	snprintf(r->name, sizeof(r->name), "%s", d->name);
	for (size_t i = 0; i < m->n; i++) {
		const struct hosttui_row *v = &m->rows[i];

		if (!v->is_vcpu || !v->seen || strcmp(v->uuid, r->uuid))
			continue;
		nv++;
		for (int c = HOSTTUI_COL_STEAL; c <= HOSTTUI_COL_HIRQ; c++)
			r->val[c] += v->val[c];
		if (v->has_guest) {
			ng++;
			for (int c = HOSTTUI_COL_GUEST; c <= HOSTTUI_COL_HW; c++)
				r->val[c] += v->val[c];
		}
	}
	for (int c = HOSTTUI_COL_STEAL; nv && c <= HOSTTUI_COL_HIRQ; c++)
		if (c != HOSTTUI_COL_EXITS)
			r->val[c] /= nv;
	for (int c = HOSTTUI_COL_GUEST; ng && c <= HOSTTUI_COL_HW; c++)
		r->val[c] /= ng;
	r->has_guest = ng > 0;
	r->seen = nv > 0;
	dom_top(r, d);
}

static void hist_push(struct hosttui_row *r)
{
	memmove(r->hist, r->hist + 1, (HOSTTUI_HISTORY - 1) * sizeof(r->hist[0]));
	r->hist[HOSTTUI_HISTORY - 1] = r->seen ? (float)r->val[HOSTTUI_COL_PREEMPT] : -1.0f;
}

int hosttui_model_update(struct hosttui_model *m, const struct hostagg *cur,
			 const struct hostinfo *in)
{
	uint64_t span = in->end_ns > in->start_ns ? in->end_ns - in->start_ns : 0;
	int err = 0;

	for (size_t i = 0; i < m->n; i++)
		m->rows[i].seen = false;
	for (uint32_t i = 0; i < VN_HOST_MAX_DOMAINS; i++) {
		const struct hostagg_domain *d = &cur->dom[i];
		long di;

		if (!d->seen || !d->uuid[0])
			continue;
		di = row_get(m, d->uuid, -1);
		if (di < 0) {
			err = -ENOMEM;
			continue;
		}
		for (uint32_t j = 0; j < d->nvcpus && j < d->nvcpus_alloc; j++) {
			long vi;

			if (!d->vcpus[j].seen || !d->vcpus[j].periods)
				continue; /* no data this period (bindings outlive a reset) */
			vi = row_get(m, d->uuid, (long)j);
			if (vi < 0) {
				err = -ENOMEM;
				continue;
			}
			vcpu_fill(&m->rows[vi], cur, d, &d->vcpus[j], in, span);
		}
		dom_fill(m, (size_t)di, d);
	}
	for (size_t i = 0; i < m->n; i++)
		hist_push(&m->rows[i]);
	m->periods++;
	return err;
}

/* ---- order ---- */

static const struct hosttui_view *sort_view; /* qsort has no context argument */
static const struct hosttui_model *sort_model;

static int cmp_rows(const void *pa, const void *pb)
{
	const struct hosttui_row *a = &sort_model->rows[*(const size_t *)pa];
	const struct hosttui_row *b = &sort_model->rows[*(const size_t *)pb];
	int s = sort_view->sort, c = 0;

	if (s == HOSTTUI_COL_TOP)
		c = strcmp(a->top, b->top);
	else if (s > HOSTTUI_COL_NAME && s < HOSTTUI_COL_SPARK)
		c = a->val[s] > b->val[s] ? -1 : a->val[s] < b->val[s] ? 1 : 0;
	else if (s == HOSTTUI_COL_SPARK) /* the history's sum: the noisiest over time first */
	{
		double x = 0, y = 0;

		for (int k = 0; k < HOSTTUI_HISTORY; k++) {
			x += a->hist[k] > 0 ? a->hist[k] : 0;
			y += b->hist[k] > 0 ? b->hist[k] : 0;
		}
		c = x > y ? -1 : x < y ? 1 : 0;
	}
	if (!c && a->is_vcpu && b->is_vcpu && !strcmp(a->uuid, b->uuid))
		c = a->vcpu < b->vcpu ? -1 : a->vcpu > b->vcpu;
	if (!c)
		c = strcmp(a->name, b->name);
	if (!c)
		c = strcmp(a->uuid, b->uuid);
	return sort_view->reverse ? -c : c;
}

size_t hosttui_model_order(const struct hosttui_model *m, const struct hosttui_view *v, size_t *idx,
			   size_t max)
{
	size_t *doms, nd = 0, n = 0;

	if (!m->n)
		return 0;
	doms = malloc(m->n * sizeof(*doms));
	if (!doms)
		return 0;
	for (size_t i = 0; i < m->n; i++)
		if (!m->rows[i].is_vcpu && hosttui_filter_match(m->rows[i].name, v->filter))
			doms[nd++] = i;
	sort_view = v;
	sort_model = m;
	qsort(doms, nd, sizeof(*doms), cmp_rows);
	for (size_t k = 0; k < nd && n < max; k++) {
		const struct hosttui_row *d = &m->rows[doms[k]];
		size_t first;

		idx[n++] = doms[k];
		if (!d->expanded)
			continue;
		first = n;
		for (size_t i = 0; i < m->n && n < max; i++)
			if (m->rows[i].is_vcpu && !strcmp(m->rows[i].uuid, d->uuid))
				idx[n++] = i;
		qsort(idx + first, n - first, sizeof(*idx), cmp_rows);
	}
	free(doms);
	return n;
}
