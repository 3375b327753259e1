/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/collect/store (the collector's SQLite store): the schema of a new store (tables,
 * user_version, meta, WAL), batched inserts (invisible to a reader until the commit, parts of an interval
 * merged: noise summed, compute the slowest rank's, classes and causes), reopening (the datagrams come back
 * verbatim, in order, with their sender), the accounting upserts, a newer schema, damaged and foreign
 * files (never changed), read-only opening, the import of a small capture of the old format through
 * `collect --store FILE.pcap`, and a full database (SQLite's max_page_count, as a full disk): the batch
 * rolled back and counted, whole datagrams only, storing going on once there is room again.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include "collect/store.h"
#include "collect/store_priv.h"
#include "collect/collect.h"
#include "collect/pcapio.h"
#include "format/keyfile.h"

#define KEYHEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

static char tmpdir[64], path[128];
static struct keyfile kf;
static char err[512];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/check_store.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/s.db", tmpdir);
	ck_assert_int_eq(keyfile_parse("3 " KEYHEX "\n", &kf, err, sizeof(err)), 0);
}

static void teardown(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* A sealed report of node/interval/part with one summary record (noise, compute) and one IRQ source. */
static size_t make_report(uint8_t *out, struct datagram_view *v, uint64_t node, uint64_t iv,
			  unsigned part, int last, uint64_t noise, uint64_t compute)
{
	struct datagram_buf b;
	struct datagram_meta m = { .kind = VN_REPORT_INTERVAL,
				   .key_id = 3,
				   .part = (uint16_t)part,
				   .flags = last ? VN_REPORT_F_LAST : 0,
				   .node_id = node,
				   .session_id = 77,
				   .job_id =
				       0x8000000000000001ull, /* > INT64_MAX: stored as int64 */
				   .interval_id = iv,
				   .seq = iv * 4 + part,
				   .send_realtime_ns = 2000000000000ull + iv * 10000000ull,
				   .start_realtime_ns = 2000000000000ull + iv * 10000000ull,
				   .end_realtime_ns =
				       2000000000000ull + iv * 10000000ull + 9000000ull };
	struct vn_report_rec sum = { .noise_ns = noise,
				     .compute_ns = compute,
				     .count = 3,
				     .kind = VN_REPORT_REC_RANK,
				     .cls = VN_CLASS_NONE,
				     .verdict = (uint8_t)part };
	struct vn_report_rec irq = { .noise_ns = noise,
				     .count = 2,
				     .kind = VN_REPORT_REC_RANK,
				     .cls = VN_CLASS_IRQ,
				     .src_kind = VN_REPORT_SRC_NONE };
	struct vn_report_rec src = { .noise_ns = noise,
				     .count = 2,
				     .src_id = 11,
				     .kind = VN_REPORT_REC_RANK,
				     .cls = VN_CLASS_IRQ,
				     .src_kind = VN_REPORT_SRC_IRQ,
				     .name = "eth0" };
	int len;

	ck_assert_int_eq(datagram_init(&b, &m), 0);
	ck_assert_int_eq(datagram_add(&b, &sum), 0);
	ck_assert_int_eq(datagram_add(&b, &irq), 0);
	ck_assert_int_eq(datagram_add(&b, &src), 0);
	len = datagram_seal(&b, kf.keys[0].key, kf.keys[0].len);
	ck_assert_int_gt(len, 0);
	memcpy(out, b.data, (size_t)len);
	ck_assert_int_eq(datagram_parse(out, (size_t)len, datagram_keytab_lookup, &kf.tab, v), 0);
	return (size_t)len;
}

static struct sockaddr_in from(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(0x7f000001);
	return a;
}

/* The first column of sql on a separate connection (a reader), as int64. */
static long long sql1(const char *p, const char *sql)
{
	sqlite3 *db;
	sqlite3_stmt *q;
	long long v = -1;

	ck_assert_int_eq(sqlite3_open_v2(p, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &q, NULL) == SQLITE_OK, "%s: %s", sql,
		      sqlite3_errmsg(db));
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(db);
	return v;
}

static void write_file(const char *p, const void *b, size_t n)
{
	FILE *f = fopen(p, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(b, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

static int same_file(const char *a, const char *b)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "cmp -s %s %s", a, b);
	return system(cmd) == 0;
}

START_TEST(test_schema)
{
	struct store *s = store_open(path, 0, err, sizeof(err));

	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(store_probe(path), STORE_SQLITE);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sql1(path, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	ck_assert_int_eq(sql1(path, "SELECT value FROM meta WHERE key = 'schema'"),
			 STORE_SCHEMA_VERSION);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM meta WHERE key = 'vnoise_version'"), 1);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
				    "name IN ('datagram', 'interval', 'job_interval', 'cause', "
				    "'node', 'job', 'counter', 'meta')"),
			 8);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND "
				    "name IN ('job_interval_time', 'cause_job')"),
			 2);
	ck_assert_int_eq(sql1(path, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
	/* opened again: the schema is kept, not made twice */
	s = store_open(path, 0, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM meta"), 3);
}
END_TEST

START_TEST(test_batch_and_merge)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	struct sockaddr_in a = from(4000);
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	size_t n;

	ck_assert_ptr_nonnull(s);
	/* interval 5 of node 9 in two parts: noise adds, compute is the slowest part's */
	n = make_report(d, &v, 9, 5, 0, 0, 1000, 7000);
	ck_assert_int_eq(store_add(s, 111, (struct sockaddr *)&a, sizeof(a), d, n, &v), 0);
	n = make_report(d, &v, 9, 5, 1, 1, 500, 9000);
	ck_assert_int_eq(store_add(s, 112, (struct sockaddr *)&a, sizeof(a), d, n, &v), 0);
	/* a reader sees nothing before the batch is committed */
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM datagram"), 0);
	ck_assert_int_eq(store_tick(s, 0), 0); /* not old enough at "time 0": nothing happens */
	ck_assert_int_eq(store_commit(s), 0);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM datagram"), 2);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM interval"), 1);
	ck_assert_int_eq(sql1(path, "SELECT noise_ns FROM interval"), 1500);
	ck_assert_int_eq(sql1(path, "SELECT compute_ns FROM interval"), 9000);
	ck_assert_int_eq(sql1(path, "SELECT irq_ns FROM interval"), 1500);
	ck_assert_int_eq(sql1(path, "SELECT parts * 10 + last FROM interval"), 21);
	ck_assert_int_eq(sql1(path, "SELECT verdict FROM interval"), 1);
	ck_assert_int_eq(sql1(path, "SELECT sampled FROM interval"), 1);
	ck_assert_int_eq(sql1(path, "SELECT recv_ns FROM interval"), 111);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM interval WHERE job_id = "
				    "-9223372036854775807 AND node_id = 9 AND interval_id = 5"),
			 1);
	ck_assert_int_eq(sql1(path, "SELECT sum(noise_ns) FROM cause WHERE class = 'irq' AND "
				    "name = 'eth0' AND src_id = 11"),
			 1500);
	/* the accounting: one row per node, replaced at each snapshot */
	struct store_node sn = {
		.node_id = 9, .job_id = 1, .datagrams = 2, .lost = 1, .addr = "x"
	};

	ck_assert_int_eq(store_put_node(s, &sn), 0);
	sn.datagrams = 3;
	ck_assert_int_eq(store_put_node(s, &sn), 0);
	ck_assert_int_eq(store_put_job(s, 1, "A", 1), 0);
	ck_assert_int_eq(store_put_counter(s, "ok", 2), 0);
	ck_assert_int_eq(store_put_counter(s, "ok", 3), 0);
	ck_assert_int_eq(store_close(s), 0); /* commits */
	ck_assert_int_eq(sql1(path, "SELECT count(*) || datagrams || lost FROM node"), 131);
	ck_assert_int_eq(sql1(path, "SELECT value FROM counter WHERE name = 'ok'"), 3);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM job WHERE name = 'A' AND "
				    "job_hex = '0000000000000001'"),
			 1);
}
END_TEST

struct seen {
	int n;
	uint64_t t[8];
	size_t len[8];
	uint8_t d[8][VN_REPORT_MAX_LEN];
	uint16_t port[8];
};

static int on_dgram(void *ctx, uint64_t t, const struct sockaddr *src, socklen_t sl,
		    const void *buf, size_t len)
{
	struct seen *s = ctx;

	ck_assert_int_lt(s->n, 8);
	ck_assert_uint_eq(sl, sizeof(struct sockaddr_in));
	s->t[s->n] = t;
	s->len[s->n] = len;
	memcpy(s->d[s->n], buf, len);
	s->port[s->n] = ntohs(((const struct sockaddr_in *)src)->sin_port);
	s->n++;
	return s->n == 5 ? 42 : 0;
}

START_TEST(test_reopen_replay)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	uint8_t d[6][VN_REPORT_MAX_LEN];
	size_t len[6];
	struct datagram_view v;
	struct seen *seen = calloc(1, sizeof(*seen));

	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < 6; i++) {
		struct sockaddr_in a = from((uint16_t)(5000 + i));

		len[i] = make_report(d[i], &v, 1 + (uint64_t)i % 2, (uint64_t)i / 2, 0, 1, 10, 20);
		ck_assert_int_eq(store_add(s, 1000 + (uint64_t)i, (struct sockaddr *)&a, sizeof(a),
					   d[i], len[i], &v),
				 0);
	}
	ck_assert_int_eq(store_close(s), 0);
	s = store_open(path, 0, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(store_count(s, "datagram"), 6);
	ck_assert_int_eq(store_count(s, "interval"), 6);
	ck_assert_int_eq(store_replay(s, 0, on_dgram, seen), 42); /* the callback stops the walk */
	ck_assert_int_eq(seen->n, 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_uint_eq(seen->t[i], 1000 + (uint64_t)i);
		ck_assert_uint_eq(seen->port[i], 5000 + i);
		ck_assert_uint_eq(seen->len[i], len[i]);
		ck_assert_mem_eq(seen->d[i], d[i], len[i]);
	}
	ck_assert_int_eq(store_close(s), 0);
	/* read-only: the same rows, never a write */
	s = store_open(path, 1, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(store_count(s, "datagram"), 6);
	ck_assert_int_eq(store_count(s, "sqlite_schema"), -EINVAL);
	ck_assert_int_eq(store_close(s), 0);
	free(seen);
}
END_TEST

START_TEST(test_newer_schema)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	char cp[320];

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sqlite3_open(path, (sqlite3 **)&s), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec((sqlite3 *)s, "PRAGMA user_version = 3", 0, 0, 0), SQLITE_OK);
	sqlite3_close((sqlite3 *)s);
	snprintf(cp, sizeof(cp), "cp %s %s.orig", path, path);
	ck_assert_int_eq(system(cp), 0);
	for (int ro = 0; ro < 2; ro++) {
		errno = 0;
		ck_assert_ptr_null(store_open(path, ro, err, sizeof(err)));
		ck_assert_int_eq(errno, EPROTO);
		ck_assert_ptr_nonnull(strstr(err, "newer"));
	}
	snprintf(cp, sizeof(cp), "%s.orig", path);
	ck_assert(same_file(path, cp));
}
END_TEST

START_TEST(test_damaged)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	uint8_t d[VN_REPORT_MAX_LEN], junk[16384 * 2];
	struct datagram_view v;
	char orig[256];
	int fd;

	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < 400; i++) { /* a few pages of rows */
		size_t n = make_report(d, &v, 1, (uint64_t)i, 0, 1, 10, 20);

		ck_assert_int_eq(store_add(s, 1, NULL, 0, d, n, &v), 0);
	}
	ck_assert_int_eq(store_close(s), 0);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 7919 + 13);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(lseek(fd, 0, SEEK_END), 16384 * 4); /* the junk goes past page 1 */
	ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), 16384 * 2), (ssize_t)sizeof(junk));
	close(fd);
	snprintf(orig, sizeof(orig), "%s.orig", path);
	snprintf((char *)junk, sizeof(junk), "cp %s %s", path, orig);
	ck_assert_int_eq(system((char *)junk), 0);
	errno = 0;
	ck_assert_ptr_null(store_open(path, 0, err, sizeof(err)));
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_msg(strstr(err, "damaged") && !strchr(err, '\n'), "%s", err);
	ck_assert(same_file(path, orig)); /* never repaired over, never truncated */
	/* the first page (the header and the schema) damaged */
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, junk, 4000, 100), 4000);
	close(fd);
	errno = 0;
	ck_assert_ptr_null(store_open(path, 0, err, sizeof(err)));
	ck_assert_msg(errno == EBADMSG, "%s", err);
	ck_assert_msg(strstr(err, "damaged") || strstr(err, "not a"), "%s", err);
	errno = 0;
	ck_assert_ptr_null(store_open(path, 1, err, sizeof(err)));
	ck_assert_msg(errno == EBADMSG, "%s", err);
	/* not a database; a capture (the old format); another program's database */
	write_file(path, "hello, this is not a database at all", 36);
	errno = 0;
	ck_assert_ptr_null(store_open(path, 0, err, sizeof(err)));
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "not a database"));
	write_file(path, "\xd4\xc3\xb2\xa1\x02\x00\x04\x00", 8);
	ck_assert_int_eq(store_probe(path), STORE_PCAP);
	ck_assert_ptr_null(store_open(path, 0, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "old format"));
	unlink(path);
	ck_assert_int_eq(sqlite3_open(path, (sqlite3 **)&s), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec((sqlite3 *)s, "CREATE TABLE t(x)", 0, 0, 0), SQLITE_OK);
	sqlite3_close((sqlite3 *)s);
	errno = 0;
	ck_assert_ptr_null(store_open(path, 0, err, sizeof(err)));
	ck_assert_int_eq(errno, EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "not a vnoise store"));
	/* read-only on nothing: ENOENT, and nothing created */
	unlink(path);
	errno = 0;
	ck_assert_ptr_null(store_open(path, 1, err, sizeof(err)));
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

/* collect_main with its report (stdout) thrown away. */
static int run_collect(int argc, char **argv)
{
	int fd = open("/dev/null", O_WRONLY), out = dup(1), rc;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(out, 0);
	fflush(stdout);
	dup2(fd, 1);
	rc = collect_main(argc, argv);
	fflush(stdout);
	dup2(out, 1);
	close(out);
	close(fd);
	return rc;
}

/* A capture of the old store format, given as --store: imported into FILE.db, the capture kept. */
START_TEST(test_import_capture)
{
	char cap[160], db[160], keys[160], copy[180];
	char *argv[] = { "collect", "-k",	  keys,	 "--listen", "127.0.0.1:0", "--store",
			 cap,	    "--duration", "1ms", "-q",	     NULL };
	struct pcapio_w *w;
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	struct sockaddr_in a = from(6000), to = from(7361);
	struct store *s;
	FILE *f;

	snprintf(cap, sizeof(cap), "%s/old.pcap", tmpdir);
	snprintf(db, sizeof(db), "%s/old.db", tmpdir);
	snprintf(keys, sizeof(keys), "%s/keys", tmpdir);
	f = fopen(keys, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "3 %s\n", KEYHEX);
	fclose(f);
	chmod(keys, 0600);
	w = pcapio_create(cap, err, sizeof(err));
	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < 10; i++) {
		size_t n = make_report(d, &v, 1 + (uint64_t)i % 2, (uint64_t)i / 2, 0, 1, 100, 200);

		ck_assert_int_eq(pcapio_write(w, 1700000000000000000ull + (uint64_t)i,
					      (struct sockaddr *)&a, (struct sockaddr *)&to, d, n),
				 0);
	}
	d[20] ^= 1; /* a forged one: rejected, not imported */
	ck_assert_int_eq(pcapio_write(w, 1700000000000000100ull, (struct sockaddr *)&a,
				      (struct sockaddr *)&to, d, 300),
			 0);
	ck_assert_int_eq(pcapio_flush(w), 0);
	pcapio_close(w);
	snprintf(copy, sizeof(copy), "%s.orig", cap);
	snprintf(err, sizeof(err), "cp %s %s", cap, copy);
	ck_assert_int_eq(system(err), 0);
	ck_assert_int_eq(run_collect(10, argv), 0);
	ck_assert(same_file(cap, copy));
	s = store_open(db, 1, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(store_count(s, "datagram"), 10);
	ck_assert_int_eq(store_count(s, "interval"), 10);
	ck_assert_int_eq(store_count(s, "node"), 2);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sql1(db, "SELECT sum(noise_ns) FROM interval"), 1000);
	/* started again on the capture: the database made from it is used, nothing imported twice */
	ck_assert_int_eq(run_collect(10, argv), 0);
	ck_assert_int_eq(sql1(db, "SELECT count(*) FROM datagram"), 10);
}
END_TEST

/* The database's page count on s's connection. */
static long long page_count(struct store *s)
{
	sqlite3_stmt *q;
	long long n = -1;

	ck_assert_int_eq(sqlite3_prepare_v2(store_db(s), "PRAGMA page_count", -1, &q, NULL),
			 SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW)
		n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}

/* max_page_count on s's connection: pages the database may not grow past (SQLITE_FULL), as a full disk. */
static void max_pages(struct store *s, long long n)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA max_page_count = %lld", n);
	ck_assert_int_eq(sqlite3_exec(store_db(s), sql, NULL, NULL, NULL), SQLITE_OK);
}

START_TEST(test_full)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	struct sockaddr_in a = from(4000);
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	struct store_stats st;
	int i, failed_calls = 0;
	uint64_t iv = 0;
	size_t n;

	ck_assert_msg(s != NULL, "%s", err);
	for (i = 0; i < 5; i++, iv++) {
		n = make_report(d, &v, 1, iv, 0, 1, 100, 200);
		ck_assert_int_eq(store_add(s, iv, (struct sockaddr *)&a, sizeof(a), d, n, &v), 0);
	}
	ck_assert_int_eq(store_commit(s), 0);
	store_get_stats(s, &st);
	ck_assert_uint_eq(st.stored, 5);
	ck_assert_uint_eq(st.failed, 0);
	ck_assert_int_eq(st.last_err, 0);
	ck_assert_str_eq(store_error(s), "");
	/* the database is full: no page more */
	max_pages(s, page_count(s));
	for (i = 0; i < 300; i++, iv++) {
		n = make_report(d, &v, 1, iv, 0, 1, 100, 200);
		if (store_add(s, iv, (struct sockaddr *)&a, sizeof(a), d, n, &v))
			failed_calls++;
	}
	if (store_commit(s))
		failed_calls++;
	store_get_stats(s, &st);
	ck_assert_int_gt(failed_calls, 0);
	ck_assert_int_eq(st.last_err, -ENOSPC);
	ck_assert_uint_gt(st.failures, 0);
	ck_assert_uint_gt(st.failed, 0);
	/* nothing is lost silently: every datagram is stored or counted */
	ck_assert_uint_eq(st.stored + st.failed, iv);
	ck_assert_msg(strstr(store_error(s), "No space left on device") != NULL, "%s",
		      store_error(s));
	/* what is stored is whole datagrams, their rows all there */
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM datagram"), (long long)st.stored);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM interval"), (long long)st.stored);
	/* room again: storing goes on by itself */
	max_pages(s, 1000000000);
	for (i = 0; i < 3; i++, iv++) {
		n = make_report(d, &v, 1, iv, 0, 1, 100, 200);
		ck_assert_int_eq(store_add(s, iv, (struct sockaddr *)&a, sizeof(a), d, n, &v), 0);
	}
	ck_assert_int_eq(store_commit(s), 0);
	store_get_stats(s, &st);
	ck_assert_uint_eq(st.stored + st.failed, iv);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM datagram"), (long long)st.stored);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM pragma_integrity_check WHERE "
				    "integrity_check = 'ok'"),
			 1);
}
END_TEST

/* The accounting rows share the batch: a full database rolls back the datagrams before them too. */
START_TEST(test_full_accounting)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	struct sockaddr_in a = from(4000);
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	struct store_stats st;
	struct store_node sn = { .node_id = 9, .job_id = 1, .addr = "x" };
	int rc = 0, i;
	size_t n;

	ck_assert_msg(s != NULL, "%s", err);
	max_pages(s, page_count(s));
	for (i = 0; i < 200 && !rc; i++) {
		n = make_report(d, &v, 2, (uint64_t)i, 0, 1, 100, 200);
		rc = store_add(s, (uint64_t)i, (struct sockaddr *)&a, sizeof(a), d, n, &v);
		if (!rc)
			rc = store_put_node(s, &sn);
		if (!rc)
			rc = store_commit(s);
	}
	ck_assert_int_eq(rc, -ENOSPC);
	store_get_stats(s, &st);
	ck_assert_uint_eq(st.stored + st.failed, (uint64_t)i);
	ck_assert_uint_ge(st.failed, 1);
	ck_assert_int_eq(store_close(s), 0); /* nothing pending after the rollback */
}
END_TEST

/* The writer's durability: WAL, and synchronous=FULL on its connection (a commit is synced). */
START_TEST(test_durability)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	sqlite3_stmt *q;

	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(sqlite3_prepare_v2(store_db(s), "PRAGMA synchronous", -1, &q, NULL),
			 SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(q), SQLITE_ROW);
	ck_assert_int_eq(sqlite3_column_int(q, 0), 2); /* FULL */
	sqlite3_finalize(q);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sql1(path, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
}
END_TEST

/* A store of schema 1 is upgraded when opened for writing: the state table, the index, rows kept. */
START_TEST(test_upgrade)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	sqlite3 *db;
	size_t n;

	ck_assert_ptr_nonnull(s);
	n = make_report(d, &v, 1, 1, 0, 1, 10, 20);
	ck_assert_int_eq(store_add(s, 5, NULL, 0, d, n, &v), 0);
	ck_assert_int_eq(store_close(s), 0);
	/* back to schema 1 as an older build made it */
	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_exec(db,
				      "DROP TABLE state; DROP INDEX interval_recv;"
				      " ALTER TABLE cause DROP COLUMN recv_ns;"
				      " UPDATE meta SET value = '1' WHERE key = 'schema';"
				      " PRAGMA user_version = 1",
				      0, 0, 0),
			 SQLITE_OK);
	sqlite3_close(db);
	s = store_open(path, 1, err, sizeof(err)); /* a query reads it as it is */
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sql1(path, "PRAGMA user_version"), 1);
	s = store_open(path, 0, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	ck_assert_int_eq(store_count(s, "datagram"), 1);
	ck_assert_int_eq(store_close(s), 0);
	ck_assert_int_eq(sql1(path, "PRAGMA user_version"), 2);
	ck_assert_int_eq(sql1(path, "SELECT value FROM meta WHERE key = 'schema'"), 2);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM sqlite_schema WHERE name IN ('state',"
				    " 'interval_recv')"),
			 2);
	ck_assert_int_eq(sql1(path, "SELECT count(*) FROM cause WHERE recv_ns IS NULL"), 1);
}
END_TEST

struct count_ctx {
	int n;
	uint64_t first_t;
};

static int count_dgram(void *ctx, uint64_t t, const struct sockaddr *src, socklen_t srclen,
		       const void *buf, size_t len)
{
	struct count_ctx *c = ctx;

	(void)src, (void)srclen, (void)buf, (void)len;
	if (!c->n++)
		c->first_t = t;
	return 0;
}

/*
 * A state snapshot covers the datagrams committed with it: its last id is theirs, a replay after it gives
 * the later ones only; a rolled-back snapshot leaves the one before.
 */
START_TEST(test_state)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	struct count_ctx cc = { 0 };
	void *blob = NULL;
	size_t n, len = 0;
	int64_t last = -1;
	uint64_t saved = 0;

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(store_get_state(s, "x", &blob, &len, &last, &saved), -ENOENT);
	for (int i = 0; i < 3; i++) {
		n = make_report(d, &v, 1, (uint64_t)i, 0, 1, 10, 20);
		ck_assert_int_eq(store_add(s, 100 + (uint64_t)i, NULL, 0, d, n, &v), 0);
	}
	ck_assert_int_eq(store_put_state(s, "x", "abc", 3), 0); /* same batch as the 3 */
	ck_assert_int_eq(store_commit(s), 0);
	for (int i = 3; i < 5; i++) {
		n = make_report(d, &v, 1, (uint64_t)i, 0, 1, 10, 20);
		ck_assert_int_eq(store_add(s, 100 + (uint64_t)i, NULL, 0, d, n, &v), 0);
	}
	ck_assert_int_eq(store_close(s), 0);
	s = store_open(path, 0, err, sizeof(err));
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(store_get_state(s, "x", &blob, &len, &last, &saved), 0);
	ck_assert_uint_eq(len, 3);
	ck_assert_mem_eq(blob, "abc", 3);
	free(blob);
	ck_assert_int_eq(last, 3);
	ck_assert_uint_gt(saved, 0);
	ck_assert_int_eq(store_replay(s, last, count_dgram, &cc), 0);
	ck_assert_int_eq(cc.n, 2);
	ck_assert_uint_eq(cc.first_t, 103);
	ck_assert_int_eq(store_close(s), 0);
}
END_TEST

/*
 * Retention: rows received before the cut go, at most max_rows per table and call, counted once
 * committed; younger rows stay.
 */
START_TEST(test_retain)
{
	struct store *s = store_open(path, 0, err, sizeof(err));
	uint8_t d[VN_REPORT_MAX_LEN];
	struct datagram_view v;
	struct store_stats st;
	int64_t k, total = 0;

	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < 10; i++) { /* received at 1000..1009 */
		size_t n = make_report(d, &v, 1, (uint64_t)i, 0, 1, 10, 20);

		ck_assert_int_eq(store_add(s, 1000 + (uint64_t)i, NULL, 0, d, n, &v), 0);
	}
	ck_assert_int_eq(store_commit(s), 0);
	/* before 1006: 6 datagrams, 6 intervals, 6 causes; 2 rows per table and step */
	k = store_retain(s, 1006, 2);
	ck_assert_int_eq(k, 6); /* 2 datagrams, 2 causes, 2 intervals (job intervals: by start) */
	store_get_stats(s, &st);
	ck_assert_uint_eq(st.deleted, 0); /* not committed yet */
	total += k;
	while ((k = store_retain(s, 1006, 2)) > 0)
		total += k;
	ck_assert_int_eq(k, 0);
	ck_assert_int_eq(store_commit(s), 0);
	ck_assert_int_eq(total, 18);
	store_get_stats(s, &st);
	ck_assert_uint_eq(st.deleted, 18);
	ck_assert_int_eq(store_count(s, "datagram"), 4);
	ck_assert_int_eq(store_count(s, "interval"), 4);
	ck_assert_int_eq(store_count(s, "cause"), 4);
	ck_assert_int_eq(store_count(s, "job_interval"), 10); /* their start is the nodes' 2000 s */
	ck_assert_int_eq(sql1(path, "SELECT min(recv_ns) FROM datagram"), 1006);
	ck_assert_int_eq(sql1(path, "SELECT min(recv_ns) FROM interval"), 1006);
	/* the jobs' intervals by their start: the 3 first; and the 4 + 4 + 4 rows left, received earlier */
	ck_assert_int_eq(store_retain(s, 2000000000000ull + 3 * 10000000ull, 100), 15);
	ck_assert_int_eq(store_commit(s), 0);
	ck_assert_int_eq(store_count(s, "job_interval"), 7);
	ck_assert_int_eq(store_count(s, "datagram"), 0);
	ck_assert_int_eq(store_close(s), 0);
}
END_TEST

static Suite *store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *t = tcase_create("schema");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_schema);
	tcase_add_test(t, test_newer_schema);
	tcase_add_test(t, test_durability);
	tcase_add_test(t, test_upgrade);
	suite_add_tcase(s, t);
	t = tcase_create("rows");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_batch_and_merge);
	tcase_add_test(t, test_reopen_replay);
	tcase_add_test(t, test_state);
	tcase_add_test(t, test_retain);
	suite_add_tcase(s, t);
	t = tcase_create("full");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_full);
	tcase_add_test(t, test_full_accounting);
	suite_add_tcase(s, t);
	t = tcase_create("damage");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, test_damaged);
	suite_add_tcase(s, t);
	t = tcase_create("import");
	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 20);
	tcase_add_test(t, test_import_capture);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(store_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
