/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/sha256: the FIPS 180-2 appendix B / NIST CAVS example digests, the RFC 4231 HMAC
 * test cases 1-7 (including keys longer than the block), incremental updates split at every offset against
 * the one-shot result, reuse of a keyed HMAC context, and the constant-time comparison.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sha256.h"

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

static Suite *sha256_suite(void)
{
	Suite *s = suite_create("sha256");
	TCase *tc = tcase_create("sha256");
	TCase *th = tcase_create("hmac");

	tcase_add_test(tc, test_fips_vectors);
	tcase_add_test(tc, test_million_a);
	tcase_add_test(tc, test_split_every_offset);
	suite_add_tcase(s, tc);
	tcase_add_loop_test(th, test_rfc4231, 1, 8);
	tcase_add_test(th, test_hmac_incremental_and_reuse);
	tcase_add_test(th, test_equal_ct);
	suite_add_tcase(s, th);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sha256_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
