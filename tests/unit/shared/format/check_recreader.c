/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/format/recreader, on files written by the real recwriter (or damaged copies of
 * them): round trips of every chunk type, file header errors with their messages, recovery from damaged
 * payloads, damaged chunk headers and sequence gaps, truncation, and fuzz-like robustness (random files,
 * truncation at every offset, every single bit flipped) where delivered chunks must always be intact copies
 * of what was written.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "util/crc32.h"
#include "format/recreader.h"
#include "format/recreader_priv.h"
#include "format/recwriter.h"

#define MAX_CHUNKS 16

static char tmpdir[64];
static char path[128];

struct expect {
	int n;
	uint16_t type[MAX_CHUNKS];
	uint32_t len[MAX_CHUNKS];
	unsigned char *data[MAX_CHUNKS];
};

static void setup(void)
{
	strcpy(tmpdir, "/tmp/check_recreader.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/rec.vnr", tmpdir);
}

static void teardown(void)
{
	char alt[160];

	unlink(path);
	snprintf(alt, sizeof(alt), "%s/mut.vnr", tmpdir);
	unlink(alt);
	rmdir(tmpdir);
}

static void write_bytes(const char *p, const void *buf, size_t len)
{
	FILE *f = fopen(p, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static unsigned char *read_bytes(const char *p, size_t *len)
{
	FILE *f = fopen(p, "rb");
	unsigned char *buf;
	long n;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void fill_samples(struct vn_sample *s, int n, int salt)
{
	int i;

	memset(s, 0, sizeof(*s) * (size_t)n);
	for (i = 0; i < n; i++) {
		s[i].start_ns = 1000000ull * (uint64_t)(i + salt);
		s[i].end_ns = s[i].start_ns + 1234 + (uint64_t)i;
		s[i].cpu = (__u16)(i % 4);
		s[i].kind = VN_SAMPLE_GAP;
	}
}

/* Write a file with META, SAMPLES, EVENTS, STATS, SAMPLES (+END unless !close) and record expectations. */
static void write_sample_file(const char *p, struct expect *e, int close_it)
{
	static const char meta[] = "version=1\nhostname=guest0\nirq.24=virtio0-input.0\n";
	static const char stats[] = "dropped=0\nbpf_run_ns=12345\n";
	static const char end[] = "samples=7\nevents=2\n";
	struct vn_sample s1[4], s2[3];
	struct vn_event ev[2];
	struct recfile_writer *w;
	const void *bufs[5];
	uint32_t lens[5];
	uint16_t types[5] = { VN_CHUNK_META, VN_CHUNK_SAMPLES, VN_CHUNK_EVENTS, VN_CHUNK_STATS,
			      VN_CHUNK_SAMPLES };
	int i;

	fill_samples(s1, 4, 0);
	fill_samples(s2, 3, 100);
	memset(ev, 0, sizeof(ev));
	ev[0].start_ns = 5;
	ev[0].end_ns = 9;
	ev[0].net_ns = 4;
	ev[0].cls = VN_CLASS_IRQ;
	ev[0].id = 24;
	ev[1].cls = VN_CLASS_THREAD;
	ev[1].id = 4242;
	strcpy(ev[1].comm, "kworker/0:1");
	bufs[0] = meta;
	lens[0] = sizeof(meta) - 1;
	bufs[1] = s1;
	lens[1] = sizeof(s1);
	bufs[2] = ev;
	lens[2] = sizeof(ev);
	bufs[3] = stats;
	lens[3] = sizeof(stats) - 1;
	bufs[4] = s2;
	lens[4] = sizeof(s2);

	w = recwriter_open(p);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(recwriter_bytes(w), sizeof(struct vn_rec_header));
	e->n = 0;
	for (i = 0; i < 5; i++) {
		ck_assert_int_eq(recwriter_chunk(w, types[i], bufs[i], lens[i]), 0);
		e->type[e->n] = types[i];
		e->len[e->n] = lens[i];
		e->data[e->n] = malloc(lens[i] + 1);
		memcpy(e->data[e->n], bufs[i], lens[i]);
		e->n++;
	}
	ck_assert_uint_eq(recwriter_chunks(w), 5);
	if (close_it) {
		uint64_t expect_bytes =
		    recwriter_bytes(w) + sizeof(struct vn_rec_chunk) + sizeof(end) - 1;
		size_t flen;
		unsigned char *raw;

		e->type[e->n] = VN_CHUNK_END;
		e->len[e->n] = sizeof(end) - 1;
		e->data[e->n] = malloc(sizeof(end));
		memcpy(e->data[e->n], end, sizeof(end));
		e->n++;
		ck_assert_int_eq(recwriter_close(w, end), 0);
		raw = read_bytes(p, &flen);
		ck_assert_uint_eq(flen, expect_bytes);
		free(raw);
	} else {
		recwriter_abort(w);
	}
}

/* write_sample_file() to path, closed, and its bytes (malloc'd, *len of them). */
static unsigned char *sample_file_bytes(struct expect *e, size_t *len)
{
	write_sample_file(path, e, 1);
	return read_bytes(path, len);
}

/* A valid file header of the given version, header_size sizeof(*h), its CRC set. */
static void file_header(struct vn_rec_header *h, uint32_t version)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, VN_REC_MAGIC, 8);
	h->version = version;
	h->header_size = sizeof(*h);
	h->header_crc32 = crc32_update(0, h, sizeof(*h));
}

/* A valid chunk header of type for the len bytes at payload (seq 0), both CRCs set. */
static void chunk_header(struct vn_rec_chunk *ch, uint16_t type, const void *payload, uint32_t len)
{
	memset(ch, 0, sizeof(*ch));
	ch->magic = VN_CHUNK_MAGIC;
	ch->type = type;
	ch->payload_len = len;
	ch->payload_crc32 = crc32_update(0, payload, len);
	ch->header_crc32 = crc32_update(0, ch, sizeof(*ch));
}

static void free_expect(struct expect *e)
{
	int i;

	for (i = 0; i < e->n; i++)
		free(e->data[i]);
	e->n = 0;
}

/* A delivered chunk must be an exact copy of the written chunk with the same seq. */
static void assert_intact(const struct expect *e, const struct recfile_chunk *c)
{
	ck_assert_uint_lt(c->seq, (uint64_t)e->n);
	ck_assert_uint_eq(c->type, e->type[c->seq]);
	ck_assert_uint_eq(c->len, e->len[c->seq]);
	ck_assert_int_eq(memcmp(c->payload, e->data[c->seq], c->len), 0);
}

/*
 * Read the whole file, asserting every delivered chunk is intact. Returns the final result (0 or a final
 * error), the delivered count in *got and a bitmap of delivered seqs.
 */
static int read_all(const char *p, const struct expect *e, int *got, unsigned *seen)
{
	struct recfile_reader *r = recreader_open(p);
	struct recfile_chunk c;
	int rc, iter = 0;

	ck_assert_ptr_nonnull(r);
	*got = 0;
	*seen = 0;
	for (;;) {
		ck_assert_int_lt(++iter, 10000);
		rc = recreader_next(r, &c);
		if (rc == 1) {
			assert_intact(e, &c);
			(*got)++;
			*seen |= 1u << c.seq;
			continue;
		}
		if (rc < 0)
			ck_assert_str_ne(recreader_error(r), "");
		if (!recreader_recoverable(rc))
			break;
	}
	/* final results are sticky */
	ck_assert_int_eq(recreader_next(r, &c), rc);
	recreader_close(r);
	return rc;
}

/* ---- round trip ---- */

START_TEST(test_roundtrip)
{
	struct recfile_reader *r;
	struct recfile_chunk c;
	struct recfile_stats st;
	struct expect e;
	struct timespec now;
	uint64_t now_ns, created;
	int i;

	write_sample_file(path, &e, 1);
	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	clock_gettime(CLOCK_REALTIME, &now);
	now_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	created = recreader_created_realtime_ns(r);
	ck_assert_uint_le(created, now_ns);
	ck_assert_uint_gt(created, now_ns - 60ull * 1000000000ull);
	for (i = 0; i < e.n; i++) {
		ck_assert_int_eq(recreader_next(r, &c), 1);
		ck_assert_uint_eq(c.seq, (uint64_t)i);
		assert_intact(&e, &c);
		ck_assert_uint_eq((uintptr_t)c.payload % 8, 0);
	}
	ck_assert_uint_eq(c.type, VN_CHUNK_END);
	ck_assert_int_eq(recreader_next(r, &c), 0);
	ck_assert_int_eq(recreader_next(r, &c), 0);
	ck_assert_str_eq(recreader_error(r), "");
	recreader_stats(r, &st);
	ck_assert_uint_eq(st.chunks, (uint64_t)e.n);
	ck_assert_uint_eq(st.bad_chunks, 0);
	ck_assert_uint_eq(st.skipped_bytes, 0);
	ck_assert_uint_eq(st.missing_chunks, 0);
	ck_assert_uint_eq(st.trailing_bytes, 0);
	recreader_close(r);
	free_expect(&e);
}
END_TEST

START_TEST(test_empty_and_null_end)
{
	struct recfile_writer *w = recwriter_open(path);
	struct recfile_reader *r;
	struct recfile_chunk c;

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(recwriter_chunk(w, VN_CHUNK_SAMPLES, NULL, 0), 0);
	ck_assert_int_eq(recwriter_close(w, NULL), 0);
	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_uint_eq(c.type, VN_CHUNK_SAMPLES);
	ck_assert_uint_eq(c.len, 0);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_uint_eq(c.type, VN_CHUNK_END);
	ck_assert_uint_eq(c.seq, 1);
	ck_assert_uint_eq(c.len, 0);
	ck_assert_int_eq(recreader_next(r, &c), 0);
	recreader_close(r);
}
END_TEST

/* ---- file header ---- */

static int open_and_next(const char *p, char *msg, size_t msglen)
{
	struct recfile_reader *r = recreader_open(p);
	struct recfile_chunk c;
	int rc;

	ck_assert_ptr_nonnull(r);
	rc = recreader_next(r, &c);
	snprintf(msg, msglen, "%s", recreader_error(r));
	recreader_close(r);
	return rc;
}

START_TEST(test_bad_magic)
{
	char msg[256];

	write_bytes(path, "hello world, this is not a record file at all, really not at all!!", 66);
	ck_assert_int_eq(open_and_next(path, msg, sizeof(msg)), -EPROTO);
	ck_assert_str_eq(msg, "bad magic: not a vnoise record file");
	/* an empty file is a writer stopped before its header (kill -9 at birth): truncated */
	write_bytes(path, "", 0);
	ck_assert_int_eq(open_and_next(path, msg, sizeof(msg)), -ENODATA);
	ck_assert_str_eq(msg, "truncated at offset 0 after 0 chunks: an empty file (the writer "
			      "stopped before the file header)");
	write_bytes(path, "VNOIS", 5);
	ck_assert_int_eq(open_and_next(path, msg, sizeof(msg)), -ENODATA);
	ck_assert_str_eq(
	    msg, "truncated at offset 0 after 0 chunks: the file header needs 64 bytes, 5 left");
	/* not a regular file */
	errno = 0;
	ck_assert_ptr_null(recreader_open(tmpdir));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(recreader_open("/nonexistent-dir-vnoise/x.vnr"));
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(test_unsupported_version)
{
	struct vn_rec_header h;
	char msg[256];

	file_header(&h, 7);
	write_bytes(path, &h, sizeof(h));
	ck_assert_int_eq(open_and_next(path, msg, sizeof(msg)), -EPROTONOSUPPORT);
	ck_assert_str_eq(msg, "unsupported version 7 (this build reads 1)");
}
END_TEST

START_TEST(test_longer_header_skipped)
{
	/* a future minor extension: header_size 96 with extra fields; the CRC covers all 96 bytes */
	unsigned char raw[96 + sizeof(struct vn_rec_chunk)];
	struct vn_rec_header h;
	struct vn_rec_chunk ch;
	struct recfile_reader *r;
	struct recfile_chunk c;

	memset(raw, 0xab, sizeof(raw));
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, VN_REC_MAGIC, 8);
	h.version = 1;
	h.header_size = 96;
	h.created_realtime_ns = 42;
	memcpy(raw, &h, sizeof(h));
	h.header_crc32 = crc32_update(0, raw, 96);
	memcpy(raw, &h, sizeof(h));
	chunk_header(&ch, VN_CHUNK_END, NULL, 0);
	memcpy(raw + 96, &ch, sizeof(ch));
	write_bytes(path, raw, sizeof(raw));

	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(recreader_created_realtime_ns(r), 42);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_uint_eq(c.type, VN_CHUNK_END);
	ck_assert_uint_eq(c.offset, 96);
	ck_assert_int_eq(recreader_next(r, &c), 0);
	recreader_close(r);
}
END_TEST

START_TEST(test_damaged_header_continues)
{
	struct expect e;
	unsigned char *raw;
	size_t len;
	unsigned seen;
	int got;
	struct recfile_reader *r;
	struct recfile_chunk c;

	raw = sample_file_bytes(&e, &len);
	raw[17] ^= 0x10; /* created_realtime_ns */
	write_bytes(path, raw, len);
	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(recreader_next(r, &c), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(recreader_error(r), "file header damaged"));
	ck_assert_uint_eq(recreader_created_realtime_ns(r), 0);
	recreader_close(r);
	ck_assert_int_eq(read_all(path, &e, &got, &seen), 0);
	ck_assert_int_eq(got, e.n);
	free(raw);
	free_expect(&e);
}
END_TEST

/* ---- damage and recovery ---- */

/* Offset of chunk k in a file from write_sample_file(). */
static size_t chunk_off(const struct expect *e, int k)
{
	size_t off = sizeof(struct vn_rec_header);
	int i;

	for (i = 0; i < k; i++)
		off += sizeof(struct vn_rec_chunk) + e->len[i];
	return off;
}

START_TEST(test_payload_crc_skipped)
{
	struct recfile_reader *r;
	struct recfile_chunk c;
	struct expect e;
	unsigned char *raw;
	char want[200];
	size_t len, off;
	int i;

	raw = sample_file_bytes(&e, &len);
	off = chunk_off(&e, 2);
	raw[off + sizeof(struct vn_rec_chunk) + 3] ^= 1;
	write_bytes(path, raw, len);

	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(recreader_next(r, &c), 1);
		ck_assert_uint_eq(c.seq, (uint64_t)i);
	}
	ck_assert_int_eq(recreader_next(r, &c), -EBADMSG);
	snprintf(want, sizeof(want),
		 "chunk 2 at offset %zu: payload CRC mismatch (type EVENTS, 112 bytes skipped)",
		 off);
	ck_assert_str_eq(recreader_error(r), want);
	ck_assert_uint_eq(recreader_bad_chunks(r), 1);
	ck_assert_uint_eq(recreader_offset(r), chunk_off(&e, 3));
	for (i = 3; i < e.n; i++) {
		ck_assert_int_eq(recreader_next(r, &c), 1);
		ck_assert_uint_eq(c.seq, (uint64_t)i);
		assert_intact(&e, &c);
	}
	ck_assert_int_eq(recreader_next(r, &c), 0);
	recreader_close(r);
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_bad_chunk_header_resync)
{
	struct recfile_reader *r;
	struct recfile_chunk c;
	struct recfile_stats st;
	struct expect e;
	unsigned char *raw;
	char want[200];
	size_t len, off;

	raw = sample_file_bytes(&e, &len);
	off = chunk_off(&e, 1);
	raw[off + 9] ^= 0x40; /* payload_len: header CRC no longer matches */
	write_bytes(path, raw, len);

	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_uint_eq(c.seq, 0);
	ck_assert_int_eq(recreader_next(r, &c), -EBADMSG);
	snprintf(want, sizeof(want),
		 "chunk 1 at offset %zu: header CRC mismatch; skipped %zu bytes to the next chunk "
		 "at offset %zu",
		 off, chunk_off(&e, 2) - off, chunk_off(&e, 2));
	ck_assert_str_eq(recreader_error(r), want);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_uint_eq(c.seq, 2);
	assert_intact(&e, &c);
	while (recreader_next(r, &c) == 1)
		assert_intact(&e, &c);
	ck_assert_uint_eq(c.type, VN_CHUNK_END);
	recreader_stats(r, &st);
	ck_assert_uint_eq(st.bad_chunks, 1);
	ck_assert_uint_eq(st.skipped_bytes, chunk_off(&e, 2) - off);
	ck_assert_uint_eq(st.missing_chunks, 1);
	ck_assert_uint_eq(st.chunks, (uint64_t)e.n - 1);
	recreader_close(r);
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_garbage_between_chunks)
{
	struct expect e;
	unsigned char *raw, *mut;
	size_t len, off, glen = 100000;
	unsigned seen;
	int got;
	struct recfile_reader *r;
	struct recfile_chunk c;
	struct recfile_stats st;
	size_t i;

	/* 100 kB of garbage (with fake "VNCK" magics) inserted before chunk 3: spans scan windows */
	raw = sample_file_bytes(&e, &len);
	off = chunk_off(&e, 3);
	mut = malloc(len + glen);
	memcpy(mut, raw, off);
	for (i = 0; i < glen; i++)
		mut[off + i] = (unsigned char)(rand() & 0xff);
	for (i = 0; i + 4 < glen; i += 997)
		memcpy(mut + off + i, "VNCK", 4);
	memcpy(mut + off + glen, raw + off, len - off);
	write_bytes(path, mut, len + glen);
	ck_assert_int_eq(read_all(path, &e, &got, &seen), 0);
	ck_assert_int_eq(got, e.n);

	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	while (recreader_next(r, &c) != 0)
		;
	recreader_stats(r, &st);
	ck_assert_uint_eq(st.skipped_bytes, glen);
	ck_assert_uint_eq(st.bad_chunks, 1);
	ck_assert_uint_eq(st.missing_chunks, 0);
	recreader_close(r);
	free(mut);
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_sequence_gap)
{
	struct recfile_reader *r;
	struct recfile_chunk c;
	struct expect e;
	unsigned char *raw, *mut;
	size_t len, a, b;
	char want[200];

	/* cut chunk 1 out cleanly: every remaining chunk is intact, only seq shows the loss */
	raw = sample_file_bytes(&e, &len);
	a = chunk_off(&e, 1);
	b = chunk_off(&e, 2);
	mut = malloc(len);
	memcpy(mut, raw, a);
	memcpy(mut + a, raw + b, len - b);
	write_bytes(path, mut, len - (b - a));

	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_int_eq(recreader_next(r, &c), -EBADMSG);
	snprintf(want, sizeof(want),
		 "chunk sequence gap at offset %zu: expected 1, found 2 (1 chunks missing)", a);
	ck_assert_str_eq(recreader_error(r), want);
	ck_assert_int_eq(recreader_next(r, &c), 1); /* the held-back chunk */
	ck_assert_uint_eq(c.seq, 2);
	assert_intact(&e, &c);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_uint_eq(c.seq, 3);
	recreader_close(r);
	free(mut);
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_no_end_marker)
{
	struct expect e;
	unsigned seen;
	int got;
	struct recfile_reader *r;
	struct recfile_chunk c;
	char want[160];

	write_sample_file(path, &e, 0);
	ck_assert_int_eq(read_all(path, &e, &got, &seen), -ENODATA);
	ck_assert_int_eq(got, e.n);
	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	while (recreader_next(r, &c) == 1)
		;
	snprintf(want, sizeof(want),
		 "truncated at offset %zu after 5 chunks: no end marker (the writer did not close "
		 "the file)",
		 chunk_off(&e, 5));
	ck_assert_str_eq(recreader_error(r), want);
	recreader_close(r);
	free_expect(&e);
}
END_TEST

/* Open path, whose chunks 0 and 1 are whole and chunk 2 cut: both arrive, then -ENODATA. */
static struct recfile_reader *open_cut_at_chunk_2(void)
{
	struct recfile_reader *r = recreader_open(path);
	struct recfile_chunk c;

	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_int_eq(recreader_next(r, &c), 1);
	ck_assert_int_eq(recreader_next(r, &c), -ENODATA);
	return r;
}

START_TEST(test_truncated_messages)
{
	struct expect e;
	size_t len;
	unsigned char *raw = sample_file_bytes(&e, &len);
	size_t off = chunk_off(&e, 2);
	struct recfile_reader *r;
	struct recfile_chunk c;
	char want[200];

	write_bytes(path, raw, off + 10);
	r = open_cut_at_chunk_2();
	snprintf(want, sizeof(want),
		 "truncated at offset %zu after 2 chunks: chunk 2's header needs 32 bytes, 10 left",
		 off);
	ck_assert_str_eq(recreader_error(r), want);
	ck_assert_int_eq(recreader_next(r, &c), -ENODATA);
	ck_assert_str_eq(recreader_error(r), want);
	recreader_close(r);

	write_bytes(path, raw, off + 32 + 100);
	r = open_cut_at_chunk_2();
	snprintf(
	    want, sizeof(want),
	    "truncated at offset %zu after 2 chunks: chunk 2's payload needs 112 bytes, 100 left",
	    off);
	ck_assert_str_eq(recreader_error(r), want);
	recreader_close(r);
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_trailing_bytes)
{
	struct expect e;
	unsigned char *raw, *mut;
	size_t len;
	struct recfile_reader *r;
	struct recfile_chunk c;
	struct recfile_stats st;

	raw = sample_file_bytes(&e, &len);
	mut = malloc(len + 7);
	memcpy(mut, raw, len);
	memcpy(mut + len, "garbage", 7);
	write_bytes(path, mut, len + 7);
	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	while (recreader_next(r, &c) == 1)
		;
	ck_assert_int_eq(recreader_next(r, &c), 0);
	recreader_stats(r, &st);
	ck_assert_uint_eq(st.trailing_bytes, 7);
	recreader_close(r);
	free(mut);
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_bad_record_multiple)
{
	/* a SAMPLES chunk whose CRCs hold but whose length is not a whole number of records */
	unsigned char raw[sizeof(struct vn_rec_header) + sizeof(struct vn_rec_chunk) + 25];
	struct vn_rec_header h;
	struct vn_rec_chunk ch;
	struct recfile_reader *r;
	struct recfile_chunk c;

	memset(raw, 7, sizeof(raw));
	file_header(&h, 1);
	memcpy(raw, &h, sizeof(h));
	chunk_header(&ch, VN_CHUNK_SAMPLES, raw + sizeof(h) + sizeof(ch), 25);
	memcpy(raw + sizeof(h), &ch, sizeof(ch));
	write_bytes(path, raw, sizeof(raw));
	r = recreader_open(path);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(recreader_next(r, &c), -EBADMSG);
	ck_assert_str_eq(recreader_error(r),
			 "chunk 0 at offset 64: SAMPLES payload of 25 bytes is not a "
			 "whole number of records");
	ck_assert_int_eq(recreader_next(r, &c), -ENODATA);
	recreader_close(r);
}
END_TEST

/* ---- fuzz-like robustness ---- */

/* The message of the final result of reading p to its end. */
static void final_message(const char *p, char *msg, size_t len)
{
	struct recfile_reader *r = recreader_open(p);
	struct recfile_chunk c;
	int rc;

	ck_assert_ptr_nonnull(r);
	while ((rc = recreader_next(r, &c)) == 1 || recreader_recoverable(rc))
		;
	snprintf(msg, len, "%s", recreader_error(r));
	recreader_close(r);
}

/* A writer killed at any byte (kill -9 mid-write, a full disk): the whole chunks, and where it was cut. */
START_TEST(test_truncate_every_offset)
{
	struct expect e;
	unsigned char *raw;
	size_t len, cut;
	unsigned seen;
	int got, rc;
	char want[96], msg[256];

	raw = sample_file_bytes(&e, &len);
	for (cut = 0; cut <= len; cut++) {
		write_bytes(path, raw, cut);
		rc = read_all(path, &e, &got, &seen);
		if (cut == len) {
			ck_assert_int_eq(rc, 0);
			ck_assert_int_eq(got, e.n);
		} else {
			ck_assert_int_eq(rc, -ENODATA);
			/* exactly the chunks wholly before the cut arrive, in order */
			ck_assert_uint_eq(seen, (1u << got) - 1);
			if (cut >= sizeof(struct vn_rec_header))
				ck_assert(chunk_off(&e, got) <= cut &&
					  (got == e.n || chunk_off(&e, got + 1) > cut));
			/* one line says where: the offset where the whole chunks end, and how many */
			snprintf(want, sizeof(want), "truncated at offset %zu after %d chunks: ",
				 cut < sizeof(struct vn_rec_header) ? 0 : chunk_off(&e, got), got);
			final_message(path, msg, sizeof(msg));
			ck_assert_msg(!strncmp(msg, want, strlen(want)), "cut at %zu: '%s'", cut,
				      msg);
			ck_assert_ptr_null(strchr(msg, '\n'));
		}
	}
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_every_bit_flip)
{
	struct expect e;
	unsigned char *raw;
	size_t len, bit;
	unsigned seen;
	int got, rc;

	raw = sample_file_bytes(&e, &len);
	for (bit = 0; bit < len * 8; bit++) {
		raw[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		write_bytes(path, raw, len);
		rc = read_all(path, &e, &got, &seen);
		raw[bit / 8] ^= (unsigned char)(1u << (bit % 8));
		if (bit < 8 * VN_REC_MAGIC_LEN) {
			ck_assert_int_eq(rc, -EPROTO);
			continue;
		}
		/* at most the one damaged chunk is lost; CRCs guarantee the rest are intact */
		ck_assert_int_ge(got, e.n - 1);
		if (rc == 0)
			ck_assert(seen & (1u << (e.n - 1)));
		else
			ck_assert_int_eq(rc, -ENODATA);
	}
	free(raw);
	free_expect(&e);
}
END_TEST

START_TEST(test_random_files)
{
	struct expect e = { 0 };
	struct vn_rec_header h;
	struct vn_rec_chunk ch;
	unsigned char buf[8192];
	unsigned seen;
	int iter, got, rc;
	size_t len, i;

	srand(12345);
	file_header(&h, 1);
	for (iter = 0; iter < 400; iter++) {
		len = (size_t)rand() % sizeof(buf);
		for (i = 0; i < len; i++)
			buf[i] = (unsigned char)rand();
		if (iter % 2 && len >= sizeof(h))
			memcpy(buf, &h, sizeof(h));
		/* valid chunk headers claiming big payloads, at random places */
		if (iter % 4 == 1 && len >= sizeof(h) + 2 * sizeof(ch)) {
			memset(&ch, 0, sizeof(ch));
			ch.magic = VN_CHUNK_MAGIC;
			ch.type = (uint16_t)(rand() % 7);
			ch.payload_len = (uint32_t)rand() % (VN_CHUNK_MAX_PAYLOAD + 1);
			ch.seq = (uint64_t)rand();
			ch.header_crc32 = crc32_update(0, &ch, sizeof(ch));
			memcpy(buf + sizeof(h) + (size_t)rand() % (len - sizeof(h) - sizeof(ch)),
			       &ch, sizeof(ch));
		}
		write_bytes(path, buf, len);
		/* no chunk can be intact here: e is empty, so any delivered chunk fails */
		rc = read_all(path, &e, &got, &seen);
		ck_assert_int_lt(rc, 0);
	}
}
END_TEST

static Suite *recreader_suite(void)
{
	Suite *s = suite_create("recreader");
	TCase *tc;

	tc = tcase_create("roundtrip");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_roundtrip);
	tcase_add_test(tc, test_empty_and_null_end);
	suite_add_tcase(s, tc);

	tc = tcase_create("file_header");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_bad_magic);
	tcase_add_test(tc, test_unsupported_version);
	tcase_add_test(tc, test_longer_header_skipped);
	tcase_add_test(tc, test_damaged_header_continues);
	suite_add_tcase(s, tc);

	tc = tcase_create("damage");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_payload_crc_skipped);
	tcase_add_test(tc, test_bad_chunk_header_resync);
	tcase_add_test(tc, test_garbage_between_chunks);
	tcase_add_test(tc, test_sequence_gap);
	tcase_add_test(tc, test_no_end_marker);
	tcase_add_test(tc, test_truncated_messages);
	tcase_add_test(tc, test_trailing_bytes);
	tcase_add_test(tc, test_bad_record_multiple);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_truncate_every_offset);
	tcase_add_test(tc, test_every_bit_flip);
	tcase_add_test(tc, test_random_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(recreader_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
