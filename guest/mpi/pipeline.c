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
#include "mpi/appstat.h"
#include "mpi/pipeline.h"
#include "format/datagram.h"
#include "util/bufout.h"
#include "attrib/merge.h"

/*
 * Transient states, internal to this file (enum vn_pipe_state stays the ABI's three values). A reader of
 * the shared buffer may still see them: FILTERING while one filter runs (it keeps a second one out),
 * RESETTING while the first arrival of a newer interval takes the slot over.
 */
#define PIPELINE_FILTERING 3u
#define PIPELINE_RESETTING 4u

#define TICKET_SHIFT 16
#define TICKET_COUNT 0xffffull

static const char *const verdict_names[] = { "none", "noise", "imbalance", "unexplained" };

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

/* The noise the filter counts: classes in class_mask, each only from min_noise_ns up. */
static uint64_t masked_noise(const struct vn_pipe *p, const struct vn_pipe_iv *r)
{
	uint64_t sum = 0;

	for (int c = 0; c < VN_CLASS_MAX; c++) {
		uint64_t ns = r->noise_ns[c];

		if ((p->h.class_mask & (1u << c)) && ns >= p->h.min_noise_ns)
			sum = sat_add(sum, ns);
	}
	return sum;
}

/* Every class, whatever the rules: the time the rank was kept off its work. */
static uint64_t all_noise(const struct vn_pipe_iv *r)
{
	uint64_t sum = 0;

	for (int c = 0; c < VN_CLASS_MAX; c++)
		sum = sat_add(sum, r->noise_ns[c]);
	return sum;
}

/* Without a PMU, on-CPU time net of every kind of noise stands for the work a rank did. */
static uint64_t work_ns(uint64_t compute_ns, const struct vn_pipe_iv *r)
{
	uint64_t noise = all_noise(r);

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
	/* __u64, not uint64_t: the CAS takes the address, and the two differ on x86-64 */
	__u64 t = __atomic_load_n(&s->ticket, __ATOMIC_ACQUIRE);
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

int pipeline_filter(struct vn_pipe *p, uint64_t n)
{
	struct vn_pipe_slot *s = pipeline_slot(p, n);
	uint64_t comp[VN_PIPE_RANKS];
	uint8_t have[VN_PIPE_RANKS];
	unsigned lim = rank_limit(p), k = 0, delayed = 0;
	uint64_t mn = 0, mx = 0, q = 0, rem = 0, nf = 0, wf = 0, fi = VN_PIPE_NO_INSTR;
	int fastest = -1, second = -1, slowest = -1;
	uint32_t st = VN_PIPE_TRACKED;
	uint32_t pct = p->h.delay_pct_x100;

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
	if (k) {
		mn = comp[fastest];
		mx = comp[slowest];
		nf = masked_noise(p, &s->r[fastest]);
		wf = work_ns(comp[fastest], &s->r[fastest]);
		fi = s->r[fastest].instructions;
	}

	for (unsigned i = 0; i < lim; i++) {
		struct vn_pipe_iv *r = &s->r[i];
		uint64_t d, ni, wi, ii;
		uint8_t v = VN_VERDICT_NONE;

		if (!have[i])
			continue;
		/* mean without overflow: sum of quotients plus the mean of the remainders (exact floor) */
		q += comp[i] / k;
		rem += comp[i] % k;
		d = comp[i] - mn;
		if (d > 0 && d > p->h.min_delay_ns && mul_gt(d, 10000, mn, pct)) {
			delayed++;
			ni = masked_noise(p, r);
			ii = r->instructions;
			if (ni > nf && half_or_more(ni - nf, d)) {
				v = VN_VERDICT_NOISE;
			} else if (ii != VN_PIPE_NO_INSTR && fi != VN_PIPE_NO_INSTR) {
				v = mul_gt(ii, 10000, fi, 10000 + (uint64_t)pct)
					? VN_VERDICT_IMBALANCE
					: VN_VERDICT_UNEXPLAINED;
			} else {
				wi = work_ns(comp[i], r);
				v = wi > wf && half_or_more(wi - wf, d) ? VN_VERDICT_IMBALANCE
									: VN_VERDICT_UNEXPLAINED;
			}
		}
		r->delay_ns = d;
		r->verdict = v;
	}

	s->nranks = k;
	s->min_ns = mn;
	s->max_ns = mx;
	s->avg_ns = k ? q + rem / k : 0;
	s->fastest = fastest;
	s->second = second;
	s->slowest = slowest;
	s->delayed = delayed;
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
	return v < sizeof(verdict_names) / sizeof(verdict_names[0]) ? verdict_names[v] : "?";
}

/* ---- the report line ---- */

/* Noise classes reported per rank: the ones a rank can be hit by (NONE and UNEXPLAINED never are). */
static const uint8_t json_classes[] = { VN_CLASS_NMI,	 VN_CLASS_IRQ,	 VN_CLASS_SOFTIRQ,
					VN_CLASS_THREAD, VN_CLASS_HCALL, VN_CLASS_STEAL };

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
		bufout_put(o, "%s\"%s\":%" PRIu64, c ? "," : "", merge_class_name(json_classes[c]),
			   (uint64_t)r->noise_ns[json_classes[c]]);
	bufout_put(o, "},\"noise_total_ns\":%" PRIu64 ",\"instructions\":", masked_noise(p, r));
	if (r->instructions == VN_PIPE_NO_INSTR)
		bufout_put(o, "null");
	else
		bufout_put(o, "%" PRIu64, (uint64_t)r->instructions);
	bufout_put(o, ",\"cause\":");
	if (r->cause_cls == VN_CLASS_NONE) {
		bufout_put(o, "null}");
		return;
	}
	bufout_put(o,
		   "{\"class\":\"%s\",\"id\":%" PRIu32 ",\"comm\":", merge_class_name(r->cause_cls),
		   (uint32_t)r->cause_id);
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
	    ",\"delayed\":%" PRIu32 ",\"rank\":[",
	    n, (uint32_t)s->nranks, (uint64_t)s->min_ns, (uint64_t)s->max_ns, (uint64_t)s->avg_ns,
	    (int)s->fastest, (int)s->second, (int)s->slowest, (uint32_t)s->delayed);
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
		for (int c = 1; c < VN_CLASS_MAX; c++) {
			struct vn_report_rec *x;

			if (!r->noise_ns[c])
				continue;
			if (mask & (1u << c))
				sum->noise_ns += r->noise_ns[c];
			if (k == max)
				return -ENOSPC;
			x = &out[k++];
			memset(x, 0, sizeof(*x));
			x->kind = VN_REPORT_REC_RANK;
			x->id = i;
			x->cls = (uint8_t)c;
			x->noise_ns = r->noise_ns[c];
		}
		if (detail && r->cause_ns && r->cause_cls < VN_CLASS_MAX) {
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
