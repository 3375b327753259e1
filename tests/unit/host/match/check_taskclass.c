/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/taskclass over a fake /proc (a temporary directory of PID/stat and PID/status):
 * the class mapping (another domain's vCPU thread, this domain's QEMU threads and vCPUs, kernel threads by
 * PF_KTHREAD or by parent kthreadd, QEMU vCPU names of unmonitored domains, everything else host-user-task,
 * idle never a cause), a comm with parentheses in stat, tasks that are gone, the cache (no read on a hit,
 * read again for another comm or after the TTL, bounded: evictions counted) and domains that come and go.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dtl.h"
#include "match/taskclass.h"
#include "match/taskclass_priv.h"

#define S 1000000000ULL

static char root[256];

/* A fake task: PID/stat with ppid and flags, PID/status with Tgid. */
static void fake(uint32_t pid, const char *comm, uint32_t ppid, uint32_t flags, uint32_t tgid)
{
	char path[400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%u/stat", root, pid);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%u (%s) S %u %u %u 0 -1 %u 0 0 0 0 1 2 0 0 20 0 1 0 100 0 0\n", pid, comm, ppid,
		pid, pid, flags);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%u/status", root, pid);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "Name:\t%s\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%u\nNgid:\t0\nPid:\t%u\n",
		comm, tgid, pid);
	fclose(f);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/vnoise-taskclass-%d", (int)getpid());
	mkdir(root, 0755);
	fake(2, "kthreadd", 0, 0x00208040, 2);
	fake(100, "kworker/0:1", 2, 0x04208060, 100);
	fake(101, "odd", 2, 0, 101); /* no PF_KTHREAD, but a child of kthreadd */
	fake(200, "hog", 1, 0x00400100, 200);
	fake(300, "qemu-system-x86", 1, 0x00400100, 300);
	fake(301, "IO iothread1", 1, 0x00400040, 300);
	fake(310, "CPU 0/KVM", 1, 0x00400040, 300);
	fake(311, "CPU 1/KVM", 1, 0x00400040, 300);
	fake(400, "qemu-system-x86", 1, 0x00400100, 400);
	fake(410, "CPU 0/KVM", 1, 0x00400040, 400);
	fake(500, "CPU 3/TCG", 1, 0x00400040, 499); /* a vCPU of a domain nobody registered */
	fake(600, "x) S 2 9 9 0 -1 2097152 (", 1, 0x00400100, 600); /* ')' inside the comm */
}

static void teardown(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

static struct taskclass *two_domains(void)
{
	static const uint32_t t0[] = { 310, 0, 311 }, t1[] = { 410 };
	struct taskclass *tc = taskclass_new(root);

	ck_assert_ptr_nonnull(tc);
	ck_assert_int_eq(taskclass_set_domain(tc, 0, 300, t0, 3), 0);
	ck_assert_int_eq(taskclass_set_domain(tc, 1, 400, t1, 1), 0);
	return tc;
}

START_TEST(test_classes)
{
	struct taskclass *tc = two_domains();

	ck_assert_uint_eq(taskclass_of(tc, 0, 0, "swapper/0", S), VN_DTL_CLASS_IDLE);
	ck_assert_uint_eq(taskclass_of(tc, 0, 410, "CPU 0/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	ck_assert_uint_eq(taskclass_of(tc, 1, 310, "CPU 0/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	ck_assert_uint_eq(taskclass_of(tc, 1, 311, "CPU 1/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	/* this domain's own QEMU: main loop, iothread, its other vCPU */
	ck_assert_uint_eq(taskclass_of(tc, 0, 300, "qemu-system-x86", S), VN_DTL_CLASS_QEMU);
	ck_assert_uint_eq(taskclass_of(tc, 0, 301, "IO iothread1", S), VN_DTL_CLASS_QEMU);
	ck_assert_uint_eq(taskclass_of(tc, 0, 311, "CPU 1/KVM", S), VN_DTL_CLASS_QEMU);
	ck_assert_uint_eq(taskclass_of(tc, 1, 301, "IO iothread1", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 1, 400, "qemu-system-x86", S), VN_DTL_CLASS_QEMU);
	/* kernel threads: the flag, or the parent */
	ck_assert_uint_eq(taskclass_of(tc, 0, 100, "kworker/0:1", S), VN_DTL_CLASS_HOST_KTHREAD);
	ck_assert_uint_eq(taskclass_of(tc, 1, 101, "odd", S), VN_DTL_CLASS_HOST_KTHREAD);
	ck_assert_uint_eq(taskclass_of(tc, 0, 2, "kthreadd", S), VN_DTL_CLASS_HOST_KTHREAD);
	/* everything else */
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "hog", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 500, "CPU 3/TCG", S), VN_DTL_CLASS_OTHER_VCPU);
	ck_assert_uint_eq(taskclass_of(tc, 0, 600, "x) S 2 9 9 0 -1 ", S), VN_DTL_CLASS_HOST_USER);
	/* a user task is a vCPU by its name only as "CPU <n>/KVM" or "CPU <n>/TCG" */
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "CPU 12/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "CPU /KVM", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "CPU 1/kvm", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "CPU 1/KV", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "CPU 1 KVM", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "CPUs 1/TCG", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "CPU", S), VN_DTL_CLASS_HOST_USER);
	/* an unknown domain index: nothing of its own */
	ck_assert_uint_eq(taskclass_of(tc, 63, 300, "qemu-system-x86", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 1000, 410, "CPU 0/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	taskclass_free(tc);
}
END_TEST

START_TEST(test_gone)
{
	struct taskclass *tc = two_domains();
	struct taskclass_stats st;

	ck_assert_uint_eq(taskclass_of(tc, 0, 999, "exited", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 998, "CPU 1/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	ck_assert_uint_eq(taskclass_of(tc, 0, 997, NULL, S), VN_DTL_CLASS_HOST_USER);
	taskclass_stats(tc, &st);
	ck_assert_uint_eq(st.gone, 3);
	taskclass_free(tc);
}
END_TEST

START_TEST(test_cache)
{
	struct taskclass *tc = two_domains();
	struct taskclass_stats st;

	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "hog", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "hog", 2 * S), VN_DTL_CLASS_HOST_USER);
	taskclass_stats(tc, &st);
	ck_assert_uint_eq(st.lookups, 2);
	ck_assert_uint_eq(st.reads, 1);
	/* the pid is reused by a kernel thread: the cache holds within the TTL for the same comm... */
	fake(200, "hog", 2, 0x00200000, 200);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "hog", 3 * S), VN_DTL_CLASS_HOST_USER);
	/* ...another comm reads it again */
	fake(200, "kworker/1:0", 2, 0x00200000, 200);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "kworker/1:0", 3 * S),
			  VN_DTL_CLASS_HOST_KTHREAD);
	taskclass_stats(tc, &st);
	ck_assert_uint_eq(st.reads, 2);
	/* after the TTL it is read again */
	fake(200, "kworker/1:0", 1, 0, 200);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "kworker/1:0", 3 * S + TASKCLASS_TTL_NS - 1),
			  VN_DTL_CLASS_HOST_KTHREAD);
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "kworker/1:0", 3 * S + TASKCLASS_TTL_NS),
			  VN_DTL_CLASS_HOST_USER);
	/* time going back (another caller's clock): read again rather than trust */
	ck_assert_uint_eq(taskclass_of(tc, 0, 200, "kworker/1:0", 1), VN_DTL_CLASS_HOST_USER);
	taskclass_stats(tc, &st);
	ck_assert_uint_eq(st.reads, 4);
	/* vCPU threads need no /proc read at all */
	ck_assert_uint_eq(taskclass_of(tc, 0, 410, "CPU 0/KVM", 5 * S), VN_DTL_CLASS_OTHER_VCPU);
	taskclass_stats(tc, &st);
	ck_assert_uint_eq(st.reads, 4);
	taskclass_free(tc);
}
END_TEST

/* Many distinct pids: the cache stays TASKCLASS_CACHE entries, evictions are counted, answers stay right. */
START_TEST(test_cache_bounded)
{
	struct taskclass *tc = two_domains();
	struct taskclass_stats st;
	uint32_t pid;

	for (pid = 10000; pid < 10000 + 4 * TASKCLASS_CACHE; pid++)
		ck_assert_uint_eq(taskclass_of(tc, 0, pid, "gone", S), VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(taskclass_of(tc, 0, 100, "kworker/0:1", S), VN_DTL_CLASS_HOST_KTHREAD);
	taskclass_stats(tc, &st);
	ck_assert_uint_eq(st.reads, 4 * TASKCLASS_CACHE + 1);
	ck_assert_uint_ge(st.evictions, 3 * TASKCLASS_CACHE);
	taskclass_free(tc);
}
END_TEST

START_TEST(test_domains_come_and_go)
{
	struct taskclass *tc = two_domains();
	static const uint32_t t1[] = { 311 };

	taskclass_del_domain(tc, 1);
	taskclass_del_domain(tc, 1); /* twice: nothing */
	taskclass_del_domain(tc, 77); /* out of range: nothing */
	/* 410 is no longer a registered vCPU; its name still says what it is */
	ck_assert_uint_eq(taskclass_of(tc, 0, 410, "CPU 0/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	ck_assert_uint_eq(taskclass_of(tc, 0, 400, "qemu-system-x86", S), VN_DTL_CLASS_HOST_USER);
	/* domain 0 restarted with other threads: 310 is gone from it, 311 moved to domain 2 */
	ck_assert_int_eq(taskclass_set_domain(tc, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(taskclass_set_domain(tc, 2, 300, t1, 1), 0);
	ck_assert_uint_eq(taskclass_of(tc, 0, 311, "CPU 1/KVM", S), VN_DTL_CLASS_OTHER_VCPU);
	ck_assert_uint_eq(taskclass_of(tc, 2, 311, "CPU 1/KVM", S), VN_DTL_CLASS_QEMU);
	ck_assert_uint_eq(taskclass_of(tc, 2, 310, "CPU 0/KVM", S), VN_DTL_CLASS_QEMU);
	ck_assert_int_eq(taskclass_set_domain(tc, 64, 300, t1, 1), -EINVAL);
	ck_assert_uint_eq(taskclass_of(tc, 0, 300, "qemu-system-x86", 2 * TASKCLASS_TTL_NS),
			  VN_DTL_CLASS_HOST_USER);
	taskclass_free(tc);
	taskclass_free(NULL);
}
END_TEST

static Suite *taskclass_suite(void)
{
	Suite *s = suite_create("taskclass");
	TCase *tc = tcase_create("classes");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_classes);
	tcase_add_test(tc, test_gone);
	tcase_add_test(tc, test_cache);
	tcase_add_test(tc, test_cache_bounded);
	tcase_add_test(tc, test_domains_come_and_go);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(taskclass_suite());
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}
