/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/views/hostgaps, the lines of `vnoise-host report FILE --gaps` from HOST_MGAP records:
 * the guest start, vCPU and the matcher's split (residual as hw) on one line, time order, records that do
 * not add up or name a vCPU out of range counted and left out, a payload of partial records refused, the
 * first domain's gaps only when several are in the file.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "host.h"
#include "views/hostgaps.h"
#include "check_main.h"

static struct vn_host_mgap mgap(uint32_t dom, uint32_t vcpu, uint64_t start, uint64_t pre, uint64_t irq,
				uint64_t hw)
{
	struct vn_host_mgap m = { .start_ns = start,
				  .host_start_ns = start + 1000000,
				  .duration_ns = pre + irq + hw,
				  .dom = dom,
				  .vcpu = vcpu };

	m.host_ns[VN_HCLASS_HOST_PREEMPT] = pre;
	m.guest_ns[VN_CLASS_IRQ] = irq;
	m.residual_ns = hw;
	return m;
}

static char *lines_of(struct hostgaps *hg, long *n)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	*n = hostgaps_write(hg, f);
	fclose(f);
	return buf;
}

START_TEST(test_lines)
{
	struct hostgaps *hg = hostgaps_new();
	struct vn_host_mgap m[4] = { mgap(2, 1, 900, 50, 0, 5), mgap(2, 0, 100, 3000, 20, 7),
				     mgap(2, 0, 500, 1, 1, 1), mgap(3, 0, 50, 9, 9, 9) };
	char *s;
	long n;

	ck_assert_ptr_nonnull(hg);
	m[2].residual_ns = 5; /* 3 parts, duration 3: does not add up */
	ck_assert_int_eq(hostgaps_chunk(hg, m, sizeof(m)), 0);
	ck_assert_int_eq(hostgaps_chunk(hg, m, sizeof(m) - 1), -EINVAL);
	ck_assert_uint_eq(hostgaps_bad(hg), 1);
	ck_assert_uint_eq(hostgaps_domains(hg), 2);
	s = lines_of(hg, &n);
	ck_assert_int_eq(n, 2); /* domain 2 only, the bad record left out */
	ck_assert_str_eq(s, "{\"cpu\":0,\"start_ns\":100,\"duration_ns\":3027,\"classes\":{\"irq\":20,"
			    "\"host_preempt\":3000,\"hw\":7}}\n"
			    "{\"cpu\":1,\"start_ns\":900,\"duration_ns\":55,\"classes\":{"
			    "\"host_preempt\":50,\"hw\":5}}\n");
	free(s);
	hostgaps_free(hg);
}
END_TEST

START_TEST(test_out_of_range_and_empty)
{
	struct hostgaps *hg = hostgaps_new();
	struct vn_host_mgap m = mgap(0, VN_HOST_MAX_VCPUS, 1, 1, 1, 1);
	char *s;
	long n;

	ck_assert_int_eq(hostgaps_chunk(hg, &m, sizeof(m)), 0);
	m = mgap(VN_HOST_MAX_DOMAINS, 0, 1, 1, 1, 1);
	ck_assert_int_eq(hostgaps_chunk(hg, &m, sizeof(m)), 0);
	ck_assert_uint_eq(hostgaps_bad(hg), 2);
	s = lines_of(hg, &n);
	ck_assert_int_eq(n, 0);
	ck_assert_str_eq(s, "");
	free(s);
	hostgaps_free(hg);
	hostgaps_free(NULL);
}
END_TEST

static Suite *hostgaps_suite(void)
{
	Suite *s = suite_create("hostgaps");
	TCase *tc = tcase_create("lines");

	tcase_add_test(tc, test_lines);
	tcase_add_test(tc, test_out_of_range_and_empty);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(hostgaps_suite());
}
