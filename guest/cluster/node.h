/* SPDX-License-Identifier: MIT */
/*
 * node: the node end of the cluster reports. A node sends its interval reports to the collector
 * as authenticated datagrams (protocol/cluster.h) from one connected UDP socket, registers with a HELLO, and
 * takes SAMPLE commands back on the same socket: while a command's lease runs the node is "sampled" and
 * reports in detail (VN_REPORT_INTERVAL), otherwise from counters only (VN_REPORT_COUNTERS). Everything the
 * node delivered is added up in its stats, so a node's totals can be compared with the collector's.
 * Not thread-safe: one thread per struct node.
 */
#ifndef VNOISE_GUEST_CLUSTER_NODE_H
#define VNOISE_GUEST_CLUSTER_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include "format/keyfile.h"
#include "format/datagram.h"

#define NODE_LEASE_MAX_NS (3600ull * 1000000000ull) /* a SAMPLE lease is capped at an hour */

struct node_cfg {
	uint64_t node_id;
	uint64_t session_id; /* 0: CLOCK_REALTIME now, in ns (grows at each restart) */
	uint64_t job_id; /* datagram_job_id(job name) */
	const struct keyfile *keys; /* not owned; the node seals with keys->keys[0] */
	struct sockaddr_storage collector;
	socklen_t collector_len;
};

struct node_stats {
	uint64_t datagrams; /* sent */
	uint64_t
	    send_errors; /* not sent (the sequence number is used up: the collector counts it lost) */
	uint64_t intervals_sampled, intervals_counters; /* intervals of which a datagram was sent */
	uint64_t noise_ns, compute_ns; /* summary records (class NONE) sent */
	uint64_t class_ns[VN_CLASS_MAX]; /* per-class records (source NONE) sent */
	uint64_t records; /* records sent */
	uint64_t cmds; /* SAMPLE commands accepted */
	uint64_t cmds_bad; /* failed datagram_parse(): forged, corrupted, other key, not a report */
	uint64_t cmds_foreign; /* valid, but for another node, session or job, or not a SAMPLE */
	uint64_t cmds_replayed; /* valid, but not newer than the last accepted one */
	uint64_t leases; /* commands that started a sampled period (not extensions of one) */
};

struct node {
	int fd; /* connected UDP socket, nonblocking; -1 closed */
	struct node_cfg cfg;
	uint64_t seq; /* next datagram's sequence number */
	uint64_t last_cmd_seq; /* newest SAMPLE accepted */
	uint64_t lease_end_ns; /* CLOCK_MONOTONIC: sampled while now < lease_end_ns */
	uint64_t slot; /* interval_id of the last SAMPLE */
	struct node_stats st;
	/*
	 * How a datagram leaves: NULL sends on fd. A replacement returns the bytes sent or -errno (tests use it
	 * to lose datagrams on purpose); it is called with xmit_ctx.
	 */
	ssize_t (*xmit)(void *ctx, const void *buf, size_t len);
	void *xmit_ctx;
};

/* Open the socket to cfg->collector. 0 or -errno with a one-line reason in err. */
int node_open(struct node *n, const struct node_cfg *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Register (HELLO). 0 or -errno (counted in send_errors). */
int node_hello(struct node *n, uint64_t now_rt_ns) __attribute__((warn_unused_result));
/*
 * Send one interval's records (any number: split into parts of at most 26) as kind VN_REPORT_INTERVAL or
 * VN_REPORT_COUNTERS. Returns 0 when every part went out, else the last -errno (the parts that failed are
 * counted in send_errors; the interval counts when at least one part was sent, as the collector counts).
 */
int node_send(struct node *n, uint16_t kind, uint64_t interval_id, uint64_t start_rt_ns,
	      uint64_t end_rt_ns, const struct vn_report_rec *rec, size_t nrec, uint64_t now_rt_ns)
    __attribute__((warn_unused_result));
/*
 * Handle one datagram received on the socket (a command from the collector) at CLOCK_MONOTONIC now.
 * 0 accepted (lease set), or: a datagram_parse() error (cmds_bad), -ESRCH another node/session/job or not a
 * SAMPLE (cmds_foreign), -EALREADY a replay (cmds_replayed).
 */
int node_cmd(struct node *n, const void *buf, size_t len, uint64_t now_mono_ns);
/* Read and handle every datagram waiting on the socket. Returns how many commands were accepted. */
int node_poll(struct node *n, uint64_t now_mono_ns);
/* Whether the node is sampled now (a lease runs). */
static inline bool node_sampled(const struct node *n, uint64_t now_mono_ns)
{
	return now_mono_ns < n->lease_end_ns;
}
void node_close(struct node *n);

#endif
