/* SPDX-License-Identifier: MIT */
/*
 * merge: attribution of sampler gaps to net-duration events (see merge.h for the contract). Per CPU it keeps
 * pending gaps (FIFO, time order), pending events sorted by start and steal observations with a remaining
 * budget. merge_process() takes the gaps up to a horizon as one batch, walks the events once (binary search
 * into the batch for the first gap each one can touch), then gives steal budgets to the unexplained rest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/classes.h"
#include "attrib/gapsplit.h"
#include "attrib/merge.h"

struct mev {
	struct vn_event e;
	uint64_t attributed; /* events: net time placed into gaps so far; steal: remaining budget */
	uint8_t counted;
};

struct mcpu {
	struct merge_cpu pub;
	struct mev *ev; /* sorted by e.start_ns */
	size_t nev, evcap;
	struct mev *obs; /* steal observations, sorted by start */
	size_t nobs, obscap;
	struct vn_sample *gap; /* pending gaps, sorted by start */
	size_t ngap, gapcap;
	uint64_t done_ns; /* every gap ending at or before this was attributed */
	uint64_t seen_ns; /* the sampler's progress: latest end of any sample record */
	uint32_t *srcidx; /* hash of pub.src: index + 1, 0 = empty slot */
	size_t srccap; /* srcidx slots (power of two) */
	size_t srcarr; /* pub.src capacity (entries) */
	__int128 (
	    *part)[VN_CLASS_MAX]; /* scratch per batch gap (wide: hostile times cannot overflow) */
	size_t partcap;
	/* the recent ring as the batch found it: the latest events of earlier batches (a worst gap's
	 * lead-up; the batch's own events are still held) */
	struct vn_event lead[MERGE_RECENT];
	uint32_t nlead;
};

struct merge {
	struct mcpu *cpu[MERGE_MAX_CPUS];
	merge_gap_fn fn;
	void *ctx;
	uint64_t steps; /* records passed by sorted inserts, since the start */
};

static const char *const vec_names[VN_VEC_MAX] = {
	"local_timer",	    "reschedule",    "call_function", "call_function_single", "irq_work",
	"x86_platform_ipi", "spurious_apic", "error_apic",    "thermal_apic"
};
static const char *const softirq_names[] = { "HI",	 "TIMER",   "NET_TX", "NET_RX",	 "BLOCK",
					     "IRQ_POLL", "TASKLET", "SCHED",  "HRTIMER", "RCU" };
static const char *const hcall_names[VN_HCALL_MAX] = { "kvm_send_ipi_mask",
						       "kvm_send_ipi_mask_allbutself",
						       "__send_ipi_mask",
						       "kvm_kick_cpu",
						       "kvm_flush_tlb_multi",
						       "kvm_sched_yield",
						       "kvm_smp_send_call_func_ipi",
						       "kvm_wait" };

const char *merge_vector_name(uint32_t vec)
{
	return vec < VN_VEC_MAX ? vec_names[vec] : "vector?";
}

const char *merge_softirq_name(uint32_t vec)
{
	return vec < sizeof(softirq_names) / sizeof(softirq_names[0]) ? softirq_names[vec] : "?";
}

const char *merge_hcall_name(uint32_t id)
{
	return id < VN_HCALL_MAX ? hcall_names[id] : "?";
}

const char *merge_source_name(const struct merge_source *s, merge_irq_name_fn fn, void *ctx,
			      char *buf, size_t len)
{
	const char *n;

	if (s->id == MERGE_ID_REST && s->cls != VN_CLASS_STEAL && s->cls != VN_CLASS_UNEXPLAINED) {
		snprintf(buf, len, "%s:(others)", classes_guest_name(s->cls));
		return buf;
	}
	switch (s->cls) {
	case VN_CLASS_IRQ:
		if (s->id >= VN_VEC_BASE)
			snprintf(buf, len, "irq:%s", merge_vector_name(s->id - VN_VEC_BASE));
		else if (fn && (n = fn(ctx, s->id)) != NULL)
			snprintf(buf, len, "irq:%s", n);
		else
			snprintf(buf, len, "irq:%u", s->id);
		break;
	case VN_CLASS_SOFTIRQ:
		snprintf(buf, len, "softirq:%s", merge_softirq_name(s->id));
		break;
	case VN_CLASS_THREAD:
		snprintf(buf, len, "thread:%.*s[%u]", VN_COMM_LEN, s->comm, s->id);
		break;
	case VN_CLASS_HCALL:
		snprintf(buf, len, "hypercall:%s", merge_hcall_name(s->id));
		break;
	default:
		snprintf(buf, len, "%s", classes_guest_name(s->cls));
		break;
	}
	return buf;
}

struct merge *merge_new(merge_gap_fn fn, void *ctx)
{
	struct merge *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->fn = fn;
	m->ctx = ctx;
	return m;
}

void merge_free(struct merge *m)
{
	int i;

	if (!m)
		return;
	for (i = 0; i < MERGE_MAX_CPUS; i++) {
		struct mcpu *c = m->cpu[i];

		if (!c)
			continue;
		free(c->ev);
		free(c->obs);
		free(c->gap);
		free(c->pub.src);
		free(c->srcidx);
		free(c->part);
		free(c);
	}
	free(m);
}

static struct mcpu *cpu_get(struct merge *m, unsigned int cpu)
{
	struct mcpu *c;

	if (cpu >= MERGE_MAX_CPUS)
		return NULL;
	c = m->cpu[cpu];
	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return NULL;
		c->pub.cpu = (int)cpu;
		m->cpu[cpu] = c;
	}
	c->pub.active = 1;
	return c;
}

size_t merge_held(const struct merge *m, size_t *bytes)
{
	size_t b = 0, n = 0;

	for (int i = 0; i < MERGE_MAX_CPUS; i++) {
		const struct mcpu *c = m->cpu[i];

		if (!c)
			continue;
		n += c->nev + c->nobs + c->ngap;
		b += (c->nev + c->nobs) * sizeof(struct mev) +
		     c->ngap * (sizeof(struct vn_sample) + sizeof(*c->part));
	}
	*bytes = b;
	return n;
}

uint64_t merge_insert_steps(const struct merge *m)
{
	return m->steps;
}

const struct merge_cpu *merge_cpu(const struct merge *m, int cpu)
{
	if (cpu < 0 || cpu >= MERGE_MAX_CPUS || !m->cpu[cpu])
		return NULL;
	return &m->cpu[cpu]->pub;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

/* Order of the pending events: by start; on a tie the enclosing event (longer, then shallower) first. */
static int mev_after(const struct vn_event *a, const struct vn_event *b)
{
	if (a->start_ns != b->start_ns)
		return a->start_ns > b->start_ns;
	if (a->end_ns != b->end_ns)
		return a->end_ns < b->end_ns;
	return a->depth > b->depth;
}

/* Insert keeping start order; records come nearly sorted (children before parents), so scan from the end. */
static int mev_insert(struct merge *m, struct mev **arr, size_t *n, size_t *cap,
		      const struct vn_event *e, uint64_t attr)
{
	size_t i;

	if (grow((void **)arr, cap, *n + 1, sizeof(**arr)))
		return -ENOMEM;
	i = *n;
	while (i > 0 && mev_after(&(*arr)[i - 1].e, e)) {
		(*arr)[i] = (*arr)[i - 1];
		i--;
	}
	m->steps += *n - i;
	(*arr)[i].e = *e;
	(*arr)[i].attributed = attr;
	(*arr)[i].counted = 0;
	(*n)++;
	return 0;
}

int merge_add_event(struct merge *m, const struct vn_event *e)
{
	struct mcpu *c = cpu_get(m, e->cpu);

	if (!c)
		return e->cpu >= MERGE_MAX_CPUS ? -ERANGE : -ENOMEM;
	c->pub.events++;
	if (e->end_ns < e->start_ns || e->cls == VN_CLASS_NONE || e->cls >= VN_CLASS_UNEXPLAINED)
		return -EINVAL;
	if (e->end_ns <= c->done_ns) {
		c->pub.late++;
		if (e->cls == VN_CLASS_STEAL) {
			c->pub.steal_seen_ns += e->net_ns;
			c->pub.steal_unplaced_ns += e->net_ns;
		}
		return 0;
	}
	if (e->cls == VN_CLASS_STEAL) {
		c->pub.steal_seen_ns += e->net_ns;
		return mev_insert(m, &c->obs, &c->nobs, &c->obscap, e, e->net_ns);
	}
	return mev_insert(m, &c->ev, &c->nev, &c->evcap, e, 0);
}

int merge_add_sample(struct merge *m, const struct vn_sample *s)
{
	struct mcpu *c = cpu_get(m, s->cpu);
	size_t i;

	if (!c)
		return s->cpu >= MERGE_MAX_CPUS ? -ERANGE : -ENOMEM;
	if (s->end_ns < s->start_ns)
		return -EINVAL;
	if (s->kind <= VN_SAMPLE_WINDOW && s->end_ns > c->seen_ns)
		c->seen_ns = s->end_ns;
	if (s->kind == VN_SAMPLE_WINDOW) {
		c->pub.runtime_ns += s->end_ns - s->start_ns;
		return 0;
	}
	if (s->kind != VN_SAMPLE_GAP)
		return -EINVAL;
	if (s->end_ns <= c->done_ns) {
		c->pub.late++;
		return 0;
	}
	if (s->start_ns < c->done_ns) /* began before a horizon: events before it may be gone */
		c->pub.late++;
	if (grow((void **)&c->gap, &c->gapcap, c->ngap + 1, sizeof(*c->gap)))
		return -ENOMEM;
	i = c->ngap;
	while (i > 0 && c->gap[i - 1].start_ns > s->start_ns) {
		c->gap[i] = c->gap[i - 1];
		i--;
	}
	m->steps += c->ngap - i;
	c->gap[i] = *s;
	c->ngap++;
	return 0;
}

/* Threads are keyed by pid and comm, but hashed by pid only, so a parent thread is found by pid alone. */
static uint64_t src_hash(uint8_t cls, uint32_t id)
{
	uint64_t h = (1469598103934665603ULL ^ ((uint64_t)cls << 32 | id)) * 1099511628211ULL;

	return h ^ (h >> 29);
}

static int src_eq(const struct merge_source *s, uint8_t cls, uint32_t id, const char *comm)
{
	return s->cls == cls && s->id == id &&
	       (cls != VN_CLASS_THREAD || !strncmp(s->comm, comm, VN_COMM_LEN));
}

/* Grow pub.src (dense, nsrc entries) and its open-addressing index srcidx to hold need sources. */
static int src_grow(struct mcpu *c, size_t need)
{
	size_t j, i;

	if (need > c->srcarr) {
		size_t ncap = c->srcarr ? c->srcarr * 2 : 32;
		struct merge_source *ns;

		while (ncap < need)
			ncap *= 2;
		ns = realloc(c->pub.src, ncap * sizeof(*ns));
		if (!ns)
			return -ENOMEM;
		c->pub.src = ns;
		c->srcarr = ncap;
	}
	if (need * 2 > c->srccap) {
		size_t ncap = c->srccap ? c->srccap * 2 : 64;
		uint32_t *ni;

		while (ncap < need * 2)
			ncap *= 2;
		ni = calloc(ncap, sizeof(*ni));
		if (!ni)
			return -ENOMEM;
		for (j = 0; j < c->pub.nsrc; j++) {
			i = src_hash(c->pub.src[j].cls, c->pub.src[j].id) & (ncap - 1);
			while (ni[i])
				i = (i + 1) & (ncap - 1);
			ni[i] = (uint32_t)j + 1;
		}
		free(c->srcidx);
		c->srcidx = ni;
		c->srccap = ncap;
	}
	return 0;
}

/* Room for extra more sources: that many src_get() calls then move nothing, so pointers into pub.src stay
 * valid until the next reserve. */
static inline int src_reserve(struct mcpu *c, size_t extra)
{
	size_t need = c->pub.nsrc + extra;

	return need > c->srcarr || need * 2 > c->srccap ? src_grow(c, need) : 0;
}

/* Find or add the source; NULL on allocation failure. */
static struct merge_source *src_get(struct mcpu *c, uint8_t cls, uint32_t id, const char *comm)
{
	struct merge_source *s;
	size_t i, mask;

	if (src_reserve(c, 1))
		return NULL;
	mask = c->srccap - 1;
	for (i = src_hash(cls, id) & mask; c->srcidx[i]; i = (i + 1) & mask) {
		s = &c->pub.src[c->srcidx[i] - 1];
		if (src_eq(s, cls, id, comm))
			return s;
	}
	s = &c->pub.src[c->pub.nsrc];
	memset(s, 0, sizeof(*s));
	s->cls = cls;
	s->id = id;
	if (cls == VN_CLASS_THREAD)
		memcpy(s->comm, comm, VN_COMM_LEN);
	c->srcidx[i] = ++c->pub.nsrc;
	return s;
}

/* A thread source by pid only (the parent's comm is not carried in events); NULL if none. */
static struct merge_source *src_thread(struct mcpu *c, uint32_t pid)
{
	size_t i, mask;

	if (!c->srccap)
		return NULL;
	mask = c->srccap - 1;
	for (i = src_hash(VN_CLASS_THREAD, pid) & mask; c->srcidx[i]; i = (i + 1) & mask) {
		struct merge_source *s = &c->pub.src[c->srcidx[i] - 1];

		if (s->cls == VN_CLASS_THREAD && s->id == pid)
			return s;
	}
	return NULL;
}

static const char no_comm[VN_COMM_LEN];

/* Apply one event to the batch gaps g[0..n). */
static int apply_event(struct mcpu *c, struct mev *me, const struct vn_sample *g, size_t n)
{
	const struct vn_event *e = &me->e;
	uint64_t wall = e->end_ns - e->start_ns;
	size_t lo = 0, hi = n, k;
	struct merge_source *s, *ps;

	while (lo < hi) { /* first gap ending after the event starts */
		size_t mid = lo + (hi - lo) / 2;

		if (g[mid].end_ns <= e->start_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k < n && g[k].start_ns < e->end_ns; k++) {
		uint64_t a = e->start_ns > g[k].start_ns ? e->start_ns : g[k].start_ns;
		uint64_t b = e->end_ns < g[k].end_ns ? e->end_ns : g[k].end_ns;
		uint64_t ov, stp = 0;

		if (b <= a)
			continue;
		ov = b - a;
		if (src_reserve(c, 3)) /* own, steal and parent sources: no move below */
			return -ENOMEM;
		if (e->steal_ns && wall) {
			stp = (uint64_t)((unsigned __int128)e->steal_ns * ov / wall);
			if (stp > ov)
				stp = ov;
		}
		s = src_get(c, e->cls, e->id, e->cls == VN_CLASS_THREAD ? e->comm : no_comm);
		if (!s)
			return -ENOMEM;
		c->part[k][e->cls] += ov - stp;
		s->total_ns += ov - stp;
		if (stp) {
			struct merge_source *ss = src_get(c, VN_CLASS_STEAL, 0, no_comm);

			if (!ss)
				return -ENOMEM;
			c->part[k][VN_CLASS_STEAL] += stp;
			ss->total_ns += stp;
			if (!(me->counted & 2)) {
				me->counted |= 2;
				ss->count++;
				c->pub.class_count[VN_CLASS_STEAL]++;
			}
		}
		if (e->parent_cls != VN_CLASS_NONE && e->parent_cls < VN_CLASS_UNEXPLAINED) {
			if (e->parent_cls == VN_CLASS_THREAD)
				ps = src_thread(c, e->parent_id);
			else
				ps = src_get(c, e->parent_cls, e->parent_id, no_comm);
			c->part[k][e->parent_cls] -= ov;
			if (ps)
				ps->total_ns = ps->total_ns >= ov ? ps->total_ns - ov : 0;
			else
				c->pub.clamped++;
		}
		me->attributed += ov - stp;
		if (!(me->counted & 1)) {
			uint32_t r = c->pub.nrecent++ % MERGE_RECENT;

			me->counted |= 1;
			s->count++;
			c->pub.class_count[e->cls]++;
			c->pub.recent[r] = *e;
			c->pub.recent_ov[r] = ov;
		}
		{
			uint64_t mx = me->attributed < e->net_ns ? me->attributed : e->net_ns;

			if (mx > s->max_ns)
				s->max_ns = mx;
		}
	}
	return 0;
}

/* Gap k's parts from the batch events, each clamped to [0, UINT64_MAX]; returns their sum. */
static unsigned __int128 gap_parts(const struct mcpu *c, size_t k, uint64_t part[VN_CLASS_MAX])
{
	unsigned __int128 sum = 0;
	int cl;

	for (cl = 0; cl < VN_CLASS_MAX; cl++) {
		__int128 p = c->part[k][cl];

		part[cl] = p <= 0 ? 0 : p > UINT64_MAX ? UINT64_MAX : (uint64_t)p;
		sum += part[cl];
	}
	return sum;
}

/*
 * Steal seen by the kernel helper fills what is still unexplained in gap g's window, taken from the steal
 * observations' remaining budgets. *o is the first observation that can still reach g or a later gap.
 */
static int fill_steal(struct mcpu *c, const struct vn_sample *g, size_t *o,
		      uint64_t part[VN_CLASS_MAX], unsigned __int128 *sum)
{
	uint64_t dur = g->end_ns - g->start_ns;
	size_t j;

	while (*o < c->nobs && c->obs[*o].e.end_ns <= g->start_ns)
		(*o)++;
	for (j = *o; j < c->nobs && c->obs[j].e.start_ns < g->end_ns && *sum < dur; j++) {
		struct mev *ob = &c->obs[j];
		uint64_t take = (uint64_t)(dur - *sum);
		struct merge_source *ss;

		if (ob->e.end_ns <= g->start_ns || !ob->attributed)
			continue;
		if (take > ob->attributed)
			take = ob->attributed;
		ob->attributed -= take;
		part[VN_CLASS_STEAL] += take;
		*sum += take;
		ss = src_get(c, VN_CLASS_STEAL, 0, no_comm);
		if (!ss)
			return -ENOMEM;
		ss->total_ns += take;
		if (take > ss->max_ns)
			ss->max_ns = take;
		if (!ob->counted) {
			ob->counted = 1;
			ss->count++;
			c->pub.class_count[VN_CLASS_STEAL]++;
		}
	}
	return 0;
}

/* Parts that add up to more than the gap (clock skew) are scaled down to dur; the biggest takes the rest. */
static void scale_parts(struct mcpu *c, uint64_t part[VN_CLASS_MAX], unsigned __int128 sum,
			uint64_t dur)
{
	uint64_t acc = 0;
	int cl, big = 0;

	c->pub.clamped++;
	for (cl = 0; cl < VN_CLASS_MAX; cl++) {
		part[cl] = (uint64_t)((unsigned __int128)part[cl] * dur / sum);
		acc += part[cl];
		if (part[cl] > part[big])
			big = cl;
	}
	part[big] += dur - acc;
}

/* ---- the worst gap ---- */

/* A worst gap's parts while they are gathered: more than it lists (the largest are kept, the rest folded). */
#define WORST_TMP 64
#define WORST_NAMED \
	(MERGE_WORST_PARTS - (VN_CLASS_MAX - 1)) /* named parts listed: room for a rest a class */

struct worst_tmp {
	struct merge_source p[WORST_TMP];
	uint32_t n;
};

/* The rest part of class cls in t (made if new: there is always room for one a class). */
static struct merge_source *tmp_rest(struct worst_tmp *t, uint8_t cls)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		if (t->p[i].cls == cls && t->p[i].id == MERGE_ID_REST)
			return &t->p[i];
	t->p[t->n] = (struct merge_source){ .cls = cls, .id = MERGE_ID_REST, .count = 1 };
	return &t->p[t->n++];
}

/* The part of (cls, id, comm) in t (comm NULL: a thread by pid only), made if new; past the named room it is
 * the class's rest. */
static struct merge_source *tmp_part(struct worst_tmp *t, uint8_t cls, uint32_t id,
				     const char *comm)
{
	uint32_t i;

	for (i = 0; i < t->n; i++) {
		const struct merge_source *p = &t->p[i];

		if (comm ? src_eq(p, cls, id, comm) : p->cls == cls && p->id == id)
			return &t->p[i];
	}
	if (t->n >= WORST_TMP - VN_CLASS_MAX) /* the last slots: the rests */
		return tmp_rest(t, cls);
	t->p[t->n] = (struct merge_source){ .cls = cls, .id = id, .count = 1 };
	if (cls == VN_CLASS_THREAD && comm)
		memcpy(t->p[t->n].comm, comm, VN_COMM_LEN);
	return &t->p[t->n++];
}

/* Each class's parts in t made to add up to part[cls] exactly: scaled down when over, the rest part given
 * the shortfall (a class with no event, steal and unexplained: all of it). */
static void tmp_fit(struct worst_tmp *t, const uint64_t part[VN_CLASS_MAX])
{
	uint64_t v[WORST_TMP], sum;
	uint32_t idx[WORST_TMP], i, k;
	int cl;

	for (cl = 0; cl < VN_CLASS_MAX; cl++) {
		for (i = 0, k = 0, sum = 0; i < t->n; i++)
			if (t->p[i].cls == cl) {
				idx[k] = i;
				v[k] = t->p[i].total_ns;
				sum += v[k++];
			}
		if (sum > part[cl]) {
			gapsplit_scale(v, k, sum, part[cl]);
			for (i = 0; i < k; i++)
				t->p[idx[i]].total_ns = v[i];
		} else if (sum < part[cl]) {
			tmp_rest(t, (uint8_t)cl)->total_ns += part[cl] - sum;
		}
	}
}

static int worst_cmp(const void *a, const void *b)
{
	const struct merge_source *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->cls != y->cls ? x->cls - y->cls : (x->id > y->id) - (x->id < y->id);
}

/* The largest named parts of t (at most WORST_NAMED) into w, the others folded into a rest a class. */
static void worst_list(struct merge_worst *w, struct worst_tmp *t)
{
	uint32_t i, j, named = 0;

	qsort(t->p, t->n, sizeof(t->p[0]), worst_cmp);
	w->nparts = 0;
	for (i = 0; i < t->n && t->p[i].total_ns; i++) {
		const struct merge_source *p = &t->p[i];

		if (p->id != MERGE_ID_REST && named < WORST_NAMED) {
			w->parts[w->nparts++] = *p;
			named++;
			continue;
		}
		for (j = 0; j < w->nparts; j++)
			if (w->parts[j].cls == p->cls && w->parts[j].id == MERGE_ID_REST)
				break;
		if (j == w->nparts) { /* at most one a class: within MERGE_WORST_PARTS */
			w->parts[w->nparts] =
			    (struct merge_source){ .cls = p->cls, .id = MERGE_ID_REST, .count = 1 };
			w->nparts++;
		}
		w->parts[j].total_ns += p->total_ns;
	}
}

/* Whether event e goes before the lead-up entry b (by end, then start, class, id). */
static int before_cmp(const struct vn_event *a, const struct vn_event *b)
{
	if (a->end_ns != b->end_ns)
		return a->end_ns < b->end_ns ? -1 : 1;
	if (a->start_ns != b->start_ns)
		return a->start_ns < b->start_ns ? -1 : 1;
	if (a->cls != b->cls)
		return a->cls < b->cls ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Keep e in the worst gap's lead-up when it is among the latest MERGE_WORST_BEFORE (by end), once. */
static void before_offer(struct merge_worst *w, const struct vn_event *e)
{
	uint32_t i, at;

	for (i = 0; i < w->nbefore; i++)
		if (!before_cmp(&w->before[i], e))
			return;
	if (w->nbefore == MERGE_WORST_BEFORE && before_cmp(e, &w->before[0]) < 0)
		return;
	if (w->nbefore == MERGE_WORST_BEFORE)
		memmove(w->before, w->before + 1, sizeof(w->before[0]) * --w->nbefore);
	for (at = w->nbefore; at > 0 && before_cmp(e, &w->before[at - 1]) < 0; at--)
		;
	memmove(w->before + at + 1, w->before + at, sizeof(w->before[0]) * (w->nbefore - at));
	w->before[at] = *e;
	w->nbefore++;
}

/* The worst gap's lead-up: the latest events that fell into gaps and ended by its start, from the events
 * still held and the recent ring as the batch found it (the latest of earlier batches). */
static void worst_before(struct mcpu *c, struct merge_worst *w, const struct vn_sample *g)
{
	uint32_t k;
	size_t i;

	for (k = 0; k < c->nlead; k++)
		if (c->lead[k].end_ns <= g->start_ns)
			before_offer(w, &c->lead[k]);
	for (i = 0; i < c->nev && c->ev[i].e.start_ns < g->start_ns; i++)
		if ((c->ev[i].counted & 1) && c->ev[i].e.end_ns <= g->start_ns)
			before_offer(w, &c->ev[i].e);
}

/* Gap g (its final parts by class: part[]) is the CPU's longest so far (or the period's) into w: its parts
 * by source from the events still held (the same net rule as apply_event), and its lead-up. */
static void worst_capture(struct mcpu *c, struct merge_worst *w, const struct vn_sample *g,
			  const uint64_t part[VN_CLASS_MAX])
{
	struct worst_tmp *t = calloc(1, sizeof(*t));
	size_t i;

	memset(w, 0, sizeof(*w));
	w->start_ns = g->start_ns;
	w->end_ns = g->end_ns;
	memcpy(w->class_ns, part, sizeof(w->class_ns));
	if (!t) { /* no memory for the sources: the classes alone, exact */
		for (int k = 0; k < VN_CLASS_MAX; k++)
			if (part[k])
				w->parts[w->nparts++] =
				    (struct merge_source){ .cls = (uint8_t)k,
							   .id = MERGE_ID_REST,
							   .count = 1,
							   .total_ns = part[k] };
		worst_before(c, w, g);
		return;
	}
	for (i = 0; i < c->nev && c->ev[i].e.start_ns < g->end_ns; i++) {
		const struct vn_event *e = &c->ev[i].e;
		uint64_t a = e->start_ns > g->start_ns ? e->start_ns : g->start_ns;
		uint64_t b = e->end_ns < g->end_ns ? e->end_ns : g->end_ns;
		uint64_t ov, stp = 0, wall = e->end_ns - e->start_ns;
		struct merge_source *p;

		if (b <= a || e->cls == VN_CLASS_NONE || e->cls >= VN_CLASS_STEAL)
			continue;
		ov = b - a;
		if (e->steal_ns && wall)
			stp = (uint64_t)((unsigned __int128)e->steal_ns * ov / wall);
		if (stp > ov)
			stp = ov;
		tmp_part(t, e->cls, e->id, e->cls == VN_CLASS_THREAD ? e->comm : no_comm)
		    ->total_ns += ov - stp;
		if (e->parent_cls != VN_CLASS_NONE && e->parent_cls < VN_CLASS_STEAL) {
			p = tmp_part(t, e->parent_cls, e->parent_id,
				     e->parent_cls == VN_CLASS_THREAD ? NULL : no_comm);
			p->total_ns = p->total_ns >= ov ? p->total_ns - ov : 0;
		}
	}
	for (i = 0; i < t->n;
	     i++) /* a parent seen only as a parent has no name: its class's rest */
		if (t->p[i].cls == VN_CLASS_THREAD && !t->p[i].comm[0] &&
		    t->p[i].id != MERGE_ID_REST)
			t->p[i].total_ns = 0;
	tmp_fit(t, part);
	worst_list(w, t);
	free(t);
	worst_before(c, w, g);
}

/* Gap g is settled: its parts and the unexplained rest go into the CPU's totals and to the gap callback. */
static void settle_gap(struct merge *m, struct mcpu *c, const struct vn_sample *g,
		       uint64_t part[VN_CLASS_MAX], unsigned __int128 sum)
{
	uint64_t dur = g->end_ns - g->start_ns;
	int cl;

	if (sum > dur) {
		scale_parts(c, part, sum, dur);
		sum = dur;
	}
	part[VN_CLASS_UNEXPLAINED] += (uint64_t)(dur - sum);
	if (sum < dur)
		c->pub.class_count[VN_CLASS_UNEXPLAINED]++;
	for (cl = 0; cl < VN_CLASS_MAX; cl++)
		c->pub.class_ns[cl] += part[cl];
	c->pub.noise_ns += dur;
	c->pub.samples++;
	if (dur > c->pub.max_single_ns)
		c->pub.max_single_ns = dur;
	c->pub.last_gap_start = g->start_ns;
	c->pub.last_gap_end = g->end_ns;
	if (m && m->fn)
		m->fn(m->ctx, c->pub.cpu, dur, part);
}

/* Attribute the batch of the first n pending gaps: every event that can touch them, then steal, gap by gap. */
static int attribute_batch(struct merge *m, struct mcpu *c, size_t n)
{
	const struct vn_sample *g = c->gap;
	size_t i, k, o = 0, big = 0;

	if (grow((void **)&c->part, &c->partcap, n, sizeof(*c->part)))
		return -ENOMEM;
	for (k = 1; k < n; k++) /* the batch's longest gap: the only one that can be a new worst */
		if (g[k].end_ns - g[k].start_ns > g[big].end_ns - g[big].start_ns)
			big = k;
	c->nlead = c->pub.nrecent < MERGE_RECENT ? c->pub.nrecent : MERGE_RECENT;
	memcpy(c->lead, c->pub.recent, sizeof(c->lead));
	memset(c->part, 0, n * sizeof(*c->part));
	for (i = 0; i < c->nev && c->ev[i].e.start_ns < g[n - 1].end_ns; i++)
		if (apply_event(c, &c->ev[i], g, n))
			return -ENOMEM;
	for (k = 0; k < n; k++) {
		uint64_t part[VN_CLASS_MAX];
		unsigned __int128 sum = gap_parts(c, k, part);

		if (fill_steal(c, &g[k], &o, part, &sum))
			return -ENOMEM;
		if (k == big) {
			uint64_t d = g[k].end_ns - g[k].start_ns;
			bool run = d > c->pub.worst.end_ns - c->pub.worst.start_ns;
			bool per = d > c->pub.pworst.end_ns - c->pub.pworst.start_ns;

			if (run || per) {
				settle_gap(NULL, c, &g[k], part, sum); /* final parts first ... */
				if (run)
					worst_capture(c, &c->pub.worst, &g[k], part);
				if (per && run)
					c->pub.pworst = c->pub.worst;
				else if (per)
					worst_capture(c, &c->pub.pworst, &g[k], part);
				if (m->fn) /* ... then the callback sees the new worst in place */
					m->fn(m->ctx, c->pub.cpu, d, part);
				continue;
			}
		}
		settle_gap(m, c, &g[k], part, sum);
	}
	return 0;
}

/*
 * Drop what can no longer touch a future gap: events and steal observations that ended by done_ns (all of
 * them at the final horizon UINT64_MAX). Steal budget never placed into a gap is counted as unplaced.
 */
static void drop_settled(struct mcpu *c, uint64_t horizon)
{
	size_t i, j;

	for (i = 0, j = 0; i < c->nev; i++)
		if (c->ev[i].e.end_ns > c->done_ns || horizon == UINT64_MAX)
			c->ev[j++] = c->ev[i];
	c->nev = horizon == UINT64_MAX ? 0 : j;
	for (i = 0, j = 0; i < c->nobs; i++) {
		if (c->obs[i].e.end_ns > c->done_ns && horizon != UINT64_MAX)
			c->obs[j++] = c->obs[i];
		else
			c->pub.steal_unplaced_ns += c->obs[i].attributed;
	}
	c->nobs = j;
}

static int process_cpu(struct merge *m, struct mcpu *c, uint64_t horizon)
{
	struct vn_sample *g = c->gap;
	size_t n = 0;

	/*
	 * Never move past the sampler's own progress: a gap still in progress (not yet reported) may hold
	 * events that already ended, and they must wait for it.
	 */
	if (horizon != UINT64_MAX && horizon > c->seen_ns)
		horizon = c->seen_ns;
	while (n < c->ngap && g[n].end_ns <= horizon)
		n++;
	if (n) {
		if (attribute_batch(m, c, n))
			return -ENOMEM;
		if (g[n - 1].end_ns > c->done_ns)
			c->done_ns = g[n - 1].end_ns;
		memmove(g, g + n, (c->ngap - n) * sizeof(*g));
		c->ngap -= n;
	}
	if (horizon > c->done_ns && !c->ngap)
		c->done_ns = horizon == UINT64_MAX ? c->done_ns : horizon;
	drop_settled(c, horizon);
	return 0;
}

void merge_period_worst_reset(struct merge *m)
{
	for (int i = 0; i < MERGE_MAX_CPUS; i++)
		if (m->cpu[i])
			memset(&m->cpu[i]->pub.pworst, 0, sizeof(m->cpu[i]->pub.pworst));
}

int merge_process(struct merge *m, uint64_t horizon_ns)
{
	int i, err;

	for (i = 0; i < MERGE_MAX_CPUS; i++) {
		if (!m->cpu[i])
			continue;
		err = process_cpu(m, m->cpu[i], horizon_ns);
		if (err)
			return err;
	}
	return 0;
}

static int src_cmp(const void *a, const void *b)
{
	const struct merge_source *x = a, *y = b;

	if (!x->cls != !y->cls)
		return !x->cls ? 1 : -1;
	return x->total_ns < y->total_ns ? 1 : x->total_ns > y->total_ns ? -1 : 0;
}

size_t merge_top_sources(const struct merge *m, int cpu, struct merge_source *out, size_t max)
{
	const struct mcpu *c;
	struct merge_source *tmp;
	size_t n = 0, k;

	if (cpu < 0 || cpu >= MERGE_MAX_CPUS || !(c = m->cpu[cpu]) || !c->pub.nsrc || !max)
		return 0;
	tmp = malloc(c->pub.nsrc * sizeof(*tmp));
	if (!tmp)
		return 0;
	for (k = 0; k < c->pub.nsrc; k++)
		tmp[n++] = c->pub.src[k];
	qsort(tmp, n, sizeof(*tmp), src_cmp);
	if (n > max)
		n = max;
	memcpy(out, tmp, n * sizeof(*out));
	free(tmp);
	return n;
}
