/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/net/tapflow: flow keys of hand-made frames (IPv4/IPv6 TCP, UDP, ICMP, ICMPv6, IPv4 options,
 * IPv6 extension headers, other IP protocols, ARP, 802.3/LLC, other ethertypes, VLAN and QinQ tags),
 * fragments, every frame cut at every length (exactly sized buffers: a read past the end is an ASan error),
 * lengths that lie, the table (packets and bytes per flow and direction, overflow into the other-flows row,
 * merge, nothing lost), random and bit-flipped frames, labels, and the live capture (root only) on a tap
 * device this test holds as QEMU would: datagrams counted exactly in each direction (into the guest =
 * outgoing on the tap), the period cut on the frames' own times, and a device that disappears.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <linux/if_tun.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "util/monotime.h"
#include "net/tapflow.h"
#include "net/tapflow_priv.h"

/* ---- frame builder ---- */

struct frame {
	uint8_t b[256];
	size_t len;
};

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Ethernet header with tags VLAN tags (outer QinQ when 2) and ethertype et. */
static void eth(struct frame *f, int tags, unsigned et)
{
	memset(f, 0, sizeof(*f));
	memcpy(f->b, "\x52\x54\x00\x00\x00\x02\xfe\x54\x00\x00\x00\x01", 12);
	f->len = 12;
	for (int i = 0; i < tags; i++) {
		put16(f->b + f->len, tags == 2 && i == 0 ? 0x88a8 : 0x8100);
		put16(f->b + f->len + 2, 100 + i);
		f->len += 4;
	}
	put16(f->b + f->len, et);
	f->len += 2;
}

static void add(struct frame *f, const void *p, size_t n)
{
	ck_assert_uint_le(f->len + n, sizeof(f->b));
	memcpy(f->b + f->len, p, n);
	f->len += n;
}

/* IPv4 header (ihl words, options zero) for proto with l4len bytes after it; frag = flags+offset field. */
static void ip4(struct frame *f, unsigned ihl, uint8_t proto, const char *src, const char *dst,
		size_t l4len, unsigned frag)
{
	uint8_t h[60] = { 0 };

	h[0] = (uint8_t)(0x40 | ihl);
	put16(h + 2, (unsigned)(ihl * 4 + l4len));
	put16(h + 6, frag);
	h[8] = 64;
	h[9] = proto;
	ck_assert_int_eq(inet_pton(AF_INET, src, h + 12), 1);
	ck_assert_int_eq(inet_pton(AF_INET, dst, h + 16), 1);
	add(f, h, ihl * 4);
}

static void ip6(struct frame *f, uint8_t nh, const char *src, const char *dst, size_t plen)
{
	uint8_t h[40] = { 0x60 };

	put16(h + 4, (unsigned)plen);
	h[6] = nh;
	h[7] = 64;
	ck_assert_int_eq(inet_pton(AF_INET6, src, h + 8), 1);
	ck_assert_int_eq(inet_pton(AF_INET6, dst, h + 24), 1);
	add(f, h, 40);
}

static void ports(struct frame *f, unsigned sp, unsigned dp, size_t hdr)
{
	uint8_t h[20] = { 0 };

	put16(h, sp);
	put16(h + 2, dp);
	add(f, h, hdr);
}

/* A copy of the first n bytes in an exactly sized heap buffer (ASan catches a read past it). */
static struct vn_host_flow key_of(const struct frame *f, size_t n, unsigned dir)
{
	struct vn_host_flow k;
	uint8_t *b = malloc(n ? n : 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, f->b, n);
	tapflow_key(b, n, dir, &k);
	free(b);
	return k;
}

static void addr_is(const struct vn_host_flow *k, int which, const char *want)
{
	char buf[64];

	ck_assert_str_eq(tapflow_addr(k, which, buf, sizeof(buf)), want);
}

static void label_is(const struct vn_host_flow *k, const char *want)
{
	char buf[160];

	ck_assert_str_eq(tapflow_label(k, buf, sizeof(buf)), want);
}

/* The frames of the key tests, also used for the cut-everywhere test. */
static void frame_udp4(struct frame *f)
{
	eth(f, 0, 0x0800);
	ip4(f, 5, 17, "10.199.7.1", "10.199.7.2", 8 + 200, 0x4000);
	ports(f, 40000, 5555, 8);
	f->len += 200; /* payload (zeros) */
}

static void frame_tcp6_ext(struct frame *f)
{
	uint8_t hbh[8] = { 60, 0, 1, 4 }; /* hop-by-hop: next dest opts, 8 bytes, PadN */
	uint8_t dopt[16] = { 6, 1, 1, 12 }; /* dest options: next TCP, 16 bytes */

	eth(f, 1, 0x86dd);
	ip6(f, 0, "fe80::1", "2001:db8::2", 8 + 16 + 20);
	add(f, hbh, sizeof(hbh));
	add(f, dopt, sizeof(dopt));
	ports(f, 22, 51000, 20);
}

static void frame_icmp4_opts(struct frame *f)
{
	uint8_t icmp[8] = { 3, 3 };

	eth(f, 2, 0x0800);
	ip4(f, 15, 1, "10.199.7.2", "10.199.7.1", 8, 0);
	add(f, icmp, sizeof(icmp));
}

static void frame_icmp6(struct frame *f)
{
	uint8_t icmp[8] = { 135, 0 };

	eth(f, 0, 0x86dd);
	ip6(f, 58, "fe80::2", "ff02::1:ff00:1", 8);
	add(f, icmp, sizeof(icmp));
}

static void frame_arp(struct frame *f)
{
	uint8_t arp[28] = { 0, 1, 8, 0, 6, 4, 0, 1 };

	eth(f, 0, 0x0806);
	add(f, arp, sizeof(arp));
}

typedef void frame_fn(struct frame *f);
static frame_fn *const frames[] = { frame_udp4, frame_tcp6_ext, frame_icmp4_opts, frame_icmp6,
				    frame_arp };
#define NFRAMES (int)(sizeof(frames) / sizeof(frames[0]))

/* ---- keys ---- */

START_TEST(test_key_udp4)
{
	struct frame f;
	struct vn_host_flow k;

	frame_udp4(&f);
	k = key_of(&f, f.len, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.dir, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.kind, VN_HOST_FLOW_KIND_FLOW);
	ck_assert_uint_eq(k.ethertype, 0x0800);
	ck_assert_uint_eq(k.ipver, 4);
	ck_assert_uint_eq(k.proto, 17);
	ck_assert_uint_eq(k.sport, 40000);
	ck_assert_uint_eq(k.dport, 5555);
	ck_assert_uint_eq(k.flags, 0);
	addr_is(&k, 0, "10.199.7.1");
	addr_is(&k, 1, "10.199.7.2");
	label_is(&k, "udp 10.199.7.1:40000 > 10.199.7.2:5555");
	/* only the headers are needed: 14 + 20 + 4 */
	k = key_of(&f, 38, VN_HOST_FLOW_FROM_GUEST);
	ck_assert_uint_eq(k.dir, VN_HOST_FLOW_FROM_GUEST);
	ck_assert_uint_eq(k.flags, 0);
	ck_assert_uint_eq(k.dport, 5555);
	k = key_of(&f, 37, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.proto, 17);
	ck_assert_uint_eq(k.sport, 0);
	addr_is(&k, 1, "10.199.7.2");
	label_is(&k, "udp 10.199.7.1 > 10.199.7.2 (truncated)");
}
END_TEST

START_TEST(test_key_tcp6_ext)
{
	struct frame f;
	struct vn_host_flow k;

	frame_tcp6_ext(&f);
	k = key_of(&f, f.len, VN_HOST_FLOW_FROM_GUEST);
	ck_assert_uint_eq(k.ethertype, 0x86dd);
	ck_assert_uint_eq(k.ipver, 6);
	ck_assert_uint_eq(k.proto, 6);
	ck_assert_uint_eq(k.sport, 22);
	ck_assert_uint_eq(k.dport, 51000);
	ck_assert_uint_eq(k.flags, 0);
	addr_is(&k, 0, "fe80::1");
	addr_is(&k, 1, "2001:db8::2");
	label_is(&k, "tcp [fe80::1]:22 > [2001:db8::2]:51000");
}
END_TEST

START_TEST(test_key_icmp)
{
	struct frame f;
	struct vn_host_flow k;
	char p[32];

	frame_icmp4_opts(&f); /* QinQ, 40 bytes of IPv4 options */
	k = key_of(&f, f.len, VN_HOST_FLOW_FROM_GUEST);
	ck_assert_uint_eq(k.ipver, 4);
	ck_assert_uint_eq(k.proto, 1);
	ck_assert_uint_eq(k.sport, 3);
	ck_assert_uint_eq(k.dport, 3);
	ck_assert_uint_eq(k.flags, 0);
	label_is(&k, "icmp 10.199.7.2 > 10.199.7.1 type 3 code 3");
	frame_icmp6(&f);
	k = key_of(&f, f.len, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.ipver, 6);
	ck_assert_uint_eq(k.proto, 58);
	ck_assert_uint_eq(k.sport, 135);
	ck_assert_str_eq(tapflow_proto_name(&k, p, sizeof(p)), "icmpv6");
}
END_TEST

START_TEST(test_key_not_ip)
{
	struct frame f;
	struct vn_host_flow k;
	char p[32];

	frame_arp(&f);
	k = key_of(&f, f.len, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.ethertype, 0x0806);
	ck_assert_uint_eq(k.ipver, 0);
	ck_assert_str_eq(tapflow_proto_name(&k, p, sizeof(p)), "arp");
	addr_is(&k, 0, "");
	label_is(&k, "arp");
	/* LLDP */
	eth(&f, 0, 0x88cc);
	f.len += 30;
	k = key_of(&f, f.len, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.ethertype, 0x88cc);
	ck_assert_str_eq(tapflow_proto_name(&k, p, sizeof(p)), "eth:0x88cc");
	/* 802.3 with a length field: one "llc" flow whatever the length */
	eth(&f, 0, 46);
	f.len += 46;
	k = key_of(&f, f.len, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.ethertype, 0);
	ck_assert_str_eq(tapflow_proto_name(&k, p, sizeof(p)), "llc");
	/* an IP protocol without ports: GRE */
	eth(&f, 0, 0x0800);
	ip4(&f, 5, 47, "192.0.2.1", "192.0.2.2", 4, 0);
	f.len += 4;
	k = key_of(&f, f.len, VN_HOST_FLOW_TO_GUEST);
	ck_assert_uint_eq(k.proto, 47);
	ck_assert_uint_eq(k.flags, 0);
	ck_assert_str_eq(tapflow_proto_name(&k, p, sizeof(p)), "ip:47");
	label_is(&k, "ip:47 192.0.2.1 > 192.0.2.2");
}
END_TEST

START_TEST(test_key_fragments)
{
	struct frame f;
	struct vn_host_flow k;
	uint8_t fh[8] = { 17, 0 };

	/* first fragment (MF, offset 0): ports */
	eth(&f, 0, 0x0800);
	ip4(&f, 5, 17, "10.0.0.1", "10.0.0.2", 1480, 0x2000);
	ports(&f, 1, 2, 8);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, 0);
	ck_assert_uint_eq(k.dport, 2);
	/* a later one: no transport header, the bytes there are payload */
	eth(&f, 0, 0x0800);
	ip4(&f, 5, 17, "10.0.0.1", "10.0.0.2", 100, 185);
	ports(&f, 7, 8, 8);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_FRAG);
	ck_assert_uint_eq(k.proto, 17);
	ck_assert_uint_eq(k.sport, 0);
	ck_assert_uint_eq(k.dport, 0);
	label_is(&k, "udp 10.0.0.1 > 10.0.0.2 (fragments)");
	/* IPv6: fragment header with offset 0 is walked, with an offset it stops */
	eth(&f, 0, 0x86dd);
	ip6(&f, 44, "::1", "::2", 16);
	add(&f, fh, sizeof(fh));
	ports(&f, 5, 6, 8);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, 0);
	ck_assert_uint_eq(k.proto, 17);
	ck_assert_uint_eq(k.sport, 5);
	put16(f.b + 14 + 40 + 2, 8 << 3);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_FRAG);
	ck_assert_uint_eq(k.proto, 17);
	ck_assert_uint_eq(k.sport, 0);
}
END_TEST

START_TEST(test_key_lies)
{
	struct frame f;
	struct vn_host_flow k;
	uint8_t ext[8] = { 60, 0 };

	/* IHL < 5: not a usable IPv4 header, the ethertype alone */
	frame_udp4(&f);
	f.b[14] = 0x44;
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.ipver, 0);
	ck_assert_uint_eq(k.ethertype, 0x0800);
	/* version 6 inside ethertype IPv4 */
	frame_udp4(&f);
	f.b[14] = 0x65;
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.ipver, 0);
	/* total length below the header */
	frame_udp4(&f);
	put16(f.b + 16, 19);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	/* total length that ends inside the ports: they are not trusted */
	put16(f.b + 16, 22);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.sport, 0);
	put16(f.b + 16, 24);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, 0);
	/* IHL 15 but only 20 bytes captured after the Ethernet header */
	frame_udp4(&f);
	f.b[14] = 0x4f;
	k = key_of(&f, 14 + 20, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.ipver, 4);
	/* IPv6 payload length too short for the extension header */
	eth(&f, 0, 0x86dd);
	ip6(&f, 60, "::1", "::2", 4);
	add(&f, ext, sizeof(ext));
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	/* a chain of more extension headers than are walked */
	eth(&f, 0, 0x86dd);
	ip6(&f, 60, "::1", "::2", 10 * 8);
	for (int i = 0; i < 10; i++)
		add(&f, ext, sizeof(ext));
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.ipver, 6);
	/* an extension header whose length points past the packet */
	eth(&f, 0, 0x86dd);
	ip6(&f, 60, "::1", "::2", 16);
	ext[0] = 17;
	ext[1] = 200;
	add(&f, ext, sizeof(ext));
	ports(&f, 1, 2, 8);
	k = key_of(&f, f.len, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.sport, 0);
	/* no frame, or less than an Ethernet header */
	tapflow_key(NULL, 0, 1, &k);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.dir, 1);
	k = key_of(&f, 13, 0);
	ck_assert_uint_eq(k.flags, VN_HOST_FLOW_F_TRUNC);
	ck_assert_uint_eq(k.ethertype, 0);
}
END_TEST

/* Every frame cut at every length: no read past the captured bytes (exact buffers, ASan), a partial
 * key is marked truncated, the whole frame is not, and the key only ever gains fields as bytes grow. */
START_TEST(test_cut_everywhere)
{
	struct frame f;
	struct vn_host_flow full, k;
	size_t n;

	frames[_i](&f);
	full = key_of(&f, f.len, 0);
	ck_assert_uint_eq(full.flags, 0);
	for (n = 0; n <= f.len; n++) {
		k = key_of(&f, n, 0);
		if (k.flags & VN_HOST_FLOW_F_TRUNC)
			continue;
		/* not truncated: the key is the whole frame's */
		ck_assert_msg(
		    k.ipver == full.ipver && k.proto == full.proto && k.sport == full.sport &&
			k.dport == full.dport && k.ethertype == full.ethertype,
		    "frame %d cut at %zu: key differs without VN_HOST_FLOW_F_TRUNC", _i, n);
	}
}
END_TEST

/* ---- the table ---- */

static struct tapflow_tab *tab_new(void)
{
	struct tapflow_tab *t = malloc(sizeof(*t));

	ck_assert_ptr_nonnull(t);
	memset(t, 0x5a, sizeof(*t));
	tapflow_tab_reset(t);
	return t;
}

/* Rows + other rows hold every frame of every direction. */
static void check_sums(const struct tapflow_tab *t)
{
	uint64_t p[VN_HOST_FLOW_NDIR] = { 0 }, b[VN_HOST_FLOW_NDIR] = { 0 };
	uint32_t i;

	for (i = 0; i < t->n; i++) {
		ck_assert_uint_lt(t->flow[i].dir, VN_HOST_FLOW_NDIR);
		p[t->flow[i].dir] += t->flow[i].packets;
		b[t->flow[i].dir] += t->flow[i].bytes;
	}
	for (int d = 0; d < VN_HOST_FLOW_NDIR; d++) {
		ck_assert_uint_eq(p[d] + t->other[d].packets, t->packets[d]);
		ck_assert_uint_eq(b[d] + t->other[d].bytes, t->bytes[d]);
	}
}

START_TEST(test_table_counts)
{
	struct tapflow_tab *t = tab_new();
	struct frame f;
	struct vn_host_flow k;
	const struct vn_host_flow *r;
	int i;

	frame_udp4(&f);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_TO_GUEST, f.b, 128, f.len), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_FROM_GUEST, f.b, 128, f.len), 0);
	frame_arp(&f);
	ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_TO_GUEST, f.b, f.len, 60), 0);
	/* len below caplen is taken as caplen */
	ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_TO_GUEST, f.b, f.len, 0), 0);
	ck_assert_int_eq(tapflow_tab_add(t, 2, f.b, f.len, 60), -EINVAL);
	ck_assert_uint_eq(t->n, 3);
	ck_assert_uint_eq(t->packets[VN_HOST_FLOW_TO_GUEST], 102);
	ck_assert_uint_eq(t->bytes[VN_HOST_FLOW_TO_GUEST], 100 * 242 + 60 + 42);
	ck_assert_uint_eq(t->packets[VN_HOST_FLOW_FROM_GUEST], 3);
	ck_assert_uint_eq(t->truncated, 0);
	frame_udp4(&f);
	tapflow_key(f.b, f.len, VN_HOST_FLOW_TO_GUEST, &k);
	r = tapflow_tab_find(t, &k);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->packets, 100);
	ck_assert_uint_eq(r->bytes, 24200);
	k.dir = VN_HOST_FLOW_FROM_GUEST;
	r = tapflow_tab_find(t, &k);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->packets, 3);
	k.dport++;
	ck_assert_ptr_null(tapflow_tab_find(t, &k));
	k.dir = 7;
	ck_assert_ptr_null(tapflow_tab_find(t, &k));
	/* a truncated frame is its own row, and counted */
	ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_TO_GUEST, f.b, 30, f.len), 0);
	ck_assert_uint_eq(t->truncated, 1);
	ck_assert_uint_eq(t->n, 4);
	check_sums(t);
	tapflow_tab_reset(t);
	ck_assert_uint_eq(t->n, 0);
	ck_assert_uint_eq(t->packets[0] + t->packets[1] + t->truncated, 0);
	tapflow_key(f.b, f.len, VN_HOST_FLOW_TO_GUEST, &k);
	ck_assert_ptr_null(tapflow_tab_find(t, &k));
	free(t);
}
END_TEST

START_TEST(test_table_overflow)
{
	struct tapflow_tab *t = tab_new(), *u = tab_new();
	struct frame f;
	char lbl[64];
	unsigned i;

	frame_udp4(&f);
	/* TAPFLOW_MAX_FLOWS + 40 flows (source ports), 2 frames each, into the guest */
	for (i = 0; i < TAPFLOW_MAX_FLOWS + 40; i++) {
		put16(f.b + 34, 1000 + i);
		ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_TO_GUEST, f.b, f.len, f.len),
				 i < TAPFLOW_MAX_FLOWS ? 0 : 1);
		ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_TO_GUEST, f.b, f.len, f.len),
				 i < TAPFLOW_MAX_FLOWS ? 0 : 1);
	}
	ck_assert_uint_eq(t->n, TAPFLOW_MAX_FLOWS);
	ck_assert_uint_eq(t->other[VN_HOST_FLOW_TO_GUEST].packets, 80);
	ck_assert_uint_eq(t->other[VN_HOST_FLOW_TO_GUEST].bytes, 80 * f.len);
	ck_assert_uint_eq(t->other[VN_HOST_FLOW_TO_GUEST].kind, VN_HOST_FLOW_KIND_OTHER);
	ck_assert_uint_eq(t->other[VN_HOST_FLOW_FROM_GUEST].packets, 0);
	label_is(&t->other[0], "other flows");
	ck_assert_str_eq(tapflow_proto_name(&t->other[0], lbl, sizeof(lbl)), "other_flows");
	/* an existing flow still counts in its row when the table is full; a new one from the guest
	 * goes to that direction's other row */
	put16(f.b + 34, 1000);
	ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_TO_GUEST, f.b, f.len, f.len), 0);
	ck_assert_int_eq(tapflow_tab_add(t, VN_HOST_FLOW_FROM_GUEST, f.b, f.len, f.len), 1);
	ck_assert_uint_eq(t->other[VN_HOST_FLOW_FROM_GUEST].packets, 1);
	check_sums(t);

	/* merge into an empty table: the same rows; into itself-like content: doubled, rows bounded */
	tapflow_tab_merge(u, t);
	ck_assert_uint_eq(u->n, TAPFLOW_MAX_FLOWS);
	ck_assert_uint_eq(u->packets[0], t->packets[0]);
	ck_assert_uint_eq(u->other[0].packets, t->other[0].packets);
	check_sums(u);
	tapflow_tab_merge(u, t);
	ck_assert_uint_eq(u->n, TAPFLOW_MAX_FLOWS);
	ck_assert_uint_eq(u->packets[0], 2 * t->packets[0]);
	ck_assert_uint_eq(u->flow[0].packets, 2 * t->flow[0].packets);
	check_sums(u);
	free(t);
	free(u);
}
END_TEST

START_TEST(test_table_merge)
{
	struct tapflow_tab *a = tab_new(), *b = tab_new();
	struct frame f;
	struct vn_host_flow k;
	const struct vn_host_flow *r;

	frame_udp4(&f);
	(void)tapflow_tab_add(a, 0, f.b, f.len, f.len);
	(void)tapflow_tab_add(b, 0, f.b, f.len, f.len);
	(void)tapflow_tab_add(b, 0, f.b, f.len, f.len);
	frame_arp(&f);
	(void)tapflow_tab_add(b, 1, f.b, f.len, 60);
	(void)tapflow_tab_add(b, 1, f.b, 20, 60); /* truncated ARP is still ARP, marked */
	tapflow_tab_merge(a, b);
	ck_assert_uint_eq(a->n, 2); /* udp into the guest, arp from it */
	ck_assert_uint_eq(a->packets[0], 3);
	ck_assert_uint_eq(a->packets[1], 2);
	ck_assert_uint_eq(a->bytes[1], 120);
	ck_assert_uint_eq(a->truncated, 0); /* ARP needs nothing past the ethertype */
	frame_udp4(&f);
	tapflow_key(f.b, f.len, 0, &k);
	r = tapflow_tab_find(a, &k);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->packets, 3);
	check_sums(a);
	free(a);
	free(b);
}
END_TEST

/* Random bytes of random lengths and bit flips of the good frames: every frame counted once, no read past
 * the captured bytes, keys within their domains. */
START_TEST(test_hostile_frames)
{
	struct tapflow_tab *t = tab_new();
	struct frame f;
	uint64_t n = 0;
	unsigned seed = 12345;
	int i, j;

	for (i = 0; i < 20000; i++) {
		size_t len = (size_t)(rand_r(&seed) % 140);
		uint8_t *b = malloc(len ? len : 1);
		struct vn_host_flow k;

		for (size_t x = 0; x < len; x++)
			b[x] = (uint8_t)rand_r(&seed);
		if (len > 13 && (i & 1)) /* half of them IP, to go deeper */
			put16(b + 12, i & 2 ? 0x0800 : 0x86dd);
		if (len > 14 && (i & 1))
			b[14] = (uint8_t)((i & 2 ? 0x40 : 0x60) | (b[14] & 15));
		tapflow_key(b, len, (unsigned)i & 1, &k);
		ck_assert(k.ipver == 0 || k.ipver == 4 || k.ipver == 6);
		ck_assert_uint_eq(k.kind, VN_HOST_FLOW_KIND_FLOW);
		(void)tapflow_tab_add(t, (unsigned)i & 1, b, len, len + 10);
		n++;
		free(b);
	}
	for (j = 0; j < NFRAMES; j++) {
		frames[j](&f);
		for (size_t bit = 0; bit < f.len * 8 && bit < 128 * 8; bit++) {
			uint8_t *b = malloc(f.len);

			memcpy(b, f.b, f.len);
			b[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			(void)tapflow_tab_add(t, 0, b, f.len < 128 ? f.len : 128, f.len);
			n++;
			free(b);
		}
	}
	ck_assert_uint_eq(t->packets[0] + t->packets[1], n);
	check_sums(t);
	free(t);
}
END_TEST

/* ---- the live capture ---- */

START_TEST(test_open_errors)
{
	char err[256];

	errno = 0;
	ck_assert_ptr_null(tapflow_open("", err, sizeof(err)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(tapflow_open("a-name-longer-than-ifnamsiz", err, sizeof(err)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(tapflow_open("../x", err, sizeof(err)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(tapflow_open(NULL, NULL, 0));
	ck_assert_int_eq(errno, EINVAL);
	err[0] = 0;
	ck_assert_ptr_null(tapflow_open("vnoisenodev0", err, sizeof(err)));
	ck_assert_msg(errno == ENODEV || errno == EPERM, "errno %d (%s)", errno, err);
	ck_assert_msg(strstr(err, "vnoisenodev0"), "message '%s'", err);
	tapflow_close(NULL);
}
END_TEST

/*
 * A tap device as QEMU holds one: this process owns the fd (the "guest" side), the host side has
 * host_ip/30 and a static neighbour entry for guest_ip, so datagrams sent to guest_ip leave through the tap
 * (the guest receives them: PCAP_D_OUT, our "to guest") and frames written to the fd arrive on it ("from
 * guest", PCAP_D_IN). The /30 is picked in 198.18.0.0/15 (benchmarking) by pid, so that runs of this suite
 * at the same time (build/, build-san/) do not share a route.
 */
static const uint8_t guest_mac[6] = { 0x52, 0x54, 0x00, 0x77, 0x00, 0x02 };

struct tap {
	int fd; /* the tap's file descriptor (the guest's end) */
	char name[IFNAMSIZ];
	char host_ip[INET_ADDRSTRLEN], guest_ip[INET_ADDRSTRLEN];
};

/* Create and configure the tap; 0, or -errno (no /dev/net/tun, not root). */
static int tap_up(struct tap *t)
{
	struct ifreq ifr = { 0 };
	struct arpreq ar = { 0 };
	struct sockaddr_in *sin;
	int s = -1, err = 0;

	unsigned net = (unsigned)getpid() % 32768 * 4; /* offset of the /30 in 198.18.0.0/15 */

	snprintf(t->host_ip, sizeof(t->host_ip), "198.%u.%u.%u", 18 + net / 65536, net / 256 % 256,
		 net % 256 + 1);
	snprintf(t->guest_ip, sizeof(t->guest_ip), "198.%u.%u.%u", 18 + net / 65536,
		 net / 256 % 256, net % 256 + 2);
	t->fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (t->fd < 0)
		return -errno;
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "vnft%d", (int)(getpid() % 100000));
	if (ioctl(t->fd, TUNSETIFF, &ifr) < 0)
		goto fail;
	memcpy(t->name, ifr.ifr_name, sizeof(t->name));
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		goto fail;
	sin = (struct sockaddr_in *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, t->host_ip, &sin->sin_addr);
	if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
		goto fail;
	inet_pton(AF_INET, "255.255.255.252", &sin->sin_addr);
	if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		goto fail;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		goto fail;
	sin = (struct sockaddr_in *)&ar.arp_pa;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, t->guest_ip, &sin->sin_addr);
	ar.arp_ha.sa_family = 1; /* ARPHRD_ETHER */
	memcpy(ar.arp_ha.sa_data, guest_mac, 6);
	ar.arp_flags = ATF_COM | ATF_PERM;
	snprintf(ar.arp_dev, sizeof(ar.arp_dev), "%s", t->name);
	if (ioctl(s, SIOCSARP, &ar) < 0)
		goto fail;
	close(s);
	return 0;
fail:
	err = -errno;
	if (s >= 0)
		close(s);
	close(t->fd);
	t->fd = -1;
	return err;
}

/* Send n datagrams of size bytes from fd to the tap's guest_ip:port. */
static void send_udp(const struct tap *t, int fd, uint16_t port, int n, size_t size)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char buf[512] = { 0 };

	inet_pton(AF_INET, t->guest_ip, &a.sin_addr);
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(sendto(fd, buf, size, 0, (struct sockaddr *)&a, sizeof(a)),
				 (ssize_t)size);
}

/* Frames the "guest" reads from the tap: those of UDP to port. */
static int guest_reads(struct tap *t, uint16_t port)
{
	uint8_t b[2048];
	ssize_t r;
	int n = 0;

	while ((r = read(t->fd, b, sizeof(b))) > 0)
		if (r >= 38 && b[12] == 0x08 && b[13] == 0 && b[23] == 17 &&
		    (b[36] << 8 | b[37]) == port)
			n++;
	return n;
}

/* The "guest" sends n UDP frames of size bytes of payload from guest_ip:sport to host_ip:dport. */
static void guest_sends(struct tap *t, uint16_t sport, uint16_t dport, int n, size_t size)
{
	struct frame f;

	eth(&f, 0, 0x0800);
	memset(f.b, 0xff, 6);
	memcpy(f.b + 6, guest_mac, 6);
	ip4(&f, 5, 17, t->guest_ip, t->host_ip, 8 + size, 0x4000);
	ports(&f, sport, dport, 8);
	put16(f.b + 38, (unsigned)(8 + size));
	f.len += size;
	for (int i = 0; i < n; i++)
		ck_assert_int_eq(write(t->fd, f.b, f.len), (ssize_t)f.len);
}

static const struct vn_host_flow *find_udp(const struct tapflow_tab *t, unsigned dir,
					   uint16_t sport, uint16_t dport)
{
	for (uint32_t i = 0; i < t->n; i++) {
		const struct vn_host_flow *r = &t->flow[i];

		if (r->dir == dir && r->ipver == 4 && r->proto == 17 && r->sport == sport &&
		    r->dport == dport)
			return r;
	}
	return NULL;
}

START_TEST(test_live_tap)
{
	struct sockaddr_in me = { .sin_family = AF_INET };
	socklen_t al = sizeof(me);
	uint64_t drops[VN_HOST_FLOW_NDIR], cut;
	const struct tapflow_tab *t;
	const struct vn_host_flow *r;
	struct tapflow *tf;
	struct tap tap;
	char err[256] = "";
	uint16_t sp;
	int fd, rc;

	if (geteuid() != 0) {
		fprintf(stderr, "check_tapflow: live capture skipped (needs root)\n");
		return;
	}
	rc = tap_up(&tap);
	if (rc == -ENOENT || rc == -ENODEV) {
		fprintf(stderr, "check_tapflow: live capture skipped (no /dev/net/tun)\n");
		return;
	}
	ck_assert_msg(rc == 0, "tap: %s", strerror(-rc));
	tf = tapflow_open(tap.name, err, sizeof(err));
	ck_assert_msg(tf, "tapflow_open(%s): %s", tap.name, err);
	ck_assert_str_eq(tapflow_name(tf), tap.name);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	inet_pton(AF_INET, tap.host_ip, &me.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&me, &al), 0);
	sp = ntohs(me.sin_port);

	/* period 1: 37 datagrams of 200 bytes into the guest over two polls, 3 of 64 from it */
	send_udp(&tap, fd, 5555, 20, 200);
	ck_assert_int_ge(tapflow_poll(tf, UINT64_MAX, err, sizeof(err)), 0);
	send_udp(&tap, fd, 5555, 17, 200);
	guest_sends(&tap, 6000, 6001, 3, 64);
	usleep(20000);
	cut = now_ns();
	usleep(20000);
	/* period 2: after the cut time, read by the cut's own poll */
	send_udp(&tap, fd, 5555, 5, 100);
	usleep(20000);
	t = tapflow_cut(tf, cut, drops);
	ck_assert_int_eq(tapflow_failed(tf), 0);
	ck_assert_uint_eq(drops[0] + drops[1], 0);
	r = find_udp(t, VN_HOST_FLOW_TO_GUEST, sp, 5555);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->packets, 37);
	ck_assert_uint_eq(r->bytes, 37 * (14 + 20 + 8 + 200));
	addr_is(r, 0, tap.host_ip);
	addr_is(r, 1, tap.guest_ip);
	ck_assert_ptr_null(find_udp(t, VN_HOST_FLOW_FROM_GUEST, sp, 5555));
	r = find_udp(t, VN_HOST_FLOW_FROM_GUEST, 6000, 6001);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->packets, 3);
	ck_assert_uint_eq(r->bytes, 3 * (14 + 20 + 8 + 64));
	ck_assert_ptr_null(find_udp(t, VN_HOST_FLOW_TO_GUEST, 6000, 6001));
	check_sums(t);

	t = tapflow_cut(tf, now_ns(), drops);
	r = find_udp(t, VN_HOST_FLOW_TO_GUEST, sp, 5555);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(r->packets, 5);
	ck_assert_uint_eq(r->bytes, 5 * (14 + 20 + 8 + 100));
	/* period 3: nothing of ours */
	t = tapflow_cut(tf, now_ns(), drops);
	ck_assert_ptr_null(find_udp(t, VN_HOST_FLOW_TO_GUEST, sp, 5555));
	/* what the guest side read is what was counted into it */
	ck_assert_int_eq(guest_reads(&tap, 5555), 42);

	/* the device goes away under the capture: it fails, says so, and keeps what it had */
	send_udp(&tap, fd, 5555, 2, 10);
	usleep(20000);
	close(tap.fd);
	usleep(50000);
	ck_assert_int_eq(tapflow_poll(tf, UINT64_MAX, err, sizeof(err)), -EIO);
	ck_assert_msg(strstr(err, tap.name), "message '%s'", err);
	ck_assert_int_eq(tapflow_failed(tf), 1);
	ck_assert_int_eq(tapflow_poll(tf, UINT64_MAX, err, sizeof(err)), -EIO);
	t = tapflow_cut(tf, now_ns(), drops);
	r = find_udp(t, VN_HOST_FLOW_TO_GUEST, sp, 5555);
	ck_assert(!r || r->packets <= 2); /* read before the error, or lost with the device */
	check_sums(t);
	ck_assert_uint_eq(drops[0] + drops[1], 0);
	close(fd);
	tapflow_close(tf);
}
END_TEST

static Suite *tapflow_suite(void)
{
	Suite *s = suite_create("tapflow");
	TCase *tc = tcase_create("keys");

	tcase_add_test(tc, test_key_udp4);
	tcase_add_test(tc, test_key_tcp6_ext);
	tcase_add_test(tc, test_key_icmp);
	tcase_add_test(tc, test_key_not_ip);
	tcase_add_test(tc, test_key_fragments);
	tcase_add_test(tc, test_key_lies);
	tcase_add_loop_test(tc, test_cut_everywhere, 0, NFRAMES);
	suite_add_tcase(s, tc);

	tc = tcase_create("table");
	tcase_add_test(tc, test_table_counts);
	tcase_add_test(tc, test_table_overflow);
	tcase_add_test(tc, test_table_merge);
	tcase_add_test(tc, test_hostile_frames);
	suite_add_tcase(s, tc);

	tc = tcase_create("capture");
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_live_tap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tapflow_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
