/* SPDX-License-Identifier: MIT */
/*
 * hostmetrics internals for the unit suite and the benchmark: the bounds of the exporter's tables, a
 * constructor that can run without a listener and with a fake /proc, and the text a scrape would get.
 *
 * Cardinality rule (the counters never go down): a label set, once exported, stays for the life of the
 * process. Per vCPU at most HOSTMETRICS_TOP_CAUSES preemptor causes (class + comm, never a pid),
 * HOSTMETRICS_MAX_AGGS exit reasons and HOSTMETRICS_MAX_AGGS host IRQ sources get their own series, admitted
 * largest first within a period in the order they appear; later newcomers add into the vCPU's "other"
 * series (preemptors: comm "other" of their class, where a task named "other" counts too; exits: reason
 * "other"; IRQs: kind and source "other").
 * A domain keeps its series across restarts (keyed by UUID, else name); when HOSTMETRICS_MAX_DOMAINS
 * domains have been seen the one not seen for longest is dropped (counted in
 * vnoise_host_exporter_domains_evicted_total) — should it come back, its counters start again from 0.
 */
#ifndef VNOISE_HOST_EXPORT_HOSTMETRICS_PRIV_H
#define VNOISE_HOST_EXPORT_HOSTMETRICS_PRIV_H

#include <stddef.h>
#include "export/hostmetrics.h"
#include "util/bufout.h"

#define HOSTMETRICS_MAX_DOMAINS 256u /* domains with series */
#define HOSTMETRICS_TOP_CAUSES 8u /* named preemptor causes per vCPU */
#define HOSTMETRICS_MAX_AGGS 16u /* named exit reasons, and named host IRQ sources, per vCPU */

/*
 * hostmetrics_start with two more knobs: spec NULL runs no listener (hostmetrics_port is then 0), and
 * proc_root names the /proc the preemptor classes are read from (NULL: "/proc"; see match/taskclass).
 */
struct hostmetrics *hostmetrics_new(const char *spec, const char *proc_root, char *err,
				    size_t errlen) __attribute__((warn_unused_result));

/*
 * Append the exposition text of the latest period (what a scrape answers) to o. Returns 0, or -ENOSPC
 * when it does not fit (nothing appended). Any thread.
 */
int hostmetrics_text(struct hostmetrics *m, struct bufout *o) __attribute__((warn_unused_result));

#endif
