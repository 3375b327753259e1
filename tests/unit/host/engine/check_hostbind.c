/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/engine/hostbind, a domain's binding as a record chunk: the text of a mapping applied to
 * an aggregate gives the same binding (name, uuid, pid, vCPU threads, start and stop counts), a buffer too
 * small is -ENOSPC, a text without its required keys or with out-of-range ones is -EINVAL, and the key
 * lookups of a text chunk are strict.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "engine/hostbind.h"
#include "engine/hostagg_priv.h"

static void fill(struct vmap_dom *m)
{
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "guest-1");
	snprintf(m->uuid, sizeof(m->uuid), "6f1c0d3e-0000-4000-8000-000000000001");
	snprintf(m->virt, sizeof(m->virt), "kvm");
	m->qemu_pid = 4242;
	m->nvcpus = 2;
	m->tids[0] = 4250;
	m->tids[1] = 4251;
	m->emulator_tid = 4242;
	m->iothreads[0] = 4260;
	m->niothreads = 1;
	snprintf(m->taps, sizeof(m->taps), "vnet0,vnet3");
	m->tid_source = "thread-names";
}

START_TEST(test_round_trip)
{
	struct hostagg *a = hostagg_new();
	struct vmap_dom m;
	char buf[4096];
	int n;

	ck_assert_ptr_nonnull(a);
	fill(&m);
	n = hostbind_text(buf, sizeof(buf), 3, &m, "started", 123);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(strlen(buf), (size_t)n);
	ck_assert_ptr_nonnull(strstr(buf, "vcpu.1.tid=4251\n"));
	ck_assert_ptr_nonnull(strstr(buf, "iothreads=4260\n"));
	ck_assert_int_eq(hostbind_apply(a, buf, (size_t)n), 0);
	ck_assert(a->dom[3].seen);
	ck_assert(a->dom[3].running);
	ck_assert_str_eq(a->dom[3].name, "guest-1");
	ck_assert_str_eq(a->dom[3].uuid, m.uuid);
	ck_assert_str_eq(a->dom[3].virt, "kvm");
	ck_assert_uint_eq(a->dom[3].qemu_pid, 4242);
	ck_assert_uint_eq(a->dom[3].nvcpus, 2);
	ck_assert_uint_eq(a->dom[3].starts, 1);
	ck_assert_uint_eq(hostagg_vcpu_get(a, 3, 1)->tid, 4251);
	n = hostbind_text(buf, sizeof(buf), 3, &m, "stopped", 456);
	ck_assert_int_eq(hostbind_apply(a, buf, (size_t)n), 0);
	ck_assert(!a->dom[3].running);
	ck_assert_uint_eq(a->dom[3].stops, 1);
	hostagg_free(a);
}
END_TEST

START_TEST(test_too_small)
{
	struct vmap_dom m;
	char buf[64];

	fill(&m);
	ck_assert_int_eq(hostbind_text(buf, sizeof(buf), 0, &m, "started", 1), -ENOSPC);
}
END_TEST

START_TEST(test_bad_text)
{
	static const char *const bad[] = {
		"event=started\nnvcpus=1\n", /* no dom */
		"dom=0\nnvcpus=1\n", /* no event */
		"dom=99\nevent=started\nnvcpus=1\n", /* dom out of range */
		"dom=0\nevent=started\nnvcpus=100000\n", /* too many vCPUs */
		"dom=0x1\nevent=started\nnvcpus=1\n", /* not a strict number */
	};
	struct hostagg *a = hostagg_new();

	ck_assert_ptr_nonnull(a);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(hostbind_apply(a, bad[i], strlen(bad[i])) == -EINVAL, "%s", bad[i]);
	hostagg_free(a);
}
END_TEST

START_TEST(test_kv)
{
	static const char txt[] = "a=12\nb=x\nc=18446744073709551616\nlong=0123456789\n";
	char s[8];
	uint64_t v;

	ck_assert(hostbind_kv_u64(txt, sizeof(txt) - 1, "a", &v));
	ck_assert_uint_eq(v, 12);
	ck_assert(!hostbind_kv_u64(txt, sizeof(txt) - 1, "b", &v));
	ck_assert(!hostbind_kv_u64(txt, sizeof(txt) - 1, "c", &v)); /* overflow */
	ck_assert(!hostbind_kv_u64(txt, sizeof(txt) - 1, "d", &v)); /* missing */
	ck_assert(hostbind_kv_str(txt, sizeof(txt) - 1, "b", s, sizeof(s)));
	ck_assert_str_eq(s, "x");
	ck_assert(!hostbind_kv_str(txt, sizeof(txt) - 1, "long", s, sizeof(s))); /* too long */
}
END_TEST

static Suite *hostbind_suite(void)
{
	Suite *s = suite_create("hostbind");
	TCase *tc = tcase_create("binding");

	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_too_small);
	tcase_add_test(tc, test_bad_text);
	tcase_add_test(tc, test_kv);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hostbind_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
