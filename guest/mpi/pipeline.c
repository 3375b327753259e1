/* SPDX-License-Identifier: MIT */
/*
 * pipeline: the interval pipeline on a struct vn_pipe shared by the ranks of a job (see pipeline.h and
 * protocol/README.md, "Interval pipeline"). Every call is O(ranks), allocates nothing and makes no syscall:
 * ranks run them inside their synchronisation calls. Concurrency rests on two words per slot, both changed by
 * compare-and-swap only: the ticket (which interval the slot holds, how many ranks closed it) and the state
 * (tracked -> filtering -> filtered -> reported; resetting while a first arrival takes the slot over).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "attrib/classes.h"
#include "mpi/appstat.h"
#include "mpi/pipeline.h"
#include "format/datagram.h"
#include "util/bufout.h"
#include "attrib/merge.h"
#include "dtl.h"

/*
 * Transient states, internal to this file (enum vn_pipe_state stays the ABI's three values). A reader of
 * the shared buffer may still see them: FILTERING while one filter runs (it keeps a second one out),
 * RESETTING while the first arrival of a newer interval takes the slot over.
 */
#define PIPELINE_FILTERING 3u
#define PIPELINE_RESETTING 4u

#define TICKET_SHIFT 16
#define TICKET_COUNT 0xffffull

static inline uint64_t ticket_iv(uint64_t t)
{
	return t >> TICKET_SHIFT;
}

/* Records to look at: h.nranks when set (the job's size), never past the array. */
static unsigned rank_limit(const struct vn_pipe *p)
{
	uint32_t n = __atomic_load_n(&p->h.nranks, __ATOMIC_RELAXED);

	return n && n < VN_PIPE_RANKS ? n : VN_PIPE_RANKS;
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t s;

	return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
}

/* a * x > b * y, exactly: the records come from other processes and may hold any value. */
static inline int mul_gt(uint64_t a, uint64_t x, uint64_t b, uint64_t y)
{
	return (unsigned __int128)a * x > (unsigned __int128)b * y;
}

/* 2 * part >= whole without overflow: "part explains at least half of whole". */
static inline int half_or_more(uint64_t part, uint64_t whole)
{
	return part >= whole / 2 + (whole & 1);
}

static uint64_t hyp_total(const struct vn_pipe_iv *r)
{
	uint64_t sum = 0;

	for (int c = 0; c < VN_HCLASS_MAX; c++)
		sum = sat_add(sum, r->hyp_ns[c]);
	return sum;
}

/*
 * The noise of a record split into guest classes and hypervisor classes. With hyp (VN_PIPE_F_HYP, the DTL
 * view), the DTL explains the guest's steal time: steal counts only beyond the hypervisor total, so that no
 * time counts twice. Without, the hypervisor figures are ignored (the guest-only view). masked: only the
 * classes in class_mask, each from min_noise_ns up (the filter's rule); else every class.
 */
static void noise_split(const struct vn_pipe *p, const struct vn_pipe_iv *r, int hyp, int masked,
			uint64_t *guest, uint64_t *hv)
{
	uint64_t h, g = 0, hm = 0, any = 0;

	/* most intervals have no noise at all: one pass of ORs instead of the rules */
	for (int c = 0; c < VN_CLASS_MAX; c++)
		any |= r->noise_ns[c];
	for (int c = 0; hyp && c < VN_HCLASS_MAX; c++)
		any |= r->hyp_ns[c];
	if (!any) {
		*guest = *hv = 0;
		return;
	}
	h = hyp ? hyp_total(r) : 0;
	for (int c = 0; c < VN_CLASS_MAX; c++) {
		uint64_t ns = r->noise_ns[c];

		if (c == VN_CLASS_STEAL)
			ns = ns > h ? ns - h : 0;
		if (!masked || ((p->h.class_mask & (1u << c)) && ns >= p->h.min_noise_ns))
			g = sat_add(g, ns);
	}
	for (int c = 0; hyp && c < VN_HCLASS_MAX; c++)
		if (!masked || r->hyp_ns[c] >= p->h.min_noise_ns)
			hm = sat_add(hm, r->hyp_ns[c]);
	*guest = g;
	*hv = hm;
}

/* The noise the filter counts: classes in class_mask, each only from min_noise_ns up. */
static uint64_t masked_noise_v(const struct vn_pipe *p, const struct vn_pipe_iv *r, int hyp)
{
	uint64_t g, h;

	noise_split(p, r, hyp, 1, &g, &h);
	return sat_add(g, h);
}

static int use_hyp(const struct vn_pipe *p)
{
	return !!(p->h.flags & VN_PIPE_F_HYP);
}

static uint64_t masked_noise(const struct vn_pipe *p, const struct vn_pipe_iv *r)
{
	return masked_noise_v(p, r, use_hyp(p));
}

/* Every class, whatever the rules: the time the rank was kept off its work. */
static uint64_t all_noise(const struct vn_pipe *p, const struct vn_pipe_iv *r, int hyp)
{
	uint64_t g, h;

	noise_split(p, r, hyp, 0, &g, &h);
	return sat_add(g, h);
}

/* Without a PMU, on-CPU time net of every kind of noise stands for the work a rank did. */
static uint64_t work_ns(const struct vn_pipe *p, uint64_t compute_ns, const struct vn_pipe_iv *r,
			int hyp)
{
	uint64_t noise = all_noise(p, r, hyp);

	return compute_ns - (noise < compute_ns ? noise : compute_ns);
}

void pipeline_init(struct vn_pipe *p, const char *job, double pct, uint64_t min_noise_ns,
		   uint32_t class_mask, uint32_t flags)
{
	double x = pct * 100.0 + 0.5;

	p->h.magic = VN_PIPE_MAGIC;
	p->h.version = VN_PIPE_VERSION;
	snprintf(p->h.job, sizeof(p->h.job), "%s", job ? job : "");
	/* !(x >= 1) also catches NaN: no threshold rather than an undefined conversion */
	p->h.delay_pct_x100 = !(x >= 1.0) ? 0 : x >= (double)UINT32_MAX ? UINT32_MAX : (uint32_t)x;
	p->h.min_noise_ns = min_noise_ns;
	p->h.class_mask = class_mask;
	p->h.flags = flags;
	for (int s = 0; s < VN_PIPE_SLOTS; s++) {
		p->slot[s].fastest = -1;
		p->slot[s].second = -1;
		p->slot[s].slowest = -1;
	}
}

/*
 * The winner of a slot's first arrival takes it over from the interval it held. The state goes through
 * RESETTING so that neither a late filter nor a late take_report of the old interval can complete on the
 * new one, and the exchange tells exactly once whether the old interval was reported (else it is an overrun).
 *
 * Remaining benign races, all outside the protocol (they need a rank to close an interval before every rank
 * has closed the one three intervals before, which collective calls rule out):
 *  - a filter of the new interval called between the ticket CAS and the store of TRACKED finds the state
 *    not TRACKED and returns -1 (or, if the old state was TRACKED, runs, and its final CAS fails);
 *    the interval stays TRACKED and a later filter call, e.g. vnoise-guest's flush, can still do it;
 *  - a filter of the old interval still running writes verdicts into records that ranks are rewriting;
 *    the filter of the new interval rewrites every verdict and silhouette field it reports.
 */
static void slot_take_over(struct vn_pipe *p, struct vn_pipe_slot *s, uint64_t old_ticket)
{
	uint32_t old = __atomic_exchange_n(&s->state, PIPELINE_RESETTING, __ATOMIC_ACQ_REL);

	if (ticket_iv(old_ticket) && old != VN_PIPE_REPORTED)
		__atomic_fetch_add(&p->h.overrun, 1, __ATOMIC_RELAXED);
	s->delayed = 0;
	s->min_ns = s->max_ns = s->avg_ns = 0;
	s->fastest = s->second = s->slowest = -1;
	s->nranks = 0;
	__atomic_store_n(&s->state, VN_PIPE_TRACKED, __ATOMIC_RELEASE);
}

int pipeline_arrive(struct vn_pipe *p, uint64_t n)
{
	struct vn_pipe_slot *s = pipeline_slot(p, n);
	uint64_t want = n + 1;
	uint32_t nr = __atomic_load_n(&p->h.nranks, __ATOMIC_RELAXED);
	/*
	 * __u64, not uint64_t: the CAS takes the address, and the two differ on x86-64. No load first: the
	 * first CAS expects what a first arrival finds (interval n - 3 closed by every rank, or an unused slot)
	 * and, when that is wrong, fails with the line ours and the ticket in t, as a load would have given it.
	 */
	__u64 t = want > VN_PIPE_SLOTS && nr ? (want - VN_PIPE_SLOTS) << TICKET_SHIFT | nr : 0;
	__u64 nt;

	for (;;) {
		if (ticket_iv(t) > want) {
			/* the slot serves a newer interval already: this record will never be filtered */
			__atomic_fetch_add(&p->h.overrun, 1, __ATOMIC_RELAXED);
			return -1;
		}
		if (ticket_iv(t) == want) {
			/* more closes than the count can hold: refuse rather than carry into the interval */
			if ((t & TICKET_COUNT) == TICKET_COUNT)
				return -1;
			nt = t + 1;
		} else {
			nt = want << TICKET_SHIFT | 1;
		}
		/* acq_rel: releases this rank's record, sees the records of the ranks that came before */
		if (__atomic_compare_exchange_n(&s->ticket, &t, nt, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			break;
		/* t holds the current ticket: a concurrent first arrival won, count behind it */
	}
	if (ticket_iv(t) != want)
		slot_take_over(p, s, t);
	return (int)(nt & TICKET_COUNT) - 1;
}

/* What the filter compares a delayed rank with: the fastest rank's figures, in one view (hyp or not). */
struct filter_ref {
	uint64_t comp, noise, work, instr;
	int hyp;
};

static void filter_ref(const struct vn_pipe *p, const struct vn_pipe_iv *f, uint64_t comp, int hyp,
		       struct filter_ref *ref)
{
	ref->comp = comp;
	ref->noise = masked_noise_v(p, f, hyp);
	ref->work = work_ns(p, comp, f, hyp);
	ref->instr = f->instructions;
	ref->hyp = hyp;
}

/* The verdict of a rank delayed by d (compute time comp) against the fastest rank, in one view. */
static uint8_t verdict_of(const struct vn_pipe *p, const struct vn_pipe_iv *r, uint64_t comp,
			  uint64_t d, const struct filter_ref *f)
{
	uint64_t ni = masked_noise_v(p, r, f->hyp), ii = r->instructions, wi;
	uint32_t pct = p->h.delay_pct_x100;

	if (ni > f->noise && half_or_more(ni - f->noise, d))
		return VN_VERDICT_NOISE;
	if (ii != VN_PIPE_NO_INSTR && f->instr != VN_PIPE_NO_INSTR)
		return mul_gt(ii, 10000, f->instr, 10000 + (uint64_t)pct) ? VN_VERDICT_IMBALANCE
									  : VN_VERDICT_UNEXPLAINED;
	wi = work_ns(p, comp, r, f->hyp);
	return wi > f->work && half_or_more(wi - f->work, d) ? VN_VERDICT_IMBALANCE
							     : VN_VERDICT_UNEXPLAINED;
}

/* The slowest rank's delay split: guest noise, hypervisor noise (each beyond the fastest's), the rest. */
static void silhouette_split(const struct vn_pipe *p, struct vn_pipe_slot *s, uint64_t d)
{
	uint64_t gs = 0, hs = 0, gf = 0, hf = 0, g, h;
	int hyp = use_hyp(p);

	s->sil_guest_ns = s->sil_hyp_ns = s->sil_rest_ns = 0;
	if (s->fastest < 0 || s->slowest < 0)
		return;
	noise_split(p, &s->r[s->slowest], hyp, 1, &gs, &hs);
	noise_split(p, &s->r[s->fastest], hyp, 1, &gf, &hf);
	g = gs > gf ? gs - gf : 0;
	g = g < d ? g : d;
	h = hs > hf ? hs - hf : 0;
	h = h < d - g ? h : d - g;
	s->sil_guest_ns = g;
	s->sil_hyp_ns = h;
	s->sil_rest_ns = d - g - h;
}

/*
 * Whether the cause to name is the hypervisor's largest (the DTL view only, a host task's class): when the
 * hypervisor's total beats the guest's noise (steal net of it), or its largest cause beats the guest's.
 */
static int hyp_cause_wins(const struct vn_pipe *p, const struct vn_pipe_iv *r)
{
	uint64_t g, h;

	if (!use_hyp(p) || r->hyp_cause_cls < VN_DTL_CLASS_OTHER_VCPU ||
	    r->hyp_cause_cls >= VN_DTL_CLASS_IDLE || !r->hyp_cause_ns)
		return 0;
	noise_split(p, r, 1, 0, &g, &h);
	return h > g || r->hyp_cause_ns > r->cause_ns;
}

/* Store v in *x only when it differs: a line nobody changes stays shared with the rank that owns it. */
#define PIPE_SET(x, v)                  \
	do {                            \
		__typeof__(x) v_ = (v); \
		if ((x) != v_)          \
			(x) = v_;       \
	} while (0)

/* Delay and verdicts of every record found; returns the delayed ranks. */
/* Rank i was delayed by d in an interval whose record is r: its tally (struct vn_pipe_rank). */
/* Rank i's worst interval so far, if d (interval n, the fastest rank f) is more: the cause written by the
 * filter that raised the maximum. */
static void rank_worst(struct vn_pipe_rank *t, uint64_t d, uint64_t n, int f, uint8_t cls,
		       uint32_t id, uint64_t ns, const char *comm)
{
	uint64_t cur = __atomic_load_n(&t->worst_ns, __ATOMIC_RELAXED);

	while (d > cur)
		if (__atomic_compare_exchange_n(&t->worst_ns, &cur, d, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			t->worst_interval = n;
			t->worst_fastest = f;
			t->worst_cause.cls = cls;
			t->worst_cause.id = id;
			t->worst_cause.ns = ns;
			memcpy(t->worst_cause.comm, comm, sizeof(t->worst_cause.comm));
			return;
		}
}

static void rank_tally(struct vn_pipe *p, unsigned i, const struct vn_pipe_iv *r, uint64_t d,
		       uint64_t n, int fastest)
{
	static const char none[VN_COMM_LEN];
	struct vn_pipe_rank *t = &p->rank[i];
	uint64_t key, ns;
	uint32_t id;
	uint8_t cls;
	const char *comm;
	unsigned k;

	__atomic_fetch_add(&t->delayed, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&t->delay_ns, d, __ATOMIC_RELAXED);
	if (hyp_cause_wins(p, r)) {
		cls = VN_PIPE_CAUSE_HYP;
		id = r->hyp_cause;
		ns = r->hyp_cause_ns;
		comm = r->hyp_key;
	} else if (r->cause_cls != VN_CLASS_NONE) {
		cls = r->cause_cls;
		id = r->cause_id;
		ns = r->cause_ns;
		comm = r->cause_comm;
	} else {
		rank_worst(t, d, n, fastest, VN_CLASS_NONE, 0, 0, none);
		return;
	}
	rank_worst(t, d, n, fastest, cls, id, ns, comm);
	key = ((uint64_t)cls << 32 | id) + 1;
	for (k = 0; k < VN_PIPE_RANK_CAUSES; k++) {
		uint64_t want = 0;

		if (__atomic_load_n(&t->key[k], __ATOMIC_ACQUIRE) == key)
			break;
		if (__atomic_compare_exchange_n(&t->key[k], &want, key, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			t->cause[k].cls = cls; /* written once, by the filter that took the entry */
			t->cause[k].id = id;
			memcpy(t->cause[k].comm, comm, sizeof(t->cause[k].comm));
			break;
		}
		if (want == key)
			break;
	}
	if (k < VN_PIPE_RANK_CAUSES)
		__atomic_fetch_add(&t->cause[k].ns, ns, __ATOMIC_RELAXED);
	else
		__atomic_fetch_add(&t->other_ns, ns, __ATOMIC_RELAXED);
}

static unsigned filter_verdicts(struct vn_pipe *p, struct vn_pipe_slot *s, const uint64_t *comp,
				const uint8_t *have, unsigned lim, int fastest, uint64_t n)
{
	struct filter_ref fh, fg;
	uint32_t pct = p->h.delay_pct_x100;
	uint64_t mn = comp[fastest];
	unsigned delayed = 0, gdelayed = 0, hdelayed = 0;
	int refs = 0; /* fh and fg computed: only once a rank is delayed */

	for (unsigned i = 0; i < lim; i++) {
		struct vn_pipe_iv *r = &s->r[i];
		uint8_t v = VN_VERDICT_NONE, gv = VN_VERDICT_NONE;
		uint64_t d;

		if (!have[i])
			continue;
		d = comp[i] - mn;
		if (d > 0 && d > p->h.min_delay_ns && mul_gt(d, 10000, mn, pct)) {
			if (!refs) {
				filter_ref(p, &s->r[fastest], mn, use_hyp(p), &fh);
				filter_ref(p, &s->r[fastest], mn, 0, &fg);
				refs = 1;
			}
			delayed++;
			v = verdict_of(p, r, comp[i], d, &fh);
			gv = fh.hyp ? verdict_of(p, r, comp[i], d, &fg) : v;
			gdelayed += gv == VN_VERDICT_NOISE;
			hdelayed += v == VN_VERDICT_NOISE && hyp_cause_wins(p, r);
			rank_tally(p, i, r, d, n, fastest);
		}
		PIPE_SET(r->delay_ns, d);
		PIPE_SET(r->verdict, v);
		PIPE_SET(r->gverdict, gv);
	}
	PIPE_SET(s->gdelayed, gdelayed);
	PIPE_SET(s->hdelayed, hdelayed);
	return delayed;
}

int pipeline_filter(struct vn_pipe *p, uint64_t n)
{
	struct vn_pipe_slot *s = pipeline_slot(p, n);
	uint64_t comp[VN_PIPE_RANKS];
	uint8_t have[VN_PIPE_RANKS];
	unsigned lim = rank_limit(p), k = 0, delayed = 0;
	uint64_t mn = 0, mx = 0, q = 0, rem = 0, sum = 0;
	int wrap = 0;
	int fastest = -1, second = -1, slowest = -1;
	uint32_t st = VN_PIPE_TRACKED;

	pipeline_prefetch_w(&s->state); /* ticket and state share the line: read, then CAS */
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1)
		return -1;
	if (!__atomic_compare_exchange_n(&s->state, &st, PIPELINE_FILTERING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return -1;
	/* the slot may have moved on between the ticket check and the claim: give it back untouched */
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1) {
		st = PIPELINE_FILTERING;
		__atomic_compare_exchange_n(&s->state, &st, VN_PIPE_TRACKED, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
		return -1;
	}

	/* silhouette: each record's times are read once, so a rank rewriting it cannot make it inconsistent */
	for (unsigned i = 0; i < lim; i++) {
		const struct vn_pipe_iv *r = &s->r[i];
		uint64_t a = r->start_ns, b = r->end_ns;

		have[i] = r->interval == n + 1 && b >= a;
		if (!have[i])
			continue;
		comp[i] = b - a;
		wrap |= __builtin_add_overflow(sum, comp[i], &sum);
		k++;
		if (fastest < 0 || comp[i] < comp[fastest]) {
			second = fastest;
			fastest = (int)i;
		} else if (second < 0 || comp[i] < comp[second]) {
			second = (int)i;
		}
		if (slowest < 0 || comp[i] > comp[slowest])
			slowest = (int)i;
	}
	/* mean: the sum's floor when it fits (one division), else without overflow: sum of quotients plus the
	 * mean of the remainders (the same exact floor) */
	for (unsigned i = 0; wrap && i < lim; i++) {
		if (!have[i])
			continue;
		q += comp[i] / k;
		rem += comp[i] % k;
	}
	if (!wrap && k) {
		q = sum / k;
		rem = sum % k; /* < k: adds 0 below */
	}
	if (k) {
		mn = comp[fastest];
		mx = comp[slowest];
		delayed = filter_verdicts(p, s, comp, have, lim, fastest, n);
	}

	PIPE_SET(s->nranks, k);
	s->min_ns = mn;
	s->max_ns = mx;
	s->avg_ns = k ? q + rem / k : 0;
	PIPE_SET(s->fastest, fastest);
	PIPE_SET(s->second, second);
	PIPE_SET(s->slowest, slowest);
	PIPE_SET(s->delayed, delayed);
	silhouette_split(p, s, mx - mn);
	/* release: take_report and json see every field above once they see FILTERED */
	st = PIPELINE_FILTERING;
	if (!__atomic_compare_exchange_n(&s->state, &st, VN_PIPE_FILTERED, 0, __ATOMIC_RELEASE,
					 __ATOMIC_RELAXED))
		return -1; /* a first arrival took the slot over meanwhile: counted as its overrun */
	__atomic_fetch_add(&p->h.intervals, 1, __ATOMIC_RELAXED);
	if (!delayed)
		__atomic_fetch_add(&p->h.quiet, 1, __ATOMIC_RELAXED);
	return (int)delayed;
}

int pipeline_take_report(struct vn_pipe *p, uint64_t n)
{
	struct vn_pipe_slot *s = pipeline_slot(p, n);
	uint32_t st = VN_PIPE_FILTERED;

	pipeline_prefetch_w(&s->state);
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1)
		return 0;
	if (!__atomic_compare_exchange_n(&s->state, &st, VN_PIPE_REPORTED, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return 0;
	/* the slot moved on between the check and the claim: that newer interval is not ours to take */
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1) {
		st = VN_PIPE_REPORTED;
		__atomic_compare_exchange_n(&s->state, &st, VN_PIPE_FILTERED, 0, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED);
		return 0;
	}
	return s->delayed > 0 || (p->h.flags & VN_PIPE_F_ALL);
}

const char *pipeline_verdict_name(unsigned v)
{
	return classes_verdict_name(v);
}

/* ---- the report line ---- */

/* Noise classes reported per rank: the ones a rank can be hit by (NONE and UNEXPLAINED never are). */
static const uint8_t json_classes[] = { VN_CLASS_NMI,	 VN_CLASS_IRQ,	 VN_CLASS_SOFTIRQ,
					VN_CLASS_THREAD, VN_CLASS_HCALL, VN_CLASS_STEAL };

static const char *const dtl_names[] = { "absent", "waiting", "ok", "stale", "off", "late" };

const char *pipeline_dtl_name(unsigned s)
{
	return s < sizeof(dtl_names) / sizeof(dtl_names[0]) ? dtl_names[s] : "absent";
}

/* The largest hypervisor cause: {"class":"host_preempt",...}; cause_class is the name up to its ':'. */
static void put_hyp_cause(struct bufout *o, const struct vn_pipe_iv *r)
{
	char name[VN_PIPE_HYP_NAME_LEN + 1];
	size_t cl;

	memcpy(name, r->hyp_name, VN_PIPE_HYP_NAME_LEN);
	name[VN_PIPE_HYP_NAME_LEN] = 0;
	cl = strcspn(name, ":");
	bufout_put(o, "{\"class\":\"%s\",\"id\":%" PRIu32 ",\"comm\":",
		   classes_hyp_name(VN_HCLASS_HOST_PREEMPT), (uint32_t)r->hyp_cause);
	bufout_str(o, r->hyp_key, sizeof(r->hyp_key));
	bufout_put(o, ",\"name\":");
	bufout_str(o, name, sizeof(name));
	name[cl] = 0;
	bufout_put(o, ",\"cause_class\":");
	bufout_str(o, name, cl + 1);
	bufout_put(o, ",\"ns\":%" PRIu64 "}}", (uint64_t)r->hyp_cause_ns);
}

/* The DTL view's fields of a rank: hypervisor noise by class and the guest-only verdict. */
static void put_hyp(struct bufout *o, const struct vn_pipe_iv *r)
{
	bufout_put(o, ",\"hypervisor_ns\":{");
	for (int c = 0; c < VN_HCLASS_MAX; c++)
		bufout_put(o, "%s\"%s\":%" PRIu64, c ? "," : "", classes_hyp_name(c),
			   (uint64_t)r->hyp_ns[c]);
	bufout_put(o, "},\"guest_verdict\":\"%s\"", pipeline_verdict_name(r->gverdict));
}

static void put_rank(struct bufout *o, const struct vn_pipe *p, const struct vn_pipe_iv *r,
		     unsigned i, int first)
{
	bufout_put(o,
		   "%s{\"rank\":%u,\"pid\":%" PRIu32 ",\"cpu\":%" PRIu32
		   ",\"event\":\"%s\",\"compute_ns\":%" PRIu64 ",\"delay_ns\":%" PRIu64
		   ",\"verdict\":\"%s\",\"noise_ns\":{",
		   first ? "" : ",", i, (uint32_t)r->pid, (uint32_t)r->cpu, appstat_name(r->ev),
		   (uint64_t)(r->end_ns - r->start_ns), (uint64_t)r->delay_ns,
		   pipeline_verdict_name(r->verdict));
	for (size_t c = 0; c < sizeof(json_classes); c++)
		bufout_put(o, "%s\"%s\":%" PRIu64, c ? "," : "",
			   classes_guest_name(json_classes[c]),
			   (uint64_t)r->noise_ns[json_classes[c]]);
	bufout_put(o, "}");
	if (use_hyp(p))
		put_hyp(o, r);
	bufout_put(o, ",\"noise_total_ns\":%" PRIu64 ",\"instructions\":", masked_noise(p, r));
	if (r->instructions == VN_PIPE_NO_INSTR)
		bufout_put(o, "null");
	else
		bufout_put(o, "%" PRIu64, (uint64_t)r->instructions);
	bufout_put(o, ",\"cause\":");
	if (hyp_cause_wins(p, r)) {
		put_hyp_cause(o, r);
		return;
	}
	if (r->cause_cls == VN_CLASS_NONE) {
		bufout_put(o, "null}");
		return;
	}
	bufout_put(o, "{\"class\":\"%s\",\"id\":%" PRIu32 ",\"comm\":",
		   classes_guest_name(r->cause_cls), (uint32_t)r->cause_id);
	bufout_str(o, r->cause_comm, sizeof(r->cause_comm));
	bufout_put(o, ",\"ns\":%" PRIu64 "}}", (uint64_t)r->cause_ns);
}

int pipeline_json(const struct vn_pipe *p, uint64_t n, char *buf, size_t len)
{
	const struct vn_pipe_slot *s = pipeline_slot((struct vn_pipe *)p, n);
	struct bufout o = { buf, len, 0, 0 };
	unsigned lim = rank_limit(p);
	uint32_t st;
	int first = 1, all = !!(p->h.flags & VN_PIPE_F_ALL);

	if (!len)
		return -ENOSPC;
	buf[0] = 0;
	st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1 ||
	    (st != VN_PIPE_FILTERED && st != VN_PIPE_REPORTED))
		return -ENOENT;
	bufout_put(&o, "{\"schema\":\"vnoise.interval/1\",\"job\":");
	bufout_str(&o, p->h.job, sizeof(p->h.job));
	bufout_put(
	    &o,
	    ",\"interval\":%" PRIu64 ",\"ranks\":%" PRIu32 ",\"compute_ns\":{\"min\":%" PRIu64
	    ",\"max\":%" PRIu64 ",\"avg\":%" PRIu64 "},\"fastest\":%d,\"second\":%d,\"slowest\":%d"
	    ",\"delayed\":%" PRIu32 ",\"dtl\":\"%s\",\"silhouette\":{\"delay_ns\":%" PRIu64
	    ",\"guest_noise_ns\":%" PRIu64 ",\"hypervisor_ns\":%" PRIu64
	    ",\"imbalance_ns\":%" PRIu64 "},\"rank\":[",
	    n, (uint32_t)s->nranks, (uint64_t)s->min_ns, (uint64_t)s->max_ns, (uint64_t)s->avg_ns,
	    (int)s->fastest, (int)s->second, (int)s->slowest, (uint32_t)s->delayed,
	    pipeline_dtl_name(p->h.dtl), (uint64_t)(s->max_ns - s->min_ns),
	    (uint64_t)s->sil_guest_ns, (uint64_t)s->sil_hyp_ns, (uint64_t)s->sil_rest_ns);
	for (unsigned i = 0; i < lim; i++) {
		const struct vn_pipe_iv *r = &s->r[i];

		if (r->interval != n + 1 || r->end_ns < r->start_ns)
			continue;
		if (!all && r->verdict == VN_VERDICT_NONE)
			continue;
		put_rank(&o, p, r, i, first);
		first = 0;
	}
	bufout_put(&o, "]}\n");
	if (o.full)
		return -ENOSPC;
	/* a first arrival of interval n + 3 took the slot while we formatted: the line may mix two */
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1) {
		buf[0] = 0;
		return -ESTALE;
	}
	return (int)o.off;
}

/*
 * A record's noise in a report class: a guest class (steal net of the hypervisor total in the DTL view), or
 * one of the hypervisor classes of datagram version 2 (datagram_hclass_of_cls()), 0 without a DTL.
 */
static uint64_t rec_class_ns(const struct vn_pipe *p, const struct vn_pipe_iv *r, int c)
{
	int hc = datagram_hclass_of_cls((unsigned)c);
	uint64_t h;

	if (hc >= 0)
		return use_hyp(p) ? r->hyp_ns[hc] : 0;
	if (c != VN_CLASS_STEAL || !use_hyp(p))
		return r->noise_ns[c];
	h = hyp_total(r);
	return r->noise_ns[c] > h ? r->noise_ns[c] - h : 0;
}

/* The largest hypervisor cause as a source record (version 2): src_id its DTL class, name its key. */
static void hyp_cause_rec(const struct vn_pipe_iv *r, unsigned i, struct vn_report_rec *y)
{
	memset(y, 0, sizeof(*y));
	y->noise_ns = r->hyp_cause_ns;
	y->count = 1;
	y->id = i;
	y->src_id = r->hyp_cause_cls;
	y->kind = VN_REPORT_REC_RANK;
	y->cls = datagram_cls_of_hclass(VN_HCLASS_HOST_PREEMPT);
	y->src_kind = VN_REPORT_SRC_HOST;
	/* NUL-padded as the datagram wants: stop at the first NUL */
	for (size_t b = 0; b < sizeof(y->name) && b < sizeof(r->hyp_key) && r->hyp_key[b]; b++)
		y->name[b] = r->hyp_key[b];
}

int pipeline_records(const struct vn_pipe *p, uint64_t n, int detail, struct vn_report_rec *out,
		     size_t max, uint64_t *start_ns, uint64_t *end_ns)
{
	const struct vn_pipe_slot *s = &p->slot[n % VN_PIPE_SLOTS];
	unsigned lim = rank_limit(p);
	uint32_t st, mask = p->h.class_mask;
	size_t k = 0;

	*start_ns = UINT64_MAX;
	*end_ns = 0;
	st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1 ||
	    (st != VN_PIPE_FILTERED && st != VN_PIPE_REPORTED))
		return -ENOENT;
	for (unsigned i = 0; i < lim; i++) {
		const struct vn_pipe_iv *r = &s->r[i];
		struct vn_report_rec *sum;

		if (r->interval != n + 1 || r->end_ns < r->start_ns)
			continue;
		if (k == max)
			return -ENOSPC;
		sum = &out[k++];
		memset(sum, 0, sizeof(*sum));
		sum->kind = VN_REPORT_REC_RANK;
		sum->id = i;
		sum->compute_ns = r->end_ns - r->start_ns;
		sum->verdict = r->verdict <= VN_VERDICT_UNEXPLAINED ? r->verdict : VN_VERDICT_NONE;
		if (r->start_ns < *start_ns)
			*start_ns = r->start_ns;
		if (r->end_ns > *end_ns)
			*end_ns = r->end_ns;
		for (int c = 1; c < VN_REPORT_CLS_MAX; c++) {
			struct vn_report_rec *x;
			uint64_t ns = rec_class_ns(p, r, c);

			if (!ns)
				continue;
			if (c >= VN_CLASS_MAX || (mask & (1u << c)))
				sum->noise_ns += ns;
			if (k == max)
				return -ENOSPC;
			x = &out[k++];
			memset(x, 0, sizeof(*x));
			x->kind = VN_REPORT_REC_RANK;
			x->id = i;
			x->cls = (uint8_t)c;
			x->noise_ns = ns;
		}
		if (detail && hyp_cause_wins(p, r)) {
			if (k == max)
				return -ENOSPC;
			hyp_cause_rec(r, i, &out[k++]);
		} else if (detail && r->cause_ns && r->cause_cls < VN_CLASS_MAX) {
			static const uint8_t src[VN_CLASS_MAX] = {
				[VN_CLASS_THREAD] = VN_REPORT_SRC_THREAD,
				[VN_CLASS_IRQ] = VN_REPORT_SRC_IRQ,
				[VN_CLASS_SOFTIRQ] = VN_REPORT_SRC_SOFTIRQ,
			};
			struct vn_report_rec y = {
				.noise_ns = r->cause_ns,
				.count = 1,
				.id = i,
				.src_id = r->cause_id,
				.kind = VN_REPORT_REC_RANK,
				.cls = r->cause_cls,
				.src_kind = src[r->cause_cls],
			};

			memcpy(y.name, r->cause_comm,
			       sizeof(y.name) < sizeof(r->cause_comm) ? sizeof(y.name)
								      : sizeof(r->cause_comm));
			if (y.src_kind && datagram_rec_ok(&y)) { /* a cause the datagram can name */
				if (k == max)
					return -ENOSPC;
				out[k++] = y;
			}
		}
	}
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1)
		return -ESTALE;
	if (*start_ns == UINT64_MAX)
		*start_ns = 0;
	return (int)k;
}

/* ---- the journal (DTL mode) ---- */

int pipeline_journal(struct vn_pipe *p, uint64_t n)
{
	const struct vn_pipe_slot *s = pipeline_slot(p, n);
	struct vn_pipe_jent *j = &p->journal[n % VN_PIPE_JOURNAL];
	unsigned lim = rank_limit(p), k = 0;
	uint64_t seq = __atomic_load_n(&j->seq, __ATOMIC_RELAXED);
	__u64 top; /* __u64, not uint64_t: the CAS takes the address */

	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1)
		goto lost;
	/* one writer per interval (the filtering rank): even seq = stable; a writer that died mid-copy left
	 * it odd, the next one makes it even again */
	seq += seq & 1;
	__atomic_store_n(&j->seq, seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned i = 0; i < lim; i++) {
		memcpy(&j->r[i], &s->r[i], sizeof(j->r[i]));
		k = i + 1;
	}
	j->interval = n + 1;
	j->nrec = k;
	__atomic_store_n(&j->seq, seq + 2, __ATOMIC_RELEASE);
	if (ticket_iv(__atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE)) != n + 1) {
		/* the slot moved on while we copied: the entry may mix two intervals */
		__atomic_store_n(&j->interval, 0, __ATOMIC_RELEASE);
		goto lost;
	}
	top = __atomic_load_n(&p->h.journal_top, __ATOMIC_RELAXED);
	while (top < n + 1 && !__atomic_compare_exchange_n(&p->h.journal_top, &top, n + 1, 1,
							   __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
	return 0;
lost:
	__atomic_fetch_add(&p->h.journal_lost, 1, __ATOMIC_RELAXED);
	return -ESTALE;
}

int pipeline_journal_take(const struct vn_pipe *p, uint64_t n, struct vn_pipe *priv)
{
	const struct vn_pipe_jent *j = &p->journal[n % VN_PIPE_JOURNAL];
	struct vn_pipe_slot *s = pipeline_slot(priv, n);
	uint64_t s0 = __atomic_load_n(&j->seq, __ATOMIC_ACQUIRE), iv;
	uint32_t nrec;

	if (s0 & 1)
		return -EAGAIN;
	iv = __atomic_load_n(&j->interval, __ATOMIC_RELAXED);
	if (iv < n + 1)
		return -EAGAIN;
	if (iv > n + 1)
		return -ESTALE;
	nrec = j->nrec < VN_PIPE_RANKS ? j->nrec : VN_PIPE_RANKS;
	memset(s, 0, sizeof(*s));
	memcpy(s->r, j->r, nrec * sizeof(s->r[0]));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&j->seq, __ATOMIC_RELAXED) != s0 ||
	    __atomic_load_n(&j->interval, __ATOMIC_RELAXED) != n + 1)
		return -EAGAIN;
	s->ticket = (n + 1) << TICKET_SHIFT | (nrec & TICKET_COUNT);
	s->state = VN_PIPE_TRACKED;
	s->fastest = s->second = s->slowest = -1;
	/* the records are ours now: nobody else reads or writes the private pipe */
	for (uint32_t i = 0; i < nrec; i++) {
		s->r[i].verdict = s->r[i].gverdict = VN_VERDICT_NONE;
		s->r[i].delay_ns = 0;
	}
	return 0;
}
