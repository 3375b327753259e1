/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/channel/dtlwriter, the host producer of the dispatch trace log (protocol/dtl.h): the
 * area it lays out (a valid header under the new epoch, everything zeroed but the guest's reply line), its
 * arguments, the cause table (reuse, LRU recycling with a new gen, detail class never writes a comm or pid),
 * entries (in order, clipped or dropped and counted), aggregates, the status (horizon never back) and the
 * clock request / reply. Reading back through the guest's reader is tested in check_dtlreader.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "channel/dtlregion.h"
#include "channel/dtlwriter.h"
#include "dtl_check.h"

static struct vn_dtl_entry *entry_at(void *area, uint32_t vcpu, uint64_t pos)
{
	struct vn_dtl_header *h = DH(area);

	return (struct vn_dtl_entry *)((char *)area + h->entries_offset) +
	       (size_t)vcpu * h->entries_per_vcpu + (pos & (h->entries_per_vcpu - 1));
}

static struct vn_dtl_ring *ring_at(void *area, uint32_t vcpu)
{
	return (struct vn_dtl_ring *)((char *)area + DH(area)->ring_ctl_offset) + vcpu;
}

static struct vn_dtl_cause *cause_at(void *area, uint32_t idx)
{
	return (struct vn_dtl_cause *)((char *)area + DH(area)->cause_offset) + idx;
}

START_TEST(test_init_layout)
{
	void *area = area_new(ASIZE);
	unsigned char *b = area;
	struct vn_dtl_header *h = DH(area);
	struct dtl_writer *w;
	struct dtlregion_layout l;
	char why[128];
	size_t i;

	memset(area, 0xab, ASIZE);
	w = dtl_open(area, ASIZE, 3, 0, 32, VN_DTL_DETAIL_CLASS, 99);
	ck_assert_int_eq(dtlregion_layout(ASIZE, 3, 32, 0, &l), 0);
	ck_assert_int_eq(memcmp(h->magic, "VNOISDTL", 8), 0);
	ck_assert_uint_eq(h->version, VN_DTL_VERSION);
	ck_assert_uint_eq(h->area_size, ASIZE);
	ck_assert_uint_eq(h->host_epoch, 99);
	ck_assert_uint_eq(h->nvcpus, 3);
	ck_assert_uint_eq(h->ncauses, 32);
	ck_assert_uint_eq(h->entries_per_vcpu, l.entries_per_vcpu);
	ck_assert_uint_eq(h->entries_offset, l.entries_offset);
	ck_assert_uint_eq(h->detail, VN_DTL_DETAIL_CLASS);
	ck_assert_uint_eq(h->period_ns, 100000000);
	ck_assert_uint_eq(h->status.uncertainty_ns, UINT64_MAX);
	ck_assert_uint_eq(h->status.horizon_ns, 0);
	ck_assert_int_eq(dtlregion_header_valid(h, ASIZE, why, sizeof(why)), 0);
	for (i = 256; i < 320; i++)
		ck_assert_uint_eq(b[i],
				  0xab); /* the guest's reply line: never written by the host */
	for (i = 320; i < l.end; i++)
		ck_assert_uint_eq(b[i], 0);
	for (i = l.end; i < ASIZE; i++)
		ck_assert_uint_eq(b[i], 0xab); /* beyond the layout: untouched */
	ck_assert_uint_eq(dtlwriter_epoch(w), 99);
	dtlwriter_free(w);
	dtlwriter_free(NULL);
	free(area);
}
END_TEST

START_TEST(test_init_args)
{
	struct dtlwriter_params p = { .nvcpus = 1, .detail = VN_DTL_DETAIL_CLASS };
	void *area = area_new(ASIZE);
	char why[128];

	errno = 0;
	ck_assert_ptr_null(dtlwriter_init(NULL, ASIZE, &p, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(dtlwriter_init((char *)area + 8, ASIZE / 2, &p, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(dtlwriter_init(area, ASIZE - 64, &p, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(dtlwriter_init(area, ASIZE, &p, 0, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(dtlwriter_init(area, ASIZE, NULL, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	p.detail = 0;
	ck_assert_ptr_null(dtlwriter_init(area, ASIZE, &p, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	p.detail = VN_DTL_DETAIL_TASK;
	p.nvcpus = 0;
	ck_assert_ptr_null(dtlwriter_init(area, ASIZE, &p, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	p.nvcpus = VN_DTL_MAX_VCPUS + 1;
	ck_assert_ptr_null(dtlwriter_init(area, ASIZE, &p, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, EINVAL);
	p.nvcpus = 64; /* 64 x (64 + 1 KiB of aggregates) do not fit in 64 KiB */
	ck_assert_ptr_null(dtlwriter_init(area, ASIZE, &p, 1, why, sizeof(why)));
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_ptr_nonnull(strstr(why, "too small"));
	ck_assert_uint_eq(DH(area)->host_epoch, 0); /* nothing published */
	free(area);
}
END_TEST

START_TEST(test_put_order)
{
	void *area = area_new(ASIZE);
	struct dtl_writer *w = dtl_open(area, ASIZE, 2, 16, 0, VN_DTL_DETAIL_TASK, 5);
	struct dtlwriter_stats st;
	struct vn_dtl_entry *e;
	uint32_t c = dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 100, "hog");
	int i;

	ck_assert_int_eq(
	    dtlwriter_put(w, 0, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_HOST_USER, c, 0, 1000, 2000),
	    0);
	e = entry_at(area, 0, 0);
	ck_assert_uint_eq(e->seq, 2);
	ck_assert_uint_eq(e->kind, VN_DTL_KIND_PREEMPTED);
	ck_assert_uint_eq(e->cls, VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(e->cause, c);
	ck_assert_uint_eq(e->start_ns, 1000);
	ck_assert_uint_eq(e->end_ns, 2000);
	ck_assert_uint_eq(ring_at(area, 0)->head, 1);
	/* overlapping: clipped to the previous end */
	ck_assert_int_eq(dtlwriter_put(w, 0, VN_DTL_KIND_BLOCKED, VN_DTL_CLASS_IDLE, 0,
				       VN_DTL_F_CONT, 1500, 3000),
			 0);
	ck_assert_uint_eq(entry_at(area, 0, 1)->start_ns, 2000);
	/* empty after clipping, empty, too long: dropped */
	ck_assert_int_eq(dtlwriter_put(w, 0, 1, 1, 0, 0, 100, 2500), -ERANGE);
	ck_assert_int_eq(dtlwriter_put(w, 0, 1, 1, 0, 0, 5000, 5000), -ERANGE);
	ck_assert_int_eq(dtlwriter_put(w, 0, 1, 1, 0, 0, 5000, 5000 + VN_DTL_MAX_SPAN_NS + 1),
			 -ERANGE);
	/* bad arguments */
	ck_assert_int_eq(dtlwriter_put(w, 2, 1, 1, 0, 0, 5000, 6000), -EINVAL);
	ck_assert_int_eq(dtlwriter_put(w, 0, 0, 1, 0, 0, 5000, 6000), -EINVAL);
	ck_assert_int_eq(dtlwriter_put(w, 0, 1, VN_DTL_CLASS_MAX, 0, 0, 5000, 6000), -EINVAL);
	ck_assert_int_eq(dtlwriter_put(w, 0, 1, 1, 0, 8, 5000, 6000), -EINVAL);
	ck_assert_int_eq(dtlwriter_put(w, 0, 1, 1, VN_DTL_CAUSE(300, 1), 0, 5000, 6000), -EINVAL);
	ck_assert_int_eq(dtlwriter_put(w, 0, 1, 1, 7, 0, 5000, 6000), -EINVAL); /* gen 0 */
	ck_assert_uint_eq(ring_at(area, 0)->head, 2);
	ck_assert_uint_eq(ring_at(area, 0)->dropped, 8);
	dtlwriter_drop(w, 1, 5);
	ck_assert_uint_eq(ring_at(area, 1)->dropped, 5);
	/* laps: entry p's seq is 2 * (p / entries) + 2 */
	for (i = 0; i < 40; i++)
		ck_assert_int_eq(dtlwriter_put(w, 1, 1, 2, 0, 0, 10000 + i * 10, 10005 + i * 10),
				 0);
	ck_assert_uint_eq(ring_at(area, 1)->head, 40);
	ck_assert_uint_eq(entry_at(area, 1, 39)->seq, 2 * 2 + 2);
	ck_assert_uint_eq(entry_at(area, 1, 39)->start_ns, 10390);
	ck_assert_uint_eq(entry_at(area, 1, 24)->seq, 2 * 1 + 2); /* 23 was overwritten by 39 */
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.entries, 42);
	ck_assert_uint_eq(st.clipped, 2);
	ck_assert_uint_eq(st.dropped, 8 + 1 + 5); /* + the bad vCPU, in no ring */
	dtlwriter_free(w);
	free(area);
}
END_TEST

START_TEST(test_causes_task)
{
	void *area = area_new(ASIZE);
	struct dtl_writer *w = dtl_open(area, ASIZE, 1, 16, 4, VN_DTL_DETAIL_TASK, 5);
	struct dtlwriter_stats st;
	uint32_t a, b, c, d, e, a2;

	a = dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 100, "hog");
	b = dtlwriter_cause(w, VN_DTL_CLASS_HOST_KTHREAD, 7, "kworker/0:1");
	ck_assert_uint_ne(a, b);
	ck_assert_uint_eq(dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 100, "hog"), a); /* reused */
	ck_assert_uint_ne(dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 101, "hog"),
			  a); /* other pid */
	ck_assert_uint_eq(cause_at(area, VN_DTL_CAUSE_INDEX(a))->pid, 100);
	ck_assert_str_eq(cause_at(area, VN_DTL_CAUSE_INDEX(a))->comm, "hog");
	ck_assert_uint_eq(cause_at(area, VN_DTL_CAUSE_INDEX(a))->gen, VN_DTL_CAUSE_GEN(a));
	ck_assert_uint_eq(cause_at(area, VN_DTL_CAUSE_INDEX(b))->cls, VN_DTL_CLASS_HOST_KTHREAD);
	ck_assert_uint_eq(cause_at(area, VN_DTL_CAUSE_INDEX(a))->seq % 2, 0);
	/* a long name is cut and terminated */
	c = dtlwriter_cause(w, VN_DTL_CLASS_QEMU, 5, "a-very-long-thread-name");
	ck_assert_uint_eq(strlen(cause_at(area, VN_DTL_CAUSE_INDEX(c))->comm), 15);
	/* 4 causes used (a, b, hog[101], c): touching a keeps it; the next new one recycles b (LRU) */
	ck_assert_uint_eq(dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 100, "hog"), a);
	d = dtlwriter_cause(w, VN_DTL_CLASS_OTHER_VCPU, 9, "CPU 0/KVM");
	ck_assert_uint_eq(VN_DTL_CAUSE_INDEX(d), VN_DTL_CAUSE_INDEX(b));
	ck_assert_uint_ne(VN_DTL_CAUSE_GEN(d), VN_DTL_CAUSE_GEN(b)); /* a new gen */
	ck_assert_uint_ne(VN_DTL_CAUSE_GEN(d), 0);
	ck_assert_uint_eq(cause_at(area, VN_DTL_CAUSE_INDEX(d))->pid, 9);
	/* b again: a new entry, the index of the least recently used (hog[101]) */
	e = dtlwriter_cause(w, VN_DTL_CLASS_HOST_KTHREAD, 7, "kworker/0:1");
	ck_assert_uint_ne(e, b);
	a2 = dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 100, "hog");
	ck_assert_uint_eq(a2, a);
	ck_assert_uint_eq(dtlwriter_cause(w, 0, 1, "x"), 0);
	ck_assert_uint_eq(dtlwriter_cause(w, VN_DTL_CLASS_MAX, 1, "x"), 0);
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.causes_recycled, 2);
	dtlwriter_free(w);
	free(area);
}
END_TEST

/* Detail class: whatever the caller passes, no comm or pid ever reaches the area; one cause per class. */
START_TEST(test_causes_class_no_names)
{
	void *area = area_new(ASIZE);
	struct dtl_writer *w = dtl_open(area, ASIZE, 1, 16, 8, VN_DTL_DETAIL_CLASS, 5);
	struct vn_dtl_header *h = DH(area);
	uint32_t c1, c2, i;
	int k;

	c1 = dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 1234, "secret-tenant");
	c2 = dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 4321, "other-name");
	ck_assert_uint_eq(c1, c2);
	for (k = 0; k < 200; k++)
		(void)dtlwriter_cause(w, 1 + k % 5, 1000 + k, "name");
	for (i = 0; i < h->ncauses; i++) {
		struct vn_dtl_cause *c = cause_at(area, i);
		static const char zero[VN_DTL_COMM_LEN];

		ck_assert_uint_eq(c->pid, 0);
		ck_assert_int_eq(memcmp(c->comm, zero, sizeof(zero)), 0);
		ck_assert_int_eq(dtlregion_cause_valid(c, VN_DTL_DETAIL_CLASS), 0);
	}
	ck_assert_ptr_null(memmem(area, ASIZE, "secret", 6));
	ck_assert_ptr_null(memmem(area, ASIZE, "name", 4));
	dtlwriter_free(w);
	free(area);
}
END_TEST

START_TEST(test_agg_status)
{
	void *area = area_new(ASIZE);
	struct dtl_writer *w = dtl_open(area, ASIZE, 2, 16, 0, VN_DTL_DETAIL_TASK, 5);
	struct vn_dtl_header *h = DH(area);
	struct vn_dtl_agg a = agg_make(5, 1000, 100000), *d;
	struct vn_dtl_status s;
	struct dtlwriter_stats st;

	a.seq = 77;
	a.reserved[3] = 9; /* zeroed on the way */
	ck_assert_int_eq(dtlwriter_agg(w, 1, &a), 0);
	d = (struct vn_dtl_agg *)((char *)area + h->agg_offset) + 1 * VN_DTL_AGGS + 5 % VN_DTL_AGGS;
	ck_assert_uint_eq(d->seq, 2);
	ck_assert_uint_eq(d->period, 5);
	ck_assert_uint_eq(d->reserved[3], 0);
	ck_assert_uint_eq(ring_at(area, 1)->agg_period, 6);
	ck_assert_int_eq(dtlwriter_agg(w, 1, &a), -EINVAL); /* the period must grow */
	a.period = 6;
	a.exit_ns = 1; /* invalid */
	ck_assert_int_eq(dtlwriter_agg(w, 1, &a), -EINVAL);
	ck_assert_int_eq(dtlwriter_agg(w, 2, &a), -EINVAL);
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.aggs, 1);

	memset(&s, 0, sizeof(s));
	s.flags = VN_DTL_S_CLOCK | 0x80;
	s.horizon_ns = 5000;
	s.heartbeat_ns = 6000;
	s.offset_ns = -123;
	s.drift_ppb = 45;
	s.uncertainty_ns = 800;
	s.reserved[0] = 1;
	dtlwriter_status(w, &s);
	ck_assert_uint_eq(h->status.seq, 2);
	ck_assert_uint_eq(h->status.flags, VN_DTL_S_CLOCK);
	ck_assert_uint_eq(h->status.horizon_ns, 5000);
	ck_assert_int_eq(h->status.offset_ns, -123);
	ck_assert_uint_eq(h->status.reserved[0], 0);
	s.horizon_ns = 4000; /* going back: kept */
	s.heartbeat_ns = 7000;
	dtlwriter_status(w, &s);
	ck_assert_uint_eq(h->status.horizon_ns, 5000);
	ck_assert_uint_eq(h->status.heartbeat_ns, 7000);
	ck_assert_int_eq(dtlregion_status_valid(&h->status), 0);
	dtlwriter_free(w);
	free(area);
}
END_TEST

/* A guest that writes over the host area's immutable header: the next status lays the area out again under a
 * new epoch, with nothing of the old one left (causes, heads, horizon), and a header that validates. */
START_TEST(test_repair_header)
{
	void *area = area_new(ASIZE);
	struct dtlwriter_params p = { .nvcpus = 2,
				      .max_entries = 16,
				      .detail = VN_DTL_DETAIL_TASK,
				      .period_ns = 100000000,
				      .repair_ns = 1 };
	char why0[128] = "";
	struct dtl_writer *w = dtlwriter_init(area, ASIZE, &p, 5, why0, sizeof(why0));
	struct vn_dtl_header *h = DH(area);
	struct vn_dtl_status s = { .flags = VN_DTL_S_CLOCK,
				   .horizon_ns = 9000,
				   .heartbeat_ns = 9000 };
	struct dtlwriter_stats st;
	uint32_t c = dtlwriter_cause(w, VN_DTL_CLASS_HOST_USER, 42, "hog");
	char why[128] = "";

	ck_assert_int_eq(
	    dtlwriter_put(w, 0, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_HOST_USER, c, 0, 1000, 2000),
	    0);
	dtlwriter_status(w, &s);
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.repairs, 0);
	h->nvcpus = 200; /* the guest scribbles */
	h->magic[0] = 'X';
	ck_assert_int_ne(dtlregion_header_valid(h, ASIZE, why, sizeof(why)), 0);
	s.horizon_ns = 1000;
	dtlwriter_status(w, &s); /* damage seen: repaired once it lasted repair_ns */
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.repairs, 0);
	dtlwriter_status(w, &s);
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.repairs, 1);
	ck_assert_int_eq(dtlregion_header_valid(h, ASIZE, why, sizeof(why)), 0);
	ck_assert_uint_eq(h->host_epoch, 6);
	ck_assert_uint_eq(dtlwriter_epoch(w), 6);
	ck_assert_uint_eq(h->nvcpus, 2);
	ck_assert_uint_eq(ring_at(area, 0)->head, 0); /* the old epoch's entries are gone */
	ck_assert_uint_eq(cause_at(area, VN_DTL_CAUSE_INDEX(c))->gen, 0);
	ck_assert_uint_eq(h->status.horizon_ns, 1000); /* a new epoch's horizon starts again */
	ck_assert_int_eq(
	    dtlwriter_put(w, 0, VN_DTL_KIND_BLOCKED, VN_DTL_CLASS_IDLE, 0, 0, 500, 600), 0);
	ck_assert_uint_eq(ring_at(area, 0)->head, 1);
	dtlwriter_status(w, &s); /* intact now: no second repair */
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.repairs, 1);
	h->reserved1[100] = 1; /* the reserved tail counts too */
	dtlwriter_status(w, &s);
	dtlwriter_status(w, &s);
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.repairs, 2);
	ck_assert_uint_eq(h->reserved1[100], 0);
	dtlwriter_free(w);
	free(area);
}
END_TEST

START_TEST(test_request_reply)
{
	void *area = area_new(ASIZE);
	struct dtl_writer *w = dtl_open(area, ASIZE, 1, 16, 0, VN_DTL_DETAIL_TASK, 5);
	struct vn_dtl_header *h = DH(area);
	struct dtl_clock_reply rep;
	struct dtlwriter_stats st;
	uint64_t seq;

	ck_assert_int_eq(dtlwriter_reply(w, &rep), 0); /* nothing outstanding */
	dtlwriter_request(w, 1000, &seq);
	ck_assert_uint_eq(seq, 1);
	ck_assert_uint_eq(h->request.req_seq, 1);
	ck_assert_uint_eq(h->request.host_send_ns, 1000);
	ck_assert_uint_eq(h->request.seq % 2, 0);
	ck_assert_int_eq(dtlwriter_reply(w, &rep), 0); /* not answered */
	h->reply.seq = 3; /* the guest is writing */
	ck_assert_int_eq(dtlwriter_reply(w, &rep), -EAGAIN);
	h->reply.seq = 4;
	h->reply.reply_seq = 1;
	h->reply.echo_host_send_ns = 999; /* an answer to something else */
	h->reply.guest_ns = 5;
	ck_assert_int_eq(dtlwriter_reply(w, &rep), 0);
	h->reply.echo_host_send_ns = 1000;
	h->reply.pad2 = 1; /* invalid */
	ck_assert_int_eq(dtlwriter_reply(w, &rep), -EBADMSG);
	h->reply.pad2 = 0;
	h->reply.guest_ns = 0; /* invalid */
	ck_assert_int_eq(dtlwriter_reply(w, &rep), -EBADMSG);
	h->reply.guest_ns = 5555;
	h->reply.cpu = 3;
	ck_assert_int_eq(dtlwriter_reply(w, &rep), 1);
	ck_assert_uint_eq(rep.req_seq, 1);
	ck_assert_uint_eq(rep.host_send_ns, 1000);
	ck_assert_uint_eq(rep.guest_ns, 5555);
	ck_assert_uint_eq(rep.cpu, 3);
	ck_assert_int_eq(dtlwriter_reply(w, &rep), 0); /* once */
	dtlwriter_request(w, 2000, &seq);
	ck_assert_uint_eq(seq, 2);
	ck_assert_int_eq(dtlwriter_reply(w, &rep), 0); /* the old answer does not count */
	dtlwriter_stats(w, &st);
	ck_assert_uint_eq(st.requests, 2);
	ck_assert_uint_eq(st.replies, 1);
	ck_assert_uint_eq(st.bad_replies, 2);
	dtlwriter_free(w);
	free(area);
}
END_TEST

static Suite *dtlwriter_suite(void)
{
	Suite *s = suite_create("dtlwriter");
	TCase *tc;

	tc = tcase_create("init");
	tcase_add_test(tc, test_init_layout);
	tcase_add_test(tc, test_init_args);
	suite_add_tcase(s, tc);
	tc = tcase_create("publish");
	tcase_add_test(tc, test_put_order);
	tcase_add_test(tc, test_causes_task);
	tcase_add_test(tc, test_causes_class_no_names);
	tcase_add_test(tc, test_agg_status);
	tcase_add_test(tc, test_request_reply);
	tcase_add_test(tc, test_repair_header);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dtlwriter_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
