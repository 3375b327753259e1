/* SPDX-License-Identifier: MIT */
/* flipgate: a rate limit on guest-driven restarts (see flipgate.h). */
#include <string.h>
#include "match/flipgate.h"

static void followed(struct flipgate *g, uint64_t now)
{
	memmove(g->at, g->at + 1, (FLIPGATE_BURST - 1) * sizeof(g->at[0]));
	g->at[FLIPGATE_BURST - 1] = now;
}

/* The hold ends: follow what the guest is now, with no burst left. */
static enum flipgate_verdict release(struct flipgate *g, uint64_t now)
{
	g->hold_until_ns = 0;
	for (int i = 0; i < FLIPGATE_BURST; i++)
		g->at[i] = now;
	return FLIPGATE_FOLLOW;
}

enum flipgate_verdict flipgate_allow(struct flipgate *g, uint64_t now, uint64_t value)
{
	if (g->hold_until_ns && now < g->hold_until_ns) {
		if (value != g->last) {
			g->held++;
			g->last = value;
			g->change_ns = now;
		} else if (now - g->change_ns >= FLIPGATE_SETTLE_NS) {
			return release(g, now); /* the guest settled: its state is followed */
		}
		return FLIPGATE_HOLD;
	}
	if (g->hold_until_ns && now - g->hold_until_ns >= FLIPGATE_WINDOW_NS) {
		g->hold_until_ns = 0; /* a hold that ended a window ago: all is quiet again */
		g->hold_ns = 0;
		memset(g->at, 0, sizeof(g->at));
	}
	if (g->hold_until_ns)
		return release(g, now);
	if (g->at[FLIPGATE_BURST - 1] && now - g->at[FLIPGATE_BURST - 1] > FLIPGATE_WINDOW_NS)
		g->hold_ns = 0; /* a quiet window: the next hold is short again */
	if (!g->at[0] || now - g->at[0] >= FLIPGATE_WINDOW_NS) {
		followed(g, now);
		return FLIPGATE_FOLLOW;
	}
	/* the burst is used up inside the window: hold, each hold twice the last */
	if (!g->hold_ns)
		g->hold_ns = FLIPGATE_HOLD_MIN_NS;
	g->hold_until_ns = now + g->hold_ns;
	g->hold_ns = g->hold_ns * 2 > FLIPGATE_HOLD_MAX_NS ? FLIPGATE_HOLD_MAX_NS : g->hold_ns * 2;
	g->holds++;
	g->held++;
	g->last = value;
	g->change_ns = g->began_ns = now;
	return FLIPGATE_HOLD_BEGAN;
}

void flipgate_seen(struct flipgate *g, uint64_t now, uint64_t value)
{
	if (g->hold_until_ns && now < g->hold_until_ns && value != g->last) {
		g->held++;
		g->last = value;
		g->change_ns = now;
	}
}

bool flipgate_say(struct flipgate *g, uint64_t now)
{
	if (now < g->say_ns)
		return false;
	g->say_ns = now + FLIPGATE_SAY_NS;
	return true;
}

bool flipgate_quiet(const struct flipgate *g, uint64_t now)
{
	return g->holds && now - g->began_ns < FLIPGATE_HOLD_MAX_NS;
}
