/* SPDX-License-Identifier: MIT */
/*
 * recwriter: record file writer (see recwriter.h). It emits header+payload of a chunk with one writev and
 * never buffers, so a crash leaves at most one partial chunk; a failed write (a full disk) cuts its partial
 * chunk off again, so the file then ends after its last whole chunk.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "util/crc32.h"
#include "util/outfile.h"
#include "format/recfile.h"
#include "format/recwriter.h"
#include "format/recwriter_priv.h"

struct recfile_writer {
	int fd;
	int err; /* sticky first error, 0 if none */
	uint64_t seq; /* next chunk sequence number */
	uint64_t bytes; /* written so far */
	uint64_t lost; /* chunks refused after (and with) the first write error */
};

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

/* Cut the file back to len bytes after a failed write (best effort: a pipe or a device cannot be cut, so
 * its reader sees the partial chunk). */
static void cut_back(int fd, uint64_t len)
{
	if (ftruncate(fd, (off_t)len) == 0)
		lseek(fd, (off_t)len, SEEK_SET);
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
	/* written in place (a killed run leaves its whole chunks readable; a pipe or /dev/null works) */
	w->fd = outfile_open(path, O_TRUNC, OUTFILE_MODE);
	if (w->fd < 0) {
		err = w->fd;
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
	if (err) {
		cut_back(w->fd, 0); /* no partial header: an empty file */
		goto out;
	}
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

static int write_chunk(struct recfile_writer *w, uint16_t type, const void *payload, uint32_t len)
{
	struct vn_rec_chunk h;
	int err;

	if (w->err) {
		w->lost++;
		return w->err;
	}
	memset(&h, 0, sizeof(h));
	h.magic = VN_CHUNK_MAGIC;
	h.type = type;
	h.payload_len = len;
	h.payload_crc32 = crc32_update(0, payload, len);
	h.seq = w->seq;
	h.header_crc32 = recfile_chunk_crc(&h);
	err = write_full(w->fd, &h, sizeof(h), payload, len);
	if (err) {
		w->err = err;
		w->lost++;
		cut_back(w->fd,
			 w->bytes); /* the part written: the file ends after its last whole chunk */
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
	if (!recfile_chunk_len_ok(type, len))
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

int recwriter_error(const struct recfile_writer *w)
{
	return w ? w->err : 0;
}

uint64_t recwriter_lost(const struct recfile_writer *w)
{
	return w ? w->lost : 0;
}
