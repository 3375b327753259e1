/* SPDX-License-Identifier: MIT */
/*
 * recfile: writer and reader of the vnoise record file (protocol/record.h, protocol/README.md). The writer
 * appends CRC-protected chunks and seals the file with an END chunk on close. The reader walks the chunks of
 * a complete file, treats every byte as hostile (bounded memory, no overread), reports damage with a
 * one-line reason and resynchronises past it, so everything intact before and after a damaged region is
 * still delivered. One object is used by one thread at a time.
 */
#ifndef VNOISE_FORMAT_RECFILE_H
#define VNOISE_FORMAT_RECFILE_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "record.h"

struct recfile_writer;
struct recfile_reader;

/*
 * Create or truncate path (mode 0644) and write the file header. Returns the writer, owned by the caller
 * until recwriter_close()/recwriter_abort(), or NULL with errno set.
 */
struct recfile_writer *recwriter_open(const char *path) __attribute__((warn_unused_result));

/*
 * Append one chunk of the given type (not VN_CHUNK_END) with len payload bytes. SAMPLES/EVENTS payloads must
 * be whole arrays of struct vn_sample/vn_event. Returns 0 or -errno (-EINVAL, -EMSGSIZE over 64 MiB, write
 * errors). After a write error the file is left as written and every later call returns that error.
 */
int recwriter_chunk(struct recfile_writer *w, uint16_t type, const void *payload, uint32_t len)
    __attribute__((warn_unused_result));

/*
 * Write the END chunk with end_text (key=value lines, NULL for none), fsync, close and free w. Accepts NULL.
 * Returns 0 or the first error of the writer's life (-errno); w is freed in every case.
 */
int recwriter_close(struct recfile_writer *w, const char *end_text)
    __attribute__((warn_unused_result));

/* Close and free w without an END chunk (the file then reads as "not closed"). Accepts NULL. */
void recwriter_abort(struct recfile_writer *w);

/* Bytes written so far (header, chunk headers and payloads), and chunks written (the next seq). */
uint64_t recwriter_bytes(const struct recfile_writer *w);
uint64_t recwriter_chunks(const struct recfile_writer *w);

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
 *   -ENODATA   truncated (partial chunk, or no END chunk: the writer did not close the file),
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

/* File offset where the next chunk header is expected (after the last delivered or skipped data). */
uint64_t recreader_offset(const struct recfile_reader *r);

/* Damaged chunks/regions skipped so far; full counters in recreader_stats(). */
uint64_t recreader_bad_chunks(const struct recfile_reader *r);
void recreader_stats(const struct recfile_reader *r, struct recfile_stats *out);

/* created_realtime_ns from the file header (0 if the header was damaged or not read). */
uint64_t recreader_created_realtime_ns(const struct recfile_reader *r);

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
