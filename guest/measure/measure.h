/* SPDX-License-Identifier: MIT */
/*
 * measure: the live engine behind measure, top, hist and record: samplers + kernel helper (or the proc
 * fallback) + merge, driven by one main-thread loop, with every change restored on every exit path.
 * report: the same views from a record file.
 */
#ifndef VNOISE_GUEST_MEASURE_MEASURE_H
#define VNOISE_GUEST_MEASURE_MEASURE_H

#include "cli/exitcode.h"
#include "measure/params.h"

int measure_run(const struct measure_params *p);
int replay_run(const struct measure_params *p);

#endif
