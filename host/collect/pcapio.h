/* SPDX-License-Identifier: MIT */
/*
 * pcapio: the collector's UDP datagrams as a pcap capture, with libpcap. The writer frames each datagram as
 * the IPv4 or IPv6 packet it arrived in (real addresses and ports, valid IP and UDP checksums, nanosecond
 * timestamps, link type RAW), so `collect --pcap-out` files open in tshark and Wireshark. The replayer reads
 * a pcap or pcapng capture — ours, or one from tcpdump/dumpcap on an Ethernet, VLAN, cooked or loopback link
 * — and hands every UDP datagram to a callback in file order, so `collect --pcap-in` feeds the collector the
 * same datagrams it saw live. A capture file is untrusted input: every header is checked against the
 * captured length before it is read, and packets that are not whole, unfragmented UDP are counted and
 * skipped. Checksums are not verified on replay (captures taken on the sending host carry the partial
 * checksums of offload). Neither side is thread safe; one object per thread.
 */
#ifndef VNOISE_HOST_COLLECT_PCAPIO_H
#define VNOISE_HOST_COLLECT_PCAPIO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define PCAPIO_MAX_PAYLOAD 65507u /* bytes of UDP payload in one datagram, IPv4's limit, for both */

struct pcapio_w; /* a capture being written; owned by the caller from create to close */

/*
 * Create path (outfile_open(): truncated in place, mode 0600, a symbolic link refused with ELOOP; "-" is a
 * file named "-", not stdout) as a nanosecond-precision pcap with link
 * type DLT_RAW (IPv4 and IPv6 packets). Returns the writer, or NULL with errno set and a one-line reason
 * in err (err may be NULL).
 */
struct pcapio_w *pcapio_create(const char *path, char *err, size_t errlen);

/*
 * Append one UDP datagram as an IPv4 or IPv6 packet, chosen by src->sa_family (sockaddr_in or
 * sockaddr_in6, ports included; dst of the same family, else -EAFNOSUPPORT), with valid IP header and UDP
 * checksums and timestamp realtime_ns (up to 2038-01-19, the pcap format's signed 32-bit seconds in
 * libpcap 1.10, else -ERANGE). len up to PCAPIO_MAX_PAYLOAD, else -EMSGSIZE. The packet goes to the stdio
 * buffer: 0, or -errno (-EIO) once a write to the file has failed.
 */
int pcapio_write(struct pcapio_w *w, uint64_t realtime_ns, const struct sockaddr *src,
		 const struct sockaddr *dst, const void *payload, size_t len)
    __attribute__((warn_unused_result));

/* Push the buffered packets to the file (fflush): 0, or -errno when this or an earlier write failed. */
int pcapio_flush(struct pcapio_w *w) __attribute__((warn_unused_result));

/* Close the file and free the writer (NULL ok). Unflushed packets are written, errors are not reported:
 * call pcapio_flush first to know that the capture is complete. */
void pcapio_close(struct pcapio_w *w);

/*
 * One UDP datagram of a replayed capture: src and dst are sockaddr_in or sockaddr_in6 (ports in network
 * order, flow info and scope id 0), payload points into libpcap's buffer and is valid only during the call.
 * Return 0 to go on, nonzero to stop: pcapio_replay returns that value.
 */
typedef int pcapio_fn(void *ctx, uint64_t realtime_ns, const struct sockaddr *src,
		      const struct sockaddr *dst, const void *payload, size_t len);

/* What a replay saw; packets = udp + every skipped_* field. */
struct pcapio_stats {
	uint64_t packets; /* records read from the file */
	uint64_t udp; /* UDP datagrams handed to fn */
	uint64_t
	    skipped_not_udp; /* not IPv4/IPv6, not UDP, IPv6 extension headers, unknown families */
	uint64_t skipped_fragment; /* IPv4 with MF or an offset, IPv6 with a fragment header */
	uint64_t
	    skipped_truncated; /* caplen < len, or a header or length reaching past the captured data */
	uint64_t
	    skipped_bad; /* malformed: wrong IP version, IHL < 5, total length < IHL, UDP length < 8 */
	uint64_t skipped_port; /* UDP to another destination port than the filter's */
};

/*
 * Read path (pcap or pcapng, any timestamp precision; "-" = stdin) and call fn for each UDP datagram in
 * file order, only those to destination port `port` unless it is 0. Link types: RAW, IPV4, IPV6, EN10MB
 * (with up to two 802.1Q/802.1ad tags), LINUX_SLL, LINUX_SLL2, NULL and LOOP. st (may be NULL) is zeroed
 * then counts every record. Returns 0 at the end of the file; fn's nonzero value; -errno when path cannot
 * be opened (-ENOENT, -EACCES, -EISDIR...) or read (-EIO); -EBADMSG when it is not a capture or is damaged
 * (also for a file cut in the middle of a record, after the records before the cut were delivered);
 * -ENOTSUP for another link type. On failure err (may be NULL) holds a one-line reason.
 */
int pcapio_replay(const char *path, uint16_t port, pcapio_fn *fn, void *ctx,
		  struct pcapio_stats *st, char *err, size_t errlen)
    __attribute__((warn_unused_result));

#endif
