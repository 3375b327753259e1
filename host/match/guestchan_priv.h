/* SPDX-License-Identifier: MIT */
/*
 * guestchan internals that tests need: what the guest's records make the channel hold against its budget,
 * and the work they cost, to check both bounds (guestchan.c: "Hostile input bounds").
 */
#ifndef VNOISE_MATCH_GUESTCHAN_PRIV_H
#define VNOISE_MATCH_GUESTCHAN_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "match/guestchan.h"

#define GUESTCHAN_ROUND_WORK \
	(1u << 20) /* records fed or passed by sorted inserts per round, at most */

/* The bytes the guest's waiting records hold in the matcher and the guest-only view (the budget holds
 * twice this under budget_bytes). */
size_t guestchan_held_bytes(const struct guestchan *gc);
/* Records fed, plus records passed by sorted inserts, since the channel opened. */
uint64_t guestchan_work(const struct guestchan *gc);
/* Records refused over the budget, since the channel opened. */
uint64_t guestchan_over_budget(const struct guestchan *gc);

#endif
