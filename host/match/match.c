/* SPDX-License-Identifier: MIT */
/*
 * match: the guest<->host matcher (see match.h for the contract). Per vCPU four queues sorted by start: gaps,
 * guest events, host out intervals and host runs. match_process() walks the eligible gaps in time order and
 * keeps, per record stream, the list of queued records overlapping the current gap (each record enters and
 * leaves it once per call), so a call is linear in the records it looks at. A gap's parts are gathered by
 * source in a scratch table, made consistent (no negative part, guest scaled down to fit), then committed to
 * both stats sets. match_process() never allocates: the scratch grows with the queues, in the add calls.
 * The gap callback must not call back into the matcher. The stats' sums saturate (a hostile guest's spans can
 * add up past 64 bits: overlapping gaps, windows of any length); they never wrap. Records for an out-of-range vCPU are counted apart
 * and show as "bad" in match_counters() of any vcpu >= MATCH_MAX_VCPUS.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/gapsplit.h"
#include "match/match_priv.h"
#include "util/satadd.h"

#define MATCH_IDLE_KEEP_NS 1000000000ULL /* kept behind the horizon on an unmeasured vCPU */
/* The host's records are kept at most this far behind the host horizon, whatever the guest does (a horizon
 * that stands still, an epoch held off): a gap still waiting that started before that is late, and a longer
 * gap that is ready is matched with the host's records of its last MATCH_HOST_KEEP_NS. */
#define MATCH_HOST_KEEP_NS 10000000000ULL
#define DEFAULT_BIG_NS 1000000ULL
#define SRC_SLOTS (2 * MATCH_MAX_SOURCES) /* hash slots per stats set (power of two) */

struct span {
	uint64_t start, end;
};

/* Queued records; each starts with its span (host ns). */
struct rgap {
	struct span s;
	uint64_t unc;
};

struct rev {
	struct span s;
	uint32_t id, parent_id;
	uint8_t cls, parent_cls, depth;
	char comm[VN_COMM_LEN]; /* NUL-terminated, zero-padded; THREAD only */
};

struct rout {
	struct span s;
	char state;
};

struct rrun {
	struct span s;
	uint32_t pid;
	uint8_t idle;
	char comm[VN_COMM_LEN];
};

typedef int (*after_fn)(const void *a, const void *b);

struct queue {
	char *a; /* records of sz bytes, sorted by start: a[head .. head + n) */
	size_t sz, head, n, cap;
	after_fn after; /* insertion order */
	uint32_t *
	    act; /* streams only: records overlapping the current gap, in start order (cap entries) */
	size_t nact, next; /* next: first record not yet looked at in this match_process() */
};

/* A source key: comm zero-padded so keys compare with memcmp on comm. */
struct skey {
	uint8_t kind, cls;
	uint32_t id;
	char comm[VN_COMM_LEN];
};

struct part {
	struct skey k;
	__int128 acc; /* signed sum while the gap is walked (wide: hostile times cannot overflow) */
	uint64_t ns; /* the final part, in [0, gap] */
};

struct hspan {
	uint64_t a, b;
};

struct mset {
	struct match_stats st;
	uint16_t idx[SRC_SLOTS]; /* st.src index + 1, 0 = empty */
};

struct mvcpu {
	struct mset total, period;
	struct match_counters cnt;
	struct queue gaps, evs, outs, runs;
	uint64_t done_ns; /* no future gap starts before this: older records are useless */
	uint64_t host_floor_ns; /* host records before this are gone (MATCH_HOST_KEEP_NS) */
	uint64_t seen_ns; /* the sampler's progress: latest end of any sample */
	uint64_t
	    open_ns; /* the host's open out piece began here (match_host_open), UINT64_MAX none */
	struct vn_host_worst worst; /* the period's longest matched gap (duration_ns 0: none) */
};

struct match {
	struct match_params p;
	struct mvcpu *v[MATCH_MAX_VCPUS];
	uint32_t nvcpus;
	uint64_t bad_vcpu; /* records for an out-of-range vCPU */
	match_gap_fn fn;
	void *ctx;
	/* per-gap scratch, room for every stream record of the largest vCPU */
	struct part *part;
	struct hspan *hs;
	uint32_t *stk;
	size_t npart, scap;
	uint64_t steps; /* records passed by sorted inserts, since the start */
};

static inline uint64_t min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline void *q_at(const struct queue *q, size_t i)
{
	return q->a + (q->head + i) * q->sz;
}

static inline const struct span *q_span(const struct queue *q, size_t i)
{
	return (const struct span *)(const void *)(q->a + (q->head + i) * q->sz);
}

/* Drop the first k records: the room before head is taken back when the end is reached (q_room). */
static void q_pop(struct queue *q, size_t k)
{
	q->n -= k;
	q->head = q->n ? q->head + k : 0;
}

static int start_after(const void *a, const void *b)
{
	return ((const struct span *)a)->start > ((const struct span *)b)->start;
}

/* Events by start; on a tie the enclosing one (longer, then shallower) first. */
static int ev_after(const void *a, const void *b)
{
	const struct rev *x = a, *y = b;

	if (x->s.start != y->s.start)
		return x->s.start > y->s.start;
	if (x->s.end != y->s.end)
		return x->s.end < y->s.end;
	return x->depth > y->depth;
}

static void copy_comm(char *dst, const char *src)
{
	memset(dst, 0, VN_COMM_LEN);
	if (src)
		memcpy(dst, src, strnlen(src, VN_COMM_LEN - 1));
}

static void mset_init(struct mset *s)
{
	memset(s, 0, sizeof(*s));
	s->st.other.kind = MATCH_K_OTHER;
	copy_comm(s->st.other.comm, "other");
}

/* ---- objects ---- */

struct match *match_new(const struct match_params *p)
{
	struct match *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (p)
		m->p = *p;
	if (!m->p.big_ns)
		m->p.big_ns = DEFAULT_BIG_NS;
	return m;
}

static void q_free(struct queue *q)
{
	free(q->a);
	free(q->act);
}

void match_free(struct match *m)
{
	uint32_t i;

	if (!m)
		return;
	for (i = 0; i < m->nvcpus; i++) {
		struct mvcpu *v = m->v[i];

		if (!v)
			continue;
		q_free(&v->gaps);
		q_free(&v->evs);
		q_free(&v->outs);
		q_free(&v->runs);
		free(v);
	}
	free(m->part);
	free(m->hs);
	free(m->stk);
	free(m);
}

void match_set_gap_cb(struct match *m, match_gap_fn fn, void *ctx)
{
	m->fn = fn;
	m->ctx = ctx;
}

static struct mvcpu *vcpu_get(struct match *m, uint32_t vcpu)
{
	struct mvcpu *v;

	if (vcpu >= MATCH_MAX_VCPUS) {
		m->bad_vcpu++;
		return NULL;
	}
	v = m->v[vcpu];
	if (v)
		return v;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	mset_init(&v->total);
	mset_init(&v->period);
	v->gaps = (struct queue){ .sz = sizeof(struct rgap), .after = start_after };
	v->evs = (struct queue){ .sz = sizeof(struct rev), .after = ev_after };
	v->outs = (struct queue){ .sz = sizeof(struct rout), .after = start_after };
	v->runs = (struct queue){ .sz = sizeof(struct rrun), .after = start_after };
	v->open_ns = UINT64_MAX;
	m->v[vcpu] = v;
	if (vcpu >= m->nvcpus)
		m->nvcpus = vcpu + 1;
	return v;
}

/* ---- queues ---- */

static int scratch_reserve(struct match *m, size_t need)
{
	size_t ncap = m->scap ? m->scap : 256;
	void *np;

	if (need <= m->scap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(m->part, ncap * sizeof(*m->part));
	if (!np)
		return -ENOMEM;
	m->part = np;
	np = realloc(m->hs, ncap * sizeof(*m->hs));
	if (!np)
		return -ENOMEM;
	m->hs = np;
	np = realloc(m->stk, ncap * sizeof(*m->stk));
	if (!np)
		return -ENOMEM;
	m->stk = np;
	m->scap = ncap;
	return 0;
}

/*
 * Room for one more record at the end: the records move back to the start when a quarter of the room is
 * before them (or the queue cannot grow), else the room doubles (up to the cap); the scratch first, so it
 * always covers the streams' capacities. Each record moves O(1) times on average.
 */
static int q_room(struct match *m, struct mvcpu *v, struct queue *q)
{
	size_t ncap = q->cap ? q->cap * 2 : 64;
	void *np;

	if (q->head + q->n < q->cap)
		return 0;
	if (q->head && (q->head >= q->cap / 4 || q->cap >= MATCH_QUEUE_CAP)) {
		memmove(q->a, q->a + q->head * q->sz, q->n * q->sz);
		q->head = 0;
		return 0;
	}
	if (ncap > MATCH_QUEUE_CAP)
		ncap = MATCH_QUEUE_CAP;
	if (q != &v->gaps &&
	    scratch_reserve(m, v->evs.cap + v->outs.cap + v->runs.cap - q->cap + ncap))
		return -ENOMEM;
	np = realloc(q->a, ncap * q->sz);
	if (!np)
		return -ENOMEM;
	q->a = np;
	if (q != &v->gaps) {
		np = realloc(q->act, ncap * sizeof(*q->act));
		if (!np)
			return -ENOMEM;
		q->act = np;
	}
	q->cap = ncap;
	return 0;
}

/* Insert keeping start order: records come nearly sorted, so scan from the end. */
static int q_insert(struct match *m, struct mvcpu *v, struct queue *q, const void *rec)
{
	size_t i;

	if (q->n >= MATCH_QUEUE_CAP) {
		v->cnt.dropped++;
		return -ENOBUFS;
	}
	if (q_room(m, v, q)) {
		v->cnt.dropped++;
		return -ENOMEM;
	}
	for (i = q->n; i > 0 && q->after(q_at(q, i - 1), rec); i--)
		;
	m->steps += q->n - i;
	memmove(q_at(q, i + 1), q_at(q, i), (q->n - i) * q->sz);
	memcpy(q_at(q, i), rec, q->sz);
	q->n++;
	return 0;
}

/*
 * Keep only records ending after t. Records start in order, so only those starting up to t can end by it:
 * the ones of that prefix that stay move to its end (in order) and the prefix's head is popped. A call is
 * linear in the records it drops plus the long ones it keeps, not in the queue.
 */
static void q_drop(struct queue *q, uint64_t t)
{
	size_t s = 0, i, j;

	while (s < q->n && q_span(q, s)->start <= t)
		s++;
	for (i = j = s; i-- > 0;) {
		if (q_span(q, i)->end <= t)
			continue;
		if (--j != i)
			memcpy(q_at(q, j), q_at(q, i), q->sz);
	}
	q_pop(q, j);
}

/* Move q's overlap list on to gap g (gaps come in start order). */
static void q_window(struct queue *q, const struct span *g)
{
	size_t i, j = 0;

	for (i = 0; i < q->nact; i++)
		if (q_span(q, q->act[i])->end > g->start)
			q->act[j++] = q->act[i];
	q->nact = j;
	for (; q->next < q->n && q_span(q, q->next)->start < g->end; q->next++)
		if (q_span(q, q->next)->end > g->start)
			q->act[q->nact++] = (uint32_t)q->next;
}

/* ---- adding records ---- */

/* Common checks: 0 to queue, 1 to ignore quietly (too old to matter), -EINVAL. */
static int span_check(struct mvcpu *v, uint64_t start, uint64_t end)
{
	if (end < start) {
		v->cnt.bad++;
		return -EINVAL;
	}
	return end <= v->done_ns;
}

int match_add_sample(struct match *m, uint32_t vcpu, const struct vn_sample *s, uint64_t unc_ns)
{
	struct mvcpu *v = vcpu_get(m, vcpu);
	struct rgap g;
	uint64_t d;

	if (!v)
		return vcpu >= MATCH_MAX_VCPUS ? -EINVAL : -ENOMEM;
	if (s->end_ns < s->start_ns || s->kind > VN_SAMPLE_WINDOW) {
		v->cnt.bad++;
		return -EINVAL;
	}
	v->seen_ns = max64(v->seen_ns, s->end_ns);
	if (s->kind == VN_SAMPLE_WINDOW) {
		d = s->end_ns - s->start_ns;
		v->cnt.windows_in++;
		sat_inc64(&v->total.st.runtime_ns, d);
		sat_inc64(&v->period.st.runtime_ns, d);
		return 0;
	}
	v->cnt.gaps_in++;
	if (s->start_ns < v->done_ns) {
		v->cnt.late++;
		return 0;
	}
	g = (struct rgap){ { s->start_ns, s->end_ns }, unc_ns };
	return q_insert(m, v, &v->gaps, &g);
}

int match_add_event(struct match *m, uint32_t vcpu, const struct vn_event *e)
{
	struct mvcpu *v = vcpu_get(m, vcpu);
	struct rev r;
	int err;

	if (!v)
		return vcpu >= MATCH_MAX_VCPUS ? -EINVAL : -ENOMEM;
	v->cnt.events_in++;
	if (e->cls == VN_CLASS_NONE || e->cls == VN_CLASS_UNEXPLAINED || e->cls >= VN_CLASS_MAX ||
	    e->parent_cls >= VN_CLASS_MAX) {
		v->cnt.bad++;
		return -EINVAL;
	}
	err = span_check(v, e->start_ns, e->end_ns);
	if (err || e->cls == VN_CLASS_STEAL)
		return err < 0 ? err : 0;
	memset(&r, 0, sizeof(r));
	r.s = (struct span){ e->start_ns, e->end_ns };
	r.id = e->id;
	r.parent_id = e->parent_id;
	r.cls = e->cls;
	r.parent_cls = e->parent_cls;
	r.depth = e->depth;
	if (e->cls == VN_CLASS_THREAD)
		memcpy(r.comm, e->comm, strnlen(e->comm, VN_COMM_LEN - 1));
	return q_insert(m, v, &v->evs, &r);
}

int match_add_out(struct match *m, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, char state)
{
	struct mvcpu *v = vcpu_get(m, vcpu);
	struct rout o;
	int err;

	if (!v)
		return vcpu >= MATCH_MAX_VCPUS ? -EINVAL : -ENOMEM;
	v->cnt.outs_in++;
	v->cnt.host_late += v->seen_ns && start_ns < v->done_ns; /* a measured vCPU */
	err = span_check(v, start_ns, end_ns);
	if (err)
		return err < 0 ? err : 0;
	memset(&o, 0, sizeof(o));
	o.s = (struct span){ start_ns, end_ns };
	o.state = state;
	return q_insert(m, v, &v->outs, &o);
}

void match_host_open(struct match *m, uint32_t vcpu, uint64_t open_ns)
{
	struct mvcpu *v = vcpu < MATCH_MAX_VCPUS ? m->v[vcpu] : NULL;

	if (!v && open_ns != UINT64_MAX)
		v = vcpu_get(m, vcpu);
	if (v)
		v->open_ns = open_ns;
}

int match_add_run(struct match *m, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns, uint32_t pid,
		  const char *comm, int idle)
{
	struct mvcpu *v = vcpu_get(m, vcpu);
	struct rrun r;
	int err;

	if (!v)
		return vcpu >= MATCH_MAX_VCPUS ? -EINVAL : -ENOMEM;
	v->cnt.runs_in++;
	v->cnt.host_late += v->seen_ns && start_ns < v->done_ns; /* a measured vCPU */
	err = span_check(v, start_ns, end_ns);
	if (err)
		return err < 0 ? err : 0;
	memset(&r, 0, sizeof(r));
	r.s = (struct span){ start_ns, end_ns };
	r.pid = pid;
	r.idle = idle != 0;
	copy_comm(r.comm, comm);
	return q_insert(m, v, &v->runs, &r);
}

/* ---- sources ---- */

static uint32_t key_hash(const struct skey *k)
{
	uint64_t c, h;

	memcpy(&c, k->comm, sizeof(c));
	h = ((uint64_t)k->kind << 40 | (uint64_t)k->cls << 32 | k->id) ^ c * 0x9e3779b97f4a7c15ULL;
	h *= 0xff51afd7ed558ccdULL;
	return (uint32_t)(h >> 40);
}

static int key_eq(const struct skey *k, const struct match_source *s)
{
	return s->kind == k->kind && s->cls == k->cls && s->id == k->id &&
	       !memcmp(s->comm, k->comm, VN_COMM_LEN);
}

/* The source of k in set s, added if new; "other" when the table is full. */
static struct match_source *mset_src(struct mset *s, const struct skey *k)
{
	struct match_source *src;
	uint32_t i;

	for (i = key_hash(k) & (SRC_SLOTS - 1); s->idx[i]; i = (i + 1) & (SRC_SLOTS - 1))
		if (key_eq(k, &s->st.src[s->idx[i] - 1]))
			return &s->st.src[s->idx[i] - 1];
	if (s->st.nsrc >= MATCH_MAX_SOURCES)
		return &s->st.other;
	src = &s->st.src[s->st.nsrc];
	memset(src, 0, sizeof(*src));
	src->kind = k->kind;
	src->cls = k->cls;
	src->id = k->id;
	memcpy(src->comm, k->comm, VN_COMM_LEN);
	s->idx[i] = (uint16_t)++s->st.nsrc;
	return src;
}

static void src_add(struct match_source *src, uint64_t ns)
{
	src->count++;
	sat_inc64(&src->total_ns, ns);
	src->max_ns = max64(src->max_ns, ns);
}

static int src_cmp(const void *a, const void *b)
{
	const struct match_source *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->cls != y->cls)
		return x->cls - y->cls;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Sort the sources and rebuild the index that points into them. */
static const struct match_stats *mset_sorted(struct mset *s)
{
	uint32_t j, i;
	struct skey k;

	qsort(s->st.src, s->st.nsrc, sizeof(s->st.src[0]), src_cmp);
	memset(s->idx, 0, sizeof(s->idx));
	for (j = 0; j < s->st.nsrc; j++) {
		k.kind = s->st.src[j].kind;
		k.cls = s->st.src[j].cls;
		k.id = s->st.src[j].id;
		memcpy(k.comm, s->st.src[j].comm, VN_COMM_LEN);
		for (i = key_hash(&k) & (SRC_SLOTS - 1); s->idx[i]; i = (i + 1) & (SRC_SLOTS - 1))
			;
		s->idx[i] = (uint16_t)(j + 1);
	}
	return &s->st;
}

/* ---- one gap ---- */

/* Add ns (may be negative) to the gap's part of a source. The scratch holds a part per distinct key, and
 * there are never more keys than stream records overlapping the gap. */
static void part_add(struct match *m, uint8_t kind, uint8_t cls, uint32_t id, const char *comm,
		     __int128 ns)
{
	struct part *p;
	size_t i;

	for (i = 0; i < m->npart; i++) {
		p = &m->part[i];
		if (p->k.id == id && p->k.cls == cls && p->k.kind == kind &&
		    !memcmp(p->k.comm, comm, VN_COMM_LEN)) {
			p->acc += ns;
			return;
		}
	}
	p = &m->part[m->npart++];
	p->k.kind = kind;
	p->k.cls = cls;
	p->k.id = id;
	memcpy(p->k.comm, comm, VN_COMM_LEN);
	p->acc = ns;
}

static const char no_comm[VN_COMM_LEN];

/* Host part of gap g: out intervals clipped to it (and to each other), split into runs of non-idle host tasks
 * (PREEMPT) and the rest (WAIT by state). Fills m->hs with the clipped intervals; returns how many. */
static size_t host_part(struct match *m, struct mvcpu *v, const struct span *g)
{
	const struct queue *oq = &v->outs, *rq = &v->runs;
	uint64_t cur = g->start;
	size_t i, j = 0, k, nhs = 0;

	for (i = 0; i < oq->nact; i++) {
		const struct rout *o = q_at(oq, oq->act[i]);
		uint64_t a = max64(o->s.start, cur), b = min64(o->s.end, g->end), cov = 0, rc = a;

		if (b <= a)
			continue;
		cur = b;
		m->hs[nhs++] = (struct hspan){ a, b };
		while (j < rq->nact && q_span(rq, rq->act[j])->end <= a)
			j++;
		for (k = j; k < rq->nact; k++) {
			const struct rrun *r = q_at(rq, rq->act[k]);
			uint64_t ra = max64(r->s.start, rc), rb = min64(r->s.end, b);

			if (r->s.start >= b)
				break;
			if (rb <= ra)
				continue;
			rc = rb;
			if (r->idle)
				continue;
			cov += rb - ra;
			part_add(m, MATCH_K_HOST, VN_HCLASS_HOST_PREEMPT, r->pid, r->comm, rb - ra);
		}
		if (b - a > cov)
			part_add(m, MATCH_K_HOST, VN_HCLASS_HOST_WAIT, (uint8_t)o->state, no_comm,
				 b - a - cov);
	}
	return nhs;
}

/* Time of [a, b) inside the sorted, disjoint host intervals hs[0..n). */
static uint64_t host_overlap(const struct hspan *hs, size_t n, uint64_t a, uint64_t b)
{
	size_t lo = 0, hi = n;
	uint64_t sum = 0;

	while (lo < hi) { /* first interval ending after a */
		size_t mid = lo + (hi - lo) / 2;

		if (hs[mid].b <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < n && hs[lo].a < b; lo++)
		sum += gapsplit_clip(hs[lo].a, hs[lo].b, a, b);
	return sum;
}

/* Guest part of gap g, net of host time: each event adds its own part (overlap minus host time) to its
 * source and takes it from its parent (the innermost enclosing event of the parent's class and id). Returns
 * the host time removed from top-level events. */
static uint64_t guest_part(struct match *m, struct mvcpu *v, const struct span *g, size_t nhs)
{
	const struct queue *q = &v->evs;
	size_t i, nstk = 0, s;
	uint64_t reduced = 0;

	for (i = 0; i < q->nact; i++) {
		const struct rev *e = q_at(q, q->act[i]), *p = NULL;
		uint64_t a = max64(e->s.start, g->start), b = min64(e->s.end, g->end);
		uint64_t hov = host_overlap(m->hs, nhs, a, b);
		uint64_t own = b - a - hov;

		while (nstk && ((const struct rev *)q_at(q, m->stk[nstk - 1]))->s.end < e->s.end)
			nstk--;
		for (s = nstk; s > 0 && e->parent_cls != VN_CLASS_NONE; s--) {
			const struct rev *c = q_at(q, m->stk[s - 1]);

			if (c->cls == e->parent_cls && c->id == e->parent_id) {
				p = c;
				break;
			}
		}
		m->stk[nstk++] = q->act[i];
		part_add(m, MATCH_K_GUEST, e->cls, e->id, e->comm, own);
		if (p)
			part_add(m, MATCH_K_GUEST, p->cls, p->id, p->comm, -(__int128)own);
		else if (e->parent_cls == VN_CLASS_NONE)
			reduced += hov;
	}
	return reduced;
}

/* The parts of one kind and class, summing to total, scaled down to take (the split core's share of that
 * class); the largest takes the rounding rest. */
static void class_scale(struct match *m, uint8_t kind, uint8_t cls, uint64_t total, uint64_t take)
{
	uint64_t acc = 0;
	size_t i, big = m->npart;

	if (take >= total)
		return;
	for (i = 0; i < m->npart; i++) {
		struct part *p = &m->part[i];

		if (p->k.kind != kind || p->k.cls != cls)
			continue;
		if (big == m->npart || p->ns > m->part[big].ns)
			big = i;
	}
	for (i = 0; i < m->npart; i++) {
		struct part *p = &m->part[i];

		if (p->k.kind != kind || p->k.cls != cls)
			continue;
		p->ns = (uint64_t)((unsigned __int128)p->ns * take / total);
		acc += p->ns;
	}
	if (big < m->npart)
		m->part[big].ns += take - acc;
}

struct gapres {
	uint64_t dur, host, residual, reduced, lat, unc;
	uint64_t guest_ns[VN_CLASS_MAX];
	uint64_t host_ns[VN_HCLASS_MAX];
};

static void mset_gap(struct mset *s, const struct match *m, const struct gapres *r)
{
	struct match_stats *st = &s->st;
	size_t i;
	int c;

	st->gaps++;
	sat_inc64(&st->gap_ns, r->dur);
	st->max_gap_ns = max64(st->max_gap_ns, r->dur);
	for (c = 0; c < VN_CLASS_MAX; c++)
		sat_inc64(&st->guest_ns[c], r->guest_ns[c]);
	for (c = 0; c < VN_HCLASS_MAX; c++)
		sat_inc64(&st->host_ns[c], r->host_ns[c]);
	sat_inc64(&st->residual_ns, r->residual);
	sat_inc64(&st->reduced_ns, r->reduced);
	if (r->dur >= m->p.big_ns) {
		uint64_t g = r->dur - r->host - r->residual; /* the guest part */

		st->big_gaps++;
		st->big_matched += r->host >= r->dur - r->host;
		st->big_guest += g >= r->dur - g;
		st->big_explained += r->residual <= r->dur / 10;
	}
	st->latency_max_ns = max64(st->latency_max_ns, r->lat);
	sat_inc64(&st->latency_sum_ns, r->lat);
	st->uncertainty_max_ns = max64(st->uncertainty_max_ns, r->unc);
	for (i = 0; i < m->npart; i++)
		if (m->part[i].ns > 0)
			src_add(mset_src(s, &m->part[i].k), m->part[i].ns);
}

static int part_cmp(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return memcmp(&x->k, &y->k, sizeof(x->k)) < 0 ? -1 : 1;
}

/* Gap g (its result r, its parts in the scratch) is the period's longest on v: kept as its record, the
 * largest parts listed and the rest summed (the scratch is reordered: its sums are already taken). */
static void worst_keep(struct match *m, struct mvcpu *v, uint32_t vcpu, const struct rgap *g,
		       const struct gapres *r)
{
	struct vn_host_worst *w = &v->worst;
	uint64_t listed = 0;
	size_t i;

	qsort(m->part, m->npart, sizeof(m->part[0]), part_cmp);
	memset(w, 0, sizeof(*w));
	w->host_start_ns = g->s.start;
	w->duration_ns = r->dur;
	w->vcpu = vcpu;
	w->residual_ns = r->residual;
	for (i = 0; i < m->npart && m->part[i].ns; i++) {
		if (w->nparts < VN_HOST_WORST_PARTS) {
			struct vn_host_wpart *p = &w->part[w->nparts++];

			p->kind = m->part[i].k.kind == MATCH_K_HOST ? VN_HOST_MSRC_HOST
								    : VN_HOST_MSRC_GUEST;
			p->cls = m->part[i].k.cls;
			p->id = m->part[i].k.id;
			memcpy(p->comm, m->part[i].k.comm, VN_HOST_COMM_LEN);
			p->comm[VN_HOST_COMM_LEN - 1] = 0;
			p->ns = m->part[i].ns;
			listed += p->ns;
		}
	}
	/* the parts add up to the gap less its residual (class_scale made them exact) */
	w->other_ns = r->dur - r->residual > listed ? r->dur - r->residual - listed : 0;
	if (listed + w->other_ns + w->residual_ns !=
	    w->duration_ns) /* never: a guard for the ABI's sum */
		w->residual_ns = w->duration_ns - listed - w->other_ns;
}

static void match_gap(struct match *m, struct mvcpu *v, uint32_t vcpu, const struct rgap *g,
		      uint64_t now_ns)
{
	struct gapres r;
	struct gapsplit_host h;
	struct gapsplit_res res;
	uint64_t gin[VN_CLASS_MAX];
	size_t i, nhs;
	int c;

	memset(&r, 0, sizeof(r));
	memset(&h, 0, sizeof(h));
	memset(gin, 0, sizeof(gin));
	r.dur = g->s.end - g->s.start;
	r.unc = g->unc;
	r.lat = now_ns > g->s.end ? now_ns - g->s.end : 0;
	m->npart = 0;
	q_window(&v->outs, &g->s);
	q_window(&v->runs, &g->s);
	q_window(&v->evs, &g->s);
	nhs = host_part(m, v, &g->s);
	r.reduced = guest_part(m, v, &g->s, nhs);
	for (i = 0; i < m->npart; i++) {
		struct part *p = &m->part[i];

		/* a child beyond its parent (skew) leaves nothing for the parent */
		p->ns = p->acc <= 0 ? 0 : p->acc >= r.dur ? r.dur : (uint64_t)p->acc;
		if (p->k.kind == MATCH_K_HOST)
			h.ns[p->k.cls] += p->ns;
		else if (p->k.cls < VN_CLASS_MAX)
			gin[p->k.cls] += p->ns;
	}
	/* the one split (shared/attrib/gapsplit): events are already net of host time; what they and the host
	 * leave is the residual; overlapping top-level events are scaled to fit */
	gapsplit_apportion(r.dur, gin, 0, &h, &res);
	if (res.scaled)
		v->cnt.clamped++;
	for (c = 0; c < VN_CLASS_MAX; c++)
		class_scale(m, MATCH_K_GUEST, (uint8_t)c, gin[c], res.guest_ns[c]);
	for (c = 0; c < VN_HCLASS_MAX; c++)
		class_scale(m, MATCH_K_HOST, (uint8_t)c, h.ns[c], res.hyp_ns[c]);
	memcpy(r.guest_ns, res.guest_ns, sizeof(r.guest_ns));
	memcpy(r.host_ns, res.hyp_ns, sizeof(r.host_ns));
	for (c = 0; c < VN_HCLASS_MAX; c++)
		r.host += res.hyp_ns[c];
	r.residual = res.hyp_ns[VN_HCLASS_HW];
	mset_gap(&v->total, m, &r);
	mset_gap(&v->period, m, &r);
	if (r.dur > v->worst.duration_ns)
		worst_keep(m, v, vcpu, g, &r);
	if (m->fn)
		m->fn(m->ctx, vcpu, g->s.start, g->s.end, r.guest_ns, r.host_ns, r.residual);
}

/* ---- processing ---- */

static int gap_ready(const struct rgap *g, uint64_t guest_h, uint64_t host_h)
{
	return g->s.end <= guest_h &&
	       gapsplit_ready(g->s.end, min64(g->unc, MATCH_MAX_UNC_WAIT_NS), host_h);
}

static size_t process_vcpu(struct match *m, struct mvcpu *v, uint32_t vcpu, uint64_t guest_h,
			   uint64_t host_h, uint64_t now_ns)
{
	struct queue *gq = &v->gaps;
	const struct rgap *g =
	    gq->n ? (const struct rgap *)q_at(gq, 0) : NULL; /* a: NULL until used */
	uint64_t done = v->done_ns, t, ready_h = min64(host_h, v->open_ns);
	size_t k = 0, matched;

	v->evs.nact = v->evs.next = 0;
	v->outs.nact = v->outs.next = 0;
	v->runs.nact = v->runs.next = 0;
	/* an out piece still open is not in the host's records yet: the gaps it may overlap wait for it,
	 * whatever the clock model says of where they end */
	for (; k < gq->n && gap_ready(&g[k], guest_h, ready_h); k++) {
		match_gap(m, v, vcpu, &g[k], now_ns);
		done = max64(done, g[k].s.end);
	}
	matched = k;
	/* what is still waiting and started before the host's records kept (MATCH_HOST_KEEP_NS behind the
	 * host horizon, or less: match_host_trim) is late */
	if (host_h > MATCH_HOST_KEEP_NS && host_h - MATCH_HOST_KEEP_NS > v->host_floor_ns)
		v->host_floor_ns = host_h - MATCH_HOST_KEEP_NS;
	for (; k < gq->n && g[k].s.start < v->host_floor_ns; k++) {
		v->cnt.late++;
		done = max64(done, g[k].s.end);
	}
	q_drop(&v->outs, v->host_floor_ns);
	q_drop(&v->runs, v->host_floor_ns);
	q_pop(gq, k);
	/*
	 * Future gaps start after the sampler's progress and after any gap still queued. A vCPU no sampler
	 * measures (the agent's --cpus leaves it out) has no progress: its events and the host's records would
	 * pile up to the queue cap and then be dropped (seen in the soak: 60 k/s, +120 MB); keep one second
	 * behind the guest's horizon for it instead (a sampler that starts later starts after that).
	 */
	t = v->seen_ns ? min64(guest_h, v->seen_ns)
		       : (guest_h > MATCH_IDLE_KEEP_NS ? guest_h - MATCH_IDLE_KEEP_NS : 0);
	if (gq->n)
		t = min64(t, g[0].s.start);
	done = max64(done, t);
	if (done > v->done_ns) {
		v->done_ns = done;
		q_drop(&v->evs, done);
		q_drop(&v->outs, done);
		q_drop(&v->runs, done);
	}
	return matched;
}

int match_process(struct match *m, uint64_t guest_horizon_ns, uint64_t host_horizon_ns,
		  uint64_t now_ns)
{
	size_t n = 0;
	uint32_t i;

	for (i = 0; i < m->nvcpus; i++)
		if (m->v[i])
			n += process_vcpu(m, m->v[i], i, guest_horizon_ns, host_horizon_ns, now_ns);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

/* ---- aggregates, stats ---- */

static void mset_agg(struct mset *s, uint8_t hcls, const struct skey *k, uint64_t ns)
{
	s->st.residual_ns -= ns;
	sat_inc64(&s->st.host_ns[hcls], ns);
	src_add(mset_src(s, k), ns);
}

int match_add_agg(struct match *m, uint32_t vcpu, uint8_t hcls, uint32_t id, const char *name,
		  uint64_t total_ns)
{
	struct mvcpu *v = vcpu_get(m, vcpu);
	struct skey k;
	uint64_t ns;

	if (!v)
		return -EINVAL;
	if (hcls != VN_HCLASS_VMEXIT && hcls != VN_HCLASS_HOST_IRQ) {
		v->cnt.bad++;
		return -EINVAL;
	}
	v->cnt.aggs_in++;
	ns = min64(total_ns, v->period.st.residual_ns);
	if (!ns)
		return 0;
	memset(&k, 0, sizeof(k));
	k.kind = MATCH_K_HOST;
	k.cls = hcls;
	k.id = id;
	copy_comm(k.comm, name);
	mset_agg(&v->total, hcls, &k, ns);
	mset_agg(&v->period, hcls, &k, ns);
	return 0;
}

const struct match_stats *match_stats_total(struct match *m, uint32_t vcpu)
{
	return vcpu < m->nvcpus && m->v[vcpu] ? mset_sorted(&m->v[vcpu]->total) : NULL;
}

const struct match_stats *match_stats_period(struct match *m, uint32_t vcpu)
{
	return vcpu < m->nvcpus && m->v[vcpu] ? mset_sorted(&m->v[vcpu]->period) : NULL;
}

void match_period_reset(struct match *m)
{
	uint32_t i;

	for (i = 0; i < m->nvcpus; i++)
		if (m->v[i]) {
			mset_init(&m->v[i]->period);
			memset(&m->v[i]->worst, 0, sizeof(m->v[i]->worst));
		}
}

const struct vn_host_worst *match_worst_period(const struct match *m, uint32_t vcpu)
{
	return vcpu < m->nvcpus && m->v[vcpu] && m->v[vcpu]->worst.duration_ns ? &m->v[vcpu]->worst
									       : NULL;
}

void match_guest_reset(struct match *m)
{
	uint32_t i;

	for (i = 0; i < m->nvcpus; i++) {
		struct mvcpu *v = m->v[i];

		if (!v)
			continue;
		v->cnt.dropped += v->gaps.n + v->evs.n;
		v->gaps.n = v->evs.n = v->gaps.head = v->evs.head = 0;
		v->evs.nact = v->evs.next = 0;
		v->seen_ns = 0;
		v->done_ns = 0; /* it may have been pushed to a hostile agent's far future */
	}
}

void match_counters(const struct match *m, uint32_t vcpu, struct match_counters *out)
{
	const struct mvcpu *v = vcpu < m->nvcpus ? m->v[vcpu] : NULL;

	memset(out, 0, sizeof(*out));
	if (vcpu >= MATCH_MAX_VCPUS)
		out->bad = m->bad_vcpu;
	if (!v)
		return;
	*out = v->cnt;
	out->queued = v->gaps.n + v->evs.n + v->outs.n + v->runs.n;
}

size_t match_guest_held(const struct match *m, size_t *bytes)
{
	size_t b = 0, n = 0;

	for (uint32_t i = 0; i < m->nvcpus; i++) {
		const struct mvcpu *v = m->v[i];

		if (!v)
			continue;
		n += v->gaps.n + v->evs.n;
		b += v->gaps.n * v->gaps.sz +
		     v->evs.n * (v->evs.sz + sizeof(*v->evs.act) + sizeof(struct part) +
				 sizeof(struct hspan) + sizeof(*m->stk));
	}
	*bytes = b;
	return n;
}

/* Bytes of one host record in its queue and the per-gap scratch. */
static size_t host_rec_bytes(const struct queue *q, const struct match *m)
{
	return q->sz + sizeof(*q->act) + sizeof(struct part) + sizeof(struct hspan) +
	       sizeof(*m->stk);
}

size_t match_host_held(const struct match *m)
{
	size_t b = 0;

	for (uint32_t i = 0; i < m->nvcpus; i++) {
		const struct mvcpu *v = m->v[i];

		if (v)
			b += v->outs.n * host_rec_bytes(&v->outs, m) +
			     v->runs.n * host_rec_bytes(&v->runs, m);
	}
	return b;
}

void match_host_trim(struct match *m, size_t max_bytes, uint64_t host_horizon_ns)
{
	for (uint64_t keep = MATCH_HOST_KEEP_NS; match_host_held(m) > max_bytes && keep;) {
		uint64_t floor;

		keep = keep > MATCH_HOST_KEEP_NS / 10 ? keep - MATCH_HOST_KEEP_NS / 10 : 0;
		floor = host_horizon_ns > keep ? host_horizon_ns - keep : 0;
		for (uint32_t i = 0; i < m->nvcpus; i++) {
			struct mvcpu *v = m->v[i];

			if (!v || floor <= v->host_floor_ns)
				continue;
			v->host_floor_ns = floor;
			q_drop(&v->outs, floor);
			q_drop(&v->runs, floor);
		}
	}
}

uint64_t match_insert_steps(const struct match *m)
{
	return m->steps;
}

uint64_t match_gaps_waiting(const struct match *m)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < m->nvcpus; i++)
		if (m->v[i])
			n += m->v[i]->gaps.n;
	return n;
}

uint32_t match_nvcpus(const struct match *m)
{
	return m->nvcpus;
}
