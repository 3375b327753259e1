/* SPDX-License-Identifier: MIT */
/*
 * mpidtl: hypervisor noise of a rank's interval from the dispatch trace log (see mpidtl.h). The host's
 * intervals are intersected exactly with the compute interval on the rank's CPU; the per-period aggregates
 * (VM exits, host IRQs) carry no timestamps, so dtl_aggs() prorates them to the interval; the split core
 * (shared/attrib/gapsplit) apportions both, the aggregates only up to the time nothing else explains.
 */
#include <stdio.h>
#include <string.h>
#include "attrib/gapsplit.h"
#include "mpi/mpidtl.h"

#define MPIDTL_CAUSES 16 /* distinct host causes tracked per interval; more go to the smallest */

struct cause_acc {
	uint32_t cause;
	uint8_t cls;
	uint64_t ns;
};

struct overlap_acc {
	uint64_t ns[VN_HCLASS_MAX];
	struct cause_acc c[MPIDTL_CAUSES];
	unsigned nc;
};

static void add_cause(struct overlap_acc *a, const struct dtl_span *s, uint64_t ns)
{
	unsigned i, min = 0;

	for (i = 0; i < a->nc; i++) {
		if (a->c[i].cause == s->cause && a->c[i].cls == s->cls) {
			a->c[i].ns += ns;
			return;
		}
		if (a->c[i].ns < a->c[min].ns)
			min = i;
	}
	if (a->nc < MPIDTL_CAUSES) {
		a->c[a->nc++] = (struct cause_acc){ s->cause, s->cls, ns };
		return;
	}
	if (a->c[min].ns < ns) /* the table is a top list: the smallest leaves */
		a->c[min] = (struct cause_acc){ s->cause, s->cls, ns };
}

static void on_overlap(void *ctx, const struct dtl_span *s, uint64_t ov_start, uint64_t ov_end)
{
	struct overlap_acc *a = ctx;
	uint64_t ns = ov_end > ov_start ? ov_end - ov_start : 0;
	unsigned hc =
	    s->hclass == VN_HCLASS_HOST_WAIT ? VN_HCLASS_HOST_WAIT : VN_HCLASS_HOST_PREEMPT;

	if (s->flags & VN_DTL_F_HALTED) /* the rank's CPU idle in the guest: not the hypervisor's */
		return;
	a->ns[hc] += ns;
	if (hc == VN_HCLASS_HOST_PREEMPT && ns)
		add_cause(a, s, ns);
}

static uint64_t cap(uint64_t v, uint64_t room)
{
	return v < room ? v : room;
}

uint64_t mpidtl_attribute(const struct dtl *d, struct vn_pipe_iv *r)
{
	struct overlap_acc a;
	struct dtl_aggsum ag;
	struct gapsplit_host h;
	struct gapsplit_res res;
	uint64_t comp, noise = 0, total = 0, gin[VN_CLASS_MAX];
	char buf[96];
	const char *key;
	unsigned best = 0;

	memset(&a, 0, sizeof(a));
	memset(r->hyp_ns, 0, sizeof(r->hyp_ns));
	r->hyp_cause_ns = 0;
	r->hyp_cause = 0;
	r->hyp_cause_cls = 0;
	memset(r->hyp_key, 0, sizeof(r->hyp_key));
	memset(r->hyp_name, 0, sizeof(r->hyp_name));
	if (!d || r->end_ns <= r->start_ns)
		return 0;
	comp = r->end_ns - r->start_ns;
	dtl_overlap(d, r->cpu, r->start_ns, r->end_ns, on_overlap, &a);
	memset(&h, 0, sizeof(h));
	h.ns[VN_HCLASS_HOST_PREEMPT] = a.ns[VN_HCLASS_HOST_PREEMPT];
	h.ns[VN_HCLASS_HOST_WAIT] = a.ns[VN_HCLASS_HOST_WAIT];
	memset(&ag, 0, sizeof(ag));
	if (!dtl_aggs(d, r->cpu, r->start_ns, r->end_ns, &ag)) {
		h.ns[VN_HCLASS_VMEXIT] = ag.exit_ns;
		h.ns[VN_HCLASS_HOST_IRQ] = ag.irq_ns;
	}
	/* the one split (shared/attrib/gapsplit): the interval's compute time is its quiet part; host time
	 * is taken from steal, unexplained, compute, then the guest's noise; the interval's noise_ns is kept
	 * as measured (the pipeline's own figure), the host's parts are reported beside it */
	for (int c = 0; c < VN_CLASS_MAX; c++) {
		gin[c] = r->noise_ns[c];
		noise += gin[c];
	}
	gapsplit_apportion(comp, gin, noise < comp ? comp - noise : 0, &h, &res);
	for (int c = 0; c < VN_HCLASS_MAX; c++)
		r->hyp_ns[c] = res.hyp_ns[c];
	for (unsigned i = 1; i < a.nc; i++)
		if (a.c[i].ns > a.c[best].ns)
			best = i;
	if (a.nc && a.c[best].ns) {
		r->hyp_cause = a.c[best].cause;
		r->hyp_cause_cls = a.c[best].cls;
		r->hyp_cause_ns = cap(a.c[best].ns, r->hyp_ns[VN_HCLASS_HOST_PREEMPT]);
		snprintf(r->hyp_name, sizeof(r->hyp_name), "%s",
			 dtl_cause_name(d, r->hyp_cause, r->hyp_cause_cls, buf, sizeof(buf)));
		/* NUL-padded, a 16-byte key without NUL allowed (as a comm) */
		key = dtl_cause_key(d, r->hyp_cause, r->hyp_cause_cls, buf, sizeof(buf));
		for (size_t i = 0; i < sizeof(r->hyp_key) && key[i]; i++)
			r->hyp_key[i] = key[i];
	}
	for (int c = 0; c < VN_HCLASS_MAX; c++)
		total += r->hyp_ns[c];
	return total;
}

uint64_t mpidtl_end(const struct vn_pipe_iv *r, unsigned nrec, uint64_t n)
{
	uint64_t end = 0;

	for (unsigned i = 0; i < nrec; i++)
		if (r[i].interval == n + 1 && r[i].end_ns > end)
			end = r[i].end_ns;
	return end;
}

uint32_t mpidtl_state(const struct dtl *d)
{
	if (!d)
		return VN_PIPE_DTL_OFF;
	switch (dtl_state(d)) {
	case DTL_WAITING:
		return VN_PIPE_DTL_WAITING;
	case DTL_OK:
		return VN_PIPE_DTL_OK;
	case DTL_STALE:
		return VN_PIPE_DTL_STALE;
	default:
		return VN_PIPE_DTL_ABSENT;
	}
}
