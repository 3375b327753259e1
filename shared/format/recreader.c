/* SPDX-License-Identifier: MIT */
/*
 * recreader: hostile-input-safe record file reader (see recreader.h). It snapshots the file size at open and
 * reads only with pread() inside it: every length is checked against the bytes that remain before anything
 * is allocated or read, and the payload buffer never exceeds VN_CHUNK_MAX_PAYLOAD. After a bad chunk header
 * it scans forward in fixed 64 KiB windows for the next "VNCK" whose header CRC holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/crc32.h"
#include "format/recreader.h"
#include "format/recreader_priv.h"

#define CHDR_SIZE ((uint64_t)sizeof(struct vn_rec_chunk))
#define SCAN_WINDOW (64u * 1024)

struct recfile_reader {
	int fd;
	int fatal; /* sticky final error, 0 if none */
	int hdr_damaged; /* report the damaged file header once, then go on */
	bool ended; /* END chunk delivered */
	bool has_pending; /* a chunk held back behind a sequence-gap report */
	bool resynced; /* the last chunk header was found by scanning */
	uint64_t size; /* file size at open */
	uint64_t off; /* next chunk header offset */
	uint64_t next_seq; /* expected sequence number */
	uint64_t created_ns;
	unsigned char *buf; /* payload / scan buffer */
	size_t cap;
	struct recfile_chunk pending;
	struct recfile_stats st;
	char err[256];
};

__attribute__((format(printf, 3, 4))) static int rd_fail(struct recfile_reader *r, int err,
							 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	if (err != -EBADMSG)
		r->fatal = err;
	return err;
}

/* Read exactly len bytes at off, which the caller has checked lie inside the file; 0 or -errno. */
static int rd_exact(struct recfile_reader *r, void *dst, size_t len, uint64_t off)
{
	unsigned char *p = dst;

	while (len) {
		ssize_t n = pread(r->fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO; /* the file shrank under us */
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int rd_reserve(struct recfile_reader *r, size_t len)
{
	unsigned char *nb;
	size_t ncap;

	if (len <= r->cap)
		return 0;
	ncap = r->cap ? r->cap : 4096;
	while (ncap < len)
		ncap *= 2;
	nb = realloc(r->buf, ncap);
	if (!nb)
		return -ENOMEM;
	r->buf = nb;
	r->cap = ncap;
	return 0;
}

/* Check the file header; sets r->off, or r->fatal / r->hdr_damaged with a message. */
static void rd_header(struct recfile_reader *r)
{
	unsigned char raw[VN_REC_HEADER_MAX];
	struct vn_rec_header h;
	size_t have = r->size < sizeof(raw) ? (size_t)r->size : sizeof(raw);
	size_t cmp = have < VN_REC_MAGIC_LEN ? have : VN_REC_MAGIC_LEN;
	uint32_t crc, zero = 0;
	int err;

	err = rd_exact(r, raw, have, 0);
	if (err) {
		rd_fail(r, err, "reading file header: %s", strerror(-err));
		return;
	}
	if (have == 0) {
		rd_fail(r, -ENODATA,
			"truncated at offset 0 after 0 chunks: an empty file (the writer stopped "
			"before the file header)");
		return;
	}
	if (memcmp(raw, VN_REC_MAGIC, cmp) != 0) {
		rd_fail(r, -EPROTO, "bad magic: not a vnoise record file");
		return;
	}
	if (have < sizeof(h)) {
		rd_fail(r, -ENODATA,
			"truncated at offset 0 after 0 chunks: the file header needs %zu bytes, "
			"%zu left",
			sizeof(h), have);
		return;
	}
	memcpy(&h, raw, sizeof(h));
	r->off = sizeof(h);
	if (h.header_size >= sizeof(h) && h.header_size <= have) {
		crc = crc32_update(0, raw, offsetof(struct vn_rec_header, header_crc32));
		crc = crc32_update(crc, &zero, sizeof(zero));
		crc = crc32_update(crc, raw + offsetof(struct vn_rec_header, reserved),
				   h.header_size - offsetof(struct vn_rec_header, reserved));
		if (crc == h.header_crc32) {
			if (h.version != VN_REC_VERSION) {
				rd_fail(r, -EPROTONOSUPPORT,
					"unsupported version %" PRIu32 " (this build reads %u)",
					(uint32_t)h.version, VN_REC_VERSION);
				return;
			}
			r->off = h.header_size;
			r->created_ns = h.created_realtime_ns;
			return;
		}
	}
	r->hdr_damaged = 1;
	r->st.bad_chunks++;
	snprintf(r->err, sizeof(r->err),
		 "file header damaged (CRC mismatch or bad header_size %" PRIu32
		 "); reading chunks from offset %zu",
		 (uint32_t)h.header_size, sizeof(h));
}

struct recfile_reader *recreader_open(const char *path)
{
	struct recfile_reader *r = NULL;
	struct stat st;
	int err = 0;

	if (!path) {
		err = -EINVAL;
		goto out;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = -ENOMEM;
		goto out;
	}
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		err = -errno;
		goto out;
	}
	if (fstat(r->fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err = -EINVAL;
		goto out;
	}
	r->size = (uint64_t)st.st_size;
	rd_header(r);
out:
	if (err) {
		recreader_close(r);
		errno = -err;
		return NULL;
	}
	return r;
}

void recreader_close(struct recfile_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	free(r->buf);
	free(r);
}

static const char *chunk_type_name(uint16_t type)
{
	switch (type) {
	case VN_CHUNK_META:
		return "META";
	case VN_CHUNK_SAMPLES:
		return "SAMPLES";
	case VN_CHUNK_EVENTS:
		return "EVENTS";
	case VN_CHUNK_STATS:
		return "STATS";
	case VN_CHUNK_END:
		return "END";
	case VN_CHUNK_DTL_SPANS:
		return "DTL_SPANS";
	case VN_CHUNK_DTL_GAPS:
		return "DTL_GAPS";
	case VN_CHUNK_DTL_CAUSES:
		return "DTL_CAUSES";
	default:
		return "unknown";
	}
}

/* NULL if h is a plausible chunk header, else why not. */
static const char *chunk_header_problem(const struct vn_rec_chunk *h)
{
	if (h->magic != VN_CHUNK_MAGIC)
		return "bad chunk magic";
	if (recfile_chunk_crc(h) != h->header_crc32)
		return "header CRC mismatch";
	if (h->payload_len > VN_CHUNK_MAX_PAYLOAD)
		return "payload length over 64 MiB";
	return NULL;
}

/*
 * Scan (from, size) for the next valid chunk header. Returns its offset, r->size if none, or -errno (as a
 * negative int64_t) on a read error.
 */
static int64_t rd_scan(struct recfile_reader *r, uint64_t from)
{
	static const unsigned char magic[4] = { 'V', 'N', 'C', 'K' };
	uint64_t pos = from;
	int err;

	err = rd_reserve(r, SCAN_WINDOW + CHDR_SIZE);
	if (err)
		return err;
	while (r->size - pos >= CHDR_SIZE) {
		uint64_t left = r->size - pos;
		size_t n = left < SCAN_WINDOW + CHDR_SIZE ? (size_t)left : SCAN_WINDOW + CHDR_SIZE;
		size_t i = 0;

		err = rd_exact(r, r->buf, n, pos);
		if (err)
			return err;
		/* candidates start at i <= n - CHDR_SIZE, so their whole header is in the window */
		while (i + CHDR_SIZE <= n) {
			unsigned char *m = memmem(r->buf + i, n - i, magic, sizeof(magic));
			struct vn_rec_chunk h;

			if (!m)
				break;
			i = (size_t)(m - r->buf);
			if (i + CHDR_SIZE > n)
				break;
			memcpy(&h, m, sizeof(h));
			if (!chunk_header_problem(&h))
				return (int64_t)(pos + i);
			i++;
		}
		/* next window overlaps so that a header straddling the edge is seen whole */
		pos += n - CHDR_SIZE + 1;
	}
	return (int64_t)r->size;
}

static int rd_bad_header(struct recfile_reader *r, const char *why)
{
	uint64_t at = r->off;
	int64_t found = rd_scan(r, at + 1);

	r->st.bad_chunks++;
	if (found < 0)
		return rd_fail(r, (int)found,
			       "chunk %" PRIu64 " at offset %" PRIu64
			       ": %s; read error while resynchronising: %s",
			       r->next_seq, at, why, strerror((int)-found));
	r->st.skipped_bytes += (uint64_t)found - at;
	r->off = (uint64_t)found;
	if ((uint64_t)found >= r->size)
		return rd_fail(r, -EBADMSG,
			       "chunk %" PRIu64 " at offset %" PRIu64
			       ": %s; no valid chunk in the remaining %" PRIu64 " bytes",
			       r->next_seq, at, why, (uint64_t)found - at);
	r->resynced = true;
	return rd_fail(r, -EBADMSG,
		       "chunk %" PRIu64 " at offset %" PRIu64 ": %s; skipped %" PRIu64
		       " bytes to the next chunk at offset %" PRIu64,
		       r->next_seq, at, why, (uint64_t)found - at, (uint64_t)found);
}

/*
 * Read the chunk whose header is expected at r->off: header, then payload into r->buf. Returns 0 with *h and
 * r->off past the chunk, or the negative result of recreader_next() (truncation, read error, bad header
 * skipped by a scan).
 */
static int rd_chunk(struct recfile_reader *r, struct vn_rec_chunk *h)
{
	uint64_t at = r->off, left = r->size - at;
	const char *why;
	int err;

	if (left == 0)
		return rd_fail(r, -ENODATA,
			       "truncated at offset %" PRIu64 " after %" PRIu64
			       " chunks: no end marker (the writer did not close the file)",
			       at, r->st.chunks);
	if (left < CHDR_SIZE)
		return rd_fail(r, -ENODATA,
			       "truncated at offset %" PRIu64 " after %" PRIu64
			       " chunks: chunk %" PRIu64 "'s header needs %" PRIu64
			       " bytes, %" PRIu64 " left",
			       at, r->st.chunks, r->next_seq, CHDR_SIZE, left);
	err = rd_exact(r, h, sizeof(*h), at);
	if (err)
		return rd_fail(r, err, "chunk %" PRIu64 " at offset %" PRIu64 ": read error: %s",
			       r->next_seq, at, strerror(-err));
	why = chunk_header_problem(h);
	if (why)
		return rd_bad_header(r, why);
	if (h->payload_len > left - CHDR_SIZE)
		return rd_fail(
		    r, -ENODATA,
		    "truncated at offset %" PRIu64 " after %" PRIu64 " chunks: chunk %" PRIu64
		    "'s payload needs %" PRIu32 " bytes, %" PRIu64 " left",
		    at, r->st.chunks, (uint64_t)h->seq, (uint32_t)h->payload_len, left - CHDR_SIZE);
	err = rd_reserve(r, h->payload_len ? h->payload_len : 1);
	if (!err)
		err = rd_exact(r, r->buf, h->payload_len, at + CHDR_SIZE);
	if (err)
		return rd_fail(r, err, "chunk %" PRIu64 " at offset %" PRIu64 ": %s",
			       (uint64_t)h->seq, at, strerror(-err));
	r->off = at + CHDR_SIZE + h->payload_len;
	return 0;
}

/* Check the payload just read for the chunk at offset at: 0, or -EBADMSG (counted, chunk skipped). */
static int rd_payload(struct recfile_reader *r, const struct vn_rec_chunk *h, uint64_t at)
{
	if (crc32_update(0, r->buf, h->payload_len) != h->payload_crc32) {
		r->st.bad_chunks++;
		r->next_seq = h->seq + 1;
		return rd_fail(r, -EBADMSG,
			       "chunk %" PRIu64 " at offset %" PRIu64
			       ": payload CRC mismatch (type %s, %" PRIu32 " bytes skipped)",
			       (uint64_t)h->seq, at, chunk_type_name(h->type),
			       (uint32_t)h->payload_len);
	}
	if (!recfile_chunk_len_ok(h->type, h->payload_len)) {
		r->st.bad_chunks++;
		r->next_seq = h->seq + 1;
		return rd_fail(r, -EBADMSG,
			       "chunk %" PRIu64 " at offset %" PRIu64 ": %s payload of %" PRIu32
			       " bytes is not a whole number of records",
			       (uint64_t)h->seq, at, chunk_type_name(h->type),
			       (uint32_t)h->payload_len);
	}
	return 0;
}

/*
 * Hand out the intact chunk at offset at: 1 with *out, or -EBADMSG for a sequence gap (not after a resync,
 * which reported its damage already), the chunk then held back for the next call.
 */
static int rd_deliver(struct recfile_reader *r, const struct vn_rec_chunk *h, uint64_t at,
		      bool resynced, struct recfile_chunk *out)
{
	uint64_t expect = r->next_seq;

	r->st.chunks++;
	out->type = h->type;
	out->flags = h->flags;
	out->len = h->payload_len;
	out->seq = h->seq;
	out->offset = at;
	out->payload = r->buf;
	if (h->type == VN_CHUNK_END) {
		r->ended = true;
		r->st.trailing_bytes = r->size - r->off;
	}
	r->next_seq = h->seq + 1;
	if (h->seq == expect || resynced)
		return 1;
	r->pending = *out;
	r->has_pending = true;
	if (h->seq > expect)
		return rd_fail(r, -EBADMSG,
			       "chunk sequence gap at offset %" PRIu64 ": expected %" PRIu64
			       ", found %" PRIu64 " (%" PRIu64 " chunks missing)",
			       at, expect, (uint64_t)h->seq, (uint64_t)h->seq - expect);
	return rd_fail(r, -EBADMSG,
		       "chunk sequence went back at offset %" PRIu64 ": expected %" PRIu64
		       ", found %" PRIu64,
		       at, expect, (uint64_t)h->seq);
}

int recreader_next(struct recfile_reader *r, struct recfile_chunk *out)
{
	struct vn_rec_chunk h;
	uint64_t at;
	bool resynced;
	int err;

	if (!r || !out)
		return -EINVAL;
	if (r->fatal)
		return r->fatal; /* the message of the final error stays */
	if (r->hdr_damaged) {
		r->hdr_damaged = 0;
		return -EBADMSG; /* message set by rd_header() */
	}
	r->err[0] = '\0';
	if (r->has_pending) {
		r->has_pending = false;
		*out = r->pending;
		return 1;
	}
	if (r->ended)
		return 0;
	resynced = r->resynced;
	r->resynced = false;
	at = r->off;
	err = rd_chunk(r, &h);
	if (err)
		return err;
	if (h.seq >= r->next_seq)
		r->st.missing_chunks += h.seq - r->next_seq;
	err = rd_payload(r, &h, at);
	if (err)
		return err;
	return rd_deliver(r, &h, at, resynced, out);
}

const char *recreader_error(const struct recfile_reader *r)
{
	return r ? r->err : "";
}

uint64_t recreader_offset(const struct recfile_reader *r)
{
	return r ? r->off : 0;
}

uint64_t recreader_bad_chunks(const struct recfile_reader *r)
{
	return r ? r->st.bad_chunks : 0;
}

void recreader_stats(const struct recfile_reader *r, struct recfile_stats *out)
{
	if (r)
		*out = r->st;
	else
		memset(out, 0, sizeof(*out));
}

uint64_t recreader_created_realtime_ns(const struct recfile_reader *r)
{
	return r ? r->created_ns : 0;
}
