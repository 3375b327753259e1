/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/channel/shmwriter, the guest end of the shared-memory channel (protocol/shm.h): the
 * region's size for a geometry and the largest geometry that fits, the header it publishes (checked by the
 * region's validator, shmregion), its arguments, the host's mailbox part it never writes, and the epoch a
 * restarted agent picks. Publishing records is tested end to end in check_shmreader.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "channel/shmregion.h"
#include "channel/shmwriter.h"
#include "shm_check.h"

START_TEST(test_layout_sizes)
{
	ck_assert_uint_eq(shmwriter_region_bytes(1, 1), 512 + 64 + 64);
	ck_assert_uint_eq(shmwriter_region_bytes(2, 64), 512 + 2 * 64 + 2 * 64 * 64);
	ck_assert_uint_eq(shmwriter_region_bytes(0, 64), 0);
	ck_assert_uint_eq(shmwriter_region_bytes(257, 64), 0);
	ck_assert_uint_eq(shmwriter_region_bytes(1, 0), 0);
	ck_assert_uint_eq(shmwriter_region_bytes(1, 3), 0);
	ck_assert_uint_eq(shmwriter_region_bytes(1, VN_SHM_MAX_SLOTS * 2), 0);
	ck_assert_uint_ne(shmwriter_region_bytes(VN_SHM_MAX_RINGS, VN_SHM_MAX_SLOTS), 0);
	/* fit: the largest power of two that fits */
	/* the guest area is the lower half of the region */
	ck_assert_uint_eq(shmwriter_fit_slots(64 * 1024, 2), 128);
	ck_assert_uint_le(shmwriter_region_bytes(4, shmwriter_fit_slots(1 << 20, 4)), 1 << 19);
	ck_assert_uint_gt(shmwriter_region_bytes(4, 2 * shmwriter_fit_slots(1 << 20, 4)), 1 << 19);
	ck_assert_uint_eq(shmwriter_fit_slots(1024, 1), 0);
	ck_assert_uint_eq(shmwriter_fit_slots(1u << 30, 1), VN_SHM_MAX_SLOTS);
	ck_assert_uint_eq(shmwriter_fit_slots(1 << 20, 0), 0);
}
END_TEST

START_TEST(test_init_header)
{
	void *base = region_new(RSIZE);
	struct shm_writer *w = shmwriter_init(base, RSIZE, 2, 64, 7);
	struct vn_shm_header *h = H(base);
	char why[128];
	size_t end = shmwriter_region_bytes(2, 64), i;

	ck_assert_ptr_nonnull(w);
	ck_assert_int_eq(memcmp(h->magic, "VNOISSHM", 8), 0);
	ck_assert_uint_eq(h->version, 3);
	ck_assert_uint_eq(h->header_size, 512);
	ck_assert_uint_eq(h->region_size, RSIZE);
	ck_assert_uint_eq(h->epoch, 7);
	ck_assert_uint_eq(h->nrings, 2);
	ck_assert_uint_eq(h->slots_per_ring, 64);
	ck_assert_uint_eq(h->slot_size, 64);
	ck_assert_uint_eq(h->ring_ctl_size, 64);
	ck_assert_uint_eq(h->ring_ctl_offset, 512);
	ck_assert_uint_eq(h->slots_offset, 512 + 2 * 64);
	ck_assert_uint_eq(end, 512 + 2 * 64 + 2 * 64 * 64);
	for (i = 128; i < 512; i++)
		ck_assert_uint_eq(((unsigned char *)base)[i], 0);
	for (i = 512; i < end; i++)
		ck_assert_uint_eq(((unsigned char *)base)[i], 0);
	ck_assert_int_eq(shmregion_header_valid(h, RSIZE, why, sizeof(why)), 0);
	ck_assert_uint_eq(shmwriter_head(w, 0), 0);
	ck_assert_uint_eq(shmwriter_head(w, 5), 0);
	shmwriter_free(w);
	shmwriter_free(NULL);
	free(base);
}
END_TEST

START_TEST(test_init_args)
{
	void *base = region_new(RSIZE);

	errno = 0;
	ck_assert_ptr_null(shmwriter_init(NULL, RSIZE, 1, 8, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init((char *)base + 8, RSIZE / 2, 1, 8, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE - 64, 1, 8, 1)); /* not a power of two */
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 1, 8, 0)); /* epoch 0 */
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 0, 8, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 257, 8, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 1, 0, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 1, 12, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 1, 1u << 21, 1));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 2, 1024, 1)); /* 128 KiB of slots */
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_ptr_null(shmwriter_init(base, 1024, 1, 1, 1));
	ck_assert_int_eq(errno, ENOSPC);
	free(base);
}
END_TEST

START_TEST(test_init_keeps_host_mailbox)
{
	void *base = region_new(RSIZE);
	unsigned char *b = base;
	struct shm_writer *w;
	size_t i;

	memset(base, 0xab, RSIZE);
	w = shmwriter_init(base, RSIZE, 1, 8, 3);
	ck_assert_ptr_nonnull(w);
	for (i = 192; i < 256; i++)
		ck_assert_uint_eq(b[i], 0xab); /* the host's bytes: never written by the guest */
	for (i = 256; i < shmwriter_region_bytes(1, 8); i++)
		ck_assert_uint_eq(b[i], 0);
	for (i = 64; i < 128; i++) /* reserved0 */
		ck_assert_uint_eq(b[i], 0);
	for (i = RSIZE / 2; i < RSIZE; i++)
		ck_assert_uint_eq(b[i], 0xab); /* the upper half is the host's DTL */
	shmwriter_free(w);
	free(base);
}
END_TEST

/* The guest area is the lower half; a layout reaching into the upper half is refused. */
START_TEST(test_v2_lower_half)
{
	void *base = region_new(RSIZE);
	struct vn_shm_header *h = H(base);
	uint32_t fit = shmwriter_fit_slots(RSIZE, 1);
	struct shm_writer *w;
	char why[128];

	ck_assert_uint_le(shmwriter_region_bytes(1, fit), RSIZE / 2);
	ck_assert_uint_gt(shmwriter_region_bytes(1, 2 * fit), RSIZE / 2);
	errno = 0;
	ck_assert_ptr_null(shmwriter_init(base, RSIZE, 1, 2 * fit, 1));
	ck_assert_int_eq(errno, ENOSPC);
	w = shmwriter_init(base, RSIZE, 1, fit, 9);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(h->region_size, RSIZE); /* the whole region, as the guest sees it */
	ck_assert_int_eq(shmregion_header_valid(h, RSIZE, why, sizeof(why)), 0);
	/* a mapping of only the lower half leaves a quarter for the guest area: too small now */
	ck_assert_int_eq(shmregion_header_valid(h, RSIZE / 2, why, sizeof(why)), -EBADMSG);
	/* an area that ends in the upper half is invalid */
	h->slots_offset = RSIZE / 2 - 64;
	ck_assert_int_eq(shmregion_header_valid(h, RSIZE, why, sizeof(why)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "slots"));
	shmwriter_free(w);
	free(base);
}
END_TEST

START_TEST(test_next_epoch)
{
	void *base = region_new(RSIZE);
	struct shm_writer *w;

	ck_assert_uint_eq(shmwriter_next_epoch(base, RSIZE, 55), 55);
	ck_assert_uint_eq(shmwriter_next_epoch(base, RSIZE, 0), 1);
	ck_assert_uint_eq(shmwriter_next_epoch(NULL, 0, 9), 9);
	w = shmwriter_init(base, RSIZE, 1, 8, 41);
	ck_assert_ptr_nonnull(w);
	ck_assert_uint_eq(shmwriter_next_epoch(base, RSIZE, 55), 42);
	ck_assert_uint_eq(shmwriter_next_epoch(base, 100, 55), 55); /* too small to hold a header */
	H(base)->epoch = UINT64_MAX;
	ck_assert_uint_eq(shmwriter_next_epoch(base, RSIZE, 55), 55);
	shmwriter_free(w);
	free(base);
}
END_TEST

static Suite *shmwriter_suite(void)
{
	Suite *s = suite_create("shmwriter");
	TCase *tc;

	tc = tcase_create("layout");
	tcase_add_test(tc, test_layout_sizes);
	tcase_add_test(tc, test_init_header);
	tcase_add_test(tc, test_init_args);
	tcase_add_test(tc, test_init_keeps_host_mailbox);
	tcase_add_test(tc, test_next_epoch);
	tcase_add_test(tc, test_v2_lower_half);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(shmwriter_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
