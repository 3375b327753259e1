/* SPDX-License-Identifier: MIT */
/* store_priv: what only the store's tests call (host/collect/store.c defines it). */
#ifndef VNOISE_HOST_COLLECT_STORE_PRIV_H
#define VNOISE_HOST_COLLECT_STORE_PRIV_H

#include <stdint.h>

struct store;

/* Rows of a table (datagram, interval, cause, job_interval, node, job); -EINVAL another name, -EIO. */
int64_t store_count(struct store *s, const char *table);
#endif
