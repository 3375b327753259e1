/* SPDX-License-Identifier: MIT */
/*
 * virtxml: the few facts vnoise-host needs from a libvirt domain's live XML (domain type, ivshmem device,
 * tap devices, a channel's host socket). Small, bounded scanners over libvirt's own well-formed output — not a general XML parser;
 * they never read past the terminating NUL. Pure functions, no allocation.
 */
#ifndef VNOISE_HOST_LIBVIRT_VIRTXML_H
#define VNOISE_HOST_LIBVIRT_VIRTXML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Value of attribute attr of the first element named elem at or after from (e.g. elem "shmem", attr
 * "name"), copied NUL-terminated into out (cap bytes). Entities &apos; &quot; &amp; &lt; &gt; are decoded.
 * Returns a pointer just past that element's start tag, or NULL if not found or the value does not fit.
 */
const char *virtxml_attr(const char *from, const char *elem, const char *attr, char *out,
			 size_t cap);

/* The domain's type attribute ("qemu" for TCG, "kvm"). Returns 0 or -ENOENT. */
int virtxml_domain_type(const char *xml, char *out, size_t cap);

/*
 * The first <shmem> device: its name and size in bytes (from <size unit='M'>; 0 if absent). Returns 0 or
 * -ENOENT (no shmem), -EINVAL (unparseable size or unit).
 */
int virtxml_shmem(const char *xml, char *name, size_t cap, uint64_t *size_bytes);

/*
 * Target devices of the <interface> elements (tap names such as "vnet3"), written as a comma-separated
 * list into out. Returns the number found (0 if none) or -ENOSPC if out is too small.
 */
int virtxml_taps(const char *xml, char *out, size_t cap);

/*
 * The host socket of the virtio-serial channel whose target name is target (e.g. "org.vnoise.0"): the path
 * of <source mode='bind' path='...'/> in the first <channel type='unix'> ... </channel> with
 * <target type='virtio' name='TARGET'/>. Returns 0, -ENOENT (no such unix channel, or it has no source
 * path), -ENOSPC (the path does not fit in cap).
 */
int virtxml_channel_path(const char *xml, const char *target, char *path, size_t cap);

#endif
