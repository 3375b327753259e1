/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the host's matcher (host/match/match) and the guest-only view beside it (shared/attrib/
 * merge) under a structured, valid but adversarial stream, fed as host/match/guestchan feeds them. The input
 * is a program: a first byte picks the domain's budget, then each operation is a tag byte and fixed fields
 * (fuzz_input.h): guest gaps and windows, guest events, host out intervals and runs, per-period aggregates,
 * match_process with the guest and host horizons held, creeping, jumping far ahead or falling back,
 * match_host_trim with a budget, a new agent epoch (match_guest_reset), a period reset, and a burst (the next
 * operation up to 128 times over, so that short inputs fill the budget and the queues). Record times come
 * from a per-vCPU cursor the program steers (creeping, ends an hour ahead, starts falling while ends rise,
 * raw), so the streams are the shapes a hostile agent can publish, not noise a parser rejects at once.
 *
 * Guest records pass guestchan's feed filter (host/match/guestchan.c, "Hostile input bounds"): refused out of
 * order beyond REORDER_NS / EVENT_REORDER_NS, refused while twice what is held reaches the budget; after every
 * round the host's records are trimmed to a quarter of it. guestchan itself is not entered: its records need
 * a clock model from a live exchange with a guest responder (real time, a thread), which a fuzz run cannot
 * make deterministic; its shared-memory reader has its own target (fuzz_shm).
 *
 * Checked after every operation (abort() on violation):
 *   - what the guest's records make both engines hold, twice over, stays under the budget plus one record;
 *     one record adds at most REC_MAX bytes; an insert passes at most the records held before it;
 *   - every matched gap's parts (guest classes, hypervisor classes, residual) add up to its duration, and a
 *     vCPU's gaps come in start order (until the next epoch); every guest-only gap's parts add up too;
 *   - per vCPU and stats set, the parts add up to the gaps' total; the period's figures never exceed the
 *     whole run's; sources come sorted, largest first;
 *   - no counter goes backwards, whole-run figures only grow (residual aside: aggregates take from it);
 *   - match_host_trim never makes the host's records grow.
 * Build and run: make build-fuzz/fuzz_match && build-fuzz/fuzz_match -max_total_time=60 -max_len=20000
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz_input.h"
#include "attrib/merge.h"
#include "match/match.h"

#define NVCPU 4u
#define MAX_OPS 20000u /* operations per input, a burst's included */
#define REORDER_NS 50000000ULL /* guestchan.c */
#define EVENT_REORDER_NS 10000000000ULL /* guestchan.c */
#define REC_MAX 512u /* bytes one guest record may add to what both engines hold */
#define T0 \
	(100ULL * 1000000000ULL) /* the stream's origin: 100 s, so that falling starts stay > 0 */

struct cursor {
	uint64_t start, end; /* the last record's */
};

struct fz {
	struct match *m;
	struct merge *mg;
	uint64_t budget;
	uint64_t guest_h, host_h, now;
	struct cursor cur[NVCPU][4]; /* per vCPU: gaps, events, outs, runs */
	uint64_t last_start[NVCPU][2]; /* guestchan's feed filter: samples, events */
	uint64_t gap_start[NVCPU]; /* the last matched gap's start (order check) */
	int have_gap[NVCPU];
	struct match_counters cnt[NVCPU];
	struct match_stats tot[NVCPU]; /* the last whole-run figures seen */
	uint32_t ops; /* operations done */
	/* per vCPU: a figure saturated (sticky: aggregates take from the residual) */
	int sat[NVCPU];
};

static void on_match_gap(void *ctx, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			 const uint64_t guest_ns[VN_CLASS_MAX],
			 const uint64_t host_ns[VN_HCLASS_MAX], uint64_t residual_ns)
{
	struct fz *f = ctx;
	unsigned __int128 sum = residual_ns;
	int c;

	if (vcpu >= NVCPU || end_ns < start_ns)
		abort();
	for (c = 0; c < VN_CLASS_MAX; c++)
		sum += guest_ns[c];
	for (c = 0; c < VN_HCLASS_MAX; c++)
		sum += host_ns[c];
	if (sum != end_ns - start_ns)
		abort(); /* the matcher's contract: a gap's parts add up to it */
	if (guest_ns[VN_CLASS_UNEXPLAINED] || guest_ns[VN_CLASS_NONE])
		abort();
	if (f->have_gap[vcpu] && start_ns < f->gap_start[vcpu])
		abort(); /* in time order per vCPU */
	f->gap_start[vcpu] = start_ns;
	f->have_gap[vcpu] = 1;
}

static void on_merge_gap(void *ctx, int cpu, uint64_t dur, const uint64_t parts[VN_CLASS_MAX])
{
	unsigned __int128 sum = 0;
	int c;

	(void)ctx;
	if (cpu < 0 || (uint32_t)cpu >= NVCPU)
		abort();
	for (c = 0; c < VN_CLASS_MAX; c++)
		sum += parts[c];
	if (sum != dur)
		abort();
}

static size_t guest_bytes(const struct fz *f, size_t *n)
{
	size_t bg = 0, bm = 0;

	*n = merge_held(f->mg, &bg) + match_guest_held(f->m, &bm);
	return bg + bm;
}

/* guestchan's budget test, made before every record here (it makes it every POLL_CHUNK records). */
static int full(const struct fz *f)
{
	size_t n;

	return 2 * (guest_bytes(f, &n) + match_host_held(f->m)) >= f->budget;
}

/* guestchan's order test on a ring's samples (ev 0) or events (ev 1); 1: fed. */
static int in_order(struct fz *f, uint32_t v, int ev, uint64_t start)
{
	uint64_t win = ev ? EVENT_REORDER_NS : REORDER_NS, *last = &f->last_start[v][ev];

	if (*last > win && start < *last - win)
		return 0;
	if (start > *last)
		*last = start;
	return 1;
}

/* A record's span from vCPU v's cursor of stream s, the shape picked by the program. */
static void span(struct fz *f, struct fuzz_in *in, uint32_t v, int s, uint64_t *start,
		 uint64_t *end)
{
	struct cursor *c = &f->cur[v][s];
	uint8_t shape = fuzz_u8(in);
	uint64_t a = fuzz_u8(in) | (uint64_t)fuzz_u8(in) << 8,
		 b = fuzz_u8(in) | (uint64_t)fuzz_u8(in) << 8;
	uint64_t unit = 1ULL << (3 * ((shape >> 3) % 8)); /* 1 ns .. 2 ms steps */

	if (!c->end)
		c->start = c->end = T0;
	switch (shape % 6) {
	case 0: /* creeping: after the last one */
		*start = c->end + a * unit;
		*end = *start + b * unit;
		break;
	case 1: /* overlapping the last one (nested, or a second opinion) */
		*start = c->start + a * unit;
		*end = *start + b * unit;
		break;
	case 2: /* far future: ends an hour ahead */
		*start = c->end + a * unit;
		*end = *start + 3600000000000ULL + b;
		break;
	case 3: /* falling starts, rising ends: each passes all queued before it */
		*start = c->start > a * unit ? c->start - a * unit : 0;
		*end = c->end + b;
		break;
	case 4: /* around a horizon */
		*start = (s < 2 ? f->guest_h : f->host_h) + a * unit - (uint64_t)b * unit / 2;
		*end = *start + b * unit;
		break;
	default: /* raw (end < start is bad and counted) */
		*start = fuzz_u64(in);
		*end = fuzz_u64(in);
		break;
	}
	if (*end < *start && shape % 6 != 5)
		*end = *start; /* a wrapped sum */
	c->start = *start;
	c->end = *end;
}

static void comm(struct fuzz_in *in, char *out)
{
	fuzz_bytes(in, out, VN_COMM_LEN);
	if (fuzz_u8(in) & 1)
		out[VN_COMM_LEN - 1] = 0;
}

/* One guest record through the feed filter into both engines, with the bounds of one record. */
static void feed_guest(struct fz *f, uint32_t v, const struct vn_sample *s,
		       const struct vn_event *e, uint64_t unc)
{
	size_t n0, n1, b0, b1;
	uint64_t st0 = merge_insert_steps(f->mg) + match_insert_steps(f->m), st1;

	if (!in_order(f, v, e != NULL, s ? s->start_ns : e->start_ns) || full(f))
		return;
	b0 = guest_bytes(f, &n0);
	if (s) {
		(void)!merge_add_sample(f->mg, s);
		(void)match_add_sample(f->m, v, s, unc);
	} else {
		(void)!merge_add_event(f->mg, e);
		(void)match_add_event(f->m, v, e);
	}
	b1 = guest_bytes(f, &n1);
	if (b1 > b0 + REC_MAX)
		abort(); /* one record holds at most REC_MAX */
	st1 = merge_insert_steps(f->mg) + match_insert_steps(f->m);
	if (st1 - st0 > n0)
		abort(); /* an insert passes at most the records held */
}

static int saturated(const struct match_stats *t)
{
	int k, r = t->gap_ns == UINT64_MAX || t->residual_ns == UINT64_MAX;

	for (k = 0; k < VN_CLASS_MAX; k++)
		r |= t->guest_ns[k] == UINT64_MAX;
	for (k = 0; k < VN_HCLASS_MAX; k++)
		r |= t->host_ns[k] == UINT64_MAX;
	return r;
}

/* A whole-run figure that went down: said (which one) and aborted. */
#define GROWS(x)                                                                                   \
	do {                                                                                       \
		if (t->x < f->tot[v].x) {                                                          \
			fprintf(stderr, "fuzz_match: vcpu %u: " #x " went from %llu to %llu\n", v, \
				(unsigned long long)f->tot[v].x, (unsigned long long)t->x);        \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void check_stats(struct fz *f, uint32_t v)
{
	struct match_counters c;
	const struct match_stats *t, *p;
	unsigned __int128 st, sp;
	uint32_t i;
	int k;

	match_counters(f->m, v, &c);
	if (c.gaps_in < f->cnt[v].gaps_in || c.events_in < f->cnt[v].events_in ||
	    c.outs_in < f->cnt[v].outs_in || c.runs_in < f->cnt[v].runs_in ||
	    c.windows_in < f->cnt[v].windows_in || c.aggs_in < f->cnt[v].aggs_in ||
	    c.late < f->cnt[v].late || c.dropped < f->cnt[v].dropped || c.bad < f->cnt[v].bad ||
	    c.clamped < f->cnt[v].clamped)
		abort(); /* no counter goes backwards */
	f->cnt[v] = c;
	t = match_stats_total(f->m, v);
	if (!t)
		return;
	GROWS(gaps);
	GROWS(gap_ns);
	GROWS(runtime_ns);
	GROWS(reduced_ns);
	GROWS(big_gaps);
	GROWS(max_gap_ns);
	for (k = 0; k < VN_CLASS_MAX; k++)
		if (t->guest_ns[k] < f->tot[v].guest_ns[k])
			abort();
	for (k = 0; k < VN_HCLASS_MAX; k++)
		if (t->host_ns[k] < f->tot[v].host_ns[k])
			abort();
	memcpy(&f->tot[v], t, offsetof(struct match_stats, src));
	p = match_stats_period(f->m, v);
	t = match_stats_total(f->m, v); /* valid until the next call: again */
	if (!p || p->gaps > t->gaps || p->gap_ns > t->gap_ns || p->residual_ns > t->residual_ns ||
	    p->big_gaps > p->gaps || p->big_matched > p->big_gaps || p->big_guest > p->big_gaps ||
	    p->big_explained > p->big_gaps || p->nsrc > MATCH_MAX_SOURCES)
		abort();
	f->sat[v] |= saturated(t);
	if (f->sat[v])
		return; /* hostile sums reached UINT64_MAX: the parts no longer add up exactly */
	st = t->residual_ns;
	for (k = 0; k < VN_CLASS_MAX; k++)
		st += t->guest_ns[k];
	for (k = 0; k < VN_HCLASS_MAX; k++)
		st += t->host_ns[k];
	if (st != t->gap_ns)
		abort(); /* the whole run's parts add up to its gaps, aggregates moved out of the residual */
	p = match_stats_period(f->m, v);
	sp = p->residual_ns;
	for (k = 0; k < VN_CLASS_MAX; k++)
		sp += p->guest_ns[k];
	for (k = 0; k < VN_HCLASS_MAX; k++)
		sp += p->host_ns[k];
	if (sp != p->gap_ns)
		abort();
	for (i = 1; i < p->nsrc; i++)
		if (p->src[i].total_ns > p->src[i - 1].total_ns)
			abort(); /* sorted, largest first */
}

/* The bounds, and (full: after a round, or every 16 operations, for speed) every vCPU's figures. */
static void check_all(struct fz *f, int full)
{
	size_t n, b = guest_bytes(f, &n);
	uint32_t v;

	if (2 * b > f->budget + 2 * REC_MAX)
		abort(); /* refused while twice what is held reaches the budget */
	if (match_gaps_waiting(f->m) > n)
		abort();
	for (v = 0; v < NVCPU && full; v++)
		check_stats(f, v);
}

/* A horizon moved as the program says: held, creeping, jumping ahead, to the far future, falling back. */
static uint64_t horizon(struct fuzz_in *in, uint64_t h)
{
	uint8_t how = fuzz_u8(in);
	uint64_t d = fuzz_u8(in) | (uint64_t)fuzz_u8(in) << 8;

	if (!h)
		h = T0;
	switch (how % 6) {
	case 0:
		return h;
	case 1:
		return h + d; /* creeping: ns */
	case 2:
		return h + d * 1000000ULL; /* ms steps */
	case 3:
		return h + 7200000000000ULL; /* two hours on: past the far-future ends */
	case 4:
		return h > d * 1000000ULL ? h - d * 1000000ULL : 0; /* falling back */
	default:
		return how & 0x80 ? UINT64_MAX : 0; /* everything / nothing (host records only) */
	}
}

/* One operation of the program (a repeat's body: rep 1, and a repeat in it does nothing). */
static void one_op(struct fz *f, struct fuzz_in *in, int rep)
{
	uint8_t op = fuzz_u8(in);
	uint32_t v = (uint32_t)(op >> 4) % NVCPU;
	uint64_t a, b;

	if (f->ops >= MAX_OPS)
		return;
	f->ops++;
	switch (op % 12) {
	case 0:
	case 1: { /* a gap (0) or a runtime window (1) */
		struct vn_sample s = { .cpu = (uint16_t)v, .kind = op % 12 };
		uint8_t u = fuzz_u8(in);

		span(f, in, v, 0, &a, &b);
		s.start_ns = a;
		s.end_ns = b;
		/* the clock's uncertainty: none, us, ms, or none known */
		feed_guest(f, v, &s, NULL,
			   u == 0xff ? UINT64_MAX : (uint64_t)(u & 0x3f) << (10 * (u >> 6)));
		break;
	}
	case 2: { /* a guest event */
		struct vn_event e = { .cpu = (uint16_t)v };
		uint8_t k = fuzz_u8(in);

		span(f, in, v, 1, &a, &b);
		e.start_ns = a;
		e.end_ns = b;
		e.cls = k % VN_CLASS_MAX;
		e.parent_cls = (k >> 3) % VN_CLASS_MAX;
		e.depth = k >> 6;
		e.id = fuzz_u8(in) % 8;
		e.parent_id = fuzz_u8(in) % 8;
		e.net_ns = (uint32_t)(b - a);
		comm(in, e.comm);
		feed_guest(f, v, NULL, &e, 0);
		break;
	}
	case 3: /* a host out interval */
		span(f, in, v, 2, &a, &b);
		(void)match_add_out(f->m, v, a, b, fuzz_u8(in) & 1 ? 'R' : 'S');
		break;
	case 4: { /* a host task's run */
		char c[VN_COMM_LEN];
		uint8_t k = fuzz_u8(in);

		span(f, in, v, 3, &a, &b);
		comm(in, c);
		(void)match_add_run(f->m, v, a, b, k % 16, c, k & 0x80);
		break;
	}
	case 5: { /* a per-period aggregate */
		char c[VN_COMM_LEN];
		uint8_t k = fuzz_u8(in);

		comm(in, c);
		(void)match_add_agg(f->m, v,
				    k & 1   ? VN_HCLASS_VMEXIT
				    : k & 2 ? VN_HCLASS_HOST_IRQ
					    : k,
				    k >> 4, c, fuzz_u64(in));
		break;
	}
	case 6:
	case 7: { /* a round: horizons moved, matched, the host's records trimmed (guestchan) */
		uint64_t gh = horizon(in, f->guest_h), hh = horizon(in, f->host_h);

		f->now = hh > f->now ? hh : f->now;
		f->guest_h = gh;
		f->host_h = hh;
		if (merge_process(f->mg, gh))
			abort(); /* it only fails for memory */
		(void)match_process(f->m, gh, hh, f->now);
		match_host_trim(f->m, f->budget / 4, hh);
		break;
	}
	case 8: { /* a trim with the program's budget */
		size_t before = match_host_held(f->m);

		match_host_trim(f->m, (size_t)fuzz_u8(in) << (fuzz_u8(in) % 16), f->host_h);
		if (match_host_held(f->m) > before)
			abort();
		break;
	}
	case 9: /* a new agent epoch: the guest side starts again */
		match_guest_reset(f->m);
		merge_free(f->mg);
		f->mg = merge_new(on_merge_gap, f);
		if (!f->mg)
			abort();
		memset(f->last_start, 0, sizeof(f->last_start));
		memset(f->have_gap, 0, sizeof(f->have_gap));
		break;
	case 10: /* a period ends */
		match_period_reset(f->m);
		break;
	case 11: { /* a burst: the next operation n times over, its times moving on from each */
		uint32_t n = 1 + fuzz_u8(in) % 128u, i;
		struct fuzz_in body = *in;

		for (i = 0; i < n && !rep; i++) {
			*in = body;
			one_op(f, in, 1);
		}
		break;
	}
	}
	check_all(f, op % 12 >= 5 || f->ops % 16 == 0);
}

static void run(struct fz *f, struct fuzz_in *in)
{
	while (in->n && f->ops < MAX_OPS)
		one_op(f, in, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct fz *f = calloc(1, sizeof(*f));

	if (!f)
		return 0;
	f->budget = 4096ULL << (fuzz_u8(&in) % 7); /* 4 KiB .. 256 KiB */
	f->m = match_new(NULL);
	f->mg = merge_new(on_merge_gap, f);
	if (f->m && f->mg) {
		match_set_gap_cb(f->m, on_match_gap, f);
		run(f, &in);
		(void)!merge_process(f->mg, UINT64_MAX);
		(void)match_process(f->m, UINT64_MAX, UINT64_MAX, UINT64_MAX);
		check_all(f, 1);
	}
	merge_free(f->mg);
	match_free(f->m);
	free(f);
	return 0;
}
