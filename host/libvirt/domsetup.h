/* SPDX-License-Identifier: MIT */
/*
 * domsetup: what `vnoise-host enable` adds to a libvirt domain and `disable` removes, as XML. The devices:
 * the ivshmem-plain <shmem name='vnoise-DOM'> (a power-of-two size sized for the vCPUs), the
 * `org.vnoise.0` virtio-serial channel and the `org.vnoise.bell.0` one, the bell (unix sockets, paths chosen
 * by libvirt), plus a virtio-serial controller when the domain has none. The guest agent writes one byte on
 * the bell when it has published a noise gap, so that the host sleeps on it instead of polling the shared
 * memory; a domain enabled before the bell existed has everything but it, and enabling it again adds it.
 * Detection reads the domain XML through the XML module (libvirt/xmldoc: libxml2, XPath); a document that
 * does not parse holds none of vnoise's devices. Pure functions, no libvirt calls: the command
 * (host/setup/setupcmd.c) feeds them the XML and applies the result through the libvirt API.
 */
#ifndef VNOISE_HOST_LIBVIRT_DOMSETUP_H
#define VNOISE_HOST_LIBVIRT_DOMSETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dtl.h"

#define DOMSETUP_CHANNEL "org.vnoise.0" /* the target name of vnoise's virtio-serial port */
/* The bell's target name (protocol/dtl.h): the guest agent rings it after a gap. */
#define DOMSETUP_BELL VN_DTL_BELL_PORT
#define DOMSETUP_MIN_MIB 4u /* default size floor (MiB) */
#define DOMSETUP_MAX_MIB 1024u /* --size and computed size ceiling (MiB) */
#define DOMSETUP_MIB_PER_VCPU \
	2u /* room for one ring of 16384 64-byte slots per vCPU, with headroom */
#define DOMSETUP_XML_MAX 1024u /* bytes: enough for any element domsetup builds */

/* What a domain's XML holds of vnoise's devices. */
struct domsetup_state {
	int vcpus; /* <vcpu>N</vcpu>, 0 if absent */
	bool shmem; /* a <shmem> named as ours, ivshmem-plain */
	uint32_t shmem_mib; /* its size (MiB; 0 if no <size> or not whole MiB) */
	bool
	    shmem_foreign; /* a <shmem> of our name that is not ivshmem-plain (doorbell, server...) */
	bool channel; /* a <channel type='unix'> with target name org.vnoise.0 */
	bool channel_foreign; /* a channel of that target name that is not a unix socket */
	bool bell; /* a <channel type='unix'> with target name org.vnoise.bell.0 */
	bool bell_foreign; /* a channel of that target name that is not a unix socket */
	bool controller; /* a virtio-serial controller */
};

/* "vnoise-DOM" into out (cap bytes). 0, or -ENAMETOOLONG when it does not fit, -EINVAL for an empty name. */
int domsetup_shm_name(const char *dom, char *out, size_t cap) __attribute__((warn_unused_result));

/* The default size for vcpus vCPUs (MiB): the power of two >= vcpus * 2 MiB, at least 4, at most 1024. */
uint32_t domsetup_size_mib(int vcpus);

/* True when mib is a power of two in 1 .. DOMSETUP_MAX_MIB. */
bool domsetup_size_ok(uint32_t mib);

/*
 * Scan a domain XML for vnoise's devices (shm_name: our shmem's name). Returns 0 or -EINVAL (not a
 * well-formed document with a <domain> root).
 */
int domsetup_scan(const char *xml, const char *shm_name, struct domsetup_state *st)
    __attribute__((warn_unused_result));

/*
 * The device XML vnoise adds, into out (cap bytes, NUL-terminated). Names are XML-escaped. Returns the
 * length, or -ENOSPC.
 */
int domsetup_shmem_xml(const char *shm_name, uint32_t mib, char *out, size_t cap)
    __attribute__((warn_unused_result));
int domsetup_channel_xml(char *out, size_t cap) __attribute__((warn_unused_result));
int domsetup_bell_xml(char *out, size_t cap) __attribute__((warn_unused_result));
int domsetup_controller_xml(char *out, size_t cap) __attribute__((warn_unused_result));

/* Which of vnoise's elements domsetup_element() finds. */
enum domsetup_kind {
	DOMSETUP_SHMEM = 1,
	DOMSETUP_CHANNEL_EL = 2,
	DOMSETUP_CONTROLLER = 3,
	DOMSETUP_BELL_EL = 4,
};

#define DOMSETUP_BIT(kind) (1u << (kind)) /* a kind in a domsetup_missing() mask */

/*
 * What enable adds to a domain in state st, as a mask of DOMSETUP_BIT(kind) (to be attached in the order
 * shmem, controller, channel, bell). The controller is in it only when the domain has no virtio-serial
 * controller and neither of our channels (either one implies a controller). Conflicts (the _foreign flags)
 * and the shmem's size are the caller's to check first.
 */
unsigned domsetup_missing(const struct domsetup_state *st);

/*
 * The whole element of kind in xml — our <shmem name='shm_name'>...</shmem>, the <channel> whose target
 * is org.vnoise.0 or org.vnoise.bell.0, or the first virtio-serial <controller> — as start pointer *at and
 * length *len (pointers into xml, its exact bytes; libvirt's detach takes such an element, addresses
 * included). xml may be a whole domain or a single device element; shm_name is used (and must be non-NULL)
 * only for DOMSETUP_SHMEM. Returns 0 or -ENOENT (none, or xml does not parse).
 */
int domsetup_element(const char *xml, enum domsetup_kind kind, const char *shm_name,
		     const char **at, size_t *len) __attribute__((warn_unused_result));

/*
 * Which of vnoise's elements the single device element xml is (as a plan step holds it): by its name, a
 * channel by its target name (the bell's, else org.vnoise.0's). 0, or -EINVAL (another element, or xml
 * does not parse).
 */
int domsetup_kind_of(const char *xml, enum domsetup_kind *kind) __attribute__((warn_unused_result));

#endif
