/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the collector's engine (host/collect/clusteragg) driven by the node module (guest/cluster/node),
 * with the network replaced by arrays: totals of many nodes equal what the nodes sent, every kind of bad
 * datagram is counted under its own reason, losses and duplicates, the bound on nodes, the slow-node ranking
 * and spatial variation, the hypervisor classes of datagram versions 1 and 2, and each node's hypervisor
 * time (JSON report and /metrics) equal to the sum of the interval splits it sent, class by class.
 * The same paths run for real over UDP in tests/integration/cluster.sh.
 */
#include <check.h>
#include "attrib/classes.h"
#include "check_main.h"
#include "clusteragg_check.h"
#include "export/promfmt_priv.h"

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

/*
 * M5: a replayed datagram of a node's old job is refused before it changes anything: the node stays in the
 * job it reports for now, and the old job keeps no node.
 */
START_TEST(test_replay_keeps_job)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct clusteragg_node_info ni;
	struct clusteragg_job_info ja, jb;
	uint8_t old[VN_REPORT_MAX_LEN];
	size_t oldlen;
	struct node n;
	struct sockaddr_in a = node_addr(1);

	node_init(&n, 1, "job-old");
	ck_assert_int_eq(node_hello(&n, 1), 0);
	send_iv(&n, 0, 2, 100, 10, 0);
	memcpy(old, up->d[up->n - 1], up->len[up->n - 1]);
	oldlen = up->len[up->n - 1];
	ck_assert_uint_eq(deliver(cs, 5), 2);
	n.cfg.job_id = datagram_job_id("job-new"); /* the node now works for another job */
	send_iv(&n, 1, 2, 100, 10, 0);
	ck_assert_uint_eq(deliver(cs, 6), 1);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.job_id, datagram_job_id("job-new"));
	/* the old job's datagram, replayed */
	ck_assert_int_eq(clusteragg_ingest(cs, old, oldlen, (struct sockaddr *)&a, sizeof(a), 7),
			 CS_DUP);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.job_id, datagram_job_id("job-new"));
	ck_assert_int_eq(clusteragg_job_info(cs, 0, &ja), 0);
	ck_assert_int_eq(clusteragg_job_info(cs, 1, &jb), 0);
	ck_assert_uint_eq(ja.job_id, datagram_job_id("job-old"));
	ck_assert_uint_eq(ja.nodes, 0);
	ck_assert_uint_eq(jb.nodes, 1);
	clusteragg_free(cs);
}
END_TEST

#define SEC 1000000000ull
#define T0 (1700000000ull * SEC) /* a CLOCK_REALTIME of the test's world */

/*
 * M6: a node that comes back behind its sequence is taken again within seconds, authenticated, with one
 * line: restarted with its clock stepped back (an older session), its VM restored from a snapshot (its
 * session behind the window). Replays stay refused: they were sealed before the newest datagram taken.
 */
START_TEST(test_session_resume)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct clusteragg_node_info ni;
	struct node ahead, right, snap;
	uint8_t old[VN_REPORT_MAX_LEN], first[VN_REPORT_MAX_LEN];
	size_t oldlen, firstlen;
	struct sockaddr_in a = node_addr(1);

	node_init(&ahead, 1, "job");
	ahead.cfg.session_id = T0 + 3600 * SEC; /* started with its clock an hour ahead */
	ck_assert_int_eq(hello_at(cs, &ahead, T0 + 3600 * SEC, T0, old, &oldlen), CS_OK);
	ck_assert_int_eq(hello_at(cs, &ahead, T0 + 3601 * SEC, T0 + SEC, NULL, NULL), CS_OK);
	/* restarted, its clock set right: an older session, not taken while the old one was live... */
	node_session(&right, 1, T0 + 2 * SEC);
	ck_assert_int_eq(hello_at(cs, &right, T0 + 2 * SEC, T0 + 2 * SEC, NULL, NULL), CS_STALE);
	/* ...nor sealed before the old one's seal times count for (their receipt + 5 s) */
	ck_assert_int_eq(hello_at(cs, &right, T0 + 5 * SEC, T0 + 5 * SEC, NULL, NULL), CS_STALE);
	ck_assert_int_eq(hello_at(cs, &right, T0 + 7 * SEC, T0 + 7 * SEC, NULL, NULL), CS_OK);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.session_id, T0 + 2 * SEC);
	ck_assert_uint_eq(ni.resumed, 1);
	ck_assert_uint_eq(ni.restarts, 1);
	ck_assert_uint_eq(ni.stale, 2);
	/* the old session's datagram replayed: a newer session, sealed before: refused, and nothing moves */
	ck_assert_int_eq(
	    clusteragg_ingest(cs, old, oldlen, (struct sockaddr *)&a, sizeof(a), T0 + 20 * SEC),
	    CS_STALE);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.session_id, T0 + 2 * SEC);
	ck_assert_int_eq(hello_at(cs, &right, T0 + 21 * SEC, T0 + 21 * SEC, NULL, NULL), CS_OK);

	/* its VM restored from a snapshot taken 100 datagrams ago: the same session, behind the window */
	snap = right;
	ck_assert_int_eq(hello_at(cs, &right, T0 + 22 * SEC, T0 + 22 * SEC, first, &firstlen),
			 CS_OK);
	for (uint64_t i = 1; i < 100; i++)
		ck_assert_int_eq(
		    hello_at(cs, &right, T0 + 22 * SEC + i, T0 + 22 * SEC + i, NULL, NULL), CS_OK);
	ck_assert_int_eq(hello_at(cs, &snap, T0 + 23 * SEC, T0 + 23 * SEC, NULL, NULL), CS_STALE);
	ck_assert_int_eq(hello_at(cs, &snap, T0 + 26 * SEC, T0 + 26 * SEC, NULL, NULL), CS_OK);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.resumed, 2);
	/* the snapshot's next datagrams go on as the session's; a replay of one before it is refused */
	ck_assert_int_eq(hello_at(cs, &snap, T0 + 27 * SEC, T0 + 27 * SEC, NULL, NULL), CS_OK);
	ck_assert_int_eq(
	    clusteragg_ingest(cs, first, firstlen, (struct sockaddr *)&a, sizeof(a), T0 + 40 * SEC),
	    CS_DUP);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.resumed, 2);
	ck_assert_uint_eq(ni.datagrams, 2 + 2 + 100 + 2);
	clusteragg_free(cs);
}
END_TEST

/*
 * M6: a forged session (a key holder's), however far ahead, locks its node out for at most
 * CS_LOCKOUT_MAX_NS (10 s) after the forger's last datagram; a session sealed in the future is refused.
 */
START_TEST(test_session_forged)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct clusteragg_node_info ni;
	struct node real, forger, first;
	uint8_t forged[VN_REPORT_MAX_LEN];
	size_t forgedlen;
	struct sockaddr_in a = node_addr(1);
	uint64_t t;

	node_session(&real, 1, T0);
	ck_assert_int_eq(hello_at(cs, &real, T0, T0, NULL, NULL), CS_OK);
	/* session 2^64-1 sealed at 2^64-1: from the future, refused */
	node_session(&forger, 1, UINT64_MAX);
	ck_assert_int_eq(hello_at(cs, &forger, UINT64_MAX, T0 + SEC, NULL, NULL), CS_STALE);
	ck_assert_int_eq(hello_at(cs, &real, T0 + SEC, T0 + SEC, NULL, NULL), CS_OK);
	/* sealed now: taken (a restart, as far as anyone can tell)... */
	ck_assert_int_eq(hello_at(cs, &forger, T0 + 2 * SEC, T0 + 2 * SEC, forged, &forgedlen),
			 CS_OK);
	/* ...until it has been quiet for 3 s: then the real node is taken again */
	t = taken_at(cs, &real, T0 + 2 * SEC + SEC / 2, SEC / 2, T0 + 2 * SEC + CS_LOCKOUT_MAX_NS);
	ck_assert_uint_ge(t, T0 + 5 * SEC);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.session_id, T0);
	/* the forged datagram replayed does not lock it out again */
	ck_assert_int_eq(clusteragg_ingest(cs, forged, forgedlen, (struct sockaddr *)&a, sizeof(a),
					   t + 10 * SEC),
			 CS_STALE);
	ck_assert_int_eq(hello_at(cs, &real, t + 11 * SEC, t + 11 * SEC, NULL, NULL), CS_OK);

	/* a node first seen under a forged session sealed far ahead: its seal time counts for 5 s */
	node_session(&forger, 2, UINT64_MAX);
	ck_assert_int_eq(hello_at(cs, &forger, UINT64_MAX, T0, NULL, NULL), CS_OK);
	node_session(&first, 2, T0);
	(void)taken_at(cs, &first, T0 + SEC / 2, SEC / 2, T0 + CS_LOCKOUT_MAX_NS);
	ck_assert_int_eq(clusteragg_node_info(cs, 1, &ni), 0);
	ck_assert_uint_eq(ni.session_id, T0);
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

static int events_jobs;
static void count_job_events(void *ctx, const char *line)
{
	(void)ctx;
	events_jobs += strstr(line, "--max-jobs") != NULL;
}

/*
 * Jobs are bounded (cfg.max_jobs): a new node of one job more, or a node moving to one, is refused
 * (too-many-jobs, said once a minute) and changes nothing; the jobs there are go on.
 */
START_TEST(test_too_many_jobs)
{
	struct clusteragg_cfg c = { .keys = &kf,
				    .max_nodes = 8,
				    .max_jobs = 2,
				    .send = wire_send,
				    .send_ctx = down,
				    .event = count_job_events };
	struct clusteragg *cs = clusteragg_new(&c);
	struct clusteragg_node_info ni;
	struct clusteragg_stats st;
	struct node n[4];

	ck_assert_ptr_nonnull(cs);
	events_jobs = 0;
	node_init(&n[0], 1, "a");
	node_init(&n[1], 2, "b");
	node_init(&n[2], 3, "c");
	node_init(&n[3], 4, "a");
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	ck_assert_uint_eq(deliver(cs, 5), 3); /* node 3 (job c) refused */
	n[0].cfg.job_id = datagram_job_id("d"); /* node 1 moves to a third job: refused, it stays */
	send_iv(&n[0], 0, 1, 100, 10, 0);
	ck_assert_uint_eq(deliver(cs, 6), 0);
	ck_assert_int_eq(clusteragg_node_info(cs, 0, &ni), 0);
	ck_assert_uint_eq(ni.job_id, datagram_job_id("a"));
	send_iv(&n[3], 0, 1, 100, 10, 0); /* the jobs there are go on */
	ck_assert_uint_eq(deliver(cs, 7), 1);
	clusteragg_stats(cs, &st);
	ck_assert_uint_eq(st.jobs, 2);
	ck_assert_uint_eq(st.nodes, 3);
	ck_assert_uint_eq(st.dgrams[CS_TOO_MANY_JOBS], 2);
	ck_assert_str_eq(clusteragg_res_name(CS_TOO_MANY_JOBS), "too-many-jobs");
	ck_assert_int_eq(events_jobs, 1);
	clusteragg_free(cs);
}
END_TEST

/* Hand every command on down to the node it is for; count the accepted ones. */
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

/*
 * Many intervals of four nodes, each rank's split into guest and hypervisor classes (the summary records of
 * its classes, the host causes beside them as sources, several datagrams per interval): per node and class
 * the collector's hypervisor time is the sum of the splits sent, the sources counted nowhere twice.
 */
START_TEST(test_hypervisor_sums)
{
	struct clusteragg *cs = store(0, 1, 0);
	struct node n[4];
	uint64_t want[4][VN_HCLASS_MAX] = { { 0 } }, seed = 12345;
	char *js, *p, line[256];

	for (int i = 0; i < 4; i++) {
		node_init(&n[i], (uint64_t)i + 1, "job-h");
		ck_assert_int_eq(node_hello(&n[i], 1), 0);
	}
	for (uint64_t iv = 0; iv < 25; iv++)
		for (int i = 0; i < 4; i++) {
			struct vn_report_rec r[24 * 7];
			size_t k = 0;

			for (uint32_t rank = 0; rank < 24; rank++) {
				uint64_t h[VN_HCLASS_MAX], g, tot = 0;

				for (int c = 0; c < VN_HCLASS_MAX; c++) {
					seed =
					    seed * 6364136223846793005ull + 1442695040888963407ull;
					h[c] = (seed >> 33) % 100000 * (uint64_t)(i + 1);
					tot += h[c];
				}
				g = 1000 + rank;
				r[k++] = (struct vn_report_rec){ .noise_ns = g + tot,
								 .compute_ns = 5000000,
								 .count = 1,
								 .id = rank,
								 .kind = VN_REPORT_REC_RANK };
				r[k++] = (struct vn_report_rec){ .noise_ns = g,
								 .count = 1,
								 .id = rank,
								 .kind = VN_REPORT_REC_RANK,
								 .cls = VN_CLASS_IRQ };
				for (int c = 0; c < VN_HCLASS_MAX; c++) {
					if (!h[c])
						continue;
					r[k++] = (struct vn_report_rec){
						.noise_ns = h[c],
						.count = 1,
						.id = rank,
						.kind = VN_REPORT_REC_RANK,
						.cls = (uint8_t)(VN_REPORT_CLS_HYP_BASE + c)
					};
					want[i][c] += h[c];
				}
				if (h[VN_HCLASS_HOST_PREEMPT]) /* its cause, as a source */
					r[k++] =
					    (struct vn_report_rec){ .noise_ns =
									h[VN_HCLASS_HOST_PREEMPT],
								    .count = 1,
								    .id = rank,
								    .src_id = 3,
								    .kind = VN_REPORT_REC_RANK,
								    .cls = VN_REPORT_CLS_HYP_BASE +
									   VN_HCLASS_HOST_PREEMPT,
								    .src_kind = VN_REPORT_SRC_HOST,
								    .name = "hog" };
			}
			ck_assert_int_eq(node_send(&n[i], VN_REPORT_INTERVAL, iv, 1000 + iv,
						   2000 + iv, r, k, 3000 + iv),
					 0);
		}
	ck_assert_uint_gt(deliver(cs, 5), 4 * 25 * 2); /* several datagrams per interval */
	clusteragg_close_all(cs);
	js = report(cs);
	ck_assert_msg(json_valid(js), "%.200s", js);
	p = render(cs);
	for (int i = 0; i < 4; i++) {
		uint64_t tot = 0;

		for (int c = 0; c < VN_HCLASS_MAX; c++)
			tot += want[i][c];
		snprintf(line, sizeof(line),
			 "\"hypervisor_total_ns\":%" PRIu64
			 ",\"hypervisor_ns\":{\"host_preempt\":%" PRIu64 ",\"host_wait\":%" PRIu64
			 ",\"vmexit\":%" PRIu64 ",\"host_irq\":%" PRIu64 "}",
			 tot, want[i][0], want[i][1], want[i][2], want[i][3]);
		ck_assert_msg(strstr(js, line), "node %d: want %s", i + 1, line);
		for (int c = 0; c < VN_HCLASS_MAX; c++) {
			char *at;
			double v;

			snprintf(
			    line, sizeof(line),
			    "vnoise_node_hypervisor_seconds_total{node=\"%d\",job=\"%016" PRIx64
			    "\",class=\"%s\"} ",
			    i + 1, datagram_job_id("job-h"), classes_hyp_name(c));
			at = strstr(p, line);
			ck_assert_msg(at, "missing %s", line);
			v = strtod(at + strlen(line), NULL);
			ck_assert_msg(v * 1e9 > (double)want[i][c] - 0.5 &&
					  v * 1e9 < (double)want[i][c] + 0.5,
				      "%s%g, want %" PRIu64 " ns", line, v, want[i][c]);
		}
	}
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
	tcase_add_test(t, test_replay_keeps_job);
	tcase_add_test(t, test_session_resume);
	tcase_add_test(t, test_session_forged);
	tcase_add_test(t, test_too_many_nodes);
	tcase_add_test(t, test_too_many_jobs);
	tcase_add_test(t, test_hypervisor_versions);
	tcase_add_test(t, test_hypervisor_sums);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(clusteragg_suite());
}
