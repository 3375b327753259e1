/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/sha256: the FIPS 180-2 appendix B / NIST CAVS example digests, the RFC 4231 HMAC
 * test cases 1-7 (including keys longer than the block), incremental updates split at every offset against
 * the one-shot result, reuse of a keyed HMAC context, and the constant-time comparison. The vector tests run
 * once per compression function (portable C, and SHA-NI when this CPU has it); then the two are compared on
 * pseudo-random messages, keys, alignments and splits, and the choice at first use (VNOISE_SHA256) is checked
 * in a fresh process (this program run again with --print-impl).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "util/sha256.h"
#include "util/sha256_priv.h"

/* Digest as lowercase hex, for readable assertion messages. */
static void hex(const uint8_t *d, size_t len, char *out)
{
	size_t i;

	for (i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

static void check_digest(const void *msg, size_t len, const char *want)
{
	uint8_t d[SHA256_DIGEST_LEN];
	char h[2 * SHA256_DIGEST_LEN + 1];

	sha256_digest(msg, len, d);
	hex(d, sizeof(d), h);
	ck_assert_str_eq(h, want);
}

START_TEST(test_fips_vectors)
{
	check_digest("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_digest("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_digest(NULL, 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	/* 448 bits: the padding no longer fits the block, a second block holds the length */
	check_digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check_digest("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
		     "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		     112, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}
END_TEST

START_TEST(test_million_a)
{
	uint8_t d[SHA256_DIGEST_LEN];
	char h[2 * SHA256_DIGEST_LEN + 1];
	char *a = malloc(1000000);
	struct sha256_ctx c;
	int i;

	ck_assert_ptr_nonnull(a);
	memset(a, 'a', 1000000);
	check_digest(a, 1000000,
		     "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* the same through odd-sized updates that straddle block boundaries */
	sha256_init(&c);
	for (i = 0; i < 1000000; i += 999)
		sha256_update(&c, a + i, 1000000 - i < 999 ? 1000000 - i : 999);
	sha256_final(&c, d);
	hex(d, sizeof(d), h);
	ck_assert_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}
END_TEST

START_TEST(test_split_every_offset)
{
	uint8_t msg[200], whole[SHA256_DIGEST_LEN], part[SHA256_DIGEST_LEN];
	struct sha256_ctx c;
	size_t len, cut;

	for (len = 0; len < sizeof(msg); len++)
		msg[len] = (uint8_t)(len * 7 + 3);
	/* every length around the 55/56/64-byte padding edges, cut at every point */
	for (len = 0; len <= sizeof(msg); len++) {
		sha256_digest(msg, len, whole);
		for (cut = 0; cut <= len; cut++) {
			sha256_init(&c);
			sha256_update(&c, msg, cut);
			sha256_update(&c, NULL, 0);
			sha256_update(&c, msg + cut, len - cut);
			sha256_final(&c, part);
			ck_assert_msg(!memcmp(whole, part, sizeof(part)), "len %zu cut %zu", len,
				      cut);
		}
	}
}
END_TEST

struct hmac_case {
	const char *name;
	uint8_t key[131];
	size_t keylen;
	const char *data;
	uint8_t fill; /* data is this byte repeated datalen times when data is NULL */
	size_t datalen;
	const char *mac; /* hex; test case 5 gives only the first 128 bits */
};

static void fill_case(struct hmac_case *t, int n)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	switch (n) {
	case 1:
		memset(t->key, 0x0b, t->keylen = 20);
		t->data = "Hi There";
		t->mac = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
		break;
	case 2:
		memcpy(t->key, "Jefe", t->keylen = 4);
		t->data = "what do ya want for nothing?";
		t->mac = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
		break;
	case 3:
		memset(t->key, 0xaa, t->keylen = 20);
		t->fill = 0xdd;
		t->datalen = 50;
		t->mac = "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe";
		break;
	case 4:
		for (i = 0; i < 25; i++)
			t->key[i] = i + 1;
		t->keylen = 25;
		t->fill = 0xcd;
		t->datalen = 50;
		t->mac = "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b";
		break;
	case 5:
		memset(t->key, 0x0c, t->keylen = 20);
		t->data = "Test With Truncation";
		t->mac = "a3b6167473100ee06e0c796c2955552b";
		break;
	case 6:
		memset(t->key, 0xaa, t->keylen = 131);
		t->data = "Test Using Larger Than Block-Size Key - Hash Key First";
		t->mac = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
		break;
	case 7:
		memset(t->key, 0xaa, t->keylen = 131);
		t->data = "This is a test using a larger than block-size key and a larger than "
			  "block-size data. The key needs to be hashed before being used by the "
			  "HMAC algorithm.";
		t->mac = "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2";
		break;
	}
}

/* RFC 4231 section 4, test cases 1..7 (_i is the loop index). */
START_TEST(test_rfc4231)
{
	struct hmac_case t;
	uint8_t data[64], mac[SHA256_DIGEST_LEN];
	char h[2 * SHA256_DIGEST_LEN + 1];
	const void *d;
	size_t dlen;

	fill_case(&t, _i);
	if (t.data) {
		d = t.data;
		dlen = strlen(t.data);
	} else {
		memset(data, t.fill, t.datalen);
		d = data;
		dlen = t.datalen;
	}
	sha256_hmac(t.key, t.keylen, d, dlen, mac);
	hex(mac, sizeof(mac), h);
	h[strlen(t.mac)] = '\0';
	ck_assert_msg(!strcmp(h, t.mac), "test case %d: %s, want %s", _i, h, t.mac);
}
END_TEST

START_TEST(test_hmac_incremental_and_reuse)
{
	static const char key[] = "a shared key of the cluster";
	static const char msg[] =
	    "first message, longer than one block so that updates straddle blocks...";
	uint8_t one[SHA256_DIGEST_LEN], inc[SHA256_DIGEST_LEN], other[SHA256_DIGEST_LEN];
	struct sha256_hmac_ctx keyed, c;
	size_t cut;

	sha256_hmac(key, strlen(key), msg, strlen(msg), one);
	sha256_hmac_init(&keyed, key, strlen(key));
	for (cut = 0; cut <= strlen(msg); cut++) {
		c = keyed; /* keyed once, copied per message */
		sha256_hmac_update(&c, msg, cut);
		sha256_hmac_update(&c, msg + cut, strlen(msg) - cut);
		sha256_hmac_final(&c, inc);
		ck_assert_msg(!memcmp(one, inc, sizeof(inc)), "cut %zu", cut);
	}
	/* a different key or message gives a different MAC */
	sha256_hmac(key, strlen(key) - 1, msg, strlen(msg), other);
	ck_assert(memcmp(one, other, sizeof(other)));
	sha256_hmac(key, strlen(key), msg, strlen(msg) - 1, other);
	ck_assert(memcmp(one, other, sizeof(other)));
}
END_TEST

START_TEST(test_equal_ct)
{
	uint8_t a[32], b[32];
	int i;

	for (i = 0; i < 32; i++)
		a[i] = b[i] = (uint8_t)(i * 13);
	ck_assert(sha256_equal_ct(a, b, sizeof(a)));
	ck_assert(sha256_equal_ct(a, b, 0));
	for (i = 0; i < 32 * 8; i++) {
		b[i / 8] ^= 1u << (i % 8);
		ck_assert_msg(!sha256_equal_ct(a, b, sizeof(a)), "bit %d", i);
		b[i / 8] ^= 1u << (i % 8);
	}
	ck_assert(sha256_equal_ct(a, b, sizeof(a)));
}
END_TEST

/* Pseudo-random bytes (xorshift64, fixed seed: a failure reproduces). */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (rng >> 11) % n;
}

static void rnd_fill(uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)rnd(256);
}

static void use(enum sha256_impl impl)
{
	ck_assert_int_eq(sha256_impl_set(impl), 0);
	ck_assert_int_eq(sha256_impl_get(), impl);
}

static void setup_generic(void)
{
	use(SHA256_IMPL_GENERIC);
}

static void setup_shani(void)
{
	use(SHA256_IMPL_SHANI);
}

/* Digest of msg[0..len) by impl: one-shot, or through random-sized updates when split. */
static void digest_by(enum sha256_impl impl, const uint8_t *msg, size_t len, bool split,
		      uint8_t out[SHA256_DIGEST_LEN])
{
	struct sha256_ctx c;
	size_t off, n;

	use(impl);
	if (!split) {
		sha256_digest(msg, len, out);
		return;
	}
	sha256_init(&c);
	for (off = 0; off < len; off += n) {
		n = rnd(3) ? rnd(SHA256_BLOCK_LEN + 1) : rnd(4 * SHA256_BLOCK_LEN);
		if (n > len - off)
			n = len - off;
		sha256_update(&c, msg + off, n);
	}
	sha256_final(&c, out);
}

/* Both implementations, every length 0..300 at every alignment mod 16, one-shot and split; HMAC too. */
START_TEST(test_cross_short)
{
	uint8_t buf[300 + 16], key[140], g[SHA256_DIGEST_LEN], s[SHA256_DIGEST_LEN];
	size_t len, al, klen;

	for (len = 0; len <= 300; len++) {
		for (al = 0; al < 16; al++) {
			const uint8_t *m = buf + al;

			rnd_fill(buf, sizeof(buf));
			digest_by(SHA256_IMPL_GENERIC, m, len, false, g);
			digest_by(SHA256_IMPL_SHANI, m, len, false, s);
			ck_assert_msg(!memcmp(g, s, sizeof(g)), "digest len %zu align %zu", len,
				      al);
			digest_by(SHA256_IMPL_SHANI, m, len, true, s);
			ck_assert_msg(!memcmp(g, s, sizeof(g)), "split len %zu align %zu", len, al);

			klen = rnd(sizeof(key) + 1);
			rnd_fill(key, klen);
			use(SHA256_IMPL_GENERIC);
			sha256_hmac(key, klen, m, len, g);
			use(SHA256_IMPL_SHANI);
			sha256_hmac(key, klen, m, len, s);
			ck_assert_msg(!memcmp(g, s, sizeof(g)), "hmac len %zu align %zu keylen %zu",
				      len, al, klen);
		}
	}
}
END_TEST

/* A few long messages (up to 1 MiB + 13, odd alignment), one-shot and through random splits. */
START_TEST(test_cross_long)
{
	static const size_t lens[] = { 1024, 4095, 65536, 65536 + 63, (1 << 20) + 13 };
	uint8_t *buf = malloc((1 << 20) + 64), g[SHA256_DIGEST_LEN], s[SHA256_DIGEST_LEN];
	size_t i;

	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		const uint8_t *m = buf + (i * 5) % 16;

		rnd_fill(buf, lens[i] + 16);
		digest_by(SHA256_IMPL_GENERIC, m, lens[i], false, g);
		digest_by(SHA256_IMPL_SHANI, m, lens[i], false, s);
		ck_assert_msg(!memcmp(g, s, sizeof(g)), "digest len %zu", lens[i]);
		digest_by(SHA256_IMPL_SHANI, m, lens[i], true, s);
		ck_assert_msg(!memcmp(g, s, sizeof(g)), "split len %zu", lens[i]);
		digest_by(SHA256_IMPL_GENERIC, m, lens[i], true, s);
		ck_assert_msg(!memcmp(g, s, sizeof(g)), "generic split len %zu", lens[i]);
	}
	free(buf);
}
END_TEST

/* A context keyed once and copied per message gives sha256_hmac(), for keys around the block size. */
START_TEST(test_hmac_keyed_vs_oneshot)
{
	static const size_t klens[] = { 0, 1, 32, 63, 64, 65, 131 }, fixed[] = { 0, 88, 1400 };
	uint8_t key[131], msg[1400], one[SHA256_DIGEST_LEN], kd[SHA256_DIGEST_LEN];
	struct sha256_hmac_ctx keyed, c;
	size_t k, n, len;

	for (k = 0; k < sizeof(klens) / sizeof(klens[0]); k++) {
		rnd_fill(key, klens[k]);
		sha256_hmac_init(&keyed, key, klens[k]);
		for (n = 0; n < 64; n++) {
			len = n < 3 ? fixed[n] : rnd(sizeof(msg) + 1);
			rnd_fill(msg, len);
			sha256_hmac(key, klens[k], msg, len, one);
			c = keyed;
			sha256_hmac_update(&c, msg, len);
			sha256_hmac_final(&c, kd);
			ck_assert_msg(!memcmp(one, kd, sizeof(kd)), "keylen %zu len %zu", klens[k],
				      len);
		}
	}
}
END_TEST

/* VNOISE_SHA256 as sha256_impl_auto() reads it, and sha256_impl_set() on a CPU without SHA-NI. */
START_TEST(test_impl_auto)
{
	enum sha256_impl best = sha256_shani_supported() ? SHA256_IMPL_SHANI : SHA256_IMPL_GENERIC;

	ck_assert_int_eq(setenv("VNOISE_SHA256", "generic", 1), 0);
	ck_assert_int_eq(sha256_impl_auto(), SHA256_IMPL_GENERIC);
	ck_assert_int_eq(setenv("VNOISE_SHA256", "something-else", 1), 0);
	ck_assert_int_eq(sha256_impl_auto(), best);
	ck_assert_int_eq(unsetenv("VNOISE_SHA256"), 0);
	ck_assert_int_eq(sha256_impl_auto(), best);
	ck_assert(sha256_impl_supported(SHA256_IMPL_GENERIC));
	if (best == SHA256_IMPL_GENERIC)
		ck_assert_int_eq(sha256_impl_set(SHA256_IMPL_SHANI), -ENOTSUP);
}
END_TEST

/* What a fresh copy of this program picks at its first hash, with VNOISE_SHA256 set to env (NULL: unset). */
static void fresh_impl(const char *env, char *out, size_t outlen)
{
	char self[4096];
	ssize_t n, got = 0;
	int fd[2], st;
	pid_t pid;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	ck_assert_int_eq(pipe(fd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fd[1], STDOUT_FILENO);
		close(fd[0]);
		close(fd[1]);
		if (env ? setenv("VNOISE_SHA256", env, 1) : unsetenv("VNOISE_SHA256"))
			_exit(126);
		execl(self, self, "--print-impl", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (got < (ssize_t)outlen - 1 && (n = read(fd[0], out + got, outlen - 1 - got)) > 0)
		got += n;
	out[got] = '\0';
	close(fd[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}

START_TEST(test_impl_first_use)
{
	const char *best = sha256_shani_supported() ? "sha-ni\n" : "generic\n";
	char out[64];

	fresh_impl("generic", out, sizeof(out));
	ck_assert_str_eq(out, "generic\n");
	fresh_impl(NULL, out, sizeof(out));
	ck_assert_str_eq(out, best);
}
END_TEST

/* The FIPS and RFC 4231 tests, run by a TCase whose fixture selects one implementation. */
static TCase *vector_tcase(const char *name, void (*setup)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_fips_vectors);
	tcase_add_test(tc, test_million_a);
	tcase_add_test(tc, test_split_every_offset);
	tcase_add_loop_test(tc, test_rfc4231, 1, 8);
	tcase_add_test(tc, test_hmac_incremental_and_reuse);
	tcase_add_test(tc, test_hmac_keyed_vs_oneshot);
	return tc;
}

static Suite *sha256_suite(void)
{
	Suite *s = suite_create("sha256");
	TCase *tx = tcase_create("cross");
	TCase *tm = tcase_create("misc");
	bool shani = sha256_shani_supported();

	suite_add_tcase(s, vector_tcase("generic", setup_generic));
	if (shani) {
		suite_add_tcase(s, vector_tcase("sha-ni", setup_shani));
		tcase_add_test(tx, test_cross_short);
		tcase_add_test(tx, test_cross_long);
		tcase_set_timeout(tx,
				  30); /* 10k short messages x 4 and 2 MiB, slow under sanitizers */
		suite_add_tcase(s, tx);
	} else {
		printf("SKIP: sha-ni vectors and cross-check: this CPU has no SHA extensions "
		       "(cpuid 7 EBX bit 29, SSSE3, SSE4.1)\n");
	}
	tcase_add_test(tm, test_impl_auto);
	tcase_add_test(tm, test_impl_first_use);
	tcase_add_test(tm, test_equal_ct);
	suite_add_tcase(s, tm);
	return s;
}

/* With --print-impl: hash once and print the implementation chosen (for test_impl_first_use). */
int main(int argc, char **argv)
{
	SRunner *sr;
	uint8_t d[SHA256_DIGEST_LEN];
	int failed;

	if (argc == 2 && !strcmp(argv[1], "--print-impl")) {
		sha256_digest("abc", 3, d);
		printf("%s\n", sha256_impl_name());
		return 0;
	}
	sr = srunner_create(sha256_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
