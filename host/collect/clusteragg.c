/* SPDX-License-Identifier: MIT */
/* clusteragg: the collector's engine (see clusteragg.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg.h"
#include "attrib/merge.h"
#include "attrib/classes.h"
#include "util/parse.h"
#include "export/promfmt.h"
#include "util/json.h"
#include "util/version.h"

#define CS_TL 64 /* timeline entries kept per node */
#define CS_SRC 8 /* largest sources kept per node */
#define CS_WIN 64 /* intervals per job kept open for the spatial statistics */
_Static_assert(CS_WIN <= 64, "node.inwin has a bit per window entry");
#define CS_RECENT 32 /* recent compute times per side kept for the exclusion rule */
#define CS_LIVE_SLOTS \
	3 /* a node silent for this many slots (at least 3 s) is skipped by the rotation */

struct welford {
	uint64_t n;
	double mean, m2;
};

static void welford_add(struct welford *w, double x)
{
	double d = x - w->mean;

	w->n++;
	w->mean += d / (double)w->n;
	w->m2 += d * (x - w->mean);
}

static double welford_sd(const struct welford *w)
{
	return w->n > 1 ? sqrt(w->m2 / (double)(w->n - 1)) : 0;
}

/* Coefficient of variation (sd / mean), 0 when the mean is 0. */
static double welford_cv(const struct welford *w)
{
	return w->mean > 0 ? welford_sd(w) / w->mean : 0;
}

struct tl_ent {
	uint64_t interval_id, start_ns, end_ns, noise_ns, compute_ns;
	uint32_t sampled;
};

struct src_ent {
	uint64_t ns, count;
	uint32_t src_id;
	uint8_t cls, src_kind;
	char name[VN_REPORT_NAME_LEN];
};

struct node {
	uint64_t node_id, job_id;
	uint32_t job;
	int registered, excluded;
	struct sockaddr_storage addr; /* where its HELLO came from: commands go there */
	socklen_t addrlen;
	uint64_t last_seen_ns;
	struct datagram_seq seq;
	uint64_t datagrams, records, intervals[2] /* sampled, counters */;
	/* by report class: the guest's (enum vn_class), then the hypervisor's (version 2, from the DTL) */
	uint64_t noise_ns, compute_ns, class_ns[VN_REPORT_CLS_MAX];
	struct src_ent src[CS_SRC];
	uint64_t src_other_ns; /* source noise that did not fit in src[] */
	/*
	 * /metrics (and remote-write): the first CS_SRC sources by (class, name) keep their series for the
	 * node's life, the rest add into "other": counters that never go down or vanish, bounded labels.
	 */
	struct exp_src {
		uint8_t cls;
		char name[VN_REPORT_NAME_LEN];
		uint64_t ns;
	} exp[CS_SRC];
	uint32_t nexp;
	uint64_t exp_other_ns;
	/* the interval whose parts are arriving */
	int cur_have;
	uint64_t cur_id, cur_start, cur_end, cur_noise, cur_compute;
	uint32_t cur_sampled;
	struct tl_ent tl[CS_TL];
	uint64_t tl_n;
	struct welford temporal_noise, temporal_compute;
	struct welford cmp_sampled, cmp_base; /* per-interval compute, sampled and not */
	/* the last CS_RECENT of each (ns, capped at 4.29 s): the exclusion rule compares their medians */
	uint32_t recent[2][CS_RECENT];
	uint32_t nrecent[2];
	double excluded_ratio;
	uint64_t slots_sampled, cmds_sent;
	uint64_t
	    inwin; /* bit k: the node is in its job's window entry k (one report per interval) */
	double delay_sum; /* ns behind the interval's fastest node, summed */
	uint64_t delay_n, slowest;
};

struct iv_node {
	uint32_t node;
	uint64_t compute_ns, noise_ns;
};

struct iv {
	uint64_t interval_id;
	int used;
	struct iv_node *v;
	uint32_t n, cap;
};

struct job {
	uint64_t job_id;
	const char *name; /* from cfg.job_names, or NULL */
	uint32_t *nodes; /* indexes into cs->nodes, sorted by node_id */
	uint32_t nnodes, cap;
	struct iv win[CS_WIN];
	struct welford spatial_compute, spatial_noise; /* per closed interval: cv between nodes */
	uint64_t intervals_closed, late;
	/* rotation */
	int rotating; /* 0 waiting for nodes, 1 rotating, 2 done (max_slots) */
	uint64_t slot, slot_end_ns;
	uint32_t cursor;
	uint32_t *sampled;
	uint32_t nsampled;
};

struct clusteragg {
	struct clusteragg_cfg cfg;
	struct clusteragg_stats st;
	struct node *nodes;
	uint32_t nnodes, ncap;
	uint32_t *hash; /* open addressing: node index + 1, 0 empty */
	uint32_t hcap; /* power of two, >= 2 x max_nodes */
	struct job *jobs;
	uint32_t njobs, jcap;
	uint64_t last_cmd_seq;
};

const char *clusteragg_res_name(int res)
{
	static const char *const names[CS_RES_MAX] = {
		[CS_OK] = "ok",
		[CS_NOT_REPORT] = "not-report",
		[CS_VERSION] = "version",
		[CS_MALFORMED] = "malformed",
		[CS_UNKNOWN_KEY] = "unknown-key",
		[CS_BAD_MAC] = "bad-mac",
		[CS_DUP] = "duplicate",
		[CS_STALE] = "stale",
		[CS_WRONG_KIND] = "wrong-kind",
		[CS_TOO_MANY_NODES] = "too-many-nodes",
	};
	return res >= 0 && res < CS_RES_MAX ? names[res] : "other";
}

static void event(struct clusteragg *cs, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void event(struct clusteragg *cs, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!cs->cfg.event)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	cs->cfg.event(cs->cfg.event_ctx, line);
}

struct clusteragg *clusteragg_new(const struct clusteragg_cfg *cfg)
{
	struct clusteragg *cs;

	if (!cfg->keys || !cfg->keys->n || !cfg->max_nodes || cfg->max_nodes > (1u << 24) ||
	    (cfg->slot_ns && (!cfg->sample_nodes || !cfg->wait_nodes || !cfg->exclude_min))) {
		errno = EINVAL;
		return NULL;
	}
	cs = calloc(1, sizeof(*cs));
	if (!cs)
		return NULL;
	cs->cfg = *cfg;
	cs->hcap = 16;
	while (cs->hcap < 2 * cfg->max_nodes)
		cs->hcap <<= 1;
	cs->hash = calloc(cs->hcap, sizeof(*cs->hash));
	if (!cs->hash) {
		free(cs);
		errno = ENOMEM;
		return NULL;
	}
	return cs;
}

void clusteragg_free(struct clusteragg *cs)
{
	if (!cs)
		return;
	for (uint32_t j = 0; j < cs->njobs; j++) {
		for (int w = 0; w < CS_WIN; w++)
			free(cs->jobs[j].win[w].v);
		free(cs->jobs[j].nodes);
		free(cs->jobs[j].sampled);
	}
	free(cs->jobs);
	free(cs->nodes);
	free(cs->hash);
	free(cs);
}

static uint32_t hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x;
}

/* Index of node_id, or -1 (and *slot where it would go). */
static long node_find(const struct clusteragg *cs, uint64_t node_id, uint32_t *slot)
{
	uint32_t h = hash_u64(node_id) & (cs->hcap - 1);

	while (cs->hash[h]) {
		if (cs->nodes[cs->hash[h] - 1].node_id == node_id)
			return cs->hash[h] - 1;
		h = (h + 1) & (cs->hcap - 1);
	}
	*slot = h;
	return -1;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t size)
{
	uint32_t n = *cap ? *cap : 8;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, (size_t)n * size);
	if (!q)
		return -ENOMEM;
	memset((char *)q + (size_t)*cap * size, 0, (size_t)(n - *cap) * size);
	*p = q;
	*cap = n;
	return 0;
}

static long job_get(struct clusteragg *cs, uint64_t job_id)
{
	for (uint32_t j = 0; j < cs->njobs; j++)
		if (cs->jobs[j].job_id == job_id)
			return j;
	if (grow((void **)&cs->jobs, &cs->jcap, cs->njobs + 1, sizeof(*cs->jobs)))
		return -1;
	cs->jobs[cs->njobs].job_id = job_id;
	for (size_t k = 0; k < cs->cfg.njob_names; k++)
		if (datagram_job_id(cs->cfg.job_names[k]) == job_id)
			cs->jobs[cs->njobs].name = cs->cfg.job_names[k];
	cs->st.jobs = cs->njobs + 1;
	return cs->njobs++;
}

static int job_add_node(struct clusteragg *cs, uint32_t j, uint32_t idx)
{
	struct job *jb = &cs->jobs[j];
	uint32_t i;

	if (grow((void **)&jb->nodes, &jb->cap, jb->nnodes + 1, sizeof(*jb->nodes)))
		return -ENOMEM;
	for (i = jb->nnodes; i > 0 && cs->nodes[jb->nodes[i - 1]].node_id > cs->nodes[idx].node_id;
	     i--)
		jb->nodes[i] = jb->nodes[i - 1];
	jb->nodes[i] = idx;
	jb->nnodes++;
	if (jb->cursor > i) /* keep the rotation's place */
		jb->cursor++;
	return 0;
}

static void job_del_node(struct clusteragg *cs, uint32_t j, uint32_t idx)
{
	struct job *jb = &cs->jobs[j];

	for (uint32_t i = 0; i < jb->nnodes; i++)
		if (jb->nodes[i] == idx) {
			memmove(&jb->nodes[i], &jb->nodes[i + 1],
				(jb->nnodes - i - 1) * sizeof(*jb->nodes));
			jb->nnodes--;
			if (jb->cursor > i)
				jb->cursor--;
			break;
		}
	for (uint32_t i = 0; i < jb->nsampled; i++)
		if (jb->sampled[i] == idx)
			jb->sampled[i] = jb->sampled[--jb->nsampled];
}

/* The node of an authenticated datagram, created on first sight; NULL when the table is full. */
static struct node *node_get(struct clusteragg *cs, const struct vn_report_hdr *h)
{
	uint32_t slot;
	long idx = node_find(cs, h->node_id, &slot);
	long j;
	struct node *n;

	if (idx < 0) {
		if (cs->nnodes >= cs->cfg.max_nodes ||
		    grow((void **)&cs->nodes, &cs->ncap, cs->nnodes + 1, sizeof(*cs->nodes)))
			return NULL;
		j = job_get(cs, h->job_id);
		if (j < 0)
			return NULL;
		idx = cs->nnodes;
		n = &cs->nodes[idx];
		memset(n, 0, sizeof(*n));
		n->node_id = h->node_id;
		n->job_id = h->job_id;
		n->job = (uint32_t)j;
		if (job_add_node(cs, (uint32_t)j, (uint32_t)idx))
			return NULL;
		cs->hash[slot] = (uint32_t)idx + 1;
		cs->nnodes++;
		cs->st.nodes = cs->nnodes;
		return n;
	}
	n = &cs->nodes[idx];
	if (n->job_id != h->job_id) { /* the node moved to another job */
		j = job_get(cs, h->job_id);
		if (j < 0)
			return NULL;
		job_del_node(cs, n->job, (uint32_t)idx);
		n = &cs->nodes[idx];
		if (job_add_node(cs, (uint32_t)j, (uint32_t)idx))
			return NULL;
		event(cs, "node %" PRIu64 " moved to job %016" PRIx64, n->node_id,
		      (uint64_t)h->job_id);
		n->job_id = h->job_id;
		n->job = (uint32_t)j;
		n->cur_have = 0;
		n->inwin = 0; /* its entries in the old job's window stay there until closed */
	}
	return n;
}

/* Close window entry w of job jb: the spatial statistics and the delays of its nodes. */
static void iv_close(struct clusteragg *cs, struct job *jb, struct iv *w)
{
	struct welford c = { 0 }, z = { 0 };
	uint64_t min = UINT64_MAX, max = 0;
	uint32_t slow = 0;

	if (w->n >= 2) {
		for (uint32_t i = 0; i < w->n; i++) {
			welford_add(&c, (double)w->v[i].compute_ns);
			welford_add(&z, (double)w->v[i].noise_ns);
			if (w->v[i].compute_ns < min)
				min = w->v[i].compute_ns;
			if (w->v[i].compute_ns >= max) {
				max = w->v[i].compute_ns;
				slow = w->v[i].node;
			}
		}
		for (uint32_t i = 0; i < w->n; i++) {
			struct node *n = &cs->nodes[w->v[i].node];

			n->delay_sum += (double)(w->v[i].compute_ns - min);
			n->delay_n++;
		}
		cs->nodes[slow].slowest++;
		welford_add(&jb->spatial_compute, welford_cv(&c));
		welford_add(&jb->spatial_noise, welford_cv(&z));
		jb->intervals_closed++;
	}
	for (uint32_t i = 0; i < w->n; i++)
		cs->nodes[w->v[i].node].inwin &= ~(1ull << (w - jb->win));
	w->used = 0;
	w->n = 0;
}

/* A node's interval is complete: timeline, temporal and sampling statistics, the job's window. */
static void interval_done(struct clusteragg *cs, uint32_t idx)
{
	struct node *n = &cs->nodes[idx];
	struct job *jb = &cs->jobs[n->job];
	struct tl_ent *t = &n->tl[n->tl_n++ % CS_TL];
	struct iv *w = &jb->win[n->cur_id % CS_WIN];

	t->interval_id = n->cur_id;
	t->start_ns = n->cur_start;
	t->end_ns = n->cur_end;
	t->noise_ns = n->cur_noise;
	t->compute_ns = n->cur_compute;
	t->sampled = n->cur_sampled;
	n->intervals[n->cur_sampled ? 0 : 1]++;
	welford_add(&n->temporal_noise, (double)n->cur_noise);
	welford_add(&n->temporal_compute, (double)n->cur_compute);
	welford_add(n->cur_sampled ? &n->cmp_sampled : &n->cmp_base, (double)n->cur_compute);
	n->recent[!n->cur_sampled][n->nrecent[!n->cur_sampled]++ % CS_RECENT] =
	    n->cur_compute > UINT32_MAX ? UINT32_MAX : (uint32_t)n->cur_compute;
	n->cur_have = 0;

	if (w->used && w->interval_id != n->cur_id) {
		if (w->interval_id > n->cur_id) { /* that interval was closed already */
			jb->late++;
			return;
		}
		iv_close(cs, jb, w);
	}
	if (!w->used) {
		w->used = 1;
		w->interval_id = n->cur_id;
		w->n = 0;
	}
	if (cs->nodes[idx].inwin & (1ull << (w - jb->win)))
		return; /* a restarted node reporting the same interval again */
	if (grow((void **)&w->v, &w->cap, w->n + 1, sizeof(*w->v)))
		return;
	n = &cs->nodes[idx];
	n->inwin |= 1ull << (w - jb->win);
	w->v[w->n++] = (struct iv_node){ idx, n->tl[(n->tl_n - 1) % CS_TL].compute_ns,
					 n->tl[(n->tl_n - 1) % CS_TL].noise_ns };
}

/* The node's hypervisor noise, all classes (ns). */
static uint64_t node_hyp_ns(const struct node *n)
{
	uint64_t sum = 0;

	for (int c = VN_REPORT_CLS_HYP_BASE; c < VN_REPORT_CLS_MAX; c++)
		sum += n->class_ns[c];
	return sum;
}

/* The exported sources: the series of (class, name) if it has one or a slot is free, else "other". */
static void export_source(struct node *n, const struct vn_report_rec *r)
{
	for (uint32_t i = 0; i < n->nexp; i++)
		if (n->exp[i].cls == r->cls &&
		    !strncmp(n->exp[i].name, r->name, VN_REPORT_NAME_LEN)) {
			n->exp[i].ns += r->noise_ns;
			return;
		}
	if (n->nexp == CS_SRC) {
		n->exp_other_ns += r->noise_ns;
		return;
	}
	n->exp[n->nexp].cls = r->cls;
	memcpy(n->exp[n->nexp].name, r->name, VN_REPORT_NAME_LEN);
	n->exp[n->nexp++].ns = r->noise_ns;
}

static void add_source(struct node *n, const struct vn_report_rec *r)
{
	struct src_ent *min = &n->src[0];

	for (int i = 0; i < CS_SRC; i++) {
		struct src_ent *e = &n->src[i];

		if (e->count && e->cls == r->cls && e->src_kind == r->src_kind &&
		    e->src_id == r->src_id) {
			e->ns += r->noise_ns;
			e->count += r->count;
			memcpy(e->name, r->name,
			       sizeof(e->name)); /* a thread may have renamed itself */
			return;
		}
		if (e->ns < min->ns || !e->count)
			min = !min->count ? min : e;
	}
	if (min->count && min->ns >= r->noise_ns) {
		n->src_other_ns += r->noise_ns;
		return;
	}
	n->src_other_ns += min->ns; /* the smallest one leaves the table */
	min->ns = r->noise_ns;
	min->count = r->count ? r->count : 1;
	min->cls = r->cls;
	min->src_kind = r->src_kind;
	min->src_id = r->src_id;
	memcpy(min->name, r->name, sizeof(min->name));
}

static void take_interval(struct clusteragg *cs, uint32_t idx, const struct datagram_view *v)
{
	struct node *n = &cs->nodes[idx];
	const struct vn_report_hdr *h = &v->hdr;

	if (n->cur_have && n->cur_id != h->interval_id)
		interval_done(cs, idx); /* its last part was lost: close it with what came */
	n = &cs->nodes[idx];
	if (!n->cur_have) {
		n->cur_have = 1;
		n->cur_id = h->interval_id;
		n->cur_start = h->start_realtime_ns;
		n->cur_end = h->end_realtime_ns;
		n->cur_noise = n->cur_compute = 0;
		n->cur_sampled = h->kind == VN_REPORT_INTERVAL;
	}
	for (unsigned i = 0; i < h->nrec; i++) {
		const struct vn_report_rec *r = &v->rec[i];

		if (r->cls == VN_CLASS_NONE) {
			n->noise_ns += r->noise_ns;
			n->compute_ns += r->compute_ns;
			n->cur_noise += r->noise_ns;
			if (r->compute_ns >
			    n->cur_compute) /* the node is as late as its slowest rank */
				n->cur_compute = r->compute_ns;
		} else if (r->src_kind == VN_REPORT_SRC_NONE) {
			n->class_ns[r->cls] += r->noise_ns;
		} else {
			add_source(n, r);
			export_source(n, r);
		}
	}
	n->records += h->nrec;
	if (h->flags & VN_REPORT_F_LAST)
		interval_done(cs, idx);
}

int clusteragg_ingest(struct clusteragg *cs, const void *buf, size_t len,
		      const struct sockaddr *src, socklen_t srclen, uint64_t now_ns)
{
	struct datagram_view v;
	struct node *n;
	uint64_t lost, old_session;
	uint32_t idx;
	int rc, res;

	cs->st.received++;
	rc = datagram_parse(buf, len, datagram_keytab_lookup, (void *)&cs->cfg.keys->tab, &v);
	switch (rc) {
	case 0:
		res = CS_OK;
		break;
	case -ENOMSG:
		res = CS_NOT_REPORT;
		break;
	case -EPROTO:
		res = CS_VERSION;
		break;
	case -ENOKEY:
		res = CS_UNKNOWN_KEY;
		break;
	case -EKEYREJECTED:
		res = CS_BAD_MAC;
		break;
	default:
		res = CS_MALFORMED;
		break;
	}
	if (res == CS_OK && v.hdr.kind == VN_REPORT_SAMPLE)
		res = CS_WRONG_KIND;
	if (res != CS_OK)
		goto out;
	n = node_get(cs, &v.hdr);
	if (!n) {
		res = CS_TOO_MANY_NODES;
		goto out;
	}
	idx = (uint32_t)(n - cs->nodes);
	old_session = n->seq.session_id;
	lost = datagram_seq_track(&n->seq, v.hdr.session_id, v.hdr.seq);
	(void)lost;
	if (n->seq.last == DATAGRAM_SEQ_DUP || n->seq.last == DATAGRAM_SEQ_STALE) {
		res = n->seq.last == DATAGRAM_SEQ_DUP ? CS_DUP : CS_STALE;
		goto out;
	}
	if (n->seq.last == DATAGRAM_SEQ_RESTART) {
		event(cs, "node %" PRIu64 " restarted (session %" PRIu64 " after %" PRIu64 ")",
		      n->node_id, (uint64_t)v.hdr.session_id, old_session);
		n->cur_have = 0;
	}
	n->last_seen_ns = now_ns;
	n->datagrams++;
	if (v.hdr.kind == VN_REPORT_HELLO) {
		if (!n->registered)
			event(cs, "node %" PRIu64 " registered for job %016" PRIx64, n->node_id,
			      n->job_id);
		n->registered = 1;
		if (src && srclen <= sizeof(n->addr)) {
			memcpy(&n->addr, src, srclen);
			n->addrlen = srclen;
		}
	} else {
		take_interval(cs, idx, &v);
	}
	if (cs->cfg.accepted)
		cs->cfg.accepted(cs->cfg.accepted_ctx, &v, now_ns);
out:
	cs->st.dgrams[res]++;
	return res;
}

/* ---- rotation ---- */

static int node_live(const struct clusteragg *cs, const struct node *n, uint64_t now_ns)
{
	uint64_t quiet = CS_LIVE_SLOTS * cs->cfg.slot_ns;

	if (quiet < 3000000000ull)
		quiet = 3000000000ull;
	return n->registered && !n->excluded && n->addrlen && now_ns - n->last_seen_ns < quiet;
}

static void send_sample(struct clusteragg *cs, struct job *jb, struct node *n, uint64_t now_ns,
			uint64_t lease_ns)
{
	const struct datagram_key *k = &cs->cfg.keys->keys[0];
	struct datagram_meta m = { 0 };
	struct datagram_buf b;
	int len;

	m.kind = VN_REPORT_SAMPLE;
	m.key_id = k->id;
	m.flags = VN_REPORT_F_LAST;
	m.node_id = n->node_id;
	m.session_id = n->seq.session_id;
	m.job_id = n->job_id;
	m.interval_id = jb->slot;
	m.seq = now_ns > cs->last_cmd_seq ? now_ns : cs->last_cmd_seq + 1;
	cs->last_cmd_seq = m.seq;
	m.send_realtime_ns = now_ns;
	m.start_realtime_ns = now_ns;
	m.end_realtime_ns = now_ns + lease_ns;
	if (datagram_init(&b, &m) || (len = datagram_seal(&b, k->key, k->len)) < 0 ||
	    cs->cfg.send(cs->cfg.send_ctx, (const struct sockaddr *)&n->addr, n->addrlen, b.data,
			 (size_t)len)) {
		cs->st.cmd_errors++;
		return;
	}
	cs->st.cmds_sent++;
	n->cmds_sent++;
}

/* Median of the recent compute times of one side (0 sampled, 1 not); 0 when there are none. */
static double recent_median(const struct node *n, int side)
{
	uint32_t v[CS_RECENT];
	uint32_t k = n->nrecent[side] < CS_RECENT ? n->nrecent[side] : CS_RECENT;

	if (!k)
		return 0;
	memcpy(v, n->recent[side], k * sizeof(v[0]));
	for (uint32_t a = 1; a < k; a++)
		for (uint32_t b = a; b > 0 && v[b - 1] > v[b]; b--) {
			uint32_t t = v[b];

			v[b] = v[b - 1];
			v[b - 1] = t;
		}
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + (double)v[k / 2]) / 2;
}

/*
 * The slot of jb ended: judge the nodes it sampled. Medians, not means: one hypervisor stall in a sampled
 * interval must not take a node out.
 */
static void slot_end(struct clusteragg *cs, struct job *jb, uint64_t now_ns)
{
	for (uint32_t i = 0; i < jb->nsampled; i++) {
		struct node *n = &cs->nodes[jb->sampled[i]];
		double ratio;

		double ms, mb;

		if (n->excluded || n->nrecent[0] < cs->cfg.exclude_min ||
		    n->nrecent[1] < cs->cfg.exclude_min)
			continue;
		ms = recent_median(n, 0);
		mb = recent_median(n, 1);
		if (mb <= 0)
			continue;
		ratio = ms / mb;
		if (ratio > 1 + cs->cfg.exclude_ratio) {
			n->excluded = 1;
			n->excluded_ratio = ratio;
			send_sample(cs, jb, n, now_ns, 0); /* stop now */
			event(cs,
			      "node %" PRIu64
			      " taken out of the rotation: compute %.0f us per interval "
			      "while sampled, %.0f us otherwise (x%.2f)",
			      n->node_id, n->cmp_sampled.mean / 1e3, n->cmp_base.mean / 1e3, ratio);
		}
	}
	jb->nsampled = 0;
}

static void slot_start(struct clusteragg *cs, struct job *jb, uint64_t now_ns)
{
	uint32_t want = cs->cfg.sample_nodes, seen = 0;

	if (!jb->sampled) {
		jb->sampled = calloc(want, sizeof(*jb->sampled));
		if (!jb->sampled)
			return;
	}
	jb->nsampled = 0;
	jb->slot_end_ns = now_ns + cs->cfg.slot_ns;
	if (jb->cursor >= jb->nnodes)
		jb->cursor = 0;
	while (jb->nsampled < want && seen < jb->nnodes) {
		uint32_t idx = jb->nodes[jb->cursor];
		struct node *n = &cs->nodes[idx];

		jb->cursor = (jb->cursor + 1) % jb->nnodes;
		seen++;
		if (!node_live(cs, n, now_ns))
			continue;
		jb->sampled[jb->nsampled++] = idx;
		n->slots_sampled++;
		send_sample(cs, jb, n, now_ns, cs->cfg.slot_ns);
	}
}

void clusteragg_tick(struct clusteragg *cs, uint64_t now_ns)
{
	if (!cs->cfg.slot_ns)
		return;
	for (uint32_t j = 0; j < cs->njobs; j++) {
		struct job *jb = &cs->jobs[j];
		uint32_t live = 0;

		if (jb->rotating == 2 || (jb->rotating == 1 && now_ns < jb->slot_end_ns))
			continue;
		if (jb->rotating == 0) {
			for (uint32_t i = 0; i < jb->nnodes; i++)
				live += node_live(cs, &cs->nodes[jb->nodes[i]], now_ns);
			if (live < cs->cfg.wait_nodes)
				continue;
			event(cs, "job %016" PRIx64 ": rotation starts over %u nodes, %u per slot",
			      jb->job_id, live, cs->cfg.sample_nodes);
			jb->rotating = 1;
			jb->slot = 0;
			jb->cursor = 0;
			slot_start(cs, jb, now_ns);
			continue;
		}
		slot_end(cs, jb, now_ns);
		if (cs->cfg.max_slots && jb->slot + 1 >= cs->cfg.max_slots) {
			jb->rotating = 2;
			event(cs, "job %016" PRIx64 ": rotation done after %" PRIu64 " slots",
			      jb->job_id, jb->slot + 1);
			continue;
		}
		jb->slot++;
		slot_start(cs, jb, now_ns);
	}
}

/* ---- views ---- */

void clusteragg_stats(const struct clusteragg *cs, struct clusteragg_stats *st)
{
	*st = cs->st;
	st->lost = 0;
	for (uint32_t i = 0; i < cs->nnodes; i++)
		st->lost += cs->nodes[i].seq.lost;
}

void clusteragg_close_all(struct clusteragg *cs)
{
	for (uint32_t i = 0; i < cs->nnodes; i++)
		if (cs->nodes[i].cur_have) /* its last part never came */
			interval_done(cs, i);
	for (uint32_t j = 0; j < cs->njobs; j++) {
		struct job *jb = &cs->jobs[j];
		uint64_t order[CS_WIN];
		int n = 0;

		/* oldest first, so that the window's "already closed" rule holds for what comes later */
		for (int w = 0; w < CS_WIN; w++)
			if (jb->win[w].used)
				order[n++] = jb->win[w].interval_id;
		for (int a = 1; a < n; a++)
			for (int b = a; b > 0 && order[b - 1] > order[b]; b--) {
				uint64_t t = order[b];

				order[b] = order[b - 1];
				order[b - 1] = t;
			}
		for (int i = 0; i < n; i++)
			iv_close(cs, jb, &jb->win[order[i] % CS_WIN]);
	}
}

static double mean_delay(const struct node *n)
{
	return n->delay_n ? n->delay_sum / (double)n->delay_n : 0;
}

static int by_delay(const void *a, const void *b, void *ctx)
{
	const struct node *x = &((const struct node *)ctx)[*(const uint32_t *)a];
	const struct node *y = &((const struct node *)ctx)[*(const uint32_t *)b];
	double dx = mean_delay(x), dy = mean_delay(y);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return (x->node_id > y->node_id) - (x->node_id < y->node_id);
}

/*
 * Node indexes of job jb, slowest first (mean delay behind the interval's fastest node; ties by node id).
 * O(n log n): it runs at every /metrics scrape, on up to --max-nodes nodes.
 */
static uint32_t *ranking(const struct clusteragg *cs, const struct job *jb)
{
	uint32_t *r = malloc((jb->nnodes ? jb->nnodes : 1) * sizeof(*r));

	if (!r)
		return NULL;
	memcpy(r, jb->nodes, jb->nnodes * sizeof(*r));
	qsort_r(r, jb->nnodes, sizeof(*r), by_delay, cs->nodes);
	return r;
}

static int sampled_now(const struct clusteragg *cs, const struct job *jb, uint32_t idx)
{
	if (jb->rotating != 1)
		return 0;
	for (uint32_t i = 0; i < jb->nsampled; i++)
		if (jb->sampled[i] == idx)
			return 1;
	return 0;
}

static const struct src_ent *top_source(const struct node *n)
{
	const struct src_ent *t = NULL;

	for (int i = 0; i < CS_SRC; i++)
		if (n->src[i].count && (!t || n->src[i].ns > t->ns))
			t = &n->src[i];
	return t;
}

/* ---- the Prometheus exposition: one table of metric families ---- */

/* What a family's emitter gets: the store, the output and room for the labels of one sample. */
struct prom_ctx {
	const struct clusteragg *cs;
	struct bufout *o;
	struct clusteragg_stats st;
	char node[24], job[24];
	struct promfmt_label l[4];
};

struct prom_family {
	const char *name, *type, *help;
	/* writes the family's samples; 0 or -ENOMEM */
	int (*emit)(struct prom_ctx *c, const struct prom_family *fam);
	uint64_t (*total)(const struct clusteragg_stats *st); /* emit_total */
	uint64_t (*node_u64)(const struct clusteragg *cs, uint32_t i); /* emit_node_u64 */
	double (*node_double)(const struct node *n); /* emit_node_double */
};

/* l[0..1] = the node and job labels of node i. */
static const struct node *node_labels(struct prom_ctx *c, uint32_t i)
{
	const struct node *n = &c->cs->nodes[i];

	snprintf(c->node, sizeof(c->node), "%" PRIu64, n->node_id);
	snprintf(c->job, sizeof(c->job), "%016" PRIx64, n->job_id);
	c->l[0] = (struct promfmt_label){ "node", c->node, sizeof(c->node) };
	c->l[1] = (struct promfmt_label){ "job", c->job, sizeof(c->job) };
	return n;
}

/* l[0] = the job label of job j. */
static const struct job *job_label(struct prom_ctx *c, uint32_t j)
{
	snprintf(c->job, sizeof(c->job), "%016" PRIx64, c->cs->jobs[j].job_id);
	c->l[0] = (struct promfmt_label){ "job", c->job, sizeof(c->job) };
	return &c->cs->jobs[j];
}

static int emit_datagrams(struct prom_ctx *c, const struct prom_family *fam)
{
	for (int r = 0; r < CS_RES_MAX; r++) {
		c->l[0] = (struct promfmt_label){ "result", clusteragg_res_name(r), 32 };
		promfmt_sample_u64(c->o, fam->name, c->l, 1, c->st.dgrams[r]);
	}
	return 0;
}

static int emit_total(struct prom_ctx *c, const struct prom_family *fam)
{
	promfmt_sample_u64(c->o, fam->name, NULL, 0, fam->total(&c->st));
	return 0;
}

static int emit_spatial_cv(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t j = 0; j < c->cs->njobs; j++) {
		const struct job *jb = job_label(c, j);

		c->l[1] = (struct promfmt_label){ "of", "compute", 8 };
		promfmt_sample(c->o, fam->name, c->l, 2, jb->spatial_compute.mean);
		c->l[1] = (struct promfmt_label){ "of", "noise", 8 };
		promfmt_sample(c->o, fam->name, c->l, 2, jb->spatial_noise.mean);
	}
	return 0;
}

static int emit_job_info(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t j = 0; j < c->cs->njobs; j++) {
		const struct job *jb = job_label(c, j);

		c->l[1] = (struct promfmt_label){ "name", jb->name ? jb->name : "", SIZE_MAX };
		promfmt_sample_u64(c->o, fam->name, c->l, 2, 1);
	}
	return 0;
}

static int emit_job_slot(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t j = 0; j < c->cs->njobs; j++)
		promfmt_sample_u64(c->o, fam->name, c->l, 1, job_label(c, j)->slot);
	return 0;
}

static int emit_node_u64(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		node_labels(c, i);
		promfmt_sample_u64(c->o, fam->name, c->l, 2, fam->node_u64(c->cs, i));
	}
	return 0;
}

static int emit_node_double(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++)
		promfmt_sample(c->o, fam->name, c->l, 2, fam->node_double(node_labels(c, i)));
	return 0;
}

static int emit_node_intervals(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		c->l[2] = (struct promfmt_label){ "mode", "sampled", 8 };
		promfmt_sample_u64(c->o, fam->name, c->l, 3, n->intervals[0]);
		c->l[2] = (struct promfmt_label){ "mode", "counters", 9 };
		promfmt_sample_u64(c->o, fam->name, c->l, 3, n->intervals[1]);
	}
	return 0;
}

static int emit_node_classes(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		for (int k = 1; k < VN_CLASS_MAX; k++) {
			c->l[2] = (struct promfmt_label){ "class", classes_guest_name(k), 16 };
			promfmt_sample(c->o, fam->name, c->l, 3, n->class_ns[k] / 1e9);
		}
	}
	return 0;
}

/* Hypervisor noise of the node's ranks by class (issue 16: datagram version 2, zero from older nodes). */
static int emit_node_hyp(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		for (int k = VN_REPORT_CLS_HYP_BASE; k < VN_REPORT_CLS_MAX; k++) {
			c->l[2] = (struct promfmt_label){ "class", datagram_class_name(k), 16 };
			promfmt_sample(c->o, fam->name, c->l, 3, n->class_ns[k] / 1e9);
		}
	}
	return 0;
}

static int emit_node_sources(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		for (uint32_t s = 0; s < n->nexp; s++) {
			c->l[2] = (struct promfmt_label){ "class",
							  datagram_class_name(n->exp[s].cls), 16 };
			c->l[3] =
			    (struct promfmt_label){ "source", n->exp[s].name, VN_REPORT_NAME_LEN };
			promfmt_sample(c->o, fam->name, c->l, 4, n->exp[s].ns / 1e9);
		}
		if (n->nexp == CS_SRC) { /* the rest, from the first source that found no slot */
			c->l[2] = (struct promfmt_label){ "class", "other", 16 };
			c->l[3] = (struct promfmt_label){ "source", "other", 16 };
			promfmt_sample(c->o, fam->name, c->l, 4, n->exp_other_ns / 1e9);
		}
	}
	return 0;
}

static int emit_slow_rank(struct prom_ctx *c, const struct prom_family *fam)
{
	const struct clusteragg *cs = c->cs;

	for (uint32_t j = 0; j < cs->njobs; j++) {
		uint32_t *r = ranking(cs, &cs->jobs[j]);

		if (!r)
			return -ENOMEM;
		for (uint32_t i = 0; i < cs->jobs[j].nnodes; i++) {
			node_labels(c, r[i]);
			promfmt_sample_u64(c->o, fam->name, c->l, 2, i + 1);
		}
		free(r);
	}
	return 0;
}

static uint64_t total_lost(const struct clusteragg_stats *st)
{
	return st->lost;
}

static uint64_t total_cmds(const struct clusteragg_stats *st)
{
	return st->cmds_sent;
}

static uint64_t total_cmd_errors(const struct clusteragg_stats *st)
{
	return st->cmd_errors;
}

static uint64_t total_nodes(const struct clusteragg_stats *st)
{
	return st->nodes;
}

static uint64_t node_datagrams(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].datagrams;
}

static uint64_t node_lost(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].seq.lost;
}

static uint64_t node_slowest(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].slowest;
}

static uint64_t node_slots(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].slots_sampled;
}

static uint64_t node_sampled(const struct clusteragg *cs, uint32_t i)
{
	return (uint64_t)sampled_now(cs, &cs->jobs[cs->nodes[i].job], i);
}

static uint64_t node_excluded(const struct clusteragg *cs, uint32_t i)
{
	return (uint64_t)cs->nodes[i].excluded;
}

static double node_noise_s(const struct node *n)
{
	return n->noise_ns / 1e9;
}

static double node_compute_s(const struct node *n)
{
	return n->compute_ns / 1e9;
}

static double node_temporal_cv(const struct node *n)
{
	return welford_cv(&n->temporal_noise);
}

static double node_delay_s(const struct node *n)
{
	return mean_delay(n) / 1e9;
}

/* Every family in exposition order (metric names documented in README.md). */
#define FAMILY(n, t, h, e) .name = n, .type = t, .help = h, .emit = e
static const struct prom_family prom_families[] = {
	{ FAMILY("vnoise_collect_datagrams_total", "counter",
		 "Report datagrams received, by what became of them", emit_datagrams) },
	{ FAMILY("vnoise_collect_lost_datagrams_total", "counter",
		 "Sequence numbers never received, all nodes", emit_total),
	  .total = total_lost },
	{ FAMILY("vnoise_collect_commands_total", "counter",
		 "SAMPLE commands sent to nodes (round-robin sampling)", emit_total),
	  .total = total_cmds },
	{ FAMILY("vnoise_collect_command_errors_total", "counter",
		 "SAMPLE commands that could not be sent", emit_total),
	  .total = total_cmd_errors },
	{ FAMILY("vnoise_collect_nodes", "gauge", "Nodes known", emit_total),
	  .total = total_nodes },
	{ FAMILY("vnoise_job_spatial_cv", "gauge",
		 "Mean coefficient of variation between nodes per interval", emit_spatial_cv) },
	{ FAMILY("vnoise_job_info", "gauge", "A job's id and the name given to the collector",
		 emit_job_info) },
	{ FAMILY("vnoise_job_slot", "gauge", "Current round-robin slot of the job",
		 emit_job_slot) },
	{ FAMILY("vnoise_node_datagrams_total", "counter", "Datagrams used, per node",
		 emit_node_u64),
	  .node_u64 = node_datagrams },
	{ FAMILY("vnoise_node_lost_datagrams_total", "counter",
		 "Datagrams of the node never received (sequence gaps)", emit_node_u64),
	  .node_u64 = node_lost },
	{ FAMILY("vnoise_node_intervals_total", "counter",
		 "Intervals reported, sampled (detailed) or from counters", emit_node_intervals) },
	{ FAMILY("vnoise_node_noise_seconds_total", "counter",
		 "Filtered noise of the node's ranks, all classes", emit_node_double),
	  .node_double = node_noise_s },
	{ FAMILY("vnoise_node_class_noise_seconds_total", "counter",
		 "Filtered noise of the node's ranks, by class", emit_node_classes) },
	{ FAMILY(
	    "vnoise_node_hypervisor_seconds_total", "counter",
	    "Hypervisor noise of the node's ranks, by class (from the guests' dispatch trace log)",
	    emit_node_hyp) },
	{ FAMILY("vnoise_node_compute_seconds_total", "counter", "Compute time of the node's ranks",
		 emit_node_double),
	  .node_double = node_compute_s },
	{ FAMILY("vnoise_node_source_noise_seconds_total", "counter",
		 "Noise of the node's sources (from sampled intervals): the first 8 by class and "
		 "name, the rest as other",
		 emit_node_sources) },
	{ FAMILY("vnoise_node_temporal_cv", "gauge",
		 "Coefficient of variation of the node's noise between intervals",
		 emit_node_double),
	  .node_double = node_temporal_cv },
	{ FAMILY("vnoise_node_mean_delay_seconds", "gauge",
		 "Mean compute time behind the fastest node of each interval", emit_node_double),
	  .node_double = node_delay_s },
	{ FAMILY("vnoise_node_slowest_total", "counter",
		 "Intervals in which the node was the slowest of its job", emit_node_u64),
	  .node_u64 = node_slowest },
	{ FAMILY("vnoise_node_slow_rank", "gauge",
		 "Place in the job's slow-node ranking (1 = slowest)", emit_slow_rank) },
	{ FAMILY("vnoise_node_sampled_slots_total", "counter",
		 "Round-robin slots in which the node was sampled", emit_node_u64),
	  .node_u64 = node_slots },
	{ FAMILY("vnoise_node_sampled", "gauge", "1 while the node is sampled", emit_node_u64),
	  .node_u64 = node_sampled },
	{ FAMILY("vnoise_node_excluded", "gauge",
		 "1 when the node was taken out of the rotation (it slows down when sampled)",
		 emit_node_u64),
	  .node_u64 = node_excluded },
};
#undef FAMILY

int clusteragg_render_prom(const struct clusteragg *cs, struct bufout *o)
{
	struct prom_ctx c = { .cs = cs, .o = o };

	clusteragg_stats(cs, &c.st);
	for (size_t k = 0; k < sizeof(prom_families) / sizeof(prom_families[0]); k++) {
		const struct prom_family *fam = &prom_families[k];
		int rc;

		promfmt_family(o, fam->name, fam->type, fam->help);
		rc = fam->emit(&c, fam);
		if (rc)
			return rc;
	}
	return bufout_result(o) < 0 ? -ENOSPC : 0;
}

/* ---- the report: one vnoise.collect/1 JSON object ---- */

/* A double rounded to decimals places (the precision the report has always had), as a JSON number. */
static void kv_fixed(struct json_writer *w, const char *key, double v, int decimals)
{
	double scale = pow(10, decimals);

	json_kv_double(w, key, nearbyint(v * scale) / scale);
}

static void json_head(struct json_writer *w, const struct clusteragg *cs)
{
	struct clusteragg_stats st;

	clusteragg_stats(cs, &st);
	json_kv_str(w, "schema", "vnoise.collect/1");
	json_kv_str(w, "version", version_string());
	json_key(w, "datagrams");
	json_obj_begin(w);
	json_kv_u64(w, "received", st.received);
	for (int r = 0; r < CS_RES_MAX; r++)
		json_kv_u64(w, clusteragg_res_name(r), st.dgrams[r]);
	json_kv_u64(w, "lost", st.lost);
	json_obj_end(w);
	json_key(w, "commands");
	json_obj_begin(w);
	json_kv_u64(w, "sent", st.cmds_sent);
	json_kv_u64(w, "errors", st.cmd_errors);
	json_obj_end(w);
}

static void json_ranking(struct json_writer *w, const struct clusteragg *cs, const struct job *jb)
{
	uint32_t *r = ranking(cs, jb);

	json_key(w, "ranking");
	json_arr_begin(w);
	for (uint32_t i = 0; r && i < jb->nnodes; i++) {
		const struct node *n = &cs->nodes[r[i]];

		json_obj_begin(w);
		json_kv_u64(w, "node", n->node_id);
		kv_fixed(w, "mean_delay_ns", mean_delay(n), 0);
		json_kv_u64(w, "slowest", n->slowest);
		json_kv_u64(w, "intervals", n->delay_n);
		/* how much of the node's noise the hypervisor caused (guest noise = noise_ns - this) */
		json_kv_u64(w, "noise_ns", n->noise_ns);
		json_kv_u64(w, "hypervisor_ns", node_hyp_ns(n));
		json_obj_end(w);
	}
	json_arr_end(w);
	free(r);
}

static void json_job(struct json_writer *w, const struct clusteragg *cs, const struct job *jb)
{
	char id[24];

	snprintf(id, sizeof(id), "%016" PRIx64, jb->job_id);
	json_obj_begin(w);
	json_kv_str(w, "job", jb->name); /* null when the collector was given no name */
	json_kv_str(w, "job_id", id);
	json_kv_u64(w, "nodes", jb->nnodes);
	json_kv_u64(w, "slots", jb->rotating ? jb->slot + 1 : 0);
	json_kv_str(w, "rotation",
		    jb->rotating == 0	? "waiting"
		    : jb->rotating == 1 ? "running"
					: "done");
	json_kv_u64(w, "intervals_compared", jb->intervals_closed);
	json_kv_u64(w, "late", jb->late);
	json_key(w, "spatial_cv");
	json_obj_begin(w);
	kv_fixed(w, "compute", jb->spatial_compute.mean, 6);
	kv_fixed(w, "noise", jb->spatial_noise.mean, 6);
	json_obj_end(w);
	json_ranking(w, cs, jb);
	json_obj_end(w);
}

/* The node's identity, sequence accounting and totals. */
static void json_node_counts(struct json_writer *w, const struct node *n)
{
	char id[24], addr[64] = "";

	snprintf(id, sizeof(id), "%016" PRIx64, n->job_id);
	if (n->addrlen)
		parse_sockaddr_fmt((const struct sockaddr *)&n->addr, addr, sizeof(addr));
	json_kv_u64(w, "node", n->node_id);
	json_kv_str(w, "job_id", id);
	json_kv_u64(w, "session", n->seq.session_id);
	json_kv_str(w, "addr", addr);
	json_kv_bool(w, "registered", n->registered);
	json_kv_u64(w, "datagrams", n->datagrams);
	json_kv_u64(w, "lost", n->seq.lost);
	json_kv_u64(w, "late", n->seq.late);
	json_kv_u64(w, "duplicate", n->seq.dup);
	json_kv_u64(w, "stale", n->seq.stale);
	json_kv_u64(w, "restarts", n->seq.restarts);
	json_kv_u64(w, "records", n->records);
	json_key(w, "intervals");
	json_obj_begin(w);
	json_kv_u64(w, "sampled", n->intervals[0]);
	json_kv_u64(w, "counters", n->intervals[1]);
	json_obj_end(w);
	json_kv_u64(w, "noise_ns", n->noise_ns);
	json_kv_u64(w, "compute_ns", n->compute_ns);
	json_key(w, "class_ns");
	json_obj_begin(w);
	for (int c = 1; c < VN_CLASS_MAX; c++)
		json_kv_u64(w, classes_guest_name(c), n->class_ns[c]);
	json_obj_end(w);
	json_kv_u64(w, "hypervisor_total_ns", node_hyp_ns(n));
	json_key(w, "hypervisor_ns");
	json_obj_begin(w);
	for (int c = VN_REPORT_CLS_HYP_BASE; c < VN_REPORT_CLS_MAX; c++)
		json_kv_u64(w, datagram_class_name(c), n->class_ns[c]);
	json_obj_end(w);
}

/* The node's variation, delay and sampling figures. */
static void json_node_figures(struct json_writer *w, const struct node *n)
{
	json_key(w, "temporal_cv");
	json_obj_begin(w);
	kv_fixed(w, "noise", welford_cv(&n->temporal_noise), 6);
	kv_fixed(w, "compute", welford_cv(&n->temporal_compute), 6);
	json_obj_end(w);
	kv_fixed(w, "mean_delay_ns", mean_delay(n), 0);
	json_kv_u64(w, "slowest", n->slowest);
	json_kv_u64(w, "slots_sampled", n->slots_sampled);
	json_kv_u64(w, "commands", n->cmds_sent);
	json_kv_bool(w, "excluded", n->excluded);
	json_key(w, "compute_mean_ns");
	json_obj_begin(w);
	kv_fixed(w, "sampled", n->cmp_sampled.mean, 0);
	kv_fixed(w, "counters", n->cmp_base.mean, 0);
	json_obj_end(w);
	json_key(w, "compute_median_ns");
	json_obj_begin(w);
	kv_fixed(w, "sampled", recent_median(n, 0), 0);
	kv_fixed(w, "counters", recent_median(n, 1), 0);
	json_obj_end(w);
	kv_fixed(w, "excluded_ratio", n->excluded_ratio, 3);
}

/* The node's largest sources (names come from the node: the writer escapes them) and its timeline. */
static void json_node_detail(struct json_writer *w, const struct node *n)
{
	json_key(w, "sources");
	json_arr_begin(w);
	for (int s = 0; s < CS_SRC; s++) {
		if (!n->src[s].count)
			continue;
		json_obj_begin(w);
		json_kv_str(w, "class", datagram_class_name(n->src[s].cls));
		json_kv_u64(w, "id", n->src[s].src_id);
		json_key(w, "name");
		json_strn(w, n->src[s].name, strnlen(n->src[s].name, VN_REPORT_NAME_LEN));
		json_kv_u64(w, "noise_ns", n->src[s].ns);
		json_kv_u64(w, "count", n->src[s].count);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_kv_u64(w, "sources_other_ns", n->src_other_ns);
	json_key(w, "timeline");
	json_arr_begin(w);
	for (uint64_t t = n->tl_n > CS_TL ? n->tl_n - CS_TL : 0; t < n->tl_n; t++) {
		const struct tl_ent *e = &n->tl[t % CS_TL];

		json_obj_begin(w);
		json_kv_u64(w, "interval", e->interval_id);
		json_kv_u64(w, "start_ns", e->start_ns);
		json_kv_u64(w, "end_ns", e->end_ns);
		json_kv_u64(w, "noise_ns", e->noise_ns);
		json_kv_u64(w, "compute_ns", e->compute_ns);
		json_kv_bool(w, "sampled", e->sampled);
		json_obj_end(w);
	}
	json_arr_end(w);
}

static int report_json(const struct clusteragg *cs, FILE *f)
{
	struct json_writer w;

	json_init(&w, f, 0);
	json_obj_begin(&w);
	json_head(&w, cs);
	json_key(&w, "jobs");
	json_arr_begin(&w);
	for (uint32_t j = 0; j < cs->njobs; j++)
		json_job(&w, cs, &cs->jobs[j]);
	json_arr_end(&w);
	json_key(&w, "nodes");
	json_arr_begin(&w);
	for (uint32_t i = 0; i < cs->nnodes; i++) {
		json_obj_begin(&w);
		json_node_counts(&w, &cs->nodes[i]);
		json_node_figures(&w, &cs->nodes[i]);
		json_node_detail(&w, &cs->nodes[i]);
		json_obj_end(&w);
	}
	json_arr_end(&w);
	json_obj_end(&w);
	return json_finish(&w);
}

static void report_text(const struct clusteragg *cs, FILE *f)
{
	struct clusteragg_stats st;

	clusteragg_stats(cs, &st);
	fprintf(f,
		"datagrams: %" PRIu64 " received, %" PRIu64 " used, %" PRIu64 " lost, %" PRIu64
		" failed authentication, %" PRIu64 " malformed, %" PRIu64 " duplicate, %" PRIu64
		" stale; %" PRIu64 " commands sent\n",
		st.received, st.dgrams[CS_OK], st.lost,
		st.dgrams[CS_BAD_MAC] + st.dgrams[CS_UNKNOWN_KEY], st.dgrams[CS_MALFORMED],
		st.dgrams[CS_DUP], st.dgrams[CS_STALE], st.cmds_sent);
	for (uint32_t j = 0; j < cs->njobs; j++) {
		const struct job *jb = &cs->jobs[j];
		uint32_t *r = ranking(cs, jb);

		fprintf(f,
			"\njob %s%s%016" PRIx64 "%s: %u nodes, %" PRIu64 " slots, %" PRIu64
			" intervals compared; spatial CV compute %.3f, noise %.3f\n",
			jb->name ? jb->name : "", jb->name ? " (" : "", jb->job_id,
			jb->name ? ")" : "", jb->nnodes, jb->rotating ? jb->slot + 1 : 0,
			jb->intervals_closed, jb->spatial_compute.mean, jb->spatial_noise.mean);
		fprintf(f, "%4s %10s %9s %9s %6s %6s %10s %10s %10s %8s %6s %5s %-8s %s\n", "rank",
			"node", "delay_us", "slowest", "s_ivs", "c_ivs", "noise_ms", "hyp_ms",
			"compute_ms", "temp_cv", "lost", "slots", "state", "top source");
		for (uint32_t i = 0; r && i < jb->nnodes; i++) {
			const struct node *n = &cs->nodes[r[i]];
			const struct src_ent *t = top_source(n);
			char ts[64] = "-";

			if (t)
				snprintf(ts, sizeof(ts), "%s:%.16s %.3f ms",
					 datagram_class_name(t->cls), t->name, t->ns / 1e6);
			fprintf(f,
				"%4u %10" PRIu64 " %9.1f %9" PRIu64 " %6" PRIu64 " %6" PRIu64
				" %10.3f %10.3f %10.3f %8.3f %6" PRIu64 " %5" PRIu64 " %-8s %s\n",
				i + 1, n->node_id, mean_delay(n) / 1e3, n->slowest, n->intervals[0],
				n->intervals[1], n->noise_ns / 1e6, node_hyp_ns(n) / 1e6,
				n->compute_ns / 1e6, welford_cv(&n->temporal_noise), n->seq.lost,
				n->slots_sampled,
				n->excluded		    ? "excluded"
				: sampled_now(cs, jb, r[i]) ? "sampled"
							    : "-",
				ts);
		}
		free(r);
	}
}

int clusteragg_report(const struct clusteragg *cs, FILE *f, int json)
{
	if (json)
		return report_json(cs, f);
	report_text(cs, f);
	return 0;
}

int clusteragg_node_info(const struct clusteragg *cs, uint32_t i, struct clusteragg_node_info *out)
{
	const struct node *n;

	if (i >= cs->nnodes)
		return -ENOENT;
	n = &cs->nodes[i];
	*out = (struct clusteragg_node_info){
		.node_id = n->node_id,
		.job_id = n->job_id,
		.session_id = n->seq.session_id,
		.datagrams = n->datagrams,
		.records = n->records,
		.lost = n->seq.lost,
		.late = n->seq.late,
		.dup = n->seq.dup,
		.stale = n->seq.stale,
		.restarts = n->seq.restarts,
		.intervals_sampled = n->intervals[0],
		.intervals_counters = n->intervals[1],
		.noise_ns = n->noise_ns,
		.compute_ns = n->compute_ns,
		.last_seen_ns = n->last_seen_ns,
		.registered = n->registered,
		.excluded = n->excluded,
		.addr = n->addr,
		.addrlen = n->addrlen,
	};
	return 0;
}

int clusteragg_job_info(const struct clusteragg *cs, uint32_t j, struct clusteragg_job_info *out)
{
	if (j >= cs->njobs)
		return -ENOENT;
	out->job_id = cs->jobs[j].job_id;
	out->name = cs->jobs[j].name;
	out->nodes = cs->jobs[j].nnodes;
	return 0;
}

void clusteragg_status(const struct clusteragg *cs, char *buf, size_t len)
{
	struct clusteragg_stats st;
	unsigned sampled = 0, excluded = 0;

	clusteragg_stats(cs, &st);
	for (uint32_t j = 0; j < cs->njobs; j++)
		sampled += cs->jobs[j].rotating == 1 ? cs->jobs[j].nsampled : 0;
	for (uint32_t i = 0; i < cs->nnodes; i++)
		excluded += (unsigned)cs->nodes[i].excluded;
	snprintf(buf, len,
		 "nodes %" PRIu64 " jobs %" PRIu64 " datagrams %" PRIu64 " used %" PRIu64
		 " lost %" PRIu64 " auth-failed %" PRIu64 " malformed %" PRIu64
		 " sampled-now %u excluded %u",
		 st.nodes, st.jobs, st.received, st.dgrams[CS_OK], st.lost,
		 st.dgrams[CS_BAD_MAC] + st.dgrams[CS_UNKNOWN_KEY], st.dgrams[CS_MALFORMED],
		 sampled, excluded);
}
