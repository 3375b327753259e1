/* SPDX-License-Identifier: MIT */
/*
 * recfile: record file writer and hostile-input-safe reader. The writer emits header+payload of a chunk
 * with one writev and never buffers, so a crash leaves at most one partial chunk. The reader snapshots the
 * file size at open and reads only with pread() inside it: every length is checked against the bytes that
 * remain before anything is allocated or read, and the payload buffer never exceeds VN_CHUNK_MAX_PAYLOAD.
 * After a bad chunk header it scans forward in fixed 64 KiB windows for the next "VNCK" whose header CRC
 * holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "util/crc32.h"
#include "format/recfile.h"

#define CHDR_SIZE ((uint64_t)sizeof(struct vn_rec_chunk))
#define SCAN_WINDOW (64u * 1024)

struct recfile_writer {
	int fd;
	int err; /* sticky first error, 0 if none */
	uint64_t seq; /* next chunk sequence number */
	uint64_t bytes; /* written so far */
};

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

static uint32_t chunk_header_crc(const struct vn_rec_chunk *h)
{
	struct vn_rec_chunk tmp = *h;

	tmp.header_crc32 = 0;
	return crc32_update(0, &tmp, sizeof(tmp));
}

/* ---- writer ---- */

/* Write a and b (b may be empty) completely; 0 or -errno. */
static int write_full(int fd, const void *a, size_t alen, const void *b, size_t blen)
{
	struct iovec iov[2] = { { (void *)a, alen }, { (void *)b, blen } };
	struct iovec *v = iov;
	int cnt = blen ? 2 : 1;

	while (cnt > 0) {
		ssize_t n = writev(fd, v, cnt);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		while (cnt > 0 && (size_t)n >= v->iov_len) {
			n -= (ssize_t)v->iov_len;
			v++;
			cnt--;
		}
		if (cnt > 0) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= (size_t)n;
		}
	}
	return 0;
}

struct recfile_writer *recwriter_open(const char *path)
{
	struct recfile_writer *w = NULL;
	struct vn_rec_header h;
	struct timespec ts;
	int err = 0;

	if (!path) {
		err = -EINVAL;
		goto out;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		err = -ENOMEM;
		goto out;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		err = -errno;
		goto out;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, VN_REC_MAGIC, VN_REC_MAGIC_LEN);
	h.version = VN_REC_VERSION;
	h.header_size = sizeof(h);
	if (clock_gettime(CLOCK_REALTIME, &ts) == 0)
		h.created_realtime_ns = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	h.header_crc32 = crc32_update(0, &h, sizeof(h));
	err = write_full(w->fd, &h, sizeof(h), NULL, 0);
	if (err)
		goto out;
	w->bytes = sizeof(h);
out:
	if (err) {
		if (w && w->fd >= 0)
			close(w->fd);
		free(w);
		errno = -err;
		return NULL;
	}
	return w;
}

static int chunk_len_ok(uint16_t type, uint32_t len)
{
	if (type == VN_CHUNK_SAMPLES)
		return len % sizeof(struct vn_sample) == 0;
	if (type == VN_CHUNK_EVENTS)
		return len % sizeof(struct vn_event) == 0;
	return 1;
}

static int write_chunk(struct recfile_writer *w, uint16_t type, const void *payload, uint32_t len)
{
	struct vn_rec_chunk h;
	int err;

	if (w->err)
		return w->err;
	memset(&h, 0, sizeof(h));
	h.magic = VN_CHUNK_MAGIC;
	h.type = type;
	h.payload_len = len;
	h.payload_crc32 = crc32_update(0, payload, len);
	h.seq = w->seq;
	h.header_crc32 = chunk_header_crc(&h);
	err = write_full(w->fd, &h, sizeof(h), payload, len);
	if (err) {
		w->err = err;
		return err;
	}
	w->seq++;
	w->bytes += sizeof(h) + len;
	return 0;
}

int recwriter_chunk(struct recfile_writer *w, uint16_t type, const void *payload, uint32_t len)
{
	if (!w || type == 0 || type == VN_CHUNK_END || (!payload && len))
		return -EINVAL;
	if (len > VN_CHUNK_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (!chunk_len_ok(type, len))
		return -EINVAL;
	return write_chunk(w, type, payload, len);
}

int recwriter_close(struct recfile_writer *w, const char *end_text)
{
	size_t len = end_text ? strlen(end_text) : 0;
	int err;

	if (!w)
		return 0;
	if (len > VN_CHUNK_MAX_PAYLOAD)
		err = w->err ? w->err : -EMSGSIZE;
	else
		err = write_chunk(w, VN_CHUNK_END, end_text, (uint32_t)len);
	/* fsync is meaningless (EINVAL) on pipes and character devices such as /dev/null */
	if (fsync(w->fd) < 0 && errno != EINVAL && !err)
		err = -errno;
	if (close(w->fd) < 0 && !err)
		err = -errno;
	free(w);
	return err;
}

void recwriter_abort(struct recfile_writer *w)
{
	if (!w)
		return;
	close(w->fd);
	free(w);
}

uint64_t recwriter_bytes(const struct recfile_writer *w)
{
	return w ? w->bytes : 0;
}

uint64_t recwriter_chunks(const struct recfile_writer *w)
{
	return w ? w->seq : 0;
}

/* ---- reader ---- */

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
	if (have == 0 || memcmp(raw, VN_REC_MAGIC, cmp) != 0) {
		rd_fail(r, -EPROTO, "bad magic: not a vnoise record file");
		return;
	}
	if (have < sizeof(h)) {
		rd_fail(r, -ENODATA, "truncated file header: needs %zu bytes, %zu left", sizeof(h),
			have);
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
	default:
		return "unknown";
	}
}

/* NULL if h is a plausible chunk header, else why not. */
static const char *chunk_header_problem(const struct vn_rec_chunk *h)
{
	if (h->magic != VN_CHUNK_MAGIC)
		return "bad chunk magic";
	if (chunk_header_crc(h) != h->header_crc32)
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

int recreader_next(struct recfile_reader *r, struct recfile_chunk *out)
{
	struct vn_rec_chunk h;
	const char *why;
	uint64_t left, at;
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
	left = r->size - at;
	if (left == 0)
		return rd_fail(
		    r, -ENODATA,
		    "truncated: no end marker (writer did not close the file) after %" PRIu64
		    " chunks",
		    r->st.chunks);
	if (left < CHDR_SIZE)
		return rd_fail(r, -ENODATA,
			       "truncated chunk %" PRIu64 " at offset %" PRIu64
			       ": header needs %" PRIu64 " bytes, %" PRIu64 " left",
			       r->next_seq, at, CHDR_SIZE, left);
	err = rd_exact(r, &h, sizeof(h), at);
	if (err)
		return rd_fail(r, err, "chunk %" PRIu64 " at offset %" PRIu64 ": read error: %s",
			       r->next_seq, at, strerror(-err));
	why = chunk_header_problem(&h);
	if (why)
		return rd_bad_header(r, why);
	if (h.payload_len > left - CHDR_SIZE)
		return rd_fail(r, -ENODATA,
			       "truncated chunk %" PRIu64 " at offset %" PRIu64
			       ": payload needs %" PRIu32 " bytes, %" PRIu64 " left",
			       (uint64_t)h.seq, at, (uint32_t)h.payload_len, left - CHDR_SIZE);
	err = rd_reserve(r, h.payload_len ? h.payload_len : 1);
	if (!err)
		err = rd_exact(r, r->buf, h.payload_len, at + CHDR_SIZE);
	if (err)
		return rd_fail(r, err, "chunk %" PRIu64 " at offset %" PRIu64 ": %s",
			       (uint64_t)h.seq, at, strerror(-err));
	r->off = at + CHDR_SIZE + h.payload_len;
	if (h.seq >= r->next_seq)
		r->st.missing_chunks += h.seq - r->next_seq;
	if (crc32_update(0, r->buf, h.payload_len) != h.payload_crc32) {
		r->st.bad_chunks++;
		r->next_seq = h.seq + 1;
		return rd_fail(r, -EBADMSG,
			       "chunk %" PRIu64 " at offset %" PRIu64
			       ": payload CRC mismatch (type %s, %" PRIu32 " bytes skipped)",
			       (uint64_t)h.seq, at, chunk_type_name(h.type),
			       (uint32_t)h.payload_len);
	}
	if (!chunk_len_ok(h.type, h.payload_len)) {
		r->st.bad_chunks++;
		r->next_seq = h.seq + 1;
		return rd_fail(r, -EBADMSG,
			       "chunk %" PRIu64 " at offset %" PRIu64 ": %s payload of %" PRIu32
			       " bytes is not a whole number of records",
			       (uint64_t)h.seq, at, chunk_type_name(h.type),
			       (uint32_t)h.payload_len);
	}
	r->st.chunks++;
	out->type = h.type;
	out->flags = h.flags;
	out->len = h.payload_len;
	out->seq = h.seq;
	out->offset = at;
	out->payload = r->buf;
	if (h.type == VN_CHUNK_END) {
		r->ended = true;
		r->st.trailing_bytes = r->size - r->off;
	}
	if (h.seq != r->next_seq && !resynced) {
		/* hold the intact chunk back for the next call and report the gap first */
		uint64_t expect = r->next_seq;

		r->pending = *out;
		r->has_pending = true;
		r->next_seq = h.seq + 1;
		if (h.seq > expect)
			return rd_fail(r, -EBADMSG,
				       "chunk sequence gap at offset %" PRIu64 ": expected %" PRIu64
				       ", found %" PRIu64 " (%" PRIu64 " chunks missing)",
				       at, expect, (uint64_t)h.seq, (uint64_t)h.seq - expect);
		return rd_fail(r, -EBADMSG,
			       "chunk sequence went back at offset %" PRIu64 ": expected %" PRIu64
			       ", found %" PRIu64,
			       at, expect, (uint64_t)h.seq);
	}
	r->next_seq = h.seq + 1;
	return 1;
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

/* ---- text payloads ---- */

int recfile_kv_next(const char **pos, const char *end, struct recfile_kv *kv)
{
	const char *p = *pos;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *line = p;
		const char *eq;

		p = nl ? nl + 1 : end;
		if (eol > line && eol[-1] == '\r')
			eol--;
		eq = memchr(line, '=', (size_t)(eol - line));
		if (!eq)
			continue;
		kv->key = line;
		kv->key_len = (size_t)(eq - line);
		kv->val = eq + 1;
		kv->val_len = (size_t)(eol - eq - 1);
		*pos = p;
		return 1;
	}
	*pos = end;
	return 0;
}

bool recfile_kv_get(const void *payload, size_t len, const char *key, const char **val,
		    size_t *val_len)
{
	const char *pos = payload;
	const char *end = pos + len;
	size_t klen = strlen(key);
	struct recfile_kv kv;

	if (!payload)
		return false;
	while (recfile_kv_next(&pos, end, &kv)) {
		if (kv.key_len == klen && memcmp(kv.key, key, klen) == 0) {
			*val = kv.val;
			*val_len = kv.val_len;
			return true;
		}
	}
	return false;
}
