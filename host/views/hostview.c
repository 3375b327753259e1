/* SPDX-License-Identifier: MIT */
/*
 * hostview: text and JSON views of vnoise-host's engine (see hostview.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "views/hostview.h"
#include "engine/live.h"
#include "util/json.h"
#include "util/log.h"
#include "util/version.h"
#include "attrib/explain.h"
#include "attrib/merge.h"
#include "net/tapflow.h"
#include "match/matchview.h"
#include "util/termsafe.h"

#define HV_MAX_LIST 1000

static const char *const dir_names[VN_HOST_FLOW_NDIR] = { "to_guest", "from_guest" };
static const char *const dir_labels[VN_HOST_FLOW_NDIR] = { "into guest", "from guest" };

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static double per_s(uint64_t n, uint64_t span_ns)
{
	return span_ns ? (double)n * 1e9 / (double)span_ns : 0.0;
}

/* Append to buf (NUL-terminated, len bytes) without overflowing it. */
static void cat(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat(char *buf, size_t len, const char *fmt, ...)
{
	size_t n = strnlen(buf, len);
	va_list ap;

	if (n + 1 >= len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
}

void hostview_out_line(const struct hostagg_vcpu *v, uint64_t span_ns, int top, char *buf,
		       size_t len)
{
	const struct hostagg_preempt *pre[8];
	struct hostagg_split s;
	uint32_t n, k;

	hostagg_out_split(v, &s);
	buf[0] = 0;
	cat(buf, len, "out %.1f%% = preempted %.1f", pct(s.out_ns, span_ns),
	    pct(s.preempt_ns, span_ns));
	n = hostagg_preempt_sorted(v, pre, top < 0 ? 0 : top > 8 ? 8 : (uint32_t)top);
	for (k = 0; k < n; k++) {
		char cm[TERMSAFE_LEN(16)];

		cat(buf, len, "%s%s[%u] %.1f", k ? ", " : " (",
		    termsafe(cm, sizeof(cm), pre[k]->comm, 16), pre[k]->pid,
		    pct(pre[k]->total_ns, span_ns));
	}
	if (n)
		cat(buf, len, "%s)", v->npreempt > n ? ", ..." : "");
	cat(buf, len, " + waiting %.1f + halted %.1f + exits %.1f + irq %.1f",
	    pct(s.wait_ns, span_ns), pct(s.halted_ns, span_ns), pct(s.exit_ns, span_ns),
	    pct(s.irq_ns, span_ns));
}

void hostview_steal_line(const struct hostagg_vcpu *v, uint64_t span_ns, char *buf, size_t len)
{
	struct hostagg_split s;

	hostagg_out_split(v, &s);
	snprintf(
	    buf, len,
	    "steal %.1f%% = the guest's steal clock: the scheduler's count of preempted + waiting "
	    "(%.1f%% in the dispatch log); halted, exits and irq are not in it",
	    pct(v->steal_ns, span_ns), pct(s.preempt_ns + s.wait_ns, span_ns));
}

void hostview_list_begin(struct hostview_list *l, FILE *f, int width, int indent, const char *label)
{
	l->f = f;
	l->width = width;
	l->indent = indent;
	l->n = 0;
	fputs(label, f);
	l->col = (int)strlen(label);
}

void hostview_list_item(struct hostview_list *l, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (len < 0)
		return;
	if (len >= (int)sizeof(buf))
		len = (int)sizeof(buf) - 1;
	/* " " before the first item, ", " before the others; a new line instead if it would pass width
	 * (with room for the "," that ends a line) */
	if (l->width && l->col > l->indent && l->col + 3 + len > l->width) {
		fprintf(l->f, "%s\n%*s", l->n ? "," : "", l->indent, "");
		l->col = l->indent;
	} else if (l->col > l->indent || l->n) {
		fputs(l->n ? ", " : " ", l->f);
		l->col += l->n ? 2 : 1;
	}
	fputs(buf, l->f);
	l->col += len;
	l->n++;
}

void hostview_list_end(struct hostview_list *l, const char *empty)
{
	if (!l->n && empty)
		fprintf(l->f, " %s", empty);
	fputc('\n', l->f);
}

bool hostview_is_self(const struct hostinfo *in, uint32_t tid)
{
	for (int i = 0; i < in->nself && i < HOSTINFO_MAX_SELF; i++)
		if (tid && in->self_tids[i] == tid)
			return true;
	return false;
}

bool hostview_is_vnoise_comm(const char *comm)
{
	return !strncmp(comm, "vnoise-", 7);
}

const char *hostview_agg_kind(uint16_t kind)
{
	switch (kind) {
	case VN_HOST_AGG_IRQ:
		return "irq";
	case VN_HOST_AGG_SOFTIRQ:
		return "softirq";
	case VN_HOST_AGG_VECTOR:
		return "vector";
	case VN_HOST_AGG_EXIT:
		return "exit";
	default:
		return "?";
	}
}

void hostview_agg_name(const struct hostagg *a, const struct hostagg_aggent *e, char *buf,
		       size_t len)
{
	const char *n;

	switch (e->kind) {
	case VN_HOST_AGG_IRQ:
		n = hostagg_irq_name(a, e->id);
		if (n)
			snprintf(buf, len, "%u:%s", e->id, n);
		else
			snprintf(buf, len, "%u", e->id);
		break;
	case VN_HOST_AGG_SOFTIRQ:
		snprintf(buf, len, "%s", merge_softirq_name(e->id));
		break;
	case VN_HOST_AGG_VECTOR:
		snprintf(buf, len, "%s", merge_vector_name(e->id));
		break;
	case VN_HOST_AGG_EXIT:
		n = hostagg_exit_name(e->isa, e->id);
		if (n)
			snprintf(buf, len, "%s", n);
		else
			snprintf(buf, len, "%s_%u", e->isa == 2 ? "SVM" : "VMX", e->id);
		break;
	default:
		snprintf(buf, len, "%u", e->id);
		break;
	}
}

static uint64_t vcpu_span(const struct hostagg_vcpu *v, const struct hostinfo *in)
{
	if (v->periods && v->last_ns > v->first_ns)
		return v->last_ns - v->first_ns;
	return in->end_ns > in->start_ns ? in->end_ns - in->start_ns : 0;
}

static const char *exits_note(const struct hostagg_domain *d, const struct hostinfo *in)
{
	if (!strcmp(d->virt, "qemu"))
		return "TCG domain: no VM exits (QEMU emulates the CPU in its vCPU threads)";
	if (!in->kvm)
		return "VM-exit tracing off";
	return NULL;
}

static bool has_flows(const struct hostagg_domain *d)
{
	return d->net && (d->net->ntaps || d->net->nflows || d->net->other[0].packets ||
			  d->net->other[1].packets);
}

/* How many flows a direction lists: --flows-top, clamped to [1, HV_MAX_LIST]. */
static uint32_t flows_top(const struct hostinfo *in)
{
	if (in->flows_top < 1)
		return 1;
	return in->flows_top > HV_MAX_LIST ? HV_MAX_LIST : (uint32_t)in->flows_top;
}

/* Text views: the wrap width of a showing's lists (0 with --wide). */
static int text_width(const struct hostinfo *in)
{
	return in->wide ? 0 : HOSTVIEW_WIDTH;
}

static void text_taps(FILE *f, const struct hostagg_net *n, int width)
{
	for (uint32_t i = 0; i < n->ntaps; i++) {
		const struct hostagg_tap *t = &n->tap[i];
		struct hostview_list l;
		char label[48];

		snprintf(label, sizeof(label), "  tap %.16s:", t->tap);
		hostview_list_begin(&l, f, width, 6, label);
		hostview_list_item(&l, "into guest %" PRIu64 " pkts %" PRIu64 " B", t->packets[0],
				   t->bytes[0]);
		hostview_list_item(&l, "from guest %" PRIu64 " pkts %" PRIu64 " B", t->packets[1],
				   t->bytes[1]);
		if (t->dropped[0] || t->dropped[1])
			hostview_list_item(
			    &l, "capture DROPPED %" PRIu64 " into / %" PRIu64 " from guest",
			    t->dropped[0], t->dropped[1]);
		if (t->overflow[0] || t->overflow[1])
			hostview_list_item(&l,
					   "%" PRIu64 " frames in other flows (flow table full)",
					   t->overflow[0] + t->overflow[1]);
		if (t->truncated)
			hostview_list_item(&l, "%" PRIu64 " frames with cut headers", t->truncated);
		if (t->failed)
			hostview_list_item(&l, "capture FAILED in %u of %u periods", t->failed,
					   t->periods);
		hostview_list_end(&l, NULL);
	}
	if (n->taps_dropped)
		fprintf(f, "  (%" PRIu64 " tap records of further taps not shown)\n",
			n->taps_dropped);
}

/* A direction's top flows as a table: bytes, packets, then the flow (and its tap if there are several). */
static void text_flows(FILE *f, const struct hostagg_domain *d, unsigned dir, uint32_t top)
{
	const struct vn_host_flow *fl[HV_MAX_LIST];
	const struct hostagg_net *n = d->net;
	uint32_t cnt = hostagg_flows_sorted(d, dir, fl, top);

	if (!cnt && !n->other[dir].packets)
		return;
	fprintf(f, "  flows %s, largest first:\n", dir_labels[dir]);
	fprintf(f, "    %12s %9s  %s\n", "bytes", "packets", "flow");
	for (uint32_t k = 0; k < cnt; k++) {
		char lbl[160];

		fprintf(f, "    %12llu %9llu  %s", (unsigned long long)fl[k]->bytes,
			(unsigned long long)fl[k]->packets, tapflow_label(fl[k], lbl, sizeof(lbl)));
		if (n->ntaps > 1)
			fprintf(f, " (%.16s)", fl[k]->tap);
		fputc('\n', f);
	}
	if (n->other[dir].packets)
		fprintf(f, "    %12llu %9llu  other flows (tables full)\n",
			(unsigned long long)n->other[dir].bytes,
			(unsigned long long)n->other[dir].packets);
}

void hostview_flows_text(FILE *f, const struct hostagg_domain *d, const struct hostinfo *in)
{
	if (!has_flows(d))
		return;
	text_taps(f, d->net, text_width(in));
	for (unsigned dir = 0; dir < VN_HOST_FLOW_NDIR; dir++)
		text_flows(f, d, dir, flows_top(in));
}

static void json_flow(struct json_writer *w, const struct vn_host_flow *x)
{
	char buf[INET6_ADDRSTRLEN + 24];

	json_obj_begin(w);
	json_kv_str(w, "dir", x->dir < VN_HOST_FLOW_NDIR ? dir_names[x->dir] : "?");
	json_kv_str(w, "kind", x->kind == VN_HOST_FLOW_KIND_OTHER ? "other_flows" : "flow");
	json_key(w, "tap");
	json_strn(w, x->tap, strnlen(x->tap, sizeof(x->tap)));
	json_kv_str(w, "proto", tapflow_proto_name(x, buf, sizeof(buf)));
	json_kv_u64(w, "ethertype", x->ethertype);
	json_kv_u64(w, "ip", x->ipver);
	json_kv_u64(w, "ipproto", x->proto);
	json_kv_str(w, "src", tapflow_addr(x, 0, buf, sizeof(buf)));
	json_kv_u64(w, "sport", x->sport);
	json_kv_str(w, "dst", tapflow_addr(x, 1, buf, sizeof(buf)));
	json_kv_u64(w, "dport", x->dport);
	json_kv_bool(w, "fragments", x->flags & VN_HOST_FLOW_F_FRAG);
	json_kv_bool(w, "truncated", x->flags & VN_HOST_FLOW_F_TRUNC);
	json_kv_u64(w, "packets", x->packets);
	json_kv_u64(w, "bytes", x->bytes);
	json_obj_end(w);
}

static void json_capture(struct json_writer *w, const struct hostagg_net *n)
{
	json_key(w, "capture");
	json_obj_begin(w);
	json_key(w, "taps");
	json_arr_begin(w);
	for (uint32_t i = 0; i < n->ntaps; i++) {
		const struct hostagg_tap *t = &n->tap[i];

		json_obj_begin(w);
		json_kv_str(w, "tap", t->tap);
		json_kv_u64(w, "periods", t->periods);
		json_kv_u64(w, "failed_periods", t->failed);
		for (unsigned dir = 0; dir < VN_HOST_FLOW_NDIR; dir++) {
			json_key(w, dir_names[dir]);
			json_obj_begin(w);
			json_kv_u64(w, "packets", t->packets[dir]);
			json_kv_u64(w, "bytes", t->bytes[dir]);
			json_kv_u64(w, "dropped", t->dropped[dir]);
			json_kv_u64(w, "overflow", t->overflow[dir]);
			json_obj_end(w);
		}
		json_kv_u64(w, "truncated", t->truncated);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_kv_u64(w, "flows_dropped", n->flows_dropped);
	json_kv_u64(w, "taps_dropped", n->taps_dropped);
	json_obj_end(w);
}

void hostview_dtl_json(struct json_writer *w, const struct hostagg_domain *d,
		       const struct hostinfo *in)
{
	for (int i = 0; i < in->ndtl; i++) {
		const struct hostinfo_dtl *x = &in->dtl[i];

		if (strcmp(x->name, d->name))
			continue;
		json_key(w, "dtl");
		json_obj_begin(w);
		json_kv_str(w, "state", x->state);
		json_kv_str(w, "detail", x->detail);
		json_kv_u64(w, "published", x->published);
		json_kv_u64(w, "dropped", x->dropped);
		json_obj_end(w);
		if (x->bell) {
			json_key(w, "bell");
			json_obj_begin(w);
			json_kv_str(w, "state", x->bell);
			json_kv_u64(w, "rings", x->bell_rings);
			json_kv_u64(w, "arms", x->bell_arms);
			json_obj_end(w);
		}
		if (x->region) {
			json_key(w, "region");
			json_obj_begin(w);
			json_kv_str(w, "state", x->region);
			if (x->region_why[0])
				json_kv_str(w, "why", x->region_why);
			json_kv_u64(w, "refused", x->region_refused);
			json_kv_u64(w, "lost", x->region_lost);
			json_obj_end(w);
		}
		return;
	}
}

void hostview_flows_json(struct json_writer *w, const struct hostagg_domain *d,
			 const struct hostinfo *in)
{
	const struct vn_host_flow *fl[HV_MAX_LIST];

	if (!has_flows(d))
		return;
	json_capture(w, d->net);
	json_key(w, "flows");
	json_arr_begin(w);
	for (unsigned dir = 0; dir < VN_HOST_FLOW_NDIR; dir++) {
		uint32_t cnt = hostagg_flows_sorted(d, dir, fl, flows_top(in));

		for (uint32_t k = 0; k < cnt; k++)
			json_flow(w, fl[k]);
		if (d->net->other[dir].packets)
			json_flow(w, &d->net->other[dir]);
	}
	json_arr_end(w);
}

/* ---- the text table ---- */

static void text_head(struct hostview_ctx *c)
{
	const struct hostinfo *in = c->in;
	uint64_t span = in->end_ns > in->start_ns ? in->end_ns - in->start_ns : 0;
	struct hostview_list l;
	char label[96];

	if (!strcmp(in->source, "live")) /* the command that measured: top, record, serve */
		snprintf(label, sizeof(label), "vnoise-host %s:", in->cmd ? in->cmd : "live");
	else
		snprintf(label, sizeof(label), "vnoise-host report %.60s:", in->source);
	/* the heading wraps even with --wide: only the table's rows are kept whole */
	hostview_list_begin(&l, c->f, HOSTVIEW_WIDTH, 2, label);
	hostview_list_item(&l, "%.1f s", (double)span / 1e9);
	hostview_list_item(&l, "period %.3g s", (double)in->period_ns / 1e9);
	hostview_list_item(&l, "dispatch log %s", in->dispatch);
	if (strcmp(in->dispatch, "off"))
		hostview_list_item(&l, "%s", in->irqs ? "host irqs" : "no host irqs");
	if (in->kvm)
		hostview_list_item(&l, "kvm exits");
	if (in->schedlog_drops || in->events_dropped)
		hostview_list_item(
		    &l, "LOST %" PRIu64 " dispatch records and %" PRIu64 " lifecycle events",
		    in->schedlog_drops, in->events_dropped);
	if (in->reconnects)
		hostview_list_item(&l, "%u libvirt reconnects", in->reconnects);
	hostview_list_end(&l, NULL);
}

/*
 * The vCPU table: one format for the header and the rows (the columns of both are the same by
 * construction); times in the column's unit. With --wide the preemptors follow on the row.
 */
#define ROW_HEAD "  %4s %8s %4s %7s %7s %7s %7s %8s %8s %9s"
#define ROW_VALS "  %4u %8u %4s %7.2f %7.2f %7.2f %7.2f %8.1f %8.1f %9.0f"

static void text_vcpu_head(struct hostview_ctx *c)
{
	fprintf(c->f, ROW_HEAD, "vCPU", "tid", "pCPU", "cpu%", "steal%", "out%", "prmpt%", "out/s",
		"sw/s", "maxout_us");
	fprintf(c->f, "%s\n", c->width ? "" : "  preemptors");
}

/* text on lines of at most width columns (0: one line), broken at spaces, indent spaces before each, two
 * more before continuation lines. */
static void put_wrapped(FILE *f, int width, int indent, const char *text)
{
	int col = 0, first = 1;

	while (*text) {
		int w = (int)strcspn(text, " ");

		if (!col) {
			col = fprintf(f, "%*s", indent + (first ? 0 : 2), "");
			first = 0;
		} else if (width && col + 1 + w > width) {
			fputc('\n', f);
			col = 0;
			continue;
		} else {
			col += fprintf(f, " ");
		}
		col += fprintf(f, "%.*s", w, text);
		text += w;
		while (*text == ' ')
			text++;
	}
	if (col)
		fputc('\n', f);
}

/*
 * Its top preemptors (share of its out-time, out intervals they ran in) and the idle share; then the out-time
 * split, how steal relates to it, and the tasks that ran only while it was halted (not preemptors).
 */
static void text_preemptors(struct hostview_ctx *c, const struct hostagg_vcpu *v, uint64_t vs)
{
	const struct hostagg_preempt *pre[HV_MAX_LIST];
	struct hostview_list l;
	struct hostagg_split sp;
	char line[512], cm[TERMSAFE_LEN(16)];
	uint32_t k, n;

	hostagg_out_split(v, &sp);

	if (c->width)
		hostview_list_begin(&l, c->f, c->width, 9,
				    "       preemptors (% of out-time, times):");
	else
		hostview_list_begin(&l, c->f, 0, 0, " ");
	n = hostagg_preempt_sorted(v, pre, (uint32_t)c->top);
	for (k = 0; k < n; k++)
		hostview_list_item(&l, "%s[%u]%s %.1f%% (%" PRIu64 ")",
				   termsafe(cm, sizeof(cm), pre[k]->comm, 16), pre[k]->pid,
				   hostview_is_self(c->in, pre[k]->pid) ? " (vnoise)" : "",
				   pct(pre[k]->total_ns, sp.out_ns), pre[k]->count);
	if (v->idle_ns)
		hostview_list_item(&l, "idle %.1f%%", pct(v->idle_ns, sp.out_ns));
	hostview_list_end(&l, "-");
	hostview_out_line(v, vs, 3, line, sizeof(line));
	put_wrapped(c->f, c->width, 7, line);
	hostview_steal_line(v, vs, line, sizeof(line));
	put_wrapped(c->f, c->width, 7, line);
	n = hostagg_halted_sorted(v, pre, (uint32_t)c->top);
	if (!n)
		return;
	hostview_list_begin(&l, c->f, c->width, 9,
			    "       ran while it was halted (not preemptors):");
	for (k = 0; k < n; k++)
		hostview_list_item(&l, "%s[%u] %.1f%%", termsafe(cm, sizeof(cm), pre[k]->comm, 16),
				   pre[k]->pid, pct(pre[k]->halted_ns, vs));
	hostview_list_end(&l, NULL);
}

/* The vCPU's row: counters, then its preemptors (on the row with --wide, else on their own lines). */
static void text_vcpu_row(struct hostview_ctx *c, uint32_t j, const struct hostagg_vcpu *v,
			  uint64_t vs)
{
	struct hostagg_split sp;
	char cpu[12] = "-";

	hostagg_out_split(v, &sp);
	if (v->cpu != ~0u)
		snprintf(cpu, sizeof(cpu), "%u", v->cpu);
	fprintf(c->f, ROW_VALS, j, v->tid, cpu, pct(v->exec_ns, vs), pct(v->steal_ns, vs),
		pct(sp.out_ns, vs), pct(sp.preempt_ns, vs), per_s(v->out_periods, vs),
		per_s(v->pcount, vs), (double)v->max_out_ns / 1e3);
	if (c->width)
		fputc('\n', c->f);
	text_preemptors(c, v, vs);
}

/* The vCPU's VM exits (rate, average length) and host IRQs by kind (rate, share of its time). */
static void text_vcpu_aggs(struct hostview_ctx *c, const struct hostagg_vcpu *v, uint64_t vs)
{
	const struct hostagg_aggent *ag[HV_MAX_LIST];
	struct hostview_list l;
	char lbl[48];
	uint32_t k, n;

	n = hostagg_agg_sorted(v, VN_HOST_AGG_EXIT, ag, (uint32_t)c->top);
	if (n) {
		hostview_list_begin(&l, c->f, c->width, 9, "       exits/s:");
		for (k = 0; k < n; k++) {
			hostview_agg_name(c->a, ag[k], lbl, sizeof(lbl));
			hostview_list_item(
			    &l, "%s %.0f (avg %.1f us)", lbl, per_s(ag[k]->count, vs),
			    ag[k]->count ? (double)ag[k]->total_ns / 1e3 / (double)ag[k]->count
					 : 0.0);
		}
		hostview_list_end(&l, NULL);
	}
	for (uint16_t kind = VN_HOST_AGG_IRQ; kind <= VN_HOST_AGG_VECTOR; kind++) {
		char label[32];

		n = hostagg_agg_sorted(v, kind, ag, (uint32_t)c->top);
		if (!n)
			continue;
		snprintf(label, sizeof(label), "       host %s:", hostview_agg_kind(kind));
		hostview_list_begin(&l, c->f, c->width, 9, label);
		for (k = 0; k < n; k++) {
			double r = per_s(ag[k]->count, vs), sh = pct(ag[k]->total_ns, vs);
			char rate[24], share[24];

			/* a rare interrupt is not "0/s 0.000%": its rate with a decimal, or "<0.1" */
			if (r >= 9.95)
				snprintf(rate, sizeof(rate), "%.0f", r);
			else if (r >= 0.05)
				snprintf(rate, sizeof(rate), "%.1f", r);
			else
				snprintf(rate, sizeof(rate), "<0.1");
			if (sh >= 0.0005 || !ag[k]->total_ns)
				snprintf(share, sizeof(share), "%.3f%%", sh);
			else
				snprintf(share, sizeof(share), "<0.001%%");
			hostview_agg_name(c->a, ag[k], lbl, sizeof(lbl));
			hostview_list_item(&l, "%s %s/s %s", lbl, rate, share);
		}
		hostview_list_end(&l, NULL);
	}
}

static void text_domain(struct hostview_ctx *c, const struct hostagg_domain *d)
{
	FILE *f = c->f;
	const char *note;
	struct explain_totals ex = {
		.host = 1
	}; /* total: the vCPUs' time; steal: their run-queue wait */
	char nm[TERMSAFE_LEN(sizeof(d->name))], vt[TERMSAFE_LEN(sizeof(d->virt))];

	fprintf(f, "domain %s (%s, qemu pid %u, %s%s)\n",
		d->name[0] ? termsafe(nm, sizeof(nm), d->name, sizeof(d->name)) : "?",
		d->virt[0] ? termsafe(vt, sizeof(vt), d->virt, sizeof(d->virt)) : "?", d->qemu_pid,
		d->running ? "running" : "stopped", d->starts > 1 ? ", restarted" : "");
	text_vcpu_head(c);
	for (uint32_t j = 0; j < d->nvcpus; j++) {
		const struct hostagg_vcpu *v = &d->vcpus[j];
		uint64_t vs = vcpu_span(v, c->in);

		if (!v->seen)
			continue;
		text_vcpu_row(c, j, v, vs);
		text_vcpu_aggs(c, v, vs);
		ex.total_ns += vs;
		ex.steal_ns += v->steal_ns < vs ? v->steal_ns : vs;
	}
	explain_footer(f, &ex, HOSTVIEW_WIDTH); /* folded with --wide too */
	note = exits_note(d, c->in);
	if (note) {
		struct hostview_list l;

		hostview_list_begin(&l, f, c->width, 4, "  exits:");
		hostview_list_item(&l, "%s", note);
		hostview_list_end(&l, NULL);
	}
	hostview_flows_text(f, d, c->in);
}

const struct hostview_ops hostview_text_ops = {
	.head = text_head,
	.domain = text_domain,
};

/* ---- the JSON document vnoise.host/1 ---- */

static void json_aggs(struct json_writer *w, const struct hostagg *a, const struct hostagg_vcpu *v,
		      uint16_t kind, int top)
{
	const struct hostagg_aggent *ag[HV_MAX_LIST];
	uint32_t n = hostagg_agg_sorted(v, kind, ag, (uint32_t)top), k;

	for (k = 0; k < n; k++) {
		char lbl[48];

		hostview_agg_name(a, ag[k], lbl, sizeof(lbl));
		json_obj_begin(w);
		if (kind == VN_HOST_AGG_EXIT) {
			json_kv_str(w, "reason", lbl);
			json_kv_str(w, "isa", ag[k]->isa == 2 ? "svm" : "vmx");
		} else {
			json_kv_str(w, "kind", hostview_agg_kind(kind));
			json_kv_str(w, "name", lbl);
		}
		json_kv_u64(w, "id", ag[k]->id);
		json_kv_u64(w, "count", ag[k]->count);
		json_kv_u64(w, "total_ns", ag[k]->total_ns);
		json_kv_u64(w, "max_ns", ag[k]->max_ns);
		json_obj_end(w);
	}
}

void hostview_json_head(struct json_writer *w, const char *schema, const struct hostinfo *in)
{
	json_obj_begin(w);
	json_kv_str(w, "schema", schema);
	json_kv_str(w, "version", version_string());
	json_kv_str(w, "source", in->source);
	json_kv_u64(w, "start_ns", in->start_ns);
	json_kv_u64(w, "end_ns", in->end_ns);
	json_kv_u64(w, "duration_ns", in->end_ns > in->start_ns ? in->end_ns - in->start_ns : 0);
	json_kv_u64(w, "period_ns", in->period_ns);
}

/* "dispatch": the host tracing's mode, losses and BPF program statistics. */
static void json_dispatch(struct json_writer *w, const struct hostinfo *in)
{
	json_key(w, "dispatch");
	json_obj_begin(w);
	json_kv_str(w, "mode", in->dispatch);
	json_kv_bool(w, "host_irqs", in->irqs);
	json_kv_bool(w, "kvm_exits", in->kvm);
	json_kv_u64(w, "dropped", in->schedlog_drops);
	json_kv_u64(w, "anomalies", in->schedlog_anomalies);
	json_kv_u64(w, "bpf_events", in->bpf_events);
	json_kv_u64(w, "bpf_run_ns", in->bpf_run_ns);
	json_key(w, "programs");
	json_arr_begin(w);
	for (int pi = 0; pi < in->nprogs; pi++) {
		json_obj_begin(w);
		json_kv_str(w, "name", in->prog_names[pi]);
		json_kv_u64(w, "run_cnt", in->prog_cnt[pi]);
		json_kv_u64(w, "run_time_ns", in->prog_ns[pi]);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_obj_end(w);
}

static void json_head(struct hostview_ctx *c)
{
	struct json_writer *w = c->w;

	hostview_json_head(w, "vnoise.host/1", c->in);
	json_dispatch(w, c->in);
	json_kv_u64(w, "lifecycle_events_dropped", c->in->events_dropped);
	json_kv_u64(w, "reconnects", c->in->reconnects);
	json_kv_u64(w, "self_cpu_ns", c->in->self_cpu_ns);
	if (c->in->rounds)
		json_kv_u64(w, "rounds", c->in->rounds);
	json_kv_u64(w, "bad_records", c->a->bad_records);
}

static void json_preemptors(struct json_writer *w, const struct hostagg_vcpu *v, int top,
			    const struct hostinfo *in)
{
	const struct hostagg_preempt *pre[HV_MAX_LIST];
	uint32_t n = hostagg_preempt_sorted(v, pre, (uint32_t)top);

	json_key(w, "preemptors");
	json_arr_begin(w);
	for (uint32_t k = 0; k < n; k++) {
		json_obj_begin(w);
		json_kv_str(w, "comm", pre[k]->comm);
		json_kv_u64(w, "pid", pre[k]->pid);
		json_kv_u64(w, "total_ns", pre[k]->total_ns);
		json_kv_u64(w, "count", pre[k]->count);
		json_kv_u64(w, "halted_ns", pre[k]->halted_ns);
		json_kv_bool(w, "vnoise", hostview_is_self(in, pre[k]->pid));
		json_obj_end(w);
	}
	json_arr_end(w);
	/* tasks that ran while the vCPU was halted: apart, never preemptors */
	n = hostagg_halted_sorted(v, pre, (uint32_t)top);
	json_key(w, "halted_tasks");
	json_arr_begin(w);
	for (uint32_t k = 0; k < n; k++) {
		json_obj_begin(w);
		json_kv_str(w, "comm", pre[k]->comm);
		json_kv_u64(w, "pid", pre[k]->pid);
		json_kv_u64(w, "halted_ns", pre[k]->halted_ns);
		json_kv_u64(w, "count", pre[k]->halted_count);
		json_kv_bool(w, "vnoise", hostview_is_self(in, pre[k]->pid));
		json_obj_end(w);
	}
	json_arr_end(w);
}

static void json_vcpu(struct hostview_ctx *c, uint32_t j, const struct hostagg_vcpu *v)
{
	struct json_writer *w = c->w;
	struct hostagg_split sp;

	json_obj_begin(w);
	json_kv_u64(w, "vcpu", j);
	json_kv_u64(w, "tid", v->tid);
	if (v->cpu == ~0u)
		json_kv_i64(w, "cpu", -1);
	else
		json_kv_u64(w, "cpu", v->cpu);
	json_kv_u64(w, "span_ns", vcpu_span(v, c->in));
	json_kv_u64(w, "periods", v->periods);
	json_kv_u64(w, "steal_ns", v->steal_ns);
	json_kv_u64(w, "cpu_ns", v->cpu_ns);
	json_kv_u64(w, "schedstat_exec_ns", v->exec_ns);
	json_kv_u64(w, "schedstat_run_delay_ns", v->run_delay_ns);
	json_kv_u64(w, "schedstat_pcount", v->pcount);
	hostagg_out_split(v, &sp);
	/* out_ns = out_preempted_ns + out_waiting_ns + out_halted_ns + out_exits_ns + out_irq_ns */
	json_kv_u64(w, "out_ns", sp.out_ns);
	json_kv_u64(w, "out_preempted_ns", sp.preempt_ns);
	json_kv_u64(w, "out_waiting_ns", sp.wait_ns);
	json_kv_u64(w, "out_halted_ns", sp.halted_ns);
	json_kv_u64(w, "out_exits_ns", sp.exit_ns);
	json_kv_u64(w, "out_irq_ns", sp.irq_ns);
	json_kv_u64(w, "out_switched_ns", sp.switched_ns);
	json_kv_u64(w, "out_periods", v->out_periods);
	json_kv_u64(w, "out_state_r_ns", v->out_r_ns);
	json_kv_u64(w, "out_blocked_ns", v->out_s_ns);
	json_kv_u64(w, "out_max_ns", v->max_out_ns);
	json_kv_u64(w, "wait_ns", v->wait_ns);
	json_kv_u64(w, "idle_ns", v->idle_ns);
	json_preemptors(w, v, c->top, c->in);
	json_key(w, "exits");
	json_arr_begin(w);
	json_aggs(w, c->a, v, VN_HOST_AGG_EXIT, c->top);
	json_arr_end(w);
	json_key(w, "host_irqs");
	json_arr_begin(w);
	json_aggs(w, c->a, v, VN_HOST_AGG_IRQ, c->top);
	json_aggs(w, c->a, v, VN_HOST_AGG_SOFTIRQ, c->top);
	json_aggs(w, c->a, v, VN_HOST_AGG_VECTOR, c->top);
	json_arr_end(w);
	json_obj_end(w);
}

static void json_domain(struct hostview_ctx *c, const struct hostagg_domain *d)
{
	struct json_writer *w = c->w;
	const char *note;

	json_obj_begin(w);
	json_kv_str(w, "name", d->name);
	json_kv_str(w, "uuid", d->uuid);
	json_kv_str(w, "virt", d->virt);
	json_kv_u64(w, "qemu_pid", d->qemu_pid);
	json_kv_bool(w, "running", d->running);
	json_kv_u64(w, "starts", d->starts);
	json_kv_u64(w, "stops", d->stops);
	note = exits_note(d, c->in);
	if (note)
		json_kv_str(w, "exits_note", note);
	json_key(w, "vcpus");
	json_arr_begin(w);
	for (uint32_t j = 0; j < d->nvcpus; j++)
		if (d->vcpus[j].seen)
			json_vcpu(c, j, &d->vcpus[j]);
	json_arr_end(w);
	hostview_flows_json(w, d, c->in);
	hostview_dtl_json(w, d, c->in);
	json_obj_end(w);
}

const struct hostview_ops hostview_json_ops = {
	.json = true,
	.head = json_head,
	.domain = json_domain,
};

/* ---- choosing and showing a view ---- */

const struct hostview_ops *hostview_pick(bool guest, bool json)
{
	if (guest)
		return json ? &matchview_json_ops : &matchview_text_ops;
	return json ? &hostview_json_ops : &hostview_text_ops;
}

int hostview_show(const struct hostview_ops *ops, FILE *f, const struct hostagg *a,
		  const struct hostinfo *in)
{
	struct json_writer w;
	struct hostview_ctx c = {
		.f = f,
		.a = a,
		.in = in,
		.w = ops->json ? &w : NULL,
		.top = in->top_n > HV_MAX_LIST ? HV_MAX_LIST : in->top_n,
		.width = text_width(in),
	};

	if (ops->json)
		json_init(&w, f, 0);
	ops->head(&c);
	if (ops->json) {
		json_key(&w, "domains");
		json_arr_begin(&w);
	}
	for (uint32_t i = 0; i < VN_HOST_MAX_DOMAINS; i++) {
		if (!a->dom[i].seen)
			continue;
		c.ndom++;
		ops->domain(&c, &a->dom[i]);
	}
	if (ops->json) {
		json_arr_end(&w); /* domains */
		json_obj_end(&w);
		return json_finish(&w);
	}
	if (!c.ndom)
		fprintf(f, "no domain monitored\n");
	fflush(f);
	return 0;
}

/* ---- the view as a sink of the live engine ---- */

struct viewsink {
	const struct hostview_ops *view;
	unsigned flags; /* HOSTVIEW_SINK_* */
	bool clear; /* a text view on a terminal without --batch: each showing redraws it */
};

void *hostview_sink_new(const struct host_params *p, unsigned flags)
{
	struct viewsink *v = calloc(1, sizeof(*v));

	if (!v)
		return NULL;
	v->view = hostview_pick(p->guest, p->json);
	v->flags = flags;
	v->clear = !v->view->json && !p->batch && isatty(STDOUT_FILENO);
	return v;
}

static void view_sink_period(void *ctx, const struct hostagg *cur, const struct hostinfo *in)
{
	struct viewsink *v = ctx;

	if (!(v->flags & HOSTVIEW_SINK_PERIODS))
		return;
	if (v->clear)
		fputs("\033[H\033[2J", stdout);
	if (hostview_show(v->view, stdout, cur, in))
		log_warn("cannot write to stdout");
}

/* The summary is data (-q silences messages only, as in vnoise-guest). */
static int view_sink_end(void *ctx, const struct hostagg *total, const struct hostinfo *in)
{
	struct viewsink *v = ctx;

	if ((v->flags & HOSTVIEW_SINK_SUMMARY) && hostview_show(v->view, stdout, total, in))
		log_warn("cannot write to stdout");
	return 0;
}

const struct live_sink_ops hostview_sink_ops = {
	.name = "view",
	.period = view_sink_period,
	.end = view_sink_end,
	.close = free,
};

int hostview_sink_add(struct live *lv, const struct host_params *p, unsigned flags)
{
	void *v = hostview_sink_new(p, flags);

	return v ? live_add_sink(lv, &hostview_sink_ops, v) : -ENOMEM;
}
