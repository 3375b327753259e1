/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/collect/pcapio: IPv4, IPv6 and mixed round trips (bytes, addresses, ports, nanosecond
 * timestamps and order, sizes 0 to 65507) with the IP and UDP checksums verified from the raw file bytes,
 * writer argument checks, the port filter, stopping from the callback, files cut at every offset, files
 * that are not captures, microsecond pcap and pcapng input, stdin, and hand-made captures of every
 * supported link type (Ethernet with VLAN and QinQ tags, SLL, SLL2, NULL, LOOP, IPV4/IPV6) plus hostile
 * packets (TCP, ARP, fragments, lengths past the captured data, IHL < 5, bad UDP lengths...) each counted in
 * its stats field.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <pcap/pcap.h>
#include "collect/pcapio.h"

#define MAXREC 16

static char tmpdir[64];
static char path[128];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/check_pcapio.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	snprintf(path, sizeof(path), "%s/cap.pcap", tmpdir);
}

static void teardown(void)
{
	char alt[160];

	unlink(path);
	snprintf(alt, sizeof(alt), "%s/cut.pcap", tmpdir);
	unlink(alt);
	rmdir(tmpdir);
}

/* ---- what the callback saw ---- */

struct rec {
	uint64_t ns;
	struct sockaddr_storage src, dst;
	size_t len;
	unsigned char *data;
};

struct got {
	int n;
	int stop_at; /* return 42 from the stop_at-th datagram (0: never) */
	struct rec r[MAXREC];
};

static size_t sa_len(const struct sockaddr *sa)
{
	ck_assert(sa->sa_family == AF_INET || sa->sa_family == AF_INET6);
	return sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

static int collect(void *ctx, uint64_t ns, const struct sockaddr *src, const struct sockaddr *dst,
		   const void *payload, size_t len)
{
	struct got *g = ctx;
	struct rec *r;

	ck_assert_int_lt(g->n, MAXREC);
	ck_assert_int_eq(src->sa_family, dst->sa_family);
	r = &g->r[g->n++];
	r->ns = ns;
	memcpy(&r->src, src, sa_len(src));
	memcpy(&r->dst, dst, sa_len(dst));
	r->len = len;
	r->data = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(r->data);
	if (len)
		memcpy(r->data, payload, len);
	return g->stop_at && g->n == g->stop_at ? 42 : 0;
}

static void got_free(struct got *g)
{
	for (int i = 0; i < g->n; i++)
		free(g->r[i].data);
	memset(g, 0, sizeof(*g));
}

static void stats_sum_ok(const struct pcapio_stats *st)
{
	ck_assert_uint_eq(st->packets, st->udp + st->skipped_not_udp + st->skipped_fragment +
					   st->skipped_truncated + st->skipped_bad +
					   st->skipped_port);
}

/* ---- datagrams to write ---- */

struct dg {
	uint64_t ns;
	int v6;
	const char *src, *dst;
	uint16_t sport, dport;
	size_t len;
};

static void mk_sa(struct sockaddr_storage *ss, int v6, const char *addr, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (v6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET6, addr, &s->sin6_addr), 1);
	} else {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		ck_assert_int_eq(inet_pton(AF_INET, addr, &s->sin_addr), 1);
	}
}

static unsigned char pattern(int i, size_t j)
{
	return (unsigned char)(i * 31 + j * 7 + (j >> 8));
}

static void fill(unsigned char *b, int i, size_t len)
{
	for (size_t j = 0; j < len; j++)
		b[j] = pattern(i, j);
}

static void write_dgs(const char *p, const struct dg *d, int n)
{
	static unsigned char buf[PCAPIO_MAX_PAYLOAD];
	struct sockaddr_storage s, t;
	char err[256] = "";
	struct pcapio_w *w = pcapio_create(p, err, sizeof(err));

	ck_assert_msg(w != NULL, "create: %s", err);
	for (int i = 0; i < n; i++) {
		mk_sa(&s, d[i].v6, d[i].src, d[i].sport);
		mk_sa(&t, d[i].v6, d[i].dst, d[i].dport);
		fill(buf, i, d[i].len);
		ck_assert_int_eq(pcapio_write(w, d[i].ns, (struct sockaddr *)&s,
					      (struct sockaddr *)&t, buf, d[i].len),
				 0);
	}
	ck_assert_int_eq(pcapio_flush(w), 0);
	pcapio_close(w);
}

/* g->r[k] is d[i] (written as the i-th datagram). */
static void rec_is(const struct got *g, int k, const struct dg *d, int i)
{
	const struct rec *r = &g->r[k];
	struct sockaddr_storage s, t;

	mk_sa(&s, d[i].v6, d[i].src, d[i].sport);
	mk_sa(&t, d[i].v6, d[i].dst, d[i].dport);
	ck_assert_uint_eq(r->ns, d[i].ns);
	ck_assert_int_eq(memcmp(&r->src, &s, sa_len((struct sockaddr *)&s)), 0);
	ck_assert_int_eq(memcmp(&r->dst, &t, sa_len((struct sockaddr *)&t)), 0);
	ck_assert_uint_eq(r->len, d[i].len);
	for (size_t j = 0; j < r->len; j++)
		ck_assert_uint_eq(r->data[j], pattern(i, j));
}

/* ---- checksums verified on the raw file: an independent reading of the bytes ---- */

static uint32_t rd32le(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t sum_be16(const unsigned char *p, size_t n)
{
	uint32_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += (i & 1) ? p[i] : (uint32_t)p[i] << 8;
	return s;
}

static int folds_to_ffff(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

static int verify_file(const char *p, int expect_records)
{
	FILE *f = fopen(p, "rb");
	unsigned char *b;
	long size;
	size_t off;
	int n = 0;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	size = ftell(f);
	rewind(f);
	b = malloc((size_t)size);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(fread(b, 1, (size_t)size, f), (size_t)size);
	fclose(f);
	ck_assert_uint_eq(rd32le(b), 0xa1b23c4d); /* nanosecond pcap */
	ck_assert_uint_eq(rd32le(b + 20), 101); /* LINKTYPE_RAW */
	for (off = 24; off < (size_t)size; n++) {
		uint32_t caplen = rd32le(b + off + 8), len = rd32le(b + off + 12);
		unsigned char *ip = b + off + 16, *udp;
		uint32_t ulen, s;

		ck_assert_uint_eq(caplen, len);
		ck_assert_uint_le(off + 16 + caplen, (size_t)size);
		if (ip[0] >> 4 == 4) {
			ck_assert_uint_eq(ip[0], 0x45);
			ck_assert_uint_eq((uint32_t)ip[2] << 8 | ip[3], caplen);
			ck_assert(folds_to_ffff(sum_be16(ip, 20)));
			udp = ip + 20;
			ulen = (uint32_t)udp[4] << 8 | udp[5];
			ck_assert_uint_eq(ulen, caplen - 20);
			s = sum_be16(ip + 12, 8) + 17 + ulen + sum_be16(udp, ulen);
		} else {
			ck_assert_uint_eq(ip[0] >> 4, 6);
			ck_assert_uint_eq(ip[6], 17);
			udp = ip + 40;
			ulen = (uint32_t)udp[4] << 8 | udp[5];
			ck_assert_uint_eq(ulen, caplen - 40);
			ck_assert_uint_eq((uint32_t)ip[4] << 8 | ip[5], ulen);
			s = sum_be16(ip + 8, 32) + 17 + ulen + sum_be16(udp, ulen);
		}
		ck_assert(udp[6] || udp[7]); /* never "no checksum" */
		ck_assert(folds_to_ffff(s));
		off += 16 + caplen;
	}
	ck_assert_uint_eq(off, (size_t)size);
	free(b);
	ck_assert_int_eq(n, expect_records);
	return n;
}

static const struct dg dgs4[] = {
	{ 1700000000123456789ull, 0, "192.0.2.1", "198.51.100.7", 40000, 9999, 0 },
	{ 1700000000123456790ull, 0, "10.1.2.3", "10.0.0.1", 1, 65535, 1 },
	{ 1700000001000000000ull, 0, "192.0.2.1", "198.51.100.7", 40000, 9999, 1400 },
	{ 1699999999999999999ull, 0, "255.255.255.255", "0.0.0.0", 65535, 1, 333 },
	{ 0, 0, "127.0.0.1", "127.0.0.1", 53, 53, 2 },
	{ 2147483647999999999ull, 0, "203.0.113.200", "198.51.100.9", 12345, 9999, 65507 },
};

static const struct dg dgs6[] = {
	{ 1700000000000000001ull, 1, "2001:db8::1", "2001:db8::2", 40000, 9999, 0 },
	{ 1700000000000000002ull, 1, "fe80::1234:5678:9abc:def0", "ff02::1", 5353, 5353, 1 },
	{ 1700000000000000003ull, 1, "::1", "::1", 1, 2, 1400 },
	{ 1700000000000000003ull, 1, "::ffff:192.0.2.1", "::ffff:192.0.2.2", 777, 9999, 1399 },
	{ 1712345678987654321ull, 1, "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::", 65535,
	  9, 65507 },
};

static const struct dg dgsmix[] = {
	{ 1700000000000000000ull, 0, "192.0.2.1", "192.0.2.2", 1000, 5000, 10 },
	{ 1700000000000000001ull, 1, "2001:db8::1", "2001:db8::2", 1000, 6000, 20 },
	{ 1700000000000000002ull, 0, "192.0.2.3", "192.0.2.2", 1001, 6000, 30 },
	{ 1700000000000000003ull, 1, "2001:db8::3", "2001:db8::2", 1002, 5000, 40 },
	{ 1700000000000000004ull, 0, "192.0.2.4", "192.0.2.2", 1003, 6000, 0 },
};

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static void round_trip(const struct dg *d, int n)
{
	struct pcapio_stats st;
	struct got g = { 0 };
	char err[256] = "";

	write_dgs(path, d, n);
	verify_file(path, n);
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, err, sizeof(err)), 0);
	ck_assert_int_eq(g.n, n);
	for (int i = 0; i < n; i++)
		rec_is(&g, i, d, i);
	ck_assert_uint_eq(st.packets, (uint64_t)n);
	ck_assert_uint_eq(st.udp, (uint64_t)n);
	stats_sum_ok(&st);
	got_free(&g);
}

START_TEST(test_round_trip_v4)
{
	round_trip(dgs4, N(dgs4));
}
END_TEST

START_TEST(test_round_trip_v6)
{
	round_trip(dgs6, N(dgs6));
}
END_TEST

START_TEST(test_round_trip_mixed)
{
	round_trip(dgsmix, N(dgsmix));
}
END_TEST

START_TEST(test_empty_capture)
{
	struct pcapio_stats st;
	struct got g = { 0 };

	write_dgs(path, NULL, 0);
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, NULL, 0), 0);
	ck_assert_int_eq(g.n, 0);
	ck_assert_uint_eq(st.packets, 0);
}
END_TEST

START_TEST(test_writer_args)
{
	static unsigned char big[PCAPIO_MAX_PAYLOAD + 1];
	struct sockaddr_storage s4, d4, s6, d6, un;
	const struct sockaddr *S4 = (struct sockaddr *)&s4, *D4 = (struct sockaddr *)&d4;
	const struct sockaddr *S6 = (struct sockaddr *)&s6, *D6 = (struct sockaddr *)&d6;
	char err[256] = "", bad[192];
	struct pcapio_w *w;

	mk_sa(&s4, 0, "192.0.2.1", 1);
	mk_sa(&d4, 0, "192.0.2.2", 2);
	mk_sa(&s6, 1, "2001:db8::1", 1);
	mk_sa(&d6, 1, "2001:db8::2", 2);
	memset(&un, 0, sizeof(un));
	un.ss_family = AF_UNIX;

	snprintf(bad, sizeof(bad), "%s/no/such/dir/x.pcap", tmpdir);
	errno = 0;
	ck_assert_ptr_null(pcapio_create(bad, err, sizeof(err)));
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "x.pcap"));
	ck_assert_ptr_null(pcapio_create(bad, NULL, 0));

	w = pcapio_create(path, err, sizeof(err));
	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(pcapio_write(w, 1, S4, D6, big, 1), -EAFNOSUPPORT);
	ck_assert_int_eq(pcapio_write(w, 1, S6, D4, big, 1), -EAFNOSUPPORT);
	ck_assert_int_eq(pcapio_write(w, 1, (struct sockaddr *)&un, (struct sockaddr *)&un, big, 1),
			 -EAFNOSUPPORT);
	ck_assert_int_eq(pcapio_write(w, 1, S4, D4, big, PCAPIO_MAX_PAYLOAD + 1), -EMSGSIZE);
	ck_assert_int_eq(pcapio_write(w, 1, S6, D6, big, PCAPIO_MAX_PAYLOAD + 1), -EMSGSIZE);
	ck_assert_int_eq(pcapio_write(w, 2147483648000000000ull, S4, D4, big, 1), -ERANGE);
	ck_assert_int_eq(pcapio_write(w, 1, S4, D4, NULL, 1), -EINVAL);
	ck_assert_int_eq(pcapio_write(NULL, 1, S4, D4, big, 1), -EINVAL);
	ck_assert_int_eq(pcapio_write(w, 1, S4, D4, NULL, 0), 0);
	ck_assert_int_eq(pcapio_write(w, 1, S6, D6, big, PCAPIO_MAX_PAYLOAD), 0);
	ck_assert_int_eq(pcapio_flush(w), 0);
	pcapio_close(w);
	pcapio_close(NULL);
	verify_file(path, 2);
}
END_TEST

START_TEST(test_write_error)
{
	struct sockaddr_storage s, d;
	unsigned char buf[1000] = { 0 };
	struct pcapio_w *w;
	int r = 0;

	if (access("/dev/full", W_OK) != 0)
		return;
	mk_sa(&s, 0, "192.0.2.1", 1);
	mk_sa(&d, 0, "192.0.2.2", 2);
	w = pcapio_create("/dev/full", NULL, 0);
	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < 100 && r == 0; i++)
		r = pcapio_write(w, 1, (struct sockaddr *)&s, (struct sockaddr *)&d, buf,
				 sizeof(buf));
	if (r == 0)
		r = pcapio_flush(w);
	ck_assert_int_eq(r, -ENOSPC);
	ck_assert_int_lt(pcapio_write(w, 1, (struct sockaddr *)&s, (struct sockaddr *)&d, buf, 1),
			 0);
	ck_assert_int_lt(pcapio_flush(w), 0);
	pcapio_close(w);
}
END_TEST

START_TEST(test_port_filter)
{
	struct pcapio_stats st;
	struct got g = { 0 };

	write_dgs(path, dgsmix, N(dgsmix));
	ck_assert_int_eq(pcapio_replay(path, 6000, collect, &g, &st, NULL, 0), 0);
	ck_assert_int_eq(g.n, 3);
	rec_is(&g, 0, dgsmix, 1);
	rec_is(&g, 1, dgsmix, 2);
	rec_is(&g, 2, dgsmix, 4);
	ck_assert_uint_eq(st.packets, 5);
	ck_assert_uint_eq(st.udp, 3);
	ck_assert_uint_eq(st.skipped_port, 2);
	stats_sum_ok(&st);
	got_free(&g);

	ck_assert_int_eq(pcapio_replay(path, 7, collect, &g, &st, NULL, 0), 0);
	ck_assert_int_eq(g.n, 0);
	ck_assert_uint_eq(st.skipped_port, 5);
}
END_TEST

START_TEST(test_callback_stops)
{
	struct pcapio_stats st;
	struct got g = { .stop_at = 2 };

	write_dgs(path, dgs4, N(dgs4));
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, NULL, 0), 42);
	ck_assert_int_eq(g.n, 2);
	ck_assert_uint_eq(st.udp, 2);
	ck_assert_uint_eq(st.packets, 2);
	got_free(&g);
}
END_TEST

/* A capture cut at every offset: the whole records before the cut arrive intact, then 0 at a record
 * boundary and -EBADMSG with a reason inside a header or record. */
START_TEST(test_cut_everywhere)
{
	static const struct dg d[] = {
		{ 1700000000000000000ull, 0, "192.0.2.1", "192.0.2.2", 1000, 5000, 0 },
		{ 1700000000000000001ull, 1, "2001:db8::1", "2001:db8::2", 1000, 5000, 5 },
		{ 1700000000000000002ull, 0, "192.0.2.3", "192.0.2.2", 1001, 5000, 20 },
	};
	size_t ends[] = { 24, 24 + 16 + 28, 24 + 16 + 28 + 16 + 53,
			  24 + 16 + 28 + 16 + 53 + 16 + 48 };
	char cut[160], err[256];
	struct stat sb;
	FILE *in, *out;
	unsigned char b[512];

	write_dgs(path, d, N(d));
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_uint_eq((size_t)sb.st_size, ends[3]);
	in = fopen(path, "rb");
	ck_assert_ptr_nonnull(in);
	ck_assert_uint_eq(fread(b, 1, ends[3], in), ends[3]);
	fclose(in);
	snprintf(cut, sizeof(cut), "%s/cut.pcap", tmpdir);
	for (size_t at = 0; at <= ends[3]; at++) {
		struct pcapio_stats st;
		struct got g = { 0 };
		int whole = 0, boundary = 0, r;

		out = fopen(cut, "wb");
		ck_assert_ptr_nonnull(out);
		ck_assert_uint_eq(fwrite(b, 1, at, out), at);
		fclose(out);
		for (int k = 0; k < 4; k++) {
			if (at >= ends[k] && k > 0)
				whole = k;
			if (at == ends[k])
				boundary = 1;
		}
		err[0] = 0;
		r = pcapio_replay(cut, 0, collect, &g, &st, err, sizeof(err));
		ck_assert_msg(r == (boundary ? 0 : -EBADMSG), "cut at %zu: %d (%s)", at, r, err);
		if (r)
			ck_assert_msg(strlen(err) > 0, "cut at %zu: no reason", at);
		ck_assert_int_eq(g.n, whole);
		for (int i = 0; i < g.n; i++)
			rec_is(&g, i, d, i);
		got_free(&g);
	}
}
END_TEST

static void write_bytes(const char *p, const void *buf, size_t len)
{
	FILE *f = fopen(p, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(buf, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(test_not_a_capture)
{
	static const char text[] =
	    "this is not a capture file, just some text that goes on for a while\n";
	static const unsigned char badver[24] = { 0x4d, 0x3c, 0xb2, 0xa1, 99, 0, 4, 0 };
	struct pcapio_stats st;
	struct got g = { 0 };
	char err[256] = "";

	write_bytes(path, text, sizeof(text) - 1);
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "cap.pcap"));
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, NULL, NULL, 0), -EBADMSG);
	write_bytes(path, "", 0);
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, err, sizeof(err)), -EBADMSG);
	write_bytes(path, badver, sizeof(badver));
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, err, sizeof(err)), -EBADMSG);
	ck_assert_int_eq(g.n, 0);

	unlink(path);
	err[0] = 0;
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, err, sizeof(err)), -ENOENT);
	ck_assert_uint_gt(strlen(err), 0);
	ck_assert_int_eq(pcapio_replay(tmpdir, 0, collect, &g, &st, err, sizeof(err)), -EISDIR);
	ck_assert_int_eq(pcapio_replay(NULL, 0, collect, &g, &st, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(pcapio_replay(tmpdir, 0, NULL, &g, &st, err, sizeof(err)), -EINVAL);
}
END_TEST

/* ---- hand-made captures ---- */

static pcap_t *hm_pcap;
static pcap_dumper_t *hm_dump;

static void hm_open(int dlt, unsigned precision)
{
	hm_pcap = pcap_open_dead_with_tstamp_precision(dlt, 262144, precision);
	ck_assert_ptr_nonnull(hm_pcap);
	hm_dump = pcap_dump_open(hm_pcap, path);
	ck_assert_msg(hm_dump != NULL, "%s", pcap_geterr(hm_pcap));
}

/* A record of caplen bytes, claiming len on the wire; timestamp sec.frac (frac in the file's unit). */
static void hm_put(const uint8_t *pkt, size_t caplen, size_t len, long sec, long frac)
{
	struct pcap_pkthdr h;

	memset(&h, 0, sizeof(h));
	h.ts.tv_sec = sec;
	h.ts.tv_usec = frac;
	h.caplen = (bpf_u_int32)caplen;
	h.len = (bpf_u_int32)len;
	pcap_dump((u_char *)hm_dump, &h, pkt);
}

static void hm_close(void)
{
	pcap_dump_close(hm_dump);
	pcap_close(hm_pcap);
}

static void put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static const uint8_t hm_payload[] = "hand-made payload";
#define HM_LEN (sizeof(hm_payload) - 1)

/* IPv4 192.0.2.1:1111 -> 192.0.2.2:2222 carrying proto, fragment field frag, HM_LEN bytes. Checksums
 * are left 0: the replayer does not look at them. */
static size_t mk_ip4(uint8_t *b, uint8_t proto, unsigned frag)
{
	size_t tot = 20 + 8 + HM_LEN;

	memset(b, 0, tot);
	b[0] = 0x45;
	put16(b + 2, (unsigned)tot);
	put16(b + 6, frag);
	b[8] = 64;
	b[9] = proto;
	memcpy(b + 12, (uint8_t[]){ 192, 0, 2, 1, 192, 0, 2, 2 }, 8);
	put16(b + 20, 1111);
	put16(b + 22, 2222);
	put16(b + 24, 8 + HM_LEN);
	memcpy(b + 28, hm_payload, HM_LEN);
	return tot;
}

/* IPv6 2001:db8::1:3333 -> 2001:db8::2:4444, next header nh, HM_LEN bytes of UDP payload. */
static size_t mk_ip6(uint8_t *b, uint8_t nh)
{
	size_t plen = 8 + HM_LEN;

	memset(b, 0, 40 + plen);
	b[0] = 0x60;
	put16(b + 4, (unsigned)plen);
	b[6] = nh;
	b[7] = 64;
	b[8] = 0x20, b[9] = 0x01, b[10] = 0x0d, b[11] = 0xb8, b[23] = 1;
	b[24] = 0x20, b[25] = 0x01, b[26] = 0x0d, b[27] = 0xb8, b[39] = 2;
	put16(b + 40, 3333);
	put16(b + 42, 4444);
	put16(b + 44, (unsigned)plen);
	memcpy(b + 48, hm_payload, HM_LEN);
	return 40 + plen;
}

static void is_hm4(const struct rec *r)
{
	struct sockaddr_storage s, t;

	mk_sa(&s, 0, "192.0.2.1", 1111);
	mk_sa(&t, 0, "192.0.2.2", 2222);
	ck_assert_int_eq(memcmp(&r->src, &s, sizeof(struct sockaddr_in)), 0);
	ck_assert_int_eq(memcmp(&r->dst, &t, sizeof(struct sockaddr_in)), 0);
	ck_assert_uint_eq(r->len, HM_LEN);
	ck_assert_int_eq(memcmp(r->data, hm_payload, HM_LEN), 0);
}

static void is_hm6(const struct rec *r)
{
	struct sockaddr_storage s, t;

	mk_sa(&s, 1, "2001:db8::1", 3333);
	mk_sa(&t, 1, "2001:db8::2", 4444);
	ck_assert_int_eq(memcmp(&r->src, &s, sizeof(struct sockaddr_in6)), 0);
	ck_assert_int_eq(memcmp(&r->dst, &t, sizeof(struct sockaddr_in6)), 0);
	ck_assert_uint_eq(r->len, HM_LEN);
	ck_assert_int_eq(memcmp(r->data, hm_payload, HM_LEN), 0);
}

/* Link header of link type dlt in front of an IP packet of version ver; its length. */
static size_t mk_link(uint8_t *b, int dlt, int ver, int variant)
{
	unsigned et = ver == 4 ? 0x0800 : 0x86dd;

	switch (dlt) {
	case DLT_EN10MB:
		memset(b, 0, 12);
		b[0] = 0x52, b[6] = 0x54;
		if (variant == 0) { /* one 802.1Q tag */
			put16(b + 12, 0x8100);
			put16(b + 14, 42);
			put16(b + 16, et);
			return 18;
		}
		if (variant == 1) { /* QinQ: 802.1ad then 802.1Q */
			put16(b + 12, 0x88a8);
			put16(b + 14, 7);
			put16(b + 16, 0x8100);
			put16(b + 18, 42);
			put16(b + 20, et);
			return 22;
		}
		put16(b + 12, et);
		return 14;
	case DLT_LINUX_SLL:
		memset(b, 0, 16);
		put16(b + 0, 0); /* to us */
		put16(b + 2, 1); /* ARPHRD_ETHER */
		put16(b + 4, 6);
		put16(b + 14, et);
		return 16;
	case DLT_LINUX_SLL2:
		memset(b, 0, 20);
		put16(b + 0, et);
		b[7] = 3; /* ifindex */
		put16(b + 8, 1);
		b[11] = 6;
		return 20;
	case DLT_NULL: /* the writer's byte order: variant 0 little-endian, 1 big-endian */
		memset(b, 0, 4);
		b[variant ? 3 : 0] = ver == 4 ? 2 : (variant ? 24 : 30);
		return 4;
	case DLT_LOOP:
		memset(b, 0, 4);
		b[3] = ver == 4 ? 2 : 28;
		return 4;
	default: /* DLT_RAW, DLT_IPV4, DLT_IPV6 */
		return 0;
	}
}

static const struct link_case {
	int dlt, variant, v4, v6;
} link_cases[] = {
	{ DLT_EN10MB, 0, 1, 1 },    { DLT_EN10MB, 1, 1, 1 },	 { DLT_EN10MB, 2, 1, 1 },
	{ DLT_LINUX_SLL, 0, 1, 1 }, { DLT_LINUX_SLL2, 0, 1, 1 }, { DLT_NULL, 0, 1, 1 },
	{ DLT_NULL, 1, 1, 1 },	    { DLT_LOOP, 0, 1, 1 },	 { DLT_RAW, 0, 1, 1 },
	{ DLT_IPV4, 0, 1, 0 },	    { DLT_IPV6, 0, 0, 1 },
};

START_TEST(test_link_types)
{
	const struct link_case *c = &link_cases[_i];
	struct pcapio_stats st;
	struct got g = { 0 };
	uint8_t b[256];
	size_t n;
	int k = 0;

	hm_open(c->dlt, PCAP_TSTAMP_PRECISION_NANO);
	if (c->v4) {
		n = mk_link(b, c->dlt, 4, c->variant);
		n += mk_ip4(b + n, 17, 0x4000);
		hm_put(b, n, n, 1700000000, 5);
	}
	if (c->v6) {
		n = mk_link(b, c->dlt, 6, c->variant);
		n += mk_ip6(b + n, 17);
		hm_put(b, n, n, 1700000001, 999999999);
	}
	hm_close();
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, NULL, 0), 0);
	ck_assert_int_eq(g.n, c->v4 + c->v6);
	if (c->v4) {
		ck_assert_uint_eq(g.r[k].ns, 1700000000000000005ull);
		is_hm4(&g.r[k++]);
	}
	if (c->v6) {
		ck_assert_uint_eq(g.r[k].ns, 1700000001999999999ull);
		is_hm6(&g.r[k++]);
	}
	ck_assert_uint_eq(st.udp, (uint64_t)g.n);
	stats_sum_ok(&st);
	got_free(&g);
}
END_TEST

START_TEST(test_unsupported_link)
{
	uint8_t b[128] = { 0 };
	struct got g = { 0 };
	char err[256] = "";

	hm_open(DLT_PPP, PCAP_TSTAMP_PRECISION_MICRO);
	hm_put(b, 60, 60, 1, 0);
	hm_close();
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, NULL, err, sizeof(err)), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(err, "PPP"));
	ck_assert_int_eq(g.n, 0);
}
END_TEST

#define ETH(ver) (e = mk_link(b, DLT_EN10MB, (ver), 2))

/* Hostile packets 1-9 (b: 256 bytes): good UDP, other protocols, fragments, short captures. */
static void put_hostile_kinds(uint8_t *b)
{
	size_t n, e;

	/* 1 good UDP */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	hm_put(b, n, n, 1, 0);
	/* 2 TCP: not UDP */
	ETH(4), n = e + mk_ip4(b + e, 6, 0);
	hm_put(b, n, n, 1, 0);
	/* 3 ARP: not UDP */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	put16(b + 12, 0x0806);
	hm_put(b, n, n, 1, 0);
	/* 4 first fragment (MF): fragment */
	ETH(4), n = e + mk_ip4(b + e, 17, 0x2000);
	hm_put(b, n, n, 1, 0);
	/* 5 later fragment (offset): fragment */
	ETH(4), n = e + mk_ip4(b + e, 17, 0x0010);
	hm_put(b, n, n, 1, 0);
	/* 6 IPv6 fragment header: fragment */
	ETH(6), n = e + mk_ip6(b + e, 44);
	hm_put(b, n, n, 1, 0);
	/* 7 IPv6 hop-by-hop header: not UDP */
	ETH(6), n = e + mk_ip6(b + e, 0);
	hm_put(b, n, n, 1, 0);
	/* 8 IP total length past the captured bytes: truncated */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	put16(b + e + 2, (unsigned)(n - e + 100));
	hm_put(b, n, n, 1, 0);
	/* 9 caplen < len (snapped): truncated */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	hm_put(b, n - 5, n, 1, 0);
}

/* Hostile packets 10-17: bad header and UDP lengths, short frames, VLAN stacks, padding, IPv4 options. */
static void put_hostile_headers(uint8_t *b)
{
	size_t n, e;

	/* 10 IHL 4 (16 bytes): bad */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	b[e] = 0x44;
	hm_put(b, n, n, 1, 0);
	/* 11 UDP length 7: bad */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	put16(b + e + 24, 7);
	hm_put(b, n, n, 1, 0);
	/* 12 UDP length past the IP payload: truncated */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	put16(b + e + 24, 8 + HM_LEN + 1);
	hm_put(b, n, n, 1, 0);
	/* 13 frame shorter than the Ethernet header: truncated */
	hm_put(b, 10, 10, 1, 0);
	/* 14 three VLAN tags: not UDP */
	memset(b, 0, 12);
	put16(b + 12, 0x88a8), put16(b + 16, 0x8100), put16(b + 20, 0x8100), put16(b + 24, 0x0800);
	n = 26 + mk_ip4(b + 26, 17, 0);
	hm_put(b, n, n, 1, 0);
	/* 15 IPv6 header under the IPv4 type: bad */
	ETH(4), n = e + mk_ip6(b + e, 17);
	hm_put(b, n, n, 1, 0);
	/* 16 Ethernet padding after a 2-byte datagram: delivered, padding ignored */
	ETH(4), mk_ip4(b + e, 17, 0);
	put16(b + e + 2, 20 + 8 + 2);
	put16(b + e + 24, 8 + 2);
	memset(b + e + 30, 0xee, 30);
	hm_put(b, 60, 60, 2, 0);
	/* 17 IPv4 options (IHL 6): delivered */
	ETH(4), mk_ip4(b + e + 4, 17, 0);
	memmove(b + e, b + e + 4, 20);
	memset(b + e + 20, 1, 4); /* four NOPs */
	b[e] = 0x46;
	put16(b + e + 2, 24 + 8 + HM_LEN);
	n = e + 24 + 8 + HM_LEN;
	hm_put(b, n, n, 3, 0);
}

/* Hostile packets 18-26: lengths just past or below what was captured, IPv6 payload lengths. */
static void put_hostile_lengths(uint8_t *b)
{
	size_t n, e;

	/* 18 total length below the header length: bad */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	put16(b + e + 2, 19);
	hm_put(b, n, n, 1, 0);
	/* 19 IPv6 payload length past the captured bytes: truncated */
	ETH(6), n = e + mk_ip6(b + e, 17);
	put16(b + e + 4, 200);
	hm_put(b, n, n, 1, 0);
	/* 20 IPv6 UDP length 0 (jumbogram style): bad */
	ETH(6), n = e + mk_ip6(b + e, 17);
	put16(b + e + 44, 0);
	hm_put(b, n, n, 1, 0);
	/* 21 IPv6 payload shorter than a UDP header: bad */
	ETH(6), n = e + mk_ip6(b + e, 17);
	put16(b + e + 4, 4);
	hm_put(b, n, n, 1, 0);
	/* 22 zero-length record: truncated */
	hm_put(b, 0, 0, 1, 0);
	/* 23 IP total length one byte past the captured bytes: truncated */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	put16(b + e + 2, (unsigned)(n - e + 1));
	hm_put(b, n, n, 1, 0);
	/* 24 a whole datagram in a frame snapped in its padding (caplen < len): truncated all the same */
	ETH(4), n = e + mk_ip4(b + e, 17, 0);
	hm_put(b, n, n + 10, 1, 0);
	/* 25 IPv6 payload length one byte past the captured bytes: truncated */
	ETH(6), n = e + mk_ip6(b + e, 17);
	put16(b + e + 4, (unsigned)(n - e - 40 + 1));
	hm_put(b, n, n, 1, 0);
	/* 26 frame ending inside its VLAN tag: truncated */
	mk_link(b, DLT_EN10MB, 4, 0);
	hm_put(b, 16, 16, 1, 0);
}
#undef ETH

/* Hostile packets in an Ethernet capture, each counted in its field; only whole unfragmented UDP
 * reaches the callback. */
START_TEST(test_hostile_packets)
{
	struct pcapio_stats st;
	struct got g = { 0 };
	uint8_t b[256];

	hm_open(DLT_EN10MB, PCAP_TSTAMP_PRECISION_MICRO);
	put_hostile_kinds(b);
	put_hostile_headers(b);
	put_hostile_lengths(b);
	hm_close();

	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, NULL, 0), 0);
	ck_assert_uint_eq(st.packets, 26);
	ck_assert_uint_eq(st.udp, 3);
	ck_assert_uint_eq(st.skipped_not_udp, 4); /* 2 3 7 14 */
	ck_assert_uint_eq(st.skipped_fragment, 3); /* 4 5 6 */
	ck_assert_uint_eq(st.skipped_truncated, 10); /* 8 9 12 13 19 22-26 */
	ck_assert_uint_eq(st.skipped_bad, 6); /* 10 11 15 18 20 21 */
	ck_assert_uint_eq(st.skipped_port, 0);
	stats_sum_ok(&st);
	ck_assert_int_eq(g.n, 3);
	is_hm4(&g.r[0]);
	ck_assert_uint_eq(g.r[1].len, 2);
	ck_assert_int_eq(memcmp(g.r[1].data, "ha", 2), 0);
	ck_assert_uint_eq(g.r[1].ns, 2000000000ull);
	is_hm4(&g.r[2]);
	ck_assert_uint_eq(g.r[2].ns, 3000000000ull);
	got_free(&g);
}
END_TEST

static int count_only(void *ctx, uint64_t ns, const struct sockaddr *src,
		      const struct sockaddr *dst, const void *payload, size_t len)
{
	ck_assert_uint_le(len, PCAPIO_MAX_PAYLOAD);
	(*(int *)ctx)++;
	return 0;
}

/* Random bytes behind a valid header of every link type: no crash, every record counted. */
START_TEST(test_random_frames)
{
	static const int dlts[] = { DLT_RAW,	   DLT_IPV4,	   DLT_IPV6, DLT_EN10MB,
				    DLT_LINUX_SLL, DLT_LINUX_SLL2, DLT_NULL, DLT_LOOP };
	static const size_t ip_at[] = { 0, 0, 0, 14, 16, 20, 4, 4 };
	uint8_t b[128];
	unsigned seed = 12345;

	for (size_t d = 0; d < sizeof(dlts) / sizeof(dlts[0]); d++) {
		struct pcapio_stats st;
		int n_cb = 0;

		hm_open(dlts[d], PCAP_TSTAMP_PRECISION_NANO);
		for (int i = 0; i < 2000; i++) {
			size_t n = (size_t)(rand_r(&seed) % (int)sizeof(b));

			for (size_t j = 0; j < n; j++)
				b[j] = (uint8_t)rand_r(&seed);
			/* make the IP version plausible half of the time */
			if (n > 24 && (i & 1))
				b[ip_at[d]] = (uint8_t)(i & 2 ? 0x45 : 0x60);
			hm_put(b, n, n, 1, 0);
		}
		hm_close();
		ck_assert_int_eq(pcapio_replay(path, 0, count_only, &n_cb, &st, NULL, 0), 0);
		ck_assert_uint_eq(st.packets, 2000);
		ck_assert_uint_eq(st.udp, (uint64_t)n_cb);
		stats_sum_ok(&st);
	}
}
END_TEST

START_TEST(test_bit_flips)
{
	/* one bit flipped in a valid packet, 5000 times: more datagrams than MAXREC come out, count them */
	uint8_t b[128];
	unsigned seed = 777;
	struct pcapio_stats st;
	int n_cb = 0;

	hm_open(DLT_RAW, PCAP_TSTAMP_PRECISION_NANO);
	for (int i = 0; i < 5000; i++) {
		size_t n = mk_ip4(b, 17, 0);

		b[rand_r(&seed) % n] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
		hm_put(b, n, n, 1, 0);
	}
	hm_close();
	ck_assert_int_eq(pcapio_replay(path, 0, count_only, &n_cb, &st, NULL, 0), 0);
	ck_assert_uint_eq(st.packets, 5000);
	ck_assert_uint_eq(st.udp, (uint64_t)n_cb);
	ck_assert_uint_gt(st.udp, 0);
	stats_sum_ok(&st);
}
END_TEST

/* A microsecond pcap: timestamps come back in nanoseconds. */
START_TEST(test_microsecond_pcap)
{
	struct got g = { 0 };
	uint8_t b[128];
	size_t n;

	hm_open(DLT_RAW, PCAP_TSTAMP_PRECISION_MICRO);
	n = mk_ip4(b, 17, 0);
	hm_put(b, n, n, 1700000000, 123456);
	hm_put(b, n, n, 2147483648l, 1); /* past 2038: libpcap 1.10 reads it back negative */
	hm_close();
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, NULL, NULL, 0), 0);
	ck_assert_int_eq(g.n, 2);
	ck_assert_uint_eq(g.r[0].ns, 1700000000123456000ull);
	ck_assert_uint_eq(g.r[1].ns, 2147483648000001000ull);
	is_hm4(&g.r[0]);
	got_free(&g);
}
END_TEST

static size_t le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8), p[2] = (uint8_t)(v >> 16),
	p[3] = (uint8_t)(v >> 24);
	return 4;
}

/* pcapng, built by hand: SHB, IDB (RAW; if_tsresol 9 when nsres, else the default microseconds), one EPB
 * per packet. */
START_TEST(test_pcapng)
{
	uint8_t f[512], pkt[128];
	size_t o = 0, n, blk;
	int nsres = _i;
	uint64_t ts = nsres ? 1700000000123456789ull : 1700000000123456ull;
	struct got g = { 0 };
	struct pcapio_stats st;

	/* section header */
	o += le32(f + o, 0x0a0d0d0a);
	o += le32(f + o, 28);
	o += le32(f + o, 0x1a2b3c4d);
	o += le32(f + o, 1); /* major 1, minor 0 */
	o += le32(f + o, 0xffffffff);
	o += le32(f + o, 0xffffffff); /* section length unknown */
	o += le32(f + o, 28);
	/* interface description */
	blk = nsres ? 32 : 20;
	o += le32(f + o, 1);
	o += le32(f + o, (uint32_t)blk);
	o += le32(f + o, 101); /* LINKTYPE_RAW, reserved 0 */
	o += le32(f + o, 0); /* snaplen: none */
	if (nsres) {
		o += le32(f + o, 9 | 1u << 16); /* if_tsresol, length 1 */
		o += le32(f + o, 9); /* 10^-9, padded */
		o += le32(f + o, 0); /* opt_endofopt */
	}
	o += le32(f + o, (uint32_t)blk);
	/* enhanced packets: an IPv4 and an IPv6 datagram */
	for (int v = 4; v <= 6; v += 2) {
		n = v == 4 ? mk_ip4(pkt, 17, 0) : mk_ip6(pkt, 17);
		blk = 32 + ((n + 3) & ~(size_t)3);
		o += le32(f + o, 6);
		o += le32(f + o, (uint32_t)blk);
		o += le32(f + o, 0);
		o += le32(f + o, (uint32_t)(ts >> 32));
		o += le32(f + o, (uint32_t)ts);
		o += le32(f + o, (uint32_t)n);
		o += le32(f + o, (uint32_t)n);
		memset(f + o, 0, (n + 3) & ~(size_t)3);
		memcpy(f + o, pkt, n);
		o += (n + 3) & ~(size_t)3;
		o += le32(f + o, (uint32_t)blk);
		ts++;
	}
	write_bytes(path, f, o);
	ck_assert_int_eq(pcapio_replay(path, 0, collect, &g, &st, NULL, 0), 0);
	ck_assert_int_eq(g.n, 2);
	is_hm4(&g.r[0]);
	is_hm6(&g.r[1]);
	ck_assert_uint_eq(g.r[0].ns, nsres ? 1700000000123456789ull : 1700000000123456000ull);
	ck_assert_uint_eq(g.r[1].ns, nsres ? 1700000000123456790ull : 1700000000123457000ull);
	got_free(&g);
}
END_TEST

START_TEST(test_stdin)
{
	struct got g = { 0 };
	int fd, saved;

	write_dgs(path, dgs6, N(dgs6));
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	saved = dup(0);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_eq(dup2(fd, 0), 0);
	close(fd);
	ck_assert_int_eq(pcapio_replay("-", 0, collect, &g, NULL, NULL, 0), 0);
	ck_assert_int_eq(dup2(saved, 0), 0);
	close(saved);
	ck_assert_int_eq(g.n, N(dgs6));
	for (int i = 0; i < g.n; i++)
		rec_is(&g, i, dgs6, i);
	got_free(&g);
}
END_TEST

static Suite *pcapio_suite(void)
{
	Suite *s = suite_create("pcapio");
	TCase *tc;

	tc = tcase_create("roundtrip");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_round_trip_v4);
	tcase_add_test(tc, test_round_trip_v6);
	tcase_add_test(tc, test_round_trip_mixed);
	tcase_add_test(tc, test_empty_capture);
	tcase_add_test(tc, test_writer_args);
	tcase_add_test(tc, test_write_error);
	tcase_add_test(tc, test_port_filter);
	tcase_add_test(tc, test_callback_stops);
	tcase_add_test(tc, test_stdin);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_cut_everywhere);
	tcase_add_test(tc, test_not_a_capture);
	tcase_add_test(tc, test_unsupported_link);
	tcase_add_test(tc, test_microsecond_pcap);
	tcase_add_loop_test(tc, test_pcapng, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("links");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, test_link_types, 0,
			    (int)(sizeof(link_cases) / sizeof(link_cases[0])));
	tcase_add_test(tc, test_hostile_packets);
	tcase_add_test(tc, test_random_frames);
	tcase_add_test(tc, test_bit_flips);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(pcapio_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
