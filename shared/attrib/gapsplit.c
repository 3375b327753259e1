/* SPDX-License-Identifier: MIT */
/*
 * gapsplit: the split of a gap (see gapsplit.h). All sums are exact integers; 128-bit products where a part
 * is scaled.
 */
#include <string.h>
#include "attrib/gapsplit.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

int gapsplit_ready(uint64_t end_ns, uint64_t margin_ns, uint64_t horizon_ns)
{
	uint64_t need = end_ns + margin_ns < end_ns ? UINT64_MAX : end_ns + margin_ns;

	return need <= horizon_ns;
}

int gapsplit_uncovered(uint64_t start_ns, uint64_t covered_from_ns)
{
	return covered_from_ns && start_ns < covered_from_ns;
}

uint64_t gapsplit_clip(uint64_t a, uint64_t b, uint64_t s, uint64_t e)
{
	uint64_t lo = a > s ? a : s, hi = b < e ? b : e;

	return hi > lo ? hi - lo : 0;
}

void gapsplit_scale(uint64_t *v, size_t n, uint64_t total, uint64_t take)
{
	uint64_t acc = 0;
	size_t i, big = 0;

	if (take >= total || !n)
		return;
	for (i = 1; i < n; i++) /* the largest before scaling: a zero part never grows */
		if (v[i] > v[big])
			big = i;
	for (i = 0; i < n; i++) {
		v[i] = (uint64_t)((unsigned __int128)v[i] * take / total);
		acc += v[i];
	}
	v[big] += take - acc;
}

/* The guest classes other than steal and unexplained (NONE included: never used) and their sum. */
static int is_event_class(int c)
{
	return c != VN_CLASS_STEAL && c != VN_CLASS_UNEXPLAINED;
}

static uint64_t events_sum(const uint64_t *g)
{
	uint64_t s = 0;

	for (int c = 0; c < VN_CLASS_MAX; c++)
		if (is_event_class(c))
			s += g[c];
	return s;
}

/* Take up to want out of the event classes of g, pro rata; returns what was taken. */
static uint64_t take_events(uint64_t *g, uint64_t want)
{
	uint64_t sum = events_sum(g), v[VN_CLASS_MAX];
	size_t n = 0;
	int c;

	if (!want || !sum)
		return 0;
	want = MIN(want, sum);
	for (c = 0; c < VN_CLASS_MAX; c++)
		if (is_event_class(c))
			v[n++] = g[c];
	gapsplit_scale(v, n, sum, sum - want);
	for (c = 0, n = 0; c < VN_CLASS_MAX; c++)
		if (is_event_class(c))
			g[c] = v[n++];
	return want;
}

/* Take up to *want out of *pool. */
static void take(uint64_t *pool, uint64_t *want)
{
	uint64_t t = MIN(*pool, *want);

	*pool -= t;
	*want -= t;
}

void gapsplit_apportion(uint64_t dur_ns, const uint64_t guest_ns[VN_CLASS_MAX], uint64_t quiet_ns,
			const struct gapsplit_host *h, struct gapsplit_res *out)
{
	uint64_t g[VN_CLASS_MAX], total, spans, want, *st = &g[VN_CLASS_STEAL],
						      *un = &g[VN_CLASS_UNEXPLAINED];
	uint64_t hv[2] = { h ? h->ns[VN_HCLASS_HOST_PREEMPT] : 0,
			   h ? h->ns[VN_HCLASS_HOST_WAIT] : 0 };
	uint64_t q = quiet_ns;
	int c;

	memset(out, 0, sizeof(*out));
	memcpy(g, guest_ns, sizeof(g));
	total = events_sum(g) + *st + *un + q;
	if (total < dur_ns) { /* the parts leave a shortfall: nothing explains it */
		*un += dur_ns - total;
	} else if (total >
		   dur_ns) { /* more than the gap (overlapping events): the events give way first */
		want = total - dur_ns;
		want -= take_events(g, want);
		out->scaled = 1;
		take(un, &want);
		take(st, &want);
		take(&q, &want);
	}
	/* host time wins: steal, unexplained, quiet, then the guest's events */
	spans = hv[0] + hv[1];
	if (spans > dur_ns) {
		out->over_ns = spans - dur_ns;
		gapsplit_scale(hv, 2, spans, dur_ns);
		spans = dur_ns;
	}
	want = spans;
	take(st, &want);
	take(un, &want);
	{
		uint64_t q0 = q;

		take(&q, &want);
		out->from_quiet_ns = q0 - q;
	}
	if (want) {
		take_events(g, want);
		out->scaled = 1;
	}
	out->hyp_ns[VN_HCLASS_HOST_PREEMPT] = hv[0];
	out->hyp_ns[VN_HCLASS_HOST_WAIT] = hv[1];
	/* the aggregates: only what nothing else explains (unexplained, then quiet time) */
	for (c = VN_HCLASS_VMEXIT; c <= VN_HCLASS_HOST_IRQ; c++) {
		uint64_t a = h ? h->ns[c] : 0, left;

		want = a;
		take(un, &want);
		left = want;
		take(&q, &want);
		out->from_quiet_ns += left - want;
		out->hyp_ns[c] = a - want;
	}
	out->hyp_ns[VN_HCLASS_HW] = *un;
	*un = 0;
	for (c = 0; c < VN_CLASS_MAX; c++) {
		out->guest_ns[c] = g[c];
		out->from_guest_ns[c] = guest_ns[c] > g[c] ? guest_ns[c] - g[c] : 0;
	}
	out->quiet_ns = q;
}
