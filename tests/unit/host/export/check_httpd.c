/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/export/httpd over real loopback sockets and raw HTTP/1.1: GET and HEAD /metrics (status,
 * content type, length, body, keep-alive), 404 and 405 (Allow), a request body ignored, a 1 MB render
 * served whole (buffer growth and the size remembered), a failing render and one that outgrows the cap
 * answered 500, the counters, the connection limit, a client that resets mid-response (no SIGPIPE, server
 * still up), binding only to the given address, IPv6, and start failures (port in use, a spec that is not an address), localhost.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "export/httpd.h"
#include "export/httpd_priv.h"

#define SAMPLE "# HELP t_up Up.\n# TYPE t_up gauge\nt_up 1\n"

enum mode { SMALL, BIG, FAIL, ENDLESS };

struct ctx {
	enum mode mode;
	size_t big; /* bytes for BIG */
	int calls;
	size_t last_cap;
};

static int render(void *arg, struct bufout *o)
{
	struct ctx *c = arg;
	char line[64];

	c->calls++;
	c->last_cap = o->len;
	switch (c->mode) {
	case SMALL:
		bufout_put(o, "%s", SAMPLE);
		return 0;
	case BIG:
		/* 64-byte lines "x_NNNNNN 1...\n" up to c->big bytes */
		memset(line, 'a', sizeof(line));
		for (size_t n = 0; n < c->big / 64 && !o->full; n++)
			bufout_put(o, "x_%06zu %.*s\n", n, 54, line);
		return 0;
	case FAIL:
		return -EIO;
	case ENDLESS:
		o->full = 1;
		return 0;
	}
	return -EINVAL;
}

struct resp {
	char *buf; /* the whole response, NUL-terminated */
	size_t len;
	int status; /* 0: no HTTP answer (closed or reset) */
	const char *body;
	size_t body_len;
};

static void resp_free(struct resp *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

/* The value of header name in r (a pointer into r->buf, up to "\r\n"), or NULL. */
static const char *header(const struct resp *r, const char *name, size_t *vlen)
{
	size_t n = strlen(name);

	for (const char *p = strstr(r->buf, "\r\n"); p && p + 2 < r->body;
	     p = strstr(p + 2, "\r\n")) {
		if (!strncasecmp(p + 2, name, n) && p[2 + n] == ':') {
			const char *v = p + 3 + n;

			while (*v == ' ')
				v++;
			*vlen = (size_t)(strstr(v, "\r\n") - v);
			return v;
		}
	}
	return NULL;
}

static long content_length(const struct resp *r)
{
	size_t n;
	const char *v = header(r, "Content-Length", &n);

	return v ? strtol(v, NULL, 10) : -1;
}

/*
 * A connection to addr:port of family, from IPv4 source address src when not NULL (bound first: any
 * 127.0.0.0/8 address is local), with a 5 s receive timeout; -1 with errno when refused.
 */
static int connect_from(int family, const char *src, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct timeval tv = { 5, 0 };
	socklen_t len;
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	if (src) {
		struct sockaddr_in me = { .sin_family = AF_INET };

		ck_assert_int_eq(family, AF_INET);
		ck_assert_int_eq(inet_pton(AF_INET, src, &me.sin_addr), 1);
		ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	}
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET, addr, &a->sin_addr), 1);
		len = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET6, addr, &a->sin6_addr), 1);
		len = sizeof(*a);
	}
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	if (connect(fd, (struct sockaddr *)&ss, len) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static int connect_to(int family, const char *addr, uint16_t port)
{
	return connect_from(family, NULL, addr, port);
}

/*
 * Send req on fd (unless NULL) and read one response: until EOF, or until the headers and Content-Length
 * bytes of body are in (no body for HEAD), so keep-alive connections work too.
 */
static void exchange(int fd, const char *req, bool head, struct resp *r)
{
	size_t cap = 4096;
	char *end;

	memset(r, 0, sizeof(*r));
	if (req)
		ck_assert_int_eq(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
	r->buf = malloc(cap);
	ck_assert_ptr_nonnull(r->buf);
	for (;;) {
		ssize_t n;

		if (r->len + 1 == cap) {
			cap *= 2;
			r->buf = realloc(r->buf, cap);
			ck_assert_ptr_nonnull(r->buf);
		}
		n = recv(fd, r->buf + r->len, cap - 1 - r->len, 0);
		if (n < 0 && errno == ECONNRESET)
			break;
		ck_assert_msg(n >= 0, "recv: %s", strerror(errno));
		if (n == 0)
			break;
		r->len += (size_t)n;
		r->buf[r->len] = '\0';
		end = strstr(r->buf, "\r\n\r\n");
		if (end) {
			long cl;

			r->body = end + 4;
			r->body_len = r->len - (size_t)(r->body - r->buf);
			cl = content_length(r);
			if (head || (cl >= 0 && r->body_len >= (size_t)cl))
				break;
		}
	}
	r->buf[r->len] = '\0';
	if (!r->body)
		r->body = r->buf + r->len;
	if (!strncmp(r->buf, "HTTP/1.", 7))
		r->status = atoi(r->buf + 9);
}

/* One request on a fresh connection to 127.0.0.1:port. */
static void request(uint16_t port, const char *req, bool head, struct resp *r)
{
	int fd = connect_to(AF_INET, "127.0.0.1", port);

	ck_assert_int_ge(fd, 0);
	exchange(fd, req, head, r);
	close(fd);
}

/* An HTTP/1.1 request that asks the server to close after answering. */
#define REQ(method, path, headers, body)                                                     \
	method " " path " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n" headers "\r" \
	       "\n" body
#define GET(path) REQ("GET", path, "", "")

/* Header name of r is there and is exactly want. */
static void check_header(const struct resp *r, const char *name, const char *want)
{
	size_t n;
	const char *v = header(r, name, &n);

	ck_assert_ptr_nonnull(v);
	ck_assert_uint_eq(n, strlen(want));
	ck_assert(!strncmp(v, want, n));
}

/* req on a fresh connection to 127.0.0.1:port is answered 200 with the SAMPLE body. */
static void request_sample(uint16_t port, const char *req)
{
	struct resp r;

	request(port, req, false, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, SAMPLE);
	resp_free(&r);
}

/* Each of the n requests, on a fresh connection, is answered status (and with "Allow: allow" unless NULL). */
static void request_each(uint16_t port, const char *const *reqs, size_t n, int status,
			 const char *allow)
{
	struct resp r;

	for (size_t i = 0; i < n; i++) {
		request(port, reqs[i], false, &r);
		ck_assert_int_eq(r.status, status);
		if (allow)
			check_header(&r, "Allow", allow);
		resp_free(&r);
	}
}

static struct httpd *start(struct ctx *c)
{
	char err[256] = "";
	struct httpd *h = httpd_start("127.0.0.1:0", render, c, err, sizeof(err));

	ck_assert_msg(h, "httpd_start: %s", err);
	ck_assert_uint_ne(httpd_port(h), 0);
	return h;
}

START_TEST(test_get)
{
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c);
	struct httpd_stats st;
	struct resp r;

	request(httpd_port(h), GET("/metrics"), false, &r);
	ck_assert_int_eq(r.status, 200);
	check_header(&r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
	ck_assert_int_eq(content_length(&r), (long)strlen(SAMPLE));
	ck_assert_str_eq(r.body, SAMPLE);
	resp_free(&r);
	request_sample(httpd_port(h), GET("/metrics?name[]=t_up")); /* the query is not the path */
	{ /* keep-alive: two scrapes on one connection */
		int fd = connect_to(AF_INET, "127.0.0.1", httpd_port(h));

		ck_assert_int_ge(fd, 0);
		for (int i = 0; i < 2; i++) {
			exchange(fd, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", false, &r);
			ck_assert_int_eq(r.status, 200);
			ck_assert_ptr_null(strcasestr(r.buf, "Connection: close"));
			ck_assert_str_eq(r.body, SAMPLE);
			resp_free(&r);
		}
		close(fd);
	}
	httpd_stats(h, &st);
	ck_assert_uint_eq(st.requests, 4);
	ck_assert_uint_eq(st.rejected, 0);
	ck_assert_uint_eq(st.errors, 0);
	ck_assert_int_eq(c.calls, 4);
	httpd_stop(h);
}
END_TEST

START_TEST(test_head)
{
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c);
	struct resp r;
	size_t n;

	/* read to EOF (the server closes after the answer): the headers announce a body, none follows */
	request(httpd_port(h), REQ("HEAD", "/metrics", "", ""), false, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_ptr_nonnull(header(&r, "Content-Type", &n));
	ck_assert_int_eq(content_length(&r), (long)strlen(SAMPLE));
	ck_assert_uint_eq(r.body_len, 0);
	resp_free(&r);
	request(httpd_port(h), "HEAD /metrics HTTP/1.0\r\n\r\n", false, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_len, 0);
	resp_free(&r);
	ck_assert_int_eq(c.calls, 2);
	httpd_stop(h);
}
END_TEST

START_TEST(test_not_found)
{
	static const char *const reqs[] = {
		GET("/other"),
		GET("/"),
		GET("/metrics/"),
		GET("/metricsx"),
		REQ("POST", "/other", "Content-Length: 0\r\n", ""),
	};
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c);
	struct httpd_stats st;

	request_each(httpd_port(h), reqs, sizeof(reqs) / sizeof(reqs[0]), 404, NULL);
	ck_assert_int_eq(c.calls, 0);
	httpd_stats(h, &st);
	ck_assert_uint_eq(st.requests, 5);
	ck_assert_uint_eq(st.rejected, 5);
	ck_assert_uint_eq(st.errors, 0);
	httpd_stop(h);
}
END_TEST

START_TEST(test_method)
{
	static const char *const reqs[] = {
		REQ("POST", "/metrics", "Content-Length: 11\r\n", "hello world"),
		REQ("PUT", "/metrics", "Content-Length: 3\r\n", "abc"),
		REQ("POST", "/metrics", "Transfer-Encoding: chunked\r\n",
		    "5\r\nhello\r\n0\r\n\r\n"),
		REQ("DELETE", "/metrics", "", ""),
		REQ("OPTIONS", "/metrics", "", ""),
	};
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c);
	struct httpd_stats st;

	request_each(httpd_port(h), reqs, sizeof(reqs) / sizeof(reqs[0]), 405, "GET, HEAD");
	ck_assert_int_eq(c.calls, 0);
	httpd_stats(h, &st);
	ck_assert_uint_eq(st.rejected, 5);
	/* a GET carrying a body is still answered */
	request_sample(httpd_port(h), REQ("GET", "/metrics", "Content-Length: 4\r\n", "junk"));
	httpd_stop(h);
}
END_TEST

START_TEST(test_big)
{
	struct ctx c = { .mode = BIG, .big = 1 << 20 };
	struct httpd *h = start(&c);
	struct resp r;

	request(httpd_port(h), GET("/metrics"), false, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(content_length(&r), 1 << 20);
	ck_assert_uint_eq(r.body_len, 1 << 20);
	ck_assert(!strncmp(r.body, "x_000000 aaaa", 13));
	ck_assert(!strncmp(r.body + r.body_len - 64, "x_016383 aaaa", 13));
	/* 64 KiB .. 1 MiB are too small (1 MiB leaves no room for the NUL): six renders */
	ck_assert_int_eq(c.calls, 6);
	ck_assert_uint_eq(c.last_cap, 2 << 20);
	resp_free(&r);
	c.calls = 0;
	request(httpd_port(h), GET("/metrics"), false, &r); /* starts at the size that fitted */
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body_len, 1 << 20);
	ck_assert_int_eq(c.calls, 1);
	resp_free(&r);
	c.mode = SMALL; /* a much smaller text: one step down each time */
	c.calls = 0;
	request(httpd_port(h), GET("/metrics"), false, &r);
	ck_assert_str_eq(r.body, SAMPLE);
	ck_assert_int_eq(c.calls, 1);
	ck_assert_uint_eq(c.last_cap, 2 << 20);
	resp_free(&r);
	request(httpd_port(h), GET("/metrics"), false, &r);
	ck_assert_uint_eq(c.last_cap, 1 << 20);
	resp_free(&r);
	httpd_stop(h);
}
END_TEST

START_TEST(test_render_error)
{
	struct ctx c = { .mode = FAIL };
	struct httpd *h = start(&c);
	struct httpd_stats st;
	struct resp r;

	request(httpd_port(h), GET("/metrics"), false, &r);
	ck_assert_int_eq(r.status, 500);
	ck_assert_ptr_nonnull(strstr(r.body, "Input/output error"));
	resp_free(&r);
	request(httpd_port(h), REQ("HEAD", "/metrics", "", ""), true, &r);
	ck_assert_int_eq(r.status, 500);
	resp_free(&r);
	c.mode = SMALL; /* and recovers */
	request(httpd_port(h), GET("/metrics"), false, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	httpd_stats(h, &st);
	ck_assert_uint_eq(st.requests, 3);
	ck_assert_uint_eq(st.errors, 2);
	ck_assert_uint_eq(st.rejected, 0);
	httpd_stop(h);
}
END_TEST

START_TEST(test_too_big)
{
	struct ctx c = { .mode = ENDLESS };
	struct httpd *h = start(&c);
	struct httpd_stats st;
	struct resp r;

	request(httpd_port(h), GET("/metrics"), false, &r);
	ck_assert_int_eq(r.status, 500);
	ck_assert_int_eq(c.calls, 11); /* 64 KiB, 128 KiB, ... 64 MiB */
	ck_assert_uint_eq(c.last_cap, HTTPD_BODY_MAX);
	resp_free(&r);
	httpd_stats(h, &st);
	ck_assert_uint_eq(st.errors, 1);
	httpd_stop(h);
}
END_TEST

START_TEST(test_conn_limit)
{
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c);
	struct timeval shortwait = { 0, 300 * 1000 };
	int fds[HTTPD_MAX_CONNS], fd, status = 0;
	bool waiting;
	struct resp r;
	char buf[64];
	ssize_t n;

	/*
	 * HTTPD_MAX_CONNS keep-alive connections, each known to be accepted (it answered), from as many
	 * source addresses as the per-client limit needs
	 */
	for (int i = 0; i < HTTPD_MAX_CONNS; i++) {
		char src[32];

		snprintf(src, sizeof(src), "127.0.0.%d", 2 + i / HTTPD_MAX_CONNS_PER_IP);
		fds[i] = connect_from(AF_INET, src, "127.0.0.1", httpd_port(h));
		ck_assert_int_ge(fds[i], 0);
		exchange(fds[i], "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", false, &r);
		ck_assert_int_eq(r.status, 200);
		resp_free(&r);
	}
	/*
	 * One more is not served: it waits in the kernel's backlog (libmicrohttpd stops accepting at the
	 * limit) or is accepted and closed, depending on the libmicrohttpd version.
	 */
	fd = connect_from(AF_INET, "127.0.0.200", "127.0.0.1", httpd_port(h));
	ck_assert_int_ge(fd, 0);
	(void)send(fd, GET("/metrics"), strlen(GET("/metrics")), MSG_NOSIGNAL);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &shortwait, sizeof(shortwait)), 0);
	n = recv(fd, buf, sizeof(buf), 0);
	ck_assert_int_le(n, 0);
	waiting = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
	close(fds[0]);
	if (waiting) { /* served once a slot is free */
		struct timeval tv = { 5, 0 };

		ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
		exchange(fd, NULL, false, &r);
		status = r.status;
		resp_free(&r);
	}
	close(fd);
	for (int tries = 0; tries < 100 && status != 200; tries++) { /* or a new one is */
		usleep(20 * 1000);
		request(httpd_port(h), GET("/metrics"), false, &r);
		status = r.status;
		resp_free(&r);
	}
	ck_assert_int_eq(status, 200);
	for (int i = 1; i < HTTPD_MAX_CONNS; i++)
		close(fds[i]);
	httpd_stop(h);
}
END_TEST

/*
 * One client (source address) gets at most HTTPD_MAX_CONNS_PER_IP connections: one more from it is closed
 * unanswered, while another client is still served.
 */
START_TEST(test_conn_limit_per_client)
{
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c);
	int fds[HTTPD_MAX_CONNS_PER_IP], fd;
	struct resp r;
	char buf[64];
	ssize_t n;

	ck_assert_int_lt(HTTPD_MAX_CONNS_PER_IP, HTTPD_MAX_CONNS);
	for (int i = 0; i < HTTPD_MAX_CONNS_PER_IP; i++) {
		fds[i] = connect_from(AF_INET, "127.0.0.2", "127.0.0.1", httpd_port(h));
		ck_assert_int_ge(fds[i], 0);
		exchange(fds[i], "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", false, &r);
		ck_assert_int_eq(r.status, 200);
		resp_free(&r);
	}
	fd = connect_from(AF_INET, "127.0.0.2", "127.0.0.1", httpd_port(h));
	ck_assert_int_ge(fd, 0);
	(void)send(fd, GET("/metrics"), strlen(GET("/metrics")), MSG_NOSIGNAL);
	n = recv(fd, buf, sizeof(buf), 0); /* closed by the server: 0 (or a reset) */
	ck_assert_int_le(n, 0);
	ck_assert(n == 0 || errno == ECONNRESET);
	close(fd);
	fd = connect_from(AF_INET, "127.0.0.3", "127.0.0.1", httpd_port(h));
	ck_assert_int_ge(fd, 0);
	exchange(fd, GET("/metrics"), false, &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	close(fd);
	for (int i = 0; i < HTTPD_MAX_CONNS_PER_IP; i++)
		close(fds[i]);
	httpd_stop(h);
}
END_TEST

START_TEST(test_reset_mid_response)
{
	struct ctx c = { .mode = BIG, .big = 4 << 20 };
	struct httpd *h = start(&c);
	struct linger lg = { 1, 0 };

	/* Clients that reset while a 4 MB answer is on its way: EPIPE/ECONNRESET, never SIGPIPE */
	for (int i = 0; i < 5; i++) {
		int fd = connect_to(AF_INET, "127.0.0.1", httpd_port(h));
		char first[1024];

		ck_assert_int_ge(fd, 0);
		ck_assert_int_gt(send(fd, GET("/metrics"), strlen(GET("/metrics")), MSG_NOSIGNAL),
				 0);
		ck_assert_int_gt(recv(fd, first, sizeof(first), 0), 0);
		ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)), 0);
		close(fd);
	}
	c.mode = SMALL;
	request_sample(httpd_port(h), GET("/metrics")); /* still serving, and we are still alive */
	httpd_stop(h);
}
END_TEST

START_TEST(test_bound_address_only)
{
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c);
	int fd;

	/* 127.0.0.2 is loopback too, but not the address asked for */
	fd = connect_to(AF_INET, "127.0.0.2", httpd_port(h));
	ck_assert_int_lt(fd, 0);
	ck_assert_int_eq(errno, ECONNREFUSED);
	httpd_stop(h);
}
END_TEST

START_TEST(test_ipv6)
{
	struct ctx c = { .mode = SMALL };
	char err[256] = "";
	struct httpd *h = httpd_start("[::1]:0", render, &c, err, sizeof(err));
	struct resp r;
	int fd;

	if (!h && (errno == EADDRNOTAVAIL || errno == EAFNOSUPPORT))
		return; /* no IPv6 loopback here */
	ck_assert_msg(h, "httpd_start: %s", err);
	fd = connect_to(AF_INET6, "::1", httpd_port(h));
	ck_assert_int_ge(fd, 0);
	exchange(fd, GET("/metrics"), false, &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(r.body, SAMPLE);
	resp_free(&r);
	close(fd);
	ck_assert_int_lt(connect_to(AF_INET, "127.0.0.1", httpd_port(h)), 0); /* v6 only */
	httpd_stop(h);
}
END_TEST

START_TEST(test_port_in_use)
{
	struct ctx c = { .mode = SMALL };
	struct httpd *h = start(&c), *h2;
	char spec[64], err[256] = "";

	snprintf(spec, sizeof(spec), "127.0.0.1:%u", httpd_port(h));
	h2 = httpd_start(spec, render, &c, err, sizeof(err));
	ck_assert_ptr_null(h2);
	ck_assert_int_eq(errno, EADDRINUSE);
	ck_assert_msg(strstr(err, "in use") && strstr(err, spec), "message: %s", err);
	httpd_stop(h);
	/* and once it is free again, a new server gets it (even with the old connections' TIME_WAIT) */
	h2 = httpd_start(spec, render, &c, err, sizeof(err));
	ck_assert_msg(h2, "httpd_start: %s", err);
	httpd_stop(h2);
}
END_TEST

START_TEST(test_bad_spec)
{
	static const char *const specs[] = {
		"example.com:9100", "127.0.0.1", "127.0.0.1:99999", "1.2.3:80",	    "",
		"127.0.0.1:x",	    "[::1:9100", "[::1]9100",	    "127.0.0.1:-1", ":"
	};
	struct ctx c = { .mode = SMALL };
	char err[256];

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		err[0] = '\0';
		errno = 0;
		ck_assert_ptr_null(httpd_start(specs[i], render, &c, err, sizeof(err)));
		ck_assert_int_eq(errno, EINVAL);
		ck_assert_msg(strstr(err, "want ADDR:PORT"), "%s: message: %s", specs[i], err);
		ck_assert_ptr_null(strchr(err, '\n'));
	}
	httpd_stop(NULL);
	/* as users write it: localhost is the loopback */
	{
		struct httpd *h = httpd_start("localhost:0", render, &c, err, sizeof(err));
		struct resp r;
		int fd;

		ck_assert_msg(h != NULL, "localhost:0: %s", err);
		fd = connect_to(AF_INET, "127.0.0.1", httpd_port(h));
		ck_assert_int_ge(fd, 0);
		exchange(fd, GET("/metrics"), false, &r);
		ck_assert_int_eq(r.status, 200);
		resp_free(&r);
		close(fd);
		httpd_stop(h);
	}
}
END_TEST

static Suite *httpd_suite(void)
{
	Suite *s = suite_create("httpd");
	TCase *tr = tcase_create("requests");
	TCase *tb = tcase_create("bodies");
	TCase *tc = tcase_create("connections");
	TCase *ts = tcase_create("start");

	tcase_add_test(tr, test_get);
	tcase_add_test(tr, test_head);
	tcase_add_test(tr, test_not_found);
	tcase_add_test(tr, test_method);
	suite_add_tcase(s, tr);
	tcase_set_timeout(tb, 30);
	tcase_add_test(tb, test_big);
	tcase_add_test(tb, test_render_error);
	tcase_add_test(tb, test_too_big);
	suite_add_tcase(s, tb);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_conn_limit);
	tcase_add_test(tc, test_conn_limit_per_client);
	tcase_add_test(tc, test_reset_mid_response);
	tcase_add_test(tc, test_bound_address_only);
	suite_add_tcase(s, tc);
	tcase_add_test(ts, test_ipv6);
	tcase_add_test(ts, test_port_in_use);
	tcase_add_test(ts, test_bad_spec);
	suite_add_tcase(s, ts);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(httpd_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
