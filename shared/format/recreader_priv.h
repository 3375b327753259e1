/* SPDX-License-Identifier: MIT */
/*
 * recreader internals that the unit suite needs: where the reader is in the file, the damaged chunks it
 * skipped, and the file header's creation time.
 */
#ifndef VNOISE_FORMAT_RECREADER_PRIV_H
#define VNOISE_FORMAT_RECREADER_PRIV_H

#include <stdint.h>
#include "format/recreader.h"

/* File offset where the next chunk header is expected (after the last delivered or skipped data). */
uint64_t recreader_offset(const struct recfile_reader *r);

/* Damaged chunks/regions skipped so far; full counters in recreader_stats(). */
uint64_t recreader_bad_chunks(const struct recfile_reader *r);

/* created_realtime_ns from the file header (0 if the header was damaged or not read). */
uint64_t recreader_created_realtime_ns(const struct recfile_reader *r);

#endif
