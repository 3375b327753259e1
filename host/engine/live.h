/* SPDX-License-Identifier: MIT */
/*
 * live: vnoise-host's live engine behind `top`, `record` and `list`. It connects to libvirt, maps the
 * selected domains (all running ones by default), follows their lifecycle (a domain that stops and starts
 * again is re-mapped under the same index), survives libvirtd restarts (reconnect with backoff while the
 * dispatch log and schedstat keep going), and every period turns libvirt counters, schedstat and the
 * dispatch log into protocol/host.h records that feed the views and the record file.
 */
#ifndef VNOISE_HOST_ENGINE_LIVE_H
#define VNOISE_HOST_ENGINE_LIVE_H

#include "engine/hostparams.h"

/* Run a live command (top, record, list) until the duration ends or a signal. Returns the exit code. */
int live_run(const struct host_params *p);

#endif
