/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/channel/dtlregion, the layout and validity rules of the dispatch trace log's host
 * area (protocol/dtl.h): the layout for a geometry, the header a writer publishes (valid) and every way a
 * header can be wrong (magic, version, sizes, geometry, areas unaligned / outside / overlapping, detail,
 * reserved bytes, epoch 0), and the validators of the status, entries, causes (no name or pid with detail
 * class) and aggregates; class and kind names.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "channel/dtlregion.h"
#include "channel/dtlregion_priv.h"
#include "channel/dtlwriter.h"
#include "dtl_check.h"

START_TEST(test_layout)
{
	struct dtlregion_layout l;

	ck_assert_int_eq(dtlregion_layout(ASIZE, 2, 0, 0, &l), 0);
	ck_assert_uint_eq(l.ring_ctl_offset, 512);
	ck_assert_uint_eq(l.agg_offset, 512 + 2 * 64);
	ck_assert_uint_eq(l.cause_offset, 512 + 2 * 64 + 2 * 4 * 256);
	ck_assert_uint_eq(l.ncauses, 256);
	ck_assert_uint_eq(l.entries_offset % 64, 0);
	ck_assert_uint_ge(l.entries_offset, l.cause_offset + 256 * 48);
	ck_assert_uint_eq(l.end, l.entries_offset + 2ull * l.entries_per_vcpu * 32);
	ck_assert_uint_le(l.end, ASIZE);
	/* the largest power of two that fits */
	ck_assert_uint_gt(l.entries_offset + 2ull * 2 * l.entries_per_vcpu * 32, ASIZE);
	ck_assert_uint_eq(l.entries_per_vcpu & (l.entries_per_vcpu - 1), 0);
	/* capped by max_entries (rounded down to a power of two) */
	ck_assert_int_eq(dtlregion_layout(ASIZE, 2, 16, 100, &l), 0);
	ck_assert_uint_eq(l.entries_per_vcpu, 64);
	ck_assert_uint_eq(l.ncauses, 16);
	ck_assert_int_eq(dtlregion_layout(1u << 30, 1, 0, 0, &l), 0);
	ck_assert_uint_eq(l.entries_per_vcpu, VN_DTL_MAX_ENTRIES);
	/* out of range / too small */
	ck_assert_int_eq(dtlregion_layout(ASIZE, 0, 0, 0, &l), -EINVAL);
	ck_assert_int_eq(dtlregion_layout(ASIZE, VN_DTL_MAX_VCPUS + 1, 0, 0, &l), -EINVAL);
	ck_assert_int_eq(dtlregion_layout(ASIZE, 1, VN_DTL_MAX_CAUSES + 1, 0, &l), -EINVAL);
	ck_assert_int_eq(dtlregion_layout(ASIZE, 1, 0, 8, &l), -EINVAL);
	ck_assert_int_eq(dtlregion_layout(4096, 1, 0, 0, &l), -ENOSPC);
	ck_assert_int_eq(dtlregion_layout(ASIZE, 1, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(dtlregion_layout(16 * 1024, 8, 0, 0, &l), -ENOSPC);
}
END_TEST

/* One way for a header to be wrong; NULL when k is past the last. */
static const char *hmut(struct vn_dtl_header *h, int k)
{
	switch (k) {
	case 0:
		h->magic[3] ^= 1;
		return "magic";
	case 1:
		h->version = 2;
		return "version 2";
	case 2:
		h->header_size = 256;
		return "header_size";
	case 3:
		h->host_epoch = 0;
		return "epoch 0";
	case 4:
		h->area_size = ASIZE - 64;
		return "area_size not a power of two";
	case 5:
		h->nvcpus = 0;
		return "nvcpus 0";
	case 6:
		h->nvcpus = VN_DTL_MAX_VCPUS + 1;
		return "nvcpus too many";
	case 7:
		h->entries_per_vcpu = 24;
		return "entries not a power of two";
	case 8:
		h->entries_per_vcpu = 8;
		return "entries below the minimum";
	case 9:
		h->entries_per_vcpu = VN_DTL_MAX_ENTRIES * 2;
		return "entries above the maximum";
	case 10:
		h->entry_size = 64;
		return "entry_size";
	case 11:
		h->ring_ctl_size = 32;
		return "ring_ctl_size";
	case 12:
		h->agg_size = 128;
		return "agg_size";
	case 13:
		h->cause_size = 64;
		return "cause_size";
	case 14:
		h->ncauses = 0;
		return "ncauses 0";
	case 15:
		h->ncauses = VN_DTL_MAX_CAUSES + 1;
		return "ncauses too many";
	case 16:
		h->detail = 3;
		return "detail 3";
	case 17:
		h->reserved0[5] = 1;
		return "reserved0";
	case 18:
		h->reserved1[100] = 1;
		return "reserved1";
	case 19:
		h->ring_ctl_offset += 8;
		return "ring counters unaligned";
	case 20:
		h->entries_offset = ASIZE - 64;
		return "entries outside";
	case 21:
		h->agg_offset = h->ring_ctl_offset;
		return "aggregates overlap ring counters";
	case 22:
		h->cause_offset = 0;
		return "causes overlap the header";
	case 23:
		h->entries_offset = UINT64_MAX - 63;
		return "entries offset absurd";
	case 24:
		h->entries_per_vcpu *= 2;
		return "entries no longer fit";
	case 25:
		h->area_size = 2 * ASIZE; /* believes more than is mapped: bounded by the mapping */
		h->entries_per_vcpu *= 2;
		return "entries beyond the mapping";
	}
	return NULL;
}

START_TEST(test_header_valid)
{
	void *area = area_new(ASIZE);
	struct dtl_writer *w = dtl_open(area, ASIZE, 2, 0, 0, VN_DTL_DETAIL_TASK, 11);
	struct vn_dtl_header good = *DH(area), h;
	char why[160];
	const char *what;
	int k;

	ck_assert_int_eq(dtlregion_header_valid(&good, ASIZE, why, sizeof(why)), 0);
	ck_assert_int_eq(dtlregion_header_valid(&good, ASIZE / 2, why, sizeof(why)), -EBADMSG);
	for (k = 0; (h = good, what = hmut(&h, k)); k++) {
		why[0] = 0;
		ck_assert_msg(dtlregion_header_valid(&h, ASIZE, why, sizeof(why)) == -EBADMSG,
			      "%s accepted", what);
		ck_assert_msg(why[0], "%s: no reason", what);
		ck_assert_int_eq(dtlregion_header_valid(&h, ASIZE, NULL, 0), -EBADMSG);
	}
	ck_assert_int_ge(k, 26);
	dtlwriter_free(w);
	free(area);
}
END_TEST

START_TEST(test_status_entry_valid)
{
	struct vn_dtl_status s;
	struct vn_dtl_entry e, b;

	memset(&s, 0, sizeof(s));
	s.flags = VN_DTL_S_CLOCK | VN_DTL_S_STALE;
	s.horizon_ns = 100;
	s.heartbeat_ns = 50; /* the reader judges times against its own clock */
	ck_assert_int_eq(dtlregion_status_valid(&s), 0);
	s.flags = 4;
	ck_assert_int_eq(dtlregion_status_valid(&s), -EBADMSG);
	s.flags = 0;
	s.reserved[7] = 1;
	ck_assert_int_eq(dtlregion_status_valid(&s), -EBADMSG);

	memset(&e, 0, sizeof(e));
	e.kind = VN_DTL_KIND_PREEMPTED;
	e.cls = VN_DTL_CLASS_HOST_USER;
	e.flags = VN_DTL_F_CONT | VN_DTL_F_GUESSED;
	e.cause = VN_DTL_CAUSE(3, 1);
	e.start_ns = 1000;
	e.end_ns = 2000;
	e.seq = 12345; /* not looked at */
	ck_assert_int_eq(dtlregion_entry_valid(&e), 0);
	e.cause = 0; /* class only */
	ck_assert_int_eq(dtlregion_entry_valid(&e), 0);
	b = e, b.kind = VN_DTL_KIND_NONE;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.kind = VN_DTL_KIND_MAX;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.cls = VN_DTL_CLASS_NONE;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.cls = VN_DTL_CLASS_MAX;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.flags = 8;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.flags = VN_DTL_F_HALTED; /* only a blocked vCPU is halted */
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b.kind = VN_DTL_KIND_BLOCKED;
	ck_assert_int_eq(dtlregion_entry_valid(&b), 0);
	b = e, b.pad = 1;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.cause = 5; /* index 5, gen 0 */
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.end_ns = b.start_ns;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.end_ns = 10;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
	b = e, b.end_ns = b.start_ns + VN_DTL_MAX_SPAN_NS + 1;
	ck_assert_int_eq(dtlregion_entry_valid(&b), -EBADMSG);
}
END_TEST

START_TEST(test_cause_valid)
{
	struct vn_dtl_cause c, b;

	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(dtlregion_cause_valid(&c, VN_DTL_DETAIL_CLASS), 0); /* unused */
	b = c, b.cls = 1;
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_CLASS), -EBADMSG);
	c.gen = 7;
	c.cls = VN_DTL_CLASS_HOST_KTHREAD;
	ck_assert_int_eq(dtlregion_cause_valid(&c, VN_DTL_DETAIL_CLASS), 0);
	ck_assert_int_eq(dtlregion_cause_valid(&c, VN_DTL_DETAIL_TASK), 0);
	b = c, b.cls = VN_DTL_CLASS_MAX;
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), -EBADMSG);
	b = c, b.cls = 0;
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), -EBADMSG);
	/* detail class: a name or a pid is a leak */
	b = c, b.pid = 42;
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_CLASS), -EBADMSG);
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), 0);
	b = c, strcpy(b.comm, "hog");
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_CLASS), -EBADMSG);
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), 0);
	/* comm terminated and NUL-padded */
	memset(b.comm, 'a', sizeof(b.comm));
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), -EBADMSG);
	memset(b.comm, 0, sizeof(b.comm));
	b.comm[0] = 'x';
	b.comm[5] = 'y';
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), -EBADMSG);
	b = c, b.pad = 1;
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), -EBADMSG);
	b = c, b.pad2 = 1;
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), -EBADMSG);
	b = c, b.reserved[15] = 1;
	ck_assert_int_eq(dtlregion_cause_valid(&b, VN_DTL_DETAIL_TASK), -EBADMSG);
}
END_TEST

START_TEST(test_agg_valid)
{
	struct vn_dtl_agg a = agg_make(3, 1000, 1000000), b;

	ck_assert_int_eq(dtlregion_agg_valid(&a), 0);
	b = a, b.isa = 3;
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.nexit = VN_DTL_AGG_TOP + 1;
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.end_ns = b.start_ns;
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.exit_ns += 1; /* the sum must match */
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.exit_count = 12; /* fewer than the reasons' counts */
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.exit[2].count = 1; /* beyond nexit */
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.irq_ns = 2000000; /* more than the period */
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.end_ns = 2000, b.exit[0].total_ns = 5000; /* a reason longer than the period */
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.reserved[0] = 1;
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
	b = a, b.exit[0].total_ns = UINT64_MAX; /* overflow attempt */
	ck_assert_int_eq(dtlregion_agg_valid(&b), -EBADMSG);
}
END_TEST

START_TEST(test_names)
{
	ck_assert_str_eq(dtlregion_class_name(VN_DTL_CLASS_OTHER_VCPU), "vcpu-of-another-domain");
	ck_assert_str_eq(dtlregion_class_name(VN_DTL_CLASS_HOST_KTHREAD), "host-kernel-thread");
	ck_assert_str_eq(dtlregion_class_name(VN_DTL_CLASS_HOST_USER), "host-user-task");
	ck_assert_str_eq(dtlregion_class_name(VN_DTL_CLASS_QEMU), "qemu-emulator");
	ck_assert_str_eq(dtlregion_class_name(VN_DTL_CLASS_IDLE), "idle");
	ck_assert_str_eq(dtlregion_class_name(0), "none");
	ck_assert_str_eq(dtlregion_class_name(99), "none");
	ck_assert_str_eq(dtlregion_kind_name(VN_DTL_KIND_PREEMPTED), "preempted");
	ck_assert_str_eq(dtlregion_kind_name(VN_DTL_KIND_BLOCKED), "blocked");
	ck_assert_str_eq(dtlregion_kind_name(VN_DTL_KIND_VMEXIT), "vmexit");
	ck_assert_str_eq(dtlregion_kind_name(77), "none");
}
END_TEST

static Suite *dtlregion_suite(void)
{
	Suite *s = suite_create("dtlregion");
	TCase *tc;

	tc = tcase_create("layout");
	tcase_add_test(tc, test_layout);
	tcase_add_test(tc, test_header_valid);
	suite_add_tcase(s, tc);
	tc = tcase_create("validators");
	tcase_add_test(tc, test_status_entry_valid);
	tcase_add_test(tc, test_cause_valid);
	tcase_add_test(tc, test_agg_valid);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dtlregion_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
