/* SPDX-License-Identifier: MIT */
/*
 * recwriter internals that the unit suite needs: the writer's sticky error.
 */
#ifndef VNOISE_FORMAT_RECWRITER_PRIV_H
#define VNOISE_FORMAT_RECWRITER_PRIV_H

#include "format/recwriter.h"

/* The writer's sticky error (-errno, 0 while none). */
int recwriter_error(const struct recfile_writer *w);

#endif
