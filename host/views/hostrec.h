/* SPDX-License-Identifier: MIT */
/*
 * hostrec: vnoise-host's record files — the writer used by `record` (text chunks for the run and domain
 * bindings, arrays of protocol/host.h records per period) and the reader behind `report FILE`, which replays
 * a file into the same hostagg engine the live views use, so `report --json` of a file equals the live
 * `record --json` of the same run.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTREC_H
#define VNOISE_HOST_VIEWS_HOSTREC_H

#include "engine/hostagg.h"
#include "engine/hostparams.h"
#include "views/hostview.h"
#include "format/recreader.h"
#include "libvirt/vmap.h"

/* Text of a HOST_DOMAIN chunk for domain index dom, mapping m, after event ("started", ...). */
int hostrec_domain_text(char *buf, size_t cap, uint32_t dom, const struct vmap_dom *m,
			const char *event, uint64_t t_ns);

/* Feed a HOST_DOMAIN text payload to the engine. Returns 0 or -EINVAL (missing/invalid keys). */
int hostrec_domain_apply(struct hostagg *a, const void *payload, size_t len)
    __attribute__((warn_unused_result));

/* `vnoise-host report FILE`: returns the process exit code (0, 5 damaged, 1 failure). */
int hostrec_report(const struct host_params *p);

#endif
