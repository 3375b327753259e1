/* SPDX-License-Identifier: MIT */
/* domsetup internals that the unit suite needs: taking vnoise's devices out of a domain's XML again. */
#ifndef VNOISE_HOST_LIBVIRT_DOMSETUP_PRIV_H
#define VNOISE_HOST_LIBVIRT_DOMSETUP_PRIV_H

#include "libvirt/domsetup.h"

/*
 * xml without vnoise's shmem, channel and bell elements (each with the whitespace that led its line), into
 * out (cap bytes). Returns the number of elements removed (0..3) or -ENOSPC. Everything else is left as it
 * was, byte for byte; a virtio-serial controller is never removed.
 */
int domsetup_remove(const char *xml, const char *shm_name, char *out, size_t cap)
    __attribute__((warn_unused_result));

#endif
