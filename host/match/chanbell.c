/* SPDX-License-Identifier: MIT */
/*
 * chanbell: one domain's bell on the host side (see chanbell.h). Every failure of the socket (connect
 * refused, read error, hang-up) closes it and the channel goes back to its short round until the next
 * connect, BELL_RETRY_NS later; the agent's first ring on a connection is what says that it rings.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "match/chanbell.h"
#include "util/log.h"

#define BELL_RETRY_NS \
	1000000000ULL /* a bell socket that cannot be connected: tried again this often */
#define BELL_READ_MAX \
	64u /* reads per wake-up: a guest writing without pause cannot hold the host */

struct chanbell {
	char name[300]; /* for logs */
	char path[108]; /* the host socket of org.vnoise.bell.0; "" none */
	int fd; /* -1: not connected */
	uint64_t retry_ns; /* next connect attempt */
	bool heard; /* the agent rang on this connection, this agent epoch: it rings */
	bool armed; /* armed and not rung since */
	uint64_t rings, arms;
};

struct chanbell *chanbell_new(const char *name)
{
	struct chanbell *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->fd = -1;
	return b;
}

void chanbell_free(struct chanbell *b)
{
	if (!b)
		return;
	if (b->fd >= 0)
		close(b->fd);
	free(b);
}

void chanbell_set_path(struct chanbell *b, const char *sock_path)
{
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	b->heard = b->armed = false;
	b->retry_ns = 0;
	snprintf(b->path, sizeof(b->path), "%s", sock_path ? sock_path : "");
}

static void bell_close(struct chanbell *b, uint64_t now, const char *why)
{
	log_info("guest channel %s: bell %s: %s; reading the channel every round", b->name, b->path,
		 why);
	close(b->fd);
	b->fd = -1;
	b->heard = b->armed = false;
	b->retry_ns = now + BELL_RETRY_NS;
}

/* Connect to the bell's socket (QEMU listens on it): 0, or -errno (tried again BELL_RETRY_NS later). */
static int bell_connect(struct chanbell *b, uint64_t now)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	b->retry_ns = now + BELL_RETRY_NS;
	if (strlen(b->path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, b->path, strlen(b->path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = errno;

		close(fd);
		log_debug("guest channel %s: bell %s: %s", b->name, b->path, strerror(err));
		return -err;
	}
	b->fd = fd;
	b->heard = b->armed = false;
	log_debug("guest channel %s: bell %s connected", b->name, b->path);
	return 0;
}

/* Read and discard what the guest wrote (at most BELL_READ_MAX reads). 1: it rang, 0: nothing, -1: closed. */
static int bell_drain(struct chanbell *b, uint64_t now)
{
	char buf[256];
	int rang = 0;

	for (unsigned i = 0; i < BELL_READ_MAX; i++) {
		ssize_t n = read(b->fd, buf, sizeof(buf));

		if (n > 0) {
			rang = 1;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		bell_close(b, now, n ? strerror(errno) : "closed by QEMU");
		return -1;
	}
	if (rang) {
		b->rings++;
		b->armed = false;
		if (!b->heard)
			log_info("guest channel %s: the guest agent rings the bell: sleeping "
				 "between its gaps",
				 b->name);
		b->heard = true;
	}
	return rang;
}

void chanbell_heard(struct chanbell *b, short revents, uint64_t now)
{
	if (b->fd < 0)
		return;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		(void)bell_drain(b, now);
	if (b->fd >= 0 && (revents & (POLLHUP | POLLERR | POLLNVAL)))
		bell_close(b, now, "hung up");
}

int chanbell_arm(struct chanbell *b, uint64_t now, bool want, struct dtl_writer *w)
{
	if (!b->path[0])
		return -EAGAIN; /* no bell */
	if (b->fd < 0 && (now < b->retry_ns || bell_connect(b, now)))
		return -EAGAIN;
	if (b->armed && bell_drain(b, now) < 0) /* unarmed, an agent does not ring */
		return -EAGAIN;
	if (b->heard && !want)
		return -EAGAIN; /* the short round reads anyway: no rings meanwhile */
	if (!b->armed) {
		dtlwriter_bell_arm(w);
		b->arms++;
		b->armed = true;
	}
	return b->heard ? b->fd : -EAGAIN; /* else armed for the agent's first ring */
}

void chanbell_forget(struct chanbell *b)
{
	b->heard = b->armed = false;
}

void chanbell_info(const struct chanbell *b, struct chanbell_info *out)
{
	out->state = !b->path[0] ? CHANBELL_NONE
		     : b->fd < 0 ? CHANBELL_UNCONNECTED
		     : b->heard	 ? CHANBELL_HEARD
				 : CHANBELL_SILENT;
	out->rings = b->rings;
	out->arms = b->arms;
}
