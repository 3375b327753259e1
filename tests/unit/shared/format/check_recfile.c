/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/format/recfile: the chunk header CRC and payload length rules both ends apply, and
 * the key=value parser of text payloads (empty lines, lines without '=', CRLF, '=' inside values, exact key
 * match).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "util/crc32.h"
#include "format/recfile.h"

START_TEST(test_chunk_rules)
{
	struct vn_rec_chunk h;
	uint32_t crc;

	memset(&h, 0, sizeof(h));
	h.magic = VN_CHUNK_MAGIC;
	h.type = VN_CHUNK_META;
	h.payload_len = 12;
	h.seq = 3;
	crc = recfile_chunk_crc(&h);
	ck_assert_uint_eq(crc, crc32_update(0, &h, sizeof(h)));
	h.header_crc32 = crc; /* the field itself does not count */
	ck_assert_uint_eq(recfile_chunk_crc(&h), crc);
	h.seq = 4;
	ck_assert_uint_ne(recfile_chunk_crc(&h), crc);

	ck_assert(recfile_chunk_len_ok(VN_CHUNK_SAMPLES, 0));
	ck_assert(recfile_chunk_len_ok(VN_CHUNK_SAMPLES, 3 * sizeof(struct vn_sample)));
	ck_assert(!recfile_chunk_len_ok(VN_CHUNK_SAMPLES, sizeof(struct vn_sample) + 1));
	ck_assert(recfile_chunk_len_ok(VN_CHUNK_EVENTS, 2 * sizeof(struct vn_event)));
	ck_assert(!recfile_chunk_len_ok(VN_CHUNK_EVENTS, sizeof(struct vn_sample)));
	ck_assert(recfile_chunk_len_ok(VN_CHUNK_META, 7));
	ck_assert(recfile_chunk_len_ok(VN_CHUNK_END, 0));
	ck_assert(recfile_chunk_len_ok(VN_CHUNK_DTL_SPANS, 2 * sizeof(struct vn_rec_dtl_span)));
	ck_assert(!recfile_chunk_len_ok(VN_CHUNK_DTL_SPANS, 33));
	ck_assert(recfile_chunk_len_ok(VN_CHUNK_DTL_GAPS, 192));
	ck_assert(!recfile_chunk_len_ok(VN_CHUNK_DTL_GAPS, 32));
	ck_assert(recfile_chunk_len_ok(VN_CHUNK_DTL_CAUSES, 5));
}
END_TEST

START_TEST(test_kv)
{
	static const char txt[] = "a=1\n\nnoequals\r\nkey=va=lue\r\nempty=\nlast=x";
	const char *pos = txt, *end = txt + sizeof(txt) - 1, *val;
	struct recfile_kv kv;
	size_t vlen;

	ck_assert_int_eq(recfile_kv_next(&pos, end, &kv), 1);
	ck_assert_int_eq((int)kv.key_len, 1);
	ck_assert_int_eq(memcmp(kv.key, "a", 1), 0);
	ck_assert_int_eq(memcmp(kv.val, "1", kv.val_len), 0);
	ck_assert_int_eq(recfile_kv_next(&pos, end, &kv), 1);
	ck_assert_int_eq(memcmp(kv.key, "key", kv.key_len), 0);
	ck_assert_int_eq((int)kv.val_len, 6);
	ck_assert_int_eq(memcmp(kv.val, "va=lue", 6), 0);
	ck_assert_int_eq(recfile_kv_next(&pos, end, &kv), 1);
	ck_assert_int_eq((int)kv.val_len, 0);
	ck_assert_int_eq(recfile_kv_next(&pos, end, &kv), 1);
	ck_assert_int_eq((int)kv.val_len, 1);
	ck_assert_int_eq(kv.val[0], 'x');
	ck_assert_int_eq(recfile_kv_next(&pos, end, &kv), 0);
	ck_assert_int_eq(recfile_kv_next(&pos, end, &kv), 0);

	ck_assert(recfile_kv_get(txt, sizeof(txt) - 1, "key", &val, &vlen));
	ck_assert_int_eq((int)vlen, 6);
	ck_assert(!recfile_kv_get(txt, sizeof(txt) - 1, "ke", &val, &vlen));
	ck_assert(!recfile_kv_get(txt, sizeof(txt) - 1, "noequals", &val, &vlen));
}
END_TEST

static Suite *recfile_suite(void)
{
	Suite *s = suite_create("recfile");
	TCase *tc;

	tc = tcase_create("chunk");
	tcase_add_test(tc, test_chunk_rules);
	suite_add_tcase(s, tc);

	tc = tcase_create("text");
	tcase_add_test(tc, test_kv);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(recfile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
