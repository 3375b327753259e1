/* SPDX-License-Identifier: MIT */
/*
 * clusteragg: the collector's engine (see clusteragg.h). Nodes live in one array, found through an open
 * addressing hash by node id; a job lists its nodes' indexes sorted by node id (the rotation walks that
 * order) and keeps a window of CS_WIN open intervals, each with the compute and noise of the nodes that
 * reported it: an interval closes when its window entry is needed by a later one (or at close_all), and
 * only then feeds the spatial statistics and the nodes' delays.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg.h"
#include "collect/clusteragg_priv.h"

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
		[CS_TOO_MANY_JOBS] = "too-many-jobs",
	};
	return res >= 0 && res < CS_RES_MAX ? names[res] : "other";
}

void clusteragg_event(struct clusteragg *cs, const char *fmt, ...)
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
	if (!cs->cfg.max_jobs)
		cs->cfg.max_jobs = CS_MAX_JOBS_DEFAULT;
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

/* The index of job_id's job, made on first sight; -ENOSPC beyond cfg.max_jobs, -ENOMEM. */
static long job_get(struct clusteragg *cs, uint64_t job_id)
{
	for (uint32_t j = 0; j < cs->njobs; j++)
		if (cs->jobs[j].job_id == job_id)
			return j;
	if (cs->njobs >= cs->cfg.max_jobs)
		return -ENOSPC;
	if (grow((void **)&cs->jobs, &cs->jcap, cs->njobs + 1, sizeof(*cs->jobs)))
		return -ENOMEM;
	cs->jobs[cs->njobs].job_id = job_id;
	cs->jobs[cs->njobs].name = clusteragg_job_name(cs, job_id);
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

/* The node of an authenticated datagram, created on first sight (in the datagram's job); NULL with *res
 * CS_TOO_MANY_NODES or CS_TOO_MANY_JOBS when it cannot be. A known node's job is left as it is: only a
 * datagram that passes the anti-replay check may move it (node_follow_job). */
static struct node *node_get(struct clusteragg *cs, const struct vn_report_hdr *h, int *res)
{
	uint32_t slot;
	long idx = node_find(cs, h->node_id, &slot);
	long j;
	struct node *n;

	if (idx < 0) {
		*res = CS_TOO_MANY_NODES;
		if (cs->nnodes >= cs->cfg.max_nodes ||
		    grow((void **)&cs->nodes, &cs->ncap, cs->nnodes + 1, sizeof(*cs->nodes)))
			return NULL;
		j = job_get(cs, h->job_id);
		if (j < 0) {
			*res = j == -ENOSPC ? CS_TOO_MANY_JOBS : CS_TOO_MANY_NODES;
			return NULL;
		}
		idx = cs->nnodes;
		n = &cs->nodes[idx];
		memset(n, 0, sizeof(*n));
		n->node_id = h->node_id;
		n->job_id = h->job_id;
		n->job = (uint32_t)j;
		if (job_add_node(cs, (uint32_t)j, (uint32_t)idx))
			return NULL;
		*res = CS_OK;
		cs->hash[slot] = (uint32_t)idx + 1;
		cs->nnodes++;
		cs->st.nodes = cs->nnodes;
		return n;
	}
	return &cs->nodes[idx];
}

/* The node of index idx reports for job_id now (an authenticated datagram that passed the anti-replay
 * check says so): it leaves its old job. 0, or -ENOSPC (beyond cfg.max_jobs: it stays), -ENOMEM. */
static int node_follow_job(struct clusteragg *cs, uint32_t idx, uint64_t job_id)
{
	struct node *n = &cs->nodes[idx];
	long j;

	if (n->job_id == job_id)
		return 0;
	j = job_get(cs, job_id);
	if (j < 0)
		return (int)j;
	job_del_node(cs, n->job, idx);
	n = &cs->nodes[idx];
	if (job_add_node(cs, (uint32_t)j, idx))
		return -ENOMEM;
	clusteragg_event(cs, "node %" PRIu64 " moved to job %016" PRIx64, n->node_id, job_id);
	n->job_id = job_id;
	n->job = (uint32_t)j;
	n->cur_have = 0;
	n->inwin = 0; /* its entries in the old job's window stay there until closed */
	return 0;
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

enum { SC_TRACK, SC_RESUME, SC_REFUSE };

/* What a datagram does to its node's session (the rule above CS_RESUME_QUIET_NS in clusteragg.h). */
static int session_change(const struct node *n, const struct vn_report_hdr *h, uint64_t now_ns)
{
	uint64_t send = h->send_realtime_ns;
	int sealed_after = send > n->hi_send_ns && send <= now_ns + CS_FRESH_NS;

	if (!n->seq.started)
		return SC_TRACK;
	if (h->session_id > n->seq.session_id)
		return sealed_after ? SC_TRACK : SC_REFUSE;
	if (!datagram_seq_behind(&n->seq, h->session_id, h->seq))
		return SC_TRACK;
	if (sealed_after && send + CS_FRESH_NS >= now_ns && now_ns >= n->last_seen_ns &&
	    now_ns - n->last_seen_ns >= CS_RESUME_QUIET_NS)
		return SC_RESUME;
	return SC_TRACK; /* stale */
}

int clusteragg_ingest(struct clusteragg *cs, const void *buf, size_t len,
		      const struct sockaddr *src, socklen_t srclen, uint64_t now_ns)
{
	struct datagram_view v;
	struct node *n;
	uint64_t old_session, old_top, send;
	uint32_t idx;
	int rc, res, resumed = 0;

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
	n = node_get(cs, &v.hdr, &res);
	if (!n)
		goto out;
	idx = (uint32_t)(n - cs->nodes);
	old_session = n->seq.session_id;
	old_top = n->seq.top;
	switch (session_change(n, &v.hdr, now_ns)) {
	case SC_RESUME:
		datagram_seq_resume(&n->seq, v.hdr.session_id, v.hdr.seq);
		resumed = 1;
		break;
	case SC_REFUSE:
		datagram_seq_refuse(&n->seq);
		if (!n->refuse_said_ns || now_ns - n->refuse_said_ns >= CS_REFUSE_SAY_NS) {
			n->refuse_said_ns = now_ns;
			clusteragg_event(
			    cs,
			    "node %" PRIu64 ": session %" PRIu64
			    " refused: sealed %s (a replay, or the node's clock is off)",
			    n->node_id, (uint64_t)v.hdr.session_id,
			    v.hdr.send_realtime_ns > now_ns + CS_FRESH_NS
				? "more than " CS_FRESH_TEXT " after its receipt"
				: "before the newest datagram taken from the node");
		}
		break;
	default:
		datagram_seq_track(&n->seq, v.hdr.session_id, v.hdr.seq);
	}
	if (n->seq.last == DATAGRAM_SEQ_DUP || n->seq.last == DATAGRAM_SEQ_STALE) {
		res = n->seq.last == DATAGRAM_SEQ_DUP ? CS_DUP : CS_STALE;
		goto out;
	}
	rc = node_follow_job(cs, idx, v.hdr.job_id);
	if (rc) {
		res = rc == -ENOSPC ? CS_TOO_MANY_JOBS : CS_TOO_MANY_NODES;
		goto out;
	}
	n = &cs->nodes[idx];
	if (resumed) {
		clusteragg_event(cs,
				 "node %" PRIu64 " came back behind its sequence (session %" PRIu64
				 " seq %" PRIu64 " after session %" PRIu64 " seq %" PRIu64
				 "): taken as a restart",
				 n->node_id, (uint64_t)v.hdr.session_id, (uint64_t)v.hdr.seq,
				 old_session, old_top);
		n->cur_have = 0;
	} else if (n->seq.last == DATAGRAM_SEQ_RESTART) {
		clusteragg_event(
		    cs, "node %" PRIu64 " restarted (session %" PRIu64 " after %" PRIu64 ")",
		    n->node_id, (uint64_t)v.hdr.session_id, old_session);
		n->cur_have = 0;
	}
	n->last_seen_ns = now_ns;
	send = v.hdr.send_realtime_ns < now_ns + CS_FRESH_NS ? v.hdr.send_realtime_ns
							     : now_ns + CS_FRESH_NS;
	if (send > n->hi_send_ns)
		n->hi_send_ns = send;
	n->datagrams++;
	if (v.hdr.kind == VN_REPORT_HELLO) {
		if (!n->registered)
			clusteragg_event(cs, "node %" PRIu64 " registered for job %016" PRIx64,
					 n->node_id, n->job_id);
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
	if (res == CS_TOO_MANY_JOBS &&
	    (!cs->jobs_full_said_ns || now_ns - cs->jobs_full_said_ns >= CS_REFUSE_SAY_NS)) {
		cs->jobs_full_said_ns = now_ns;
		clusteragg_event(cs,
				 "job %016" PRIx64 " refused: %u jobs already (--max-jobs); its "
				 "datagrams are counted too-many-jobs",
				 (uint64_t)v.hdr.job_id, cs->cfg.max_jobs);
	}
	cs->st.dgrams[res]++;
	return res;
}

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
		.resumed = n->seq.resumed,
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

/* ---- for the state snapshot (clusterstate.c) ---- */

const char *clusteragg_job_name(const struct clusteragg *cs, uint64_t job_id)
{
	const char *name = NULL;

	for (size_t k = 0; k < cs->cfg.njob_names; k++)
		if (datagram_job_id(cs->cfg.job_names[k]) == job_id)
			name = cs->cfg.job_names[k];
	return name;
}

int clusteragg_rehash(struct clusteragg *cs)
{
	memset(cs->hash, 0, (size_t)cs->hcap * sizeof(*cs->hash));
	for (uint32_t i = 0; i < cs->nnodes; i++) {
		uint32_t slot;

		if (node_find(cs, cs->nodes[i].node_id, &slot) >= 0)
			return -EBADMSG;
		cs->hash[slot] = i + 1;
	}
	return 0;
}
