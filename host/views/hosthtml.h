/* SPDX-License-Identifier: MIT */
/*
 * hosthtml: `vnoise-host report FILE --html OUT.html`, the report of a host record file as one self-contained
 * HTML page (format/htmlplot): the run's facts (version, span, period, domains and vCPUs, tracing, drops,
 * partial file), per vCPU a timeline of its out-time stacked by cause (preempted, host IRQs, VM exits) as a
 * percentage of each period, the histogram of its preempted out intervals (or, when the record has no out
 * intervals, of the preemption per period), and the top preemptors over all vCPUs. With --guest (a record made
 * with --guest) the combined view instead: per vCPU the guest vs hypervisor split of the guest's noise over
 * time, the clock uncertainty of each domain over time, and the top guest and hypervisor sources.
 *
 * The report (views/hostrec) hands every chunk of the file to hosthtml_chunk() as it feeds the engine, then
 * calls hosthtml_write() with the engine. Names from the file (domains, host tasks, guest sources) are
 * escaped. Single-threaded; the caller owns it.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTHTML_H
#define VNOISE_HOST_VIEWS_HOSTHTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "engine/hostagg.h"
#include "views/hostview.h"

#define HOSTHTML_MAX_POINTS 100000u /* periods kept per vCPU (a day of 1 s periods is 86400) */
#define HOSTHTML_SHOWN_BINS 400u /* time bins per plot at most (periods are summed into them) */

struct hosthtml;

/* An empty collector; NULL with errno. hosthtml_free() accepts NULL. */
struct hosthtml *hosthtml_new(void) __attribute__((warn_unused_result));
void hosthtml_free(struct hosthtml *h);

/*
 * One chunk of the record file, in file order: HOST_PERIOD, HOST_OUT, HOST_AGG, HOST_MATCH and HOST_CHAN record
 * arrays are kept per vCPU and period; other chunks and malformed lengths are passed over. Returns 0 or
 * -ENOMEM (what did not fit is left out of the page).
 */
int hosthtml_chunk(struct hosthtml *h, uint16_t type, const void *payload, size_t len);

/*
 * Write the page of engine a (the whole file fed) and run facts in to path atomically; guest: the combined
 * view; partial: why the file was not read whole (NULL: it was). 0 or -errno (nothing left at path then).
 */
int hosthtml_write(const struct hosthtml *h, const struct hostagg *a, const struct hostinfo *in,
		   bool guest, const char *partial, const char *path)
    __attribute__((warn_unused_result));

#endif
