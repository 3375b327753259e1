/* SPDX-License-Identifier: MIT */
/*
 * virtxml: the few facts vnoise-host needs from a libvirt domain's live XML (domain type, ivshmem device,
 * tap devices, a channel's host socket), read through the XML module (libvirt/xmldoc: libxml2, XPath).
 * Each call takes the document as a NUL-terminated string; one that is not a well-formed document holds
 * nothing (-ENOENT, or no taps). Pure functions.
 */
#ifndef VNOISE_HOST_LIBVIRT_VIRTXML_H
#define VNOISE_HOST_LIBVIRT_VIRTXML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The domain's type attribute ("qemu" for TCG, "kvm"). Returns 0 or -ENOENT (also when it does not fit). */
int virtxml_domain_type(const char *xml, char *out, size_t cap);

/*
 * The first <shmem> device with a name: its name and size in bytes (from its <size unit='M'>, MiB when
 * unit is absent; 0 if it has no <size>). Returns 0 or -ENOENT (no shmem, or the name does not fit in
 * cap), -EINVAL (unparseable size or unit).
 */
int virtxml_shmem(const char *xml, char *name, size_t cap, uint64_t *size_bytes);

/*
 * Target devices of the <interface> elements (tap names such as "vnet3": the dev of each one's first
 * <target>, when not empty), written as a comma-separated list into out. Returns the number found (0 if
 * none) or -ENOSPC if out is too small.
 */
int virtxml_taps(const char *xml, char *out, size_t cap);

/*
 * The host socket of the virtio-serial channel whose target name is target (e.g. "org.vnoise.0"): the path
 * of <source mode='bind' path='...'/> in the first <channel type='unix'> with <target type='virtio'
 * name='TARGET'/>. Returns 0, -ENOENT (no such unix channel, or it has no source path), -ENOSPC (the path
 * does not fit in cap).
 */
int virtxml_channel_path(const char *xml, const char *target, char *path, size_t cap);

/* True if a <channel> of any type has a <target> named target (an inactive domain's has no path yet). */
bool virtxml_has_channel(const char *xml, const char *target);

#endif
