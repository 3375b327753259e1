/* SPDX-License-Identifier: MIT */
/*
 * dtlctl: whether and when vnoise-host publishes one domain's dispatch trace log. The publisher itself (what
 * goes into the host area, host/match/dtlpub) is started whenever the guest header allows it (epoch 0: no
 * agent, or version >= 2; checked every round: a v1 agent that starts takes the whole region back, and the
 * publisher stops) and this process holds flock(LOCK_EX) on the region file (one publisher per domain; while
 * another vnoise-host holds it, the lock is tried again every second). Each publisher start is a new host
 * epoch. It owns the publisher, keeps its counters across publishers and says every change of state once in
 * the log. The region (file, mapping) belongs to the caller (host/match/guestchan) and outlives it; the lock
 * goes with the file's fd. Single-threaded.
 */
#ifndef VNOISE_HOST_MATCH_DTLCTL_H
#define VNOISE_HOST_MATCH_DTLCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "match/clocksync.h"
#include "match/dtlpub.h"
#include "match/taskclass.h"

struct dtlctl;

/* The state of a domain's dispatch trace log, for views and logs. */
enum dtlctl_state {
	DTLCTL_ON = 0, /* publishing */
	DTLCTL_V1, /* a v1 guest agent owns the whole region: nothing published */
	DTLCTL_BUSY, /* another vnoise-host publishes for this domain */
	DTLCTL_FAILED, /* the host area could not be laid out (region too small) */
};

struct dtlctl_info {
	enum dtlctl_state state;
	uint32_t detail; /* enum vn_dtl_detail */
	uint64_t epoch; /* host epoch (0: not publishing) */
	uint64_t published; /* entries, since the control was created */
	uint64_t dropped; /* intervals not published (no clock mapping, bad input) */
	uint64_t aggs;
};

/*
 * Control of the region file fd mapped at base (size bytes; both not owned); name (copied) prefixes its log
 * lines ("guest channel NAME: ..."), pp and tc (not owned, may be NULL) go to every publisher it starts. Takes
 * the publisher's lock if nobody holds it (DTLCTL_BUSY otherwise); publishing starts at dtlctl_follow.
 * Returns NULL with errno.
 */
struct dtlctl *dtlctl_new(const char *name, int fd, void *base, size_t size,
			  const struct dtlpub_params *pp, struct taskclass *tc)
    __attribute__((warn_unused_result));
void dtlctl_free(
    struct dtlctl *c); /* accepts NULL; frees the publisher (the lock goes with the fd) */

/*
 * At host time now, follow the guest header and the lock: start or stop the publisher. Returns true when a
 * publisher stopped or started (the clock mailbox is another one).
 */
bool dtlctl_follow(struct dtlctl *c, uint64_t now);

/* The current publisher (owned by the control), NULL while nothing is published. */
struct dtlpub *dtlctl_pub(const struct dtlctl *c);

/*
 * Publish the status at host time now (horizon_ns: host time, 0: nothing published, see dtlpub_status) with
 * the clock model cs; once per publisher, log when the status first carried the clock (exchanges: the clock
 * exchanges answered so far, for that line). No-op while nothing is published.
 */
void dtlctl_status(struct dtlctl *c, uint64_t now, uint64_t horizon_ns, const struct clocksync *cs,
		   uint64_t exchanges);

/* State and counters since the control was created. */
void dtlctl_info(const struct dtlctl *c, struct dtlctl_info *out);

#endif
