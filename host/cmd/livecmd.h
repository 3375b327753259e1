/* SPDX-License-Identifier: MIT */
/*
 * livecmd: the live commands of vnoise-host (top, record, list, serve) as the sinks each one adds to the live
 * engine: record -o FILE the record file; serve --metrics / --remote-write the exporter; top the interactive
 * screen on a terminal, else its lines (text or --json); serve --json the JSON lines; record the summary at
 * the end; list the list of domains.
 */
#ifndef VNOISE_HOST_CMD_LIVECMD_H
#define VNOISE_HOST_CMD_LIVECMD_H

#include "cmd/hostparams.h"

/* Run live command p (p->cmd is not HCMD_REPORT). Returns the process exit code. */
int livecmd_run(const struct host_params *p);

#endif
