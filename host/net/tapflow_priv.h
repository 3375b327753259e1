/* SPDX-License-Identifier: MIT */
/* tapflow internals that the unit suite needs: the device name and a row lookup. */
#ifndef VNOISE_HOST_NET_TAPFLOW_PRIV_H
#define VNOISE_HOST_NET_TAPFLOW_PRIV_H

#include "net/tapflow.h"

/* The device name. */
const char *tapflow_name(const struct tapflow *tf);
/* The row of t with the key of k (dir and key fields), or NULL. */
const struct vn_host_flow *tapflow_tab_find(const struct tapflow_tab *t,
					    const struct vn_host_flow *k);

#endif
