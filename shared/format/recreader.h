/* SPDX-License-Identifier: MIT */
/*
 * recreader: reader of the vnoise record file (protocol/record.h, protocol/README.md) that recwriter writes.
 * It walks the chunks of a complete file, treats every byte as hostile (bounded memory, no overread), reports
 * damage with a one-line reason and resynchronises past it, so everything intact before and after a damaged
 * region is still delivered. Text payloads (META, END) are read with recfile_kv_*. One reader is used by one
 * thread at a time.
 */
#ifndef VNOISE_FORMAT_RECREADER_H
#define VNOISE_FORMAT_RECREADER_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include "record.h"
#include "format/recfile.h"

struct recfile_reader;

/* One chunk returned by recreader_next(). payload stays valid until the next recreader_next()/recreader_close(). */
struct recfile_chunk {
	uint16_t type; /* enum vn_chunk_type; unknown types are passed through */
	uint16_t flags; /* chunk header flags */
	uint32_t len; /* payload bytes */
	uint64_t seq; /* chunk sequence number from the file */
	uint64_t offset; /* file offset of the chunk header */
	const void *payload; /* len bytes, 8-byte aligned, copy of the file's bytes */
};

/* What the reader has seen so far. */
struct recfile_stats {
	uint64_t chunks; /* intact chunks delivered (END included) */
	uint64_t bad_chunks; /* damaged chunks or regions skipped */
	uint64_t skipped_bytes; /* bytes skipped while resynchronising after a bad chunk header */
	uint64_t missing_chunks; /* sequence numbers never seen (lost in damaged regions) */
	uint64_t trailing_bytes; /* bytes after the END chunk (ignored) */
};

/*
 * Open a record file for reading (a regular file, read as it is at open time) and check its header.
 * Returns the reader, or NULL with errno set when the file cannot be opened or memory runs out. A file that
 * is not a valid record file still opens: the first recreader_next() returns the error and recreader_error() says why.
 */
struct recfile_reader *recreader_open(const char *path) __attribute__((warn_unused_result));

/* Close and free r. Accepts NULL. */
void recreader_close(struct recfile_reader *r);

/*
 * Read the next chunk. Returns 1 with *out filled, 0 after the END chunk was delivered (clean end), or a
 * negative errno with recreader_error() telling why:
 *   -EBADMSG   damage was found and skipped (bad file header CRC, payload CRC mismatch, bad chunk header
 *              followed by a scan to the next valid one, sequence gap); call again to continue.
 *   -ENODATA   truncated (an empty file, a partial header or chunk, or no END chunk: the writer did not
 *              close the file); the message starts "truncated at offset O after N chunks: " with O the
 *              offset where the whole chunks end (where the file was cut) and N the intact chunks read,
 *   -EPROTO    not a vnoise record file, -EPROTONOSUPPORT other version, -EIO/-ENOMEM:
 *              final; later calls return the same error.
 */
int recreader_next(struct recfile_reader *r, struct recfile_chunk *out)
    __attribute__((warn_unused_result));

/* True when a recreader_next() result is damage that was skipped, so reading may continue. */
static inline bool recreader_recoverable(int rc)
{
	return rc == -EBADMSG;
}

/* One-line reason for the last negative recreader_next() result ("" if none). Valid until the next call. */
const char *recreader_error(const struct recfile_reader *r);

/* Counters of what was read and skipped so far. */
void recreader_stats(const struct recfile_reader *r, struct recfile_stats *out);

#endif
