/* SPDX-License-Identifier: MIT */
/*
 * sha256_bench: speed of shared/util/sha256 on one core. Long-message hashing in MB/s (sha256_digest() of 64 KiB),
 * then HMAC-SHA256 under a 32-byte key at the report datagram sizes 88, 472 and 1400 bytes, both one-shot
 * (sha256_hmac(), which keys again per message as datagram_parse() does) and from a context keyed once and
 * copied per message. Each figure is the median of several repeats of ~40 ms (CLOCK_MONOTONIC), for the
 * portable C compression function and then, when the CPU has them, the x86 SHA extensions (whatever
 * VNOISE_SHA256 says; the line "default" shows the choice the environment leaves to a real program). Prints
 * figures, never pass/fail.
 *
 *   make build/bench/sha256_bench && build/bench/sha256_bench [repeats]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/sha256.h"
#include "util/sha256_priv.h"
#include "lib/benchutil.h"

#define DEFAULT_REPEATS 7ULL
#define MAX_REPEATS 101
#define REPEAT_S 0.04 /* seconds per repeat, about */
#define LONG_LEN 65536 /* bytes hashed per call for the MB/s figure */

enum op { OP_DIGEST, OP_HMAC, OP_HMAC_KEYED };

static uint8_t msg[LONG_LEN];
static const uint8_t key[32] = "0123456789abcdef0123456789abcde";
static struct sha256_hmac_ctx keyed;
static volatile uint8_t sink;

/* n calls of op over len bytes; returns the seconds they took */
static double run(enum op op, size_t len, uint64_t n)
{
	uint8_t out[SHA256_DIGEST_LEN];
	struct sha256_hmac_ctx c;
	double t0 = now_s();
	uint64_t i;

	for (i = 0; i < n; i++) {
		msg[0] = (uint8_t)i; /* a different message every time */
		switch (op) {
		case OP_DIGEST:
			sha256_digest(msg, len, out);
			break;
		case OP_HMAC:
			sha256_hmac(key, sizeof(key), msg, len, out);
			break;
		case OP_HMAC_KEYED:
			c = keyed;
			sha256_hmac_update(&c, msg, len);
			sha256_hmac_final(&c, out);
			break;
		}
		sink ^= out[0];
	}
	return now_s() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median over repeats of the calls per second of op over len bytes. */
static double rate(enum op op, size_t len, int repeats)
{
	double r[MAX_REPEATS], t;
	uint64_t n = 16;
	int i;

	/* calibrate: a count that takes about REPEAT_S (this also warms caches and the clock) */
	while ((t = run(op, len, n)) < REPEAT_S / 4)
		n *= 2;
	n = (uint64_t)((double)n * REPEAT_S / t) + 1;
	for (i = 0; i < repeats; i++)
		r[i] = (double)n / run(op, len, n);
	qsort(r, repeats, sizeof(r[0]), cmp_double);
	return r[repeats / 2];
}

static void report(int repeats)
{
	static const size_t sizes[] = { 88, 472, 1400 };
	size_t i;

	printf("  digest %d KiB: %.1f MB/s\n", LONG_LEN / 1024,
	       rate(OP_DIGEST, LONG_LEN, repeats) * LONG_LEN / 1e6);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double one = rate(OP_HMAC, sizes[i], repeats);
		double kd = rate(OP_HMAC_KEYED, sizes[i], repeats);

		printf("  hmac %4zu B: one-shot %9.0f /s (%6.0f ns), keyed %9.0f /s (%6.0f ns)\n",
		       sizes[i], one, 1e9 / one, kd, 1e9 / kd);
	}
}

int main(int argc, char **argv)
{
	uint64_t repeats = DEFAULT_REPEATS;
	size_t i;

	if (argc > 2 || (argc == 2 && (parse_count(argv[1], &repeats) || repeats > MAX_REPEATS))) {
		fprintf(stderr, "usage: %s [repeats]  (default %llu, at most %d)\n", argv[0],
			(unsigned long long)DEFAULT_REPEATS, MAX_REPEATS);
		return 2;
	}
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 131 + 7);
	sha256_hmac_init(&keyed, key, sizeof(key));
	printf("sha256 on one core, median of %llu repeats; default here: %s\n",
	       (unsigned long long)repeats, sha256_impl_name());
	printf("generic (portable C):\n");
	if (sha256_impl_set(SHA256_IMPL_GENERIC))
		return 1; /* cannot happen: every CPU runs it */
	report((int)repeats);
	if (sha256_impl_set(SHA256_IMPL_SHANI)) {
		printf("sha-ni: not measured, this CPU has no SHA extensions\n");
	} else {
		printf("sha-ni (x86 SHA extensions):\n");
		report((int)repeats);
	}
	printf("reproduce: make build/bench/sha256_bench && build/bench/sha256_bench %llu\n",
	       (unsigned long long)repeats);
	return 0;
}
