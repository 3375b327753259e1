/* SPDX-License-Identifier: MIT */
/*
 * tapflow: which network flows a domain's tap device carried in each period, to put the guest's network
 * noise (NET_RX softirq, virtio-net interrupts) next to the traffic that caused it. A live capture per tap is
 * two libpcap handles, one per direction: frames the host sends into the tap (outgoing, PCAP_D_OUT, on the
 * tap device) are what the guest receives — its NET_RX work — and frames the guest sends arrive on the tap
 * (PCAP_D_IN). Each frame is keyed by its 5-tuple (IPv4/IPv6 TCP, UDP, ICMP; other IP protocols without
 * ports) or, when it is not IP, by its ethertype, and counted (packets, bytes = frame length) in a bounded
 * per-period table: TAPFLOW_MAX_FLOWS rows per tap, frames of further flows go to one "other flows" row per
 * direction and are counted; nothing is lost silently (kernel drops come from pcap_stats).
 * Frames come from the guest: every header is checked against the captured length before it is read.
 * The table part (tapflow_tab_*, tapflow_key) is pure and unit-tested with raw frames; the capture part
 * (tapflow_open/poll/cut) needs CAP_NET_RAW. Neither is thread safe: one thread per object.
 */
#ifndef VNOISE_HOST_NET_TAPFLOW_H
#define VNOISE_HOST_NET_TAPFLOW_H

#include <stddef.h>
#include <stdint.h>
#include "host.h"

#define TAPFLOW_MAX_FLOWS 256u /* flow rows per tap per period, both directions */
#define TAPFLOW_HASH 1024u /* hash slots (power of two, >= 2 * TAPFLOW_MAX_FLOWS) */
#define TAPFLOW_SNAPLEN \
	128 /* bytes captured per frame: Ethernet, 2 VLAN tags, IPv6 + extensions, ports */
#define TAPFLOW_BUFFER (2u << 20) /* kernel capture buffer per handle, bytes */
#define TAPFLOW_POLL_MAX 65536 /* frames read per handle and call at most (bounded work per tick) */

/* One period's flows of one tap. Rows are vn_host_flow with the key, packets and bytes set (start_ns,
 * end_ns, dom and tap are the caller's to fill when it emits them). */
struct tapflow_tab {
	uint32_t n; /* rows used in flow[] */
	struct vn_host_flow flow[TAPFLOW_MAX_FLOWS];
	struct vn_host_flow other
	    [VN_HOST_FLOW_NDIR]; /* kind VN_HOST_FLOW_KIND_OTHER: frames that found the table full */
	uint64_t packets[VN_HOST_FLOW_NDIR],
	    bytes[VN_HOST_FLOW_NDIR]; /* every frame counted, by direction */
	uint64_t truncated; /* frames whose key has VN_HOST_FLOW_F_TRUNC */
	uint16_t slot[TAPFLOW_HASH]; /* row index + 1, 0 free */
};

/* Empty the table (start of a period). */
void tapflow_tab_reset(struct tapflow_tab *t);

/*
 * Key of one Ethernet frame (caplen bytes of it captured) into k: every key field set, the rest of k zeroed,
 * dir stored. Never reads frame[caplen] or beyond; headers that the captured bytes or the frame's own length
 * fields cut short give VN_HOST_FLOW_F_TRUNC and the key fields read so far.
 */
void tapflow_key(const uint8_t *frame, size_t caplen, unsigned dir, struct vn_host_flow *k);

/*
 * Count one frame seen in direction dir (enum vn_host_flow_dir): caplen bytes captured of a frame of len
 * bytes (len < caplen is taken as caplen). Returns 0 (counted in its flow's row), 1 (the table is full:
 * counted in the direction's other-flows row) or -EINVAL (dir out of range; nothing counted).
 */
int tapflow_tab_add(struct tapflow_tab *t, unsigned dir, const uint8_t *frame, size_t caplen,
		    uint64_t len);

/* Add src's rows and counters into dst (rows that do not fit go to dst's other-flows rows). */
void tapflow_tab_merge(struct tapflow_tab *dst, const struct tapflow_tab *src);

/* Short protocol name of a row: "tcp", "udp", "icmp", "icmpv6", "ip:47", "arp", "eth:0x88cc", "llc"
 * (802.3 length field), "other_flows" (kind VN_HOST_FLOW_KIND_OTHER); into buf. */
const char *tapflow_proto_name(const struct vn_host_flow *f, char *buf, size_t len);

/* Text form of a row's address: "10.0.0.1" / "fe80::1" for src (which = 0) or dst (1); "" if not IP. */
const char *tapflow_addr(const struct vn_host_flow *f, int which, char *buf, size_t len);

/* One-line label: "udp 10.0.0.1:40000 > 10.0.0.2:5555", "icmp 10.0.0.2 > 10.0.0.1 type 3 code 3", "arp". */
const char *tapflow_label(const struct vn_host_flow *f, char *buf, size_t len);

struct tapflow; /* a live capture on one tap; owned by the caller from open to close */

/*
 * Open a live capture of both directions on tap device `tap` (immediate mode, nanosecond timestamps,
 * TAPFLOW_SNAPLEN, nonblocking). Returns the capture, or NULL with errno (EPERM: no permission, ENODEV: no
 * such device, ENOTSUP: not an Ethernet device, EINVAL: bad name, EIO: libpcap failed) and a one-line reason
 * in err.
 */
struct tapflow *tapflow_open(const char *tap, char *err, size_t errlen);

/* Stop the capture and free it (NULL ok). */
void tapflow_close(struct tapflow *tf);

/*
 * Read the frames the kernel holds (nonblocking, at most TAPFLOW_POLL_MAX per direction): those captured
 * before cut_ns (host CLOCK_MONOTONIC) are counted in the current period, later ones in the next. Returns
 * frames read, or -errno when a handle failed (device gone): the capture then counts nothing more, err holds
 * libpcap's reason, and what was counted stays for tapflow_cut.
 */
int tapflow_poll(struct tapflow *tf, uint64_t cut_ns, char *err, size_t errlen);

/*
 * End the current period at cut_ns: poll first (errors as tapflow_poll, remembered in tapflow_failed), then
 * return the period's table — valid until the next call on tf — and in dropped[] the frames the kernel
 * dropped per direction since the last cut (pcap_stats). The next period starts with the frames captured at
 * or after cut_ns.
 */
const struct tapflow_tab *tapflow_cut(struct tapflow *tf, uint64_t cut_ns,
				      uint64_t dropped[VN_HOST_FLOW_NDIR]);

/* Whether a handle has failed (the capture counts nothing more; close it and open again). */
int tapflow_failed(const struct tapflow *tf);

#endif
