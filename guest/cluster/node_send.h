/* SPDX-License-Identifier: MIT */
/*
 * node_send: send one interval of the pipeline (protocol/app.h) to the cluster collector as report datagrams
 * (protocol/cluster.h), for VN_PIPE_OUT_REPORT. The reporting rank calls it in its synchronisation call, and
 * vnoise-guest mpi for the intervals left at the end. Everything it needs (ids, key, sequence numbers, the
 * SAMPLE lease) is in the pipe header.
 */
#ifndef VNOISE_GUEST_CLUSTER_NODE_SEND_H
#define VNOISE_GUEST_CLUSTER_NODE_SEND_H

#include <stdint.h>
#include "app.h"

/*
 * Send interval n of p on fd (a UDP socket connected to the collector). In detail (kind INTERVAL, with the
 * ranks' causes) when the interval ended inside [h.sample_from_ns, h.sample_until_ns), else from counters
 * (kind COUNTERS). Reserves its sequence numbers in h.seq, so a datagram that is not sent shows as lost at
 * the collector; counts h.dgrams, and h.out_errors once per interval not sent whole. 0 or -errno.
 */
int node_send_report(struct vn_pipe *p, uint64_t n, int fd) __attribute__((warn_unused_result));

#endif
