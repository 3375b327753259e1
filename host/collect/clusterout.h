/* SPDX-License-Identifier: MIT */
/*
 * clusterout: the collector engine's outputs, read-only views of host/collect/clusteragg (called under the
 * engine's serialisation): the Prometheus exposition of everything (host/export/promfmt), the report as a
 * table per job and node or one vnoise.collect/1 JSON object (shared/util/json: names from nodes and the
 * command line are escaped), and a one-line status. The metric names are documented in README.md.
 */
#ifndef VNOISE_HOST_COLLECT_CLUSTEROUT_H
#define VNOISE_HOST_COLLECT_CLUSTEROUT_H

#include <stddef.h>
#include <stdio.h>
#include "collect/clusteragg.h"
#include "util/bufout.h"

/* Prometheus exposition of everything into o. 0, -ENOMEM (the ranking) or -ENOSPC (o full). */
int clusterout_prom(const struct clusteragg *cs, struct bufout *o)
    __attribute__((warn_unused_result));
/*
 * The report: a table per job and node (text), or one vnoise.collect/1 JSON object (json != 0). Returns 0,
 * or -errno from the JSON writer (a stream error); the text table returns 0 (check ferror(f)).
 */
int clusterout_report(const struct clusteragg *cs, FILE *f, int json, int wide);
/* One status line (nodes, datagrams, lost, failed authentication, sampled now) without newline. */
void clusterout_status(const struct clusteragg *cs, char *buf, size_t len);

#endif
