/* SPDX-License-Identifier: MIT */
/*
 * store: the collector's history in SQLite, one file in WAL mode, written by one thread (the
 * collector's receive loop) in batched transactions. The schema (STORE_SCHEMA_VERSION, PRAGMA user_version,
 * and the meta table) is documented in README.md:
 *   datagram  every accepted datagram verbatim, in arrival order: the engine is rebuilt from it at start
 *   interval  per node, job and interval the summary the datagrams carry (parts merged by upsert): compute,
 *             noise, noise by class and hypervisor class, verdict, sampled or counters only, times
 *   cause     per interval the sources the node named (top causes), one row per record
 *   node      per node the accounting (lost, late, duplicate, stale, restarts...), upserted each snapshot
 *   job       per job its name and node count; counter: the collector's datagram counters by result
 *   state     the engine's state snapshot (clusterstate.h) and the last datagram it covers: a start loads it
 *             and replays only the datagrams after it
 * Durability: WAL with synchronous=FULL: store_commit() returns once the batch is synced, so an OS crash or a
 * power cut loses at most the open batch (STORE_COMMIT_NS of datagrams), a kill -9 the same.
 * Retention: store_retain() deletes the rows older than a time, in bounded steps, in the open batch.
 * Readers (`vnoise-host query`, the sqlite3 shell) may read while the collector writes (WAL).
 * Not thread-safe: one struct store per thread.
 */
#ifndef VNOISE_HOST_COLLECT_STORE_H
#define VNOISE_HOST_COLLECT_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "format/datagram.h"

#define STORE_SCHEMA_VERSION 2 /* 1: no state table (upgraded when opened for writing) */
#define STORE_COMMIT_NS 500000000ull /* a batch is committed when this old (kill -9 loses less) */

struct store;

/* What a file is, from its first bytes: store_probe(). */
enum store_kind {
	STORE_ABSENT = 0, /* no such file, or empty */
	STORE_SQLITE = 1, /* an SQLite database (maybe not ours, maybe damaged) */
	STORE_PCAP = 2, /* a capture: the store's old format (pcap or pcapng) */
	STORE_OTHER = 3, /* anything else */
};
/* The kind of path, or -errno when it cannot be read. */
int store_probe(const char *path);

/*
 * Open (readonly: for queries, never creates) or create path; the schema is made when the database is new.
 * NULL with errno and a one-line reason in err: EBADMSG the file is not a database, fails PRAGMA
 * quick_check (not run readonly: a query only reads), or is not a vnoise store; EPROTO its schema is
 * newer than this build's; ENOENT (readonly) it does not exist; ENOSPC the disk is full; EIO otherwise.
 * Nothing is ever truncated.
 */
struct store *store_open(const char *path, int readonly, char *err, size_t errlen);
/* Commit what is pending and close; NULL ok. 0 or -errno (the last batch could not be committed). */
int store_close(struct store *s);

/*
 * Write errors. Every write goes into the open batch (one transaction); when one fails, or its commit does,
 * the whole batch is rolled back and its datagrams are counted as failed, so that the datagram table holds
 * whole datagrams only and stored + failed is every datagram given to store_add(). The next write opens a
 * new batch: when the disk has room again, storing goes on by itself. Errors are -ENOSPC (the database or
 * the disk is full; also -EDQUOT, -EFBIG as the system says) or -EIO.
 */
struct store_stats {
	uint64_t stored; /* datagrams committed */
	uint64_t
	    failed; /* datagrams given to store_add() that are not stored (failed, or rolled back) */
	uint64_t failures; /* batches rolled back */
	int last_err; /* -errno of the last failure, 0 if none */
	uint64_t deleted; /* rows the retention deleted (committed), all tables */
};
void store_get_stats(const struct store *s, struct store_stats *out);
/* The last failure in one line ("No space left on device (SQLite: database or disk is full)"), or "". */
const char *store_error(const struct store *s);

/*
 * One accepted datagram (buf[0..len) as received, v its validated view) from src at recv_ns
 * (CLOCK_REALTIME): the raw row, and for a report its interval and cause rows. Opens a batch when none is;
 * commits it when older than STORE_COMMIT_NS. 0 or -errno (see store_stats: the batch is rolled back).
 */
int store_add(struct store *s, uint64_t recv_ns, const struct sockaddr *src, socklen_t srclen,
	      const void *buf, size_t len, const struct datagram_view *v)
    __attribute__((warn_unused_result));

/* A node's accounting at a snapshot (from clusteragg_node_info()). */
struct store_node {
	uint64_t node_id, job_id, session_id;
	uint64_t datagrams, records, lost, late, dup, stale, restarts;
	uint64_t intervals_sampled, intervals_counters;
	uint64_t noise_ns, compute_ns, last_seen_ns;
	int registered, excluded;
	const char *addr; /* "ADDR:PORT" or "" */
};
int store_put_node(struct store *s, const struct store_node *n) __attribute__((warn_unused_result));
/* A job: id, name (NULL: none given), nodes now. */
int store_put_job(struct store *s, uint64_t job_id, const char *name, uint64_t nodes)
    __attribute__((warn_unused_result));
/* One collector counter (a datagram result name, "received", "lost"...) at value. */
int store_put_counter(struct store *s, const char *name, uint64_t value)
    __attribute__((warn_unused_result));

/* Commit the open batch now (if any). 0 or -errno (the batch rolled back, counted). */
int store_commit(struct store *s) __attribute__((warn_unused_result));
/* Commit if the open batch is older than STORE_COMMIT_NS at mono_ns (CLOCK_MONOTONIC); 0 or -errno. */
int store_tick(struct store *s, uint64_t mono_ns) __attribute__((warn_unused_result));

/*
 * Every stored datagram whose id is above after (0: all), oldest first, to fn (its return stops the walk and
 * is returned). 0, the callback's value, -EBADMSG (damaged), or -EIO. The address given is the sender's (a
 * sockaddr_in or sockaddr_in6, or NULL).
 */
typedef int store_replay_fn(void *ctx, uint64_t recv_ns, const struct sockaddr *src,
			    socklen_t srclen, const void *buf, size_t len);
int store_replay(struct store *s, int64_t after, store_replay_fn *fn, void *ctx);

/*
 * The state snapshot called name (data[0..len), the caller's) into the open batch: it covers the datagrams
 * stored up to its commit, the same transaction's included (their last id is recorded with it). 0 or -errno.
 */
int store_put_state(struct store *s, const char *name, const void *data, size_t len)
    __attribute__((warn_unused_result));
/*
 * The snapshot called name: *data (malloc'd, the caller frees), *len, the id of the last datagram it covers
 * (*last) and when it was saved (*saved_ns, CLOCK_REALTIME). 0, -ENOENT (none), -EBADMSG, -ENOMEM, -EIO.
 */
int store_get_state(struct store *s, const char *name, void **data, size_t *len, int64_t *last,
		    uint64_t *saved_ns) __attribute__((warn_unused_result));

/*
 * Retention: into the open batch, delete at most max_rows rows of each history table (datagram, cause,
 * interval, job_interval) older than before_ns (CLOCK_REALTIME; the collector's receive time, a job's
 * intervals by their start). Returns the rows deleted (counted in stats.deleted when committed; a caller
 * calls again while it returns max_rows or more) or -errno (the batch rolled back, counted).
 */
int64_t store_retain(struct store *s, uint64_t before_ns, unsigned max_rows)
    __attribute__((warn_unused_result));

/* The SQLite handle, for the query module's statements (owned by s). */
struct sqlite3 *store_db(struct store *s);

#endif
