/* SPDX-License-Identifier: MIT */
/*
 * tapflow: per-period flow tables of a domain's tap device from a live libpcap capture (see tapflow.h).
 * The parser peels Ethernet, up to two VLAN tags, IPv4 or IPv6 (with its extension headers) and reads the
 * ports, checking every offset against the captured bytes first; the table is open addressing over a fixed
 * array. The capture reads both directions through two handles, converts libpcap's CLOCK_REALTIME stamps to
 * CLOCK_MONOTONIC and cuts periods on the frames' own times.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pcap/pcap.h>
#include "net/tapflow.h"
#include "util/log.h"

#define ETH_HLEN_ 14u
#define VLAN_TAG_LEN 4u
#define VLAN_MAX_TAGS 2
#define ET_IPV4 0x0800u
#define ET_IPV6 0x86ddu
#define ET_ARP 0x0806u
#define ET_VLAN 0x8100u
#define ET_QINQ 0x88a8u
#define ET_MIN 0x0600u /* below: an 802.3 length field, not an ethertype */
#define IP4_MIN 20u
#define IP6_LEN 40u
#define IP6_MAX_EXT 8 /* extension headers walked at most */
#define P_ICMP 1
#define P_TCP 6
#define P_UDP 17
#define P_DCCP 33
#define P_ICMP6 58
#define P_SCTP 132
#define P_UDPLITE 136
#define NSEC_PER_SEC 1000000000ull

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* ---- parsing ---- */

static bool has_ports(uint8_t proto)
{
	return proto == P_TCP || proto == P_UDP || proto == P_DCCP || proto == P_SCTP ||
	       proto == P_UDPLITE;
}

/* Ports (or ICMP type and code) of the transport header at l4 with avail bytes captured and wire bytes
 * that the IP header says are there. */
static void l4_key(struct vn_host_flow *k, const uint8_t *l4, size_t avail, size_t wire)
{
	size_t need = has_ports(k->proto) ? 4 : k->proto == P_ICMP || k->proto == P_ICMP6 ? 2 : 0;

	if (!need)
		return;
	if (need > avail || need > wire) {
		k->flags |= VN_HOST_FLOW_F_TRUNC;
		return;
	}
	if (need == 4) {
		k->sport = get16(l4);
		k->dport = get16(l4 + 2);
	} else {
		k->sport = l4[0];
		k->dport = l4[1];
	}
}

static void ip4_key(struct vn_host_flow *k, const uint8_t *ip, size_t avail)
{
	size_t ihl, tot;

	if (avail < IP4_MIN || ip[0] >> 4 != 4 || (ip[0] & 15) < 5) {
		k->flags |= VN_HOST_FLOW_F_TRUNC; /* cut, or not IPv4 inside: the ethertype alone */
		return;
	}
	ihl = (size_t)(ip[0] & 15) * 4;
	tot = get16(ip + 2);
	k->ipver = 4;
	k->proto = ip[9];
	memcpy(k->src, ip + 12, 4);
	memcpy(k->dst, ip + 16, 4);
	if (get16(ip + 6) & 0x1fff) {
		k->flags |= VN_HOST_FLOW_F_FRAG; /* not the first fragment: no transport header */
		return;
	}
	if (tot < ihl) {
		k->flags |= VN_HOST_FLOW_F_TRUNC; /* a length that lies */
		return;
	}
	if (ihl > avail) {
		l4_key(k, NULL, 0,
		       0); /* options cut: only a protocol with ports or type misses them */
		return;
	}
	l4_key(k, ip + ihl, avail - ihl, tot - ihl);
}

static void ip6_key(struct vn_host_flow *k, const uint8_t *ip, size_t avail)
{
	size_t off = IP6_LEN, wire, hl;
	uint8_t nh;
	int i;

	if (avail < IP6_LEN || ip[0] >> 4 != 6) {
		k->flags |= VN_HOST_FLOW_F_TRUNC;
		return;
	}
	k->ipver = 6;
	memcpy(k->src, ip + 8, 16);
	memcpy(k->dst, ip + 24, 16);
	nh = ip[6];
	wire = IP6_LEN + get16(ip + 4); /* payload length 0 (jumbogram): trust the captured bytes */
	if (wire == IP6_LEN)
		wire = SIZE_MAX;
	for (i = 0;; i++) {
		const uint8_t *h = ip + off;

		k->proto = nh;
		if (nh != 0 && nh != 43 && nh != 44 && nh != 51 && nh != 60)
			break; /* a transport (or unknown, or 59 no next header) */
		if (i == IP6_MAX_EXT || off + 8 > avail || off + 8 > wire) {
			k->flags |= VN_HOST_FLOW_F_TRUNC;
			return;
		}
		if (nh == 44) { /* fragment header: 8 bytes */
			if (get16(h + 2) & 0xfff8) {
				k->proto = h[0];
				k->flags |= VN_HOST_FLOW_F_FRAG;
				return;
			}
			hl = 8;
		} else if (nh == 51) { /* AH: (len + 2) 4-byte words */
			hl = ((size_t)h[1] + 2) * 4;
		} else {
			hl = ((size_t)h[1] + 1) * 8;
		}
		nh = h[0];
		off += hl;
	}
	if (off > avail || off > wire) {
		k->flags |= VN_HOST_FLOW_F_TRUNC;
		return;
	}
	l4_key(k, ip + off, avail - off, wire == SIZE_MAX ? SIZE_MAX : wire - off);
}

void tapflow_key(const uint8_t *frame, size_t caplen, unsigned dir, struct vn_host_flow *k)
{
	size_t off = ETH_HLEN_;
	uint16_t et;
	int tags = 0;

	memset(k, 0, sizeof(*k));
	k->dir = (uint8_t)dir;
	k->kind = VN_HOST_FLOW_KIND_FLOW;
	if (!frame || caplen < ETH_HLEN_) {
		k->flags = VN_HOST_FLOW_F_TRUNC;
		return;
	}
	et = get16(frame + 12);
	while ((et == ET_VLAN || et == ET_QINQ) && tags < VLAN_MAX_TAGS) {
		if (off + VLAN_TAG_LEN > caplen) {
			k->ethertype = et;
			k->flags = VN_HOST_FLOW_F_TRUNC;
			return;
		}
		et = get16(frame + off + 2);
		off += VLAN_TAG_LEN;
		tags++;
	}
	k->ethertype = et < ET_MIN ? 0 : et;
	if (et == ET_IPV4)
		ip4_key(k, frame + off, caplen - off);
	else if (et == ET_IPV6)
		ip6_key(k, frame + off, caplen - off);
}

/* ---- the table ---- */

static bool key_eq(const struct vn_host_flow *a, const struct vn_host_flow *b)
{
	return a->dir == b->dir && a->ipver == b->ipver && a->proto == b->proto &&
	       a->ethertype == b->ethertype && a->sport == b->sport && a->dport == b->dport &&
	       a->flags == b->flags && !memcmp(a->src, b->src, sizeof(a->src)) &&
	       !memcmp(a->dst, b->dst, sizeof(a->dst));
}

static uint32_t fnv(uint32_t h, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n--)
		h = (h ^ *b++) * 16777619u;
	return h;
}

static uint32_t key_hash(const struct vn_host_flow *k)
{
	uint32_t h = 2166136261u;

	h = fnv(h, &k->dir, 1);
	h = fnv(h, &k->ipver, 1);
	h = fnv(h, &k->proto, 1);
	h = fnv(h, &k->ethertype, 2);
	h = fnv(h, &k->sport, 2);
	h = fnv(h, &k->dport, 2);
	h = fnv(h, &k->flags, 2);
	h = fnv(h, k->src, sizeof(k->src));
	return fnv(h, k->dst, sizeof(k->dst));
}

void tapflow_tab_reset(struct tapflow_tab *t)
{
	unsigned d;

	t->n = 0;
	memset(t->slot, 0, sizeof(t->slot));
	memset(t->other, 0, sizeof(t->other));
	for (d = 0; d < VN_HOST_FLOW_NDIR; d++) {
		t->other[d].dir = (uint8_t)d;
		t->other[d].kind = VN_HOST_FLOW_KIND_OTHER;
		t->packets[d] = t->bytes[d] = 0;
	}
	t->truncated = 0;
}

/* The slot holding k's row, or the free slot where it would go. */
static uint16_t *slot_of(struct tapflow_tab *t, const struct vn_host_flow *k)
{
	uint32_t i = key_hash(k) & (TAPFLOW_HASH - 1);

	/* at most TAPFLOW_MAX_FLOWS of TAPFLOW_HASH slots are used: a free one is always found */
	while (t->slot[i] && !key_eq(&t->flow[t->slot[i] - 1], k))
		i = (i + 1) & (TAPFLOW_HASH - 1);
	return &t->slot[i];
}

/* Count packets/bytes under key k (a VN_HOST_FLOW_KIND_FLOW key). Returns 0 in its row, 1 in the other-flows row. */
static int count(struct tapflow_tab *t, const struct vn_host_flow *k, uint64_t packets,
		 uint64_t bytes)
{
	uint16_t *s = slot_of(t, k);
	struct vn_host_flow *r;
	int rc = 0;

	if (*s) {
		r = &t->flow[*s - 1];
	} else if (t->n < TAPFLOW_MAX_FLOWS) {
		r = &t->flow[t->n++];
		*r = *k;
		r->packets = r->bytes = 0;
		*s = (uint16_t)t->n;
	} else {
		r = &t->other[k->dir];
		rc = 1;
	}
	r->packets += packets;
	r->bytes += bytes;
	return rc;
}

int tapflow_tab_add(struct tapflow_tab *t, unsigned dir, const uint8_t *frame, size_t caplen,
		    uint64_t len)
{
	struct vn_host_flow k;

	if (dir >= VN_HOST_FLOW_NDIR)
		return -EINVAL;
	if (len < caplen)
		len = caplen;
	tapflow_key(frame, caplen, dir, &k);
	t->packets[dir]++;
	t->bytes[dir] += len;
	if (k.flags & VN_HOST_FLOW_F_TRUNC)
		t->truncated++;
	return count(t, &k, 1, len);
}

void tapflow_tab_merge(struct tapflow_tab *dst, const struct tapflow_tab *src)
{
	uint32_t i;
	unsigned d;

	for (i = 0; i < src->n; i++)
		(void)count(dst, &src->flow[i], src->flow[i].packets, src->flow[i].bytes);
	for (d = 0; d < VN_HOST_FLOW_NDIR; d++) {
		dst->other[d].packets += src->other[d].packets;
		dst->other[d].bytes += src->other[d].bytes;
		dst->packets[d] += src->packets[d];
		dst->bytes[d] += src->bytes[d];
	}
	dst->truncated += src->truncated;
}

const struct vn_host_flow *tapflow_tab_find(const struct tapflow_tab *t,
					    const struct vn_host_flow *k)
{
	uint16_t s;

	if (k->dir >= VN_HOST_FLOW_NDIR)
		return NULL;
	s = *slot_of((struct tapflow_tab *)t, k);
	return s ? &t->flow[s - 1] : NULL;
}

/* ---- names ---- */

const char *tapflow_proto_name(const struct vn_host_flow *f, char *buf, size_t len)
{
	if (f->kind == VN_HOST_FLOW_KIND_OTHER)
		snprintf(buf, len, "other_flows");
	else if (f->ipver && f->proto == P_TCP)
		snprintf(buf, len, "tcp");
	else if (f->ipver && f->proto == P_UDP)
		snprintf(buf, len, "udp");
	else if (f->ipver == 4 && f->proto == P_ICMP)
		snprintf(buf, len, "icmp");
	else if (f->ipver == 6 && f->proto == P_ICMP6)
		snprintf(buf, len, "icmpv6");
	else if (f->ipver)
		snprintf(buf, len, "ip:%u", f->proto);
	else if (f->ethertype == ET_ARP)
		snprintf(buf, len, "arp");
	else if (!f->ethertype)
		snprintf(buf, len, "llc");
	else
		snprintf(buf, len, "eth:0x%04x", f->ethertype);
	return buf;
}

const char *tapflow_addr(const struct vn_host_flow *f, int which, char *buf, size_t len)
{
	const uint8_t *a = which ? f->dst : f->src;

	if (!len)
		return buf;
	buf[0] = 0;
	if (f->kind != VN_HOST_FLOW_KIND_FLOW || (f->ipver != 4 && f->ipver != 6) ||
	    !inet_ntop(f->ipver == 4 ? AF_INET : AF_INET6, a, buf, (socklen_t)len))
		buf[0] = 0;
	return buf;
}

const char *tapflow_label(const struct vn_host_flow *f, char *buf, size_t len)
{
	char p[24], s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
	const char *note = f->flags & VN_HOST_FLOW_F_TRUNC  ? " (truncated)"
			   : f->flags & VN_HOST_FLOW_F_FRAG ? " (fragments)"
							    : "";

	tapflow_proto_name(f, p, sizeof(p));
	tapflow_addr(f, 0, s, sizeof(s));
	tapflow_addr(f, 1, d, sizeof(d));
	if (f->kind != VN_HOST_FLOW_KIND_FLOW || !f->ipver)
		snprintf(buf, len, "%s%s", f->kind == VN_HOST_FLOW_KIND_OTHER ? "other flows" : p,
			 note);
	else if (has_ports(f->proto) && !(f->flags & (VN_HOST_FLOW_F_FRAG | VN_HOST_FLOW_F_TRUNC)))
		snprintf(buf, len, f->ipver == 6 ? "%s [%s]:%u > [%s]:%u%s" : "%s %s:%u > %s:%u%s",
			 p, s, f->sport, d, f->dport, note);
	else if ((f->proto == P_ICMP || f->proto == P_ICMP6) &&
		 !(f->flags & (VN_HOST_FLOW_F_FRAG | VN_HOST_FLOW_F_TRUNC)))
		snprintf(buf, len, "%s %s > %s type %u code %u%s", p, s, d, f->sport, f->dport,
			 note);
	else
		snprintf(buf, len, "%s %s > %s%s", p, s, d, note);
	return buf;
}

/* ---- live capture ---- */

struct tapflow;

struct tf_dir {
	struct tapflow *tf;
	unsigned dir;
};

struct tapflow {
	char name[IFNAMSIZ];
	pcap_t *p
	    [VN_HOST_FLOW_NDIR]; /* [VN_HOST_FLOW_TO_GUEST]: PCAP_D_OUT on the tap; [VN_HOST_FLOW_FROM_GUEST]: PCAP_D_IN */
	struct tf_dir ctx[VN_HOST_FLOW_NDIR];
	uint32_t
	    drops_base[VN_HOST_FLOW_NDIR]; /* pcap_stats ps_drop at the last cut (32 bits, wraps) */
	int failed;
	uint64_t off_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC during this poll */
	uint64_t cut_ns;
	struct tapflow_tab cur; /* the period being counted */
	struct tapflow_tab next; /* frames stamped at or after the last poll's cut */
	struct tapflow_tab out; /* the last period handed out */
};

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int pcap_errno(int rc)
{
	switch (rc) {
	case PCAP_ERROR_PERM_DENIED:
		return EPERM;
	case PCAP_ERROR_NO_SUCH_DEVICE:
		return ENODEV;
	case PCAP_ERROR_IFACE_NOT_UP:
		return ENETDOWN;
	default:
		return EIO;
	}
}

/* One handle on tap for direction dir. Returns 0 or -errno with the reason in err. */
static int open_dir(struct tapflow *tf, unsigned dir, char *err, size_t errlen)
{
	char eb[PCAP_ERRBUF_SIZE] = "";
	pcap_t *p;
	int rc;

	p = pcap_create(tf->name, eb);
	if (!p) {
		log_reason(err, errlen, "%s: %s", tf->name, eb);
		return -EIO;
	}
	tf->p[dir] = p;
	if (pcap_set_snaplen(p, TAPFLOW_SNAPLEN) || pcap_set_promisc(p, 0) ||
	    pcap_set_immediate_mode(p, 1) ||
	    pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO) ||
	    pcap_set_buffer_size(p, (int)TAPFLOW_BUFFER)) {
		log_reason(err, errlen, "%s: libpcap refused a setting", tf->name);
		return -EIO;
	}
	rc = pcap_activate(p); /* > 0: a warning, the handle works */
	if (rc < 0) {
		log_reason(err, errlen, "%s: %s", tf->name,
			   rc == PCAP_ERROR ? pcap_geterr(p) : pcap_statustostr(rc));
		return -pcap_errno(rc);
	}
	if (pcap_datalink(p) != DLT_EN10MB) {
		log_reason(err, errlen, "%s: link type %s, not Ethernet (not a tap device?)",
			   tf->name,
			   pcap_datalink_val_to_name(pcap_datalink(p))
			       ? pcap_datalink_val_to_name(pcap_datalink(p))
			       : "?");
		return -ENOTSUP;
	}
	if (pcap_setdirection(p, dir == VN_HOST_FLOW_TO_GUEST ? PCAP_D_OUT : PCAP_D_IN)) {
		log_reason(err, errlen, "%s: direction: %s", tf->name, pcap_geterr(p));
		return -EIO;
	}
	if (pcap_setnonblock(p, 1, eb) || pcap_get_selectable_fd(p) < 0) {
		log_reason(err, errlen, "%s: nonblocking: %s", tf->name, eb[0] ? eb : "no fd");
		return -EIO;
	}
	tf->ctx[dir].tf = tf;
	tf->ctx[dir].dir = dir;
	return 0;
}

struct tapflow *tapflow_open(const char *tap, char *err, size_t errlen)
{
	struct tapflow *tf = NULL;
	unsigned d;
	int rc = 0;

	if (!tap || !*tap || strlen(tap) >= IFNAMSIZ || strchr(tap, '/')) {
		log_reason(err, errlen, "'%s': not a network device name", tap ? tap : "");
		errno = EINVAL;
		return NULL;
	}
	tf = calloc(1, sizeof(*tf));
	if (!tf) {
		rc = -errno;
		log_reason(err, errlen, "%s: out of memory", tap);
		goto out;
	}
	snprintf(tf->name, sizeof(tf->name), "%s", tap);
	tapflow_tab_reset(&tf->cur);
	tapflow_tab_reset(&tf->next);
	tapflow_tab_reset(&tf->out);
	for (d = 0; d < VN_HOST_FLOW_NDIR && !rc; d++)
		rc = open_dir(tf, d, err, errlen);
	for (d = 0; d < VN_HOST_FLOW_NDIR && !rc; d++) {
		struct pcap_stat st;

		if (!pcap_stats(tf->p[d], &st))
			tf->drops_base[d] = st.ps_drop;
	}
out:
	if (rc) {
		tapflow_close(tf);
		errno = -rc;
		return NULL;
	}
	return tf;
}

void tapflow_close(struct tapflow *tf)
{
	unsigned d;

	if (!tf)
		return;
	for (d = 0; d < VN_HOST_FLOW_NDIR; d++)
		if (tf->p[d])
			pcap_close(tf->p[d]);
	free(tf);
}

const char *tapflow_name(const struct tapflow *tf)
{
	return tf->name;
}

int tapflow_failed(const struct tapflow *tf)
{
	return tf->failed;
}

static void on_frame(u_char *user, const struct pcap_pkthdr *h, const u_char *bytes)
{
	struct tf_dir *c = (struct tf_dir *)user;
	struct tapflow *tf = c->tf;
	uint64_t t = (uint64_t)h->ts.tv_sec * NSEC_PER_SEC + (uint64_t)h->ts.tv_usec; /* ns */
	size_t caplen = h->caplen < TAPFLOW_SNAPLEN ? h->caplen : TAPFLOW_SNAPLEN;

	t = t > tf->off_ns ? t - tf->off_ns : 0;
	(void)tapflow_tab_add(t < tf->cut_ns ? &tf->cur : &tf->next, c->dir, bytes, caplen, h->len);
}

int tapflow_poll(struct tapflow *tf, uint64_t cut_ns, char *err, size_t errlen)
{
	uint64_t mono, real;
	unsigned d;
	int total = 0, n, got;

	if (tf->failed) {
		log_reason(err, errlen, "%s: capture failed earlier", tf->name);
		return -EIO;
	}
	/* frames stamped at or after the last cut, read by an earlier poll, belong before this one */
	if (tf->next.packets[0] || tf->next.packets[1]) {
		tapflow_tab_merge(&tf->cur, &tf->next);
		tapflow_tab_reset(&tf->next);
	}
	mono = clock_ns(CLOCK_MONOTONIC);
	real = clock_ns(CLOCK_REALTIME);
	tf->off_ns = real > mono ? real - mono : 0;
	tf->cut_ns = cut_ns;
	for (d = 0; d < VN_HOST_FLOW_NDIR; d++) {
		for (got = 0; got < TAPFLOW_POLL_MAX; got += n) {
			n = pcap_dispatch(tf->p[d], TAPFLOW_POLL_MAX - got, on_frame,
					  (u_char *)&tf->ctx[d]);
			if (n < 0) {
				log_reason(err, errlen, "%s: %s", tf->name, pcap_geterr(tf->p[d]));
				tf->failed = 1;
				return -EIO;
			}
			if (!n)
				break;
		}
		total += got;
	}
	return total;
}

const struct tapflow_tab *tapflow_cut(struct tapflow *tf, uint64_t cut_ns,
				      uint64_t dropped[VN_HOST_FLOW_NDIR])
{
	unsigned d;

	if (!tf->failed)
		(void)tapflow_poll(tf, cut_ns, NULL, 0);
	for (d = 0; d < VN_HOST_FLOW_NDIR; d++) {
		struct pcap_stat st;

		dropped[d] = 0;
		if (!tf->failed && !pcap_stats(tf->p[d], &st)) {
			dropped[d] = (uint32_t)(st.ps_drop - tf->drops_base[d]);
			tf->drops_base[d] = st.ps_drop;
		}
	}
	/* out = cur; cur = next (the frames already read that belong to the new period) */
	memcpy(&tf->out, &tf->cur, sizeof(tf->out));
	memcpy(&tf->cur, &tf->next, sizeof(tf->cur));
	tapflow_tab_reset(&tf->next);
	return &tf->out;
}
