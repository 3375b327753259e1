/* SPDX-License-Identifier: MIT */
/*
 * dtl: the guest's one DTL module (see dtl.h). The region is mapped once (BAR2 found by guestdev, or a file);
 * dtl_poll follows the host area with a dtlreader and copies every new entry into a per-CPU store: a ring of
 * dtl_span in time order (bounded by max_spans and keep_ns; what falls out is counted), and per CPU the recent
 * aggregates (bounded the same way). Causes are resolved when their entry arrives and kept in a small cache
 * keyed by the whole cause word (index and gen), so a span keeps its name after the host recycles the index;
 * a new host epoch drops the store and the cache (the cause words of the old epoch mean nothing any more).
 * The responder is a thread around clockresp (its own dtlreader, the reply line written through the
 * read-write mapping), started only when asked.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "dtl/dtl_priv.h"
#include "dtl/clockresp.h"
#include "agent/guestdev.h"
#include "channel/dtlreader.h"
#include "channel/shmregion.h"
#include "util/log.h"
#include "util/monotime.h"

#define DEF_KEEP_NS 30000000000ULL
#define DEF_MAX_SPANS 65536u
#define INIT_SPANS 256u
#define AGG_KEEP 256u /* aggregates kept per CPU (and at most keep_ns of them) */
#define CAUSE_CACHE 4096u /* cause words remembered (power of two) */
#define CAUSE_PROBE 8u
#define POLL_CHUNK 1024u
#define MAX_REGION (1ULL << 34)
#define RESP_MAX_WAIT_NS 1000000000ULL

struct dtl_aggrec {
	uint64_t period, start_ns, end_ns;
	uint64_t exit_count, exit_ns, irq_count, irq_ns;
	uint32_t isa, nexit;
	struct vn_dtl_exit exit[VN_DTL_AGG_TOP];
};

/* One CPU's store: spans[(head + i) % cap] for i < n, oldest first; the same for aggregates. */
struct dtl_store {
	struct dtl_span *spans;
	uint32_t cap, head, n;
	uint64_t last_end;
	struct dtl_aggrec *aggs; /* AGG_KEEP, allocated at the first aggregate */
	uint32_t ahead, an;
	uint64_t last_period; /* + 1 of the newest period stored (0: none) */
};

struct dtl_cause_ent {
	uint32_t word; /* 0: unused */
	uint32_t pid;
	uint8_t cls;
	char comm[VN_DTL_COMM_LEN + 1]; /* sanitized, "" when not published */
};

struct dtl {
	uint32_t ncpus;
	struct dtl_store *cpu;
	uint64_t keep_ns, stale_ns;
	uint32_t max_spans;
	uint64_t horizon_ns;
	uint64_t covered_ns; /* the epoch's first horizon: the log is complete from there on */
	enum dtl_state state;
	uint32_t detail;
	struct dtl_cause_ent *causes; /* CAUSE_CACHE */
	uint64_t spans, spans_dropped, host_dropped;
	/* live DTL */
	void *map;
	size_t map_size;
	void *area;
	size_t area_size;
	struct dtl_reader *r;
	bool ever, attached, have_status;
	uint64_t epoch;
	struct vn_dtl_header hdr; /* validated immutable part of the epoch attached */
	struct vn_dtl_status status;
	uint64_t hb_last, hb_change_ns;
	/* responder */
	struct clockresp *cr;
	pthread_t resp;
	bool resp_on;
	int resp_cpu;
	pthread_mutex_t resp_mu;
	pthread_cond_t resp_cv;
	int resp_stop; /* under resp_mu */
	int resp_holds; /* atomic */
	uint64_t resp_replies; /* atomic */
};

/* ---- the store ---- */

static struct dtl_span *span_at(const struct dtl_store *st, uint32_t i)
{
	return &st->spans[(st->head + i) % st->cap];
}

static struct dtl_aggrec *agg_at(const struct dtl_store *st, uint32_t i)
{
	return &st->aggs[(st->ahead + i) % AGG_KEEP];
}

static int store_grow(struct dtl_store *st, uint32_t max)
{
	uint32_t cap = st->cap ? st->cap * 2 : INIT_SPANS, i;
	struct dtl_span *s;

	if (cap > max)
		cap = max;
	s = malloc((size_t)cap * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (i = 0; i < st->n; i++)
		s[i] = *span_at(st, i);
	free(st->spans);
	st->spans = s;
	st->cap = cap;
	st->head = 0;
	return 0;
}

static void store_clear(struct dtl_store *st)
{
	st->head = st->n = 0;
	st->last_end = 0;
	st->ahead = st->an = 0;
	st->last_period = 0;
}

/* Append a span (in order, not overlapping the previous one); the oldest fall out (age, bound). */
static int store_add(struct dtl *d, struct dtl_store *st, const struct dtl_span *sp)
{
	if (sp->end_ns <= sp->start_ns || sp->end_ns - sp->start_ns > VN_DTL_MAX_SPAN_NS)
		return -EINVAL;
	if (st->n && sp->start_ns < st->last_end)
		return -ERANGE;
	while (st->n && span_at(st, 0)->end_ns + d->keep_ns < sp->end_ns) {
		st->head = (st->head + 1) % st->cap;
		st->n--;
		d->spans_dropped++;
	}
	if (st->n == st->cap && (st->cap >= d->max_spans || store_grow(st, d->max_spans))) {
		if (!st->cap)
			return -ENOMEM;
		st->head = (st->head + 1) % st->cap;
		st->n--;
		d->spans_dropped++;
	}
	*span_at(st, st->n) = *sp;
	st->n++;
	st->last_end = sp->end_ns;
	d->spans++;
	return 0;
}

/* Append an aggregate (periods growing; a start before the previous end is clipped to it). */
static void store_add_agg(struct dtl *d, struct dtl_store *st, const struct vn_dtl_agg *a)
{
	struct dtl_aggrec *rec;
	uint64_t start = a->start_ns;

	if (st->last_period && a->period < st->last_period)
		return;
	if (st->an && start < agg_at(st, st->an - 1)->end_ns)
		start = agg_at(st, st->an - 1)->end_ns;
	if (a->end_ns <= start)
		return;
	if (!st->aggs && !(st->aggs = calloc(AGG_KEEP, sizeof(*st->aggs))))
		return;
	while (st->an && (st->an == AGG_KEEP || agg_at(st, 0)->end_ns + d->keep_ns < a->end_ns)) {
		st->ahead = (st->ahead + 1) % AGG_KEEP;
		st->an--;
	}
	rec = agg_at(st, st->an++);
	*rec =
	    (struct dtl_aggrec){ .period = a->period,
				 .start_ns = start,
				 .end_ns = a->end_ns,
				 .exit_count = a->exit_count,
				 .exit_ns = a->exit_ns,
				 .irq_count = a->irq_count,
				 .irq_ns = a->irq_ns,
				 .isa = a->isa,
				 .nexit = a->nexit > VN_DTL_AGG_TOP ? VN_DTL_AGG_TOP : a->nexit };
	memcpy(rec->exit, a->exit, sizeof(rec->exit));
	st->last_period = a->period + 1;
}

/* ---- causes ---- */

static uint32_t cause_hash(uint32_t w)
{
	return (w * 2654435761u) >> 20; /* 12 bits: CAUSE_CACHE */
}

static const struct dtl_cause_ent *cause_find(const struct dtl *d, uint32_t word)
{
	uint32_t h = cause_hash(word), i;

	if (!word || !d->causes)
		return NULL;
	for (i = 0; i < CAUSE_PROBE; i++) {
		const struct dtl_cause_ent *e = &d->causes[(h + i) % CAUSE_CACHE];

		if (e->word == word)
			return e;
		if (!e->word)
			return NULL;
	}
	return NULL;
}

/* Remember a cause; comm is copied sanitized (printable ASCII, else '?'), pid and comm only with a comm. */
static void cause_put(struct dtl *d, uint32_t word, uint32_t cls, uint32_t pid, const char *comm)
{
	uint32_t h = cause_hash(word), i;
	struct dtl_cause_ent *e = NULL;

	if (!d->causes && !(d->causes = calloc(CAUSE_CACHE, sizeof(*d->causes))))
		return;
	for (i = 0; i < CAUSE_PROBE && !e; i++) {
		struct dtl_cause_ent *c = &d->causes[(h + i) % CAUSE_CACHE];

		if (!c->word || c->word == word)
			e = c;
	}
	if (!e)
		e = &d->causes[h % CAUSE_CACHE]; /* full around its home: replace */
	memset(e, 0, sizeof(*e));
	e->word = word;
	e->cls = (uint8_t)(cls < VN_DTL_CLASS_MAX ? cls : VN_DTL_CLASS_NONE);
	for (i = 0; comm && i < VN_DTL_COMM_LEN && comm[i]; i++)
		e->comm[i] = comm[i] >= 0x20 && comm[i] < 0x7f ? comm[i] : '?';
	if (e->comm[0])
		e->pid = pid;
}

static void cause_resolve(struct dtl *d, uint32_t word, uint32_t cls)
{
	struct vn_dtl_cause c;
	int rc;

	if (!word || cause_find(d, word))
		return;
	rc = dtlreader_cause(d->r, word, &c);
	if (rc == 0 && d->detail == VN_DTL_DETAIL_TASK)
		cause_put(d, word, c.cls, c.pid, c.comm);
	else if (rc == 0 || rc == -ENOENT || rc == -EBADMSG)
		cause_put(d, word, cls, 0, NULL); /* class only; never asked again */
}

static const char *class_name(uint32_t cls)
{
	return dtlregion_class_name(cls < VN_DTL_CLASS_MAX ? cls : VN_DTL_CLASS_NONE);
}

const char *dtl_cause_name(const struct dtl *d, uint32_t cause, uint32_t cls, char *buf, size_t len)
{
	const struct dtl_cause_ent *e =
	    d && d->detail == VN_DTL_DETAIL_TASK ? cause_find(d, cause) : NULL;

	if (e && e->comm[0])
		snprintf(buf, len, "%s:%s[%u]", class_name(cls), e->comm, e->pid);
	else
		snprintf(buf, len, "%s", class_name(cls));
	return buf;
}

const char *dtl_cause_key(const struct dtl *d, uint32_t cause, uint32_t cls, char *buf, size_t len)
{
	const struct dtl_cause_ent *e =
	    d && d->detail == VN_DTL_DETAIL_TASK ? cause_find(d, cause) : NULL;

	snprintf(buf, len, "%s", e && e->comm[0] ? e->comm : class_name(cls));
	return buf;
}

const char *dtl_state_name(enum dtl_state s)
{
	static const char *const n[] = { "absent", "waiting", "ok", "stale" };

	return (unsigned)s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

/* ---- queries ---- */

/* Index of the first span of st ending after t (spans are ordered and disjoint: so are their ends). */
static uint32_t span_search(const struct dtl_store *st, uint64_t t)
{
	uint32_t lo = 0, hi = st->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (span_at(st, mid)->end_ns > t)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

size_t dtl_overlap(const struct dtl *d, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		   dtl_overlap_fn fn, void *ctx)
{
	const struct dtl_store *st;
	uint32_t i;
	size_t n = 0;

	if (!d || cpu >= d->ncpus || start_ns >= end_ns)
		return 0;
	st = &d->cpu[cpu];
	for (i = span_search(st, start_ns); i < st->n; i++) {
		const struct dtl_span *s = span_at(st, i);

		if (s->start_ns >= end_ns)
			break;
		if (fn)
			fn(ctx, s, s->start_ns > start_ns ? s->start_ns : start_ns,
			   s->end_ns < end_ns ? s->end_ns : end_ns);
		n++;
	}
	return n;
}

static void add_overlap(void *ctx, const struct dtl_span *s, uint64_t ov_start, uint64_t ov_end)
{
	uint64_t *out = ctx;

	if (s->hclass < VN_HCLASS_MAX)
		out[s->hclass] += ov_end - ov_start;
}

void dtl_overlap_ns(const struct dtl *d, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		    uint64_t out[VN_HCLASS_MAX])
{
	memset(out, 0, VN_HCLASS_MAX * sizeof(out[0]));
	dtl_overlap(d, cpu, start_ns, end_ns, add_overlap, out);
}

static uint64_t prorate(uint64_t v, uint64_t part, uint64_t whole)
{
	return (uint64_t)((unsigned __int128)v * part / whole);
}

/* Add a reason's prorated share into the merged list (at most 8 * AGG_KEEP reasons; beyond: dropped). */
static void merge_exit(struct vn_dtl_exit *m, uint32_t *n, uint32_t cap,
		       const struct vn_dtl_exit *x, uint64_t part, uint64_t whole)
{
	uint32_t i;

	for (i = 0; i < *n && m[i].reason != x->reason; i++)
		;
	if (i == *n) {
		if (*n == cap)
			return;
		m[(*n)++] = (struct vn_dtl_exit){ .reason = x->reason };
	}
	m[i].count += (uint32_t)prorate(x->count, part, whole);
	m[i].total_ns += prorate(x->total_ns, part, whole);
}

static int exit_cmp(const void *a, const void *b)
{
	const struct vn_dtl_exit *x = a, *y = b;

	return x->total_ns < y->total_ns   ? 1
	       : x->total_ns > y->total_ns ? -1
					   : (x->reason > y->reason) - (x->reason < y->reason);
}

int dtl_aggs(const struct dtl *d, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
	     struct dtl_aggsum *out)
{
	struct vn_dtl_exit m[64];
	const struct dtl_store *st;
	uint32_t nm = 0, i, j, found = 0;

	memset(out, 0, sizeof(*out));
	if (!d || cpu >= d->ncpus || start_ns >= end_ns)
		return -ENODATA;
	st = &d->cpu[cpu];
	for (i = 0; i < st->an; i++) {
		const struct dtl_aggrec *a = agg_at(st, i);
		uint64_t lo = a->start_ns > start_ns ? a->start_ns : start_ns;
		uint64_t hi = a->end_ns < end_ns ? a->end_ns : end_ns,
			 len = a->end_ns - a->start_ns;

		if (a->start_ns >= end_ns)
			break;
		if (hi <= lo)
			continue;
		found++;
		out->exit_ns += prorate(a->exit_ns, hi - lo, len);
		out->exit_count += prorate(a->exit_count, hi - lo, len);
		out->irq_ns += prorate(a->irq_ns, hi - lo, len);
		out->irq_count += prorate(a->irq_count, hi - lo, len);
		if (!out->isa)
			out->isa = a->isa;
		for (j = 0; j < a->nexit; j++)
			merge_exit(m, &nm, sizeof(m) / sizeof(m[0]), &a->exit[j], hi - lo, len);
	}
	qsort(m, nm, sizeof(m[0]), exit_cmp);
	out->nexit = nm < VN_DTL_AGG_TOP ? nm : VN_DTL_AGG_TOP;
	memcpy(out->exit, m, out->nexit * sizeof(m[0]));
	return found ? 0 : -ENODATA;
}

/* ---- the store without a device ---- */

static struct dtl *dtl_alloc(uint32_t ncpus, uint64_t keep_ns, uint32_t max_spans)
{
	struct dtl *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->cpu = calloc(ncpus ? ncpus : 1, sizeof(*d->cpu));
	if (!d->cpu) {
		free(d);
		return NULL;
	}
	d->ncpus = ncpus;
	d->keep_ns = keep_ns ? keep_ns : DEF_KEEP_NS;
	d->max_spans = max_spans ? max_spans : DEF_MAX_SPANS;
	d->stale_ns = DTL_STALE_NS;
	d->resp_cpu = -1;
	pthread_mutex_init(&d->resp_mu, NULL);
	return d;
}

struct dtl *dtl_new_store(uint32_t ncpus)
{
	struct dtl *d;

	if (!ncpus || ncpus > VN_DTL_MAX_VCPUS) {
		errno = EINVAL;
		return NULL;
	}
	d = dtl_alloc(ncpus, 0, 0);
	if (!d)
		errno = ENOMEM;
	return d;
}

int dtl_add_span(struct dtl *d, uint32_t cpu, const struct dtl_span *s)
{
	struct dtl_span sp;

	if (!d || !s || cpu >= d->ncpus)
		return -EINVAL;
	sp = *s;
	sp.hclass = sp.cls == VN_DTL_CLASS_IDLE ? VN_HCLASS_HOST_WAIT : VN_HCLASS_HOST_PREEMPT;
	return store_add(d, &d->cpu[cpu], &sp);
}

void dtl_set_horizon(struct dtl *d, uint64_t horizon_ns)
{
	if (d && horizon_ns > d->horizon_ns)
		d->horizon_ns = horizon_ns;
}

int dtl_set_cause(struct dtl *d, uint32_t cause, uint32_t cls, uint32_t pid, const char *comm)
{
	if (!d || !cause || cls >= VN_DTL_CLASS_MAX)
		return -EINVAL;
	cause_put(d, cause, cls, pid, comm);
	if (!d->causes)
		return -ENOMEM;
	if (comm && *comm)
		d->detail = VN_DTL_DETAIL_TASK;
	else if (!d->detail)
		d->detail = VN_DTL_DETAIL_CLASS;
	return 0;
}

/* ---- following the host area ---- */

/* A new host epoch: drop what was kept of the old one (its cause words mean nothing now), copy the header. */
static void attach_epoch(struct dtl *d, uint64_t t)
{
	const struct vn_dtl_header *h = d->area;
	struct vn_dtl_header copy;
	char why[128];
	uint32_t i;

	for (i = 0; i < d->ncpus; i++)
		store_clear(&d->cpu[i]);
	if (d->causes)
		memset(d->causes, 0, CAUSE_CACHE * sizeof(*d->causes));
	d->horizon_ns = 0;
	d->covered_ns = 0;
	d->have_status = false;
	d->hb_last = 0;
	d->hb_change_ns = t;
	d->epoch = dtlreader_epoch(d->r);
	d->detail = dtlreader_detail(d->r);
	memset(&d->hdr, 0, sizeof(d->hdr));
	memset(&copy, 0, sizeof(copy));
	if (SHM_LOAD_ACQ(&h->host_epoch) != d->epoch)
		return;
	memcpy(&copy, h, VN_DTL_IMMUTABLE_SIZE);
	SHM_FENCE_ACQ();
	if (SHM_LOAD_RLX(&h->host_epoch) == d->epoch &&
	    !dtlregion_header_valid(&copy, d->area_size, why, sizeof(why)))
		memcpy(&d->hdr, &copy, VN_DTL_IMMUTABLE_SIZE);
}

static void on_entry(void *ctx, uint32_t vcpu, const struct vn_dtl_entry *e)
{
	struct dtl *d = ctx;
	struct dtl_span s = { .start_ns = e->start_ns,
			      .end_ns = e->end_ns,
			      .cause = e->cause,
			      .kind = e->kind,
			      .cls = e->cls,
			      .hclass = e->cls == VN_DTL_CLASS_IDLE ? VN_HCLASS_HOST_WAIT
								    : VN_HCLASS_HOST_PREEMPT,
			      .flags = (uint8_t)(e->flags & VN_DTL_F_MASK) };

	if (vcpu >= d->ncpus || store_add(d, &d->cpu[vcpu], &s)) {
		d->spans_dropped++;
		return;
	}
	cause_resolve(d, e->cause, e->cls);
}

/* The newest aggregates of vcpu not stored yet, oldest first. */
static void poll_aggs(struct dtl *d, uint32_t vcpu)
{
	struct vn_dtl_agg a[VN_DTL_AGGS];
	struct dtl_store *st = &d->cpu[vcpu];
	int n = 0, k;

	if (dtlreader_agg(d->r, vcpu, UINT64_MAX, &a[0]))
		return;
	if (st->last_period && a[0].period < st->last_period)
		return;
	for (n = 1; n < (int)VN_DTL_AGGS && a[0].period >= (uint64_t)n; n++) {
		uint64_t p = a[0].period - (uint64_t)n;

		if ((st->last_period && p < st->last_period) || dtlreader_agg(d->r, vcpu, p, &a[n]))
			break;
	}
	for (k = n - 1; k >= 0; k--)
		store_add_agg(d, st, &a[k]);
}

/* Entries of every vCPU up to their heads (bounded by one ring's worth per vCPU); 1 when all drained. */
static int poll_entries(struct dtl *d, int *added)
{
	uint32_t nv = dtlreader_nvcpus(d->r), v, bound = d->hdr.entries_per_vcpu;
	uint64_t before = d->spans;
	int drained = 1, n;

	if (!bound)
		bound = VN_DTL_MAX_ENTRIES;
	if (nv > d->ncpus)
		nv = d->ncpus;
	for (v = 0; v < nv; v++) {
		uint32_t got = 0;

		do {
			n = dtlreader_poll(d->r, v, on_entry, d, POLL_CHUNK);
			got += n > 0 ? (uint32_t)n : 0;
		} while (n == (int)POLL_CHUNK && got < bound);
		if (n == (int)POLL_CHUNK)
			drained = 0;
		poll_aggs(d, v);
	}
	*added = (int)(d->spans - before);
	return drained;
}

/* The host's own drop counters (vn_dtl_ring.dropped), read from the mapping. */
static void read_host_dropped(struct dtl *d)
{
	const struct vn_dtl_ring *rings;
	uint64_t sum = 0;
	uint32_t v;

	if (!d->hdr.host_epoch)
		return;
	rings = (const struct vn_dtl_ring *)((const char *)d->area + d->hdr.ring_ctl_offset);
	for (v = 0; v < d->hdr.nvcpus; v++)
		sum += SHM_LOAD_RLX(&rings[v].dropped);
	d->host_dropped = sum;
}

static enum dtl_state compute_state(const struct dtl *d, uint64_t t)
{
	if (!d->ever)
		return DTL_ABSENT;
	if (!d->attached || t - d->hb_change_ns > d->stale_ns)
		return DTL_STALE;
	if (!d->have_status || !(d->status.flags & VN_DTL_S_CLOCK))
		return DTL_WAITING;
	return d->status.flags & VN_DTL_S_STALE ? DTL_STALE : DTL_OK;
}

int dtl_poll(struct dtl *d)
{
	struct vn_dtl_status st;
	uint64_t t = now_ns();
	int rc, added = 0, have;

	if (!d || !d->r)
		return 0;
	rc = dtlreader_sync(d->r);
	if (rc < 0) {
		d->attached = false;
		d->state = compute_state(d, t);
		return 0;
	}
	if (rc == 1 || !d->attached) {
		if (rc == 1)
			attach_epoch(d, t);
		d->ever = d->attached = true;
	}
	have = dtlreader_status(d->r, &st) == 0;
	if (have) {
		d->status = st;
		d->have_status = true;
		if (st.heartbeat_ns != d->hb_last) {
			d->hb_last = st.heartbeat_ns;
			d->hb_change_ns = t;
		}
	}
	if (poll_entries(d, &added) && have && st.horizon_ns > d->horizon_ns) {
		d->horizon_ns = st.horizon_ns;
		if (!d->covered_ns)
			d->covered_ns = st.horizon_ns;
	}
	read_host_dropped(d);
	d->state = compute_state(d, t);
	return added;
}

enum dtl_state dtl_state(const struct dtl *d)
{
	return d ? d->state : DTL_ABSENT;
}

uint64_t dtl_horizon(const struct dtl *d)
{
	return d ? d->horizon_ns : 0;
}

uint64_t dtl_covered_from(const struct dtl *d)
{
	return d ? d->covered_ns : 0;
}

/* ---- the responder thread ---- */

static void *resp_main(void *arg)
{
	struct dtl *d = arg;
	struct clockresp_stats cs;
	struct timespec ts;
	uint64_t wait, t;

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake on time (no 50 us slack) */
	if (d->resp_cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(d->resp_cpu, &set);
		(void)sched_setaffinity(0, sizeof(set), &set);
	}
	pthread_mutex_lock(&d->resp_mu);
	while (!d->resp_stop) {
		pthread_mutex_unlock(&d->resp_mu);
		wait = clockresp_round(d->cr, &t);
		clockresp_stats(d->cr, &cs);
		__atomic_store_n(&d->resp_holds, cs.holds_lock, __ATOMIC_RELAXED);
		__atomic_store_n(&d->resp_replies, cs.replies, __ATOMIC_RELAXED);
		pthread_mutex_lock(&d->resp_mu);
		if (!wait || d->resp_stop)
			continue;
		if (wait > RESP_MAX_WAIT_NS)
			wait = RESP_MAX_WAIT_NS;
		t += wait; /* from the round's clock read: no other one per round */
		ts.tv_sec = (time_t)(t / 1000000000ULL);
		ts.tv_nsec = (long)(t % 1000000000ULL);
		pthread_cond_timedwait(&d->resp_cv, &d->resp_mu, &ts);
	}
	pthread_mutex_unlock(&d->resp_mu);
	clockresp_stats(d->cr, &cs);
	log_debug("dtl: clock responder: %llu answers (%s the lock) in %llu rounds, %llu in a "
		  "predicted window; "
		  "window wake-ups late by %.1f us on average",
		  (unsigned long long)cs.replies, cs.holds_lock ? "holding" : "never held",
		  (unsigned long long)cs.rounds, (unsigned long long)cs.in_window,
		  cs.wakes ? (double)cs.late_sum_ns / 1e3 / (double)cs.wakes : 0.0);
	return NULL;
}

static int resp_start(struct dtl *d, const struct dtl_params *p)
{
	struct clockresp_params cp = { .lock_path = p->lock_path,
				       .poll_ns = CLOCKRESP_CHEAP_POLL_NS,
				       .step_ns = CLOCKRESP_CHEAP_STEP_NS };
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	d->cr = clockresp_new(d->area, d->area_size, &cp);
	if (!d->cr)
		return -errno;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&d->resp_cv, &ca);
	pthread_condattr_destroy(&ca);
	d->resp_cpu = p->responder_cpu;
	/* the thread blocks every signal: they stay the view's (its main loop may wait for EINTR) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&d->resp, NULL, resp_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		pthread_cond_destroy(&d->resp_cv);
		clockresp_free(d->cr);
		d->cr = NULL;
		return -rc;
	}
	d->resp_on = true;
	return 0;
}

static void resp_stop(struct dtl *d)
{
	if (!d->resp_on)
		return;
	pthread_mutex_lock(&d->resp_mu);
	d->resp_stop = 1;
	pthread_cond_signal(&d->resp_cv);
	pthread_mutex_unlock(&d->resp_mu);
	pthread_join(d->resp, NULL);
	pthread_cond_destroy(&d->resp_cv);
	d->resp_on = false;
}

/* ---- open / close ---- */

/* The region's file: region_path, or BAR2. 0 with *fd, 1 = no device (absent), -errno (why set). */
static int region_file(const struct dtl_params *p, bool rw, char *path, size_t cap, int *fd,
		       uint64_t *size, char *why, size_t whylen)
{
	struct stat sb;
	int rc;

	if (p->region_path) {
		snprintf(path, cap, "%s", p->region_path);
		*fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (*fd < 0 || fstat(*fd, &sb)) {
			rc = -errno;
			snprintf(why, whylen, "cannot open %s: %s", path, strerror(errno));
			return rc;
		}
		*size = (uint64_t)sb.st_size;
		return 0;
	}
	rc = guestdev_find_ivshmem(p->sysfs, path, cap, size);
	if (rc) {
		log_debug("dtl: no ivshmem device (%s): absent", strerror(-rc));
		return 1;
	}
	*fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_SYNC | O_CLOEXEC);
	if (*fd < 0) {
		log_debug("dtl: cannot open %s: %s: absent", path, strerror(errno));
		return 1;
	}
	return 0;
}

/* Map the region (whole file); the host area is its upper half. 0, 1 (absent) or -errno with why. */
static int map_region(struct dtl *d, const struct dtl_params *p, char *why, size_t whylen)
{
	char path[512];
	uint64_t size = 0;
	int fd = -1, rc;

	rc = region_file(p, p->responder, path, sizeof(path), &fd, &size, why, whylen);
	if (rc)
		goto out;
	if (!shmregion_pow2(size) || size < 2 * 4096 || size > MAX_REGION) {
		rc = p->region_path ? -EINVAL : 1;
		snprintf(why, whylen, "%s: %llu bytes is not a region size", path,
			 (unsigned long long)size);
		goto out;
	}
	d->map = mmap(NULL, (size_t)size, PROT_READ | (p->responder ? PROT_WRITE : 0), MAP_SHARED,
		      fd, 0);
	if (d->map == MAP_FAILED) {
		d->map = NULL;
		rc = p->region_path ? -errno : 1;
		snprintf(why, whylen, "cannot map %s: %s", path, strerror(errno));
		goto out;
	}
	d->map_size = (size_t)size;
	d->area = (char *)d->map + vn_dtl_area_offset(size);
	d->area_size = (size_t)(size - vn_dtl_area_offset(size));
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

int dtl_open(struct dtl **out, const struct dtl_params *p, char *why, size_t whylen)
{
	static const struct dtl_params none = { .responder_cpu = -1 };
	struct dtl *d;
	int rc;

	*out = NULL;
	if (!p)
		p = &none;
	d = dtl_alloc(VN_DTL_MAX_VCPUS, p->keep_ns, p->max_spans);
	if (!d) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	if (p->stale_ns)
		d->stale_ns = p->stale_ns;
	rc = map_region(d, p, why, whylen);
	if (rc < 0)
		goto fail;
	if (rc == 0) {
		d->r = dtlreader_new(d->area, d->area_size);
		if (!d->r) {
			rc = -ENOMEM;
			snprintf(why, whylen, "out of memory");
			goto fail;
		}
		if (p->responder && (rc = resp_start(d, p))) {
			snprintf(why, whylen, "cannot start the clock responder: %s",
				 strerror(-rc));
			goto fail;
		}
		(void)dtl_poll(d);
	}
	*out = d;
	return 0;
fail:
	dtl_close(d);
	return rc;
}

void dtl_close(struct dtl *d)
{
	uint32_t i;

	if (!d)
		return;
	resp_stop(d);
	clockresp_free(d->cr);
	dtlreader_free(d->r);
	if (d->map)
		munmap(d->map, d->map_size);
	for (i = 0; i < d->ncpus; i++) {
		free(d->cpu[i].spans);
		free(d->cpu[i].aggs);
	}
	free(d->cpu);
	free(d->causes);
	pthread_mutex_destroy(&d->resp_mu);
	free(d);
}

void dtl_stats(const struct dtl *d, struct dtl_stats *out)
{
	struct dtlreader_stats rs = { 0 };
	struct timespec ts;
	clockid_t cid;

	memset(out, 0, sizeof(*out));
	out->uncertainty_ns = UINT64_MAX;
	if (!d)
		return;
	if (d->r)
		dtlreader_stats(d->r, &rs);
	out->state = d->state;
	out->detail = d->detail;
	out->epoch = d->epoch;
	out->horizon_ns = d->horizon_ns;
	if (d->have_status && d->status.flags & VN_DTL_S_CLOCK)
		out->uncertainty_ns = d->status.uncertainty_ns;
	out->spans = d->spans;
	out->spans_dropped = d->spans_dropped;
	out->lost = rs.lost;
	out->torn = rs.torn;
	out->bad = rs.bad;
	out->backwards = rs.backwards;
	out->bad_header = rs.bad_header;
	out->bad_status = rs.bad_status;
	out->causes_gone = rs.causes_gone;
	out->host_dropped = d->host_dropped;
	out->responder = __atomic_load_n(&d->resp_holds, __ATOMIC_RELAXED);
	out->replies = __atomic_load_n(&d->resp_replies, __ATOMIC_RELAXED);
	if (d->resp_on && !pthread_getcpuclockid(d->resp, &cid) && !clock_gettime(cid, &ts))
		out->responder_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}
