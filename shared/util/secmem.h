/* SPDX-License-Identifier: MIT */
/*
 * secmem: memory for key material. Its own anonymous private pages, left out of core dumps
 * (MADV_DONTDUMP), locked in RAM when RLIMIT_MEMLOCK allows it (best effort: a key that may be swapped
 * still works), and wiped with explicit_bzero() before they are unmapped. Any thread.
 */
#ifndef VNOISE_UTIL_SECMEM_H
#define VNOISE_UTIL_SECMEM_H

#include <stddef.h>

/* len bytes (rounded up to whole pages), zeroed; owned by the caller until secmem_free(). NULL with errno. */
void *secmem_alloc(size_t len) __attribute__((warn_unused_result));
/* Wipe, unlock and unmap what secmem_alloc(len) gave. NULL: nothing. */
void secmem_free(void *p, size_t len);
/*
 * Leave the pages holding [p, p + len) out of core dumps: for key material in a mapping made elsewhere (a
 * shared memfd). Whole pages: the caller's neighbours on them go too. 0 or -errno.
 */
int secmem_dontdump(void *p, size_t len) __attribute__((warn_unused_result));

#endif
