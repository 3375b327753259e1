/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/libvirt/qemuthread: QEMU thread name classification (vCPU threads with their index and
 * accelerator, the accelerator buffer's capacity, I/O threads, and names that only look like them).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "libvirt/qemuthread.h"

START_TEST(test_thread_vcpu)
{
	unsigned v = 99;
	char accel[8];

	ck_assert_int_eq(qemuthread_classify("CPU 0/TCG", &v, accel, sizeof(accel)),
			 QEMUTHREAD_VCPU);
	ck_assert_uint_eq(v, 0);
	ck_assert_str_eq(accel, "TCG");
	ck_assert_int_eq(qemuthread_classify("CPU 12/KVM", &v, accel, sizeof(accel)),
			 QEMUTHREAD_VCPU);
	ck_assert_uint_eq(v, 12);
	ck_assert_str_eq(accel, "KVM");
	ck_assert_int_eq(qemuthread_classify("CPU 255/KVM", &v, accel, sizeof(accel)),
			 QEMUTHREAD_VCPU);
	ck_assert_uint_eq(v, 255);
	ck_assert_int_eq(qemuthread_classify("CPU 007/TCG", &v, accel, sizeof(accel)),
			 QEMUTHREAD_VCPU);
	ck_assert_uint_eq(v, 7);
	/* vcpu and accel are optional */
	ck_assert_int_eq(qemuthread_classify("CPU 3/KVM", NULL, NULL, 0), QEMUTHREAD_VCPU);
	ck_assert_int_eq(qemuthread_classify("CPU 3/KVM", &v, NULL, 8), QEMUTHREAD_VCPU);
	ck_assert_uint_eq(v, 3);
}
END_TEST

START_TEST(test_thread_accel_cap)
{
	unsigned v;
	char accel[8];

	memset(accel, 'Z', sizeof(accel));
	ck_assert_int_eq(qemuthread_classify("CPU 1/KVM", &v, accel, 3), QEMUTHREAD_VCPU);
	ck_assert_str_eq(accel, "KV");
	ck_assert_int_eq(accel[3], 'Z');
	ck_assert_int_eq(qemuthread_classify("CPU 1/KVM", &v, accel, 1), QEMUTHREAD_VCPU);
	ck_assert_str_eq(accel, "");
	ck_assert_int_eq(accel[1], 'V');
	/* cap 0: nothing written */
	memset(accel, 'Z', sizeof(accel));
	ck_assert_int_eq(qemuthread_classify("CPU 1/KVM", &v, accel, 0), QEMUTHREAD_VCPU);
	ck_assert_int_eq(accel[0], 'Z');
	ck_assert_int_eq(qemuthread_classify("CPU 1/KVM", &v, accel, 4), QEMUTHREAD_VCPU);
	ck_assert_str_eq(accel, "KVM");
}
END_TEST

START_TEST(test_thread_not_vcpu)
{
	static const char *const other[] = {
		"CPU /KVM",   "CPU x/KVM",  "CPU 1",	       "CPU 1 KVM",
		"CPU -1/KVM", "CPU  1/KVM", " CPU 1/KVM",      "cpu 1/KVM",
		"CPU",	      "CPU ",	    "CPU 1234567/KVM", "qemu-system-x86",
		"worker",     "call_rcu",   "vnc_worker",      "SPICE Worker",
		"",	      "IO",	    "io iothread1",    "IOthread"
	};
	unsigned v = 77;
	char accel[8] = "keep";
	size_t i;

	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		ck_assert_msg(qemuthread_classify(other[i], &v, accel, sizeof(accel)) ==
				  QEMUTHREAD_OTHER,
			      "'%s' is not QEMUTHREAD_OTHER", other[i]);
		ck_assert_msg(v == 77 && !strcmp(accel, "keep"), "'%s' wrote outputs", other[i]);
	}
}
END_TEST

START_TEST(test_thread_iothread)
{
	unsigned v = 77;

	ck_assert_int_eq(qemuthread_classify("IO iothread1", &v, NULL, 0), QEMUTHREAD_IOTHREAD);
	ck_assert_int_eq(qemuthread_classify("IO mon_iothread", &v, NULL, 0), QEMUTHREAD_IOTHREAD);
	ck_assert_int_eq(qemuthread_classify("IO iothread-disk", NULL, NULL, 0),
			 QEMUTHREAD_IOTHREAD);
	ck_assert_uint_eq(v, 77);
}
END_TEST

static Suite *qemuthread_suite(void)
{
	Suite *s = suite_create("qemuthread");
	TCase *tc;

	tc = tcase_create("classify");
	tcase_add_test(tc, test_thread_vcpu);
	tcase_add_test(tc, test_thread_accel_cap);
	tcase_add_test(tc, test_thread_not_vcpu);
	tcase_add_test(tc, test_thread_iothread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(qemuthread_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
