/* SPDX-License-Identifier: MIT */
/* clusterstate: the engine's state as a blob and back (see clusterstate.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg_priv.h"
#include "collect/clusterstate.h"
#include "util/version.h"

#define CLUSTERSTATE_MAGIC "VNCSTATE"

/*
 * The blob: this header, the nodes (struct node, as in memory), then per job its struct job (pointers
 * not used), its node indexes, its sampled indexes and the nodes of each window entry.
 */
struct cstate_hdr {
	char magic[8];
	char layout
	    [120]; /* vnoise version and structure sizes: equal, or the blob is of another build */
	uint32_t nnodes, njobs;
	uint64_t last_cmd_seq;
	struct clusteragg_stats st;
};

static void layout(char *out, size_t len)
{
	snprintf(out, len, "vnoise %s; node %zu job %zu iv %zu stats %zu; %d %d %d %d",
		 version_string(), sizeof(struct node), sizeof(struct job), sizeof(struct iv_node),
		 sizeof(struct clusteragg_stats), CS_TL, CS_SRC, CS_WIN, CS_RECENT);
}

struct wbuf {
	char *p;
	size_t len, cap;
	int err;
};

static void put(struct wbuf *w, const void *src, size_t n)
{
	if (w->err || !n)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		char *q;

		while (cap < w->len + n)
			cap *= 2;
		q = realloc(w->p, cap);
		if (!q) {
			w->err = -ENOMEM;
			return;
		}
		w->p = q;
		w->cap = cap;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

int clusterstate_save(const struct clusteragg *cs, void **out, size_t *len)
{
	struct cstate_hdr h;
	struct wbuf w = { 0 };

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, CLUSTERSTATE_MAGIC, sizeof(h.magic));
	layout(h.layout, sizeof(h.layout));
	h.nnodes = cs->nnodes;
	h.njobs = cs->njobs;
	h.last_cmd_seq = cs->last_cmd_seq;
	h.st = cs->st;
	put(&w, &h, sizeof(h));
	put(&w, cs->nodes, (size_t)cs->nnodes * sizeof(*cs->nodes));
	for (uint32_t j = 0; j < cs->njobs; j++) {
		const struct job *jb = &cs->jobs[j];

		put(&w, jb, sizeof(*jb));
		put(&w, jb->nodes, (size_t)jb->nnodes * sizeof(*jb->nodes));
		put(&w, jb->sampled, (size_t)jb->nsampled * sizeof(*jb->sampled));
		for (int k = 0; k < CS_WIN; k++)
			put(&w, jb->win[k].v, (size_t)jb->win[k].n * sizeof(*jb->win[k].v));
	}
	if (w.err) {
		free(w.p);
		return w.err;
	}
	*out = w.p;
	*len = w.len;
	return 0;
}

struct rbuf {
	const char *p;
	size_t len, off;
};

/* n bytes of the blob into dst; -EBADMSG when it is shorter. */
static int get(struct rbuf *r, void *dst, size_t n)
{
	if (n > r->len - r->off)
		return -EBADMSG;
	memcpy(dst, r->p + r->off, n);
	r->off += n;
	return 0;
}

/* count uint32 of the blob, each < limit, into a new array of at least min_cap entries. */
static int get_idx(struct rbuf *r, uint32_t count, uint32_t min_cap, uint32_t limit, uint32_t **out)
{
	uint32_t cap = count > min_cap ? count : min_cap;

	*out = NULL;
	if ((uint64_t)count * sizeof(uint32_t) > r->len - r->off)
		return -EBADMSG;
	if (!cap)
		return 0;
	*out = calloc(cap, sizeof(uint32_t));
	if (!*out)
		return -ENOMEM;
	get(r, *out, (size_t)count * sizeof(uint32_t));
	for (uint32_t i = 0; i < count; i++)
		if ((*out)[i] >= limit)
			return -EBADMSG;
	return 0;
}

/* Job j of the blob into cs->jobs[j] (its arrays new); the nodes are loaded. */
static int load_job(struct clusteragg *cs, struct rbuf *r, uint32_t j)
{
	struct job *jb = &cs->jobs[j];
	int rc = get(r, jb, sizeof(*jb));
	uint32_t nsampled;

	jb->nodes = jb->sampled = NULL; /* the blob's pointers mean nothing here */
	for (int k = 0; k < CS_WIN; k++)
		jb->win[k].v = NULL;
	if (rc)
		return rc;
	jb->name = clusteragg_job_name(cs, jb->job_id);
	nsampled = jb->nsampled;
	if (jb->nnodes > cs->nnodes || jb->cursor > jb->nnodes || nsampled > jb->nnodes)
		return -EBADMSG;
	jb->cap = jb->nnodes;
	rc = get_idx(r, jb->nnodes, 0, cs->nnodes, &jb->nodes);
	for (uint32_t i = 0; !rc && i < jb->nnodes; i++)
		if (cs->nodes[jb->nodes[i]].job != j)
			rc = -EBADMSG;
	/* the rotation allocates cfg.sample_nodes entries: the current slot keeps at most that many */
	if (!rc)
		rc = get_idx(r, nsampled, cs->cfg.sample_nodes, cs->nnodes, &jb->sampled);
	if (nsampled > cs->cfg.sample_nodes)
		jb->nsampled = cs->cfg.sample_nodes;
	for (int k = 0; !rc && k < CS_WIN; k++) {
		struct iv *w = &jb->win[k];

		if ((uint64_t)w->n * sizeof(*w->v) > r->len - r->off)
			return -EBADMSG;
		w->cap = w->n;
		if (!w->n)
			continue;
		w->v = calloc(w->n, sizeof(*w->v));
		if (!w->v)
			return -ENOMEM;
		get(r, w->v, (size_t)w->n * sizeof(*w->v));
		for (uint32_t i = 0; i < w->n; i++)
			if (w->v[i].node >= cs->nnodes)
				return -EBADMSG;
	}
	return rc;
}

/* cs back to new: what a failed load allocated is freed. */
static void unload(struct clusteragg *cs)
{
	for (uint32_t j = 0; j < cs->jcap; j++) {
		free(cs->jobs[j].nodes);
		free(cs->jobs[j].sampled);
		for (int k = 0; k < CS_WIN; k++)
			free(cs->jobs[j].win[k].v);
	}
	free(cs->jobs);
	free(cs->nodes);
	cs->jobs = NULL;
	cs->nodes = NULL;
	cs->njobs = cs->jcap = cs->nnodes = cs->ncap = 0;
	cs->last_cmd_seq = 0;
	memset(&cs->st, 0, sizeof(cs->st));
	memset(cs->hash, 0, (size_t)cs->hcap * sizeof(*cs->hash));
}

int clusterstate_load(struct clusteragg *cs, const void *buf, size_t len)
{
	struct rbuf r = { buf, len, 0 };
	struct cstate_hdr h;
	char want[sizeof(h.layout)];
	int rc;

	if (cs->nnodes || cs->njobs || cs->st.received)
		return -EBUSY;
	if (get(&r, &h, sizeof(h)) || memcmp(h.magic, CLUSTERSTATE_MAGIC, sizeof(h.magic)))
		return -EBADMSG;
	layout(want, sizeof(want));
	if (strncmp(h.layout, want, sizeof(want)))
		return -ESTALE;
	if (h.nnodes > cs->cfg.max_nodes || (uint64_t)h.nnodes * sizeof(struct node) > len ||
	    (uint64_t)h.njobs * sizeof(struct job) > len || (h.nnodes && !h.njobs))
		return -EBADMSG;
	rc = -ENOMEM;
	cs->nodes = calloc(h.nnodes ? h.nnodes : 1, sizeof(*cs->nodes));
	cs->jobs = calloc(h.njobs ? h.njobs : 1, sizeof(*cs->jobs));
	if (!cs->nodes || !cs->jobs)
		goto out;
	cs->ncap = h.nnodes ? h.nnodes : 1;
	cs->jcap = h.njobs ? h.njobs : 1;
	cs->nnodes = h.nnodes;
	rc = get(&r, cs->nodes, (size_t)h.nnodes * sizeof(*cs->nodes));
	for (uint32_t i = 0; !rc && i < h.nnodes; i++) {
		struct node *n = &cs->nodes[i];

		if (n->job >= h.njobs || n->addrlen > sizeof(n->addr) || n->nexp > CS_SRC)
			rc = -EBADMSG;
	}
	if (!rc)
		rc = clusteragg_rehash(cs);
	for (uint32_t j = 0; !rc && j < h.njobs; j++) {
		rc = load_job(cs, &r, j);
		cs->njobs = j + 1;
	}
	if (!rc && r.off != len)
		rc = -EBADMSG;
	for (uint32_t i = 0; !rc && i < h.nnodes; i++)
		if (cs->jobs[cs->nodes[i].job].job_id != cs->nodes[i].job_id)
			rc = -EBADMSG;
	if (rc)
		goto out;
	cs->last_cmd_seq = h.last_cmd_seq;
	cs->st = h.st;
	cs->st.nodes = cs->nnodes;
	cs->st.jobs = cs->njobs;
	return 0;
out:
	unload(cs);
	return rc;
}
