/* SPDX-License-Identifier: MIT */
/*
 * hostagg: sums host records per domain and vCPU for vnoise-host's views (see hostagg.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/hostagg.h"
#include "noise.h"

struct hostagg *hostagg_new(void)
{
	return calloc(1, sizeof(struct hostagg));
}

void hostagg_free(struct hostagg *a)
{
	uint32_t i;

	if (!a)
		return;
	for (i = 0; i < VN_HOST_MAX_DOMAINS; i++) {
		free(a->dom[i].vcpus);
		free(a->dom[i].net);
	}
	free(a);
}

static void vcpu_clear(struct hostagg_vcpu *v)
{
	uint32_t tid = v->tid, cpu = v->cpu;
	bool seen = v->seen;

	memset(v, 0, sizeof(*v));
	v->seen = seen;
	v->tid = tid;
	v->cpu = cpu;
}

void hostagg_reset(struct hostagg *a)
{
	uint32_t i, j;

	for (i = 0; i < VN_HOST_MAX_DOMAINS; i++) {
		for (j = 0; j < a->dom[i].nvcpus_alloc; j++)
			vcpu_clear(&a->dom[i].vcpus[j]);
		if (a->dom[i].net)
			memset(a->dom[i].net, 0, sizeof(*a->dom[i].net));
	}
	a->bad_records = 0;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = src ? strnlen(src, cap - 1) : 0;

	if (n)
		memcpy(dst, src, n);
	dst[n] = 0;
}

int hostagg_domain(struct hostagg *a, uint32_t dom, const char *name, const char *uuid,
		   const char *virt, uint32_t qemu_pid, uint32_t nvcpus, const char *event)
{
	struct hostagg_domain *d;

	if (dom >= VN_HOST_MAX_DOMAINS || nvcpus > VN_HOST_MAX_VCPUS)
		return -EINVAL;
	d = &a->dom[dom];
	if (nvcpus > d->nvcpus_alloc) {
		struct hostagg_vcpu *nv = realloc(d->vcpus, nvcpus * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		memset(nv + d->nvcpus_alloc, 0, (nvcpus - d->nvcpus_alloc) * sizeof(*nv));
		for (uint32_t j = d->nvcpus_alloc; j < nvcpus; j++)
			nv[j].cpu = ~0u;
		d->vcpus = nv;
		d->nvcpus_alloc = nvcpus;
	}
	d->seen = true;
	if (name && *name)
		copy_str(d->name, sizeof(d->name), name);
	if (uuid && *uuid)
		copy_str(d->uuid, sizeof(d->uuid), uuid);
	if (virt && *virt)
		copy_str(d->virt, sizeof(d->virt), virt);
	if (qemu_pid)
		d->qemu_pid = qemu_pid;
	if (nvcpus > d->nvcpus)
		d->nvcpus = nvcpus;
	if (event && !strcmp(event, "stopped")) {
		d->stops++;
		d->running = false;
	} else if (event && (!strcmp(event, "started") || !strcmp(event, "mapped"))) {
		d->starts++;
		d->running = true;
	}
	return 0;
}

static struct hostagg_vcpu *vcpu_at(struct hostagg *a, uint32_t dom, uint32_t vcpu)
{
	if (dom >= VN_HOST_MAX_DOMAINS || !a->dom[dom].seen || vcpu >= a->dom[dom].nvcpus) {
		a->bad_records++;
		return NULL;
	}
	return &a->dom[dom].vcpus[vcpu];
}

const struct hostagg_vcpu *hostagg_vcpu_get(const struct hostagg *a, uint32_t dom, uint32_t vcpu)
{
	if (dom >= VN_HOST_MAX_DOMAINS || !a->dom[dom].seen || vcpu >= a->dom[dom].nvcpus)
		return NULL;
	return &a->dom[dom].vcpus[vcpu];
}

int hostagg_vcpu_tid(struct hostagg *a, uint32_t dom, uint32_t vcpu, uint32_t tid)
{
	struct hostagg_vcpu *v = vcpu_at(a, dom, vcpu);

	if (!v)
		return -EINVAL;
	v->tid = tid;
	v->seen = true;
	return 0;
}

int hostagg_period(struct hostagg *a, const struct vn_host_period *p)
{
	struct hostagg_vcpu *v = vcpu_at(a, p->dom, p->vcpu);

	if (!v)
		return -EINVAL;
	if (p->end_ns < p->start_ns) {
		a->bad_records++;
		return -EINVAL;
	}
	v->seen = true;
	if (p->tid)
		v->tid = p->tid;
	if (p->cpu != ~0u)
		v->cpu = p->cpu;
	if (!v->periods || p->start_ns < v->first_ns)
		v->first_ns = p->start_ns;
	if (p->end_ns > v->last_ns)
		v->last_ns = p->end_ns;
	v->periods++;
	v->flags |= p->flags;
	v->steal_ns += p->steal_ns;
	v->cpu_ns += p->cpu_ns;
	v->exec_ns += p->exec_ns;
	v->run_delay_ns += p->run_delay_ns;
	v->pcount += p->pcount;
	v->out_ns += p->out_ns;
	v->out_periods += p->out_periods;
	v->out_r_ns += p->out_r_ns;
	v->out_s_ns += p->out_s_ns;
	v->idle_ns += p->idle_ns;
	v->wait_ns += p->wait_ns;
	return 0;
}

int hostagg_out(struct hostagg *a, const struct vn_host_out *o)
{
	struct hostagg_vcpu *v = vcpu_at(a, o->dom, o->vcpu);
	uint64_t len;

	if (!v)
		return -EINVAL;
	if (o->end_ns < o->start_ns) {
		a->bad_records++;
		return -EINVAL;
	}
	len = o->end_ns - o->start_ns;
	if (o->flags & VN_HOST_OUT_F_CONT)
		len += v->cur_out_ns;
	v->cur_out_ns = (o->flags & VN_HOST_OUT_F_SPLIT) ? len : 0;
	if (len > v->max_out_ns)
		v->max_out_ns = len;
	if (o->state == 'R' && len > v->max_out_r_ns)
		v->max_out_r_ns = len;
	return 0;
}

int hostagg_run(struct hostagg *a, const struct vn_host_run *r)
{
	struct hostagg_vcpu *v = vcpu_at(a, r->dom, r->vcpu);
	struct hostagg_preempt *e = NULL;
	char comm[VN_HOST_COMM_LEN + 1];
	uint64_t len;
	uint32_t i;
	bool halted;

	if (!v)
		return -EINVAL;
	if (r->end_ns < r->start_ns) {
		a->bad_records++;
		return -EINVAL;
	}
	len = r->end_ns - r->start_ns;
	v->run_ns += len;
	if (r->pid ==
	    0) /* the idle task is not a preemptor: counted in idle_ns by the period record */
		return 0;
	halted = (r->flags & VN_HOST_RUN_F_HALTED) != 0;
	if (halted)
		v->halted_run_ns += len;
	else
		v->preempt_ns += len;
	memcpy(comm, r->comm, VN_HOST_COMM_LEN);
	comm[VN_HOST_COMM_LEN] = 0;
	for (i = 0; i < v->npreempt; i++) {
		if (v->preempt[i].pid == r->pid && !strcmp(v->preempt[i].comm, comm)) {
			e = &v->preempt[i];
			break;
		}
	}
	if (!e) {
		if (v->npreempt < HOSTAGG_MAX_PREEMPT) {
			e = &v->preempt[v->npreempt++];
			memcpy(e->comm, comm, sizeof(comm));
			e->pid = r->pid;
		} else {
			e = &v->preempt[HOSTAGG_MAX_PREEMPT];
			strcpy(e->comm, "<other>");
			e->pid = 0;
		}
	}
	if (halted) {
		e->halted_ns += len;
		if (!e->halted_count || e->last_halted_start_ns != r->out_start_ns) {
			e->halted_count++;
			e->last_halted_start_ns = r->out_start_ns;
		}
		return 0;
	}
	e->total_ns += len;
	if (!e->count || e->last_out_start_ns != r->out_start_ns) {
		e->count++;
		e->last_out_start_ns = r->out_start_ns;
	}
	return 0;
}

int hostagg_agg(struct hostagg *a, const struct vn_host_agg *g)
{
	struct hostagg_vcpu *v = vcpu_at(a, g->dom, g->vcpu);
	struct hostagg_aggent *e = NULL;
	uint32_t i;

	if (!v)
		return -EINVAL;
	for (i = 0; i < v->nagg; i++) {
		struct hostagg_aggent *c = &v->agg[i];

		if (c->kind == g->kind && c->isa == g->isa && c->id == g->id) {
			e = c;
			break;
		}
	}
	if (!e) {
		if (v->nagg >= HOSTAGG_MAX_AGG) {
			v->agg_dropped += g->count;
			return 0;
		}
		e = &v->agg[v->nagg++];
		e->kind = g->kind;
		e->isa = g->isa;
		e->id = g->id;
	}
	e->count += g->count;
	e->total_ns += g->total_ns;
	if (g->max_ns > e->max_ns)
		e->max_ns = g->max_ns;
	return 0;
}

int hostagg_worst(struct hostagg *a, const struct vn_host_worst *w)
{
	struct hostagg_vcpu *v = vcpu_at(a, w->dom, w->vcpu);
	unsigned __int128 sum;
	uint32_t i;

	if (!v)
		return -EINVAL; /* counted by vcpu_at() */
	if (w->nparts > VN_HOST_WORST_PARTS)
		goto bad;
	sum = (unsigned __int128)w->other_ns + w->residual_ns;
	for (i = 0; i < w->nparts; i++) {
		const struct vn_host_wpart *p = &w->part[i];

		if ((p->kind == VN_HOST_MSRC_GUEST && p->cls >= VN_CLASS_MAX) ||
		    (p->kind == VN_HOST_MSRC_HOST && p->cls >= VN_HCLASS_MAX) ||
		    (p->kind != VN_HOST_MSRC_GUEST && p->kind != VN_HOST_MSRC_HOST))
			goto bad;
		sum += p->ns;
	}
	if (sum != w->duration_ns)
		goto bad;
	if (w->duration_ns <= v->match.worst.duration_ns)
		return 0;
	v->match.worst = *w;
	for (i = 0; i < VN_HOST_WORST_PARTS; i++)
		v->match.worst.part[i].comm[VN_HOST_COMM_LEN - 1] = 0;
	return 0;
bad:
	a->bad_records++;
	return -EINVAL;
}

int hostagg_match(struct hostagg *a, const struct vn_host_match *m)
{
	struct hostagg_vcpu *v = vcpu_at(a, m->dom, m->vcpu);
	struct vn_host_match *t;
	int i;

	if (!v || m->end_ns < m->start_ns)
		return -EINVAL;
	t = &v->match.sum;
	v->match.seen = true;
	v->match.periods++;
	t->gaps += m->gaps;
	t->gap_ns += m->gap_ns;
	t->max_gap_ns = m->max_gap_ns > t->max_gap_ns ? m->max_gap_ns : t->max_gap_ns;
	t->runtime_ns += m->runtime_ns;
	for (i = 0; i < 8; i++) {
		t->guest_ns[i] += m->guest_ns[i];
		t->gonly_ns[i] += m->gonly_ns[i];
	}
	for (i = 0; i < VN_HCLASS_MAX; i++)
		t->host_ns[i] += m->host_ns[i];
	t->residual_ns += m->residual_ns;
	t->reduced_ns += m->reduced_ns;
	t->big_gaps += m->big_gaps;
	t->big_matched += m->big_matched;
	t->big_explained += m->big_explained;
	t->big_guest += m->big_guest;
	t->latency_max_ns =
	    m->latency_max_ns > t->latency_max_ns ? m->latency_max_ns : t->latency_max_ns;
	t->latency_sum_ns += m->latency_sum_ns;
	t->latency_gaps += m->latency_gaps;
	t->uncertainty_max_ns = m->uncertainty_max_ns > t->uncertainty_max_ns
				    ? m->uncertainty_max_ns
				    : t->uncertainty_max_ns;
	t->gonly_gaps += m->gonly_gaps;
	t->gonly_gap_ns += m->gonly_gap_ns;
	if (!t->start_ns || m->start_ns < t->start_ns)
		t->start_ns = m->start_ns;
	if (m->end_ns > t->end_ns)
		t->end_ns = m->end_ns;
	return 0;
}

int hostagg_msrc(struct hostagg *a, const struct vn_host_msrc *s)
{
	struct hostagg_vcpu *v = vcpu_at(a, s->dom, s->vcpu);
	struct hostagg_match *m;
	struct hostagg_msrc *e = NULL;
	char comm[VN_HOST_COMM_LEN + 1];
	uint32_t i;

	if (!v || s->kind > VN_HOST_MSRC_GONLY)
		return -EINVAL;
	m = &v->match;
	if (s->kind == VN_HOST_MSRC_GUEST && s->cls == VN_CLASS_SOFTIRQ &&
	    s->id < HOSTAGG_SOFTIRQS) {
		m->softirq_ns[s->id] += s->total_ns;
		m->softirq_count[s->id] += s->count;
	} else if (s->kind == VN_HOST_MSRC_GUEST && s->cls == VN_CLASS_IRQ && s->id < VN_VEC_BASE) {
		m->devirq_ns += s->total_ns;
		m->devirq_count += s->count;
	}
	copy_str(comm, sizeof(comm), s->comm);
	for (i = 0; i < m->nsrc && !e; i++)
		if (m->src[i].kind == s->kind && m->src[i].cls == s->cls && m->src[i].id == s->id &&
		    !strcmp(m->src[i].comm, comm))
			e = &m->src[i];
	if (!e) {
		if (m->nsrc >= HOSTAGG_MAX_MSRC) {
			m->src_dropped++;
			return 0;
		}
		e = &m->src[m->nsrc++];
		e->kind = s->kind;
		e->cls = s->cls;
		e->id = s->id;
		memcpy(e->comm, comm, sizeof(comm));
	}
	e->count += s->count;
	e->total_ns += s->total_ns;
	if (s->max_ns > e->max_ns)
		e->max_ns = s->max_ns;
	m->seen = true;
	return 0;
}

int hostagg_chan(struct hostagg *a, const struct vn_host_chan *c)
{
	if (c->dom >= VN_HOST_MAX_DOMAINS || !a->dom[c->dom].seen) {
		a->bad_records++;
		return -EINVAL;
	}
	a->dom[c->dom].chan = *c;
	a->dom[c->dom].chan_seen = true;
	return 0;
}

bool hostagg_has_match(const struct hostagg *a)
{
	uint32_t i, j;

	for (i = 0; i < VN_HOST_MAX_DOMAINS; i++) {
		if (a->dom[i].chan_seen)
			return true;
		for (j = 0; j < a->dom[i].nvcpus_alloc; j++)
			if (a->dom[i].vcpus[j].match.seen)
				return true;
	}
	return false;
}

/* The domain's flow table, allocated on first use; NULL (bad_records counted, or ENOMEM) when the domain
 * is not bound. */
static struct hostagg_net *net_of(struct hostagg *a, uint32_t dom, int *err)
{
	struct hostagg_domain *d;

	*err = -EINVAL;
	if (dom >= VN_HOST_MAX_DOMAINS || !a->dom[dom].seen) {
		a->bad_records++;
		return NULL;
	}
	d = &a->dom[dom];
	if (!d->net) {
		d->net = calloc(1, sizeof(*d->net));
		if (!d->net) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	return d->net;
}

static bool flow_key_eq(const struct vn_host_flow *a, const struct vn_host_flow *b)
{
	return a->dir == b->dir && a->ipver == b->ipver && a->proto == b->proto &&
	       a->ethertype == b->ethertype && a->sport == b->sport && a->dport == b->dport &&
	       a->flags == b->flags && !memcmp(a->src, b->src, sizeof(a->src)) &&
	       !memcmp(a->dst, b->dst, sizeof(a->dst)) && !strncmp(a->tap, b->tap, sizeof(a->tap));
}

static void span_add(struct vn_host_flow *r, const struct vn_host_flow *f)
{
	if (!r->start_ns || f->start_ns < r->start_ns)
		r->start_ns = f->start_ns;
	if (f->end_ns > r->end_ns)
		r->end_ns = f->end_ns;
}

int hostagg_flow(struct hostagg *a, const struct vn_host_flow *f)
{
	struct hostagg_net *n;
	struct vn_host_flow *r = NULL;
	uint32_t i;
	int err;

	if (f->dir >= VN_HOST_FLOW_NDIR || f->kind > VN_HOST_FLOW_KIND_OTHER ||
	    f->end_ns < f->start_ns) {
		a->bad_records++;
		return -EINVAL;
	}
	n = net_of(a, f->dom, &err);
	if (!n)
		return err;
	if (f->kind == VN_HOST_FLOW_KIND_FLOW) {
		for (i = 0; i < n->nflows && !r; i++)
			if (flow_key_eq(&n->flow[i], f))
				r = &n->flow[i];
		if (!r && n->nflows < HOSTAGG_MAX_FLOWS) {
			r = &n->flow[n->nflows++];
			*r = *f;
			r->tap[sizeof(r->tap) - 1] = 0;
			r->packets = r->bytes = 0;
			r->start_ns = r->end_ns = 0;
		} else if (!r) {
			n->flows_dropped++;
		}
	}
	if (!r) {
		r = &n->other[f->dir];
		r->kind = VN_HOST_FLOW_KIND_OTHER;
		r->dir = f->dir;
		r->dom = f->dom;
	}
	r->packets += f->packets;
	r->bytes += f->bytes;
	span_add(r, f);
	return 0;
}

int hostagg_tap(struct hostagg *a, const struct vn_host_tap *t)
{
	struct hostagg_net *n;
	struct hostagg_tap *e = NULL;
	char name[VN_HOST_COMM_LEN + 1];
	uint32_t i;
	int err;

	if (t->end_ns < t->start_ns || t->state > VN_HOST_TAP_FAILED) {
		a->bad_records++;
		return -EINVAL;
	}
	n = net_of(a, t->dom, &err);
	if (!n)
		return err;
	copy_str(name, sizeof(name), t->tap);
	for (i = 0; i < n->ntaps && !e; i++)
		if (!strcmp(n->tap[i].tap, name))
			e = &n->tap[i];
	if (!e) {
		if (n->ntaps >= HOSTAGG_MAX_TAPS) {
			n->taps_dropped++;
			return 0;
		}
		e = &n->tap[n->ntaps++];
		memcpy(e->tap, name, sizeof(name));
	}
	e->periods++;
	if (t->state == VN_HOST_TAP_FAILED)
		e->failed++;
	for (i = 0; i < VN_HOST_FLOW_NDIR; i++) {
		e->packets[i] += t->packets[i];
		e->bytes[i] += t->bytes[i];
		e->dropped[i] += t->dropped[i];
		e->overflow[i] += t->overflow[i];
	}
	e->truncated += t->truncated;
	return 0;
}

bool hostagg_has_net(const struct hostagg *a)
{
	uint32_t i;

	for (i = 0; i < VN_HOST_MAX_DOMAINS; i++)
		if (a->dom[i].net && (a->dom[i].net->ntaps || a->dom[i].net->nflows))
			return true;
	return false;
}

/* Insertion into a sorted top list of pointers, largest total first. */
static uint32_t top_insert(const void **out, uint32_t n, uint32_t max, const void *p, uint64_t key,
			   uint64_t (*keyof)(const void *))
{
	uint32_t i;

	if (n == max && (n == 0 || keyof(out[n - 1]) >= key))
		return n;
	i = n < max ? n++ : n - 1;
	while (i > 0 && keyof(out[i - 1]) < key) {
		out[i] = out[i - 1];
		i--;
	}
	out[i] = p;
	return n;
}

static uint64_t preempt_key(const void *p)
{
	return ((const struct hostagg_preempt *)p)->total_ns;
}

static uint64_t agg_key(const void *p)
{
	return ((const struct hostagg_aggent *)p)->total_ns;
}

uint32_t hostagg_preempt_sorted(const struct hostagg_vcpu *v, const struct hostagg_preempt **out,
				uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i <= HOSTAGG_MAX_PREEMPT; i++) {
		const struct hostagg_preempt *e = &v->preempt[i];

		if (i >= v->npreempt && i != HOSTAGG_MAX_PREEMPT)
			continue;
		if (!e->count)
			continue;
		n = top_insert((const void **)out, n, max, e, e->total_ns, preempt_key);
	}
	return n;
}

static uint64_t halted_key(const void *p)
{
	return ((const struct hostagg_preempt *)p)->halted_ns;
}

uint32_t hostagg_halted_sorted(const struct hostagg_vcpu *v, const struct hostagg_preempt **out,
			       uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i <= HOSTAGG_MAX_PREEMPT; i++) {
		const struct hostagg_preempt *e = &v->preempt[i];

		if (i >= v->npreempt && i != HOSTAGG_MAX_PREEMPT)
			continue;
		if (!e->halted_count)
			continue;
		n = top_insert((const void **)out, n, max, e, e->halted_ns, halted_key);
	}
	return n;
}

void hostagg_out_split(const struct hostagg_vcpu *v, struct hostagg_split *s)
{
	uint64_t runnable = v->wait_ns < v->out_ns ? v->wait_ns : v->out_ns;

	memset(s, 0, sizeof(*s));
	s->preempt_ns = v->preempt_ns < runnable ? v->preempt_ns : runnable;
	s->wait_ns = runnable - s->preempt_ns;
	s->halted_ns = v->out_ns - runnable;
	s->switched_ns = v->out_ns;
	for (uint32_t k = 0; k < v->nagg; k++) {
		const struct hostagg_aggent *g = &v->agg[k];

		if (g->kind == VN_HOST_AGG_EXIT)
			s->exit_ns += g->total_ns;
		else if (g->kind == VN_HOST_AGG_IRQ || g->kind == VN_HOST_AGG_SOFTIRQ ||
			 g->kind == VN_HOST_AGG_VECTOR)
			s->irq_ns += g->total_ns;
	}
	s->out_ns = s->switched_ns + s->exit_ns + s->irq_ns;
}

static uint64_t msrc_key(const void *p)
{
	return ((const struct hostagg_msrc *)p)->total_ns;
}

uint32_t hostagg_msrc_sorted(const struct hostagg_vcpu *v, uint8_t kind,
			     const struct hostagg_msrc **out, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < v->match.nsrc; i++)
		if (v->match.src[i].kind == kind)
			n = top_insert((const void **)out, n, max, &v->match.src[i],
				       v->match.src[i].total_ns, msrc_key);
	return n;
}

static uint64_t flow_key(const void *p)
{
	return ((const struct vn_host_flow *)p)->bytes;
}

uint32_t hostagg_flows_sorted(const struct hostagg_domain *d, unsigned dir,
			      const struct vn_host_flow **out, uint32_t max)
{
	uint32_t i, n = 0;

	if (!d->net)
		return 0;
	for (i = 0; i < d->net->nflows; i++)
		if (d->net->flow[i].dir == dir)
			n = top_insert((const void **)out, n, max, &d->net->flow[i],
				       d->net->flow[i].bytes, flow_key);
	return n;
}

uint32_t hostagg_agg_sorted(const struct hostagg_vcpu *v, uint16_t kind,
			    const struct hostagg_aggent **out, uint32_t max)
{
	uint32_t i, n = 0;

	for (i = 0; i < v->nagg; i++)
		if (v->agg[i].kind == kind)
			n = top_insert((const void **)out, n, max, &v->agg[i], v->agg[i].total_ns,
				       agg_key);
	return n;
}

/* Basic exit reasons of Intel VMX (SDM vol. 3, appendix C) and the common AMD SVM exit codes. */
static const char *const vmx_names[] = {
	[0] = "EXCEPTION_NMI",
	[1] = "EXTERNAL_INTERRUPT",
	[2] = "TRIPLE_FAULT",
	[3] = "INIT_SIGNAL",
	[7] = "INTERRUPT_WINDOW",
	[8] = "NMI_WINDOW",
	[9] = "TASK_SWITCH",
	[10] = "CPUID",
	[12] = "HLT",
	[13] = "INVD",
	[14] = "INVLPG",
	[15] = "RDPMC",
	[16] = "RDTSC",
	[18] = "VMCALL",
	[28] = "CR_ACCESS",
	[29] = "DR_ACCESS",
	[30] = "IO_INSTRUCTION",
	[31] = "MSR_READ",
	[32] = "MSR_WRITE",
	[33] = "INVALID_STATE",
	[36] = "MWAIT_INSTRUCTION",
	[37] = "MONITOR_TRAP_FLAG",
	[39] = "MONITOR_INSTRUCTION",
	[40] = "PAUSE_INSTRUCTION",
	[41] = "MCE_DURING_VMENTRY",
	[43] = "TPR_BELOW_THRESHOLD",
	[44] = "APIC_ACCESS",
	[45] = "EOI_INDUCED",
	[46] = "GDTR_IDTR",
	[47] = "LDTR_TR",
	[48] = "EPT_VIOLATION",
	[49] = "EPT_MISCONFIG",
	[50] = "INVEPT",
	[51] = "RDTSCP",
	[52] = "PREEMPTION_TIMER",
	[53] = "INVVPID",
	[54] = "WBINVD",
	[55] = "XSETBV",
	[56] = "APIC_WRITE",
	[57] = "RDRAND",
	[58] = "INVPCID",
	[59] = "VMFUNC",
	[62] = "PML_FULL",
	[63] = "XSAVES",
	[64] = "XRSTORS",
	[67] = "UMWAIT",
	[68] = "TPAUSE",
	[74] = "BUS_LOCK",
	[75] = "NOTIFY",
};

const char *hostagg_exit_name(uint16_t isa, uint32_t reason)
{
	if (isa == 1) {
		reason &= 0xffff; /* basic exit reason */
		if (reason < sizeof(vmx_names) / sizeof(vmx_names[0]))
			return vmx_names[reason];
		return NULL;
	}
	if (isa == 2) {
		switch (reason) {
		case 0x060:
			return "INTR";
		case 0x061:
			return "NMI";
		case 0x064:
			return "VINTR";
		case 0x072:
			return "CPUID";
		case 0x078:
			return "HLT";
		case 0x07b:
			return "IOIO";
		case 0x07c:
			return "MSR";
		case 0x077:
			return "PAUSE";
		case 0x081:
			return "VMMCALL";
		case 0x400:
			return "NPF";
		case 0x401:
			return "AVIC_INCOMPLETE_IPI";
		case 0x402:
			return "AVIC_UNACCELERATED_ACCESS";
		default:
			return NULL;
		}
	}
	return NULL;
}

/* ---- record chunks: one table for the live engine and the replay of a file ---- */

/* One record type: its chunk, its size and the feed function, behind a common signature. */
struct chunk_route {
	uint16_t type; /* enum vn_host_chunk_type */
	uint16_t size; /* sizeof the record */
	int (*feed)(struct hostagg *a, const void *rec);
};

#define ROUTE_FEED(name, type)                                      \
	static int feed_##name(struct hostagg *a, const void *rec)  \
	{                                                           \
		return hostagg_##name(a, (const struct type *)rec); \
	}
ROUTE_FEED(period, vn_host_period)
ROUTE_FEED(out, vn_host_out)
ROUTE_FEED(run, vn_host_run)
ROUTE_FEED(agg, vn_host_agg)
ROUTE_FEED(match, vn_host_match)
ROUTE_FEED(msrc, vn_host_msrc)
ROUTE_FEED(chan, vn_host_chan)
ROUTE_FEED(flow, vn_host_flow)
ROUTE_FEED(tap, vn_host_tap)
ROUTE_FEED(worst, vn_host_worst)
#undef ROUTE_FEED

static const struct chunk_route routes[] = {
	{ VN_CHUNK_HOST_PERIOD, sizeof(struct vn_host_period), feed_period },
	{ VN_CHUNK_HOST_OUT, sizeof(struct vn_host_out), feed_out },
	{ VN_CHUNK_HOST_RUN, sizeof(struct vn_host_run), feed_run },
	{ VN_CHUNK_HOST_AGG, sizeof(struct vn_host_agg), feed_agg },
	{ VN_CHUNK_HOST_MATCH, sizeof(struct vn_host_match), feed_match },
	{ VN_CHUNK_HOST_MSRC, sizeof(struct vn_host_msrc), feed_msrc },
	{ VN_CHUNK_HOST_CHAN, sizeof(struct vn_host_chan), feed_chan },
	{ VN_CHUNK_HOST_FLOW, sizeof(struct vn_host_flow), feed_flow },
	{ VN_CHUNK_HOST_TAP, sizeof(struct vn_host_tap), feed_tap },
	{ VN_CHUNK_HOST_WORST, sizeof(struct vn_host_worst), feed_worst },
};

/* Room for any one record, aligned for all of them. */
union chunk_rec {
	struct vn_host_period period;
	struct vn_host_out out;
	struct vn_host_run run;
	struct vn_host_agg agg;
	struct vn_host_match match;
	struct vn_host_msrc msrc;
	struct vn_host_chan chan;
	struct vn_host_flow flow;
	struct vn_host_tap tap;
	struct vn_host_worst worst;
};

int hostagg_feed_chunk(struct hostagg *a, uint16_t type, const void *payload, size_t len)
{
	const struct chunk_route *r = NULL;
	union chunk_rec rec;

	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]) && !r; i++)
		if (routes[i].type == type)
			r = &routes[i];
	if (!r)
		return 0;
	if (len % r->size)
		return -EINVAL;
	/* a file's payload is not aligned for the struct in general: copy each record out */
	for (size_t off = 0; off < len; off += r->size) {
		memcpy(&rec, (const char *)payload + off, r->size);
		(void)r->feed(a, &rec);
	}
	return 1;
}

int hostagg_set_irq_name(struct hostagg *a, uint32_t irq, const char *name)
{
	uint32_t i;

	if (!name || !*name)
		return -EINVAL;
	for (i = 0; i < a->nirqnames; i++)
		if (a->irq_id[i] == irq)
			break;
	if (i == a->nirqnames) {
		if (a->nirqnames == HOSTAGG_MAX_IRQNAMES)
			return -ENOSPC;
		a->nirqnames++;
		a->irq_id[i] = irq;
	}
	copy_str(a->irq_name[i], sizeof(a->irq_name[i]), name);
	return 0;
}

const char *hostagg_irq_name(const struct hostagg *a, uint32_t irq)
{
	uint32_t i;

	for (i = 0; i < a->nirqnames; i++)
		if (a->irq_id[i] == irq)
			return a->irq_name[i];
	return NULL;
}
