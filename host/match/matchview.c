/* SPDX-License-Identifier: MIT */
/*
 * matchview: text and JSON views of the combined guest + host picture (see matchview.h).
 */
#include <string.h>
#include "attrib/classes.h"
#include "attrib/explain.h"
#include "util/json.h"
#include "attrib/merge.h"
#include "match/matchview.h"
#include "util/termsafe.h"

#define MV_MAX_LIST 1000 /* as HV_MAX_LIST: hostview_ctx.top is at most this */
#define BIG_GAP_NS 1000000ULL
#define LL(x) ((unsigned long long)(x))

static const char *const chan_states[] = {
	"absent", "waiting", "ok", "corrupt", "lost", "refused"
}; /* enum vn_host_chan_state */
#define NCHAN_STATES (sizeof(chan_states) / sizeof(chan_states[0]))
static const char *const agent_states[] = { "init", "running", "paused", "stopped" };

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The ISA of a vCPU's VM exits (its host view's exit aggregates say it; 1, VMX, if it has none). */
static uint16_t exit_isa(const struct hostagg_vcpu *v, uint32_t reason)
{
	for (uint32_t k = 0; v && k < v->nagg; k++)
		if (v->agg[k].kind == VN_HOST_AGG_EXIT && v->agg[k].id == reason)
			return v->agg[k].isa;
	return 1;
}

/* A hypervisor source of the per-period aggregates: the exit reason's or the host IRQ's name, as the host
 * view shows them (id: exit reason, or kind << 24 | irq number, softirq or vector). */
static void agg_source_name(const struct hostagg *a, const struct hostagg_vcpu *v,
			    const struct hostagg_msrc *s, const char *h, char *buf, size_t len)
{
	uint32_t kind = s->id >> 24, id = s->id & 0xffffffu;
	const char *n;

	if (s->cls == VN_HCLASS_VMEXIT) {
		n = hostagg_exit_name(exit_isa(v, s->id), s->id);
		if (n)
			snprintf(buf, len, "%s:%s", h, n);
		else
			snprintf(buf, len, "%s:%u", h, s->id);
		return;
	}
	switch (kind) {
	case VN_HOST_AGG_IRQ:
		n = a ? hostagg_irq_name(a, id) : NULL;
		if (n)
			snprintf(buf, len, "%s:%u:%s", h, id, n);
		else
			snprintf(buf, len, "%s:%u", h, id);
		break;
	case VN_HOST_AGG_SOFTIRQ:
		snprintf(buf, len, "%s:%s", h, merge_softirq_name(id));
		break;
	case VN_HOST_AGG_VECTOR:
		snprintf(buf, len, "%s:%s", h, merge_vector_name(id));
		break;
	default:
		snprintf(buf, len, "%s:%u", h, s->id);
	}
}

/* The vCPU thread's scheduler state while it waited out (the state letter of /proc/PID/stat), in words. */
static const char *wait_state_name(uint32_t st)
{
	switch (st) {
	case 'R':
		return "runnable"; /* ready, no CPU given */
	case 'S':
		return "sleeping"; /* blocked, interruptible: a lock, a futex, poll */
	case 'D':
		return "disk-wait"; /* uninterruptible: I/O, page faults */
	case 'T':
	case 't':
		return "stopped";
	case 'I':
		return "idle";
	default:
		return "other-state";
	}
}

const char *matchview_source_name(const struct hostagg *a, const struct hostagg_vcpu *v,
				  const struct hostagg_msrc *s, char *buf, size_t len)
{
	struct merge_source ms = { .cls = s->cls, .id = s->id };

	if (s->kind == VN_HOST_MSRC_HOST) {
		const char *h = s->cls < VN_HCLASS_MAX ? classes_hyp_name(s->cls) : "host?";

		switch (s->cls) {
		case VN_HCLASS_HOST_PREEMPT:
			snprintf(buf, len, "%s:%s[%u]", h, s->comm, s->id);
			break;
		case VN_HCLASS_HOST_WAIT:
			snprintf(buf, len, "%s:%s", h, wait_state_name(s->id));
			break;
		default:
			if (s->comm[0])
				snprintf(buf, len, "%s:%s", h, s->comm);
			else
				agg_source_name(a, v, s, h, buf, len);
		}
		return buf;
	}
	memcpy(ms.comm, s->comm, sizeof(ms.comm));
	ms.comm[VN_COMM_LEN - 1] = 0;
	return merge_source_name(&ms, NULL, NULL, buf, len);
}

bool matchview_is_vnoise(const struct hostinfo *in, const struct hostagg_msrc *s)
{
	if (s->kind == VN_HOST_MSRC_HOST)
		return s->cls == VN_HCLASS_HOST_PREEMPT && hostview_is_self(in, s->id);
	return s->cls == VN_CLASS_THREAD && hostview_is_vnoise_comm(s->comm);
}

/*
 * A clock offset in the unit that suits it: "+850.000 us", "-12.345 ms", "+3.250 s", "-36:27.041" (under an
 * hour), "+3:04:05.678" (under a day), "-2 d 03:04:05.678".
 */
const char *matchview_offset_text(int64_t ns, char *buf, size_t len)
{
	uint64_t m = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	char sign = ns < 0 ? '-' : '+';

	if (m < 1000000ULL)
		snprintf(buf, len, "%c%.3f us", sign, (double)m / 1e3);
	else if (m < 1000000000ULL)
		snprintf(buf, len, "%c%.3f ms", sign, (double)m / 1e6);
	else if (m < 60000000000ULL)
		snprintf(buf, len, "%c%.3f s", sign, (double)m / 1e9);
	else {
		uint64_t ms = m / 1000000ULL, s = ms / 1000;

		if (s < 3600)
			snprintf(buf, len, "%c%llu:%02llu.%03llu", sign, LL(s / 60), LL(s % 60),
				 LL(ms % 1000));
		else if (s < 86400)
			snprintf(buf, len, "%c%llu:%02llu:%02llu.%03llu", sign, LL(s / 3600),
				 LL(s / 60 % 60), LL(s % 60), LL(ms % 1000));
		else
			snprintf(buf, len, "%c%llu d %02llu:%02llu:%02llu.%03llu", sign,
				 LL(s / 86400), LL(s / 3600 % 24), LL(s / 60 % 60), LL(s % 60),
				 LL(ms % 1000));
	}
	return buf;
}

static uint64_t sum8(const __u64 *v, int n)
{
	uint64_t t = 0;

	for (int i = 0; i < n; i++)
		t += v[i];
	return t;
}

static uint64_t span_of(const struct hostagg_match *m)
{
	return m->sum.end_ns > m->sum.start_ns ? m->sum.end_ns - m->sum.start_ns : 0;
}

static void text_sources(struct hostview_ctx *c, const struct hostagg_vcpu *v, uint8_t kind,
			 const char *label, uint64_t span)
{
	const struct hostagg_msrc *s[MV_MAX_LIST];
	uint32_t n = hostagg_msrc_sorted(v, kind, s, (uint32_t)c->top), k;
	struct hostview_list l;
	char name[96], safe[TERMSAFE_LEN(96)];

	hostview_list_begin(&l, c->f, c->width, 10, label);
	for (k = 0; k < n; k++)
		hostview_list_item(
		    &l, "%s%s %.2f%% (%llu)",
		    termsafe(safe, sizeof(safe),
			     matchview_source_name(c->a, v, s[k], name, sizeof(name)),
			     sizeof(name)),
		    matchview_is_vnoise(c->in, s[k]) ? " (vnoise)" : "", pct(s[k]->total_ns, span),
		    LL(s[k]->count));
	hostview_list_end(&l, "-");
}

static void text_clock(struct hostview_ctx *c, const struct vn_host_chan *ch)
{
	struct hostview_list l;
	char off[48];

	hostview_list_begin(&l, c->f, c->width, 4, "  channel");
	hostview_list_item(&l, "%s", ch->state < NCHAN_STATES ? chan_states[ch->state] : "?");
	if (ch->epoch)
		hostview_list_item(&l, "epoch %llu", LL(ch->epoch));
	if (ch->epoch)
		hostview_list_item(&l, "agent %s",
				   ch->agent_state < 4 ? agent_states[ch->agent_state] : "unknown");
	if (ch->clock_uncertainty_ns != UINT64_MAX) {
		hostview_list_item(&l, "clock offset %s +- %.1f us",
				   matchview_offset_text(ch->clock_offset_ns, off, sizeof(off)),
				   (double)ch->clock_uncertainty_ns / 1e3);
		hostview_list_item(&l, "min rtt %.1f us", (double)ch->clock_min_rtt_ns / 1e3);
		hostview_list_item(&l, "%llu exchanges", LL(ch->clock_exchanges));
	} else {
		hostview_list_item(&l, "clock not aligned yet");
	}
	hostview_list_end(&l, NULL);
	hostview_list_begin(&l, c->f, c->width, 4, "  records");
	hostview_list_item(&l, "%llu read", LL(ch->records));
	if (ch->lost || ch->missed || ch->torn || ch->invalid || ch->corrupt || ch->guest_dropped ||
	    ch->unsynced || ch->late || ch->match_dropped) {
		hostview_list_item(&l, "LOST %llu (overrun)", LL(ch->lost));
		hostview_list_item(&l, "%llu (in the guest)", LL(ch->guest_dropped));
		hostview_list_item(&l, "%llu (before the clock)", LL(ch->unsynced));
		hostview_list_item(&l, "%llu (late)", LL(ch->late));
		hostview_list_item(&l, "%llu (matcher full)", LL(ch->match_dropped));
		hostview_list_item(&l, "missed %llu at attach", LL(ch->missed));
		hostview_list_item(&l, "torn %llu", LL(ch->torn));
		hostview_list_item(&l, "invalid %llu", LL(ch->invalid));
		hostview_list_item(&l, "corrupt %llu times", LL(ch->corrupt));
	}
	hostview_list_item(&l, "epochs %llu", LL(ch->epochs));
	hostview_list_end(&l, NULL);
}

/* The guest's network noise of a domain, summed over its vCPUs (combined view: net of hypervisor time). */
struct guest_net {
	uint64_t rx_ns, rx_count, tx_ns, tx_count; /* softirq NET_RX, NET_TX */
	uint64_t softirq_ns, irq_ns; /* the classes */
	uint64_t dev_ns, dev_count; /* device IRQs (not x86 vectors) */
	uint64_t src_dropped; /* sources the tables had no room for */
	uint32_t vcpus; /* vCPUs with combined-view data */
};

#define SOFTIRQ_NET_TX 2
#define SOFTIRQ_NET_RX 3

static void guest_net_sum(const struct hostagg_domain *d, struct guest_net *g)
{
	uint32_t j;

	memset(g, 0, sizeof(*g));
	for (j = 0; j < d->nvcpus; j++) {
		const struct hostagg_match *m = &d->vcpus[j].match;

		if (!m->seen)
			continue;
		g->vcpus++;
		g->softirq_ns += m->sum.guest_ns[VN_CLASS_SOFTIRQ];
		g->irq_ns += m->sum.guest_ns[VN_CLASS_IRQ];
		g->src_dropped += m->src_dropped;
		g->rx_ns += m->softirq_ns[SOFTIRQ_NET_RX];
		g->rx_count += m->softirq_count[SOFTIRQ_NET_RX];
		g->tx_ns += m->softirq_ns[SOFTIRQ_NET_TX];
		g->tx_count += m->softirq_count[SOFTIRQ_NET_TX];
		g->dev_ns += m->devirq_ns;
		g->dev_count += m->devirq_count;
	}
}

#define DEV_IRQ_NOTE                                                                             \
	"the channel carries guest IRQ numbers, not their names: virtio-net's queue interrupts " \
	"are among the device IRQs"

/*
 * The guest device IRQs (not x86 vectors) among a vCPU's top guest sources, largest first, into s (room for
 * MV_MAX_LIST); returns how many. None for a vCPU without combined-view data.
 */
static uint32_t guest_devirqs(const struct hostagg_vcpu *v, int top, const struct hostagg_msrc **s)
{
	uint32_t k, n, kept = 0;

	if (!v->match.seen)
		return 0;
	n = hostagg_msrc_sorted(v, VN_HOST_MSRC_GUEST, s, (uint32_t)top);
	for (k = 0; k < n; k++)
		if (s[k]->cls == VN_CLASS_IRQ && s[k]->id < VN_VEC_BASE)
			s[kept++] = s[k];
	return kept;
}

static void text_guest_devirqs(struct hostview_ctx *c, uint32_t j, const struct hostagg_vcpu *v)
{
	const struct hostagg_msrc *s[MV_MAX_LIST];
	uint32_t n = guest_devirqs(v, c->top, s), k;
	struct hostview_list l;
	char name[96], label[48], safe[TERMSAFE_LEN(96)];

	if (!n)
		return;
	snprintf(label, sizeof(label), "    guest device IRQs on vCPU %u (ms, gaps):", j);
	hostview_list_begin(&l, c->f, c->width, 6, label);
	for (k = 0; k < n; k++)
		hostview_list_item(
		    &l, "%s %.3f (%llu)",
		    termsafe(safe, sizeof(safe),
			     matchview_source_name(c->a, v, s[k], name, sizeof(name)),
			     sizeof(name)),
		    (double)s[k]->total_ns / 1e6, LL(s[k]->count));
	hostview_list_end(&l, NULL);
}

/* With --flows: the guest's network noise next to the domain's flows (times in ms). */
static void text_guest_net(struct hostview_ctx *c, const struct hostagg_domain *d)
{
	struct hostview_list l;
	struct guest_net g;

	if (!d->net)
		return;
	guest_net_sum(d, &g);
	hostview_list_begin(&l, c->f, c->width, 4,
			    "  guest network noise (ms; matched gaps, net of hypervisor time):");
	hostview_list_item(&l, "softirq:NET_RX %.3f in %llu gaps", (double)g.rx_ns / 1e6,
			   LL(g.rx_count));
	hostview_list_item(&l, "NET_TX %.3f in %llu", (double)g.tx_ns / 1e6, LL(g.tx_count));
	hostview_list_item(&l, "softirq class %.3f", (double)g.softirq_ns / 1e6);
	hostview_list_item(&l, "irq class %.3f", (double)g.irq_ns / 1e6);
	hostview_list_item(&l, "device IRQs %.3f in %llu gaps", (double)g.dev_ns / 1e6,
			   LL(g.dev_count));
	hostview_list_end(&l, NULL);
	for (uint32_t j = 0; j < d->nvcpus; j++)
		text_guest_devirqs(c, j, &d->vcpus[j]);
	if (c->width)
		fprintf(c->f, "    (the channel carries guest IRQ numbers, not their names:\n"
			      "     virtio-net's queue interrupts are among the device IRQs)\n");
	else
		fprintf(c->f, "    (%s)\n", DEV_IRQ_NOTE);
}

static void json_guest_devirqs(struct json_writer *w, uint32_t j, const struct hostagg_vcpu *v,
			       int top)
{
	const struct hostagg_msrc *s[MV_MAX_LIST];
	uint32_t n = guest_devirqs(v, top, s), k;
	char name[96];

	for (k = 0; k < n; k++) {
		json_obj_begin(w);
		json_kv_u64(w, "vcpu", j);
		json_kv_str(w, "source", matchview_source_name(NULL, v, s[k], name, sizeof(name)));
		json_kv_u64(w, "irq", s[k]->id);
		json_kv_u64(w, "total_ns", s[k]->total_ns);
		json_kv_u64(w, "count", s[k]->count);
		json_obj_end(w);
	}
}

static void json_guest_net(struct json_writer *w, const struct hostagg_domain *d, int top)
{
	struct guest_net g;

	if (!d->net)
		return;
	guest_net_sum(d, &g);
	json_key(w, "guest_net");
	json_obj_begin(w);
	json_kv_u64(w, "vcpus", g.vcpus);
	json_kv_u64(w, "net_rx_ns", g.rx_ns);
	json_kv_u64(w, "net_rx_count", g.rx_count);
	json_kv_u64(w, "net_tx_ns", g.tx_ns);
	json_kv_u64(w, "net_tx_count", g.tx_count);
	json_kv_u64(w, "softirq_ns", g.softirq_ns);
	json_kv_u64(w, "irq_ns", g.irq_ns);
	json_kv_u64(w, "device_irq_ns", g.dev_ns);
	json_kv_u64(w, "device_irq_count", g.dev_count);
	json_kv_u64(w, "sources_dropped", g.src_dropped);
	json_key(w, "device_irqs");
	json_arr_begin(w);
	for (uint32_t j = 0; j < d->nvcpus; j++)
		json_guest_devirqs(w, j, &d->vcpus[j], top);
	json_arr_end(w);
	json_kv_str(w, "note", DEV_IRQ_NOTE);
	json_obj_end(w);
}

static void text_head(struct hostview_ctx *c)
{
	const struct hostinfo *in = c->in;
	uint64_t span = in->end_ns > in->start_ns ? in->end_ns - in->start_ns : 0;
	struct hostview_list l;
	char label[96];

	snprintf(label, sizeof(label), "vnoise-host %.60s --guest:", in->source);
	hostview_list_begin(&l, c->f, c->width, 2, label);
	hostview_list_item(&l, "%.1f s", (double)span / 1e9);
	hostview_list_item(&l, "period %.3g s", (double)in->period_ns / 1e9);
	hostview_list_item(&l, "dispatch log %s", in->dispatch);
	hostview_list_end(&l, NULL);
}

/*
 * The vCPU table: one format for the header and the rows. gaps>1ms: guest gaps of 1 ms or more, host: how
 * many of them are at least half hypervisor time; lat/maxlat: host time from a gap's end to its match.
 */
#define ROW_HEAD "  %4s %8s %7s %7s %7s %7s %8s %6s %6s %6s\n"
#define ROW_VALS "  %4u %8llu %7.2f %7.2f %7.2f %7.2f %8llu %6llu %6.1f %6.1f\n"

/* Part k of v's worst gap as a source of the engine's kind, for matchview_source_name(). */
static struct hostagg_msrc worst_src(const struct vn_host_wpart *p)
{
	struct hostagg_msrc x = { .kind = p->kind, .cls = p->cls, .id = p->id };

	memcpy(x.comm, p->comm, VN_HOST_COMM_LEN);
	x.comm[VN_HOST_COMM_LEN - 1] = 0;
	return x;
}

static const char *worst_class(const struct vn_host_wpart *p)
{
	return p->kind == VN_HOST_MSRC_HOST ? classes_hyp_name(p->cls) : classes_guest_name(p->cls);
}

/* The vCPU's worst gap: its length, when (guest time), its parts largest first with their shares (the parts
 * beyond the listed ones, then hw, last). */
static void text_worst(struct hostview_ctx *c, const struct hostagg_vcpu *v)
{
	const struct vn_host_worst *w = &v->match.worst;
	char name[96], safe[TERMSAFE_LEN(96)];

	if (!w->duration_ns)
		return;
	fprintf(c->f, "        worst gap: %.1f us at guest time %.6f s\n", w->duration_ns / 1e3,
		w->start_ns / 1e9);
	for (uint32_t k = 0; k < w->nparts; k++) {
		struct hostagg_msrc x = worst_src(&w->part[k]);

		fprintf(c->f, "          %10.1f us %5.1f%%  %.50s%s\n", w->part[k].ns / 1e3,
			pct(w->part[k].ns, w->duration_ns),
			termsafe(safe, sizeof(safe),
				 matchview_source_name(c->a, v, &x, name, sizeof(name)),
				 sizeof(name)),
			matchview_is_vnoise(c->in, &x) ? " (vnoise)" : "");
	}
	if (w->other_ns)
		fprintf(c->f, "          %10.1f us %5.1f%%  (the other parts)\n", w->other_ns / 1e3,
			pct(w->other_ns, w->duration_ns));
	if (w->residual_ns)
		fprintf(c->f, "          %10.1f us %5.1f%%  hw (neither side explains it)\n",
			w->residual_ns / 1e3, pct(w->residual_ns, w->duration_ns));
}

static void json_worst_part(struct json_writer *w, const char *cls, const char *src, uint64_t ns,
			    uint64_t dur)
{
	json_obj_begin(w);
	json_kv_str(w, "class", cls);
	json_kv_str(w, "source", src);
	json_kv_u64(w, "ns", ns);
	json_kv_double(w, "share_pct", pct(ns, dur));
	json_obj_end(w);
}

/* "worst": the vCPU's worst gap (null: none); its parts, hw and the unlisted rest included, add up to
 * duration_ns. */
static void json_worst(struct hostview_ctx *c, const struct hostagg_vcpu *v)
{
	const struct vn_host_worst *w = &v->match.worst;
	char name[96];

	json_key(c->w, "worst");
	if (!w->duration_ns) {
		json_null(c->w);
		return;
	}
	json_obj_begin(c->w);
	json_kv_u64(c->w, "start_ns", w->start_ns);
	json_kv_u64(c->w, "host_start_ns", w->host_start_ns);
	json_kv_u64(c->w, "duration_ns", w->duration_ns);
	json_key(c->w, "parts");
	json_arr_begin(c->w);
	for (uint32_t k = 0; k < w->nparts; k++) {
		struct hostagg_msrc x = worst_src(&w->part[k]);

		json_worst_part(c->w, worst_class(&w->part[k]),
				matchview_source_name(c->a, v, &x, name, sizeof(name)),
				w->part[k].ns, w->duration_ns);
	}
	if (w->other_ns)
		json_worst_part(c->w, "other", "(the other parts)", w->other_ns, w->duration_ns);
	if (w->residual_ns)
		json_worst_part(c->w, classes_hyp_name(VN_HCLASS_HW),
				classes_hyp_name(VN_HCLASS_HW), w->residual_ns, w->duration_ns);
	json_arr_end(c->w);
	json_obj_end(c->w);
}

static void text_vcpu_head(FILE *f)
{
	fprintf(f, ROW_HEAD, "vCPU", "gaps", "noise%", "guest%", "hyper%", "hw%", "gaps>1ms",
		"host", "lat_ms", "maxlat");
}

/* One vCPU's row (gaps, shares by side, matched big gaps, latency) and its sources, both views. */
static void text_vcpu(struct hostview_ctx *c, uint32_t j, const struct hostagg_vcpu *v)
{
	const struct hostagg_match *m = &v->match;
	uint64_t vs = span_of(m);

	fprintf(c->f, ROW_VALS, j, LL(m->sum.gaps), pct(m->sum.gap_ns, vs),
		pct(sum8(m->sum.guest_ns, 8), vs), pct(sum8(m->sum.host_ns, VN_HCLASS_MAX), vs),
		pct(m->sum.residual_ns, vs), LL(m->sum.big_gaps), LL(m->sum.big_matched),
		m->sum.latency_gaps
		    ? (double)m->sum.latency_sum_ns / 1e6 / (double)m->sum.latency_gaps
		    : 0.0,
		(double)m->sum.latency_max_ns / 1e6);
	text_sources(c, v, VN_HOST_MSRC_HOST, "        hypervisor:", vs);
	text_sources(c, v, VN_HOST_MSRC_GUEST, "        guest:", vs);
	fprintf(c->f,
		"        guest-only view (what the guest alone explains): unexplained %.2f%%\n",
		pct(m->sum.gonly_ns[VN_CLASS_UNEXPLAINED], vs));
	text_sources(c, v, VN_HOST_MSRC_GONLY, "        guest-only:", vs);
	text_worst(c, v);
}

static void text_domain(struct hostview_ctx *c, const struct hostagg_domain *d)
{
	FILE *f = c->f;
	struct explain_totals ex = { .host = 1 }; /* total: the gaps' time; hw: their residual */
	char nm[TERMSAFE_LEN(sizeof(d->name))], vt[TERMSAFE_LEN(sizeof(d->virt))];

	fprintf(f, "domain %s (%s, %s)\n",
		d->name[0] ? termsafe(nm, sizeof(nm), d->name, sizeof(d->name)) : "?",
		d->virt[0] ? termsafe(vt, sizeof(vt), d->virt, sizeof(d->virt)) : "?",
		d->running ? "running" : "stopped");
	if (!d->chan_seen) {
		fprintf(f, "  no guest channel\n");
		hostview_flows_text(f, d, c->in);
		return;
	}
	text_clock(c, &d->chan);
	text_vcpu_head(f);
	for (uint32_t j = 0; j < d->nvcpus; j++)
		if (d->vcpus[j].match.seen && d->vcpus[j].match.sum.gaps) {
			text_vcpu(c, j, &d->vcpus[j]);
			ex.total_ns += d->vcpus[j].match.sum.gap_ns;
			ex.hw_ns += d->vcpus[j].match.sum.residual_ns;
		}
	fprintf(f, "  (%% of the vCPU's time; gaps>1ms: gaps of 1 ms or more, host: of those the\n"
		   "  ones at least half hypervisor time; lat_ms, maxlat: ms to match a gap)\n");
	explain_footer(f, &ex, HOSTVIEW_WIDTH);
	text_guest_net(c, d);
	hostview_flows_text(f, d, c->in);
}

const struct hostview_ops matchview_text_ops = {
	.needs_match = true,
	.head = text_head,
	.domain = text_domain,
};

static void json_source(struct hostview_ctx *c, const struct hostagg_vcpu *v,
			const struct hostagg_msrc *x)
{
	struct json_writer *w = c->w;
	bool host = x->kind == VN_HOST_MSRC_HOST;
	char name[96];

	json_obj_begin(w);
	json_kv_str(w, "source", matchview_source_name(c->a, v, x, name, sizeof(name)));
	json_kv_str(w, "kind", host ? "hypervisor" : "guest");
	json_kv_str(w, "class",
		    host ? (x->cls < VN_HCLASS_MAX ? classes_hyp_name(x->cls) : "?")
			 : classes_guest_name(x->cls));
	json_kv_u64(w, "id", x->id);
	json_kv_str(w, "comm", x->comm);
	json_kv_u64(w, "total_ns", x->total_ns);
	json_kv_u64(w, "count", x->count);
	json_kv_u64(w, "max_ns", x->max_ns);
	json_kv_bool(w, "vnoise", matchview_is_vnoise(c->in, x));
	json_obj_end(w);
}

static void json_sources(struct hostview_ctx *c, const struct hostagg_vcpu *v, uint8_t kind)
{
	const struct hostagg_msrc *s[MV_MAX_LIST];
	uint32_t n = hostagg_msrc_sorted(v, kind, s, (uint32_t)c->top), k;

	json_arr_begin(c->w);
	for (k = 0; k < n; k++)
		json_source(c, v, s[k]);
	json_arr_end(c->w);
}

static void json_guest_classes(struct json_writer *w, const __u64 *ns, bool all)
{
	json_obj_begin(w);
	for (int c = 1; c < VN_CLASS_MAX; c++) {
		if (!all && (c == VN_CLASS_STEAL || c == VN_CLASS_UNEXPLAINED))
			continue;
		json_kv_u64(w, classes_guest_name(c), ns[c]);
	}
	json_obj_end(w);
}

static void json_chan(struct json_writer *w, const struct vn_host_chan *c)
{
	json_key(w, "channel");
	json_obj_begin(w);
	json_kv_str(w, "state", c->state < NCHAN_STATES ? chan_states[c->state] : "?");
	json_kv_u64(w, "epoch", c->epoch);
	json_kv_str(w, "agent_state",
		    c->agent_state < 4 ? agent_states[c->agent_state] : "unknown");
	json_kv_u64(w, "rings", c->rings);
	json_kv_u64(w, "records", c->records);
	json_kv_u64(w, "lost", c->lost);
	json_kv_u64(w, "missed", c->missed);
	json_kv_u64(w, "torn", c->torn);
	json_kv_u64(w, "invalid", c->invalid);
	json_kv_u64(w, "corrupt", c->corrupt);
	json_kv_u64(w, "epochs", c->epochs);
	json_kv_u64(w, "guest_dropped", c->guest_dropped);
	json_kv_u64(w, "unsynced", c->unsynced);
	json_kv_u64(w, "late", c->late);
	json_kv_u64(w, "match_dropped", c->match_dropped);
	json_obj_end(w);
	json_key(w, "clock");
	json_obj_begin(w);
	json_kv_bool(w, "aligned", c->clock_uncertainty_ns != UINT64_MAX);
	json_kv_i64(w, "offset_ns", c->clock_offset_ns);
	json_key(w, "uncertainty_ns");
	if (c->clock_uncertainty_ns == UINT64_MAX)
		json_null(w);
	else
		json_u64(w, c->clock_uncertainty_ns);
	json_kv_u64(w, "min_rtt_ns", c->clock_min_rtt_ns);
	json_kv_u64(w, "exchanges", c->clock_exchanges);
	json_kv_u64(w, "rejected", c->clock_rejected);
	json_obj_end(w);
}

static void json_vcpu(struct hostview_ctx *c, uint32_t j, const struct hostagg_vcpu *v)
{
	struct json_writer *w = c->w;
	int top = c->top;
	const struct hostagg_match *m = &v->match;
	const struct vn_host_match *s = &m->sum;

	json_obj_begin(w);
	json_kv_u64(w, "vcpu", j);
	json_kv_u64(w, "span_ns", span_of(m));
	json_kv_u64(w, "periods", m->periods);
	json_kv_u64(w, "gaps", s->gaps);
	json_kv_u64(w, "gap_ns", s->gap_ns);
	json_kv_u64(w, "max_gap_ns", s->max_gap_ns);
	json_kv_u64(w, "runtime_ns", s->runtime_ns);
	json_key(w, "guest");
	json_guest_classes(w, s->guest_ns, false);
	json_key(w, "hypervisor");
	json_obj_begin(w);
	for (int h = 0; h < VN_HCLASS_MAX; h++)
		json_kv_u64(w, classes_hyp_name(h), s->host_ns[h]);
	json_obj_end(w);
	json_kv_u64(w, "residual_ns", s->residual_ns);
	json_kv_u64(w, "reduced_ns", s->reduced_ns);
	json_key(w, "big_gaps");
	json_obj_begin(w);
	json_kv_u64(w, "threshold_ns", BIG_GAP_NS);
	json_kv_u64(w, "count", s->big_gaps);
	json_kv_u64(w, "matched", s->big_matched);
	json_kv_u64(w, "guest", s->big_guest);
	json_kv_u64(w, "explained", s->big_explained);
	json_obj_end(w);
	json_key(w, "latency");
	json_obj_begin(w);
	json_kv_u64(w, "gaps", s->latency_gaps);
	json_kv_u64(w, "avg_ns", s->latency_gaps ? s->latency_sum_ns / s->latency_gaps : 0);
	json_kv_u64(w, "max_ns", s->latency_max_ns);
	json_obj_end(w);
	json_kv_u64(w, "uncertainty_max_ns", s->uncertainty_max_ns);
	json_key(w, "sources");
	{
		/* hypervisor and guest sources in one list, each ordered by total */
		const struct hostagg_msrc *hs[MV_MAX_LIST], *gs[MV_MAX_LIST];
		uint32_t nh = hostagg_msrc_sorted(v, VN_HOST_MSRC_HOST, hs, (uint32_t)top);
		uint32_t ng = hostagg_msrc_sorted(v, VN_HOST_MSRC_GUEST, gs, (uint32_t)top);
		uint32_t a = 0, b = 0;

		json_arr_begin(w);
		while (a < nh || b < ng)
			json_source(c, v,
				    b >= ng || (a < nh && hs[a]->total_ns >= gs[b]->total_ns)
					? hs[a++]
					: gs[b++]);
		json_arr_end(w);
	}
	json_worst(c, v);
	json_key(w, "guest_only");
	json_obj_begin(w);
	json_kv_u64(w, "gaps", s->gonly_gaps);
	json_kv_u64(w, "gap_ns", s->gonly_gap_ns);
	json_key(w, "classes");
	json_guest_classes(w, s->gonly_ns, true);
	json_key(w, "sources");
	json_sources(c, v, VN_HOST_MSRC_GONLY);
	json_obj_end(w);
	json_obj_end(w);
}

static void json_head(struct hostview_ctx *c)
{
	hostview_json_head(c->w, "vnoise.match/1", c->in);
	json_kv_str(c->w, "dispatch", c->in->dispatch);
	json_kv_u64(c->w, "dispatch_dropped", c->in->schedlog_drops);
	json_kv_u64(c->w, "self_cpu_ns", c->in->self_cpu_ns);
	if (c->in->rounds)
		json_kv_u64(c->w, "rounds", c->in->rounds);
}

static void json_domain(struct hostview_ctx *c, const struct hostagg_domain *d)
{
	struct json_writer *w = c->w;

	json_obj_begin(w);
	json_kv_str(w, "name", d->name);
	json_kv_str(w, "uuid", d->uuid);
	json_kv_str(w, "virt", d->virt);
	json_kv_bool(w, "running", d->running);
	if (d->chan_seen) {
		json_chan(w, &d->chan);
	} else {
		json_key(w, "channel");
		json_null(w);
	}
	json_key(w, "vcpus");
	json_arr_begin(w);
	for (uint32_t j = 0; j < d->nvcpus; j++)
		if (d->vcpus[j].match.seen)
			json_vcpu(c, j, &d->vcpus[j]);
	json_arr_end(w);
	json_guest_net(w, d, MV_MAX_LIST);
	hostview_flows_json(w, d, c->in);
	hostview_dtl_json(w, d, c->in);
	json_obj_end(w);
}

const struct hostview_ops matchview_json_ops = {
	.json = true,
	.needs_match = true,
	.head = json_head,
	.domain = json_domain,
};
