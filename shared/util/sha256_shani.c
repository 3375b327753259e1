/* SPDX-License-Identifier: MIT */
/*
 * sha256_shani: the SHA-256 compression function on the x86 SHA extensions (sha256rnds2 does two rounds,
 * sha256msg1/msg2 the message schedule), about 5x the portable C. Only these functions are compiled for
 * SHA/SSE4.1 (target attribute), so the rest of the build, and the static guest binary, still run on any
 * x86-64; sha256.c calls them only after sha256_shani_supported() said yes. Off x86 this file is a stub.
 */
#include "util/sha256.h"
#include "util/sha256_priv.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

#define SHANI_TARGET __attribute__((target("sha,sse4.1")))
#define CPUID7_EBX_SHA (1u << 29)

bool sha256_shani_supported(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSSE3) || !(c & bit_SSE4_1))
		return false;
	/* __get_cpuid_count() fails when leaf 7 is beyond the maximum leaf */
	if (!__get_cpuid_count(7, 0, &a, &b, &c, &d))
		return false;
	return b & CPUID7_EBX_SHA;
}

/* Rounds 4i..4i+3 on the state halves (ABEF, CDGH) with message words w. */
static inline SHANI_TARGET void rounds4(__m128i *abef, __m128i *cdgh, __m128i w, int i)
{
	__m128i m = _mm_add_epi32(w, _mm_load_si128((const __m128i *)&sha256_k[4 * i]));

	*cdgh = _mm_sha256rnds2_epu32(*cdgh, *abef, m);
	*abef = _mm_sha256rnds2_epu32(*abef, *cdgh, _mm_shuffle_epi32(m, 0x0e));
}

/* W[t+16..t+19] from W[t..t+3] (a), W[t+4..] (b), W[t+8..] (c), W[t+12..] (d). */
static inline SHANI_TARGET __m128i schedule(__m128i a, __m128i b, __m128i c, __m128i d)
{
	__m128i x = _mm_add_epi32(_mm_sha256msg1_epu32(a, b), _mm_alignr_epi8(d, c, 4));

	return _mm_sha256msg2_epu32(x, d);
}

SHANI_TARGET void sha256_shani_blocks(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
	__m128i abef, cdgh, abef0, cdgh0, t, w0, w1, w2, w3;
	int i;

	/* h[0..7] = A..H; sha256rnds2 wants the halves as ABEF and CDGH (A in the top lane) */
	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xb1); /* CDAB */
	cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1b); /* EFGH */
	abef = _mm_alignr_epi8(t, cdgh, 8);
	cdgh = _mm_blend_epi16(cdgh, t, 0xf0);
	for (; nblocks; nblocks--, p += SHA256_BLOCK_LEN) {
		abef0 = abef;
		cdgh0 = cdgh;
		w0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 0)), bswap);
		w1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
		w2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
		w3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);
		rounds4(&abef, &cdgh, w0, 0);
		rounds4(&abef, &cdgh, w1, 1);
		rounds4(&abef, &cdgh, w2, 2);
		rounds4(&abef, &cdgh, w3, 3);
		for (i = 4; i < 16; i += 4) {
			w0 = schedule(w0, w1, w2, w3);
			rounds4(&abef, &cdgh, w0, i);
			w1 = schedule(w1, w2, w3, w0);
			rounds4(&abef, &cdgh, w1, i + 1);
			w2 = schedule(w2, w3, w0, w1);
			rounds4(&abef, &cdgh, w2, i + 2);
			w3 = schedule(w3, w0, w1, w2);
			rounds4(&abef, &cdgh, w3, i + 3);
		}
		abef = _mm_add_epi32(abef, abef0);
		cdgh = _mm_add_epi32(cdgh, cdgh0);
	}
	/* back to A..H */
	t = _mm_shuffle_epi32(abef, 0x1b); /* FEBA */
	cdgh = _mm_shuffle_epi32(cdgh, 0xb1); /* DCHG */
	_mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, cdgh, 0xf0)); /* DCBA */
	_mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(cdgh, t, 8)); /* HGFE */
}

#else

bool sha256_shani_supported(void)
{
	return false;
}

void sha256_shani_blocks(uint32_t h[8], const uint8_t *p, size_t nblocks)
{
	sha256_blocks_generic(h, p, nblocks);
}

#endif
