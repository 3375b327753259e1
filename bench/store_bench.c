/* SPDX-License-Identifier: MIT */
/*
 * store_bench: the cost of the collector's SQLite store (host/collect/store).
 *  1. Inserts: store_add() of sealed, parsed report datagrams as the collector's receive loop calls it
 *     (the raw datagram row, the interval upsert, the cause rows), batched transactions, one thread:
 *     interval rows per second of CPU time (target >= 200 k), counters-only reports (no cause row) and
 *     sampled ones (4 cause rows each).
 *  2. Queries on a store of ROWS interval rows (default 10 M: NODES nodes of one job reporting every PERIOD
 *     seconds, back from now; generated with INSERT ... SELECT, not through store_add): the ranking of
 *     the last day (target < 1 s), of the whole store, a node's timeline of a day, a job's causes of a day.
 *  3. Durability: the inserts of 1. with the store's default (synchronous=FULL: the WAL is synced at each
 *     batch's commit) against synchronous=NORMAL (the store's old default: synced at checkpoints only)
 *     and NORMAL with a checkpoint after every batch.
 * Files under $TMPDIR (default /tmp), removed at the end unless -k.
 * With -G PATH, only the start-up bench's store is made (bench/store_startup.sh): ROWS sealed counters
 * datagrams of NODES nodes, one every PERIOD seconds back from now, with their interval rows, inserted
 * directly in one transaction in the store's schema (as a collector with no state snapshot left them).
 *
 * With -R PATH, the retention's steps on such a store (keeping its last 20 days): their time, the receive
 * loop's stall. With -i, parts 1 and 3 only.
 *
 *   store_bench [-n INSERTS] [-r ROWS] [-N NODES] [-p PERIOD_S] [-k] [-i] [-G PATH] [-R PATH]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <getopt.h>
#include <sqlite3.h>
#include "collect/query.h"
#include "collect/store.h"
#include "format/keyfile.h"
#include "util/parse.h"

#define S ((uint64_t)1000000000)
#define DAY (86400 * S)

static uint64_t clk(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static struct keyfile kf;

/* A sealed report of node/interval: a summary, 3 classes and, sampled, 4 sources. */
static size_t make(uint8_t *out, struct datagram_view *v, uint64_t node, uint64_t iv, int sampled)
{
	static const char *const names[] = { "kworker/0:1", "NET_RX", "virtio0-input",
					     "rcu_sched" };
	struct datagram_buf b;
	struct datagram_meta m = { .kind = sampled ? VN_REPORT_INTERVAL : VN_REPORT_COUNTERS,
				   .key_id = 3,
				   .flags = VN_REPORT_F_LAST,
				   .node_id = node,
				   .session_id = 1,
				   .job_id = 0x79d56482d0ea9a55ull,
				   .interval_id = iv,
				   .seq = iv,
				   .send_realtime_ns = 1700000000000000000ull + iv * S,
				   .start_realtime_ns = 1700000000000000000ull + iv * S,
				   .end_realtime_ns = 1700000000000000000ull + iv * S + S / 2 };
	struct vn_report_rec r = { .noise_ns = 1000 + node,
				   .compute_ns = 1000000 + (iv * 7919 + node * 104729) % 50000,
				   .count = 3,
				   .kind = VN_REPORT_REC_RANK };
	int len;

	if (datagram_init(&b, &m) || datagram_add(&b, &r))
		exit(1);
	for (int c = VN_CLASS_IRQ; c <= VN_CLASS_THREAD; c++) {
		struct vn_report_rec k = { .noise_ns = 300 + (uint64_t)c, .count = 1, .kind = 1 };

		k.cls = (uint8_t)c;
		if (datagram_add(&b, &k))
			exit(1);
	}
	for (int i = 0; sampled && i < 4; i++) {
		struct vn_report_rec k = { .noise_ns = 100 + (uint64_t)i, .count = 1, .kind = 1 };

		k.cls = i == 0 ? VN_CLASS_THREAD : i == 1 ? VN_CLASS_SOFTIRQ : VN_CLASS_IRQ;
		k.src_kind = i == 0   ? VN_REPORT_SRC_THREAD
			     : i == 1 ? VN_REPORT_SRC_SOFTIRQ
				      : VN_REPORT_SRC_IRQ;
		k.src_id = i == 1 ? 3 : (uint32_t)(10 + i);
		snprintf(k.name, sizeof(k.name), "%s", names[i]);
		if (datagram_add(&b, &k))
			exit(1);
	}
	len = datagram_seal(&b, kf.keys[0].key, kf.keys[0].len);
	memcpy(out, b.data, (size_t)len);
	if (datagram_parse(out, (size_t)len, datagram_keytab_lookup, &kf.tab, v))
		exit(1);
	return (size_t)len;
}

static void rm_db(const char *p)
{
	char w[300];

	unlink(p);
	snprintf(w, sizeof(w), "%s-wal", p);
	unlink(w);
	snprintf(w, sizeof(w), "%s-shm", p);
	unlink(w);
}

/* The durability of part 3: the store's default, its old one, the old one with a checkpoint a batch. */
enum { DUR_FULL, DUR_NORMAL, DUR_NORMAL_CKPT };
static const char *const dur_name[] = { "synchronous=FULL (default)", "synchronous=NORMAL (old)",
					"NORMAL + checkpoint a batch" };

/* Part 1 (and 3): n inserts, sampled or not, at durability dur; prints rows/s of CPU and of wall time. */
static void bench_insert(const char *dir, uint64_t n, int sampled, int dur)
{
	char path[256], err[256];
	struct store *s;
	static uint8_t d[1024][VN_REPORT_MAX_LEN];
	static struct datagram_view v[1024];
	static size_t len[1024];
	uint64_t c0, w0, c1, w1, stored = 0;

	snprintf(path, sizeof(path), "%s/store_bench_insert.db", dir);
	rm_db(path);
	s = store_open(path, 0, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	if (dur != DUR_FULL && sqlite3_exec((sqlite3 *)store_db(s), "PRAGMA synchronous = NORMAL",
					    NULL, NULL, NULL) != SQLITE_OK)
		exit(1);
	for (int i = 0; i < 1024; i++) /* 1024 nodes; the interval id is changed per round below */
		len[i] = make(d[i], &v[i], (uint64_t)i + 1, 0, sampled);
	c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
	w0 = clk(CLOCK_MONOTONIC);
	for (uint64_t k = 0; k < n; k++) {
		struct datagram_view *x = &v[k % 1024];

		x->hdr.interval_id =
		    k / 1024; /* a new interval row (the raw bytes are not re-sealed) */
		x->hdr.start_realtime_ns = 1700000000000000000ull + (k / 1024) * S;
		if (dur ==
		    DUR_NORMAL_CKPT) { /* the batch committed outside a transaction: checkpoint */
			struct store_stats st;

			if (store_tick(s, clk(CLOCK_MONOTONIC)))
				exit(1);
			store_get_stats(s, &st);
			if (st.stored != stored &&
			    sqlite3_wal_checkpoint_v2((sqlite3 *)store_db(s), NULL,
						      SQLITE_CHECKPOINT_PASSIVE, NULL,
						      NULL) != SQLITE_OK) {
				fprintf(stderr, "checkpoint: %s\n", sqlite3_errmsg(store_db(s)));
				exit(1);
			}
			stored = st.stored;
		}
		if (store_add(s, 1700000000000000000ull + k, NULL, 0, d[k % 1024], len[k % 1024],
			      x)) {
			fprintf(stderr, "store_add failed\n");
			exit(1);
		}
	}
	if (store_close(s)) {
		fprintf(stderr, "commit failed\n");
		exit(1);
	}
	c1 = clk(CLOCK_PROCESS_CPUTIME_ID);
	w1 = clk(CLOCK_MONOTONIC);
	printf("insert %-9s %9" PRIu64 " interval rows (%s), %s: %8.0f rows/s CPU, %8.0f rows/s"
	       " wall (target >= 200000)\n",
	       sampled ? "sampled" : "counters", n,
	       sampled ? "+ raw datagram + 4 cause rows each" : "+ raw datagram each",
	       dur_name[dur], (double)n * S / (double)(c1 - c0), (double)n * S / (double)(w1 - w0));
	rm_db(path);
}

/* Part 2's store: rows interval rows (and a cause row per 10), nodes nodes, one every period_s, to now. */
static void generate(sqlite3 *db, uint64_t rows, uint64_t nodes, uint64_t period_s, uint64_t end)
{
	char sql[2048];
	uint64_t ivs = rows / nodes, start = end - ivs * period_s * S;
	uint64_t t0 = clk(CLOCK_MONOTONIC);

	snprintf(
	    sql, sizeof(sql),
	    "BEGIN;"
	    "WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM i WHERE k < %" PRIu64
	    " - 1)"
	    " INSERT INTO interval SELECT 1 + k %% %" PRIu64 ", 1, k / %" PRIu64 ", 1,"
	    " %" PRIu64 " + (k / %" PRIu64 ") * %" PRIu64 ", %" PRIu64 " + (k / %" PRIu64
	    ") * %" PRIu64 " + 1000000, %" PRIu64 " + (k / %" PRIu64 ") * %" PRIu64
	    " + 2000000, 1, 1, 0, 1000000 + (k * 7919) %% 50000, 1000 + k %% 977, 0,"
	    " 0, 300, 300, 300, 0, 0, 0, 0, 0, 50, 0, 50 FROM i;"
	    "INSERT INTO job_interval SELECT job_id, interval_id, min(start_ns), count(*),"
	    " min(compute_ns), max(compute_ns), max(node_id) FROM interval GROUP BY 1, 2;"
	    "WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 10 FROM i WHERE k < %" PRIu64
	    " - 10)"
	    " INSERT INTO cause SELECT 1 + k %% %" PRIu64 ", 1, k / %" PRIu64 ", %" PRIu64
	    " + (k / %" PRIu64 ") * %" PRIu64 ", 'thread', 1, k %% 13,"
	    " 'kworker/' || (k %% 13), 100 + k %% 7, 1 FROM i;"
	    "COMMIT;",
	    rows, nodes, nodes, start, nodes, period_s * S, start, nodes, period_s * S, start,
	    nodes, period_s * S, rows, nodes, nodes, start, nodes, period_s * S);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "generate: %s\n", sqlite3_errmsg(db));
		exit(1);
	}
	printf("store: %" PRIu64 " interval rows (%" PRIu64 " nodes x %" PRIu64
	       " intervals of %" PRIu64 " s = %.1f days), %" PRIu64 " cause rows, made in %.1f s\n",
	       ivs * nodes, nodes, ivs, period_s, (double)(ivs * period_s) / 86400, rows / 10,
	       (double)(clk(CLOCK_MONOTONIC) - t0) / S);
}

/* Run sql (?1 from, ?2 to, ?3 x) to its end; the wall time in seconds and the rows in *n. */
static double timed(sqlite3 *db, const char *sql, uint64_t from, uint64_t to, int64_t x,
		    uint64_t *n)
{
	sqlite3_stmt *q;
	uint64_t t0 = clk(CLOCK_MONOTONIC);

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s\n", sqlite3_errmsg(db));
		exit(1);
	}
	sqlite3_bind_int64(q, 1, (sqlite3_int64)from);
	sqlite3_bind_int64(q, 2, (sqlite3_int64)to);
	if (x >= 0)
		sqlite3_bind_int64(q, 3, x);
	*n = 0;
	while (sqlite3_step(q) == SQLITE_ROW)
		(*n)++;
	sqlite3_finalize(q);
	return (double)(clk(CLOCK_MONOTONIC) - t0) / S;
}

/* Run sql on db or exit with its error. */
static void exec_or_die(sqlite3 *db, const char *sql)
{
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		fprintf(stderr, "%s: %s\n", sql, sqlite3_errmsg(db));
		exit(1);
	}
}

/*
 * -G: the start-up bench's store at path (made new): rows sealed counters datagrams, node 1 + k % nodes
 * reporting interval k / nodes (its seq) every period_s seconds back from now, each with its interval row,
 * then the job's intervals; one transaction, no state snapshot (a collector that never saved one).
 */
static void generate_datagrams(const char *path, uint64_t rows, uint64_t nodes, uint64_t period_s)
{
	static const char ins_d[] = "INSERT INTO datagram(recv_ns, src, data) VALUES(?1, NULL, ?2)";
	static const char ins_i[] =
	    "INSERT INTO interval VALUES(?1, ?2, ?3, 1, ?4, ?5, ?6, 1, 1, 0, ?7, ?8, 0, 0, ?9, 0,"
	    " ?9, 0, 0, 0, 0, 0, 0, 0, 0)";
	uint64_t ivs = rows / nodes, start = clk(CLOCK_REALTIME) - ivs * period_s * S;
	uint64_t t0 = clk(CLOCK_MONOTONIC);
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	sqlite3_stmt *qd, *qi;
	char err[256];
	struct store *s;
	sqlite3 *db;

	rm_db(path);
	s = store_open(path, 0, err, sizeof(err)); /* the schema */
	if (!s || store_close(s)) {
		fprintf(stderr, "%s\n", s ? "cannot close the new store" : err);
		exit(1);
	}
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		exit(1);
	exec_or_die(db, "PRAGMA synchronous = OFF");
	exec_or_die(db, "PRAGMA cache_size = -262144");
	if (sqlite3_prepare_v2(db, ins_d, -1, &qd, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, ins_i, -1, &qi, NULL) != SQLITE_OK) {
		fprintf(stderr, "generate: %s\n", sqlite3_errmsg(db));
		exit(1);
	}
	exec_or_die(db, "BEGIN");
	for (uint64_t k = 0; k < ivs * nodes; k++) {
		uint64_t node = 1 + k % nodes, iv = k / nodes;
		uint64_t recv = start + iv * period_s * S + node * 1000;
		size_t len = make(d, &v, node, iv, 0);

		sqlite3_bind_int64(qd, 1, (sqlite3_int64)recv);
		sqlite3_bind_blob(qd, 2, d, (int)len, SQLITE_STATIC);
		sqlite3_bind_int64(qi, 1, (sqlite3_int64)node);
		sqlite3_bind_int64(qi, 2, (sqlite3_int64)v.hdr.job_id);
		sqlite3_bind_int64(qi, 3, (sqlite3_int64)iv);
		sqlite3_bind_int64(qi, 4, (sqlite3_int64)v.hdr.start_realtime_ns);
		sqlite3_bind_int64(qi, 5, (sqlite3_int64)v.hdr.end_realtime_ns);
		sqlite3_bind_int64(qi, 6, (sqlite3_int64)recv);
		sqlite3_bind_int64(qi, 7, (sqlite3_int64)v.rec[0].compute_ns);
		sqlite3_bind_int64(qi, 8, (sqlite3_int64)v.rec[0].noise_ns);
		sqlite3_bind_int64(qi, 9, 300);
		if (sqlite3_step(qd) != SQLITE_DONE || sqlite3_step(qi) != SQLITE_DONE) {
			fprintf(stderr, "generate: %s\n", sqlite3_errmsg(db));
			exit(1);
		}
		sqlite3_reset(qd);
		sqlite3_reset(qi);
	}
	exec_or_die(db,
		    "INSERT INTO job_interval SELECT job_id, interval_id, min(start_ns), count(*),"
		    " min(compute_ns), max(compute_ns), max(node_id) FROM interval GROUP BY 1, 2");
	exec_or_die(db, "COMMIT");
	sqlite3_finalize(qd);
	sqlite3_finalize(qi);
	exec_or_die(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	sqlite3_close(db);
	printf("store %s: %" PRIu64 " datagram and interval rows (%" PRIu64 " nodes x %" PRIu64
	       " intervals of %" PRIu64 " s), made in %.1f s\n",
	       path, ivs * nodes, nodes, ivs, period_s, (double)(clk(CLOCK_MONOTONIC) - t0) / S);
}

/*
 * -R: on the store at path (one -G made), STEPS retention steps as the collector runs them (store_retain of
 * 1000 rows a table, then the commit) deleting what is older than keep_days: the time of a step (the
 * receive loop's stall), mean and worst, and the rows deleted per second.
 */
static void bench_retain(const char *path, uint64_t keep_days)
{
	enum { STEPS = 200 };
	char err[256];
	struct store *s = store_open(path, 0, err, sizeof(err));
	uint64_t cut = clk(CLOCK_REALTIME) - keep_days * DAY, sum = 0, worst = 0, rows = 0;
	int k;

	if (!s) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	for (k = 0; k < STEPS; k++) {
		uint64_t t0 = clk(CLOCK_MONOTONIC), dt;
		int64_t n = store_retain(s, cut, 1000);

		if (n < 0 || store_commit(s)) {
			fprintf(stderr, "retention step failed\n");
			exit(1);
		}
		dt = clk(CLOCK_MONOTONIC) - t0;
		sum += dt;
		worst = dt > worst ? dt : worst;
		rows += (uint64_t)n;
		if (!n)
			break;
	}
	printf("retention --retain %" PRIu64
	       "d on %s: %d steps of <= 1000 rows a table (with the commit):"
	       " %.2f ms mean, %.2f ms worst; %" PRIu64 " rows deleted, %.0f rows/s\n",
	       keep_days, path, k, (double)sum / k / 1e6, (double)worst / 1e6, rows,
	       (double)rows * S / (double)sum);
	store_close(s);
}

static void bench_query(const char *dir, uint64_t rows, uint64_t nodes, uint64_t period_s, int keep)
{
	char path[256], err[256];
	uint64_t end = clk(CLOCK_REALTIME), n;
	struct store *s;
	sqlite3 *db;
	double t;

	snprintf(path, sizeof(path), "%s/store_bench_10m.db", dir);
	rm_db(path);
	s = store_open(path, 0, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "%s\n", err);
		exit(1);
	}
	generate((sqlite3 *)store_db(s), rows, nodes, period_s, end);
	store_close(s);
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
		exit(1);
	timed(db, "SELECT count(*) FROM interval", 0, 0, -1, &n); /* warm the page cache */
	t = timed(db, query_ranking_sql, end - DAY, INT64_MAX, -1, &n);
	printf("query ranking, last day:      %7.3f s (%" PRIu64 " nodes ranked; target < 1 s)\n",
	       t, n);
	t = timed(db, query_ranking_sql, 0, INT64_MAX, -1, &n);
	printf("query ranking, whole store:   %7.3f s (%" PRIu64 " nodes ranked)\n", t, n);
	t = timed(db,
		  "SELECT i.* FROM job_interval AS j JOIN interval AS i ON i.job_id = j.job_id AND "
		  "i.interval_id = j.interval_id AND i.node_id = ?3 WHERE j.start_ns >= ?1 AND "
		  "j.start_ns < ?2 ORDER BY i.start_ns",
		  end - DAY, INT64_MAX, 7, &n);
	printf("query timeline, node, day:    %7.3f s (%" PRIu64 " intervals)\n", t, n);
	t = timed(
	    db,
	    "SELECT class, src_kind, src_id, name, sum(noise_ns) AS ns FROM cause WHERE job_id "
	    "= ?3 AND start_ns >= ?1 AND start_ns < ?2 GROUP BY 1, 2, 3, 4 ORDER BY ns DESC "
	    "LIMIT 10",
	    end - DAY, INT64_MAX, 1, &n);
	printf("query causes, job, day:       %7.3f s (%" PRIu64 " causes)\n", t, n);
	sqlite3_close(db);
	if (keep)
		printf("kept: %s (vnoise-host query --store %s ranking --from -24h)\n", path, path);
	else
		rm_db(path);
}

int main(int argc, char **argv)
{
	uint64_t n = 2000000, rows = 10000000, nodes = 128, period = 30;
	const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", *gen = NULL, *ret = NULL;
	char err[128];
	int c, keep = 0, inserts_only = 0;

	while ((c = getopt(argc, argv, "n:r:N:p:kiG:R:")) != -1) {
		uint64_t *dst = c == 'n' ? &n : c == 'r' ? &rows : c == 'N' ? &nodes : &period;

		if (c == 'i') {
			inserts_only = 1;
			continue;
		}
		if (c == 'R') {
			ret = optarg;
			continue;
		}
		if (c == 'k' || c == 'G') {
			keep = 1;
			gen = c == 'G' ? optarg : gen;
			continue;
		}
		if (c == '?' || parse_u64(optarg, dst) || !*dst) {
			fprintf(stderr, "usage: store_bench [-n INSERTS] [-r ROWS] [-N NODES] "
					"[-p PERIOD_S] [-k] [-i] [-G PATH] [-R PATH]\n");
			return 2;
		}
	}
	if (keyfile_parse("3 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n",
			  &kf, err, sizeof(err)))
		return 1;
	if (gen || ret) {
		if (gen)
			generate_datagrams(gen, rows, nodes, period);
		if (ret) /* keep 20 of the 27 days of the default store */
			bench_retain(ret, 20);
		return 0;
	}
	printf("# %s -n %" PRIu64 " -r %" PRIu64 " -N %" PRIu64 " -p %" PRIu64
	       " (SQLite %s, files in %s)\n",
	       argv[0], n, rows, nodes, period, sqlite3_libversion(), dir);
	bench_insert(dir, n, 0, DUR_FULL);
	bench_insert(dir, n / 2, 1, DUR_FULL);
	bench_insert(dir, n, 0, DUR_NORMAL);
	bench_insert(dir, n, 0, DUR_NORMAL_CKPT);
	if (inserts_only)
		return 0;
	bench_query(dir, rows, nodes, period, keep);
	return 0;
}
