/* SPDX-License-Identifier: MIT */
/*
 * hostmetrics: the per-host Prometheus exporter of `vnoise-host serve --metrics ADDR:PORT`. The host view
 * of every domain as counters in seconds with domain, uuid and vcpu labels (steal, out-time preempted /
 * blocked, preemptor causes by class and comm top-N + "other", exits by reason, host IRQs; with --guest the
 * guest / hypervisor / hw split and the clock uncertainty), plus vnoise-host's own cost and drops. README.md
 * lists the families; hostmetrics_priv.h gives the bounds and the rule that keeps every counter monotonic.
 *
 * The engine's main thread calls hostmetrics_period at each period's end with that period's aggregate: the
 * exporter adds it into its own bounded counters and renders the exposition text once; the HTTP server
 * thread (host/export/httpd) only copies that text under a lock, so a scrape costs no engine time and never
 * sees a half-updated state.
 */
#ifndef VNOISE_HOST_EXPORT_HOSTMETRICS_H
#define VNOISE_HOST_EXPORT_HOSTMETRICS_H

#include <stddef.h>
#include <stdint.h>
#include "engine/hostagg.h"
#include "views/hostview.h"

struct hostmetrics;

/* Listen on spec ("ADDR:PORT", "[IPv6]:PORT"; see httpd_start; NULL: no listener, e.g. for --remote-write
 * alone). NULL with a one-line reason in err. */
struct hostmetrics *hostmetrics_start(const char *spec, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/* A period ended: add cur (that period's aggregate) into the counters; in holds the run's facts. */
void hostmetrics_period(struct hostmetrics *m, const struct hostagg *cur,
			const struct hostinfo *in);

struct remotewrite;
/* serve --remote-write: push each period's text to rw (not owned; stop m before rw). */
void hostmetrics_set_remotewrite(struct hostmetrics *m, struct remotewrite *rw);

/* The bound port (for --metrics ADDR:0). */
uint16_t hostmetrics_port(const struct hostmetrics *m);

/* Stop the listener and free m. Accepts NULL. */
void hostmetrics_stop(struct hostmetrics *m);

#endif
