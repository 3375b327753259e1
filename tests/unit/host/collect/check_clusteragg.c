/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the collector's engine (host/clusteragg) driven by the node module (shared/node), with the
 * network replaced by arrays: totals of many nodes equal what the nodes sent, every kind of bad datagram is
 * counted under its own reason, losses and duplicates, the round-robin rotation (fair share, commands the
 * nodes accept, the end after max_slots), taking a node that slows down while sampled out of the rotation,
 * the slow-node ranking and spatial variation, commands replayed/forged/for another node, the exposition.
 * The same paths run for real over UDP in tests/integration/cluster.sh.
 */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg.h"
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

static ssize_t wire_xmit(void *ctx, const void *buf, size_t len)
{
	struct wire *w = ctx;

	ck_assert_uint_lt(w->n, MAXD);
	memcpy(w->d[w->n], buf, len);
	w->len[w->n++] = len;
	return (ssize_t)len;
}

static int wire_send(void *ctx, const struct sockaddr *to, socklen_t tolen, const void *buf,
		     size_t len)
{
	struct wire *w = ctx;

	ck_assert_uint_eq(tolen, sizeof(struct sockaddr_in));
	memcpy(&down_to[w->n], to, sizeof(down_to[0]));
	return wire_xmit(ctx, buf, len) < 0 ? -EIO : 0;
}

static void setup(void)
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

static void teardown(void)
{
	free(up);
	free(down);
}

static struct sockaddr_in node_addr(uint64_t id)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(20000 + id)) };

	a.sin_addr.s_addr = htonl(0x7f000001);
	return a;
}

/* A node writing into up; session fixed so that tests are reproducible. */
static void node_init(struct node *n, uint64_t id, const char *job)
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

static struct clusteragg *store(uint64_t slot_ns, unsigned wait, uint64_t max_slots)
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
static unsigned deliver(struct clusteragg *cs, uint64_t t)
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

/* One interval of a node: nranks summary records with compute, and per-class records. */
static void send_iv(struct node *n, uint64_t iv, int nranks, uint64_t compute, uint64_t noise,
		    int sampled)
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

static char *render(struct clusteragg *cs)
{
	static char buf[1 << 20];
	struct bufout o = { buf, sizeof(buf), 0, 0 };

	ck_assert_int_eq(clusteragg_render_prom(cs, &o), 0);
	return buf;
}

static char *report(struct clusteragg *cs)
{
	static char buf[1 << 20];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	clusteragg_report(cs, f, 1);
	fclose(f);
	return buf;
}

START_TEST(test_totals_and_parts)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct node n[3];
	struct clusteragg_stats st;
	uint64_t sent = 0;
	char *js, want[128];

	for (int i = 0; i < 3; i++) {
		node_init(&n[i], (uint64_t)i + 1, "job-a");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	for (uint64_t iv = 0; iv < 10; iv++)
		for (int i = 0; i < 3; i++) /* 20 ranks = 40 records: 2 datagrams per interval */
			send_iv(&n[i], iv, 20, 1000 * (uint64_t)(i + 1), 10 + iv, 0);
	for (int i = 0; i < 3; i++)
		sent += n[i].st.datagrams;
	ck_assert_uint_eq(sent, 3 + 3 * 10 * 2);
	ck_assert_uint_eq(deliver(cs, 5), sent);
	clusteragg_close_all(cs);
	clusteragg_stats(cs, &st);
	ck_assert_uint_eq(st.nodes, 3);
	ck_assert_uint_eq(st.jobs, 1);
	ck_assert_uint_eq(st.lost, 0);
	js = report(cs);
	/* the version right after the schema, from the one place that has it */
	snprintf(want, sizeof(want), "{\"schema\":\"vnoise.collect/1\",\"version\":\"%s\",",
		 version_string());
	ck_assert_msg(!strncmp(js, want, strlen(want)), "head %.80s", js);
	for (int i = 0; i < 3; i++) {
		snprintf(want, sizeof(want),
			 "\"datagrams\":%" PRIu64 ",\"lost\":0,\"late\":0,\"duplicate\":0",
			 n[i].st.datagrams);
		ck_assert_ptr_nonnull(strstr(js, want));
		snprintf(want, sizeof(want),
			 "\"intervals\":{\"sampled\":0,\"counters\":10},\"noise_ns\":%" PRIu64
			 ",\"compute_ns\":%" PRIu64,
			 n[i].st.noise_ns, n[i].st.compute_ns);
		ck_assert_msg(strstr(js, want), "missing %s in %.300s", want, js);
	}
	/* the node's compute per interval is its slowest rank: node 3 is 2000 ns behind node 1 */
	ck_assert_ptr_nonnull(
	    strstr(js, "\"ranking\":[{\"node\":3,\"mean_delay_ns\":2000,\"slowest\":10"));
	clusteragg_free(cs);
}
END_TEST

START_TEST(test_bad_datagrams)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct node n, forger;
	struct clusteragg_stats st;
	struct sockaddr_in a = node_addr(1);
	uint8_t junk[100] = "hello there";

	node_init(&n, 1, "job");
	ck_assert_int_eq(node_hello(&n, 1), 0);
	send_iv(&n, 0, 2, 100, 10, 0);
	/* a duplicate of the interval, a forged one, one made with an unknown key id */
	memcpy(up->d[up->n], up->d[up->n - 1], up->len[up->n - 1]);
	up->len[up->n] = up->len[up->n - 1];
	up->n++;
	forger = n;
	forger.cfg.keys = &otherkf;
	send_iv(&forger, 1, 2, 100, 10, 0);
	((struct vn_report_hdr *)up->d[up->n - 1])->key_id = 99;
	send_iv(&forger, 2, 2, 100, 10, 0);
	ck_assert_uint_eq(deliver(cs, 5), 2);
	ck_assert_int_eq(
	    clusteragg_ingest(cs, junk, sizeof(junk), (struct sockaddr *)&a, sizeof(a), 6),
	    CS_NOT_REPORT);
	memcpy(junk, up->d, 4); /* right magic, then garbage */
	ck_assert_int_eq(
	    clusteragg_ingest(cs, junk, sizeof(junk), (struct sockaddr *)&a, sizeof(a), 6),
	    CS_VERSION);
	clusteragg_stats(cs, &st);
	ck_assert_uint_eq(st.received, 7);
	ck_assert_uint_eq(st.dgrams[CS_OK], 2);
	ck_assert_uint_eq(st.dgrams[CS_DUP], 1);
	ck_assert_uint_eq(st.dgrams[CS_BAD_MAC], 1);
	ck_assert_uint_eq(st.dgrams[CS_UNKNOWN_KEY], 1);
	ck_assert_uint_eq(st.dgrams[CS_NOT_REPORT], 1);
	ck_assert_uint_eq(st.dgrams[CS_VERSION], 1);
	/* the forged datagrams' seq (2, 3) were never used by the node, so nothing is lost yet */
	ck_assert_uint_eq(st.lost, 0);
	/* the node loses two datagrams: counted once the next one arrives */
	send_iv(&n, 1, 2, 100, 10, 0);
	send_iv(&n, 2, 2, 100, 10, 0);
	up->n = 0;
	send_iv(&n, 3, 2, 100, 10, 0);
	deliver(cs, 7);
	clusteragg_stats(cs, &st);
	ck_assert_uint_eq(st.lost, 2);
	clusteragg_free(cs);
}
END_TEST

START_TEST(test_too_many_nodes)
{
	struct clusteragg_cfg c = {
		.keys = &kf, .max_nodes = 2, .send = wire_send, .send_ctx = down
	};
	struct clusteragg *cs = clusteragg_new(&c);
	struct node n;
	struct clusteragg_stats st;

	ck_assert_ptr_nonnull(cs);
	for (int i = 0; i < 5; i++) {
		node_init(&n, (uint64_t)i + 1, "job");
		ck_assert_int_eq(node_hello(&n, 1), 0);
	}
	ck_assert_uint_eq(deliver(cs, 1), 2);
	clusteragg_stats(cs, &st);
	ck_assert_uint_eq(st.dgrams[CS_TOO_MANY_NODES], 3);
	clusteragg_free(cs);
}
END_TEST

/* Hand every command on down to the node it is for; count the accepted ones. */
static int take_commands(struct node *n, int nn, uint64_t mono)
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

START_TEST(test_rotation_fair)
{
	const uint64_t slot = 1000000000ull, t0 = 10 * slot;
	struct clusteragg *cs = store(slot, 8, 32);
	struct node n[8];
	int cmds = 0;

	for (int i = 0; i < 8; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
		if (i == 6) { /* the rotation waits for 8 nodes */
			deliver(cs, t0);
			clusteragg_tick(cs, t0);
			ck_assert_uint_eq(down->n, 0);
		}
	}
	deliver(cs, t0);
	for (uint64_t s = 0; s < 40; s++) {
		uint64_t t = t0 + s * slot;

		for (int i = 0; i < 8; i++) /* nodes stay alive */
			ck_assert_int_eq(node_hello(&n[i], t), 0);
		deliver(cs, t);
		clusteragg_tick(cs, t);
		cmds += take_commands(n, 8, t);
		/* exactly one node sampled during slots 0..31, none after */
		for (int i = 0, k = 0; i < 8; i++) {
			k += node_sampled(&n[i], t);
			if (i == 7)
				ck_assert_int_eq(k, s < 32 ? 1 : 0);
		}
	}
	ck_assert_int_eq(cmds, 32);
	for (int i = 0; i < 8; i++) {
		ck_assert_uint_eq(n[i].st.cmds, 4);
		ck_assert_uint_eq(n[i].st.leases, 4);
	}
	ck_assert_ptr_nonnull(strstr(render(cs), "vnoise_node_sampled_slots_total{node=\"8\","));
	clusteragg_free(cs);
}
END_TEST

START_TEST(test_exclusion)
{
	const uint64_t slot = 1000000000ull, t0 = 10 * slot;
	struct clusteragg *cs = store(slot, 4, 0);
	struct node n[4];
	uint64_t iv[4] = { 0 };
	int samples[4] = { 0 };

	for (int i = 0; i < 4; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	deliver(cs, t0);
	for (uint64_t s = 0; s < 16; s++) {
		uint64_t t = t0 + s * slot;

		for (int i = 0; i < 4; i++)
			ck_assert_int_eq(node_hello(&n[i], t), 0);
		deliver(cs, t);
		clusteragg_tick(cs, t);
		take_commands(n, 4, t);
		/* 5 intervals per slot; node 3 takes 50% longer while sampled */
		for (int k = 0; k < 5; k++)
			for (int i = 0; i < 4; i++) {
				int smp = node_sampled(&n[i], t + 1);

				samples[i] += smp && k == 0;
				send_iv(&n[i], iv[i]++, 1, i == 2 && smp ? 150000 : 100000 + k, 5,
					smp);
			}
		deliver(cs, t + slot / 2);
	}
	/* node 3 was sampled once, then never again; the other three share the other slots */
	ck_assert_int_eq(samples[2], 1);
	ck_assert_int_eq(samples[0] + samples[1] + samples[3], 15);
	ck_assert_ptr_nonnull(strstr(render(cs), "vnoise_node_excluded{node=\"3\",job=\""));
	ck_assert_ptr_nonnull(strstr(report(cs), "\"node\":3,"));
	ck_assert_msg(strstr(report(cs), "\"slots_sampled\":1,\"commands\":2,\"excluded\":true"),
		      "%s", strstr(report(cs), "\"node\":3,"));
	clusteragg_free(cs);
}
END_TEST

/* One long stall in a sampled interval (a hypervisor preemption) does not take a node out: medians. */
START_TEST(test_exclusion_ignores_one_stall)
{
	const uint64_t slot = 1000000000ull, t0 = 10 * slot;
	struct clusteragg *cs = store(slot, 2, 0);
	struct node n[2];
	uint64_t iv[2] = { 0 };

	for (int i = 0; i < 2; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	deliver(cs, t0);
	for (uint64_t s = 0; s < 6; s++) {
		uint64_t t = t0 + s * slot;

		for (int i = 0; i < 2; i++)
			ck_assert_int_eq(node_hello(&n[i], t), 0);
		deliver(cs, t);
		clusteragg_tick(cs, t);
		take_commands(n, 2, t);
		for (int k = 0; k < 5; k++)
			for (int i = 0; i < 2; i++) {
				int smp = node_sampled(&n[i], t + 1);

				send_iv(&n[i], iv[i]++, 1, smp && k == 2 ? 2000000 : 100000, 5,
					smp);
			}
		deliver(cs, t + slot / 2);
	}
	ck_assert_ptr_null(strstr(report(cs), "\"excluded\":true"));
	clusteragg_free(cs);
}
END_TEST

START_TEST(test_commands_checked)
{
	const uint64_t slot = 1000000000ull;
	struct clusteragg *cs = store(slot, 2, 0);
	struct node n[2], other;
	uint8_t saved[VN_REPORT_MAX_LEN];
	size_t len;

	for (int i = 0; i < 2; i++) {
		node_init(&n[i], (uint64_t)i + 1, "pool");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	deliver(cs, 5 * slot);
	clusteragg_tick(cs, 5 * slot);
	ck_assert_uint_eq(down->n, 1);
	memcpy(saved, down->d[0], len = down->len[0]);
	ck_assert_int_eq(ntohs(down_to[0].sin_port), 20001);
	/* for node 1: node 2 refuses it; node 1 takes it once, then refuses the replay */
	ck_assert_int_eq(node_cmd(&n[1], saved, len, 0), -ESRCH);
	ck_assert_int_eq(node_cmd(&n[0], saved, len, 0), 0);
	ck_assert(node_sampled(&n[0], slot - 1));
	ck_assert(!node_sampled(&n[0], slot));
	ck_assert_int_eq(node_cmd(&n[0], saved, len, 0), -EALREADY);
	/* a restarted node 1 (new session) refuses the old session's command */
	node_init(&other, 1, "pool");
	other.cfg.session_id = 5555;
	ck_assert_int_eq(node_cmd(&other, saved, len, 0), -ESRCH);
	/* corrupted, or made with another key */
	saved[40] ^= 1;
	ck_assert_int_eq(node_cmd(&n[0], saved, len, 0), -EKEYREJECTED);
	other = n[0];
	other.cfg.keys = &otherkf;
	saved[40] ^= 1;
	ck_assert_int_eq(node_cmd(&other, saved, len, 0), -EKEYREJECTED);
	ck_assert_uint_eq(n[0].st.cmds, 1);
	ck_assert_uint_eq(n[0].st.cmds_replayed, 1);
	ck_assert_uint_eq(n[0].st.cmds_bad, 1);
	ck_assert_uint_eq(n[1].st.cmds_foreign, 1);
	/* a command sent to the collector is authentic but not taken */
	ck_assert_int_eq(clusteragg_ingest(cs, saved, len, NULL, 0, 6 * slot), CS_WRONG_KIND);
	clusteragg_free(cs);
}
END_TEST

START_TEST(test_exposition_escapes_sources)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct node n;
	char *p;

	node_init(&n, 77, "job");
	ck_assert_int_eq(node_hello(&n, 1), 0);
	send_iv(&n, 0, 1, 100, 10, 1);
	deliver(cs, 5);
	p = render(cs);
	ck_assert_msg(strstr(p, "source=\"virtio\\\"0\\\\in\\n\"} "), "%s", p);
	ck_assert_ptr_nonnull(strstr(p, "vnoise_node_intervals_total{node=\"77\","));
	ck_assert_ptr_nonnull(strstr(p, "mode=\"sampled\"} 1\n"));
	ck_assert_ptr_nonnull(strstr(p, "vnoise_collect_datagrams_total{result=\"ok\"} 2\n"));
	ck_assert_msg(strstr(report(cs), "\"name\":\"virtio\\\"0\\\\in\\n\""), "%s", report(cs));
	clusteragg_free(cs);
}
END_TEST

/* One sampled interval of a node whose one rank names the source (irq id, name) with noise ns. */
static void send_src(struct node *n, uint64_t iv, uint32_t id, const char *name, uint64_t ns)
{
	struct vn_report_rec r[3] = {
		{ .noise_ns = ns, .compute_ns = 1000, .count = 1, .kind = VN_REPORT_REC_RANK },
		{ .noise_ns = ns, .count = 1, .kind = VN_REPORT_REC_RANK, .cls = VN_CLASS_IRQ },
	};

	r[2] = r[1];
	r[2].src_kind = VN_REPORT_SRC_IRQ;
	r[2].src_id = id;
	snprintf(r[2].name, sizeof(r[2].name), "%s", name);
	ck_assert_int_eq(
	    node_send(n, VN_REPORT_INTERVAL, iv, 1000 + iv, 2000 + iv, r, 3, 3000 + iv), 0);
}

/* The value of node 78's source series of this class and source name (-1: none). */
static double src_value(const char *p, const char *cls, const char *name)
{
	const char *fam = "vnoise_node_source_noise_seconds_total{node=\"78\"";
	char want[96];

	snprintf(want, sizeof(want), ",class=\"%s\",source=\"%s\"} ", cls, name);
	for (const char *q = strstr(p, fam); q; q = strstr(q + 1, fam)) {
		const char *c = strstr(q, ",class=\"");

		if (c && !strncmp(c, want, strlen(want)))
			return strtod(c + strlen(want), NULL);
	}
	return -1;
}

/*
 * /metrics' source series: the first 8 sources by (class, name) keep a series for the node's life (a
 * source with two ids is one series), every later one adds into class "other": bounded labels, counters
 * that never go down or vanish even when a later source is larger (the report's table keeps the largest).
 */
START_TEST(test_exposition_sources_bounded)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct node n;
	char name[16], *p;

	node_init(&n, 78, "job");
	ck_assert_int_eq(node_hello(&n, 1), 0);
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "src%d", i);
		send_src(&n, (uint64_t)i, 100 + (uint32_t)i, name, 1000000);
	}
	send_src(&n, 8, 200, "src0", 500000); /* src0 again under another id: the same series */
	deliver(cs, 5);
	p = render(cs);
	ck_assert_double_eq_tol(src_value(p, "irq", "src0"), 0.0015, 1e-9);
	ck_assert_double_eq_tol(src_value(p, "irq", "src7"), 0.001, 1e-9);
	ck_assert_double_eq(src_value(p, "other", "other"),
			    0); /* the table is full: other from 0 */
	send_src(&n, 9, 300, "big", 9000000); /* a 9th, larger than all: into other */
	send_src(&n, 10, 301, "big2", 1000000);
	deliver(cs, 6);
	p = render(cs);
	ck_assert_double_eq(src_value(p, "irq", "big"), -1);
	ck_assert_double_eq_tol(src_value(p, "other", "other"), 0.01, 1e-9);
	for (int i = 0; i < 8; i++) { /* still there, not lower */
		snprintf(name, sizeof(name), "src%d", i);
		ck_assert_double_ge(src_value(p, "irq", name), 0.001 - 1e-12);
	}
	ck_assert_msg(strstr(report(cs), "\"name\":\"big\""), "the report keeps the largest: %s",
		      report(cs));
	clusteragg_free(cs);
}
END_TEST

/* ---- a strict JSON checker (RFC 8259 syntax), for the report's escaping ---- */

static const char *js_value(const char *p, int depth);

static const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *js_string(const char *p)
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

static const char *js_number(const char *p)
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
static const char *js_members(const char *p, int depth, bool obj)
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

static const char *js_value(const char *p, int depth)
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
static bool json_valid(const char *doc)
{
	const char *end = js_value(doc, 0);

	return end && !*js_ws(end);
}

/* ---- hypervisor classes (datagram version 2) ---- */

/* One interval of a node in a DTL guest: a rank with guest noise, hypervisor noise and the host cause. */
static void send_hyp_iv(struct node *n, uint64_t iv)
{
	struct vn_report_rec r[5] = {
		{ .noise_ns = 420,
		  .compute_ns = 1000,
		  .count = 1,
		  .kind = VN_REPORT_REC_RANK,
		  .verdict = 1 /* noise */ },
		{ .noise_ns = 70, .count = 1, .kind = VN_REPORT_REC_RANK, .cls = VN_CLASS_THREAD },
		{ .noise_ns = 300,
		  .count = 1,
		  .kind = VN_REPORT_REC_RANK,
		  .cls = VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_PREEMPT },
		{ .noise_ns = 50,
		  .count = 1,
		  .kind = VN_REPORT_REC_RANK,
		  .cls = VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_WAIT },
		{ .noise_ns = 300,
		  .count = 1,
		  .src_id = 3,
		  .kind = VN_REPORT_REC_RANK,
		  .cls = VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_PREEMPT,
		  .src_kind = VN_REPORT_SRC_HOST,
		  .name = "hog" },
	};

	ck_assert_int_eq(
	    node_send(n, VN_REPORT_INTERVAL, iv, 1000 + iv, 2000 + iv, r, 5, 3000 + iv), 0);
}

START_TEST(test_hypervisor_versions)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct node a, b;
	struct datagram_buf d;
	struct datagram_meta m = { .kind = VN_REPORT_INTERVAL,
				   .key_id = 3,
				   .flags = VN_REPORT_F_LAST,
				   .node_id = 1,
				   .session_id = 1001,
				   .job_id = datagram_job_id("job"),
				   .interval_id = 9,
				   .seq = 100 };
	struct vn_report_rec hr = { .noise_ns = 5,
				    .kind = VN_REPORT_REC_RANK,
				    .cls = VN_REPORT_CLS_HYP_BASE + VN_HCLASS_VMEXIT };
	struct sockaddr_in addr = node_addr(1);
	char *p, *js;
	int len;

	node_init(&a, 1, "job");
	node_init(&b, 2, "job");
	ck_assert_int_eq(node_hello(&a, 1), 0);
	ck_assert_int_eq(node_hello(&b, 1), 0);
	/* a HELLO and a guest-only interval stay version 1: an old collector still reads them */
	ck_assert_uint_eq(((const struct vn_report_hdr *)up->d[0])->version, 1);
	send_iv(&b, 0, 1, 900, 10, 0);
	ck_assert_uint_eq(((const struct vn_report_hdr *)up->d[up->n - 1])->version, 1);
	send_hyp_iv(&a, 0);
	send_hyp_iv(&a, 1);
	ck_assert_uint_eq(((const struct vn_report_hdr *)up->d[up->n - 1])->version, 2);
	ck_assert_uint_eq(deliver(cs, 5), 5);

	/* a version 1 datagram carrying a hypervisor class is malformed, even with a good MAC */
	ck_assert_int_eq(datagram_init(&d, &m), 0);
	ck_assert_int_eq(datagram_add(&d, &hr), 0);
	ck_assert_uint_eq(d.hdr.version, 2);
	d.hdr.version = 1;
	len = datagram_seal(&d, kf.keys[0].key, kf.keys[0].len);
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(
	    clusteragg_ingest(cs, d.data, (size_t)len, (struct sockaddr *)&addr, sizeof(addr), 6),
	    CS_MALFORMED);
	/* version 3 is not known */
	d.hdr.version = 3;
	len = datagram_seal(&d, kf.keys[0].key, kf.keys[0].len);
	ck_assert_int_eq(
	    clusteragg_ingest(cs, d.data, (size_t)len, (struct sockaddr *)&addr, sizeof(addr), 6),
	    CS_VERSION);
	/* a hypervisor class on a CPU record, or the HOST source on a guest class or with idle: rejected */
	hr.kind = VN_REPORT_REC_CPU;
	ck_assert(!datagram_rec_ok(&hr));
	hr = (struct vn_report_rec){ .noise_ns = 1,
				     .kind = VN_REPORT_REC_RANK,
				     .cls = VN_CLASS_THREAD,
				     .src_kind = VN_REPORT_SRC_HOST,
				     .src_id = 3 };
	ck_assert(!datagram_rec_ok(&hr));
	hr.cls = VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_PREEMPT;
	ck_assert(datagram_rec_ok(&hr));
	hr.src_id = 5; /* idle is host_wait, never a host_preempt cause */
	ck_assert(!datagram_rec_ok(&hr));
	hr.src_id = 3;
	hr.cls = VN_REPORT_CLS_MAX;
	ck_assert(!datagram_rec_ok(&hr));
	ck_assert_str_eq(datagram_class_name(VN_REPORT_CLS_HYP_BASE + VN_HCLASS_HOST_IRQ),
			 "host_irq");
	ck_assert_str_eq(datagram_class_name(VN_CLASS_STEAL), "steal");
	ck_assert_str_eq(datagram_class_name(99), "?");

	/* totals: node 1 took 600 of host_preempt and 100 of host_wait, node 2 none */
	js = report(cs);
	ck_assert_msg(json_valid(js), "%s", js);
	ck_assert_msg(strstr(js,
			     "\"hypervisor_total_ns\":700,\"hypervisor_ns\":{\"host_preempt\":600,"
			     "\"host_wait\":100,\"vmexit\":0,\"host_irq\":0}"),
		      "%s", js);
	ck_assert_ptr_nonnull(strstr(js, "\"hypervisor_total_ns\":0,"));
	ck_assert_ptr_nonnull(
	    strstr(js, "\"class\":\"host_preempt\",\"id\":3,\"name\":\"hog\",\"noise_ns\":600"));
	/* the ranking shows each node's hypervisor share */
	ck_assert_ptr_nonnull(strstr(js, "\"noise_ns\":840,\"hypervisor_ns\":700}"));
	/* /metrics: one family by hypervisor class, a valid name; the host cause among the sources */
	p = render(cs);
	ck_assert(promfmt_name_ok("vnoise_node_hypervisor_seconds_total"));
	ck_assert_ptr_nonnull(strstr(p, "# TYPE vnoise_node_hypervisor_seconds_total counter\n"));
	ck_assert_msg(strstr(p, "vnoise_node_hypervisor_seconds_total{node=\"1\""), "%s", p);
	ck_assert_ptr_nonnull(strstr(p, "class=\"host_preempt\"} 6e-07\n"));
	ck_assert_ptr_nonnull(strstr(p, "class=\"host_wait\"} 1e-07\n"));
	ck_assert_ptr_nonnull(strstr(p, "class=\"host_preempt\",source=\"hog\"} 6e-07\n"));
	/* the guest classes' family is unchanged: no hypervisor class in it */
	ck_assert_ptr_null(strstr(p, "vnoise_node_class_noise_seconds_total{node=\"1\",job=\"job\","
				     "class=\"host_preempt\""));
	clusteragg_free(cs);
}
END_TEST

/*
 * Names from nodes (source comm) and from the command line (job name) holding '"', '\' and control bytes:
 * the collector's JSON report still parses, and keeps each name (escaped by the JSON writer).
 */
START_TEST(test_report_json_escapes_names)
{
	static const char *const job_names[] = { "q\"b\\s\x01\x1f\x7f end" };
	struct clusteragg_cfg c = {
		.keys = &kf,
		.sample_nodes = 1,
		.wait_nodes = 1,
		.exclude_ratio = 0.2,
		.exclude_min = 3,
		.max_nodes = 64,
		.send = wire_send,
		.send_ctx = down,
		.job_names = job_names,
		.njob_names = 1,
	};
	struct vn_report_rec r[2] = {
		{ .noise_ns = 5, .compute_ns = 100, .count = 1, .kind = VN_REPORT_REC_RANK },
		{ .noise_ns = 5,
		  .count = 1,
		  .kind = VN_REPORT_REC_RANK,
		  .cls = VN_CLASS_THREAD,
		  .src_kind = VN_REPORT_SRC_THREAD,
		  .src_id = 42 },
	};
	struct clusteragg *cs = clusteragg_new(&c);
	struct node n;
	char *js;

	ck_assert_ptr_nonnull(cs);
	/* 16 bytes, no NUL: quote, backslash, tab, newline, carriage return, 0x01, 0x1b, DEL */
	memcpy(r[1].name, "a\"b\\c\td\ne\rf\x01g\x1bh\x7f", VN_REPORT_NAME_LEN);
	node_init(&n, 5, job_names[0]);
	ck_assert_int_eq(node_hello(&n, 1), 0);
	ck_assert_int_eq(node_send(&n, VN_REPORT_INTERVAL, 0, 1000, 2000, r, 2, 3000), 0);
	ck_assert_uint_eq(deliver(cs, 5), 2);
	js = report(cs);
	ck_assert_msg(json_valid(js), "invalid JSON: %s", js);
	ck_assert_msg(strstr(js, "\"name\":\"a\\\"b\\\\c\\td\\ne\\rf\\u0001g\\u001bh\x7f\""),
		      "source name lost: %s", js);
	ck_assert_msg(strstr(js, "\"job\":\"q\\\"b\\\\s\\u0001\\u001f\x7f end\""),
		      "job name lost: %s", js);
	clusteragg_free(cs);
}
END_TEST

static Suite *clusteragg_suite(void)
{
	Suite *s = suite_create("clusteragg");
	TCase *t = tcase_create("collector");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_totals_and_parts);
	tcase_add_test(t, test_bad_datagrams);
	tcase_add_test(t, test_too_many_nodes);
	tcase_add_test(t, test_rotation_fair);
	tcase_add_test(t, test_exclusion);
	tcase_add_test(t, test_exclusion_ignores_one_stall);
	tcase_add_test(t, test_commands_checked);
	tcase_add_test(t, test_exposition_escapes_sources);
	tcase_add_test(t, test_exposition_sources_bounded);
	tcase_add_test(t, test_report_json_escapes_names);
	tcase_add_test(t, test_hypervisor_versions);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(clusteragg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
