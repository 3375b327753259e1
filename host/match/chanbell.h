/* SPDX-License-Identifier: MIT */
/*
 * chanbell: the host's end of one domain's bell (protocol/dtl.h struct vn_dtl_bell), the doorbell that lets
 * vnoise-host sleep between the guest agent's gaps instead of reading the channel every short round. The
 * host arms the bell in the dispatch trace log's host area (dtlwriter_bell_arm); the agent, once armed, rings
 * by writing a byte to its virtio port org.vnoise.bell.0, which QEMU carries to a unix socket on the host.
 * This module connects to that socket (retried every second), arms, reads the rings out and discards them:
 * nothing the guest writes there is trusted or kept, and a guest writing without pause is read at most a
 * bounded number of times per wake-up. It owns the socket's fd.
 * Single-threaded: the channel's owner (host/match/guestchan) calls it from the monitor's main thread.
 */
#ifndef VNOISE_HOST_MATCH_CHANBELL_H
#define VNOISE_HOST_MATCH_CHANBELL_H

#include <stdbool.h>
#include <stdint.h>
#include "channel/dtlwriter.h"

struct chanbell;

enum chanbell_state {
	CHANBELL_NONE = 0, /* the domain has no bell port */
	CHANBELL_UNCONNECTED, /* its socket is not connected (retried every second) */
	CHANBELL_SILENT, /* connected, the agent has not rung yet */
	CHANBELL_HEARD, /* the agent rings: the monitor sleeps between gaps */
};

struct chanbell_info {
	enum chanbell_state state;
	uint64_t rings, arms; /* since the bell was created */
};

/* A bell with no socket yet; name (copied) prefixes its log lines ("guest channel NAME: ..."). NULL, errno. */
struct chanbell *chanbell_new(const char *name) __attribute__((warn_unused_result));
void chanbell_free(struct chanbell *b); /* accepts NULL; closes the socket */

/* The host socket of the domain's org.vnoise.bell.0 port (NULL or "": none); a connected one is closed. */
void chanbell_set_path(struct chanbell *b, const char *sock_path);

/*
 * Before the monitor sleeps past its short round, with the dispatch trace log's writer w (this host
 * publishes): connect if due, read out what rang. want: the channel has nothing waiting (clock aligned, no
 * gap waiting for a horizon) and the monitor may sleep. Returns the fd to poll (armed: the agent rings after
 * its next gap), or -EAGAIN: keep the short round, because there is no bell or it is not connected, the
 * agent has not rung yet on this connection (armed meanwhile, for its first ring), or !want (not armed:
 * while the short round reads the channel anyway, the agent is not asked to ring).
 */
int chanbell_arm(struct chanbell *b, uint64_t now, bool want, struct dtl_writer *w);

/* The bell's fd reported revents: read and discard the rings; a hang-up closes it (connected again later). */
void chanbell_heard(struct chanbell *b, short revents, uint64_t now);

/* A new agent epoch: the agent says again, by ringing, that it rings. */
void chanbell_forget(struct chanbell *b);

void chanbell_info(const struct chanbell *b, struct chanbell_info *out);

#endif
