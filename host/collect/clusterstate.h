/* SPDX-License-Identifier: MIT */
/*
 * clusterstate: the collector engine's state (clusteragg: nodes, their sequence accounting, totals,
 * timelines and statistics, jobs with their open intervals and rotation, the counters) as one blob, and
 * back, so that a collector's start loads its last snapshot from the store and replays only the datagrams
 * received after it, instead of its whole history.
 *
 * The blob is this build's memory layout behind a header naming the vnoise version and the sizes of the
 * structures: a blob of another build is refused (-ESTALE: the caller replays the history instead). A blob
 * is checked before use (a damaged store is not trusted either): every index in range, every count within
 * the blob and cfg.max_nodes, no node twice; memory is bounded by the blob's size.
 */
#ifndef VNOISE_HOST_COLLECT_CLUSTERSTATE_H
#define VNOISE_HOST_COLLECT_CLUSTERSTATE_H

#include <stddef.h>
#include "collect/clusteragg.h"

/* The state of cs into *out (malloc'd, the caller frees) of *len bytes. 0 or -ENOMEM. */
int clusterstate_save(const struct clusteragg *cs, void **out, size_t *len)
    __attribute__((warn_unused_result));

/*
 * The state in buf[0..len) into cs, which must be new (no datagram taken: -EBUSY). 0, -ESTALE (a blob of
 * another build or layout), -EBADMSG (damaged or beyond cfg.max_nodes), -ENOMEM; on failure cs is left
 * new. Job names come from cs's cfg, not from the blob.
 */
int clusterstate_load(struct clusteragg *cs, const void *buf, size_t len)
    __attribute__((warn_unused_result));

#endif
