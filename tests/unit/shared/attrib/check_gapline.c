/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/attrib/gapline, the line of `report --gaps`: the exact line of a known gap (keys in
 * order, zero parts left out, the class table's names), every class's name, a line that reads back as JSON
 * whose parts add up to duration_ns, refusal (nothing written) of parts that do not add up, and a failing
 * stream reported.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/gapline.h"
#include "util/jsonread.h"
#include "check_main.h"

/* g written into a string (caller frees); rc gets gapline_write's return. */
static char *line_of(const struct gapline *g, int *rc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	*rc = gapline_write(f, g);
	fclose(f);
	return buf;
}

START_TEST(test_known_line)
{
	struct gapline g = { .cpu = 1, .start_ns = 123456789, .duration_ns = 3000000 };
	char *s;
	int rc;

	g.guest_ns[VN_CLASS_IRQ] = 1000;
	g.hyp_ns[VN_HCLASS_HOST_PREEMPT] = 2900000;
	g.hyp_ns[VN_HCLASS_HW] = 99000;
	s = line_of(&g, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(s, "{\"cpu\":1,\"start_ns\":123456789,\"duration_ns\":3000000,"
			    "\"classes\":{\"irq\":1000,\"host_preempt\":2900000,\"hw\":99000}}\n");
	free(s);
}
END_TEST

START_TEST(test_every_class_named)
{
	static const char *const names[] = { "none",	  "nmi",	 "irq",
					     "softirq",	  "thread",	 "hypercall",
					     "steal",	  "unexplained", "host_preempt",
					     "host_wait", "vmexit",	 "host_irq",
					     "hw" };
	struct gapline g = { .duration_ns = 0 };
	char *s, key[32];
	int k, rc;

	for (k = 0; k < VN_CLASS_MAX; k++)
		g.guest_ns[k] = (uint64_t)k + 1;
	for (k = 0; k < VN_HCLASS_PARTS; k++)
		g.hyp_ns[k] = 100 + (uint64_t)k;
	g.duration_ns = gapline_sum(&g);
	s = line_of(&g, &rc);
	ck_assert_int_eq(rc, 0);
	for (k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++) {
		snprintf(key, sizeof(key), "\"%s\":%d", names[k],
			 k < VN_CLASS_MAX ? k + 1 : 100 + k - VN_CLASS_MAX);
		ck_assert_msg(strstr(s, key), "%s missing in %s", key, s);
	}
	free(s);
}
END_TEST

/* The line reads back with the project's JSON reader and its parts add up to duration_ns. */
START_TEST(test_reads_back)
{
	struct gapline g = { .cpu = 7, .start_ns = UINT64_MAX - 5, .duration_ns = 10 };
	struct jsonr_doc *d = jsonr_doc_new(4096, 64);
	const struct jsonr_value *root, *cls, *m;
	char *s;
	uint64_t v, sum = 0;
	int rc;

	ck_assert_ptr_nonnull(d);
	g.guest_ns[VN_CLASS_STEAL] = 4;
	g.hyp_ns[VN_HCLASS_HOST_WAIT] = 6;
	s = line_of(&g, &rc);
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(jsonr_parse(d, s, strlen(s), &root), 0);
	ck_assert_int_eq(jsonr_get_u64(jsonr_obj_get(root, "start_ns"), &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX - 5);
	ck_assert_int_eq(jsonr_get_u64(jsonr_obj_get(root, "cpu"), &v), 0);
	ck_assert_uint_eq(v, 7);
	cls = jsonr_obj_get(root, "classes");
	ck_assert_ptr_nonnull(cls);
	ck_assert_uint_eq(cls->len, 2);
	for (m = cls->child; m; m = m->next) {
		ck_assert_int_eq(jsonr_get_u64(m, &v), 0);
		sum += v;
	}
	ck_assert_uint_eq(sum, 10);
	jsonr_doc_free(d);
	free(s);
}
END_TEST

START_TEST(test_parts_must_add_up)
{
	struct gapline g = { .cpu = 0, .start_ns = 1, .duration_ns = 100 };
	char *s;
	int rc;

	g.hyp_ns[VN_HCLASS_HW] = 99;
	s = line_of(&g, &rc);
	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_str_eq(s, "");
	free(s);
	g.hyp_ns[VN_HCLASS_HW] = UINT64_MAX; /* the sum saturates: no wrap to a match */
	g.guest_ns[VN_CLASS_IRQ] = 101;
	s = line_of(&g, &rc);
	ck_assert_int_eq(rc, -EINVAL);
	free(s);
}
END_TEST

START_TEST(test_stream_error)
{
	struct gapline g = { .duration_ns = 1 };
	FILE *f = fopen("/dev/full", "w");
	int rc;

	if (!f)
		return;
	setvbuf(f, NULL, _IONBF, 0);
	g.hyp_ns[VN_HCLASS_HW] = 1;
	rc = gapline_write(f, &g);
	fclose(f);
	ck_assert_int_lt(rc, 0);
	ck_assert_int_ne(rc, -EINVAL);
}
END_TEST

static Suite *gapline_suite(void)
{
	Suite *s = suite_create("gapline");
	TCase *tc = tcase_create("line");

	tcase_add_test(tc, test_known_line);
	tcase_add_test(tc, test_every_class_named);
	tcase_add_test(tc, test_reads_back);
	tcase_add_test(tc, test_parts_must_add_up);
	tcase_add_test(tc, test_stream_error);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(gapline_suite());
}
