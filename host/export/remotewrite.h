/* SPDX-License-Identifier: MIT */
/*
 * remotewrite: Prometheus remote-write 1.0 sender (protobuf WriteRequest, snappy block compression, HTTP
 * POST with Content-Encoding: snappy and X-Prometheus-Remote-Write-Version: 0.1.0) for the collector
 * (`collect --remote-write URL`) and the per-host exporter (`serve --remote-write URL`). The caller pushes
 * snapshots of its exposition text (what /metrics serves, promfmt's format): each push becomes one
 * WriteRequest whose samples carry the push's timestamp, queued in a bounded buffer and sent by the
 * module's own thread; a receiver that is down or answers 5xx/429 is retried with backoff, keeping the
 * oldest requests first, and when the buffer is full the oldest request is dropped and counted. 4xx other
 * than 429 is a permanent refusal: the request is dropped and counted. Nothing is lost silently.
 *
 * Threads: push, stats and render_prom from any one thread at a time; the sender thread is internal.
 */
#ifndef VNOISE_HOST_EXPORT_REMOTEWRITE_H
#define VNOISE_HOST_EXPORT_REMOTEWRITE_H

#include <stddef.h>
#include <stdint.h>
#include "util/bufout.h"

#define REMOTEWRITE_DEFAULT_BUFFER (64u << 20) /* bytes of queued (compressed) requests */

struct remotewrite_cfg {
	const char *url; /* http://ADDR:PORT/path (numeric address or host name) */
	size_t buffer_bytes; /* 0: REMOTEWRITE_DEFAULT_BUFFER */
};

struct remotewrite_stats {
	uint64_t pushes; /* snapshots given to remotewrite_push */
	uint64_t requests_sent, samples_sent; /* accepted by the receiver (2xx) */
	uint64_t retries; /* POSTs that failed and were tried again */
	uint64_t dropped_requests, dropped_samples; /* buffer full, or refused (4xx) */
	uint64_t parse_errors; /* exposition lines that were not samples */
	uint64_t
	    duplicate_samples; /* a series met twice in one snapshot: the later one is not sent */
	uint64_t buffered_requests, buffered_bytes; /* waiting now */
};

struct remotewrite;

/* Check an http://HOST[:PORT][/path] URL (what remotewrite_start takes; for CLI parsing): 0 or -EINVAL with a
 * one-line reason in err. */
int remotewrite_url_check(const char *url, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Check the URL and start the sender. NULL with a one-line reason in err (a bad URL: EINVAL). */
struct remotewrite *remotewrite_start(const struct remotewrite_cfg *cfg, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* Queue one snapshot: the exposition text (len bytes), every sample stamped ts_ms (Unix ms). 0 or -errno
 * (ENOMEM: counted as dropped). */
int remotewrite_push(struct remotewrite *rw, const char *text, size_t len, int64_t ts_ms);

/* A consistent copy of the counters (all 0 for rw NULL). */
void remotewrite_stats(const struct remotewrite *rw, struct remotewrite_stats *st);

/* Its own counters as Prometheus families prefix_remote_write_* (e.g. prefix "vnoise_collect"). 0, or
 * -ENOSPC when o is full (bufout). rw NULL writes nothing. */
int remotewrite_render_prom(const struct remotewrite *rw, const char *prefix, struct bufout *o);

/* Try to send what is queued for at most flush_ns, then stop the thread and free rw; what could not be
 * sent is counted as dropped and said in one warning line. Accepts NULL. */
void remotewrite_stop(struct remotewrite *rw, uint64_t flush_ns);

#endif
