/* SPDX-License-Identifier: MIT */
/*
 * httpd: the collector's tiny HTTP server for Prometheus scrapes (libmicrohttpd). It answers GET and HEAD
 * /metrics with the text the caller's render function writes (exposition 0.0.4, see host/export/promfmt), 404
 * to other paths and 405 to other methods; request bodies are ignored. It listens only on the address it
 * is given (the collector's default is loopback), serves at most HTTPD_MAX_CONNS connections at once and
 * drops one idle for HTTPD_TIMEOUT_S, so a slow or hostile client cannot pin it.
 *
 * Threads: one server thread (libmicrohttpd's internal polling thread, epoll on Linux) runs the render
 * function and does all the I/O; httpd_start/httpd_stop belong to one caller thread; httpd_port and
 * httpd_stats may be called from any thread. The server thread never gets SIGPIPE (libmicrohttpd blocks
 * it there and sends with MSG_NOSIGNAL). libmicrohttpd's own messages go to log_debug.
 */
#ifndef VNOISE_HOST_EXPORT_HTTPD_H
#define VNOISE_HOST_EXPORT_HTTPD_H

#include <stddef.h>
#include <stdint.h>
#include "util/bufout.h"

#define HTTPD_MAX_CONNS 32
#define HTTPD_MAX_CONNS_PER_IP 8 /* one client (source address) takes at most a quarter of them */
#define HTTPD_TIMEOUT_S 10
#define HTTPD_BODY_MIN (64u << 10) /* the first render buffer */
#define HTTPD_BODY_MAX (64u << 20) /* a body that does not fit this is answered 500 */

struct httpd;

/*
 * Fill o with the exposition text. Called from the server thread, so the callee locks what it reads.
 * Return 0, or -errno to answer 500. When o runs full (o->full, or -ENOSPC returned) the function is
 * called again with a buffer twice as big, up to HTTPD_BODY_MAX: it must start from scratch each time.
 */
typedef int httpd_render_fn(void *ctx, struct bufout *o);

/* Counters since httpd_start (each request is counted once, when answered). */
struct httpd_stats {
	uint64_t requests; /* answered, any status */
	uint64_t rejected; /* answered 404 or 405 */
	uint64_t errors; /* answered 500: the render failed, outgrew HTTPD_BODY_MAX, or no memory */
};

/*
 * Listen on spec "ADDR:PORT" (numeric IPv4) or "[IPv6]:PORT" (port 0 picks a free one) and serve
 * /metrics with fn(ctx, ...) until httpd_stop. Returns the server, or NULL with errno (EINVAL: spec not
 * numeric, EADDRINUSE, EACCES, EADDRNOTAVAIL, ...) and a one-line reason in err.
 */
struct httpd *httpd_start(const char *spec, httpd_render_fn *fn, void *ctx, char *err,
			  size_t errlen) __attribute__((warn_unused_result));
/* The bound port (the one picked when spec asked for port 0). */
uint16_t httpd_port(const struct httpd *h);
/* Close the listener and every connection, wait for the server thread, free h. Accepts NULL. */
void httpd_stop(struct httpd *h);

#endif
