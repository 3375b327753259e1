/* SPDX-License-Identifier: MIT */
/*
 * hostbind: a domain's binding as the HOST_DOMAIN text chunk of a record file ("dom=", "event=", "name=",
 * "uuid=", "vcpu.N.tid=" ... lines): written by the live engine when it maps, re-maps or loses a domain, and
 * applied to an aggregate by the engine itself and by the record reader, so that a file replays into the
 * same bindings the live views had. Also the key lookups of the record's text chunks.
 */
#ifndef VNOISE_HOST_ENGINE_HOSTBIND_H
#define VNOISE_HOST_ENGINE_HOSTBIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "engine/hostagg.h"
#include "libvirt/vmap.h"

/* Text of a HOST_DOMAIN chunk for domain index dom, mapping m, after event ("started", ...), into buf.
 * Returns its length or -ENOSPC. */
int hostbind_text(char *buf, size_t cap, uint32_t dom, const struct vmap_dom *m, const char *event,
		  uint64_t t_ns);

/* Feed a HOST_DOMAIN text payload to the engine. Returns 0 or -EINVAL (missing/invalid keys). */
int hostbind_apply(struct hostagg *a, const void *payload, size_t len)
    __attribute__((warn_unused_result));

/* The value of key in a text chunk's payload, as a string into out (cap bytes) or as a strict u64; false
 * when the key is missing, too long or not a number. */
bool hostbind_kv_str(const void *pl, size_t len, const char *key, char *out, size_t cap);
bool hostbind_kv_u64(const void *pl, size_t len, const char *key, uint64_t *out);

#endif
