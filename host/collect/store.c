/* SPDX-License-Identifier: MIT */
/* store: the collector's SQLite store (see store.h; the schema is documented in README.md). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>
#include "collect/store.h"
#include "collect/store_priv.h"
#include "util/monotime.h"
#include "util/outfile.h"
#include "util/version.h"

/* The schema of STORE_SCHEMA_VERSION. 64-bit ids (job_id) are stored as their two's complement int64. */
static const char schema_sql[] =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE datagram(id INTEGER PRIMARY KEY, recv_ns INTEGER NOT NULL, src BLOB,"
    " data BLOB NOT NULL);"
    "CREATE TABLE interval(node_id INTEGER NOT NULL, job_id INTEGER NOT NULL,"
    " interval_id INTEGER NOT NULL, session_id INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL, recv_ns INTEGER NOT NULL, parts INTEGER NOT NULL,"
    " last INTEGER NOT NULL, sampled INTEGER NOT NULL, compute_ns INTEGER NOT NULL,"
    " noise_ns INTEGER NOT NULL, verdict INTEGER NOT NULL, nmi_ns INTEGER NOT NULL,"
    " irq_ns INTEGER NOT NULL, softirq_ns INTEGER NOT NULL, thread_ns INTEGER NOT NULL,"
    " hcall_ns INTEGER NOT NULL, steal_ns INTEGER NOT NULL, unexplained_ns INTEGER NOT NULL,"
    " host_preempt_ns INTEGER NOT NULL, host_wait_ns INTEGER NOT NULL,"
    " vmexit_ns INTEGER NOT NULL, host_irq_ns INTEGER NOT NULL, hypervisor_ns INTEGER NOT NULL,"
    " PRIMARY KEY(job_id, interval_id, node_id)) WITHOUT ROWID;"

    "CREATE TABLE job_interval(job_id INTEGER NOT NULL, interval_id INTEGER NOT NULL,"
    " start_ns INTEGER NOT NULL, nodes INTEGER NOT NULL, min_compute_ns INTEGER NOT NULL,"
    " max_compute_ns INTEGER NOT NULL, slow_node INTEGER NOT NULL,"
    " PRIMARY KEY(job_id, interval_id)) WITHOUT ROWID;"
    "CREATE INDEX job_interval_time ON job_interval(start_ns);"
    "CREATE TABLE cause(node_id INTEGER NOT NULL, job_id INTEGER NOT NULL,"
    " interval_id INTEGER NOT NULL, start_ns INTEGER NOT NULL, class TEXT NOT NULL,"
    " src_kind INTEGER NOT NULL, src_id INTEGER NOT NULL, name TEXT NOT NULL,"
    " noise_ns INTEGER NOT NULL, count INTEGER NOT NULL);"
    "CREATE INDEX cause_job ON cause(job_id, start_ns);"
    "CREATE TABLE node(node_id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL,"
    " session_id INTEGER NOT NULL, addr TEXT NOT NULL, registered INTEGER NOT NULL,"
    " excluded INTEGER NOT NULL, datagrams INTEGER NOT NULL, records INTEGER NOT NULL,"
    " lost INTEGER NOT NULL, late INTEGER NOT NULL, duplicate INTEGER NOT NULL,"
    " stale INTEGER NOT NULL, restarts INTEGER NOT NULL, intervals_sampled INTEGER NOT NULL,"
    " intervals_counters INTEGER NOT NULL, noise_ns INTEGER NOT NULL,"
    " compute_ns INTEGER NOT NULL, last_seen_ns INTEGER NOT NULL, updated_ns INTEGER NOT NULL);"
    "CREATE TABLE job(job_id INTEGER PRIMARY KEY, job_hex TEXT NOT NULL, name TEXT,"
    " nodes INTEGER NOT NULL, updated_ns INTEGER NOT NULL);"
    "CREATE TABLE counter(name TEXT PRIMARY KEY, value INTEGER NOT NULL,"
    " updated_ns INTEGER NOT NULL);";

/*
 * From schema 1 to 2 (a new store runs both): the engine's state snapshot (state), the retention's index on
 * the collector's receive time of intervals, and that time on causes (NULL on the rows of schema 1, whose
 * retention goes by start_ns instead).
 */
static const char schema2_sql[] =
    "CREATE TABLE state(name TEXT PRIMARY KEY, saved_ns INTEGER NOT NULL,"
    " last_datagram INTEGER NOT NULL, data BLOB NOT NULL);"
    "CREATE INDEX interval_recv ON interval(recv_ns);"
    "ALTER TABLE cause ADD COLUMN recv_ns INTEGER;"
    "UPDATE meta SET value = '2' WHERE key = 'schema';"
    "PRAGMA user_version = 2;";

static const char ins_dgram_sql[] = "INSERT INTO datagram(recv_ns, src, data) VALUES(?1, ?2, ?3)";
static const char ins_iv_sql[] =
    "INSERT INTO interval VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?9, ?10, ?11, ?12, ?13,"
    " ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?20 + ?21 + ?22 + ?23)"
    " ON CONFLICT(job_id, interval_id, node_id) DO UPDATE SET parts = parts + 1,"
    " last = max(last, excluded.last), compute_ns = max(compute_ns, excluded.compute_ns),"
    " noise_ns = noise_ns + excluded.noise_ns, verdict = max(verdict, excluded.verdict),"
    " nmi_ns = nmi_ns + excluded.nmi_ns, irq_ns = irq_ns + excluded.irq_ns,"
    " softirq_ns = softirq_ns + excluded.softirq_ns, thread_ns = thread_ns + excluded.thread_ns,"
    " hcall_ns = hcall_ns + excluded.hcall_ns, steal_ns = steal_ns + excluded.steal_ns,"
    " unexplained_ns = unexplained_ns + excluded.unexplained_ns,"
    " host_preempt_ns = host_preempt_ns + excluded.host_preempt_ns,"
    " host_wait_ns = host_wait_ns + excluded.host_wait_ns,"
    " vmexit_ns = vmexit_ns + excluded.vmexit_ns, host_irq_ns = host_irq_ns + excluded.host_irq_ns,"
    " hypervisor_ns = hypervisor_ns + excluded.hypervisor_ns";
static const char get_compute_sql[] =
    "SELECT compute_ns FROM interval WHERE node_id = ?1 AND job_id = ?2 AND interval_id = ?3";
/*
 * Every report makes its job's interval known; when a node's interval is complete (its last part came) the
 * job's interval gets one more node, its fastest and slowest compute (the slowest: the last to arrive
 * among equals, as clusteragg's iv_close has it). An incomplete part passes nodes 0, min INT64_MAX, max -1.
 */
static const char ins_jobiv_sql[] =
    "INSERT INTO job_interval VALUES(?1, ?2, ?3, ?6, ?4, ?7, ?5)"
    " ON CONFLICT(job_id, interval_id) DO UPDATE SET nodes = nodes + excluded.nodes,"
    " min_compute_ns = min(min_compute_ns, excluded.min_compute_ns),"
    " slow_node = CASE WHEN excluded.max_compute_ns >= max_compute_ns THEN excluded.slow_node"
    "  ELSE slow_node END, max_compute_ns = max(max_compute_ns, excluded.max_compute_ns)";
static const char ins_cause_sql[] =
    "INSERT INTO cause VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
static const char put_node_sql[] =
    "INSERT OR REPLACE INTO node VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13,"
    " ?14, ?15, ?16, ?17, ?18, ?19)";
static const char put_job_sql[] = "INSERT OR REPLACE INTO job VALUES(?1, ?2, ?3, ?4, ?5)";
static const char put_counter_sql[] = "INSERT OR REPLACE INTO counter VALUES(?1, ?2, ?3)";
/* the snapshot covers the datagrams of its own transaction: last_datagram is read inside it */
static const char put_state_sql[] =
    "INSERT OR REPLACE INTO state VALUES(?1, ?2, (SELECT coalesce(max(id), 0) FROM datagram), ?3)";
/*
 * Retention, at most ?2 rows a statement. Datagrams and causes are rows in arrival order: the first ?2 are
 * looked at and those received before ?1 go (a clock stepped back delays their deletion, never hastens it);
 * intervals go by the index on their receive time, the jobs' intervals by their start time.
 */
static const char del_dgram_sql[] =
    "DELETE FROM datagram WHERE id IN (SELECT id FROM datagram ORDER BY id LIMIT ?2)"
    " AND recv_ns < ?1";
static const char del_cause_sql[] =
    "DELETE FROM cause WHERE rowid IN (SELECT rowid FROM cause ORDER BY rowid LIMIT ?2)"
    " AND coalesce(recv_ns, start_ns) < ?1";
static const char del_iv_sql[] =
    "DELETE FROM interval WHERE (job_id, interval_id, node_id) IN (SELECT job_id, interval_id,"
    " node_id FROM interval WHERE recv_ns < ?1 ORDER BY recv_ns LIMIT ?2)";
static const char del_jobiv_sql[] =
    "DELETE FROM job_interval WHERE (job_id, interval_id) IN (SELECT job_id, interval_id"
    " FROM job_interval WHERE start_ns < ?1 ORDER BY start_ns LIMIT ?2)";

enum {
	ST_DGRAM,
	ST_IV,
	ST_JOBIV,
	ST_GETC,
	ST_CAUSE,
	ST_NODE,
	ST_JOB,
	ST_COUNTER,
	ST_STATE,
	ST_DEL_DGRAM,
	ST_DEL_CAUSE,
	ST_DEL_IV,
	ST_DEL_JOBIV,
	ST_MAX
};

#define STORE_HEAP_LIMIT (64LL << 20) /* bytes of SQLite heap (soft: pages given back above it) */

struct store {
	sqlite3 *db;
	sqlite3_stmt *st[ST_MAX];
	int in_batch;
	uint64_t batch_start_ns; /* CLOCK_MONOTONIC */
	uint64_t batch_dgrams; /* datagrams in the open batch */
	uint64_t batch_deleted; /* rows the retention deleted in the open batch */
	struct store_stats stats;
	char errmsg[192]; /* the last failure, one line */
	char path[256];
};

int store_probe(const char *path)
{
	unsigned char b[16];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? STORE_ABSENT : -errno;
	n = read(fd, b, sizeof(b));
	close(fd);
	if (n < 0)
		return -EIO;
	if (n == 0)
		return STORE_ABSENT;
	if (n == 16 && !memcmp(b, "SQLite format 3", 16))
		return STORE_SQLITE;
	if (n >= 4) {
		uint32_t m;

		memcpy(&m, b, 4);
		if (m == 0xa1b2c3d4u || m == 0xd4c3b2a1u || m == 0xa1b23c4du || m == 0x4d3cb2a1u ||
		    m == 0x0a0d0d0au)
			return STORE_PCAP;
	}
	return STORE_OTHER;
}

static int fail(char *err, size_t errlen, int e, const char *fmt, const char *a, const char *b)
{
	snprintf(err, errlen, fmt, a, b);
	errno = e;
	return -e;
}

/* The errno of SQLite result rc on s's connection: ENOSPC for a full database or disk, else what the
 * system said (EDQUOT, EFBIG, ...) or EIO. */
static int sql_errno(struct store *s, int rc)
{
	int sys = sqlite3_system_errno(s->db); /* the last failed system call's, maybe an old one */

	if ((rc & 0xff) == SQLITE_FULL)
		return ENOSPC;
	return (rc & 0xff) == SQLITE_IOERR && sys > 0 ? sys : EIO;
}

/* SQLite found the file damaged or foreign: EBADMSG with its reason; a full disk ENOSPC; else EIO. */
static int sql_fail(struct store *s, char *err, size_t errlen)
{
	int ec = sqlite3_errcode(s->db);

	if (ec == SQLITE_CORRUPT || ec == SQLITE_NOTADB)
		return fail(err, errlen, EBADMSG, "%s: damaged database: %s", s->path,
			    sqlite3_errmsg(s->db));
	if (sql_errno(s, ec) == ENOSPC)
		return fail(err, errlen, ENOSPC, "%s: No space left on device (SQLite: %s)",
			    s->path, sqlite3_errmsg(s->db));
	return fail(err, errlen, EIO, "%s: %s", s->path, sqlite3_errmsg(s->db));
}

/* The first column of the first row of sql as text into out ("" when none); 0 or an SQLite error. */
static int query_text(sqlite3 *db, const char *sql, char *out, size_t len)
{
	sqlite3_stmt *q;
	int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);

	out[0] = 0;
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const unsigned char *t = sqlite3_column_text(q, 0);

		snprintf(out, len, "%s", t ? (const char *)t : "");
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(q);
	return rc;
}

/* A store of schema 1 made into schema 2, in one transaction (once: the interval index is built). */
static int upgrade_schema(struct store *s, char *err, size_t errlen)
{
	if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, schema2_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		int e = sql_errno(s, sqlite3_errcode(s->db));

		fail(err, errlen, e, "%s: cannot upgrade the schema to version 2: %s", s->path,
		     e == ENOSPC ? "No space left on device" : sqlite3_errmsg(s->db));
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		errno = e;
		return -e;
	}
	return 0;
}

/*
 * PRAGMA quick_check of the tables a start reads whole (the accounting, the snapshot): a check of the whole
 * file reads all of it (0.6 s a GB), too slow for a start; damage in the history tables is found by what
 * reads them (the replay after the snapshot, a query: SQLITE_CORRUPT) and by PRAGMA integrity_check.
 */
static int quick_check(struct store *s, long uv, char *err, size_t errlen)
{
	static const char *const tables[] = { "meta", "node", "job", "counter", "state" };

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		char sql[64], ok[128];

		if (uv < 2 && !strcmp(tables[i], "state"))
			continue;
		snprintf(sql, sizeof(sql), "PRAGMA quick_check(%s)", tables[i]);
		if (query_text(s->db, sql, ok, sizeof(ok)) != SQLITE_OK)
			return fail(err, errlen, EBADMSG, "%s: damaged database: %s", s->path,
				    sqlite3_errmsg(s->db));
		if (strcmp(ok, "ok")) {
			for (char *p = ok; *p; p++)
				*p = *p == '\n' ? ' ' : *p; /* one line: the first problems */
			return fail(err, errlen, EBADMSG, "%s: damaged database (quick_check: %s)",
				    s->path, ok);
		}
	}
	return 0;
}

static int make_schema(struct store *s, char *err, size_t errlen)
{
	char sql[256];

	snprintf(sql, sizeof(sql),
		 "INSERT INTO meta VALUES('schema', '1'), ('vnoise_version', '%s'),"
		 " ('created_ns', '%" PRIu64 "'); PRAGMA user_version = 1;",
		 version_string(), now_rt_ns());
	if (sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, schema_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, schema2_sql, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		int e = sql_errno(s, sqlite3_errcode(s->db));

		fail(err, errlen, e, "%s: cannot create the schema: %s", s->path,
		     e == ENOSPC ? "No space left on device" : sqlite3_errmsg(s->db));
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
		errno = e;
		return -e;
	}
	return 0;
}

/*
 * A database that exists: intact (quick_check, unless readonly), ours, and not newer than this build; a
 * store of schema 1 is upgraded (unless readonly: a query reads both).
 */
static int check_schema(struct store *s, int readonly, char *err, size_t errlen)
{
	char v[64], n[64];
	long uv;
	int rc;

	if (query_text(s->db, "PRAGMA user_version", v, sizeof(v)) != SQLITE_OK)
		return sql_fail(s, err, errlen);
	uv = strtol(v, NULL, 10);
	if (!readonly && uv > 0 && uv <= STORE_SCHEMA_VERSION) {
		rc = quick_check(s, uv, err, errlen);
		if (rc)
			return rc;
	}
	if (uv > STORE_SCHEMA_VERSION) {
		snprintf(
		    err, errlen,
		    "%s: store schema version %ld is newer than this build's (%d): use a newer "
		    "vnoise",
		    s->path, uv, STORE_SCHEMA_VERSION);
		errno = EPROTO;
		return -EPROTO;
	}
	if (query_text(s->db, "SELECT count(*) FROM sqlite_schema", n, sizeof(n)) != SQLITE_OK)
		return fail(err, errlen, EBADMSG, "%s: damaged database: %s", s->path,
			    sqlite3_errmsg(s->db));
	if (uv == 0 && strcmp(n, "0"))
		return fail(err, errlen, EBADMSG, "%s: an SQLite database but not a vnoise store%s",
			    s->path, "");
	if (uv == 0) {
		if (readonly)
			return fail(err, errlen, EBADMSG,
				    "%s: an empty database, not a vnoise store%s", s->path, "");
		return make_schema(s, err, errlen);
	}
	if (uv == 1 && !readonly)
		return upgrade_schema(s, err, errlen);
	return 0;
}

static int prepare_all(struct store *s, char *err, size_t errlen)
{
	static const char *const sql[ST_MAX] = {
		ins_dgram_sql, ins_iv_sql,  ins_jobiv_sql,   get_compute_sql, ins_cause_sql,
		put_node_sql,  put_job_sql, put_counter_sql, put_state_sql,   del_dgram_sql,
		del_cause_sql, del_iv_sql,  del_jobiv_sql,
	};

	for (int i = 0; i < ST_MAX; i++)
		if (sqlite3_prepare_v3(s->db, sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
				       NULL) != SQLITE_OK)
			return fail(err, errlen, EBADMSG,
				    "%s: not a vnoise store of this schema: %s", s->path,
				    sqlite3_errmsg(s->db));
	return 0;
}

/*
 * Settings of the writer: WAL and FULL sync, so that each batch's commit syncs the WAL and is durable when
 * COMMIT returns (an OS crash or power cut loses the open batch only, at most STORE_COMMIT_NS of datagrams);
 * NORMAL would sync at checkpoints only. Read back: a build of SQLite that ignores it is refused.
 */
static int writer_pragmas(struct store *s, char *err, size_t errlen)
{
	char mode[32], sync[8];

	/* a new database only (a no-op later): fewer, larger pages for the append-mostly tables */
	if (sqlite3_exec(s->db, "PRAGMA page_size = 16384", NULL, NULL, NULL) != SQLITE_OK ||
	    query_text(s->db, "PRAGMA journal_mode = WAL", mode, sizeof(mode)) != SQLITE_OK)
		return sql_fail(s, err, errlen);
	if (strcmp(mode, "wal"))
		return fail(err, errlen, EIO, "%s: cannot use WAL mode (%s)", s->path, mode);
	if (sqlite3_exec(s->db, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = OFF;", NULL, NULL,
			 NULL) != SQLITE_OK ||
	    query_text(s->db, "PRAGMA synchronous", sync, sizeof(sync)) != SQLITE_OK)
		return sql_fail(s, err, errlen);
	if (strcmp(sync, "2"))
		return fail(err, errlen, EIO, "%s: cannot set synchronous=FULL (it is %s)", s->path,
			    sync);
	return 0;
}

struct store *store_open(const char *path, int readonly, char *err, size_t errlen)
{
	struct store *s = calloc(1, sizeof(*s));
	int kind, flags, fd, e = 0;

	if (!s)
		return NULL;
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (!readonly) { /* created here, not by SQLite: mode 0640, never through a link */
		fd = outfile_open(path, 0, OUTFILE_MODE);
		if (fd < 0) {
			e = -fail(err, errlen, -fd, "%s: %s", path, outfile_strerror(fd));
			goto out;
		}
		close(fd);
	}
	kind = store_probe(path);
	if (kind < 0) {
		e = -fail(err, errlen, -kind, "%s: %s", path, strerror(-kind));
		goto out;
	}
	if (kind == STORE_ABSENT && readonly) {
		e = -fail(err, errlen, ENOENT, "%s: %s", path, "no such store");
		goto out;
	}
	if (kind == STORE_PCAP || kind == STORE_OTHER) {
		e = -fail(err, errlen, EBADMSG, "%s: not a database%s", path,
			  kind == STORE_PCAP ? " (a capture: the store's old format)" : "");
		goto out;
	}
	flags = readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (sqlite3_open_v2(path, &s->db, flags | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
			    NULL) != SQLITE_OK) {
		e = -fail(err, errlen, EIO, "%s: %s", path,
			  s->db ? sqlite3_errmsg(s->db) : "out of memory");
		goto out;
	}
	sqlite3_busy_timeout(s->db, 5000);
	sqlite3_exec(s->db, "PRAGMA cache_size = -65536", NULL, NULL, NULL); /* 64 MiB at most */
	/*
	 * The cache size alone did not bound the heap: the soak saw SQLite's memory follow the database's size
	 * (+12.7 MB a minute, 155 MB after 12 min). A soft heap limit makes SQLite give cache pages back.
	 */
	sqlite3_soft_heap_limit64(STORE_HEAP_LIMIT);
	if ((!readonly && writer_pragmas(s, err, errlen)) ||
	    check_schema(s, readonly, err, errlen) || (!readonly && prepare_all(s, err, errlen))) {
		e = errno;
		goto out;
	}
	return s;
out:
	for (int i = 0; i < ST_MAX; i++)
		sqlite3_finalize(s->st[i]);
	sqlite3_close(s->db);
	free(s);
	errno = e ? e : EIO;
	return NULL;
}

/*
 * A write of the open batch failed with SQLite result rc: the batch is rolled back (SQLite may have done
 * it already) and its datagrams, plus extra ones of the caller, counted as failed. Returns -errno.
 */
static int batch_fail(struct store *s, int rc, uint64_t extra)
{
	int e = sql_errno(s, rc);

	snprintf(s->errmsg, sizeof(s->errmsg), "%s (SQLite: %s)", strerror(e), sqlite3_errstr(rc));
	if (!sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	s->stats.failed += s->batch_dgrams + extra;
	s->stats.failures++;
	s->stats.last_err = -e;
	s->batch_dgrams = 0;
	s->batch_deleted = 0; /* rolled back: those rows are there again */
	s->in_batch = 0;
	return -e;
}

int store_commit(struct store *s)
{
	int rc;

	if (!s->in_batch)
		return 0;
	rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return batch_fail(s, rc,
				  0); /* the batch is lost (counted); the next one can begin */
	s->in_batch = 0;
	s->stats.stored += s->batch_dgrams;
	s->stats.deleted += s->batch_deleted;
	s->batch_dgrams = 0;
	s->batch_deleted = 0;
	return 0;
}

void store_get_stats(const struct store *s, struct store_stats *out)
{
	if (s)
		*out = s->stats;
	else
		memset(out, 0, sizeof(*out));
}

const char *store_error(const struct store *s)
{
	return s ? s->errmsg : "";
}

int store_tick(struct store *s, uint64_t mono_ns)
{
	if (s->in_batch && mono_ns - s->batch_start_ns >= STORE_COMMIT_NS)
		return store_commit(s);
	return 0;
}

int store_close(struct store *s)
{
	int rc;

	if (!s)
		return 0;
	rc = s->db ? store_commit(s) : 0;
	for (int i = 0; i < ST_MAX; i++)
		sqlite3_finalize(s->st[i]);
	if (s->db && sqlite3_close(s->db) != SQLITE_OK)
		rc = -EIO;
	free(s);
	return rc;
}

/* Open a batch if none is open (the transaction every write goes into). 0 or an SQLite result code. */
static int batch(struct store *s)
{
	uint64_t t = now_ns();
	int rc;

	/* a batch too old is committed first; if that fails (counted), this write goes into a new one */
	if (s->in_batch && !store_tick(s, t) && s->in_batch)
		return SQLITE_OK;
	rc = sqlite3_exec(s->db, "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return rc;
	s->in_batch = 1;
	s->batch_start_ns = t;
	return SQLITE_OK;
}

/* Run a bound statement to its end and reset it: SQLITE_OK or the SQLite result code. */
static int run(sqlite3_stmt *q)
{
	int rc = sqlite3_step(q);

	sqlite3_reset(q);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static void bind_u64(sqlite3_stmt *q, int i, uint64_t v)
{
	sqlite3_bind_int64(q, i, (sqlite3_int64)v);
}

static int job_interval(struct store *s, const struct vn_report_hdr *h, int done, uint64_t compute);

/* The interval row of a report: summary records give compute (max) and noise, class records the rest. */
static int add_interval(struct store *s, uint64_t recv_ns, const struct datagram_view *v)
{
	sqlite3_stmt *q = s->st[ST_IV];
	const struct vn_report_hdr *h = &v->hdr;
	uint64_t cls[VN_REPORT_CLS_MAX] = { 0 }, noise = 0, compute = 0;
	unsigned verdict = 0;
	int rc;

	for (unsigned i = 0; i < h->nrec; i++) {
		const struct vn_report_rec *r = &v->rec[i];

		if (r->cls == VN_CLASS_NONE) {
			noise += r->noise_ns;
			compute = r->compute_ns > compute ? r->compute_ns : compute;
			verdict = r->verdict > verdict ? r->verdict : verdict;
		} else if (r->src_kind == VN_REPORT_SRC_NONE) {
			cls[r->cls] += r->noise_ns;
		}
	}
	bind_u64(q, 1, h->node_id);
	bind_u64(q, 2, h->job_id);
	bind_u64(q, 3, h->interval_id);
	bind_u64(q, 4, h->session_id);
	bind_u64(q, 5, h->start_realtime_ns);
	bind_u64(q, 6, h->end_realtime_ns);
	bind_u64(q, 7, recv_ns);
	sqlite3_bind_int(q, 8, !!(h->flags & VN_REPORT_F_LAST));
	sqlite3_bind_int(q, 9, h->kind == VN_REPORT_INTERVAL);
	bind_u64(q, 10, compute);
	bind_u64(q, 11, noise);
	sqlite3_bind_int(q, 12, (int)verdict);
	for (int c = 1; c < VN_REPORT_CLS_MAX; c++)
		bind_u64(q, 12 + c, cls[c]);
	rc = run(q);
	if (rc)
		return rc;
	if (!(h->flags & VN_REPORT_F_LAST))
		return job_interval(s, h, 0, 0);
	if (h->part) { /* the node's compute over all its parts */
		q = s->st[ST_GETC];
		bind_u64(q, 1, h->node_id);
		bind_u64(q, 2, h->job_id);
		bind_u64(q, 3, h->interval_id);
		if (sqlite3_step(q) == SQLITE_ROW)
			compute = (uint64_t)sqlite3_column_int64(q, 0);
		sqlite3_reset(q);
	}
	return job_interval(s, h, 1, compute);
}

/* The job's interval of h; done: the node's interval is complete with compute (ns). */
static int job_interval(struct store *s, const struct vn_report_hdr *h, int done, uint64_t compute)
{
	sqlite3_stmt *q = s->st[ST_JOBIV];

	bind_u64(q, 1, h->job_id);
	bind_u64(q, 2, h->interval_id);
	bind_u64(q, 3, h->start_realtime_ns);
	sqlite3_bind_int64(q, 4, done ? (sqlite3_int64)compute : INT64_MAX); /* the fastest */
	sqlite3_bind_int64(q, 7, done ? (sqlite3_int64)compute : -1); /* the slowest */
	bind_u64(q, 5, done ? h->node_id : 0);
	sqlite3_bind_int(q, 6, done);
	return run(q);
}

static int add_causes(struct store *s, uint64_t recv_ns, const struct datagram_view *v)
{
	sqlite3_stmt *q = s->st[ST_CAUSE];
	const struct vn_report_hdr *h = &v->hdr;
	int rc;

	for (unsigned i = 0; i < h->nrec; i++) {
		const struct vn_report_rec *r = &v->rec[i];

		if (r->cls == VN_CLASS_NONE || r->src_kind == VN_REPORT_SRC_NONE)
			continue;
		bind_u64(q, 1, h->node_id);
		bind_u64(q, 2, h->job_id);
		bind_u64(q, 3, h->interval_id);
		bind_u64(q, 4, h->start_realtime_ns);
		sqlite3_bind_text(q, 5, datagram_class_name(r->cls), -1, SQLITE_STATIC);
		sqlite3_bind_int(q, 6, r->src_kind);
		sqlite3_bind_int64(q, 7, r->src_id);
		sqlite3_bind_text(q, 8, r->name, (int)strnlen(r->name, VN_REPORT_NAME_LEN),
				  SQLITE_TRANSIENT);
		bind_u64(q, 9, r->noise_ns);
		bind_u64(q, 10, r->count);
		bind_u64(q, 11, recv_ns);
		rc = run(q);
		if (rc)
			return rc;
	}
	return SQLITE_OK;
}

int store_add(struct store *s, uint64_t recv_ns, const struct sockaddr *src, socklen_t srclen,
	      const void *buf, size_t len, const struct datagram_view *v)
{
	sqlite3_stmt *q = s->st[ST_DGRAM];
	int rc = batch(s);

	if (rc)
		return batch_fail(s, rc, 1);
	bind_u64(q, 1, recv_ns);
	if (src && srclen)
		sqlite3_bind_blob(q, 2, src, (int)srclen, SQLITE_STATIC);
	else
		sqlite3_bind_null(q, 2);
	sqlite3_bind_blob(q, 3, buf, (int)len, SQLITE_STATIC);
	rc = run(q);
	if (!rc && (v->hdr.kind == VN_REPORT_INTERVAL || v->hdr.kind == VN_REPORT_COUNTERS)) {
		rc = add_interval(s, recv_ns, v);
		if (!rc)
			rc = add_causes(s, recv_ns, v);
	}
	if (rc) /* the batch goes, so that no datagram is stored in part */
		return batch_fail(s, rc, 1);
	s->batch_dgrams++;
	return 0;
}

int store_put_node(struct store *s, const struct store_node *n)
{
	sqlite3_stmt *q = s->st[ST_NODE];
	const uint64_t u[] = { n->node_id,
			       n->job_id,
			       n->session_id,
			       0,
			       (uint64_t)n->registered,
			       (uint64_t)n->excluded,
			       n->datagrams,
			       n->records,
			       n->lost,
			       n->late,
			       n->dup,
			       n->stale,
			       n->restarts,
			       n->intervals_sampled,
			       n->intervals_counters,
			       n->noise_ns,
			       n->compute_ns,
			       n->last_seen_ns,
			       now_rt_ns() };

	int rc = batch(s);

	if (rc)
		return batch_fail(s, rc, 0);
	for (int i = 0; i < (int)(sizeof(u) / sizeof(u[0])); i++)
		bind_u64(q, i + 1, u[i]);
	sqlite3_bind_text(q, 4, n->addr ? n->addr : "", -1, SQLITE_TRANSIENT);
	rc = run(q);
	return rc ? batch_fail(s, rc, 0) : 0;
}

int store_put_job(struct store *s, uint64_t job_id, const char *name, uint64_t nodes)
{
	sqlite3_stmt *q = s->st[ST_JOB];
	char hex[24];
	int rc = batch(s);

	if (rc)
		return batch_fail(s, rc, 0);
	snprintf(hex, sizeof(hex), "%016" PRIx64, job_id);
	bind_u64(q, 1, job_id);
	sqlite3_bind_text(q, 2, hex, -1, SQLITE_TRANSIENT);
	if (name)
		sqlite3_bind_text(q, 3, name, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(q, 3);
	bind_u64(q, 4, nodes);
	bind_u64(q, 5, now_rt_ns());
	rc = run(q);
	return rc ? batch_fail(s, rc, 0) : 0;
}

int store_put_counter(struct store *s, const char *name, uint64_t value)
{
	sqlite3_stmt *q = s->st[ST_COUNTER];
	int rc = batch(s);

	if (rc)
		return batch_fail(s, rc, 0);
	sqlite3_bind_text(q, 1, name, -1, SQLITE_TRANSIENT);
	bind_u64(q, 2, value);
	bind_u64(q, 3, now_rt_ns());
	rc = run(q);
	return rc ? batch_fail(s, rc, 0) : 0;
}

int store_replay(struct store *s, int64_t after, store_replay_fn *fn, void *ctx)
{
	sqlite3_stmt *q;
	int rc;

	if (store_commit(s))
		return -EIO;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT recv_ns, src, data FROM datagram WHERE id > ?1 ORDER BY id",
			       -1, &q, NULL) != SQLITE_OK)
		return -EIO;
	sqlite3_bind_int64(q, 1, after);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct sockaddr_storage ss;
		int sl = sqlite3_column_bytes(q, 1);
		const void *src = sqlite3_column_blob(q, 1);
		const void *data = sqlite3_column_blob(q, 2);
		int dl = sqlite3_column_bytes(q, 2);
		int r;

		if (sl < 0 || (size_t)sl > sizeof(ss))
			sl = 0;
		if (sl)
			memcpy(&ss, src, (size_t)sl);
		r = fn(ctx, (uint64_t)sqlite3_column_int64(q, 0),
		       sl ? (struct sockaddr *)&ss : NULL, (socklen_t)sl, data, (size_t)dl);
		if (r) {
			sqlite3_finalize(q);
			return r;
		}
	}
	sqlite3_finalize(q);
	if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
		return -EBADMSG;
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int store_put_state(struct store *s, const char *name, const void *data, size_t len)
{
	sqlite3_stmt *q = s->st[ST_STATE];
	int rc;

	if (len > INT32_MAX)
		return -EFBIG;
	rc = batch(s);
	if (rc)
		return batch_fail(s, rc, 0);
	sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	bind_u64(q, 2, now_rt_ns());
	sqlite3_bind_blob(q, 3, data, (int)len, SQLITE_STATIC);
	rc = run(q);
	sqlite3_clear_bindings(q); /* data is the caller's */
	return rc ? batch_fail(s, rc, 0) : 0;
}

int store_get_state(struct store *s, const char *name, void **data, size_t *len, int64_t *last,
		    uint64_t *saved_ns)
{
	sqlite3_stmt *q;
	int rc, n;

	*data = NULL;
	*len = 0;
	if (sqlite3_prepare_v2(s->db,
			       "SELECT data, last_datagram, saved_ns FROM state WHERE name = ?1",
			       -1, &q, NULL) != SQLITE_OK)
		return sqlite3_errcode(s->db) == SQLITE_CORRUPT ? -EBADMSG : -EIO;
	sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	if (rc != SQLITE_ROW) {
		sqlite3_finalize(q);
		return rc == SQLITE_DONE ? -ENOENT : rc == SQLITE_CORRUPT ? -EBADMSG : -EIO;
	}
	n = sqlite3_column_bytes(q, 0);
	*data = malloc(n > 0 ? (size_t)n : 1);
	if (!*data) {
		sqlite3_finalize(q);
		return -ENOMEM;
	}
	if (n > 0)
		memcpy(*data, sqlite3_column_blob(q, 0), (size_t)n);
	*len = (size_t)n;
	*last = sqlite3_column_int64(q, 1);
	*saved_ns = (uint64_t)sqlite3_column_int64(q, 2);
	sqlite3_finalize(q);
	return 0;
}

int64_t store_retain(struct store *s, uint64_t before_ns, unsigned max_rows)
{
	static const int del[] = { ST_DEL_DGRAM, ST_DEL_CAUSE, ST_DEL_IV, ST_DEL_JOBIV };
	int64_t n = 0;
	int rc = batch(s);

	if (rc)
		return batch_fail(s, rc, 0);
	for (size_t i = 0; i < sizeof(del) / sizeof(del[0]); i++) {
		sqlite3_stmt *q = s->st[del[i]];

		sqlite3_bind_int64(q, 1, before_ns > INT64_MAX ? INT64_MAX : (int64_t)before_ns);
		sqlite3_bind_int(q, 2, (int)max_rows);
		rc = run(q);
		if (rc)
			return batch_fail(s, rc, 0);
		n += sqlite3_changes(s->db);
	}
	s->batch_deleted += (uint64_t)n;
	return n;
}

int64_t store_count(struct store *s, const char *table)
{
	char sql[96], v[32];

	if (strcmp(table, "datagram") && strcmp(table, "interval") && strcmp(table, "cause") &&
	    strcmp(table, "node") && strcmp(table, "job") && strcmp(table, "job_interval"))
		return -EINVAL;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	if (query_text(s->db, sql, v, sizeof(v)) != SQLITE_OK)
		return -EIO;
	return strtoll(v, NULL, 10);
}

struct sqlite3 *store_db(struct store *s)
{
	return s->db;
}
