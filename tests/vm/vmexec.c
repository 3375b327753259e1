/* SPDX-License-Identifier: MIT */
/*
 * vmexec: runs one shell command in a test VM through vmshd (tests/vm/vmshd.c, which documents the
 * protocol), over the unix socket QEMU binds for the guest's org.vnoise.test.0 virtio-serial channel.
 *   vmexec SOCKET [--timeout S] -- CMD...   run CMD (its words joined by spaces, as ssh does) under the
 *                                          guest's /bin/sh -c; print its output (stdout and stderr merged)
 *                                          on stdout; exit with its exit code (128+N if killed by signal N,
 *                                          124 if it hit the timeout in the guest)
 *   vmexec SOCKET --ping [--timeout S]      exit 0 once vmshd answers (readiness polling)
 * --timeout: for a command the guest kills it after S seconds (default 60, 0 = never) and vmexec waits S+10 s
 * for the reply; for --ping the whole wait (default 1 s). vmexec's own failures: 124 no reply in time,
 * 125 usage, connection or protocol error, each with one line on stderr. QEMU serves one client of the
 * socket at a time: a second vmexec waits until the first is done.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "vmutil.h"

#define VMEXEC_EXIT_TIMEOUT 124
#define VMEXEC_EXIT_ERROR 125
#define VMEXEC_DEFAULT_TIMEOUT_S 60
#define VMEXEC_PING_TIMEOUT_S 1
#define VMEXEC_GRACE_S 10 /* the guest's own timeout fires first; then the reply has to travel */
#define VMEXEC_LINE_MAX 256
#define VMEXEC_CMD_MAX (1U << 20) /* vmshd's limit */
#define VMEXEC_SYNC \
	"\xff" /* starts each request: vmshd drops what a vanished client left half sent */

struct vmexec_params {
	const char *sock; /* path of the unix socket */
	int ping; /* 1: PING only */
	unsigned int timeout_s; /* see the file comment; 0 = none */
	char *cmd; /* malloc'ed, words joined by spaces */
	size_t cmd_len;
};

/* A connection: received bytes not yet parsed, and the reply deadline. */
struct vmexec_conn {
	int fd;
	uint64_t deadline_ms; /* 0 = none */
	char buf[65536];
	size_t len;
};

static void usage(FILE *f)
{
	fputs("usage: vmexec SOCKET [--timeout S] -- CMD...\n"
	      "       vmexec SOCKET --ping [--timeout S]\n"
	      "exit: the command's code; 124 no reply in time; 125 usage, connection or protocol "
	      "error\n",
	      f);
}

/* Parses argv into p (p->cmd malloc'ed). Returns 0, 1 for --help, or -EINVAL (message printed). */
static int params_parse(int argc, char **argv, struct vmexec_params *p)
{
	static const struct option opts[] = { { "timeout", required_argument, NULL, 't' },
					      { "ping", no_argument, NULL, 'p' },
					      { "help", no_argument, NULL, 'h' },
					      { NULL, 0, NULL, 0 } };
	unsigned long long v;
	int timeout_set = 0, opt, i;
	size_t len = 0;
	char *cmd;

	memset(p, 0, sizeof(*p));
	while ((opt = getopt_long(argc, argv, "t:ph", opts, NULL)) != -1) {
		switch (opt) {
		case 't':
			if (parse_uint(optarg, 86400, &v)) {
				fprintf(stderr, "vmexec: bad --timeout '%s' (seconds, 0-86400)\n",
					optarg);
				return -EINVAL;
			}
			p->timeout_s = (unsigned int)v;
			timeout_set = 1;
			break;
		case 'p':
			p->ping = 1;
			break;
		case 'h':
			return 1;
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind >= argc || (p->ping && optind + 1 != argc) || (!p->ping && optind + 1 == argc)) {
		usage(stderr);
		return -EINVAL;
	}
	p->sock = argv[optind++];
	if (!timeout_set)
		p->timeout_s = p->ping ? VMEXEC_PING_TIMEOUT_S : VMEXEC_DEFAULT_TIMEOUT_S;
	if (p->ping)
		return 0;
	for (i = optind; i < argc; i++)
		len += strlen(argv[i]) + 1;
	if (len > VMEXEC_CMD_MAX) {
		fprintf(stderr, "vmexec: command longer than %u bytes\n", VMEXEC_CMD_MAX);
		return -EINVAL;
	}
	for (i = optind; i < argc; i++) {
		if (strchr(argv[i], VMEXEC_SYNC[0])) {
			fprintf(stderr, "vmexec: the command holds a 0xFF byte (not UTF-8; vmshd's "
					"sync byte)\n");
			return -EINVAL;
		}
	}
	cmd = malloc(len);
	if (!cmd) {
		fprintf(stderr, "vmexec: out of memory\n");
		return -ENOMEM;
	}
	cmd[0] = '\0';
	for (i = optind; i < argc; i++) {
		if (i > optind)
			strcat(cmd, " ");
		strcat(cmd, argv[i]);
	}
	p->cmd = cmd;
	p->cmd_len = strlen(cmd);
	return 0;
}

/* Waits for fd to be ready for events until c->deadline_ms. Returns 0, -ETIMEDOUT or -errno. */
static int conn_wait(struct vmexec_conn *c, short events)
{
	struct pollfd p = { .fd = c->fd, .events = events };
	int ms = -1, r;

	for (;;) {
		if (c->deadline_ms) {
			uint64_t now = now_ms();

			if (now >= c->deadline_ms)
				return -ETIMEDOUT;
			ms = (int)(c->deadline_ms - now);
		}
		r = poll(&p, 1, ms);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
}

static int conn_write_all(struct vmexec_conn *c, const char *buf, size_t len)
{
	ssize_t n;
	int err;

	while (len) {
		err = conn_wait(c, POLLOUT);
		if (err)
			return err;
		n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads more bytes into c->buf. Returns 0, -ECONNRESET at end of stream, -ETIMEDOUT or -errno. */
static int conn_fill(struct vmexec_conn *c)
{
	ssize_t n;
	int err;

	if (c->len == sizeof(c->buf))
		return -EPROTO;
	for (;;) {
		err = conn_wait(c, POLLIN);
		if (err)
			return err;
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
		if (n > 0) {
			c->len += (size_t)n;
			return 0;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
	}
}

static void conn_consume(struct vmexec_conn *c, size_t n)
{
	memmove(c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

/* Reads one header line (without '\n') into line. Returns 0 or -errno; an overlong line is -EPROTO. */
static int conn_line(struct vmexec_conn *c, char *line, size_t size)
{
	char *nl;
	size_t n;
	int err;

	while (!(nl = memchr(c->buf, '\n', c->len))) {
		if (c->len >= size)
			return -EPROTO;
		err = conn_fill(c);
		if (err)
			return err;
	}
	n = (size_t)(nl - c->buf);
	if (n >= size)
		return -EPROTO;
	memcpy(line, c->buf, n);
	line[n] = '\0';
	conn_consume(c, n + 1);
	return 0;
}

/* Passes len body bytes to out (NULL: discard). Returns 0 or -errno. */
static int conn_body(struct vmexec_conn *c, unsigned long long len, FILE *out)
{
	size_t n;
	int err;

	while (len) {
		if (!c->len) {
			err = conn_fill(c);
			if (err)
				return err;
		}
		n = c->len < len ? c->len : (size_t)len;
		if (out && fwrite(c->buf, 1, n, out) != n)
			return -EIO;
		conn_consume(c, n);
		len -= n;
	}
	return 0;
}

/*
 * Sends the request and waits for its reply, skipping replies to other ids (left by clients that gave up)
 * and lines it does not know. Returns 0 with *rc, or -errno.
 */
static int vmexec_run(const struct vmexec_params *p, struct vmexec_conn *c, int *rc)
{
	char id[48], hdr[VMEXEC_LINE_MAX], line[VMEXEC_LINE_MAX];
	char *argv[5], *save = NULL, *tok;
	unsigned long long code, len;
	struct timespec ts;
	int argc, err;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(id, sizeof(id), "%d-%llx", (int)getpid(),
		 (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec);
	/* the leading 0xFF makes vmshd drop anything a previous client left half sent */
	if (p->ping)
		snprintf(hdr, sizeof(hdr), VMEXEC_SYNC "PING %s\n", id);
	else
		snprintf(hdr, sizeof(hdr), VMEXEC_SYNC "EXEC %s %u %zu\n", id, p->timeout_s,
			 p->cmd_len);
	err = conn_write_all(c, hdr, strlen(hdr));
	if (!err && !p->ping)
		err = conn_write_all(c, p->cmd, p->cmd_len);
	if (err)
		return err;
	for (;;) {
		err = conn_line(c, line, sizeof(line));
		if (err)
			return err;
		argc = 0;
		save = NULL;
		for (tok = strtok_r(line, " \r", &save); tok && argc < 5;
		     tok = strtok_r(NULL, " \r", &save))
			argv[argc++] = tok;
		if (argc == 2 && !strcmp(argv[0], "PONG") && p->ping && !strcmp(argv[1], id)) {
			*rc = 0;
			return 0;
		}
		if (argc != 4 || strcmp(argv[0], "OUT") || parse_uint(argv[2], 255, &code) ||
		    parse_uint(argv[3], 1ULL << 40, &len))
			continue; /* PONG or junk not ours */
		if (p->ping || strcmp(argv[1], id)) {
			err = conn_body(c, len, NULL);
			if (err)
				return err;
			continue;
		}
		err = conn_body(c, len, stdout);
		if (err)
			return err;
		*rc = (int)code;
		return 0;
	}
}

int main(int argc, char **argv)
{
	struct vmexec_params p;
	struct vmexec_conn *c = NULL;
	int rc = VMEXEC_EXIT_ERROR, code = 0, err;

	signal(SIGPIPE, SIG_IGN);
	err = params_parse(argc, argv, &p);
	if (err) {
		if (err == 1) {
			usage(stdout);
			rc = 0;
		}
		goto out;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		fprintf(stderr, "vmexec: out of memory\n");
		goto out;
	}
	c->fd = unix_connect(p.sock);
	if (c->fd < 0) {
		fprintf(stderr, "vmexec: connect %s: %s\n", p.sock, strerror(-c->fd));
		goto out;
	}
	if (p.timeout_s)
		c->deadline_ms =
		    now_ms() + (uint64_t)p.timeout_s * 1000 + (p.ping ? 0 : VMEXEC_GRACE_S * 1000);
	err = vmexec_run(&p, c, &code);
	if (fflush(stdout) && !err)
		err = -EIO;
	if (err == -ETIMEDOUT) {
		fprintf(stderr, "vmexec: no %s from the guest within %u s\n",
			p.ping ? "PONG" : "reply", p.timeout_s + (p.ping ? 0 : VMEXEC_GRACE_S));
		rc = VMEXEC_EXIT_TIMEOUT;
		goto out;
	}
	if (err) {
		fprintf(stderr, "vmexec: %s: %s\n", p.sock,
			err == -ECONNRESET ? "connection closed before the reply" : strerror(-err));
		goto out;
	}
	rc = code;
out:
	if (c && c->fd >= 0)
		close(c->fd);
	free(c);
	free(p.cmd);
	return rc;
}
