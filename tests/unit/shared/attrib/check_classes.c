/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/attrib/classes, the one name table of the attribution model's classes: every class
 * has its public spelling (protocol/README.md) and column heads, name -> class -> name round trips for every
 * guest and hypervisor class (and the residual hw), unknown or near-miss names and out-of-range classes are
 * rejected, and the values that cross a wire or a file (enum vn_hclass, the report datagram's cls, the record
 * structs' arrays by class) stay what they are.
 */
#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "attrib/classes_priv.h"
#include "format/datagram.h"
#include "app.h"
#include "cluster.h"
#include "host.h"
#include "record.h"
#include "check_main.h"

/* ---- names ---- */

START_TEST(test_guest_names)
{
	static const char *const want[VN_CLASS_MAX][2] = {
		{ "none", "-" },	{ "nmi", "NMI" },
		{ "irq", "IRQ" },	{ "softirq", "SIRQ" },
		{ "thread", "THREAD" }, { "hypercall", "HCALL" },
		{ "steal", "STEAL" },	{ "unexplained", "UNEXPL" },
	};

	for (int c = 0; c < VN_CLASS_MAX; c++) {
		ck_assert_str_eq(classes_guest_name(c), want[c][0]);
		ck_assert_str_eq(classes_guest_label(c), want[c][1]);
	}
}
END_TEST

START_TEST(test_hyp_names)
{
	static const char *const want[VN_HCLASS_PARTS][3] = {
		[VN_HCLASS_HOST_PREEMPT] = { "host_preempt", "HOSTPRE", "HPRE" },
		[VN_HCLASS_HOST_WAIT] = { "host_wait", "HOSTWAIT", "HWAIT" },
		[VN_HCLASS_VMEXIT] = { "vmexit", "VMEXIT", "VMEXIT" },
		[VN_HCLASS_HOST_IRQ] = { "host_irq", "HOSTIRQ", "HIRQ" },
		[VN_HCLASS_HW] = { "hw", "HW", "HW" },
	};

	for (int h = 0; h < VN_HCLASS_PARTS; h++) {
		ck_assert_str_eq(classes_hyp_name(h), want[h][0]);
		ck_assert_str_eq(classes_hyp_label(h), want[h][1]);
		ck_assert_str_eq(classes_hyp_abbrev(h), want[h][2]);
	}
}
END_TEST

START_TEST(test_out_of_range)
{
	ck_assert_str_eq(classes_guest_name(-1), "?");
	ck_assert_str_eq(classes_guest_name(VN_CLASS_MAX), "?");
	ck_assert_str_eq(classes_guest_label(-1), "?");
	ck_assert_str_eq(classes_guest_label(99), "?");
	ck_assert_str_eq(classes_hyp_name(-1), "?");
	ck_assert_str_eq(classes_hyp_name(VN_HCLASS_PARTS), "?");
	ck_assert_str_eq(classes_hyp_label(VN_HCLASS_PARTS), "?");
	ck_assert_str_eq(classes_hyp_abbrev(-7), "?");
	ck_assert_str_eq(classes_hyp_name(1 << 20), "?");
}
END_TEST

/* ---- lookups ---- */

START_TEST(test_round_trip)
{
	for (int c = 0; c < VN_CLASS_MAX; c++)
		ck_assert_int_eq(classes_guest_find(classes_guest_name(c)), c);
	for (int h = 0; h < VN_HCLASS_PARTS; h++)
		ck_assert_int_eq(classes_hyp_find(classes_hyp_name(h)), h);
	ck_assert_int_eq(classes_hyp_find("hw"), VN_HCLASS_HW);
	ck_assert_int_eq(classes_hyp_find("host_irq"), VN_HCLASS_HOST_IRQ);
	ck_assert_int_eq(classes_guest_find("steal"), VN_CLASS_STEAL);
}
END_TEST

START_TEST(test_unknown_rejected)
{
	static const char *const bad[] = {
		"",
		"?",
		"HOST_PREEMPT",
		"host_preempt ",
		" host_wait",
		"host_preempt_ns",
		"host",
		"preempt",
		"hcall",
		"HCALL",
		"vmexi",
		"vmexit:HLT",
		"hw%",
		"residual",
		"NMI",
		"unexpl",
		"idle",
		"host-preempt",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(classes_guest_find(bad[i]), -ENOENT);
		ck_assert_int_eq(classes_hyp_find(bad[i]), -ENOENT);
	}
	/* each part of the table answers only for its own classes */
	ck_assert_int_eq(classes_guest_find("host_preempt"), -ENOENT);
	ck_assert_int_eq(classes_guest_find("hw"), -ENOENT);
	ck_assert_int_eq(classes_hyp_find("steal"), -ENOENT);
	ck_assert_int_eq(classes_hyp_find("none"), -ENOENT);
	ck_assert_int_eq(classes_guest_find(NULL), -EINVAL);
	ck_assert_int_eq(classes_hyp_find(NULL), -EINVAL);
}
END_TEST

START_TEST(test_names_unique)
{
	const char *all[VN_CLASS_MAX + VN_HCLASS_PARTS];
	int n = 0;

	for (int c = 0; c < VN_CLASS_MAX; c++)
		all[n++] = classes_guest_name(c);
	for (int h = 0; h < VN_HCLASS_PARTS; h++)
		all[n++] = classes_hyp_name(h);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			ck_assert_str_ne(all[i], all[j]);
}
END_TEST

/* ---- wire values ---- */

START_TEST(test_hclass_values)
{
	ck_assert_int_eq(VN_HCLASS_HOST_PREEMPT, 0);
	ck_assert_int_eq(VN_HCLASS_HOST_WAIT, 1);
	ck_assert_int_eq(VN_HCLASS_VMEXIT, 2);
	ck_assert_int_eq(VN_HCLASS_HOST_IRQ, 3);
	ck_assert_int_eq(VN_HCLASS_MAX, 4);
	ck_assert_int_eq(VN_HCLASS_HW, 4);
	ck_assert_int_eq(VN_HCLASS_PARTS, 5);
	/* the record structs' arrays by class and where they sit */
	ck_assert_uint_eq(offsetof(struct vn_host_match, host_ns), 120);
	ck_assert_uint_eq(sizeof(((struct vn_host_match *)0)->host_ns), 32);
	ck_assert_uint_eq(offsetof(struct vn_pipe_iv, hyp_ns), 144);
	ck_assert_uint_eq(sizeof(((struct vn_pipe_iv *)0)->hyp_ns), 32);
	ck_assert_uint_eq(offsetof(struct vn_rec_dtl_span, hclass), 24);
}
END_TEST

START_TEST(test_datagram_cls)
{
	static const struct {
		int hc;
		unsigned cls;
		const char *name;
	} want[] = {
		{ VN_HCLASS_HOST_PREEMPT, 8, "host_preempt" },
		{ VN_HCLASS_HOST_WAIT, 9, "host_wait" },
		{ VN_HCLASS_VMEXIT, 10, "vmexit" },
		{ VN_HCLASS_HOST_IRQ, 11, "host_irq" },
	};

	ck_assert_int_eq(VN_REPORT_CLS_HYP_BASE, 8);
	ck_assert_int_eq(VN_REPORT_CLS_MAX, 12);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_uint_eq(datagram_cls_of_hclass(want[i].hc), want[i].cls);
		ck_assert_int_eq(datagram_hclass_of_cls(want[i].cls), want[i].hc);
		ck_assert_str_eq(datagram_class_name(want[i].cls), want[i].name);
	}
	/* the guest classes are not hypervisor classes, and nothing past host_irq is a class */
	for (unsigned c = 0; c < VN_CLASS_MAX; c++) {
		ck_assert_int_eq(datagram_hclass_of_cls(c), -1);
		ck_assert_str_eq(datagram_class_name(c), classes_guest_name((int)c));
	}
	ck_assert_int_eq(datagram_hclass_of_cls(VN_REPORT_CLS_MAX), -1);
	ck_assert_int_eq(datagram_hclass_of_cls(255), -1);
	ck_assert_str_eq(datagram_class_name(VN_REPORT_CLS_MAX), "?"); /* never "hw" on the wire */
}
END_TEST

static Suite *classes_suite(void)
{
	Suite *s = suite_create("classes");
	TCase *tc;

	tc = tcase_create("names");
	tcase_add_test(tc, test_guest_names);
	tcase_add_test(tc, test_hyp_names);
	tcase_add_test(tc, test_out_of_range);
	suite_add_tcase(s, tc);

	tc = tcase_create("lookup");
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_unknown_rejected);
	tcase_add_test(tc, test_names_unique);
	suite_add_tcase(s, tc);

	tc = tcase_create("wire");
	tcase_add_test(tc, test_hclass_values);
	tcase_add_test(tc, test_datagram_cls);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(classes_suite());
}
