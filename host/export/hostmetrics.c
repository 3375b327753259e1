/* SPDX-License-Identifier: MIT */
/*
 * hostmetrics: the per-host Prometheus exporter (see hostmetrics.h; bounds and the cardinality rule in
 * hostmetrics_priv.h). The main thread adds each period's aggregate into bounded counters of its own and
 * publishes the whole exposition text (host/export/promtext: the HTTP server thread only copies it).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "export/hostmetrics.h"
#include "util/monotime.h"
#include "export/remotewrite.h"
#include "export/hostmetrics_priv.h"
#include "export/httpd.h"
#include "export/promtext.h"
#include "export/promfmt.h"
#include "attrib/merge.h"
#include "attrib/classes.h"
#include "channel/dtlregion.h"
#include "match/match.h"
#include "match/taskclass.h"
#include "util/log.h"
#include "util/version.h"
#include "dtl.h"

#define HM_NCLS VN_DTL_CLASS_MAX /* preemptor classes; VN_DTL_CLASS_NONE is "unknown" here */
#define HM_NPRE (HOSTAGG_MAX_PREEMPT + 1u)

/* The parts of the out-time (struct hostagg_split), label cause= of vnoise_host_vcpu_out_seconds_total. */
#define HM_NOUT 5
static const char *const out_cause[HM_NOUT] = { "preempted", "waiting", "halted", "exits", "irq" };

/* A preemptor cause: class and comm (never a pid). */
struct hm_cause {
	uint8_t cls; /* enum vn_dtl_class */
	char comm[VN_HOST_COMM_LEN + 1];
	uint64_t ns, count;
};

/* Exit reasons or host IRQ sources of one vCPU: named entries, then "other". */
struct hm_aggent {
	uint16_t kind, isa;
	uint32_t id;
	char name[48];
	uint64_t ns, count;
};

struct hm_table {
	uint32_t n;
	struct hm_aggent e[HOSTMETRICS_MAX_AGGS];
	uint64_t other_ns, other_count;
};

struct hm_vcpu {
	bool seen, has_match;
	int64_t pcpu; /* latest pCPU, -1 unknown */
	uint64_t periods, steal_ns, cpu_ns, out_ns, out_part[HM_NOUT], out_n, idle_ns, wait_ns;
	uint32_t ncause;
	struct hm_cause cause[HOSTMETRICS_TOP_CAUSES];
	uint64_t other_ns[HM_NCLS], other_count[HM_NCLS];
	struct hm_table exits, irqs;
	uint64_t gaps, gap_ns, guest_ns[VN_CLASS_MAX], host_ns[VN_HCLASS_MAX], residual_ns;
};

struct hm_domain {
	bool used, running, chan_seen;
	char name[HOSTAGG_NAME_LEN], uuid[40], virt[8];
	uint64_t last_seen; /* m->periods when it was last fed */
	uint64_t starts;
	uint64_t unc_ns; /* clock uncertainty (UINT64_MAX: no model) */
	int64_t offset_ns;
	bool region_seen; /* a channel had a region file (live: hostinfo's "dtl" entries) */
	uint64_t region_refused, region_lost;
	uint32_t nvcpus;
	struct hm_vcpu *vcpus;
};

struct hostmetrics {
	struct promtext text; /* what a scrape gets */
	struct httpd *http;
	struct taskclass *tc;
	/* run-wide facts of the latest period */
	char dispatch[8];
	bool irqs, kvm, guest;
	uint64_t period_ns, end_ns;
	/* run-wide counters (monotonic: the maximum seen) */
	uint64_t periods, self_cpu_ns, bpf_events, bpf_run_ns, drops, anomalies, events_dropped,
	    reconnects, bad_records, evicted, cost_ns;
	/* what the classifier was told of each engine domain index */
	uint32_t tc_qemu[VN_HOST_MAX_DOMAINS];
	uint64_t tc_key[VN_HOST_MAX_DOMAINS];
	struct hm_domain dom[HOSTMETRICS_MAX_DOMAINS];
	struct remotewrite *rw; /* serve --remote-write: each period's text is pushed (not owned) */
};

static uint64_t umax(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ---- adding a period ---- */

static const char *cls_name(uint8_t cls)
{
	if (cls == VN_DTL_CLASS_NONE || cls >= HM_NCLS)
		return "unknown";
	return dtlregion_class_name(cls);
}

static int cause_cmp(const void *x, const void *y)
{
	const struct hm_cause *a = x, *b = y;

	return a->ns < b->ns ? 1 : a->ns > b->ns ? -1 : 0;
}

/* This period's preemptors of v merged by (class, comm), largest first, into loc; returns how many. */
static uint32_t period_causes(struct hostmetrics *m, uint32_t di, const struct hostagg_vcpu *v,
			      uint64_t now, struct hm_cause *loc)
{
	const struct hostagg_preempt *pre[HM_NPRE];
	uint32_t k = hostagg_preempt_sorted(v, pre, HM_NPRE), n = 0;

	for (uint32_t i = 0; i < k; i++) {
		uint8_t cls = pre[i]->pid
				  ? (uint8_t)taskclass_of(m->tc, di, pre[i]->pid, pre[i]->comm, now)
				  : VN_DTL_CLASS_NONE; /* the engine's "<other>" */
		uint32_t j;

		if (cls >= HM_NCLS || cls == VN_DTL_CLASS_IDLE)
			cls = VN_DTL_CLASS_NONE;
		for (j = 0; j < n; j++)
			if (loc[j].cls == cls && !strcmp(loc[j].comm, pre[i]->comm))
				break;
		if (j == n) {
			memset(&loc[n], 0, sizeof(loc[n]));
			loc[n].cls = cls;
			memcpy(loc[n].comm, pre[i]->comm, sizeof(loc[n].comm));
			n++;
		}
		loc[j].ns += pre[i]->total_ns;
		loc[j].count += pre[i]->count;
	}
	qsort(loc, n, sizeof(loc[0]), cause_cmp);
	return n;
}

static void take_causes(struct hostmetrics *m, uint32_t di, struct hm_vcpu *hv,
			const struct hostagg_vcpu *v, uint64_t now)
{
	struct hm_cause loc[HM_NPRE];
	uint32_t n = period_causes(m, di, v, now, loc);

	for (uint32_t i = 0; i < n; i++) {
		struct hm_cause *c = NULL;

		for (uint32_t j = 0; j < hv->ncause && !c; j++)
			if (hv->cause[j].cls == loc[i].cls &&
			    !strcmp(hv->cause[j].comm, loc[i].comm))
				c = &hv->cause[j];
		/* a task named "other" joins its class's other series (one label set, never two) */
		if (!c && loc[i].cls != VN_DTL_CLASS_NONE && hv->ncause < HOSTMETRICS_TOP_CAUSES &&
		    strcmp(loc[i].comm, "other")) {
			c = &hv->cause[hv->ncause++];
			c->cls = loc[i].cls;
			memcpy(c->comm, loc[i].comm, sizeof(c->comm));
		}
		if (c) {
			c->ns += loc[i].ns;
			c->count += loc[i].count;
		} else {
			hv->other_ns[loc[i].cls] += loc[i].ns;
			hv->other_count[loc[i].cls] += loc[i].count;
		}
	}
}

static void take_aggs(struct hm_table *t, const struct hostagg *a, const struct hostagg_vcpu *v,
		      uint16_t kind)
{
	const struct hostagg_aggent *ag[HOSTAGG_MAX_AGG];
	uint32_t n = hostagg_agg_sorted(v, kind, ag, HOSTAGG_MAX_AGG);

	for (uint32_t i = 0; i < n; i++) {
		struct hm_aggent *e = NULL;

		for (uint32_t j = 0; j < t->n && !e; j++)
			if (t->e[j].kind == kind && t->e[j].isa == ag[i]->isa &&
			    t->e[j].id == ag[i]->id)
				e = &t->e[j];
		if (!e && t->n < HOSTMETRICS_MAX_AGGS) {
			e = &t->e[t->n++];
			e->kind = kind;
			e->isa = ag[i]->isa;
			e->id = ag[i]->id;
			hostview_agg_name(a, ag[i], e->name, sizeof(e->name));
		}
		if (e) {
			e->ns += ag[i]->total_ns;
			e->count += ag[i]->count;
		} else {
			t->other_ns += ag[i]->total_ns;
			t->other_count += ag[i]->count;
		}
	}
}

static void take_match(struct hm_vcpu *hv, const struct hostagg_match *mt)
{
	hv->has_match = true;
	hv->gaps += mt->sum.gaps;
	hv->gap_ns += mt->sum.gap_ns;
	for (int k = 0; k < (int)VN_CLASS_MAX; k++)
		hv->guest_ns[k] += mt->sum.guest_ns[k];
	for (int k = 0; k < (int)VN_HCLASS_MAX; k++)
		hv->host_ns[k] += mt->sum.host_ns[k];
	hv->residual_ns += mt->sum.residual_ns;
}

static void take_vcpu(struct hostmetrics *m, uint32_t di, const struct hostagg *a,
		      struct hm_vcpu *hv, const struct hostagg_vcpu *v, uint64_t now)
{
	struct hostagg_split sp;

	hostagg_out_split(v, &sp);
	hv->seen = true;
	hv->pcpu = v->cpu == ~0u ? -1 : (int64_t)v->cpu;
	hv->periods += v->periods;
	hv->steal_ns += v->steal_ns;
	hv->cpu_ns += v->cpu_ns;
	hv->out_ns += sp.out_ns;
	hv->out_part[0] += sp.preempt_ns;
	hv->out_part[1] += sp.wait_ns;
	hv->out_part[2] += sp.halted_ns;
	hv->out_part[3] += sp.exit_ns;
	hv->out_part[4] += sp.irq_ns;
	hv->out_n += v->out_periods;
	hv->idle_ns += v->idle_ns;
	hv->wait_ns += v->wait_ns;
	take_causes(m, di, hv, v, now);
	take_aggs(&hv->exits, a, v, VN_HOST_AGG_EXIT);
	for (uint16_t kind = VN_HOST_AGG_IRQ; kind <= VN_HOST_AGG_VECTOR; kind++)
		take_aggs(&hv->irqs, a, v, kind);
	if (v->match.seen)
		take_match(hv, &v->match);
}

/* The exporter's slot of engine domain d: the same UUID (else name), a free one, or the one not seen for
 * longest (evicted). NULL only if every slot was fed this period (cannot happen: 64 domains at most). */
static struct hm_domain *dom_slot(struct hostmetrics *m, const struct hostagg_domain *d)
{
	struct hm_domain *free_slot = NULL, *oldest = NULL;

	for (uint32_t i = 0; i < HOSTMETRICS_MAX_DOMAINS; i++) {
		struct hm_domain *x = &m->dom[i];

		if (!x->used) {
			if (!free_slot)
				free_slot = x;
			continue;
		}
		if (d->uuid[0] ? !strcmp(x->uuid, d->uuid) : !strcmp(x->name, d->name))
			return x;
		if (x->last_seen < m->periods && (!oldest || x->last_seen < oldest->last_seen))
			oldest = x;
	}
	if (!free_slot && oldest) {
		free(oldest->vcpus);
		memset(oldest, 0, sizeof(*oldest));
		m->evicted++;
		free_slot = oldest;
	}
	if (free_slot)
		free_slot->used = true;
	return free_slot;
}

/* Tell the classifier domain di's QEMU pid and vCPU threads when they changed. */
static void tc_register(struct hostmetrics *m, uint32_t di, const struct hostagg_domain *d)
{
	uint32_t tids[VN_HOST_MAX_VCPUS];
	uint64_t key = d->nvcpus;
	uint32_t n = 0;

	for (uint32_t j = 0; j < d->nvcpus && j < d->nvcpus_alloc; j++) {
		tids[n++] = d->vcpus[j].tid;
		key = key * 1000003u + d->vcpus[j].tid;
	}
	if (m->tc_qemu[di] == d->qemu_pid && m->tc_key[di] == key)
		return;
	m->tc_qemu[di] = d->qemu_pid;
	m->tc_key[di] = key;
	if (taskclass_set_domain(m->tc, di, (pid_t)d->qemu_pid, tids, n))
		log_debug("hostmetrics: cannot register domain %s's threads", d->name);
}

static void take_domain(struct hostmetrics *m, const struct hostagg *a, uint32_t di, uint64_t now)
{
	const struct hostagg_domain *d = &a->dom[di];
	struct hm_domain *x = dom_slot(m, d);
	uint32_t nv = d->nvcpus < d->nvcpus_alloc ? d->nvcpus : d->nvcpus_alloc;

	if (!x)
		return;
	x->last_seen = m->periods;
	snprintf(x->name, sizeof(x->name), "%s", d->name);
	snprintf(x->uuid, sizeof(x->uuid), "%s", d->uuid);
	snprintf(x->virt, sizeof(x->virt), "%s", d->virt);
	x->running = d->running;
	x->starts = umax(x->starts, d->starts);
	if (d->chan_seen) {
		x->chan_seen = true;
		x->unc_ns = d->chan.clock_uncertainty_ns;
		x->offset_ns = d->chan.clock_offset_ns;
	}
	if (nv > x->nvcpus) {
		struct hm_vcpu *nvp = realloc(x->vcpus, nv * sizeof(*nvp));

		if (!nvp) {
			log_debug("hostmetrics: out of memory for domain %s", d->name);
			nv = x->nvcpus;
		} else {
			memset(nvp + x->nvcpus, 0, (nv - x->nvcpus) * sizeof(*nvp));
			x->vcpus = nvp;
			x->nvcpus = nv;
		}
	}
	tc_register(m, di, d);
	for (uint32_t j = 0; j < nv && j < x->nvcpus; j++)
		if (d->vcpus[j].seen)
			take_vcpu(m, di, a, &x->vcpus[j], &d->vcpus[j], now);
}

static void take_info(struct hostmetrics *m, const struct hostagg *a, const struct hostinfo *in)
{
	snprintf(m->dispatch, sizeof(m->dispatch), "%s", in->dispatch ? in->dispatch : "off");
	m->irqs = in->irqs;
	m->kvm = in->kvm;
	m->guest = m->guest || hostagg_has_match(a);
	m->period_ns = in->period_ns;
	m->end_ns = in->end_ns;
	m->self_cpu_ns = umax(m->self_cpu_ns, in->self_cpu_ns);
	m->bpf_events = umax(m->bpf_events, in->bpf_events);
	m->bpf_run_ns = umax(m->bpf_run_ns, in->bpf_run_ns);
	m->drops = umax(m->drops, in->schedlog_drops);
	m->anomalies = umax(m->anomalies, in->schedlog_anomalies);
	m->events_dropped = umax(m->events_dropped, in->events_dropped);
	m->reconnects = umax(m->reconnects, in->reconnects);
	m->bad_records += a->bad_records;
}

/* The domains' region file counters from the live engine's channel entries (by domain name). */
static void take_regions(struct hostmetrics *m, const struct hostinfo *in)
{
	for (int k = 0; k < in->ndtl; k++) {
		const struct hostinfo_dtl *c = &in->dtl[k];

		if (!c->region)
			continue;
		for (uint32_t i = 0; i < HOSTMETRICS_MAX_DOMAINS; i++) {
			struct hm_domain *x = &m->dom[i];

			if (!x->used || strcmp(x->name, c->name))
				continue;
			x->region_seen = true;
			x->region_refused = umax(x->region_refused, c->region_refused);
			x->region_lost = umax(x->region_lost, c->region_lost);
			break;
		}
	}
}

/* ---- the exposition text ---- */

struct hm_render {
	const struct hostmetrics *m;
	struct bufout *o;
	struct promfmt_label l[6];
	char vcpu[12];
};

struct hm_family {
	const char *name, *type, *help;
	void (*emit)(struct hm_render *r, const struct hm_family *f);
	size_t off; /* of the u64 field the generic emitters read */
	bool seconds; /* that field is in ns: exported in seconds */
	bool guest; /* vCPU families of the combined view: samples only for vCPUs with guest data */
};

static void put(struct hm_render *r, const struct hm_family *f, size_t nl, uint64_t v, bool seconds)
{
	if (seconds)
		promfmt_sample(r->o, f->name, r->l, nl, (double)v / 1e9);
	else
		promfmt_sample_u64(r->o, f->name, r->l, nl, v);
}

static void emit_host_info(struct hm_render *r, const struct hm_family *f)
{
	const struct hostmetrics *m = r->m;

	r->l[0] = (struct promfmt_label){ "version", version_string(), SIZE_MAX };
	r->l[1] = (struct promfmt_label){ "dispatch", m->dispatch, sizeof(m->dispatch) };
	r->l[2] = (struct promfmt_label){ "host_irqs", m->irqs ? "true" : "false", SIZE_MAX };
	r->l[3] = (struct promfmt_label){ "kvm_exits", m->kvm ? "true" : "false", SIZE_MAX };
	r->l[4] = (struct promfmt_label){ "guest_channel", m->guest ? "true" : "false", SIZE_MAX };
	promfmt_sample_u64(r->o, f->name, r->l, 5, 1);
}

static void emit_host(struct hm_render *r, const struct hm_family *f)
{
	put(r, f, 0, *(const uint64_t *)((const char *)r->m + f->off), f->seconds);
}

/* l[0], l[1]: domain and uuid of x. */
static void dom_labels(struct hm_render *r, const struct hm_domain *x)
{
	r->l[0] = (struct promfmt_label){ "domain", x->name, sizeof(x->name) };
	r->l[1] = (struct promfmt_label){ "uuid", x->uuid, sizeof(x->uuid) };
}

/*
 * Domain families; f->off: 0 info, 1 running, 2 starts, 3 vCPUs, 4 clock uncertainty, 5 clock offset, 6
 * region files refused, 7 channel lost.
 */
static void emit_dom(struct hm_render *r, const struct hm_family *f)
{
	for (uint32_t i = 0; i < HOSTMETRICS_MAX_DOMAINS; i++) {
		const struct hm_domain *x = &r->m->dom[i];
		const uint64_t v[] = { 1, x->running, x->starts, x->nvcpus };

		if (!x->used)
			continue;
		dom_labels(r, x);
		if (f->off >= 6) {
			if (x->region_seen)
				promfmt_sample_u64(r->o, f->name, r->l, 2,
						   f->off == 6 ? x->region_refused
							       : x->region_lost);
		} else if (f->off == 0) {
			r->l[2] = (struct promfmt_label){ "virt", x->virt, sizeof(x->virt) };
			promfmt_sample_u64(r->o, f->name, r->l, 3, 1);
		} else if (f->off < 4) {
			promfmt_sample_u64(r->o, f->name, r->l, 2, v[f->off]);
		} else if (x->chan_seen && x->unc_ns != UINT64_MAX) {
			promfmt_sample(r->o, f->name, r->l, 2,
				       (f->off == 4 ? (double)x->unc_ns : (double)x->offset_ns) /
					   1e9);
		}
	}
}

/* Call fn for every vCPU with data (of the combined view if guest), labels l[0..2] set. */
static void each_vcpu(struct hm_render *r, const struct hm_family *f,
		      void (*fn)(struct hm_render *r, const struct hm_family *f,
				 const struct hm_vcpu *v))
{
	for (uint32_t i = 0; i < HOSTMETRICS_MAX_DOMAINS; i++) {
		const struct hm_domain *x = &r->m->dom[i];

		if (!x->used)
			continue;
		for (uint32_t j = 0; j < x->nvcpus; j++) {
			const struct hm_vcpu *v = &x->vcpus[j];

			if (!v->seen || (f->guest && !v->has_match))
				continue;
			dom_labels(r, x);
			snprintf(r->vcpu, sizeof(r->vcpu), "%u", j);
			r->l[2] = (struct promfmt_label){ "vcpu", r->vcpu, sizeof(r->vcpu) };
			fn(r, f, v);
		}
	}
}

static void vcpu_field(struct hm_render *r, const struct hm_family *f, const struct hm_vcpu *v)
{
	put(r, f, 3, *(const uint64_t *)((const char *)v + f->off), f->seconds);
}

static void vcpu_pcpu(struct hm_render *r, const struct hm_family *f, const struct hm_vcpu *v)
{
	promfmt_sample(r->o, f->name, r->l, 3, (double)v->pcpu);
}

static void vcpu_out(struct hm_render *r, const struct hm_family *f, const struct hm_vcpu *v)
{
	for (int k = 0; k < HM_NOUT; k++) {
		r->l[3] = (struct promfmt_label){ "cause", out_cause[k], SIZE_MAX };
		put(r, f, 4, v->out_part[k], true);
	}
}

/* Preemptor causes: f->seconds chooses time or count. */
static void vcpu_causes(struct hm_render *r, const struct hm_family *f, const struct hm_vcpu *v)
{
	for (uint32_t k = 0; k < v->ncause; k++) {
		const struct hm_cause *c = &v->cause[k];

		r->l[3] = (struct promfmt_label){ "class", cls_name(c->cls), SIZE_MAX };
		r->l[4] = (struct promfmt_label){ "comm", c->comm, sizeof(c->comm) };
		put(r, f, 5, f->seconds ? c->ns : c->count, f->seconds);
	}
	for (uint8_t cls = 0; cls < HM_NCLS; cls++) {
		if (!v->other_ns[cls] && !v->other_count[cls])
			continue;
		r->l[3] = (struct promfmt_label){ "class", cls_name(cls), SIZE_MAX };
		r->l[4] = (struct promfmt_label){ "comm", "other", SIZE_MAX };
		put(r, f, 5, f->seconds ? v->other_ns[cls] : v->other_count[cls], f->seconds);
	}
}

static const char *kind_name(uint16_t kind)
{
	switch (kind) {
	case VN_HOST_AGG_IRQ:
		return "irq";
	case VN_HOST_AGG_SOFTIRQ:
		return "softirq";
	case VN_HOST_AGG_VECTOR:
		return "vector";
	default:
		return "other";
	}
}

/* Exits (f->off 0) or host IRQs (f->off 1) by reason / source, time or count. */
static void vcpu_aggs(struct hm_render *r, const struct hm_family *f, const struct hm_vcpu *v)
{
	const struct hm_table *t = f->off ? &v->irqs : &v->exits;
	const char *k1 = f->off ? "kind" : "isa", *k2 = f->off ? "source" : "reason";

	for (uint32_t k = 0; k < t->n; k++) {
		const struct hm_aggent *e = &t->e[k];

		r->l[3] = (struct promfmt_label){ k1,
						  f->off	? kind_name(e->kind)
						  : e->isa == 2 ? "svm"
								: "vmx",
						  SIZE_MAX };
		r->l[4] = (struct promfmt_label){ k2, e->name, sizeof(e->name) };
		put(r, f, 5, f->seconds ? e->ns : e->count, f->seconds);
	}
	if (!t->other_ns && !t->other_count)
		return;
	r->l[3] = (struct promfmt_label){ k1, "other", SIZE_MAX };
	r->l[4] = (struct promfmt_label){ k2, "other", SIZE_MAX };
	put(r, f, 5, f->seconds ? t->other_ns : t->other_count, f->seconds);
}

/* The combined view's split of the guest's gaps: guest classes, hypervisor classes, hw (residual). */
static void vcpu_noise(struct hm_render *r, const struct hm_family *f, const struct hm_vcpu *v)
{
	static const int guest_cls[] = { VN_CLASS_NMI, VN_CLASS_IRQ, VN_CLASS_SOFTIRQ,
					 VN_CLASS_THREAD, VN_CLASS_HCALL };

	r->l[3] = (struct promfmt_label){ "origin", "guest", SIZE_MAX };
	for (size_t k = 0; k < sizeof(guest_cls) / sizeof(guest_cls[0]); k++) {
		r->l[4] =
		    (struct promfmt_label){ "class", classes_guest_name(guest_cls[k]), SIZE_MAX };
		put(r, f, 5, v->guest_ns[guest_cls[k]], true);
	}
	r->l[3] = (struct promfmt_label){ "origin", "hypervisor", SIZE_MAX };
	for (int k = 0; k < (int)VN_HCLASS_MAX; k++) {
		r->l[4] = (struct promfmt_label){ "class", classes_hyp_name(k), SIZE_MAX };
		put(r, f, 5, v->host_ns[k], true);
	}
	r->l[3] = (struct promfmt_label){ "origin", "hw", SIZE_MAX };
	r->l[4] = (struct promfmt_label){ "class", "residual", SIZE_MAX };
	put(r, f, 5, v->residual_ns, true);
}

static void emit_vcpu(struct hm_render *r, const struct hm_family *f)
{
	each_vcpu(r, f, vcpu_field);
}

#define EMIT_VCPU_WITH(fn)                                                    \
	static void emit_##fn(struct hm_render *r, const struct hm_family *f) \
	{                                                                     \
		each_vcpu(r, f, fn);                                          \
	}
EMIT_VCPU_WITH(vcpu_pcpu)
EMIT_VCPU_WITH(vcpu_out)
EMIT_VCPU_WITH(vcpu_causes)
EMIT_VCPU_WITH(vcpu_aggs)
EMIT_VCPU_WITH(vcpu_noise)
#undef EMIT_VCPU_WITH

#define HOSTF(n, t, h, fld, s)                                         \
	{                                                              \
		.name = n, .type = t, .help = h, .emit = emit_host,    \
		.off = offsetof(struct hostmetrics, fld), .seconds = s \
	}
#define VCPUF(n, h, fld, s)                                                 \
	{                                                                   \
		.name = n, .type = "counter", .help = h, .emit = emit_vcpu, \
		.off = offsetof(struct hm_vcpu, fld), .seconds = s          \
	}
#define VCPUG(n, h, fld, s)                                                       \
	{                                                                         \
		.name = n, .type = "counter", .help = h, .emit = emit_vcpu,       \
		.off = offsetof(struct hm_vcpu, fld), .seconds = s, .guest = true \
	}
#define FAM(n, t, h, e) .name = n, .type = t, .help = h, .emit = e

/* Every family in exposition order (README.md lists them). */
static const struct hm_family hm_families[] = {
	{ FAM("vnoise_host_info", "gauge", "vnoise-host's version and what its host tracing has on",
	      emit_host_info) },
	HOSTF("vnoise_host_periods_total", "counter", "Periods added into these counters", periods,
	      false),
	HOSTF("vnoise_host_last_period_end_seconds", "gauge",
	      "End of the latest period added (host CLOCK_MONOTONIC)", end_ns, true),
	HOSTF("vnoise_host_period_seconds", "gauge", "Length of a period", period_ns, true),
	HOSTF("vnoise_host_self_cpu_seconds_total", "counter",
	      "CPU time of vnoise-host itself (user + system, all threads)", self_cpu_ns, true),
	HOSTF("vnoise_host_bpf_runs_total", "counter", "Runs of the dispatch-log eBPF programs",
	      bpf_events, false),
	HOSTF("vnoise_host_bpf_run_seconds_total", "counter",
	      "Run time of the dispatch-log eBPF programs (0 when kernel BPF statistics are off)",
	      bpf_run_ns, true),
	HOSTF("vnoise_host_dispatch_records_lost_total", "counter",
	      "Dispatch-log records lost between kernel and user space (ring full)", drops, false),
	HOSTF("vnoise_host_dispatch_anomalies_total", "counter",
	      "Inconsistent context-switch sequences repaired", anomalies, false),
	HOSTF("vnoise_host_lifecycle_events_lost_total", "counter", "libvirt lifecycle events lost",
	      events_dropped, false),
	HOSTF("vnoise_host_libvirt_reconnects_total", "counter",
	      "Connections to libvirtd re-established", reconnects, false),
	HOSTF("vnoise_host_bad_records_total", "counter",
	      "Records the engine refused (unknown domain or vCPU, inverted times)", bad_records,
	      false),
	HOSTF("vnoise_host_exporter_cpu_seconds_total", "counter",
	      "CPU time the exporter spent adding periods and rendering this text", cost_ns, true),
	HOSTF("vnoise_host_exporter_domains_evicted_total", "counter",
	      "Domains whose series were dropped to keep the exporter's tables bounded", evicted,
	      false),
	{ FAM("vnoise_host_domain_info", "gauge",
	      "A domain's name, UUID and virtualization (qemu: TCG)", emit_dom) },
	{ FAM("vnoise_host_domain_running", "gauge", "1 while the domain runs", emit_dom),
	  .off = 1 },
	{ FAM("vnoise_host_domain_starts_total", "counter", "Times the domain was seen starting",
	      emit_dom),
	  .off = 2 },
	{ FAM("vnoise_host_domain_vcpus", "gauge", "vCPUs of the domain", emit_dom), .off = 3 },
	{ FAM("vnoise_host_domain_clock_uncertainty_seconds", "gauge",
	      "Bound on the guest-to-host clock conversion error (guest channel, --guest)",
	      emit_dom),
	  .off = 4 },
	{ FAM("vnoise_host_domain_clock_offset_seconds", "gauge",
	      "Guest clock minus host clock (guest channel, --guest)", emit_dom),
	  .off = 5 },
	{ FAM("vnoise_host_domain_region_refused_total", "counter",
	      "Region files of the guest channel refused: not a regular file, owned by another "
	      "user "
	      "than root or QEMU's, or writable by others",
	      emit_dom),
	  .off = 6 },
	{ FAM("vnoise_host_domain_region_lost_total", "counter",
	      "Times the guest channel was lost: its region file shrank under the mapping (opened "
	      "and "
	      "validated again)",
	      emit_dom),
	  .off = 7 },
	{ FAM("vnoise_host_vcpu_pcpu", "gauge", "Host CPU the vCPU ran on last (-1: unknown)",
	      emit_vcpu_pcpu) },
	VCPUF("vnoise_host_vcpu_periods_total", "Periods with data for the vCPU", periods, false),
	VCPUF("vnoise_host_vcpu_steal_seconds_total", "Steal: libvirt vcpu.N.delay", steal_ns,
	      true),
	VCPUF("vnoise_host_vcpu_cpu_seconds_total", "CPU time of the vCPU: libvirt vcpu.N.time",
	      cpu_ns, true),
	{ FAM("vnoise_host_vcpu_out_seconds_total", "counter",
	      "Out-time of the vCPU by cause: preempted (runnable, another task ran), waiting "
	      "(runnable, "
	      "nothing ran), halted (slept before its wakeup: guest idle), exits, irq (sum = "
	      "out-time)",
	      emit_vcpu_out) },
	VCPUF("vnoise_host_vcpu_out_intervals_total", "Intervals the vCPU thread was switched out",
	      out_n, false),
	VCPUF("vnoise_host_vcpu_out_idle_seconds_total",
	      "Out-time during which the host CPU the vCPU left was idle", idle_ns, true),
	VCPUF("vnoise_host_vcpu_wait_seconds_total",
	      "Runnable but not running (dispatch log's run delay)", wait_ns, true),
	{ FAM("vnoise_host_vcpu_preemptor_seconds_total", "counter",
	      "Run time of host tasks on the CPU the vCPU left while it was out and runnable, by "
	      "class "
	      "and comm (top causes, the rest as comm \"other\"; time it was halted is not "
	      "counted)",
	      emit_vcpu_causes),
	  .seconds = true },
	{ FAM("vnoise_host_vcpu_preemptions_total", "counter",
	      "Out intervals in which the cause ran, by class and comm", emit_vcpu_causes) },
	{ FAM("vnoise_host_vcpu_exits_total", "counter", "VM exits by reason", emit_vcpu_aggs) },
	{ FAM("vnoise_host_vcpu_exit_seconds_total", "counter", "Time in VM exits by reason",
	      emit_vcpu_aggs),
	  .seconds = true },
	{ FAM("vnoise_host_vcpu_host_irqs_total", "counter",
	      "Host interrupts while the vCPU ran, by kind and source", emit_vcpu_aggs),
	  .off = 1 },
	{ FAM("vnoise_host_vcpu_host_irq_seconds_total", "counter",
	      "Time in host interrupts while the vCPU ran, by kind and source", emit_vcpu_aggs),
	  .off = 1, .seconds = true },
	VCPUG("vnoise_host_vcpu_gaps_total", "Guest gaps matched with the host view (--guest)",
	      gaps, false),
	VCPUG("vnoise_host_vcpu_gap_seconds_total", "Duration of the matched guest gaps (--guest)",
	      gap_ns, true),
	{ FAM("vnoise_host_vcpu_noise_seconds_total", "counter",
	      "The matched gaps split by origin (guest, hypervisor, hw) and class (--guest)",
	      emit_vcpu_noise),
	  .guest = true },
};
#undef HOSTF
#undef VCPUF
#undef VCPUG
#undef FAM

static int render(const struct hostmetrics *m, struct bufout *o)
{
	struct hm_render r = { .m = m, .o = o };

	for (size_t k = 0; k < sizeof(hm_families) / sizeof(hm_families[0]); k++) {
		const struct hm_family *f = &hm_families[k];

		promfmt_family(o, f->name, f->type, f->help);
		f->emit(&r, f);
	}
	if (m->rw)
		remotewrite_render_prom(m->rw, "vnoise_host", o);
	return bufout_result(o) < 0 ? -ENOSPC : 0;
}

static int render_fn(void *ctx, struct bufout *o)
{
	return render(ctx, o);
}

/* The text of now, for the next scrapes (the previous one stays when it cannot be made). */
static void publish(struct hostmetrics *m)
{
	(void)promtext_publish(&m->text, render_fn, m);
}

void hostmetrics_period(struct hostmetrics *m, const struct hostagg *cur, const struct hostinfo *in)
{
	uint64_t t0;

	if (!m || !cur || !in)
		return;
	t0 = thread_cpu_ns();
	m->periods++;
	take_info(m, cur, in);
	for (uint32_t i = 0; i < VN_HOST_MAX_DOMAINS; i++)
		if (cur->dom[i].seen)
			take_domain(m, cur, i, in->end_ns);
	take_regions(m, in);
	publish(m);
	if (m->rw) { /* this thread alone swaps the text: no lock to read it */
		size_t len;
		const char *t = promtext_current(&m->text, &len);

		remotewrite_push(m->rw, t, len, (int64_t)(now_rt_ns() / 1000000ull));
	}
	m->cost_ns += thread_cpu_ns() - t0; /* shown from the next period on */
}

void hostmetrics_set_remotewrite(struct hostmetrics *m, struct remotewrite *rw)
{
	m->rw = rw;
}

int hostmetrics_text(struct hostmetrics *m, struct bufout *o)
{
	return promtext_copy(&m->text, o);
}

static int serve_text(void *ctx, struct bufout *o)
{
	return hostmetrics_text(ctx, o);
}

struct hostmetrics *hostmetrics_new(const char *spec, const char *proc_root, char *err,
				    size_t errlen)
{
	struct hostmetrics *m = calloc(1, sizeof(*m));

	if (!m) {
		log_reason(err, errlen, "out of memory");
		return NULL;
	}
	promtext_init(&m->text);
	snprintf(m->dispatch, sizeof(m->dispatch), "off");
	m->tc = taskclass_new(proc_root);
	if (!m->tc) {
		log_reason(err, errlen, "out of memory");
		goto fail;
	}
	/* scrapes before the first period's end get the run-wide families */
	if (promtext_publish(&m->text, render_fn, m)) {
		log_reason(err, errlen, "out of memory");
		goto fail;
	}
	if (spec) {
		m->http = httpd_start(spec, serve_text, m, err, errlen);
		if (!m->http)
			goto fail;
	}
	return m;
fail:
	hostmetrics_stop(m);
	return NULL;
}

struct hostmetrics *hostmetrics_start(const char *spec, char *err, size_t errlen)
{
	return hostmetrics_new(spec, NULL, err, errlen);
}

uint16_t hostmetrics_port(const struct hostmetrics *m)
{
	return m && m->http ? httpd_port(m->http) : 0;
}

void hostmetrics_stop(struct hostmetrics *m)
{
	if (!m)
		return;
	httpd_stop(m->http); /* the server thread is gone before the text is freed */
	taskclass_free(m->tc);
	for (uint32_t i = 0; i < HOSTMETRICS_MAX_DOMAINS; i++)
		free(m->dom[i].vcpus);
	promtext_free(&m->text);
	free(m);
}
