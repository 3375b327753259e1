/* SPDX-License-Identifier: MIT */
/*
 * clusterrot: the collector's round-robin sampling (seed 001). Detailed tracing is rotated over the nodes of
 * a job doing the same work, so each pays a fraction of its cost at the same sampling granularity: per job
 * and slot of cfg.slot_ns it picks the next cfg.sample_nodes live nodes, sends each a SAMPLE command sealed
 * with the collector's key (through cfg.send, to the address its HELLO came from) leasing detailed tracing
 * for the slot, and takes out of the rotation a node whose compute time per interval rises by more than
 * cfg.exclude_ratio while sampled (medians over its recent intervals, so one hypervisor stall does not). It
 * works on the engine's state (host/collect/clusteragg), under the engine's serialisation; every node, job
 * and command counter it touches belongs to the engine.
 */
#ifndef VNOISE_HOST_COLLECT_CLUSTERROT_H
#define VNOISE_HOST_COLLECT_CLUSTERROT_H

#include <stdint.h>
#include "collect/clusteragg.h"

/* Drive the rotation at now_ns (CLOCK_REALTIME): call often (every few ms); cheap when nothing is due, and a
 * no-op without cfg.slot_ns. Events (rotation started, done, a node excluded) go to cfg.event. */
void clusterrot_tick(struct clusteragg *cs, uint64_t now_ns);

#endif
