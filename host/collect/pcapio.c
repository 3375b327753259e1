/* SPDX-License-Identifier: MIT */
/*
 * pcapio: write the collector's UDP datagrams as a pcap capture and replay pcap/pcapng captures (see
 * pcapio.h). libpcap does the file formats; this file builds the IP and UDP headers on the way out and, on
 * the way in, peels the link header and checks every IP and UDP length against the captured bytes before
 * trusting it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <pcap/pcap.h>
#include "collect/pcapio.h"
#include "util/log.h"
#include "util/outfile.h"

#define NSEC_PER_SEC 1000000000ull
#define IP4_HDR_LEN 20u
#define IP6_HDR_LEN 40u
#define UDP_HDR_LEN 8u
#define PKT_MAX (IP6_HDR_LEN + UDP_HDR_LEN + PCAPIO_MAX_PAYLOAD)
#define SNAPLEN 262144 /* libpcap's and tcpdump's maximum: above every packet we write */
#define IPPROTO_UDP_NUM 17
#define IP6_NH_FRAGMENT 44
#define ETH_HDR_LEN 14u
#define VLAN_TAG_LEN 4u
#define VLAN_MAX_TAGS 2
#define SLL_HDR_LEN_ 16u
#define SLL2_HDR_LEN_ 20u
#define NULL_HDR_LEN 4u

struct pcapio_w {
	pcap_t *dead; /* libpcap's handle for the link type and precision */
	pcap_dumper_t *dump; /* owns the FILE */
	uint16_t ip_id; /* IPv4 identification, counting */
	uint8_t pkt[PKT_MAX]; /* the packet being framed */
};

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* Internet checksum (RFC 1071): add n bytes as big-endian 16-bit words, an odd last byte padded. */
static uint64_t csum_add(uint64_t sum, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += get16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static uint16_t csum_fold(uint64_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

struct pcapio_w *pcapio_create(const char *path, char *err, size_t errlen)
{
	struct pcapio_w *w = NULL;
	FILE *f = NULL;
	int e = 0, fd;

	if (!path) {
		e = EINVAL;
		log_reason(err, errlen, "no capture file name");
		goto out;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		e = errno;
		log_reason(err, errlen, "%s: out of memory", path);
		goto out;
	}
	w->dead =
	    pcap_open_dead_with_tstamp_precision(DLT_RAW, SNAPLEN, PCAP_TSTAMP_PRECISION_NANO);
	if (!w->dead) {
		e = ENOMEM;
		log_reason(err, errlen, "%s: libpcap: cannot create a handle", path);
		goto out;
	}
	/* streamed in place (a killed collector leaves its packets readable); other nodes' data: 0600 */
	fd = outfile_open(path, O_TRUNC, OUTFILE_MODE_PRIVATE);
	if (fd < 0) {
		e = -fd;
		log_reason(err, errlen, "%s: %s", path, outfile_strerror(fd));
		goto out;
	}
	f = fdopen(fd, "wb");
	if (!f) {
		e = errno;
		close(fd);
		log_reason(err, errlen, "%s: %s", path, strerror(e));
		goto out;
	}
	/* DLT_RAW is a savefile link type, so the only failure is the header write, after which libpcap
	 * has closed f. */
	w->dump = pcap_dump_fopen(w->dead, f);
	f = NULL;
	if (!w->dump) {
		e = EIO;
		log_reason(err, errlen, "%s: %s", path, pcap_geterr(w->dead));
		goto out;
	}
out:
	if (e) {
		if (f)
			fclose(f);
		pcapio_close(w);
		errno = e;
		return NULL;
	}
	return w;
}

/* IPv4 header and UDP header at w->pkt for a payload already copied behind them; the packet length. */
static size_t frame4(struct pcapio_w *w, const struct sockaddr_in *s, const struct sockaddr_in *d,
		     size_t len)
{
	uint8_t *ip = w->pkt, *udp = ip + IP4_HDR_LEN;
	size_t ulen = UDP_HDR_LEN + len;
	uint64_t sum;
	uint16_t c;

	ip[0] = 0x45; /* version 4, 5 words */
	ip[1] = 0;
	put16(ip + 2, (uint32_t)(IP4_HDR_LEN + ulen));
	put16(ip + 4, w->ip_id++);
	put16(ip + 6, 0x4000); /* DF, offset 0 */
	ip[8] = 64;
	ip[9] = IPPROTO_UDP_NUM;
	put16(ip + 10, 0);
	memcpy(ip + 12, &s->sin_addr, 4);
	memcpy(ip + 16, &d->sin_addr, 4);
	put16(ip + 10, csum_fold(csum_add(0, ip, IP4_HDR_LEN)));

	memcpy(udp, &s->sin_port, 2);
	memcpy(udp + 2, &d->sin_port, 2);
	put16(udp + 4, (uint32_t)ulen);
	put16(udp + 6, 0);
	sum = csum_add(IPPROTO_UDP_NUM + ulen, ip + 12,
		       8); /* pseudo header: addresses, proto, length */
	c = csum_fold(csum_add(sum, udp, ulen));
	put16(udp + 6, c ? c : 0xffff);
	return IP4_HDR_LEN + ulen;
}

static size_t frame6(struct pcapio_w *w, const struct sockaddr_in6 *s, const struct sockaddr_in6 *d,
		     size_t len)
{
	uint8_t *ip = w->pkt, *udp = ip + IP6_HDR_LEN;
	size_t ulen = UDP_HDR_LEN + len;
	uint64_t sum;
	uint16_t c;

	memset(ip, 0, 4); /* version 6, traffic class and flow label 0 */
	ip[0] = 0x60;
	put16(ip + 4, (uint32_t)ulen);
	ip[6] = IPPROTO_UDP_NUM;
	ip[7] = 64;
	memcpy(ip + 8, &s->sin6_addr, 16);
	memcpy(ip + 24, &d->sin6_addr, 16);

	memcpy(udp, &s->sin6_port, 2);
	memcpy(udp + 2, &d->sin6_port, 2);
	put16(udp + 4, (uint32_t)ulen);
	put16(udp + 6, 0);
	sum = csum_add(IPPROTO_UDP_NUM + ulen, ip + 8, 32);
	c = csum_fold(csum_add(sum, udp, ulen));
	put16(udp + 6, c ? c : 0xffff); /* mandatory in IPv6 */
	return IP6_HDR_LEN + ulen;
}

int pcapio_write(struct pcapio_w *w, uint64_t realtime_ns, const struct sockaddr *src,
		 const struct sockaddr *dst, const void *payload, size_t len)
{
	struct pcap_pkthdr h;
	uint64_t sec = realtime_ns / NSEC_PER_SEC;
	size_t n;
	FILE *f;

	if (!w || !src || !dst || (len && !payload))
		return -EINVAL;
	if (src->sa_family != dst->sa_family ||
	    (src->sa_family != AF_INET && src->sa_family != AF_INET6))
		return -EAFNOSUPPORT;
	if (len > PCAPIO_MAX_PAYLOAD)
		return -EMSGSIZE;
	if (sec > INT32_MAX)
		return -ERANGE;
	f = pcap_dump_file(w->dump);
	if (ferror(f))
		return -EIO;

	if (src->sa_family == AF_INET) {
		if (len)
			memcpy(w->pkt + IP4_HDR_LEN + UDP_HDR_LEN, payload, len);
		n = frame4(w, (const struct sockaddr_in *)src, (const struct sockaddr_in *)dst,
			   len);
	} else {
		if (len)
			memcpy(w->pkt + IP6_HDR_LEN + UDP_HDR_LEN, payload, len);
		n = frame6(w, (const struct sockaddr_in6 *)src, (const struct sockaddr_in6 *)dst,
			   len);
	}
	memset(&h, 0, sizeof(h));
	h.ts.tv_sec = (time_t)sec;
	h.ts.tv_usec =
	    (suseconds_t)(realtime_ns % NSEC_PER_SEC); /* nanoseconds in a NANO savefile */
	h.caplen = (bpf_u_int32)n;
	h.len = (bpf_u_int32)n;
	errno = 0;
	pcap_dump((u_char *)w->dump, &h, w->pkt);
	if (ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

int pcapio_flush(struct pcapio_w *w)
{
	FILE *f;

	if (!w)
		return -EINVAL;
	f = pcap_dump_file(w->dump);
	if (fflush(f) == EOF)
		return errno ? -errno : -EIO;
	if (ferror(f))
		return -EIO;
	return 0;
}

void pcapio_close(struct pcapio_w *w)
{
	if (!w)
		return;
	if (w->dump)
		pcap_dump_close(w->dump);
	if (w->dead)
		pcap_close(w->dead);
	free(w);
}

/* ---- replay ---- */

enum pkt_class { PKT_UDP, PKT_NOT_UDP, PKT_FRAGMENT, PKT_TRUNCATED, PKT_BAD };

union sockaddr_ip {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
};

struct udp_dgram {
	union sockaddr_ip src, dst;
	uint16_t dport; /* host order, for the filter */
	const uint8_t *payload;
	size_t len;
};

/* The UDP header and payload in the n bytes of IP payload at p (the packet is neither a fragment nor
 * short); fills ports and payload. */
static enum pkt_class parse_udp(const uint8_t *p, size_t n, struct udp_dgram *u)
{
	size_t ulen;

	if (n < UDP_HDR_LEN)
		return PKT_BAD; /* the IP packet is whole but too small for UDP */
	ulen = get16(p + 4);
	if (ulen < UDP_HDR_LEN)
		return PKT_BAD;
	if (ulen > n)
		return PKT_TRUNCATED;
	u->dport = get16(p + 2);
	u->payload = p + UDP_HDR_LEN;
	u->len = ulen -
		 UDP_HDR_LEN; /* bytes after ulen (padding) are ignored, as the kernel trims them */
	return PKT_UDP;
}

static enum pkt_class parse_ip4(const uint8_t *p, size_t n, struct udp_dgram *u)
{
	size_t ihl, tot;
	enum pkt_class c;

	if (n < IP4_HDR_LEN)
		return PKT_TRUNCATED;
	if (p[0] >> 4 != 4)
		return PKT_BAD;
	ihl = (size_t)(p[0] & 0xf) * 4;
	tot = get16(p + 2);
	if (ihl < IP4_HDR_LEN || tot < ihl)
		return PKT_BAD;
	if (tot > n)
		return PKT_TRUNCATED; /* bytes past tot (Ethernet padding) are ignored */
	if (p[9] != IPPROTO_UDP_NUM)
		return PKT_NOT_UDP;
	if (get16(p + 6) & 0x3fff) /* more fragments, or an offset */
		return PKT_FRAGMENT;
	c = parse_udp(p + ihl, tot - ihl, u);
	if (c != PKT_UDP)
		return c;
	u->src.in.sin_family = AF_INET;
	u->dst.in.sin_family = AF_INET;
	memcpy(&u->src.in.sin_addr, p + 12, 4);
	memcpy(&u->dst.in.sin_addr, p + 16, 4);
	memcpy(&u->src.in.sin_port, p + ihl, 2);
	memcpy(&u->dst.in.sin_port, p + ihl + 2, 2);
	return PKT_UDP;
}

static enum pkt_class parse_ip6(const uint8_t *p, size_t n, struct udp_dgram *u)
{
	size_t plen;
	enum pkt_class c;

	if (n < IP6_HDR_LEN)
		return PKT_TRUNCATED;
	if (p[0] >> 4 != 6)
		return PKT_BAD;
	plen = get16(p + 4);
	if (plen > n - IP6_HDR_LEN)
		return PKT_TRUNCATED;
	if (p[6] == IP6_NH_FRAGMENT)
		return PKT_FRAGMENT;
	if (p[6] != IPPROTO_UDP_NUM)
		return PKT_NOT_UDP; /* TCP, ICMPv6, or an extension header we do not walk */
	c = parse_udp(p + IP6_HDR_LEN, plen, u);
	if (c != PKT_UDP)
		return c;
	u->src.in6.sin6_family = AF_INET6;
	u->dst.in6.sin6_family = AF_INET6;
	memcpy(&u->src.in6.sin6_addr, p + 8, 16);
	memcpy(&u->dst.in6.sin6_addr, p + 24, 16);
	memcpy(&u->src.in6.sin6_port, p + IP6_HDR_LEN, 2);
	memcpy(&u->dst.in6.sin6_port, p + IP6_HDR_LEN + 2, 2);
	return PKT_UDP;
}

/* IP after an Ethernet type field (EN10MB, SLL, SLL2): up to two VLAN tags, then IPv4 or IPv6. */
static enum pkt_class parse_ethertype(uint16_t type, const uint8_t *p, size_t n,
				      struct udp_dgram *u)
{
	int tags;

	for (tags = 0; type == 0x8100 || type == 0x88a8 || type == 0x9100; tags++) {
		if (tags == VLAN_MAX_TAGS)
			return PKT_NOT_UDP;
		if (n < VLAN_TAG_LEN)
			return PKT_TRUNCATED;
		type = get16(p + 2);
		p += VLAN_TAG_LEN;
		n -= VLAN_TAG_LEN;
	}
	if (type == 0x0800)
		return parse_ip4(p, n, u);
	if (type == 0x86dd)
		return parse_ip6(p, n, u);
	return PKT_NOT_UDP;
}

/* BSD loopback address family (NULL: the writer's byte order, LOOP: network order) to an IP version. */
static int af_to_version(uint32_t af)
{
	switch (af) {
	case 2: /* AF_INET everywhere */
		return 4;
	case 10: /* Linux */
	case 24: /* NetBSD, OpenBSD, BSD/OS */
	case 28: /* FreeBSD, DragonFly */
	case 30: /* Darwin */
		return 6;
	default:
		return 0;
	}
}

static bool dlt_supported(int dlt)
{
	switch (dlt) {
	case DLT_RAW:
	case DLT_IPV4:
	case DLT_IPV6:
	case DLT_EN10MB:
	case DLT_LINUX_SLL:
	case DLT_LINUX_SLL2:
	case DLT_NULL:
	case DLT_LOOP:
		return true;
	default:
		return false;
	}
}

/* One captured frame of n bytes (the whole frame was captured) of link type dlt. */
static enum pkt_class parse_frame(int dlt, const uint8_t *p, size_t n, struct udp_dgram *u)
{
	uint32_t af;
	int ver;

	switch (dlt) {
	case DLT_RAW:
		if (n < 1)
			return PKT_TRUNCATED;
		if (p[0] >> 4 == 4)
			return parse_ip4(p, n, u);
		if (p[0] >> 4 == 6)
			return parse_ip6(p, n, u);
		return PKT_BAD;
	case DLT_IPV4:
		return parse_ip4(p, n, u);
	case DLT_IPV6:
		return parse_ip6(p, n, u);
	case DLT_EN10MB:
		if (n < ETH_HDR_LEN)
			return PKT_TRUNCATED;
		return parse_ethertype(get16(p + 12), p + ETH_HDR_LEN, n - ETH_HDR_LEN, u);
	case DLT_LINUX_SLL:
		if (n < SLL_HDR_LEN_)
			return PKT_TRUNCATED;
		return parse_ethertype(get16(p + 14), p + SLL_HDR_LEN_, n - SLL_HDR_LEN_, u);
	case DLT_LINUX_SLL2:
		if (n < SLL2_HDR_LEN_)
			return PKT_TRUNCATED;
		return parse_ethertype(get16(p), p + SLL2_HDR_LEN_, n - SLL2_HDR_LEN_, u);
	case DLT_NULL:
	case DLT_LOOP:
		if (n < NULL_HDR_LEN)
			return PKT_TRUNCATED;
		af = get32(p);
		if (dlt == DLT_NULL && af > 0xffff) /* written little-endian */
			af = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			     (uint32_t)p[3] << 24;
		ver = af_to_version(af);
		if (ver == 4)
			return parse_ip4(p + NULL_HDR_LEN, n - NULL_HDR_LEN, u);
		if (ver == 6)
			return parse_ip6(p + NULL_HDR_LEN, n - NULL_HDR_LEN, u);
		return PKT_NOT_UDP;
	default:
		return PKT_NOT_UDP;
	}
}

/* Classify one record and count it; fn's return value, or 0. */
static int replay_one(int dlt, const struct pcap_pkthdr *h, const u_char *data, uint16_t port,
		      pcapio_fn *fn, void *ctx, struct pcapio_stats *st)
{
	struct udp_dgram u;
	uint64_t sec, ns;

	st->packets++;
	if (h->caplen < h->len) {
		st->skipped_truncated++;
		return 0;
	}
	memset(&u, 0, sizeof(u));
	switch (parse_frame(dlt, data, h->caplen, &u)) {
	case PKT_UDP:
		break;
	case PKT_NOT_UDP:
		st->skipped_not_udp++;
		return 0;
	case PKT_FRAGMENT:
		st->skipped_fragment++;
		return 0;
	case PKT_TRUNCATED:
		st->skipped_truncated++;
		return 0;
	case PKT_BAD:
	default:
		st->skipped_bad++;
		return 0;
	}
	if (port && u.dport != port) {
		st->skipped_port++;
		return 0;
	}
	st->udp++;
	/* libpcap 1.10 reads pcap seconds as signed 32 bits: a negative value is a time after 2038 */
	sec = h->ts.tv_sec < 0 ? (uint32_t)h->ts.tv_sec : (uint64_t)h->ts.tv_sec;
	ns = sec * NSEC_PER_SEC + (uint64_t)h->ts.tv_usec; /* nanoseconds: the handle is NANO */
	return fn(ctx, ns, &u.src.sa, &u.dst.sa, u.payload, u.len);
}

int pcapio_replay(const char *path, uint16_t port, pcapio_fn *fn, void *ctx,
		  struct pcapio_stats *st, char *err, size_t errlen)
{
	char ebuf[PCAP_ERRBUF_SIZE] = "";
	struct pcapio_stats local;
	struct pcap_pkthdr *h;
	const u_char *data;
	const char *name;
	struct stat sb;
	pcap_t *p = NULL;
	FILE *f = NULL;
	int r = 0, dlt, n;

	if (!st)
		st = &local;
	memset(st, 0, sizeof(*st));
	if (!path || !fn) {
		r = -EINVAL;
		log_reason(err, errlen, "no capture file or callback");
		goto out;
	}
	name = strcmp(path, "-") ? path : "standard input";
	f = strcmp(path, "-") ? fopen(path, "rbe") : stdin;
	if (!f) {
		r = -errno;
		log_reason(err, errlen, "%s: %s", name, strerror(-r));
		goto out;
	}
	if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) {
		r = -EISDIR;
		log_reason(err, errlen, "%s: %s", name, strerror(-r));
		goto out;
	}
	p = pcap_fopen_offline_with_tstamp_precision(f, PCAP_TSTAMP_PRECISION_NANO, ebuf);
	if (!p) {
		r = ferror(f) ? -EIO : -EBADMSG;
		log_reason(err, errlen, "%s: not a pcap or pcapng capture: %s", name, ebuf);
		goto out;
	}
	f = NULL; /* libpcap's now: pcap_close closes it (never stdin) */
	dlt = pcap_datalink(p);
	if (!dlt_supported(dlt)) {
		const char *dn = pcap_datalink_val_to_name(dlt);

		r = -ENOTSUP;
		log_reason(err, errlen, "%s: link type %s (%d) not supported", name,
			   dn ? dn : "unknown", dlt);
		goto out;
	}
	for (;;) {
		n = pcap_next_ex(p, &h, &data);
		if (n == PCAP_ERROR_BREAK) /* end of file */
			break;
		if (n != 1) {
			r = ferror(pcap_file(p)) ? -EIO : -EBADMSG;
			log_reason(err, errlen, "%s: after %llu records: %s", name,
				   (unsigned long long)st->packets, pcap_geterr(p));
			goto out;
		}
		r = replay_one(dlt, h, data, port, fn, ctx, st);
		if (r)
			goto out;
	}
out:
	if (p)
		pcap_close(p);
	else if (f && f != stdin)
		fclose(f);
	return r;
}
