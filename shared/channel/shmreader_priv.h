/* SPDX-License-Identifier: MIT */
/*
 * shmreader internals that the unit suite needs: the state's name and why the channel went CORRUPT.
 */
#ifndef VNOISE_CHANNEL_SHMREADER_PRIV_H
#define VNOISE_CHANNEL_SHMREADER_PRIV_H

#include "channel/shmreader.h"

const char *shmreader_state_name(enum shmreader_state s); /* "waiting", "ok", "corrupt" */

/* Why the channel last went CORRUPT (one line), or "" if it never did. Valid until the next call. */
const char *shmreader_error(const struct shm_reader *rd);

#endif
