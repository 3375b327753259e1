/* SPDX-License-Identifier: MIT */
/*
 * fuzz_input: the scripted fuzz targets' reader of the fuzzer's bytes (fuzz_shm, fuzz_dtl): a cursor that
 * yields 0 once the input is used up, so that every script runs to its end whatever the input's length.
 */
#ifndef VNOISE_TESTS_FUZZ_INPUT_H
#define VNOISE_TESTS_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fuzz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

/* Little-endian, the missing bytes 0. */
static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)fuzz_u8(in) << (8 * i);
	return v;
}

/* len bytes into out, zero-filled past the input's end. */
static inline void fuzz_bytes(struct fuzz_in *in, void *out, size_t len)
{
	size_t k = len < in->n ? len : in->n;

	memset(out, 0, len);
	memcpy(out, in->p, k);
	in->p += k;
	in->n -= k;
}

#endif
