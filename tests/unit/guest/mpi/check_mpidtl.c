/* SPDX-License-Identifier: MIT */
/*
 * mpidtl: a rank's interval against a DTL store (guest/dtl, dtl_new_store + dtl_add_span): exact overlap on
 * the rank's CPU by hypervisor class, the largest host cause named as the host allowed (task or class
 * detail), nothing from other CPUs or outside the interval; and the whole chain into the filter: the same
 * records are noise with a host_preempt cause in the DTL view and not in the guest-only one.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/mpidtl.h"
#include "mpi/pipeline.h"

#define MS 1000000ull

static void span(struct dtl *d, uint32_t cpu, uint64_t a, uint64_t b, uint32_t cause, uint8_t cls)
{
	struct dtl_span s = { .start_ns = a,
			      .end_ns = b,
			      .cause = cause,
			      .kind = VN_DTL_KIND_PREEMPTED,
			      .cls = cls };

	ck_assert_int_eq(dtl_add_span(d, cpu, &s), 0);
}

static struct vn_pipe_iv iv(uint32_t cpu, uint64_t a, uint64_t b)
{
	struct vn_pipe_iv r;

	memset(&r, 0, sizeof(r));
	r.interval = 1;
	r.cpu = cpu;
	r.start_ns = a;
	r.end_ns = b;
	r.instructions = VN_PIPE_NO_INSTR;
	return r;
}

START_TEST(test_overlap)
{
	struct dtl *d = dtl_new_store(2);
	struct vn_pipe_iv r = iv(0, 100 * MS, 200 * MS);
	uint32_t hog = VN_DTL_CAUSE(1, 1), kw = VN_DTL_CAUSE(2, 1);

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(dtl_set_cause(d, hog, VN_DTL_CLASS_HOST_USER, 4321, "hog"), 0);
	ck_assert_int_eq(dtl_set_cause(d, kw, VN_DTL_CLASS_HOST_KTHREAD, 7, "kworker/0:1"), 0);
	span(d, 0, 90 * MS, 105 * MS, hog, VN_DTL_CLASS_HOST_USER); /* 5 ms inside */
	span(d, 0, 120 * MS, 130 * MS, kw, VN_DTL_CLASS_HOST_KTHREAD); /* 10 ms */
	span(d, 0, 140 * MS, 150 * MS, hog, VN_DTL_CLASS_HOST_USER); /* 10 ms: hog 15 in all */
	span(d, 0, 160 * MS, 163 * MS, 0, VN_DTL_CLASS_IDLE); /* 3 ms of host_wait */
	span(d, 0, 195 * MS, 230 * MS, hog, VN_DTL_CLASS_HOST_USER); /* 5 ms inside: hog 20 */
	span(d, 1, 150 * MS, 180 * MS, kw, VN_DTL_CLASS_HOST_KTHREAD); /* another CPU */
	ck_assert_uint_eq(mpidtl_attribute(d, &r), 33 * MS);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 30 * MS);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_WAIT], 3 * MS);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_VMEXIT], 0);
	ck_assert_uint_eq(r.hyp_cause, hog);
	ck_assert_uint_eq(r.hyp_cause_cls, VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(r.hyp_cause_ns, 20 * MS);
	ck_assert_str_eq(r.hyp_key, "hog");
	ck_assert_str_eq(r.hyp_name, "host-user-task:hog[4321]");

	/* the other CPU sees only its own span */
	r = iv(1, 100 * MS, 200 * MS);
	ck_assert_uint_eq(mpidtl_attribute(d, &r), 30 * MS);
	ck_assert_str_eq(r.hyp_name, "host-kernel-thread:kworker/0:1[7]");
	/* nothing there: all zero, no cause; a CPU the store does not have neither */
	r = iv(0, 300 * MS, 400 * MS);
	ck_assert_uint_eq(mpidtl_attribute(d, &r), 0);
	ck_assert_uint_eq(r.hyp_cause_cls, 0);
	ck_assert_str_eq(r.hyp_name, "");
	r = iv(9, 100 * MS, 200 * MS);
	ck_assert_uint_eq(mpidtl_attribute(d, &r), 0);
	/* no DTL at all, or an empty interval */
	r = iv(0, 100 * MS, 200 * MS);
	ck_assert_uint_eq(mpidtl_attribute(NULL, &r), 0);
	r = iv(0, 200 * MS, 100 * MS);
	ck_assert_uint_eq(mpidtl_attribute(d, &r), 0);
	dtl_close(d);
}
END_TEST

START_TEST(test_class_detail)
{
	struct dtl *d = dtl_new_store(1);
	struct vn_pipe_iv r = iv(0, 0, 10 * MS);
	uint32_t c = VN_DTL_CAUSE(3, 2);

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(dtl_set_cause(d, c, VN_DTL_CLASS_HOST_USER, 0, NULL), 0);
	span(d, 0, 1 * MS, 4 * MS, c, VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(mpidtl_attribute(d, &r), 3 * MS);
	/* the class only: no comm, no pid anywhere */
	ck_assert_str_eq(r.hyp_name, "host-user-task");
	ck_assert_str_eq(r.hyp_key, "host-user-task");
	dtl_close(d);
}
END_TEST

/* The chain: two ranks, rank 1 preempted by the host hog for most of its delay. */
START_TEST(test_chain)
{
	struct dtl *d = dtl_new_store(2);
	struct vn_pipe *p = calloc(1, sizeof(*p));
	struct vn_pipe_slot *s;
	uint32_t hog = VN_DTL_CAUSE(1, 1);
	char buf[4096];

	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(dtl_set_cause(d, hog, VN_DTL_CLASS_HOST_USER, 99, "hog"), 0);
	span(d, 1, 12 * MS, 16 * MS, hog, VN_DTL_CLASS_HOST_USER);
	pipeline_init(p, "j", 10, 0, 0xfe, VN_PIPE_F_HYP);
	p->h.nranks = 2;
	p->h.dtl = VN_PIPE_DTL_OK;
	s = pipeline_slot(p, 0);
	s->r[0] = iv(0, 10 * MS, 20 * MS);
	s->r[1] = iv(1, 10 * MS, 25 * MS);
	ck_assert_int_eq(pipeline_arrive(p, 0), 0);
	ck_assert_int_eq(pipeline_arrive(p, 0), 1);
	for (int i = 0; i < 2; i++)
		mpidtl_attribute(d, &s->r[i]);
	ck_assert_uint_eq(mpidtl_end(s->r, 2, 0), 25 * MS);
	ck_assert_int_eq(pipeline_filter(p, 0), 1);
	/* 4 of 5 ms of delay explained by the host: noise, named host_preempt */
	ck_assert_uint_eq(s->r[1].verdict, VN_VERDICT_NOISE);
	ck_assert_uint_ne(s->r[1].gverdict, VN_VERDICT_NOISE);
	ck_assert_int_gt(pipeline_json(p, 0, buf, sizeof(buf)), 0);
	ck_assert_ptr_nonnull(strstr(buf, "\"cause\":{\"class\":\"host_preempt\""));
	ck_assert_ptr_nonnull(strstr(buf, "\"name\":\"host-user-task:hog[99]\""));
	ck_assert_uint_eq(mpidtl_state(d), VN_PIPE_DTL_ABSENT); /* a store is no live DTL */
	ck_assert_uint_eq(mpidtl_state(NULL), VN_PIPE_DTL_OFF);
	free(p);
	dtl_close(d);
}
END_TEST

static Suite *mpidtl_suite(void)
{
	Suite *s = suite_create("mpidtl");
	TCase *tc = tcase_create("attribute");

	tcase_add_test(tc, test_overlap);
	tcase_add_test(tc, test_class_detail);
	tcase_add_test(tc, test_chain);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(mpidtl_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
