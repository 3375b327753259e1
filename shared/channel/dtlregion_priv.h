/* SPDX-License-Identifier: MIT */
/* dtlregion internals that the unit suite needs: the name of an entry kind. */
#ifndef VNOISE_SHARED_CHANNEL_DTLREGION_PRIV_H
#define VNOISE_SHARED_CHANNEL_DTLREGION_PRIV_H

#include "channel/dtlregion.h"

/* "preempted", "blocked", "vmexit", "none" */
const char *dtlregion_kind_name(uint32_t kind);

#endif
