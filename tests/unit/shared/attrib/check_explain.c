/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/attrib/explain, the footer under a table of noise by class: a line for STEAL, UNEXPL
 * and HW only over 1% of the total (exactly 1% is not over), in that order, named by the tables' column
 * heads, with the share rounded as said; the printed footer folds at 80 columns without losing a word, and
 * width 0 prints each line whole.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/explain.h"
#include "check_main.h"

START_TEST(test_threshold)
{
	char l[EXPLAIN_LINES][EXPLAIN_LINE_LEN];
	struct explain_totals t = { .total_ns = 1000000, .steal_ns = 10000, .unexpl_ns = 10001 };

	/* STEAL is 1.000%: not over; UNEXPL 1.0001%: over */
	ck_assert_uint_eq(explain_lines(&t, l), 1);
	ck_assert_msg(!strncmp(l[0], "UNEXPL 1.0%: no guest event explains it", 39), "%s", l[0]);
	ck_assert_ptr_nonnull(strstr(l[0], "(rtla: HW). Run vnoise-host on the host to name it"));
	t.steal_ns = 0;
	t.unexpl_ns = 0;
	ck_assert_uint_eq(explain_lines(&t, l), 0);
	t = (struct explain_totals){ .steal_ns = 5,
				     .unexpl_ns = 5 }; /* no total: nothing to share */
	ck_assert_uint_eq(explain_lines(&t, l), 0);
}
END_TEST

START_TEST(test_order_and_share)
{
	char l[EXPLAIN_LINES][EXPLAIN_LINE_LEN];
	struct explain_totals t = {
		.total_ns = 1000, .steal_ns = 360, .unexpl_ns = 55, .hw_ns = 125
	};

	ck_assert_uint_eq(explain_lines(&t, l), 3);
	ck_assert_msg(!strncmp(l[0],
			       "STEAL 36%: the hypervisor ran something else on this vCPU's "
			       "CPU",
			       63),
		      "%s", l[0]);
	ck_assert_ptr_nonnull(strstr(l[0], "Run vnoise-host on the host to name it"));
	ck_assert_msg(!strncmp(l[1], "UNEXPL 5.5%: ", 13), "%s", l[1]);
	ck_assert_msg(!strncmp(l[2], "HW 12%: the host's log has no cause for it", 42), "%s", l[2]);
	t.host = 1; /* the host's vCPU table: its own words for STEAL (it names the preemptors) */
	ck_assert_uint_eq(explain_lines(&t, l), 3);
	ck_assert_msg(strstr(l[0], "STEAL 36%: the vCPUs were runnable while something else ran") ==
			  l[0],
		      "%s", l[0]);
	ck_assert_ptr_null(strstr(l[0], "Run vnoise-host"));
	ck_assert_msg(strstr(l[2], "HW 12%: neither the guest's events nor the host's records") ==
			  l[2],
		      "%s", l[2]);
	ck_assert_ptr_null(strstr(l[2], "ask the provider"));
}
END_TEST

/* What explain_footer(t, width) prints; the caller frees it. */
static char *footer(const struct explain_totals *t, int width)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	explain_footer(f, t, width);
	fclose(f);
	return buf;
}

START_TEST(test_fold)
{
	struct explain_totals t = { .total_ns = 100, .steal_ns = 20, .unexpl_ns = 30, .hw_ns = 1 };
	char l[EXPLAIN_LINES][EXPLAIN_LINE_LEN], joined[3 * EXPLAIN_LINE_LEN] = "", *out, *line,
							    *sv;
	size_t n = explain_lines(&t, l), off = 0;
	int lines = 0;

	ck_assert_uint_eq(n, 2); /* HW is 1%: not over */
	out = footer(&t, 80);
	for (line = strtok_r(out, "\n", &sv); line; line = strtok_r(NULL, "\n", &sv), lines++) {
		ck_assert_msg(strlen(line) <= 80, "over 80 columns: %s", line);
		if (!strncmp(line, "  ", 2)) { /* a continued line: one space between the parts */
			joined[off++] = ' ';
			line += 2;
		} else if (off) {
			joined[off++] = '\n';
		}
		off += (size_t)snprintf(joined + off, sizeof(joined) - off, "%s", line);
	}
	ck_assert_int_gt(lines, 2); /* each line is longer than 80 columns: folded */
	ck_assert_str_eq(joined, strcat(strcat(l[0], "\n"), l[1]));
	free(out);
	out = footer(&t, 0); /* whole lines: l[0] now holds both, joined by a newline */
	ck_assert_str_eq(out, strcat(l[0], "\n"));
	free(out);
}
END_TEST

static Suite *explain_suite(void)
{
	Suite *s = suite_create("explain");
	TCase *tc = tcase_create("footer");

	tcase_add_test(tc, test_threshold);
	tcase_add_test(tc, test_order_and_share);
	tcase_add_test(tc, test_fold);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(explain_suite());
}
