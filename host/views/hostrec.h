/* SPDX-License-Identifier: MIT */
/*
 * hostrec: vnoise-host's record files — the writer used by `record -o FILE`, a sink of the live engine that
 * writes every chunk the engine builds (text chunks for the run and domain bindings, arrays of protocol/host.h
 * records per period), and the reader behind `report FILE`, which replays a file into the same hostagg
 * engine the live views use, so `report --json` of a file equals the live `record --json` of the same run.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTREC_H
#define VNOISE_HOST_VIEWS_HOSTREC_H

#include "engine/hostagg.h"
#include "cmd/hostparams.h"
#include "views/hostview.h"
#include "format/recreader.h"

struct live;

/*
 * Add the writer of the record file path (created when the run starts, after libvirt and host tracing are
 * up) to live engine lv. A write error is said once and stops the recording (the run goes on; its exit code
 * says it). Returns 0 or -errno (ENOMEM, ENOSPC).
 */
int hostrec_sink_add(struct live *lv, const char *path) __attribute__((warn_unused_result));

/* `vnoise-host report FILE`: returns the process exit code (0, 5 damaged, 1 failure). */
int hostrec_report(const struct host_params *p);

#endif
