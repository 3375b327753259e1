/* SPDX-License-Identifier: MIT */
/*
 * recfile: what the record file's writer (recwriter) and reader (recreader) share — the chunk header's CRC
 * and the payload length rule of each chunk type — and the parser of its text payloads (key=value lines, as
 * in META and END chunks). Pure functions, no allocation.
 */
#ifndef VNOISE_FORMAT_RECFILE_H
#define VNOISE_FORMAT_RECFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "record.h"

/* CRC-32 of chunk header h with its header_crc32 field taken as 0 (the value header_crc32 must hold). */
uint32_t recfile_chunk_crc(const struct vn_rec_chunk *h);

/* True when len payload bytes suit a chunk of type: SAMPLES, EVENTS, DTL_SPANS and DTL_GAPS hold whole
 * arrays of struct vn_sample / vn_event / vn_rec_dtl_span / vn_rec_dtl_gap; other types any length. */
bool recfile_chunk_len_ok(uint16_t type, uint32_t len);

/* One "key=value" line of a text payload; key and value are not NUL-terminated. */
struct recfile_kv {
	const char *key;
	size_t key_len;
	const char *val;
	size_t val_len;
};

/*
 * Iterate the key=value lines of a text payload: *pos starts at the payload, end is payload + len. Returns
 * 1 with *kv filled, 0 at the end. Lines without '=' (and empty lines) are skipped; a trailing '\r' is
 * dropped; the value runs to the end of the line and may contain '='.
 */
int recfile_kv_next(const char **pos, const char *end, struct recfile_kv *kv);

/*
 * Find key in a text payload. Returns true with *val and *val_len set to the first matching line's value.
 */
bool recfile_kv_get(const void *payload, size_t len, const char *key, const char **val,
		    size_t *val_len);

#endif
