/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for the collector engine's outputs (host/collect/clusterout): the exposition escapes the names of
 * sources and bounds their series, the JSON report is valid JSON (a strict RFC 8259 checker) whatever the
 * names nodes and the command line give.
 */
#include <check.h>
#include "check_main.h"
#include "clusteragg_check.h"

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

static Suite *clusterout_suite(void)
{
	Suite *s = suite_create("clusterout");
	TCase *t = tcase_create("collector");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_exposition_escapes_sources);
	tcase_add_test(t, test_exposition_sources_bounded);
	tcase_add_test(t, test_report_json_escapes_names);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return check_main(clusterout_suite());
}
