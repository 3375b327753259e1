/* SPDX-License-Identifier: MIT */
/*
 * measure: the live engine behind measure, top, hist and record: samplers + kernel helper (or the proc
 * fallback) + merge, driven by one main-thread loop, with every change restored on every exit path.
 * report: the same views from a record file.
 */
#ifndef VNOISE_GUEST_MEASURE_MEASURE_H
#define VNOISE_GUEST_MEASURE_MEASURE_H

#include "measure/params.h"

/* Exit codes of vnoise-guest (documented in README.md). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1, /* the tool failed (resources, kernel refused, I/O) */
	EXIT_USAGE = 2, /* invalid command line */
	EXIT_STOPPED = 3, /* --stop-single / --stop-total threshold hit */
	EXIT_ENV =
	    4, /* the machine cannot do what was asked (offline CPU, --helper bpf without eBPF) */
	EXIT_DAMAGED =
	    5, /* report: the file was damaged or truncated; what could be read was reported */
};

int measure_run(const struct measure_params *p);
int replay_run(const struct measure_params *p);

#endif
