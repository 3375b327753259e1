/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/collect/query (`vnoise-host query`): the parser (defaults, the three questions and
 * their argument, options before and after them, rejects), the WHEN forms (now, -DURATION, @SECONDS, UTC
 * dates), job ids (names hashed as the nodes do, 16 hex digits as they are), and the ranking's SQL on a
 * store with compute times of known size: mean delay behind the fastest node, slowest counts, intervals
 * reported by one node only left out of the comparison, ties by node id, the time range and the job.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include "collect/query.h"
#include "collect/store.h"
#include "format/keyfile.h"

#define NOW 1800000000000000000ull

static char err[256];

static int parse(struct query_opts *o, ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;

	argv[argc++] = "query";
	va_start(ap, o);
	for (char *a; (a = va_arg(ap, char *)) && argc < 31;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return query_parse(argc, argv, NOW, o, err, sizeof(err));
}

START_TEST(test_parse)
{
	struct query_opts o;

	ck_assert_int_eq(parse(&o, "ranking", NULL), 0);
	ck_assert_int_eq(o.what, QUERY_RANKING);
	ck_assert_str_eq(o.store, "vnoise-collect.db");
	ck_assert_ptr_null(o.job);
	ck_assert_uint_eq(o.from_ns, 0);
	ck_assert_uint_eq(o.to_ns, 0);
	ck_assert_int_eq(o.top, 10);
	ck_assert_int_eq(parse(&o, "--store", "x.db", "-j", "ranking", "A", "--from", "-1h", NULL),
			 0);
	ck_assert_str_eq(o.store, "x.db");
	ck_assert_str_eq(o.job, "A");
	ck_assert_int_eq(o.json, 1);
	ck_assert_uint_eq(o.from_ns, NOW - 3600000000000ull);
	ck_assert_int_eq(parse(&o, "timeline", "42", "--to", "now", NULL), 0);
	ck_assert_int_eq(o.what, QUERY_TIMELINE);
	ck_assert_uint_eq(o.node_id, 42);
	ck_assert_uint_eq(o.to_ns, NOW);
	ck_assert_int_eq(parse(&o, "-n", "3", "causes", "0123456789abcdef", NULL), 0);
	ck_assert_int_eq(o.what, QUERY_CAUSES);
	ck_assert_int_eq(o.top, 3);
	ck_assert_int_eq(parse(&o, "--help", NULL), 1);
}
END_TEST

START_TEST(test_parse_rejects)
{
	struct query_opts o;
	static const struct {
		const char *a[6];
		const char *msg;
	} bad[] = {
		{ { NULL }, "what to ask" },
		{ { "slowest" }, "unknown query" },
		{ { "timeline" }, "want a node id" },
		{ { "timeline", "x1" }, "want a node id" },
		{ { "causes" }, "want a job" },
		{ { "ranking", "A", "B" }, "unexpected argument" },
		{ { "--from", "yesterday", "ranking" }, "is not a time" },
		{ { "--from", "now", "--to", "-1h", "ranking" }, "after --from" },
		{ { "-n", "0", "ranking" }, "top" },
		{ { "--cpus", "1", "ranking" }, "cpus" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(parse(&o, bad[i].a[0], bad[i].a[1], bad[i].a[2], bad[i].a[3],
				       bad[i].a[4], NULL),
				 -EINVAL);
		ck_assert_msg(strstr(err, bad[i].msg), "case %zu: '%s' lacks '%s'", i, err,
			      bad[i].msg);
	}
}
END_TEST

START_TEST(test_when)
{
	uint64_t t;

	ck_assert_int_eq(query_parse_when("now", NOW, &t), 0);
	ck_assert_uint_eq(t, NOW);
	ck_assert_int_eq(query_parse_when("-30m", NOW, &t), 0);
	ck_assert_uint_eq(t, NOW - 1800000000000ull);
	ck_assert_int_eq(query_parse_when("@1700000000", NOW, &t), 0);
	ck_assert_uint_eq(t, 1700000000000000000ull);
	ck_assert_int_eq(query_parse_when("2023-11-14T22:13:20", NOW, &t), 0);
	ck_assert_uint_eq(t, 1700000000000000000ull);
	ck_assert_int_eq(query_parse_when("2023-11-14T22:13:20Z", NOW, &t), 0);
	ck_assert_uint_eq(t, 1700000000000000000ull);
	ck_assert_int_eq(query_parse_when("2023-11-14 22:13", NOW, &t), 0);
	ck_assert_uint_eq(t, 1700000000000000000ull - 20000000000ull);
	ck_assert_int_eq(query_parse_when("2023-11-14", NOW, &t), 0);
	ck_assert_uint_eq(t, 1699920000000000000ull);
	static const char *const bad[] = { "",
					   "yesterday",
					   "-",
					   "-1x",
					   "@",
					   "@12a",
					   "2023-13-01",
					   "2023-11-14T25:00",
					   "2023-11-14T22:13:20+01",
					   "23-11-14",
					   "2023-11-14T22" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(query_parse_when(bad[i], NOW, &t) == -EINVAL, "'%s' accepted",
			      bad[i]);
}
END_TEST

START_TEST(test_job_id)
{
	ck_assert_uint_eq(query_job_id("A"), datagram_job_id("A"));
	ck_assert_uint_eq(query_job_id("79d56482d0ea9a55"), 0x79d56482d0ea9a55ull);
	ck_assert_uint_eq(query_job_id("79D56482D0EA9A55"), 0x79d56482d0ea9a55ull);
	ck_assert_uint_eq(query_job_id("79d56482d0ea9a5"), datagram_job_id("79d56482d0ea9a5"));
}
END_TEST

/* ---- the ranking's SQL on known compute times ---- */

static char tmpdir[64], path[128];
static struct keyfile kf;

static void add(struct store *s, uint64_t job, uint64_t node, uint64_t iv, uint64_t compute,
		uint64_t recv)
{
	struct datagram_buf b;
	struct datagram_meta m = { .kind = VN_REPORT_COUNTERS,
				   .key_id = 3,
				   .flags = VN_REPORT_F_LAST,
				   .node_id = node,
				   .session_id = 1,
				   .job_id = job,
				   .interval_id = iv,
				   .seq = iv,
				   .send_realtime_ns = 1000 + iv * 100,
				   .start_realtime_ns = 1000 + iv * 100,
				   .end_realtime_ns = 1000 + iv * 100 + 50 };
	struct vn_report_rec r = { .noise_ns = node, .compute_ns = compute, .kind = 1 };
	struct vn_report_rec h = { .noise_ns = 7,
				   .kind = 1,
				   .cls = VN_REPORT_CLS_HYP_BASE + VN_HCLASS_VMEXIT };
	struct datagram_view v;
	int len;

	ck_assert_int_eq(datagram_init(&b, &m), 0);
	ck_assert_int_eq(datagram_add(&b, &r), 0);
	ck_assert_int_eq(datagram_add(&b, &h), 0);
	len = datagram_seal(&b, kf.keys[0].key, kf.keys[0].len);
	ck_assert_int_gt(len, 0);
	ck_assert_int_eq(datagram_parse(b.data, (size_t)len, datagram_keytab_lookup, &kf.tab, &v),
			 0);
	ck_assert_int_eq(store_add(s, recv, NULL, 0, b.data, (size_t)len, &v), 0);
}

struct row {
	long long job, node, slowest, intervals, noise, hyp;
	double delay;
};

/* The ranking on [from, to) and job (0: all) into r; the number of rows. */
static int ranking(sqlite3 *db, uint64_t from, uint64_t to, uint64_t job, struct row *r, int max)
{
	sqlite3_stmt *q;
	int n = 0;

	ck_assert_int_eq(sqlite3_prepare_v2(db, query_ranking_sql, -1, &q, NULL), SQLITE_OK);
	sqlite3_bind_int64(q, 1, (sqlite3_int64)from);
	sqlite3_bind_int64(q, 2, (sqlite3_int64)to);
	if (job)
		sqlite3_bind_int64(q, 3, (sqlite3_int64)job);
	while (sqlite3_step(q) == SQLITE_ROW && n < max) {
		r[n] = (struct row){ sqlite3_column_int64(q, 0), sqlite3_column_int64(q, 1),
				     sqlite3_column_int64(q, 3), sqlite3_column_int64(q, 4),
				     sqlite3_column_int64(q, 5), sqlite3_column_int64(q, 6),
				     sqlite3_column_double(q, 2) };
		n++;
	}
	sqlite3_finalize(q);
	return n;
}

START_TEST(test_ranking_sql)
{
	struct store *s;
	struct row r[8];
	sqlite3 *db;
	int n;

	strcpy(tmpdir, "/tmp/check_query.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/q.db", tmpdir);
	ck_assert_int_eq(
	    keyfile_parse("3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c"
			  "1d1e1f\n",
			  &kf, err, sizeof(err)),
	    0);
	s = store_open(path, 0, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	/* job 5, interval 0: nodes 1 2 3 at 100 300 200; interval 1: 400 100 100 (a tie at the bottom);
	 * interval 2: node 3 alone (not compared); job 6 interval 0: node 9 alone */
	add(s, 5, 1, 0, 100, 10);
	add(s, 5, 2, 0, 300, 11);
	add(s, 5, 3, 0, 200, 12);
	add(s, 5, 1, 1, 400, 20);
	add(s, 5, 2, 1, 100, 21);
	add(s, 5, 3, 1, 100, 22);
	add(s, 5, 3, 2, 999, 30);
	add(s, 6, 9, 0, 50, 40);
	ck_assert_int_eq(store_commit(s), 0);
	db = (sqlite3 *)store_db(s);
	n = ranking(db, 0, INT64_MAX, 0, r, 8);
	ck_assert_int_eq(n, 4);
	/* node 1: delays 0, 300 -> 150, slowest once; node 2: 200, 0 -> 100, slowest once; node 3: 100, 0 */
	ck_assert_int_eq(r[0].node, 1);
	ck_assert(r[0].delay == 150);
	ck_assert_int_eq(r[0].slowest, 1);
	ck_assert_int_eq(r[0].intervals, 2);
	ck_assert_int_eq(r[1].node, 2);
	ck_assert(r[1].delay == 100);
	ck_assert_int_eq(r[1].slowest, 1);
	ck_assert_int_eq(r[2].node, 3);
	ck_assert(r[2].delay == 50);
	ck_assert_int_eq(r[2].slowest, 0);
	ck_assert_int_eq(r[2].intervals, 2);
	ck_assert_int_eq(r[2].noise,
			 9); /* 3 intervals of noise 3: the lone one counts in the totals */
	ck_assert_int_eq(r[2].hyp, 21);
	ck_assert_int_eq(r[3].job, 6);
	ck_assert_int_eq(r[3].node, 9);
	ck_assert(r[3].delay == 0);
	ck_assert_int_eq(r[3].intervals, 0);
	/* the range: interval 1 only (start 1100) */
	n = ranking(db, 1100, 1200, 5, r, 8);
	ck_assert_int_eq(n, 3);
	ck_assert_int_eq(r[0].node, 1);
	ck_assert(r[0].delay == 300);
	ck_assert_int_eq(r[1].node, 2); /* 2 and 3 tie at 0: by node id */
	ck_assert_int_eq(r[2].node, 3);
	/* one job */
	ck_assert_int_eq(ranking(db, 0, INT64_MAX, 6, r, 8), 1);
	ck_assert_int_eq(store_close(s), 0);
	snprintf(err, sizeof(err), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(err), 0);
}
END_TEST

static Suite *query_suite(void)
{
	Suite *s = suite_create("query");
	TCase *t = tcase_create("parse");

	tcase_add_test(t, test_parse);
	tcase_add_test(t, test_parse_rejects);
	tcase_add_test(t, test_when);
	tcase_add_test(t, test_job_id);
	suite_add_tcase(s, t);
	t = tcase_create("sql");
	tcase_add_test(t, test_ranking_sql);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(query_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
