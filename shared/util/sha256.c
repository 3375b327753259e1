/* SPDX-License-Identifier: MIT */
/*
 * sha256: FIPS 180-4 section 6.2 written out plainly (big-endian word loads, the 64-word message schedule,
 * eight working variables), and HMAC as RFC 2104 defines it over that hash. This portable compression function
 * is the reference the unit tests pin with the FIPS and RFC 4231 vectors; on x86 CPUs with the SHA extensions
 * the one in sha256_shani.c is used instead, chosen once, at the first hash, unless VNOISE_SHA256=generic.
 * A report datagram is at most 1400 bytes (23 blocks): a few microseconds per MAC in C, under one with SHA-NI.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "util/sha256.h"
#include "util/sha256_priv.h"

_Alignas(16) const uint32_t sha256_k[64] = {
	0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
	0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
	0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
	0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
	0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
	0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
	0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
	0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
	0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
	0xc67178f2u,
};

static inline uint32_t ror32(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* Clear memory the compiler must not drop as a dead store (the contexts hold key-derived state). */
static void wipe(void *p, size_t len)
{
	explicit_bzero(p, len);
}

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64];
	uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	int i;

	for (i = 0; i < 16; i++)
		w[i] = load_be32(p + 4 * i);
	for (i = 16; i < 64; i++) {
		uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	for (i = 0; i < 64; i++) {
		uint32_t t1 = hh + (ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25)) +
			      ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
		uint32_t t2 =
		    (ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

void sha256_blocks_generic(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	for (; nblocks; nblocks--, p += SHA256_BLOCK_LEN)
		sha256_block(h, p);
}

/*
 * The compression function in use: sha256_blocks_first() until the first hash makes the automatic choice.
 * Accessed atomically (relaxed: every value it takes is a correct implementation, and none is ever freed).
 */
static sha256_blocks_fn sha256_blocks_first;
static sha256_blocks_fn *sha256_blocks = sha256_blocks_first;

static sha256_blocks_fn *impl_fn(enum sha256_impl impl)
{
	return impl == SHA256_IMPL_SHANI ? sha256_shani_blocks : sha256_blocks_generic;
}

/* The automatic choice, unless sha256_impl_set() made one first; returns the function now in use. */
static sha256_blocks_fn *blocks_resolve(void)
{
	sha256_blocks_fn *expect = sha256_blocks_first, *f = impl_fn(sha256_impl_auto());

	if (__atomic_compare_exchange_n(&sha256_blocks, &expect, f, false, __ATOMIC_RELAXED,
					__ATOMIC_RELAXED))
		return f;
	return expect;
}

static void sha256_blocks_first(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	blocks_resolve()(h, p, nblocks);
}

static inline void compress(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	__atomic_load_n(&sha256_blocks, __ATOMIC_RELAXED)(h, p, nblocks);
}

bool sha256_impl_supported(enum sha256_impl impl)
{
	return impl == SHA256_IMPL_GENERIC ||
	       (impl == SHA256_IMPL_SHANI && sha256_shani_supported());
}

enum sha256_impl sha256_impl_auto(void)
{
	const char *e = getenv("VNOISE_SHA256");

	if (e && !strcmp(e, "generic"))
		return SHA256_IMPL_GENERIC;
	return sha256_shani_supported() ? SHA256_IMPL_SHANI : SHA256_IMPL_GENERIC;
}

enum sha256_impl sha256_impl_get(void)
{
	sha256_blocks_fn *f = __atomic_load_n(&sha256_blocks, __ATOMIC_RELAXED);

	if (f == sha256_blocks_first)
		f = blocks_resolve();
	return f == sha256_shani_blocks ? SHA256_IMPL_SHANI : SHA256_IMPL_GENERIC;
}

int sha256_impl_set(enum sha256_impl impl)
{
	if (!sha256_impl_supported(impl))
		return -ENOTSUP;
	__atomic_store_n(&sha256_blocks, impl_fn(impl), __ATOMIC_RELAXED);
	return 0;
}

const char *sha256_impl_name(void)
{
	return sha256_impl_get() == SHA256_IMPL_SHANI ? "sha-ni" : "generic";
}

void sha256_init(struct sha256_ctx *c)
{
	static const uint32_t iv[8] = { 0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
					0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u };

	memcpy(c->h, iv, sizeof(iv));
	c->len = 0;
	c->fill = 0;
}

void sha256_update(struct sha256_ctx *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	if (!len)
		return;
	c->len += len;
	if (c->fill) {
		size_t n = SHA256_BLOCK_LEN - c->fill;

		if (n > len)
			n = len;
		memcpy(c->buf + c->fill, p, n);
		c->fill += n;
		p += n;
		len -= n;
		if (c->fill < SHA256_BLOCK_LEN)
			return;
		compress(c->h, c->buf, 1);
		c->fill = 0;
	}
	if (len >= SHA256_BLOCK_LEN) {
		size_t n = len / SHA256_BLOCK_LEN;

		compress(c->h, p, n);
		p += n * SHA256_BLOCK_LEN;
		len -= n * SHA256_BLOCK_LEN;
	}
	if (len) {
		memcpy(c->buf, p, len);
		c->fill = len;
	}
}

void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_DIGEST_LEN])
{
	uint64_t bits = c->len * 8;
	int i;

	/* Padding (FIPS 180-4 5.1.1): 0x80, zeros up to 56 mod 64, then the bit length big-endian. */
	c->buf[c->fill++] = 0x80;
	if (c->fill > SHA256_BLOCK_LEN - 8) {
		memset(c->buf + c->fill, 0, SHA256_BLOCK_LEN - c->fill);
		compress(c->h, c->buf, 1);
		c->fill = 0;
	}
	memset(c->buf + c->fill, 0, SHA256_BLOCK_LEN - 8 - c->fill);
	store_be32(c->buf + 56, bits >> 32);
	store_be32(c->buf + 60, (uint32_t)bits);
	compress(c->h, c->buf, 1);
	for (i = 0; i < 8; i++)
		store_be32(out + 4 * i, c->h[i]);
	wipe(c, sizeof(*c));
}

void sha256_digest(const void *data, size_t len, uint8_t out[SHA256_DIGEST_LEN])
{
	struct sha256_ctx c;

	sha256_init(&c);
	sha256_update(&c, data, len);
	sha256_final(&c, out);
}

void sha256_hmac_init(struct sha256_hmac_ctx *c, const void *key, size_t keylen)
{
	uint8_t k[SHA256_BLOCK_LEN] = { 0 };
	uint8_t pad[SHA256_BLOCK_LEN];
	int i;

	/* K0 (RFC 2104 step 1-3): a long key is replaced by its hash, then zero-padded to the block. */
	if (keylen > SHA256_BLOCK_LEN)
		sha256_digest(key, keylen, k);
	else if (keylen)
		memcpy(k, key, keylen);
	for (i = 0; i < SHA256_BLOCK_LEN; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&c->inner);
	sha256_update(&c->inner, pad, sizeof(pad));
	for (i = 0; i < SHA256_BLOCK_LEN; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&c->outer);
	sha256_update(&c->outer, pad, sizeof(pad));
	wipe(k, sizeof(k));
	wipe(pad, sizeof(pad));
}

void sha256_hmac_update(struct sha256_hmac_ctx *c, const void *data, size_t len)
{
	sha256_update(&c->inner, data, len);
}

void sha256_hmac_final(struct sha256_hmac_ctx *c, uint8_t out[SHA256_DIGEST_LEN])
{
	uint8_t ih[SHA256_DIGEST_LEN];

	sha256_final(&c->inner, ih);
	sha256_update(&c->outer, ih, sizeof(ih));
	sha256_final(&c->outer, out);
	wipe(ih, sizeof(ih));
}

void sha256_hmac(const void *key, size_t keylen, const void *data, size_t len,
		 uint8_t out[SHA256_DIGEST_LEN])
{
	struct sha256_hmac_ctx c;

	sha256_hmac_init(&c, key, keylen);
	sha256_hmac_update(&c, data, len);
	sha256_hmac_final(&c, out);
}

bool sha256_equal_ct(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t diff = 0;
	size_t i;

	/* volatile loads and no early exit: every byte is read and folded in, whatever the data. */
	for (i = 0; i < len; i++)
		diff |= x[i] ^ y[i];
	return diff == 0;
}
