/* SPDX-License-Identifier: MIT */
/*
 * recwriter: writer of the vnoise record file (protocol/record.h, protocol/README.md). It appends
 * CRC-protected chunks and seals the file with an END chunk on close; recreader reads them back. One writer
 * is used by one thread at a time.
 */
#ifndef VNOISE_FORMAT_RECWRITER_H
#define VNOISE_FORMAT_RECWRITER_H

#include <stdint.h>
#include "record.h"

struct recfile_writer;

/*
 * Create or truncate path (outfile_open(): written in place, mode 0640, a symbolic link refused with ELOOP)
 * and write the file header. Returns the writer, owned by the caller until recwriter_close()/recwriter_abort(),
 * or NULL with errno set. outfile_exit_code() gives a command's exit code for its errors.
 */
struct recfile_writer *recwriter_open(const char *path) __attribute__((warn_unused_result));

/*
 * Append one chunk of the given type (not VN_CHUNK_END) with len payload bytes. SAMPLES/EVENTS payloads must
 * be whole arrays of struct vn_sample/vn_event. Returns 0 or -errno (-EINVAL, -EMSGSIZE over 64 MiB, write
 * errors: -ENOSPC a full disk, -EDQUOT, -EFBIG, -EIO). After a write error the part of the chunk that was
 * written is cut off again (the file ends after its last whole chunk, and reads as not closed), and every
 * later call returns that error; recwriter_lost() counts what was refused.
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

/* The chunks refused since the writer's sticky error (the failed one included). */
uint64_t recwriter_lost(const struct recfile_writer *w);

#endif
