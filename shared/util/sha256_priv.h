/* SPDX-License-Identifier: MIT */
/*
 * sha256_priv: the internals of shared/util/sha256 that its unit tests and benchmark need. The compression function
 * has two implementations, portable C and the x86 SHA extensions; the first hash picks one for the whole
 * process (sha256_impl_auto()), and tests and benchmarks may switch between them (sha256_impl_set()). Both
 * give the same digests: the switch is safe at any time, from any thread.
 */
#ifndef VNOISE_UTIL_SHA256_PRIV_H
#define VNOISE_UTIL_SHA256_PRIV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum sha256_impl {
	SHA256_IMPL_GENERIC, /* portable C, every CPU */
	SHA256_IMPL_SHANI, /* x86 SHA extensions (with SSSE3 and SSE4.1) */
};

/* The FIPS 180-4 round constants (16-byte aligned: the SHA-NI code loads them four at a time). */
extern const uint32_t sha256_k[64];

/* Compress nblocks 64-byte blocks from p (any alignment) into the chaining state h. */
typedef void sha256_blocks_fn(uint32_t h[8], const uint8_t *p, size_t nblocks);
sha256_blocks_fn sha256_blocks_generic;
sha256_blocks_fn sha256_shani_blocks; /* only where sha256_shani_supported(); sha256_shani.c */

/* Whether this CPU runs sha256_shani_blocks() (cpuid: SHA, SSSE3, SSE4.1; false off x86). */
bool sha256_shani_supported(void);

/* Whether this CPU runs impl. */
bool sha256_impl_supported(enum sha256_impl impl);

/* The automatic choice: generic when VNOISE_SHA256=generic, else SHA-NI when the CPU has it. */
enum sha256_impl sha256_impl_auto(void);

/* The implementation in use (making the automatic choice if no hash has yet). */
enum sha256_impl sha256_impl_get(void);

/* Use impl from now on, process-wide. Returns 0, or -ENOTSUP when this CPU cannot run it. */
int sha256_impl_set(enum sha256_impl impl) __attribute__((warn_unused_result));

#endif
