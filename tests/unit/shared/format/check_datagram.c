/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/datagram: a known-answer datagram (bytes and MAC computed independently with
 * Python's struct and hmac from protocol/README.md), build/seal/parse round trips, the 1400-byte limit,
 * every single-bit flip and every truncation rejected, keys (wrong, unknown, rotation), datagrams that are
 * malformed under a valid MAC, record field ranges, and the sequence tracker (gaps, late, duplicates,
 * replays, restarts).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "app.h"
#include "util/sha256.h"
#include "format/datagram.h"
#include "format/datagram_priv.h"

static const char key1[] = "0123456789abcdef0123456789abcdef";
static const char key2[] = "another key, for the rotation...";
static const struct datagram_key keys[] = {
	{ .id = 7, .key = key1, .len = 32 },
	{ .id = 9, .key = key2, .len = 32 },
};
static struct datagram_keytab keytab = { keys, 2 };

static struct datagram_meta meta(uint16_t kind)
{
	struct datagram_meta m = {
		.kind = kind,
		.key_id = 7,
		.flags = VN_REPORT_F_LAST,
		.node_id = 0x1122334455667788ull,
		.session_id = 1700000000000000000ull,
		.job_id = 0x0123456789abcdefull,
		.interval_id = 42,
		.seq = 5,
		.send_realtime_ns = 1700000001000000000ull,
		.start_realtime_ns = 1700000000500000000ull,
		.end_realtime_ns = 1700000000900000000ull,
	};
	return m;
}

static struct vn_report_rec rec_thread(uint32_t rank, uint64_t ns)
{
	struct vn_report_rec r = {
		.noise_ns = ns,
		.compute_ns = 400000000,
		.count = 3,
		.id = rank,
		.src_id = 4242,
		.kind = VN_REPORT_REC_RANK,
		.cls = VN_CLASS_THREAD,
		.src_kind = VN_REPORT_SRC_THREAD,
		.verdict = VN_VERDICT_NOISE,
	};
	strcpy(r.name, "kworker/3:1");
	return r;
}

static struct vn_report_rec rec_cpu_irq(uint32_t cpu, uint32_t irq, const char *name)
{
	struct vn_report_rec r = {
		.noise_ns = 5000 + irq,
		.count = 10,
		.id = cpu,
		.src_id = irq,
		.kind = VN_REPORT_REC_CPU,
		.cls = VN_CLASS_IRQ,
		.src_kind = VN_REPORT_SRC_IRQ,
	};
	memcpy(r.name, name, strnlen(name, sizeof(r.name)));
	return r;
}

/* A sealed interval report with n records of mixed kinds; returns its length. */
static int build(struct datagram_buf *b, int n)
{
	struct datagram_meta m = meta(VN_REPORT_INTERVAL);
	int i;

	ck_assert_int_eq(datagram_init(b, &m), 0);
	for (i = 0; i < n; i++) {
		struct vn_report_rec r;

		switch (i % 4) {
		case 0:
			r = rec_thread(i, 1000 * i);
			break;
		case 1:
			r = rec_cpu_irq(i, VN_VEC_BASE + VN_VEC_LOCAL_TIMER, "");
			break;
		case 2: /* the rank's summary: class NONE, no source */
			r = (struct vn_report_rec){ .noise_ns = 77,
						    .compute_ns = 9,
						    .count = 1,
						    .id = i,
						    .kind = VN_REPORT_REC_RANK,
						    .verdict = VN_VERDICT_UNEXPLAINED };
			break;
		default: /* a name of 16 bytes, no NUL */
			r = rec_cpu_irq(i, 24, "virtio0-input.0!");
			break;
		}
		ck_assert_int_eq(datagram_add(b, &r), 0);
	}
	return datagram_seal(b, key1, 32);
}

/* Recompute the MAC of a datagram the test altered: a sender with the key that writes a bad header. */
static void reseal(uint8_t *d, size_t len, const void *key, size_t keylen)
{
	sha256_hmac(key, keylen, d, len - VN_REPORT_MAC_LEN, d + len - VN_REPORT_MAC_LEN);
}

static int parse(const void *d, size_t len, struct datagram_view *v)
{
	return datagram_parse(d, len, datagram_keytab_lookup, &keytab, v);
}

static int is_reject(int err)
{
	return err == -ENOMSG || err == -EPROTO || err == -EBADMSG || err == -ENOKEY ||
	       err == -EKEYREJECTED;
}

START_TEST(test_known_answer)
{
	/* python3: struct.pack('<IHHHHHHHHIQQQQQQQQ', ...) + struct.pack('<QQIIIBBBB16s', ...), hmac sha256 */
	static const uint8_t want_mac[32] = {
		0xfc, 0x76, 0x4d, 0x2d, 0x31, 0x0c, 0xe2, 0xf6, 0x6e, 0xf1, 0xb3,
		0x8d, 0x88, 0xe6, 0x0a, 0xd1, 0x0b, 0xae, 0xfd, 0xd1, 0xf9, 0x0c,
		0x31, 0x5b, 0xea, 0x3d, 0xce, 0x24, 0x28, 0x5c, 0xf5, 0x88,
	};
	/* magic, version 1, kind 1, hdr_len 88, total_len 168, rec_len 48, nrec 1, key_id 7, part 0, flags 1 */
	static const char want_hdr[] = "VNR1"
				       "\x01\x00"
				       "\x01\x00"
				       "\x58\x00"
				       "\xa8\x00"
				       "\x30\x00"
				       "\x01\x00"
				       "\x07\x00"
				       "\x00\x00"
				       "\x01\x00\x00\x00";
	struct datagram_buf b;
	struct datagram_meta m = meta(VN_REPORT_INTERVAL);
	struct vn_report_rec r = rec_thread(17, 123456);
	int len;

	ck_assert_int_eq(datagram_init(&b, &m), 0);
	ck_assert_int_eq(datagram_add(&b, &r), 0);
	len = datagram_seal(&b, key1, 32);
	ck_assert_int_eq(len, 88 + 48 + 32);
	ck_assert_mem_eq(b.data, want_hdr, 24);
	ck_assert_uint_eq(b.data[24], 0x88); /* node_id, little-endian */
	ck_assert_uint_eq(b.data[56], 5); /* seq */
	ck_assert_uint_eq(b.data[88 + 16], 3); /* record: count */
	ck_assert_uint_eq(b.data[88 + 28], VN_REPORT_REC_RANK);
	ck_assert_mem_eq(b.data + 88 + 32, "kworker/3:1\0\0\0\0\0", 16);
	ck_assert_mem_eq(b.data + 88 + 48, want_mac, 32);
}
END_TEST

START_TEST(test_round_trip)
{
	struct datagram_buf b;
	struct datagram_view v;
	int len, i;

	len = build(&b, 7);
	ck_assert_int_eq(len, 88 + 7 * 48 + 32);
	ck_assert_int_eq(parse(b.data, len, &v), 0);
	ck_assert_uint_eq(v.hdr.kind, VN_REPORT_INTERVAL);
	ck_assert_uint_eq(v.hdr.nrec, 7);
	ck_assert_uint_eq(v.hdr.total_len, len);
	ck_assert_uint_eq(v.hdr.key_id, 7);
	ck_assert_uint_eq(v.hdr.flags, VN_REPORT_F_LAST);
	ck_assert_uint_eq(v.hdr.node_id, 0x1122334455667788ull);
	ck_assert_uint_eq(v.hdr.session_id, 1700000000000000000ull);
	ck_assert_uint_eq(v.hdr.job_id, 0x0123456789abcdefull);
	ck_assert_uint_eq(v.hdr.interval_id, 42);
	ck_assert_uint_eq(v.hdr.seq, 5);
	ck_assert_uint_eq(v.hdr.start_realtime_ns, 1700000000500000000ull);
	ck_assert_uint_eq(v.hdr.end_realtime_ns, 1700000000900000000ull);
	ck_assert_mem_eq(v.rec, b.data + 88, 7 * 48);
	ck_assert_str_eq(v.rec[0].name, "kworker/3:1");
	ck_assert_uint_eq(v.rec[1].src_id, VN_VEC_BASE);
	ck_assert_uint_eq(v.rec[2].verdict, VN_VERDICT_UNEXPLAINED);
	ck_assert_mem_eq(v.rec[3].name, "virtio0-input.0!", 16);
	for (i = 0; i < 7; i++)
		ck_assert_uint_eq(v.rec[i].id, i);

	/* a parse from an unaligned buffer gives the same view */
	{
		uint8_t *u = malloc(len + 1);
		struct datagram_view w;

		memcpy(u + 1, b.data, len);
		ck_assert_int_eq(parse(u + 1, len, &w), 0);
		ck_assert_mem_eq(&w.hdr, &v.hdr, sizeof(v.hdr));
		ck_assert_mem_eq(w.rec, v.rec, 7 * sizeof(v.rec[0]));
		free(u);
	}

	/* HELLO: no records */
	{
		struct datagram_meta m = meta(VN_REPORT_HELLO);
		struct vn_report_rec r = rec_thread(0, 1);

		m.interval_id = m.start_realtime_ns = m.end_realtime_ns = 0;
		ck_assert_int_eq(datagram_init(&b, &m), 0);
		ck_assert_int_eq(datagram_add(&b, &r), -EINVAL);
		len = datagram_seal(&b, key2, 32);
		ck_assert_int_eq(len, 88 + 32);
		/* key_id 7 in the header, but sealed with key 9's key */
		ck_assert_int_eq(parse(b.data, len, &v), -EKEYREJECTED);
		b.hdr.key_id = 9;
		len = datagram_seal(&b, key2, 32);
		ck_assert_int_eq(parse(b.data, len, &v), 0);
		ck_assert_uint_eq(v.hdr.kind, VN_REPORT_HELLO);
		ck_assert_uint_eq(v.hdr.nrec, 0);
	}
}
END_TEST

START_TEST(test_size_limit)
{
	struct datagram_buf b;
	struct datagram_view v;
	struct datagram_meta m = meta(VN_REPORT_COUNTERS);
	struct vn_report_rec r = rec_cpu_irq(1, 30, "eth0");
	int n = 0, len;

	m.flags = 0;
	ck_assert_int_eq(datagram_init(&b, &m), 0);
	while (datagram_add(&b, &r) == 0)
		n++;
	/* 26 records = 1368 bytes; a 27th would make 1416 > 1400 */
	ck_assert_int_eq(n, VN_REPORT_MAX_RECS);
	ck_assert_int_eq(n, 26);
	ck_assert_int_eq(datagram_add(&b, &r), -ENOSPC);
	ck_assert_uint_le(b.len + 32, VN_REPORT_MAX_LEN);
	ck_assert_uint_gt(b.len + 48 + 32, VN_REPORT_MAX_LEN);
	len = datagram_seal(&b, key1, 32);
	ck_assert_int_eq(len, 88 + 26 * 48 + 32);
	ck_assert_int_le(len, VN_REPORT_MAX_LEN);
	ck_assert_int_eq(parse(b.data, len, &v), 0);
	ck_assert_uint_eq(v.hdr.nrec, 26);
	ck_assert_uint_eq(v.hdr.part, 0);

	/* continue the interval in the next datagram */
	ck_assert_int_eq(datagram_next(&b), 0);
	ck_assert_int_eq(datagram_add(&b, &r), 0);
	b.hdr.flags |= VN_REPORT_F_LAST;
	len = datagram_seal(&b, key1, 32);
	ck_assert_int_eq(len, 88 + 48 + 32);
	ck_assert_int_eq(parse(b.data, len, &v), 0);
	ck_assert_uint_eq(v.hdr.seq, 6);
	ck_assert_uint_eq(v.hdr.part, 1);
	ck_assert_uint_eq(v.hdr.nrec, 1);
	ck_assert_uint_eq(v.hdr.flags, VN_REPORT_F_LAST);
	ck_assert_uint_eq(v.hdr.interval_id, 42);

	b.hdr.part = UINT16_MAX;
	ck_assert_int_eq(datagram_next(&b), -EOVERFLOW);

	/* a received datagram over 1400 bytes is refused even with consistent lengths and a valid MAC */
	{
		static uint8_t big[VN_REPORT_MAX_LEN + 48];
		struct vn_report_hdr h;
		size_t blen = 88 + 27 * 48 + 32;
		int i;

		len = build(&b, 1);
		memcpy(big, b.data, 88);
		for (i = 0; i < 27; i++)
			memcpy(big + 88 + i * 48, b.data + 88, 48);
		memcpy(&h, big, sizeof(h));
		h.nrec = 27;
		h.total_len = blen;
		memcpy(big, &h, sizeof(h));
		reseal(big, blen, key1, 32);
		ck_assert_int_eq(parse(big, blen, &v), -EBADMSG);
	}
}
END_TEST

/* Every single bit flipped anywhere is rejected, by the first check it breaks. _i: records. */
START_TEST(test_bit_flips)
{
	struct datagram_buf b;
	struct datagram_view v;
	uint8_t d[VN_REPORT_MAX_LEN];
	int len, bit, err, nmac = 0, nother = 0;

	len = build(&b, _i);
	ck_assert_int_gt(len, 0);
	memcpy(d, b.data, len);
	ck_assert_int_eq(parse(d, len, &v), 0);
	for (bit = 0; bit < len * 8; bit++) {
		d[bit / 8] ^= 1u << (bit % 8);
		err = parse(d, len, &v);
		ck_assert_msg(is_reject(err), "bit %d accepted or odd error (%d)", bit, err);
		if (err == -EKEYREJECTED)
			nmac++;
		else
			nother++;
		d[bit / 8] ^= 1u << (bit % 8);
	}
	ck_assert_int_eq(parse(d, len, &v), 0);
	ck_assert_int_gt(nmac, len * 8 / 2); /* most flips reach the MAC */
	ck_assert_int_gt(nother, 0); /* the structural checks see some first */
}
END_TEST

START_TEST(test_truncated)
{
	struct datagram_buf b;
	struct datagram_view v;
	uint8_t d[VN_REPORT_MAX_LEN + 1];
	int len, n, err;

	len = build(&b, 5);
	memcpy(d, b.data, len);
	for (n = 0; n < len; n++) {
		err = parse(d, n, &v);
		ck_assert_msg(is_reject(err), "length %d of %d accepted (%d)", n, len, err);
	}
	ck_assert_int_eq(parse(NULL, 0, &v), -ENOMSG);
	/* one byte too many (say, padding added on the way) */
	d[len] = 0;
	ck_assert_int_eq(parse(d, len + 1, &v), -EBADMSG);
	/* a truncated datagram whose lengths were rewritten to match, without the key: MAC fails */
	{
		struct vn_report_hdr h;

		memcpy(&h, d, sizeof(h));
		h.nrec = 4;
		h.total_len = len - 48;
		memcpy(d, &h, sizeof(h));
		memmove(d + len - 48 - 32, d + len - 32, 32);
		ck_assert_int_eq(parse(d, len - 48, &v), -EKEYREJECTED);
	}
	ck_assert_int_eq(parse(b.data, len, &v), 0);
}
END_TEST

START_TEST(test_keys)
{
	struct datagram_buf b;
	struct datagram_view v;
	struct datagram_key wrong = { .id = 7, .key = key2, .len = 32 };
	struct datagram_keytab t = { &wrong, 1 };
	struct datagram_keytab none = { NULL, 0 };
	int len;

	len = build(&b, 3);
	ck_assert_int_eq(datagram_parse(b.data, len, datagram_keytab_lookup, &t, &v),
			 -EKEYREJECTED);
	ck_assert_int_eq(datagram_parse(b.data, len, datagram_keytab_lookup, &none, &v), -ENOKEY);
	ck_assert_int_eq(datagram_parse(b.data, len, NULL, NULL, &v), -ENOKEY);
	/* the same key, one byte shorter: another key */
	wrong.key = key1;
	wrong.len = 31;
	ck_assert_int_eq(datagram_parse(b.data, len, datagram_keytab_lookup, &t, &v),
			 -EKEYREJECTED);
	wrong.len = 0; /* an empty key is no key */
	ck_assert_int_eq(datagram_parse(b.data, len, datagram_keytab_lookup, &t, &v), -ENOKEY);
	/* unknown key id */
	b.hdr.key_id = 8;
	len = datagram_seal(&b, key1, 32);
	ck_assert_int_eq(parse(b.data, len, &v), -ENOKEY);
	/* rotation: both ids of the table are accepted, each with its key */
	b.hdr.key_id = 9;
	len = datagram_seal(&b, key2, 32);
	ck_assert_int_eq(parse(b.data, len, &v), 0);
	ck_assert_uint_eq(v.hdr.key_id, 9);
	ck_assert_int_eq(datagram_seal(&b, key1, 0), -EINVAL);
	ck_assert_int_eq(datagram_seal(&b, NULL, 32), -EINVAL);
}
END_TEST

/* A sender with the key writes something wrong: the MAC holds, the parser still refuses it. */
START_TEST(test_malformed_under_valid_mac)
{
	struct datagram_buf b;
	struct datagram_view v;
	struct vn_report_hdr h;
	struct vn_report_rec r;
	uint8_t d[VN_REPORT_MAX_LEN];
	int len;

#define MUTATE_HDR(stmt, want)                             \
	do {                                               \
		memcpy(d, b.data, len);                    \
		memcpy(&h, d, sizeof(h));                  \
		stmt;                                      \
		memcpy(d, &h, sizeof(h));                  \
		reseal(d, len, key1, 32);                  \
		ck_assert_int_eq(parse(d, len, &v), want); \
	} while (0)
#define MUTATE_REC(i, stmt)                                    \
	do {                                                   \
		memcpy(d, b.data, len);                        \
		memcpy(&r, d + 88 + (i)*48, sizeof(r));        \
		stmt;                                          \
		memcpy(d + 88 + (i)*48, &r, sizeof(r));        \
		reseal(d, len, key1, 32);                      \
		ck_assert_int_eq(parse(d, len, &v), -EBADMSG); \
	} while (0)

	len = build(&b, 3);
	MUTATE_HDR((void)0, 0); /* the helper itself keeps a good datagram good */
	/* record count inconsistent with the length */
	MUTATE_HDR(h.nrec = 2, -EBADMSG);
	MUTATE_HDR(h.nrec = 4, -EBADMSG);
	MUTATE_HDR(h.nrec = 0xffff, -EBADMSG);
	MUTATE_HDR(h.total_len = len - 1, -EBADMSG);
	MUTATE_HDR(h.hdr_len = 96, -EBADMSG);
	MUTATE_HDR(h.rec_len = 40, -EBADMSG);
	MUTATE_HDR(h.version = 3, -EPROTO);
	MUTATE_HDR(h.magic = 0x31524e55, -ENOMSG);
	MUTATE_HDR(h.kind = 0, -EBADMSG);
	MUTATE_HDR(h.kind = VN_REPORT_KIND_MAX, -EBADMSG);
	MUTATE_HDR(h.kind = VN_REPORT_HELLO, -EBADMSG); /* a HELLO with records */
	MUTATE_HDR(h.kind = VN_REPORT_SAMPLE, -EBADMSG); /* a command with records */
	MUTATE_HDR(h.flags = 2, -EBADMSG);
	MUTATE_HDR(h.end_realtime_ns = h.start_realtime_ns - 1, -EBADMSG);
	MUTATE_HDR(h.end_realtime_ns = h.start_realtime_ns, 0);
	/* record fields out of range, in the last record too */
	MUTATE_REC(0, r.cls = VN_CLASS_MAX);
	MUTATE_REC(2, r.kind = 0);
	MUTATE_REC(2, r.kind = VN_REPORT_REC_KIND_MAX);
	MUTATE_REC(0, r.verdict = VN_VERDICT_UNEXPLAINED + 1);
	MUTATE_REC(0, r.src_kind = VN_REPORT_SRC_MAX);
	MUTATE_REC(0, r.src_kind = VN_REPORT_SRC_IRQ); /* class THREAD with an IRQ source */
	MUTATE_REC(0, r.name[14] = 'x'); /* bytes after the NUL */
	MUTATE_REC(1, r.compute_ns = 1); /* CPU record with a compute time */
	MUTATE_REC(1, r.src_id = VN_VEC_BASE + VN_VEC_MAX);
	MUTATE_REC(2, r.src_id = 1); /* class NONE, source NONE, with an id */
	MUTATE_REC(2, r.name[0] = 'a');
#undef MUTATE_HDR
#undef MUTATE_REC
}
END_TEST

START_TEST(test_rec_ok)
{
	struct vn_report_rec r;
	struct datagram_buf b;
	struct datagram_meta m = meta(VN_REPORT_INTERVAL);

	r = rec_thread(0, 1);
	ck_assert(datagram_rec_ok(&r));
	memcpy(r.name, "0123456789abcdef", 16); /* 16 bytes, no NUL: a full-length name */
	ck_assert(datagram_rec_ok(&r));
	r.src_id = 0xffffffffu; /* any pid */
	ck_assert(datagram_rec_ok(&r));
	r.src_kind = VN_REPORT_SRC_NONE; /* NONE but an id and a name */
	ck_assert(!datagram_rec_ok(&r));
	r.src_id = 0;
	memset(r.name, 0, sizeof(r.name));
	ck_assert(datagram_rec_ok(&r));

	r = (struct vn_report_rec){ .kind = VN_REPORT_REC_CPU,
				    .cls = VN_CLASS_SOFTIRQ,
				    .src_kind = VN_REPORT_SRC_SOFTIRQ,
				    .src_id = 9 };
	strcpy(r.name, "RCU");
	ck_assert(datagram_rec_ok(&r));
	r.src_id = VN_REPORT_SOFTIRQ_MAX;
	ck_assert(!datagram_rec_ok(&r));
	r = (struct vn_report_rec){ .kind = VN_REPORT_REC_CPU,
				    .cls = VN_CLASS_HCALL,
				    .src_kind = VN_REPORT_SRC_HCALL,
				    .src_id = VN_HCALL_WAIT };
	ck_assert(datagram_rec_ok(&r));
	r.src_id = VN_HCALL_MAX;
	ck_assert(!datagram_rec_ok(&r));
	r = rec_cpu_irq(0, VN_VEC_BASE - 1, "x");
	ck_assert(datagram_rec_ok(&r));
	r.src_id = VN_VEC_BASE + VN_VEC_MAX - 1;
	ck_assert(datagram_rec_ok(&r));
	r.verdict = VN_VERDICT_NOISE; /* verdicts are for ranks */
	ck_assert(!datagram_rec_ok(&r));
	/* NMI, STEAL, UNEXPLAINED have no sources */
	r = (struct vn_report_rec){ .kind = VN_REPORT_REC_RANK, .cls = VN_CLASS_STEAL };
	ck_assert(datagram_rec_ok(&r));
	r.src_kind = VN_REPORT_SRC_THREAD;
	ck_assert(!datagram_rec_ok(&r));

	/* the builder refuses what the parser would refuse */
	ck_assert_int_eq(datagram_init(&b, &m), 0);
	ck_assert_int_eq(datagram_add(&b, &r), -EINVAL);
	ck_assert_uint_eq(b.len, 88);
	m.kind = 0;
	ck_assert_int_eq(datagram_init(&b, &m), -EINVAL);
	m.kind = VN_REPORT_INTERVAL;
	m.flags = 0x80;
	ck_assert_int_eq(datagram_init(&b, &m), -EINVAL);
	m.flags = 0;
	m.end_realtime_ns = m.start_realtime_ns - 1;
	ck_assert_int_eq(datagram_init(&b, &m), -EINVAL);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(datagram_err_name(0), "ok");
	ck_assert_str_eq(datagram_err_name(-ENOMSG), "not-report");
	ck_assert_str_eq(datagram_err_name(-EPROTO), "version");
	ck_assert_str_eq(datagram_err_name(-EBADMSG), "malformed");
	ck_assert_str_eq(datagram_err_name(-ENOKEY), "unknown-key");
	ck_assert_str_eq(datagram_err_name(-EKEYREJECTED), "bad-mac");
	ck_assert_str_eq(datagram_err_name(-EIO), "other");
	/* python3: struct.unpack('<Q', hashlib.sha256(b"lulesh").digest()[:8]) */
	ck_assert_uint_eq(datagram_job_id("lulesh"), 0x8847e3c0e4d69ee7ull);
}
END_TEST

#define TRACK(seq, want_lost, want_class)                                        \
	do {                                                                     \
		ck_assert_uint_eq(datagram_seq_track(&s, sess, seq), want_lost); \
		ck_assert_uint_eq(s.last, want_class);                           \
	} while (0)

START_TEST(test_seq_in_order_and_gaps)
{
	struct datagram_seq s = { 0 };
	uint64_t sess = 100;

	TRACK(1000, 0, DATAGRAM_SEQ_FIRST); /* joined late: nothing before counts */
	TRACK(1001, 0, DATAGRAM_SEQ_NEXT);
	TRACK(1002, 0, DATAGRAM_SEQ_NEXT);
	TRACK(1006, 3, DATAGRAM_SEQ_GAP); /* 1003, 1004, 1005 lost */
	ck_assert_uint_eq(s.lost, 3);
	TRACK(1007, 0, DATAGRAM_SEQ_NEXT);
	TRACK(1007, 0, DATAGRAM_SEQ_DUP); /* duplicate: drop, no negative loss */
	TRACK(1002, 0, DATAGRAM_SEQ_DUP); /* a replay of an older one */
	ck_assert_uint_eq(s.lost, 3);
	ck_assert_uint_eq(s.dup, 2);
	TRACK(1004, 0, DATAGRAM_SEQ_LATE); /* reordered: no longer lost */
	ck_assert_uint_eq(s.lost, 2);
	TRACK(1004, 0, DATAGRAM_SEQ_DUP);
	TRACK(999, 0, DATAGRAM_SEQ_LATE); /* before the first seen: was never counted lost */
	ck_assert_uint_eq(s.lost, 2);
	ck_assert_uint_eq(s.late, 2);
	ck_assert_uint_eq(s.received, 7);
	ck_assert_uint_eq(s.top, 1007);
}
END_TEST

START_TEST(test_seq_window_and_sessions)
{
	struct datagram_seq s = { 0 };
	uint64_t sess = 100;

	TRACK(0, 0, DATAGRAM_SEQ_FIRST);
	TRACK(200, 199, DATAGRAM_SEQ_GAP); /* a jump beyond the window */
	TRACK(137, 0, DATAGRAM_SEQ_LATE); /* 63 behind: still in the window */
	TRACK(136, 0, DATAGRAM_SEQ_STALE); /* 64 behind: too old to tell from a replay */
	TRACK(1, 0, DATAGRAM_SEQ_STALE);
	ck_assert_uint_eq(s.lost, 198);
	ck_assert_uint_eq(s.stale, 2);
	TRACK(264, 63, DATAGRAM_SEQ_GAP); /* slide by 64: 200 falls out, 201..263 lost */
	TRACK(200, 0, DATAGRAM_SEQ_STALE);
	TRACK(201, 0, DATAGRAM_SEQ_LATE);
	TRACK(201, 0, DATAGRAM_SEQ_DUP);

	/* the node restarted: a newer session starts over at 0 */
	sess = 200;
	TRACK(2, 2, DATAGRAM_SEQ_RESTART); /* 0 and 1 of the new session lost */
	ck_assert_uint_eq(s.restarts, 1);
	TRACK(3, 0, DATAGRAM_SEQ_NEXT);
	TRACK(0, 0, DATAGRAM_SEQ_LATE);
	ck_assert_uint_eq(s.lost, 198 + 62 + 1);
	/* a datagram of the old session (late, or replayed) is stale */
	sess = 100;
	TRACK(265, 0, DATAGRAM_SEQ_STALE);
	ck_assert_uint_eq(s.session_id, 200);
	ck_assert_uint_eq(s.top, 3);

	/* what datagram_seq_behind calls stale, the receiver may take as a resume */
	ck_assert(datagram_seq_behind(&s, 100, 1000));
	ck_assert(!datagram_seq_behind(&s, 300, 0));
	ck_assert(!datagram_seq_behind(&s, 200, 2));
	datagram_seq_resume(&s, 100, 500);
	ck_assert_uint_eq(s.last, DATAGRAM_SEQ_RESTART);
	ck_assert_uint_eq(s.restarts, 2);
	ck_assert_uint_eq(s.resumed, 1);
	ck_assert_uint_eq(s.lost, 198 + 62 + 1); /* nothing before it counted lost */
	TRACK(499, 0, DATAGRAM_SEQ_DUP); /* the other instance's numbers count as seen */
	TRACK(501, 0, DATAGRAM_SEQ_NEXT);
	ck_assert(datagram_seq_behind(&s, 100, 501 - DATAGRAM_SEQ_WINDOW));
	ck_assert(!datagram_seq_behind(&s, 100, 502 - DATAGRAM_SEQ_WINDOW));
	datagram_seq_refuse(&s);
	ck_assert_uint_eq(s.last, DATAGRAM_SEQ_STALE);
	ck_assert_uint_eq(s.top, 501);
}
END_TEST
#undef TRACK

static Suite *datagram_suite(void)
{
	Suite *s = suite_create("datagram");
	TCase *tf = tcase_create("format");
	TCase *tr = tcase_create("hostile");
	TCase *ts = tcase_create("seq");

	tcase_add_test(tf, test_known_answer);
	tcase_add_test(tf, test_round_trip);
	tcase_add_test(tf, test_size_limit);
	tcase_add_test(tf, test_rec_ok);
	tcase_add_test(tf, test_names);
	suite_add_tcase(s, tf);
	/* 0 records (the smallest datagram), 3, and 26 (the largest) */
	tcase_add_loop_test(tr, test_bit_flips, 0, 1);
	tcase_add_loop_test(tr, test_bit_flips, 3, 4);
	tcase_add_loop_test(tr, test_bit_flips, 26, 27);
	tcase_add_test(tr, test_truncated);
	tcase_add_test(tr, test_keys);
	tcase_add_test(tr, test_malformed_under_valid_mac);
	suite_add_tcase(s, tr);
	tcase_add_test(ts, test_seq_in_order_and_gaps);
	tcase_add_test(ts, test_seq_window_and_sessions);
	suite_add_tcase(s, ts);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(datagram_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
