/* SPDX-License-Identifier: MIT */
/*
 * hostexport: `serve`'s exporter as a sink of the live engine — the Prometheus listener of --metrics
 * (hostmetrics) and the remote-write sender of --remote-write (remotewrite), started once the domains are
 * mapped and fed each period's aggregate; at the end the listener stops first, then the sender flushes what
 * is queued (at most HOSTEXPORT_FLUSH_NS).
 */
#ifndef VNOISE_HOST_EXPORT_HOSTEXPORT_H
#define VNOISE_HOST_EXPORT_HOSTEXPORT_H

#include "cmd/hostparams.h"

#define HOSTEXPORT_FLUSH_NS 5000000000ULL

struct live;

/* Add the exporter of p->metrics and p->remote_write (either or both set) to live engine lv, its listener
 * bound and its sender started now (before libvirt is reached). Returns 0, -ENOMEM, -ENOSPC, or an exit code
 * (> 0) after a one-line error: the port is taken, the URL is bad. */
int hostexport_sink_add(struct live *lv, const struct host_params *p)
    __attribute__((warn_unused_result));

#endif
