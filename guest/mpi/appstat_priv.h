/* SPDX-License-Identifier: MIT */
/*
 * appstat internals that the unit suite needs: folding one set of counters into another.
 */
#ifndef VNOISE_GUEST_MPI_APPSTAT_PRIV_H
#define VNOISE_GUEST_MPI_APPSTAT_PRIV_H

#include "mpi/appstat.h"

/* Fold b into a (counts and totals add, extremes combine). */
void appstat_merge(struct appstat *a, const struct appstat *b);

#endif
