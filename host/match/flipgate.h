/* SPDX-License-Identifier: MIT */
/*
 * flipgate: a rate limit on changes a guest controls that make the host start over (a new agent epoch, the
 * region's layout version going between 1 and 2). Up to FLIPGATE_BURST changes in FLIPGATE_WINDOW_NS are
 * followed at once; one more holds changes off for a backoff (FLIPGATE_HOLD_MIN_NS, doubling at each hold
 * up to FLIPGATE_HOLD_MAX_NS, back to the minimum after a window without a hold); at its end the state the
 * guest is in then is followed, and the burst is used up until a window passes. The caller logs one line per hold (flipgate_allow says when one began). A
 * reboot or two, or an agent restarted by hand, is never held. Pure: any thread, one gate per stream.
 */
#ifndef VNOISE_MATCH_FLIPGATE_H
#define VNOISE_MATCH_FLIPGATE_H

#include <stdbool.h>
#include <stdint.h>

#define FLIPGATE_BURST 3
#define FLIPGATE_WINDOW_NS 60000000000ull
#define FLIPGATE_HOLD_MIN_NS 60000000000ull
#define FLIPGATE_HOLD_MAX_NS 300000000000ull
#define FLIPGATE_SETTLE_NS 2000000000ull
#define FLIPGATE_SAY_NS 10000000000ull

struct flipgate {
	uint64_t at[FLIPGATE_BURST]; /* the last changes followed, oldest first (0: none) */
	uint64_t hold_until_ns; /* changes wait until then (0: not held) */
	uint64_t hold_ns; /* the next hold's length (0: FLIPGATE_HOLD_MIN_NS) */
	uint64_t held; /* changes held off (each value once) */
	uint64_t holds; /* holds begun */
	uint64_t last; /* the value of the last change held off */
	uint64_t change_ns; /* when the value waiting in a hold last changed */
	uint64_t began_ns; /* when the last hold began */
	uint64_t say_ns; /* the next hold may be said from then */
};

enum flipgate_verdict {
	FLIPGATE_FOLLOW, /* follow the change now */
	FLIPGATE_HOLD, /* a hold is on: leave things as they are */
	FLIPGATE_HOLD_BEGAN, /* this change began a hold (log it): leave things as they are */
};

/* A change to value (the new epoch, the new version) is waiting at host time now_ns: follow it or not. A
 * zeroed gate is a valid gate. */
enum flipgate_verdict flipgate_allow(struct flipgate *g, uint64_t now_ns, uint64_t value);
/* The guest's state (value) at now_ns, every round whether or not a change waits: a guest that goes back
 * and forth between two states has not settled, even when it is asked only in the other one. */
void flipgate_seen(struct flipgate *g, uint64_t now_ns, uint64_t value);
/* A hold began at now_ns: say so now (true at most every FLIPGATE_SAY_NS)? */
bool flipgate_say(struct flipgate *g, uint64_t now_ns);
/* A hold began less than FLIPGATE_HOLD_MAX_NS ago: the changes followed are not worth a line each. */
bool flipgate_quiet(const struct flipgate *g, uint64_t now_ns);

#endif
