/* SPDX-License-Identifier: MIT */
/*
 * clusteragg: the cluster collector's engine, without sockets or threads so that a live listener, a replayed
 * capture and the unit tests drive the same code. It validates report datagrams (shared/datagram), counts
 * every one it drops by reason, keeps per node the sequence accounting (lost, duplicated, replayed), totals
 * by class and source, a noise timeline and the temporal variation between intervals, and per job the
 * spatial variation between nodes and the slow-node ranking. Two modules work on its state: the rotation of
 * detailed sampling over the nodes (host/collect/clusterrot, seed 001) and its outputs (host/collect/
 * clusterout: Prometheus, the text and JSON reports, the status line).
 *
 * Not thread-safe: the caller serialises calls on one struct clusteragg, the rotation's and the outputs'
 * included. Memory is bounded by cfg.max_nodes and cfg.max_jobs; all of it belongs to the engine.
 */
#ifndef VNOISE_HOST_COLLECT_CLUSTERAGG_H
#define VNOISE_HOST_COLLECT_CLUSTERAGG_H

#include <stdint.h>
#include <sys/socket.h>
#include "format/keyfile.h"
#include "format/datagram.h"

#define CS_MAX_JOBS_DEFAULT 1024

/* Why a datagram was dropped (or not): indexes of clusteragg_stats.dgrams[]. */
enum clusteragg_res {
	CS_OK = 0, /* used */
	CS_NOT_REPORT, /* -ENOMSG: stray traffic */
	CS_VERSION, /* -EPROTO */
	CS_MALFORMED, /* -EBADMSG */
	CS_UNKNOWN_KEY, /* -ENOKEY */
	CS_BAD_MAC, /* -EKEYREJECTED: failed authentication */
	CS_DUP, /* authentic, already seen (network duplicate or replay) */
	CS_STALE, /* authentic, too old to tell (older session, or behind the replay window) */
	CS_WRONG_KIND, /* authentic, but a kind a collector does not take (a SAMPLE command) */
	CS_TOO_MANY_NODES, /* authentic, a new node beyond cfg.max_nodes (or no memory for it) */
	CS_TOO_MANY_JOBS, /* authentic, a new job beyond cfg.max_jobs */
	CS_RES_MAX,
};
const char *clusteragg_res_name(int res); /* "ok", "not-report", ..., stable (metric labels) */

struct clusteragg_cfg {
	const struct keyfile *keys; /* not owned; commands are sealed with keys->keys[0] */
	/* the rotation (host/collect/clusterrot) */
	uint64_t slot_ns; /* round-robin slot; 0: no rotation (every node reports counters only) */
	unsigned sample_nodes; /* nodes sampled per slot and job (>= 1) */
	unsigned wait_nodes; /* a job's rotation starts once it has this many live nodes (>= 1) */
	uint64_t max_slots; /* a job stops rotating after this many slots; 0: never */
	double
	    exclude_ratio; /* out of the rotation when sampled compute > (1 + ratio) x unsampled */
	unsigned exclude_min; /* intervals needed on each side before judging (>= 1) */
	unsigned max_nodes; /* bound on nodes kept */
	unsigned max_jobs; /* bound on jobs kept (a job stays once made); 0: CS_MAX_JOBS_DEFAULT */
	/* Send a command datagram; 0 or -errno (counted). Called from clusterrot_tick(). */
	int (*send)(void *ctx, const struct sockaddr *to, socklen_t tolen, const void *buf,
		    size_t len);
	void *send_ctx;
	/* Job names to show for job ids (job_id = datagram_job_id(name)); not owned; may be NULL. */
	const char *const *job_names;
	size_t njob_names;
	/* One line about a node registering, restarting, being excluded (no newline); may be NULL. */
	void (*event)(void *ctx, const char *line);
	void *event_ctx;
	/*
	 * Each datagram counted CS_OK, with its validated view, after the engine took it (the store keeps it);
	 * may be NULL. Called from clusteragg_ingest(), in the caller's thread.
	 */
	void (*accepted)(void *ctx, const struct datagram_view *v, uint64_t now_ns);
	void *accepted_ctx;
};

struct clusteragg_stats {
	uint64_t dgrams[CS_RES_MAX]; /* datagrams by result */
	uint64_t received; /* all datagrams given to clusteragg_ingest() */
	uint64_t lost; /* sum over nodes: sequence numbers never received */
	uint64_t cmds_sent, cmd_errors; /* SAMPLE commands */
	uint64_t nodes, jobs;
};

struct clusteragg;

/* NULL and errno (ENOMEM, EINVAL for a bad cfg). */
struct clusteragg *clusteragg_new(const struct clusteragg_cfg *cfg);
void clusteragg_free(struct clusteragg *cs); /* NULL ok */

/*
 * One datagram (untrusted: every byte is checked) that arrived from src at the collector's CLOCK_REALTIME
 * now_ns. Returns the enum clusteragg_res it was counted under (CS_OK: used).
 */
int clusteragg_ingest(struct clusteragg *cs, const void *buf, size_t len,
		      const struct sockaddr *src, socklen_t srclen, uint64_t now_ns);

/* Counters so far. */
void clusteragg_stats(const struct clusteragg *cs, struct clusteragg_stats *st);

/*
 * Close every interval still open for the spatial statistics (the end of a run, or of a replay): later
 * reports of those intervals count per node but no longer between nodes.
 */
void clusteragg_close_all(struct clusteragg *cs);

/*
 * Session changes. A replay is a copy of a datagram sealed earlier; a node that restarts seals new ones.
 * So a datagram that would change the node's session is taken only when it was sealed after the newest
 * datagram accepted from the node and not more than CS_FRESH_NS after its receipt:
 *   - a newer session: the node restarted (as the header's session_id says it grows);
 *   - an older session (the node's clock stepped back before it restarted), or the current one behind its
 *     window (its VM restored from a snapshot): also the current session quiet for CS_RESUME_QUIET_NS and
 *     the seal time within CS_FRESH_NS of the receipt; taken as a restart ("resumed").
 * Anything else is stale. A seal time counts as at most CS_FRESH_NS past its receipt, so a forged session,
 * however far ahead, locks the node out for at most CS_LOCKOUT_MAX_NS after the forger's last
 * datagram (its clock within CS_FRESH_NS of the collector's), a collector restart included: the state and
 * the store's times are the receipts'.
 */
#define CS_RESUME_QUIET_NS 3000000000ull
#define CS_FRESH_NS 5000000000ull
#define CS_FRESH_TEXT "5 s"
#define CS_LOCKOUT_MAX_NS (2 * CS_FRESH_NS)

/* A node as the store snapshots it (read-only view of the engine). */
struct clusteragg_node_info {
	uint64_t node_id, job_id, session_id;
	uint64_t datagrams, records, lost, late, dup, stale, restarts;
	uint64_t resumed; /* of the restarts, taken with an older session or behind the window */
	uint64_t intervals_sampled, intervals_counters;
	uint64_t noise_ns, compute_ns, last_seen_ns;
	int registered, excluded;
	struct sockaddr_storage addr; /* where its HELLO came from */
	socklen_t addrlen; /* 0: no HELLO yet */
};
/* A job: its id, the name the collector was given (NULL: none; owned by the engine's cfg), nodes now. */
struct clusteragg_job_info {
	uint64_t job_id;
	const char *name;
	uint64_t nodes;
};
/* Node i (0 <= i < stats.nodes) and job j (0 <= j < stats.jobs) into *out; -ENOENT beyond. */
int clusteragg_node_info(const struct clusteragg *cs, uint32_t i, struct clusteragg_node_info *out);
int clusteragg_job_info(const struct clusteragg *cs, uint32_t j, struct clusteragg_job_info *out);

#endif
