/* SPDX-License-Identifier: MIT */
/*
 * sha256: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), our own portable C with no OpenSSL, for the
 * authentication of the UDP report datagrams (protocol/cluster.h). Incremental contexts live on the caller's
 * stack (no allocation), so every function is thread-safe on distinct contexts. The final calls wipe the
 * context: key material does not linger in memory the caller forgets to clear. The one global is the choice of
 * compression function, made at the first hash: the x86 SHA extensions when the CPU has them, else portable C;
 * the environment variable VNOISE_SHA256=generic forces portable C. Both give the same digests.
 */
#ifndef VNOISE_UTIL_SHA256_H
#define VNOISE_UTIL_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_LEN 32 /* bytes */
#define SHA256_BLOCK_LEN 64 /* bytes */

struct sha256_ctx {
	uint32_t h[8]; /* chaining state */
	uint64_t len; /* message bytes so far */
	uint8_t buf[SHA256_BLOCK_LEN]; /* partial block */
	size_t fill; /* bytes in buf, < SHA256_BLOCK_LEN */
};

/* HMAC state: the inner hash in progress and the outer hash already keyed (both computed once per key). */
struct sha256_hmac_ctx {
	struct sha256_ctx inner;
	struct sha256_ctx outer;
};

/* Incremental hash: init, update any number of times (data may be NULL when len is 0), final. */
void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, size_t len);
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);

/* One-shot hash of data[0..len). */
void sha256_digest(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN]);

/*
 * Incremental HMAC-SHA256 with a key of any length (a key longer than the 64-byte block is hashed first, as
 * RFC 2104 says). A keyed context may be copied (plain struct copy) before update to MAC several messages
 * without hashing the key again.
 */
void sha256_hmac_init(struct sha256_hmac_ctx *c, const void *key, size_t keylen);
void sha256_hmac_update(struct sha256_hmac_ctx *c, const void *data, size_t len);
void sha256_hmac_final(struct sha256_hmac_ctx *c, uint8_t out[SHA256_DIGEST_LEN]);

/* One-shot HMAC-SHA256 of data[0..len) under key[0..keylen). */
void sha256_hmac(const void *key, size_t keylen, const void *data, size_t len,
		 uint8_t out[SHA256_DIGEST_LEN]);

/*
 * Whether a[0..len) equals b[0..len), in time that depends on len only (never on where the first difference
 * is): compare MACs with this, never with memcmp, or a forger learns a MAC byte by byte from timing.
 */
bool sha256_equal_ct(const void *a, const void *b, size_t len);

/* The compression function in use, "sha-ni" or "generic" (a static string), for logs and benchmarks. */
const char *sha256_impl_name(void);

#endif
