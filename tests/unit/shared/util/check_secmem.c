/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/secmem: the pages are zeroed, out of core dumps (VmFlags "dd"), wiped before
 * they are unmapped; secmem_dontdump() marks a mapping made elsewhere (a shared memfd) and rejects nothing.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check_main.h"
#include "secmem_check.h"
#include "util/secmem.h"

START_TEST(test_alloc_free)
{
	unsigned char *p = secmem_alloc(100);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE), 0);
	for (size_t i = 0; i < 100; i++)
		ck_assert_uint_eq(p[i], 0);
	ck_assert_int_eq(vmflag(p, "dd"), 1);
	memset(p, 0xa5, 100);
	watch(p, 100);
	secmem_free(p, 100);
	ck_assert_int_eq(watch_unmapped, 1);
	ck_assert_int_eq(watch_zero, 1); /* wiped before the pages went back */
	ck_assert_int_eq(vmflag(p, "dd"), -1);
	secmem_free(NULL, 100);
}
END_TEST

START_TEST(test_dontdump_shared)
{
	int fd = memfd_create("check_secmem", MFD_CLOEXEC);
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *m;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)(3 * ps)), 0);
	m = mmap(NULL, 3 * ps, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(m, MAP_FAILED);
	ck_assert_int_eq(vmflag(m, "dd"), 0);
	ck_assert_int_eq(secmem_dontdump(m + 10, 100), 0);
	ck_assert_int_eq(vmflag(m, "dd"), 1);
	ck_assert_int_eq(vmflag(m + ps, "dd"), 0); /* only the page holding the range */
	ck_assert_int_eq(secmem_dontdump(NULL, 1), -EINVAL);
	munmap(m, 3 * ps);
	close(fd);
}
END_TEST

static Suite *secmem_suite(void)
{
	Suite *s = suite_create("secmem");
	TCase *tc = tcase_create("pages");

	tcase_add_test(tc, test_alloc_free);
	tcase_add_test(tc, test_dontdump_shared);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(secmem_suite());
}
