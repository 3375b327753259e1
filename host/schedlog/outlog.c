/* SPDX-License-Identifier: MIT */
/*
 * outlog: out-interval reconstruction for the host dispatch log (contract in outlog.h).
 *
 * State: per slot, RUNNING on a CPU or OUT from a CPU since piece_start (with state char and first wakeup);
 * per CPU, the task believed running there since seg_start and the list of slots out from it ("watchers").
 * Applying a switch on CPU c at t: place a missed switch-in of prev; close c's current task segment at t for
 * every watcher (placing it from run_ns if prev is not the task we believed there); prev goes out (watches
 * c); next comes in (its piece closes: its own segment on the CPU it left is cut at t); c runs next from t.
 * Segments are clipped to each watcher's piece, so one CPU segment serves every slot that left that CPU.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "schedlog/outlog.h"
#include "schedlog/outlog_priv.h"

#define OL_SORT_BUDGET 64 /* insertion-sort moves per record before falling back to qsort */

struct ol_pending {
	uint64_t seq; /* push order: ties in ts keep it */
	struct outlog_rec r;
};

struct ol_slot {
	uint32_t tid;
	uint8_t state; /* enum outlog_slot_state */
	char st; /* state char of the open piece */
	uint8_t cont; /* the open piece continues one cut at a period boundary */
	uint32_t cpu; /* RUNNING: where; OUT: the CPU it left */
	uint64_t piece_start;
	uint64_t wake_ns; /* first wakeup of the open interval, 0 none */
	uint64_t piece_seq; /* id of the open piece, for preemptor counts */
	int32_t wprev, wnext; /* watcher list of its CPU while OUT */
	struct outlog_stats cur;
	struct outlog_stats last;
};

struct ol_cpu {
	uint32_t pid; /* task believed running since seg_start */
	uint8_t known;
	char comm[OUTLOG_COMM_LEN];
	uint64_t seg_start;
	int32_t whead; /* first watcher, -1 none */
	uint32_t nwatch;
};

struct outlog {
	uint32_t max_slots, max_cpus;
	outlog_out_fn out_fn;
	outlog_run_fn run_fn;
	void *ctx;
	struct ol_slot *slots;
	struct ol_cpu *cpus;
	struct ol_pending *pend;
	size_t npend, cap;
	uint64_t seq;
	uint64_t horizon;
	uint64_t period_start, last_start, last_end;
	struct outlog_counters cnt;
};

char outlog_state_char(uint32_t state, int preempt)
{
	if (preempt)
		return 'R';
	if (state & 0xb0) /* EXIT_DEAD | EXIT_ZOMBIE | TASK_DEAD */
		return 'X';
	if (state & 0x1)
		return 'S';
	if (state & 0x2)
		return 'D';
	if (state & 0x4)
		return 'T';
	if (state & 0x8)
		return 't';
	if (state & 0x40)
		return 'P';
	if (state == 0)
		return 'R';
	if (state & (0x1000 | 0x8000)) /* TASK_RTLOCK_WAIT, TASK_FROZEN: blocked, not by choice */
		return 'D';
	return '?';
}

/* Copy a kernel comm, ending at its NUL and zero-padded, so equal names compare equal byte for byte. */
static void comm_copy(char *dst, const char *src)
{
	size_t n = strnlen(src, OUTLOG_COMM_LEN - 1);

	memcpy(dst, src, n);
	memset(dst + n, 0, OUTLOG_COMM_LEN - n);
}

struct outlog *outlog_new(uint32_t max_slots, uint32_t max_cpus)
{
	struct outlog *ol = NULL;
	uint32_t i;

	if (!max_slots || max_slots > OUTLOG_MAX_SLOTS || !max_cpus || max_cpus > OUTLOG_MAX_CPUS) {
		errno = EINVAL;
		return NULL;
	}
	ol = calloc(1, sizeof(*ol));
	if (!ol)
		goto fail;
	ol->max_slots = max_slots;
	ol->max_cpus = max_cpus;
	ol->slots = calloc(max_slots, sizeof(*ol->slots));
	ol->cpus = calloc(max_cpus, sizeof(*ol->cpus));
	if (!ol->slots || !ol->cpus)
		goto fail;
	for (i = 0; i < max_cpus; i++)
		ol->cpus[i].whead = -1;
	for (i = 0; i < max_slots; i++)
		ol->slots[i].wprev = ol->slots[i].wnext = -1;
	return ol;
fail:
	outlog_free(ol);
	errno = ENOMEM;
	return NULL;
}

void outlog_set_callbacks(struct outlog *ol, outlog_out_fn out, outlog_run_fn run, void *ctx)
{
	ol->out_fn = out;
	ol->run_fn = run;
	ol->ctx = ctx;
}

void outlog_free(struct outlog *ol)
{
	if (!ol)
		return;
	free(ol->slots);
	free(ol->cpus);
	free(ol->pend);
	free(ol);
}

/* ---- watcher lists ---- */

static void watch_add(struct outlog *ol, uint32_t cpu, uint32_t si)
{
	struct ol_cpu *c = &ol->cpus[cpu];
	struct ol_slot *s = &ol->slots[si];

	s->wprev = -1;
	s->wnext = c->whead;
	if (c->whead >= 0)
		ol->slots[c->whead].wprev = (int32_t)si;
	c->whead = (int32_t)si;
	c->nwatch++;
}

static void watch_del(struct outlog *ol, uint32_t cpu, uint32_t si)
{
	struct ol_cpu *c = &ol->cpus[cpu];
	struct ol_slot *s = &ol->slots[si];

	if (s->wprev >= 0)
		ol->slots[s->wprev].wnext = s->wnext;
	else
		c->whead = s->wnext;
	if (s->wnext >= 0)
		ol->slots[s->wnext].wprev = s->wprev;
	s->wprev = s->wnext = -1;
	c->nwatch--;
}

/* ---- accounting ---- */

static void preemptor_add(struct outlog_stats *st, uint64_t piece, uint32_t pid, const char *comm,
			  uint64_t d)
{
	struct outlog_preemptor *e = NULL;
	uint32_t i, min = 0;
	int fresh = 1;

	st->preempt_ns += d;
	for (i = 0; i < st->npreempt; i++) {
		if (st->preempt[i].pid == pid &&
		    !memcmp(st->preempt[i].comm, comm, OUTLOG_COMM_LEN)) {
			e = &st->preempt[i];
			fresh = 0;
			break;
		}
		if (st->preempt[i].total_ns < st->preempt[min].total_ns)
			min = i;
	}
	if (!e && st->npreempt < OUTLOG_TOP) {
		e = &st->preempt[st->npreempt++];
		memset(e, 0, sizeof(*e));
	} else if (!e) {
		/* full: fold the smallest entry into "other" and reuse it */
		e = &st->preempt[min];
		memcpy(st->other.comm, "other", sizeof("other"));
		st->other.total_ns += e->total_ns;
		st->other.count += e->count;
		st->folded++;
		memset(e, 0, sizeof(*e));
	}
	if (fresh) {
		e->pid = pid;
		memcpy(e->comm, comm, OUTLOG_COMM_LEN);
	}
	e->total_ns += d;
	if (e->last_piece != piece) {
		e->count++;
		e->last_piece = piece;
	}
}

/* Task pid ran on cpu over [start, end) while slot si was out from there: clip to the piece, report. */
static void seg_emit(struct outlog *ol, uint32_t si, uint32_t cpu, uint32_t pid, const char *comm,
		     uint64_t start, uint64_t end)
{
	struct ol_slot *s = &ol->slots[si];
	struct outlog_run g;
	uint64_t d, wake;

	if (start < s->piece_start)
		start = s->piece_start;
	if (end <= start)
		return;
	d = end - start;
	if (pid && pid == s->tid) {
		s->cur.unknown_ns += d; /* the slot cannot preempt itself: inconsistent input */
		return;
	}
	if (pid)
		preemptor_add(&s->cur, s->piece_seq, pid, comm, d);
	else
		s->cur.idle_ns += d;
	if (!ol->run_fn)
		return;
	/* blocked: the part before the wakeup (none yet: all of it) was halted; cut the run there */
	wake = s->st == 'R' ? start : !s->wake_ns ? end : s->wake_ns < start ? start : s->wake_ns;
	if (wake > end)
		wake = end;
	memset(&g, 0, sizeof(g));
	g.out_start_ns = s->piece_start;
	g.slot = si;
	g.tid = s->tid;
	g.pid = pid;
	g.cpu = cpu;
	g.idle = !pid;
	memcpy(g.comm, comm, OUTLOG_COMM_LEN);
	if (wake > start) {
		g.start_ns = start;
		g.end_ns = wake;
		g.halted = 1;
		ol->run_fn(ol->ctx, &g);
	}
	if (end > wake) {
		g.start_ns = wake;
		g.end_ns = end;
		g.halted = 0;
		ol->run_fn(ol->ctx, &g);
	}
}

/* piece_close() flags */
#define PC_SPLIT 0x1
#define PC_GUESSED 0x2
#define PC_REMOVED 0x4

/* Close slot si's open piece at end (>= piece_start) and account it. */
static void piece_close(struct outlog *ol, uint32_t si, uint64_t end, unsigned flags)
{
	struct ol_slot *s = &ol->slots[si];
	struct outlog_stats *st = &s->cur;
	struct outlog_out o;
	uint64_t len;

	if (end < s->piece_start)
		end = s->piece_start;
	len = end - s->piece_start;
	memset(&o, 0, sizeof(o));
	o.start_ns = s->piece_start;
	o.end_ns = end;
	o.slot = si;
	o.tid = s->tid;
	o.cpu = s->cpu;
	o.state = s->st;
	o.split = !!(flags & PC_SPLIT);
	o.cont = s->cont;
	o.guessed = !!(flags & PC_GUESSED);
	o.removed = !!(flags & PC_REMOVED);
	if (s->st != 'R' && s->wake_ns && s->wake_ns <= end)
		o.wake_ns = s->wake_ns;
	if (s->st == 'R')
		o.run_delay_ns = len;
	else if (o.wake_ns)
		o.run_delay_ns = end - (o.wake_ns > o.start_ns ? o.wake_ns : o.start_ns);
	st->out_ns += len;
	st->out_count++;
	if (s->st == 'R')
		st->out_r_ns += len;
	else if (s->st == 'S')
		st->out_s_ns += len;
	else
		st->out_d_ns += len;
	st->run_delay_ns += o.run_delay_ns;
	if (o.guessed)
		st->inferred++;
	if (ol->out_fn)
		ol->out_fn(ol->ctx, &o);
}

/* ---- state changes ---- */

/* Every watcher of cpu gets the current task's segment up to t, which becomes the segment start. */
static void cpu_close(struct outlog *ol, uint32_t cpu, uint64_t t)
{
	struct ol_cpu *c = &ol->cpus[cpu];
	int32_t w;

	if (!c->known)
		return;
	if (t < c->seg_start)
		t = c->seg_start;
	for (w = c->whead; w >= 0; w = ol->slots[w].wnext)
		seg_emit(ol, (uint32_t)w, cpu, c->pid, c->comm, c->seg_start, t);
	c->seg_start = t;
}

/* Task pid began running on cpu at t (clamped to the current segment's start). */
static void cpu_start(struct outlog *ol, uint32_t cpu, uint64_t t, uint32_t pid, const char *comm)
{
	struct ol_cpu *c = &ol->cpus[cpu];

	if (c->known && t < c->seg_start)
		t = c->seg_start;
	cpu_close(ol, cpu, t);
	c->pid = pid;
	comm_copy(c->comm, comm);
	c->seg_start = t;
	c->known = 1;
}

static void slot_out(struct outlog *ol, uint32_t si, uint32_t cpu, uint64_t t, char st)
{
	struct ol_slot *s = &ol->slots[si];

	s->state = OUTLOG_SLOT_OUT;
	s->cpu = cpu;
	s->piece_start = t;
	s->wake_ns = 0;
	s->st = st;
	s->cont = 0;
	s->piece_seq++;
	watch_add(ol, cpu, si);
}

/* Slot si (OUT) runs again on cpu from t: cut its segment on the CPU it left, close the piece. */
static void slot_in(struct outlog *ol, uint32_t si, uint64_t t, uint32_t cpu, unsigned flags)
{
	struct ol_slot *s = &ol->slots[si];
	struct ol_cpu *c = &ol->cpus[s->cpu];

	if (t < s->piece_start)
		t = s->piece_start;
	if (c->known)
		seg_emit(ol, si, s->cpu, c->pid, c->comm, c->seg_start, t);
	watch_del(ol, s->cpu, si);
	piece_close(ol, si, t, flags);
	s->state = OUTLOG_SLOT_RUNNING;
	s->cpu = cpu;
	s->cont = 0;
}

/*
 * Slot si is believed out but was seen running on cpu at ts for run_ns already: its switch-in was missed.
 * It began at ts - run_ns (not before the piece, nor before the segment the CPU was last seen to start),
 * else at its wakeup, else at ts.
 */
static void slot_in_missed(struct outlog *ol, uint32_t si, uint64_t ts, uint64_t run_ns,
			   uint32_t cpu, const char *comm)
{
	struct ol_slot *s = &ol->slots[si];
	struct ol_cpu *c = &ol->cpus[cpu];
	uint64_t lo = s->piece_start, t = ts;

	if (c->known && c->nwatch && c->seg_start > lo && c->seg_start <= ts)
		lo = c->seg_start;
	if (run_ns && run_ns <= ts - lo)
		t = ts - run_ns;
	else if (run_ns)
		t = lo;
	else if (s->wake_ns >= lo && s->wake_ns <= ts)
		t = s->wake_ns;
	ol->cnt.missed_in++;
	slot_in(ol, si, t, cpu, PC_GUESSED);
	cpu_start(ol, cpu, t, s->tid, comm);
}

/* The slot a record names for a tid, if that slot tracks that tid; else OUTLOG_NO_SLOT (counted). */
static int32_t slot_check(struct outlog *ol, int32_t slot, uint32_t tid)
{
	struct ol_slot *s;

	if (slot < 0)
		return OUTLOG_NO_SLOT;
	if ((uint32_t)slot >= ol->max_slots) {
		ol->cnt.bad++;
		return OUTLOG_NO_SLOT;
	}
	s = &ol->slots[slot];
	if (s->state == OUTLOG_SLOT_FREE || s->state == OUTLOG_SLOT_GONE || s->tid != tid) {
		ol->cnt.stale++;
		return OUTLOG_NO_SLOT;
	}
	return slot;
}

static void apply_switch(struct outlog *ol, const struct outlog_rec *r)
{
	struct ol_cpu *c = &ol->cpus[r->cpu];
	int32_t ps = slot_check(ol, r->prev_slot, r->prev_pid);
	int32_t ns = slot_check(ol, r->next_slot, r->next_pid);
	uint64_t ts = r->ts_ns;
	struct ol_slot *s;
	char st;

	/* prev believed out: it came back unseen, and is leaving now */
	if (ps >= 0 && ol->slots[ps].state == OUTLOG_SLOT_OUT)
		slot_in_missed(ol, (uint32_t)ps, ts, r->run_ns, r->cpu, r->prev_comm);
	/* the CPU's current task ends; if prev is not who we believed, place prev's start from run_ns */
	if (c->known && c->nwatch) {
		if (c->pid != r->prev_pid) {
			uint64_t t = c->seg_start;

			ol->cnt.desync++;
			if (r->prev_pid && r->run_ns && r->run_ns < ts - c->seg_start)
				t = ts - r->run_ns;
			cpu_start(ol, r->cpu, t, r->prev_pid, r->prev_comm);
		}
		cpu_close(ol, r->cpu, ts);
	}
	if (ps >= 0) {
		s = &ol->slots[ps];
		st = outlog_state_char(r->prev_state, r->flags & OUTLOG_RF_PREEMPT);
		if (st == 'X') {
			s->state = OUTLOG_SLOT_GONE;
			ol->cnt.exited++;
		} else {
			slot_out(ol, (uint32_t)ps, r->cpu, ts, st);
		}
	}
	if (ns >= 0) {
		s = &ol->slots[ns];
		if (s->state == OUTLOG_SLOT_OUT) {
			slot_in(ol, (uint32_t)ns, ts, r->cpu, 0);
		} else {
			if (s->state == OUTLOG_SLOT_RUNNING)
				ol->cnt.missed_out++;
			else
				ol->cnt.untracked++;
			s->state = OUTLOG_SLOT_RUNNING;
			s->cpu = r->cpu;
		}
	}
	cpu_start(ol, r->cpu, ts, r->next_pid, r->next_comm);
}

static void apply(struct outlog *ol, const struct outlog_rec *r)
{
	struct ol_slot *s;
	int32_t ns;

	if (r->cpu >= ol->max_cpus ||
	    (r->type != OUTLOG_REC_SWITCH && r->type != OUTLOG_REC_WAKEUP &&
	     r->type != OUTLOG_REC_RUNNING)) {
		ol->cnt.bad++;
		return;
	}
	ol->cnt.records++;
	if (!ol->period_start)
		ol->period_start = r->ts_ns; /* the first period starts at the first record */
	if (r->type == OUTLOG_REC_SWITCH) {
		apply_switch(ol, r);
		return;
	}
	ns = slot_check(ol, r->next_slot, r->next_pid);
	if (ns < 0)
		return;
	s = &ol->slots[ns];
	if (r->type == OUTLOG_REC_WAKEUP) {
		/* the first wakeup of a blocked interval starts its run delay; others change nothing */
		if (s->state == OUTLOG_SLOT_OUT && s->st != 'R' && !s->wake_ns) {
			s->wake_ns = r->ts_ns;
			s->cur.wakeups++;
		}
		return;
	}
	if (s->state == OUTLOG_SLOT_OUT) {
		slot_in_missed(ol, (uint32_t)ns, r->ts_ns, r->run_ns, r->cpu, r->next_comm);
	} else if (s->state == OUTLOG_SLOT_UNKNOWN) {
		s->state = OUTLOG_SLOT_RUNNING;
		s->cpu = r->cpu;
	}
}

/* ---- public ---- */

int outlog_slot_add(struct outlog *ol, uint32_t slot, uint32_t tid)
{
	struct ol_slot *s;

	if (slot >= ol->max_slots || !tid)
		return -EINVAL;
	s = &ol->slots[slot];
	if (s->state != OUTLOG_SLOT_FREE)
		return -EBUSY;
	memset(s, 0, sizeof(*s));
	s->tid = tid;
	s->state = OUTLOG_SLOT_UNKNOWN;
	s->wprev = s->wnext = -1;
	return 0;
}

int outlog_slot_del(struct outlog *ol, uint32_t slot)
{
	struct ol_slot *s;

	if (slot >= ol->max_slots || ol->slots[slot].state == OUTLOG_SLOT_FREE)
		return -EINVAL;
	s = &ol->slots[slot];
	if (s->state == OUTLOG_SLOT_OUT) {
		struct ol_cpu *c = &ol->cpus[s->cpu];
		uint64_t t = ol->horizon > s->piece_start ? ol->horizon : s->piece_start;

		if (c->known)
			seg_emit(ol, slot, s->cpu, c->pid, c->comm, c->seg_start, t);
		watch_del(ol, s->cpu, slot);
		piece_close(ol, slot, t, PC_REMOVED);
	}
	memset(s, 0, sizeof(*s));
	s->wprev = s->wnext = -1;
	return 0;
}

enum outlog_slot_state outlog_slot_state(const struct outlog *ol, uint32_t slot)
{
	if (slot >= ol->max_slots)
		return OUTLOG_SLOT_FREE;
	return (enum outlog_slot_state)ol->slots[slot].state;
}

int outlog_push(struct outlog *ol, const struct outlog_rec *r)
{
	struct ol_pending *p;

	if (ol->npend == ol->cap) {
		size_t ncap = ol->cap ? ol->cap * 2 : 1024;

		if (ol->cap >= OUTLOG_PENDING_MAX) {
			ol->cnt.overflow++;
			return -ENOBUFS;
		}
		if (ncap > OUTLOG_PENDING_MAX)
			ncap = OUTLOG_PENDING_MAX;
		p = realloc(ol->pend, ncap * sizeof(*p));
		if (!p) {
			ol->cnt.overflow++;
			return -ENOMEM;
		}
		ol->pend = p;
		ol->cap = ncap;
	}
	p = &ol->pend[ol->npend++];
	p->seq = ol->seq++;
	p->r = *r;
	if (p->r.ts_ns < ol->horizon) {
		ol->cnt.late++;
		p->r.ts_ns = ol->horizon;
	}
	return 0;
}

static int pend_cmp(const void *a, const void *b)
{
	const struct ol_pending *x = a, *y = b;

	if (x->r.ts_ns != y->r.ts_ns)
		return x->r.ts_ns < y->r.ts_ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sort the pending records by (ts, seq): insertion sort (they are nearly sorted), qsort if it gets long. */
static void pend_sort(struct outlog *ol)
{
	size_t i, j, budget = ol->npend * OL_SORT_BUDGET;
	struct ol_pending tmp;

	for (i = 1; i < ol->npend; i++) {
		if (pend_cmp(&ol->pend[i - 1], &ol->pend[i]) <= 0)
			continue;
		tmp = ol->pend[i];
		for (j = i; j > 0 && pend_cmp(&ol->pend[j - 1], &tmp) > 0; j--) {
			if (!budget--) {
				ol->pend[j] = tmp;
				qsort(ol->pend, ol->npend, sizeof(*ol->pend), pend_cmp);
				return;
			}
			ol->pend[j] = ol->pend[j - 1];
		}
		ol->pend[j] = tmp;
	}
}

void outlog_advance(struct outlog *ol, uint64_t horizon_ns)
{
	size_t k;

	if (horizon_ns < ol->horizon)
		horizon_ns = ol->horizon;
	pend_sort(ol);
	for (k = 0; k < ol->npend && ol->pend[k].r.ts_ns <= horizon_ns; k++)
		apply(ol, &ol->pend[k].r);
	if (k) {
		memmove(ol->pend, ol->pend + k, (ol->npend - k) * sizeof(*ol->pend));
		ol->npend -= k;
	}
	ol->horizon = horizon_ns;
}

static int preemptor_cmp(const void *a, const void *b)
{
	const struct outlog_preemptor *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

void outlog_cut(struct outlog *ol, uint64_t end_ns)
{
	uint32_t i;

	if (end_ns < ol->horizon)
		end_ns = ol->horizon;
	outlog_advance(ol, end_ns);
	for (i = 0; i < ol->max_slots; i++) {
		struct ol_slot *s = &ol->slots[i];

		if (s->state == OUTLOG_SLOT_FREE)
			continue;
		if (s->state == OUTLOG_SLOT_OUT) {
			struct ol_cpu *c = &ol->cpus[s->cpu];

			if (c->known)
				seg_emit(ol, i, s->cpu, c->pid, c->comm, c->seg_start, end_ns);
			piece_close(ol, i, end_ns, PC_SPLIT);
			s->piece_start = end_ns;
			s->cont = 1;
			s->piece_seq++;
		}
		s->last = s->cur;
		qsort(s->last.preempt, s->last.npreempt, sizeof(s->last.preempt[0]), preemptor_cmp);
		memset(&s->cur, 0, sizeof(s->cur));
	}
	ol->last_start = ol->period_start;
	ol->last_end = end_ns;
	ol->period_start = end_ns;
	ol->cnt.cuts++;
}

const struct outlog_stats *outlog_period_stats(const struct outlog *ol, uint32_t slot)
{
	if (slot >= ol->max_slots || ol->slots[slot].state == OUTLOG_SLOT_FREE)
		return NULL;
	return &ol->slots[slot].last;
}

const struct outlog_stats *outlog_current_stats(const struct outlog *ol, uint32_t slot)
{
	if (slot >= ol->max_slots || ol->slots[slot].state == OUTLOG_SLOT_FREE)
		return NULL;
	return &ol->slots[slot].cur;
}

void outlog_period_bounds(const struct outlog *ol, uint64_t *start_ns, uint64_t *end_ns)
{
	*start_ns = ol->last_start;
	*end_ns = ol->last_end;
}

uint64_t outlog_horizon(const struct outlog *ol)
{
	return ol->horizon;
}

uint64_t outlog_open_since(const struct outlog *ol, uint32_t slot)
{
	if (slot >= ol->max_slots || ol->slots[slot].state != OUTLOG_SLOT_OUT)
		return UINT64_MAX;
	return ol->slots[slot].piece_start;
}

void outlog_counters(const struct outlog *ol, struct outlog_counters *c)
{
	*c = ol->cnt;
	c->pending = ol->npend;
}
