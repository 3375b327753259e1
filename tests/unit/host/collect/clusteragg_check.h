/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the collector engine's suites (check_clusteragg, check_clusterrot, check_clusterout): nodes of
 * the real node module (guest/cluster/node) writing into the array `up` (node -> collector), the engine's
 * commands into `down` (collector -> nodes, with the address each went to); setup/teardown, store (an engine
 * with a given rotation), deliver (everything on up into the engine), send_iv (one interval of a node),
 * render and report (the exposition and the JSON report into a static buffer), take_commands (the nodes
 * read the commands sent to them) and json_valid (a strict JSON checker, RFC 8259 syntax).
 */
#ifndef VNOISE_TESTS_UNIT_HOST_COLLECT_CLUSTERAGG_CHECK_H
#define VNOISE_TESTS_UNIT_HOST_COLLECT_CLUSTERAGG_CHECK_H

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg.h"
#include "collect/clusterout.h"
#include "collect/clusterrot.h"
#include "util/version.h"
#include "format/keyfile.h"
#include "cluster/node.h"
#include "export/promfmt.h"

#define MAXD 4096

struct wire {
	uint8_t d[MAXD][VN_REPORT_MAX_LEN];
	size_t len[MAXD];
	size_t n;
};

static struct wire *up; /* node -> collector */
static struct wire *down; /* collector -> nodes */
static struct sockaddr_in down_to[MAXD];
static struct keyfile kf, otherkf;

static inline ssize_t wire_xmit(void *ctx, const void *buf, size_t len)
{
	struct wire *w = ctx;

	ck_assert_uint_lt(w->n, MAXD);
	memcpy(w->d[w->n], buf, len);
	w->len[w->n++] = len;
	return (ssize_t)len;
}

static inline int wire_send(void *ctx, const struct sockaddr *to, socklen_t tolen, const void *buf,
			    size_t len)
{
	struct wire *w = ctx;

	ck_assert_uint_eq(tolen, sizeof(struct sockaddr_in));
	memcpy(&down_to[w->n], to, sizeof(down_to[0]));
	return wire_xmit(ctx, buf, len) < 0 ? -EIO : 0;
}

static inline void setup(void)
{
	char err[128];

	up = calloc(1, sizeof(*up));
	down = calloc(1, sizeof(*down));
	ck_assert_int_eq(
	    keyfile_parse("3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
			  &kf, err, sizeof(err)),
	    0);
	ck_assert_int_eq(
	    keyfile_parse("3 ff0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
			  &otherkf, err, sizeof(err)),
	    0);
}

static inline void teardown(void)
{
	free(up);
	free(down);
}

static inline struct sockaddr_in node_addr(uint64_t id)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(20000 + id)) };

	a.sin_addr.s_addr = htonl(0x7f000001);
	return a;
}

/* A node writing into up; session fixed so that tests are reproducible. */
static inline void node_init(struct node *n, uint64_t id, const char *job)
{
	memset(n, 0, sizeof(*n));
	n->fd = -1;
	n->cfg.node_id = id;
	n->cfg.session_id = 1000 + id;
	n->cfg.job_id = datagram_job_id(job);
	n->cfg.keys = &kf;
	n->xmit = wire_xmit;
	n->xmit_ctx = up;
}

/* A node of job "job" under the given session id (its start time, as node_open makes it). */
static inline void node_session(struct node *n, uint64_t id, uint64_t session)
{
	node_init(n, id, "job");
	n->cfg.session_id = session;
}

static inline struct clusteragg *store(uint64_t slot_ns, unsigned wait, uint64_t max_slots)
{
	struct clusteragg_cfg c = {
		.keys = &kf,
		.slot_ns = slot_ns,
		.sample_nodes = 1,
		.wait_nodes = wait,
		.max_slots = max_slots,
		.exclude_ratio = 0.2,
		.exclude_min = 3,
		.max_nodes = 64,
		.send = wire_send,
		.send_ctx = down,
	};
	struct clusteragg *cs = clusteragg_new(&c);

	ck_assert_ptr_nonnull(cs);
	return cs;
}

/* Deliver everything on up to cs (at time t), from each datagram's node address; returns CS_OK count. */
static inline unsigned deliver(struct clusteragg *cs, uint64_t t)
{
	unsigned ok = 0;

	for (size_t i = 0; i < up->n; i++) {
		const struct vn_report_hdr *h = (const void *)up->d[i];
		struct sockaddr_in a = node_addr(up->len[i] >= 32 ? h->node_id : 0);

		ok += clusteragg_ingest(cs, up->d[i], up->len[i], (struct sockaddr *)&a, sizeof(a),
					t) == CS_OK;
	}
	up->n = 0;
	return ok;
}

/*
 * A HELLO of n sealed at send (its CLOCK_REALTIME) and received at recv: the engine's verdict (CS_*). The
 * datagram is copied to copy (with its length to *copylen) when copy is not NULL, for a replay.
 */
static inline int hello_at(struct clusteragg *cs, struct node *n, uint64_t send, uint64_t recv,
			   uint8_t *copy, size_t *copylen)
{
	struct sockaddr_in a = node_addr(n->cfg.node_id);

	ck_assert_int_eq(node_hello(n, send), 0);
	ck_assert_uint_eq(up->n, 1);
	up->n = 0;
	if (copy) {
		memcpy(copy, up->d[0], up->len[0]);
		*copylen = up->len[0];
	}
	return clusteragg_ingest(cs, up->d[0], up->len[0], (struct sockaddr *)&a, sizeof(a), recv);
}

/*
 * The first time from `from` on, in steps of step, at which n's HELLO (sealed and received then) is taken
 * (CS_OK); fails the test past until.
 */
static inline uint64_t taken_at(struct clusteragg *cs, struct node *n, uint64_t from, uint64_t step,
				uint64_t until)
{
	uint64_t t;

	for (t = from; hello_at(cs, n, t, t, NULL, NULL) != CS_OK; t += step)
		ck_assert_uint_le(t, until);
	return t;
}

/* One interval of a node: nranks summary records with compute, and per-class records. */
static inline void send_iv(struct node *n, uint64_t iv, int nranks, uint64_t compute,
			   uint64_t noise, int sampled)
{
	struct vn_report_rec r[64 * 3] = { 0 };
	size_t k = 0;

	for (int i = 0; i < nranks; i++) {
		r[k] = (struct vn_report_rec){ .noise_ns = noise,
					       .compute_ns = compute,
					       .count = 1,
					       .id = (uint32_t)i,
					       .kind = VN_REPORT_REC_RANK };
		k++;
		r[k] = (struct vn_report_rec){ .noise_ns = noise,
					       .count = 1,
					       .id = (uint32_t)i,
					       .kind = VN_REPORT_REC_RANK,
					       .cls = VN_CLASS_IRQ };
		k++;
		if (sampled) {
			r[k] = r[k - 1];
			r[k].src_kind = VN_REPORT_SRC_IRQ;
			r[k].src_id = 11;
			strcpy(r[k].name, "virtio\"0\\in\n");
			k++;
		}
	}
	ck_assert_int_eq(node_send(n, sampled ? VN_REPORT_INTERVAL : VN_REPORT_COUNTERS, iv,
				   1000 + iv, 2000 + iv, r, k, 3000 + iv),
			 0);
}

static inline char *render(struct clusteragg *cs)
{
	static char buf[1 << 20];
	struct bufout o = { buf, sizeof(buf), 0, 0 };

	ck_assert_int_eq(clusterout_prom(cs, &o), 0);
	return buf;
}

static inline char *report(struct clusteragg *cs)
{
	static char buf[1 << 20];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	clusterout_report(cs, f, 1, 0);
	fclose(f);
	return buf;
}

static inline int take_commands(struct node *n, int nn, uint64_t mono)
{
	int ok = 0;

	for (size_t i = 0; i < down->n; i++) {
		int id = ntohs(down_to[i].sin_port) - 20000;

		ck_assert_int_ge(id, 1);
		ck_assert_int_le(id, nn);
		ok += node_cmd(&n[id - 1], down->d[i], down->len[i], mono) == 0;
	}
	down->n = 0;
	return ok;
}

/* ---- a strict JSON checker (RFC 8259 syntax), for the report's escaping ---- */

static inline const char *js_value(const char *p, int depth);

static inline const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static inline const char *js_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	for (;;) {
		unsigned char c = (unsigned char)*p++;

		if (c == '"')
			return p;
		if (c < 0x20)
			return NULL; /* raw control bytes are not allowed in a JSON string */
		if (c != '\\')
			continue;
		c = (unsigned char)*p++;
		if (c == 'u') {
			for (int i = 0; i < 4; i++, p++)
				if (!strchr("0123456789abcdefABCDEF", *p) || !*p)
					return NULL;
		} else if (!c || !strchr("\"\\/bfnrt", c)) {
			return NULL;
		}
	}
}

static inline const char *js_number(const char *p)
{
	const char *q = p;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		if (*++p < '0' || *p > '9')
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (*p < '0' || *p > '9')
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p > q ? p : NULL;
}

/* Members of an object (obj) or elements of an array, after the opening bracket. */
static inline const char *js_members(const char *p, int depth, bool obj)
{
	char close = obj ? '}' : ']';

	p = js_ws(p);
	if (*p == close)
		return p + 1;
	for (;;) {
		if (obj) {
			p = js_string(js_ws(p));
			if (!p || *(p = js_ws(p)) != ':')
				return NULL;
			p++;
		}
		p = js_value(p, depth + 1);
		if (!p)
			return NULL;
		p = js_ws(p);
		if (*p == close)
			return p + 1;
		if (*p++ != ',')
			return NULL;
	}
}

static inline const char *js_value(const char *p, int depth)
{
	if (depth > 64)
		return NULL;
	p = js_ws(p);
	switch (*p) {
	case '{':
		return js_members(p + 1, depth, true);
	case '[':
		return js_members(p + 1, depth, false);
	case '"':
		return js_string(p);
	case 't':
		return strncmp(p, "true", 4) ? NULL : p + 4;
	case 'f':
		return strncmp(p, "false", 5) ? NULL : p + 5;
	case 'n':
		return strncmp(p, "null", 4) ? NULL : p + 4;
	default:
		return js_number(p);
	}
}

/* One JSON document, then only white space. */
static inline bool json_valid(const char *doc)
{
	const char *end = js_value(doc, 0);

	return end && !*js_ws(end);
}

#endif
