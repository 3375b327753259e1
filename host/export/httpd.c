/* SPDX-License-Identifier: MIT */
/*
 * httpd: libmicrohttpd around a listening socket of our own. We create, bind and listen ourselves so a
 * failure says exactly why (address in use, not available, permission) and so IPv6 listeners are v6-only;
 * libmicrohttpd then owns the socket. A request without a body is answered once it is complete, so
 * keep-alive works (Prometheus reuses its connection); one that announces a body is answered from its
 * first callback, before any of the body is read, and libmicrohttpd closes that connection after the
 * answer. /metrics is rendered into a heap buffer that grows by doubling from the size that fitted last
 * time, and is handed to libmicrohttpd, which frees it after sending.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <microhttpd.h>
#include "export/httpd.h"
#include "util/log.h"
#include "util/parse.h"

#define METRICS_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_TYPE "text/plain; charset=utf-8"

struct httpd {
	struct MHD_Daemon *d;
	httpd_render_fn *fn;
	void *ctx;
	uint16_t port; /* set before the server thread starts, read-only after */
	bool starting; /* atomic: libmicrohttpd's messages are kept in why while httpd_start runs */
	char why[160];
	/* the server thread's own */
	size_t body_hint; /* bytes: the buffer size to render into first */
	bool failing; /* the last /metrics answer was a 500 (warn once per run of failures) */
	/* written by the server thread, read anywhere (atomics) */
	uint64_t requests, rejected, errors;
};

__attribute__((format(printf, 2, 0))) static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct httpd *h = cls;
	int saved = errno;
	char msg[256];
	size_t n;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	if (__atomic_load_n(&h->starting, __ATOMIC_ACQUIRE))
		snprintf(h->why, sizeof(h->why), "%s", msg);
	log_debug("httpd: libmicrohttpd: %s", msg);
	errno = saved;
}

/* A response from a buffer libmicrohttpd copies or keeps (mode), with its Content-Type (and Allow). */
static struct MHD_Response *response(const char *body, size_t len, enum MHD_ResponseMemoryMode mode,
				     const char *type, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mode);

	if (!r)
		return NULL;
	if (MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
	    (allow && MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow) != MHD_YES)) {
		MHD_destroy_response(r);
		return NULL;
	}
	return r;
}

static struct MHD_Response *text(const char *s, const char *allow)
{
	return response(s, strlen(s), MHD_RESPMEM_PERSISTENT, TEXT_TYPE, allow);
}

/* Render into a fresh heap buffer: 0 with *body (the caller's) and *len, or -errno. */
static int render(struct httpd *h, char **body, size_t *len)
{
	size_t cap = h->body_hint;
	char *buf = NULL;
	int err;

	for (;;) {
		struct bufout o;

		buf = malloc(cap);
		if (!buf) {
			err = -ENOMEM;
			goto out;
		}
		buf[0] = '\0';
		o = (struct bufout){ buf, cap, 0, 0 };
		err = h->fn(h->ctx, &o);
		if (err < 0 && err != -ENOSPC)
			goto out;
		if (!o.full && err != -ENOSPC) {
			*len = o.off;
			break;
		}
		free(buf);
		buf = NULL;
		if (cap >= HTTPD_BODY_MAX) {
			err = -EFBIG;
			goto out;
		}
		cap *= 2;
	}
	/* start where this one fitted next time, one step smaller when the text shrank a lot */
	h->body_hint = *len < cap / 4 && cap > HTTPD_BODY_MIN ? cap / 2 : cap;
	*body = buf;
	buf = NULL;
	err = 0;
out:
	free(buf);
	return err;
}

static struct MHD_Response *metrics(struct httpd *h, unsigned int *status)
{
	struct MHD_Response *r;
	char *body = NULL, msg[128];
	size_t len = 0;
	int err = render(h, &body, &len);

	if (err) {
		if (h->failing)
			log_debug("httpd: /metrics: %s (500)", strerror(-err));
		else
			log_warn("httpd: /metrics: %s (answered 500)", strerror(-err));
		h->failing = true;
		*status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		snprintf(msg, sizeof(msg), "cannot render the metrics: %s\n", strerror(-err));
		return response(msg, strlen(msg), MHD_RESPMEM_MUST_COPY, TEXT_TYPE, NULL);
	}
	h->failing = false;
	*status = MHD_HTTP_OK;
	r = response(body, len, MHD_RESPMEM_MUST_FREE, METRICS_TYPE, NULL);
	if (!r)
		free(body);
	return r;
}

/* The request announces a body (we never read one). */
static bool has_body(struct MHD_Connection *c)
{
	const char *cl =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);

	return (cl && strcmp(cl, "0") != 0) ||
	       MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_len, void **req_cls)
{
	static int complete_later;
	struct httpd *h = cls;
	struct MHD_Response *r;
	unsigned int status;
	enum MHD_Result ret;

	if (!*req_cls && !has_body(c)) {
		*req_cls = &complete_later; /* called again when the request is complete */
		return MHD_YES;
	}
	if (*upload_len) {
		*upload_len = 0; /* unannounced body bytes: dropped */
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") != 0) {
		status = MHD_HTTP_NOT_FOUND;
		r = text("not found: try /metrics\n", NULL);
	} else if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
		   strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		r = text("method not allowed: GET or HEAD\n", "GET, HEAD");
	} else {
		r = metrics(h, &status); /* HEAD: libmicrohttpd sends the headers only */
	}
	__atomic_fetch_add(&h->requests, 1, __ATOMIC_RELAXED);
	if (status == MHD_HTTP_NOT_FOUND || status == MHD_HTTP_METHOD_NOT_ALLOWED)
		__atomic_fetch_add(&h->rejected, 1, __ATOMIC_RELAXED);
	if (!r || status == MHD_HTTP_INTERNAL_SERVER_ERROR)
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
	if (!r)
		return MHD_NO; /* out of memory: libmicrohttpd closes the connection */
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

struct httpd *httpd_start(const char *spec, httpd_render_fn *fn, void *ctx, char *err,
			  size_t errlen)
{
	unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct httpd *h = NULL;
	int fd = -1, e = 0, one = 1;

	if (parse_sockaddr(spec, 0, &ss, &sslen)) {
		e = EINVAL;
		snprintf(err, errlen, "'%s': " PARSE_SOCKADDR_WANT, spec);
		goto out;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		e = errno;
		snprintf(err, errlen, "%s: out of memory", spec);
		goto out;
	}
	h->fn = fn;
	h->ctx = ctx;
	h->body_hint = HTTPD_BODY_MIN;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		e = errno;
		snprintf(err, errlen, "%s: socket: %s", spec, strerror(e));
		goto out;
	}
	/* SO_REUSEADDR: a restart may bind over TIME_WAIT; a live listener still means EADDRINUSE */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    (ss.ss_family == AF_INET6 &&
	     setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) < 0)) {
		e = errno;
		snprintf(err, errlen, "%s: setsockopt: %s", spec, strerror(e));
		goto out;
	}
	if (bind(fd, (struct sockaddr *)&ss, sslen) < 0 || listen(fd, HTTPD_MAX_CONNS) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sslen) < 0) {
		e = errno;
		snprintf(err, errlen, "%s: %s", spec, strerror(e));
		goto out;
	}
	if (ss.ss_family == AF_INET6) {
		h->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		flags |= MHD_USE_IPv6;
	} else {
		h->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	}
	__atomic_store_n(&h->starting, true, __ATOMIC_RELEASE);
	errno = 0;
	h->d = MHD_start_daemon(flags, 0, NULL, NULL, handle, h, MHD_OPTION_EXTERNAL_LOGGER,
				mhd_log, h, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTPD_MAX_CONNS,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT,
				(unsigned int)HTTPD_MAX_CONNS_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
				(unsigned int)HTTPD_TIMEOUT_S, MHD_OPTION_END);
	/*
	 * From here the socket is libmicrohttpd's: it closes it in httpd_stop, and on most (0.9.75: not
	 * all) of its failure paths, so we never close it ourselves.
	 */
	fd = -1;
	if (!h->d) {
		e = errno ? errno : EIO;
		snprintf(err, errlen, "%s: libmicrohttpd did not start%s%s", spec,
			 h->why[0] ? ": " : "", h->why);
		goto out;
	}
	__atomic_store_n(&h->starting, false, __ATOMIC_RELEASE);
out:
	if (e) {
		if (fd >= 0)
			close(fd);
		free(h);
		errno = e;
		return NULL;
	}
	return h;
}

uint16_t httpd_port(const struct httpd *h)
{
	return h->port;
}

void httpd_stats(const struct httpd *h, struct httpd_stats *st)
{
	st->requests = __atomic_load_n(&h->requests, __ATOMIC_RELAXED);
	st->rejected = __atomic_load_n(&h->rejected, __ATOMIC_RELAXED);
	st->errors = __atomic_load_n(&h->errors, __ATOMIC_RELAXED);
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->d);
	free(h);
}
