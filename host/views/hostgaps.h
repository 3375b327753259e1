/* SPDX-License-Identifier: MIT */
/*
 * hostgaps: `vnoise-host report FILE --gaps`, one JSON line per matched guest gap of a record made with --guest
 * (the HOST_MGAP records, protocol/host.h), through the line writer the guest's `report --gaps` uses
 * (shared/attrib/gapline): cpu is the vCPU, start_ns the gap's start in guest time, the classes the matcher's
 * split (guest classes, hypervisor classes, the residual as hw). Records that do not add up, or name a vCPU
 * out of range, are counted and left out. Single-threaded; the caller owns it.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTGAPS_H
#define VNOISE_HOST_VIEWS_HOSTGAPS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct hostgaps;

struct hostgaps *hostgaps_new(void) __attribute__((warn_unused_result)); /* NULL + errno */
void hostgaps_free(struct hostgaps *hg); /* accepts NULL */
/* A HOST_MGAP chunk's payload. 0, -EINVAL (length not whole records: nothing taken) or -ENOMEM. */
int hostgaps_chunk(struct hostgaps *hg, const void *payload, size_t len)
    __attribute__((warn_unused_result));
/* Records left out (not adding up, vCPU out of range) so far. */
uint64_t hostgaps_bad(const struct hostgaps *hg);
/* Domains whose gaps were taken. */
uint32_t hostgaps_domains(const struct hostgaps *hg);
/* The gaps of the lowest domain index that has any as lines on f, in time order (then by vCPU). Returns the
 * lines written (0: none) or -errno when f fails. */
long hostgaps_write(struct hostgaps *hg, FILE *f) __attribute__((warn_unused_result));

#endif
