/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/export/promfmt: exact family and sample lines, label value escaping, fixed-size fields
 * that are not NUL-terminated, invalid UTF-8 and control characters turned into U+FFFD (plus a seeded
 * random sweep checked against an independent UTF-8 decoder and the format's escape rules), NaN and the
 * infinities, doubles that read back exactly, the decimal point under another LC_NUMERIC, exact u64,
 * names, and a full buffer.
 */
#include <check.h>
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "export/promfmt.h"
#include "export/promfmt_priv.h"

#define FFFD "\xef\xbf\xbd"

static char big[4096];

static struct bufout fresh(void)
{
	struct bufout o = { big, sizeof(big), 0, 0 };

	big[0] = '\0';
	return o;
}

/* The escaped form of a label value of at most max bytes. */
static const char *esc(const char *v, size_t max)
{
	struct bufout o = fresh();

	promfmt_label_value(&o, v, max);
	ck_assert_int_ge(bufout_result(&o), 0);
	return big;
}

START_TEST(test_family)
{
	struct bufout o = fresh();

	promfmt_family(&o, "vnoise_reports_total", "counter",
		       "Reports \"received\"\\ok\nsecond line");
	ck_assert_str_eq(big,
			 "# HELP vnoise_reports_total Reports \"received\"\\\\ok\\nsecond line\n"
			 "# TYPE vnoise_reports_total counter\n");
	o = fresh();
	promfmt_family(&o, "g", "gauge", "tab\there \xff");
	ck_assert_str_eq(big, "# HELP g tab" FFFD "here " FFFD "\n# TYPE g gauge\n");
}
END_TEST

START_TEST(test_sample_lines)
{
	struct bufout o = fresh();
	const struct promfmt_label l[] = {
		{ "node", "n1", SIZE_MAX },
		{ "comm", "kworker/0:1", SIZE_MAX },
	};

	promfmt_sample(&o, "vnoise_up", NULL, 0, 1);
	promfmt_sample(&o, "vnoise_noise_seconds_total", l, 2, 0.25);
	promfmt_sample_u64(&o, "vnoise_events_total", l, 1, 42);
	ck_assert_str_eq(big, "vnoise_up 1\n"
			      "vnoise_noise_seconds_total{node=\"n1\",comm=\"kworker/0:1\"} 0.25\n"
			      "vnoise_events_total{node=\"n1\"} 42\n");
	ck_assert_int_eq(bufout_result(&o), (int)strlen(big));
}
END_TEST

START_TEST(test_escape)
{
	ck_assert_str_eq(esc("a\"b\\c\nd", SIZE_MAX), "a\\\"b\\\\c\\nd");
	ck_assert_str_eq(esc("\\\\", SIZE_MAX), "\\\\\\\\");
	ck_assert_str_eq(esc("\"", SIZE_MAX), "\\\"");
	ck_assert_str_eq(esc("", SIZE_MAX), "");
	ck_assert_str_eq(esc(NULL, 16), "");
	ck_assert_str_eq(esc("{x=\"y\"} 1\n# evil", SIZE_MAX), "{x=\\\"y\\\"} 1\\n# evil");
}
END_TEST

START_TEST(test_fixed_field)
{
	/* A 16-byte comm from a remote node, all of it used: no NUL inside or after. */
	const char field[20] = { 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j',
				 'k', 'l', 'm', 'n', 'o', 'p', 'X', 'X', 'X', 'X' };
	const char nul[8] = { 'x', 'y', '\0', 'z', 'z', 'z', 'z', 'z' };

	ck_assert_str_eq(esc(field, 16), "abcdefghijklmnop");
	ck_assert_str_eq(esc(field, 0), "");
	ck_assert_str_eq(esc(nul, sizeof(nul)), "xy"); /* stops at a NUL */
	ck_assert_str_eq(esc("\xc3\xa9", 1), FFFD); /* a sequence cut by max */
	ck_assert_str_eq(esc("a\xe2\x82\xac", 3), "a" FFFD FFFD);
}
END_TEST

START_TEST(test_utf8)
{
	/* valid: kept as is */
	ck_assert_str_eq(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0", SIZE_MAX),
			 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc2\xa0");
	ck_assert_str_eq(esc("\xf4\x8f\xbf\xbf", SIZE_MAX), "\xf4\x8f\xbf\xbf"); /* U+10FFFF */
	ck_assert_str_eq(esc(FFFD, SIZE_MAX), FFFD);
	/* invalid: one U+FFFD per byte that starts no valid sequence */
	ck_assert_str_eq(esc("\x80", SIZE_MAX), FFFD); /* lone continuation */
	ck_assert_str_eq(esc("a\xe2\x82", SIZE_MAX), "a" FFFD FFFD); /* truncated */
	ck_assert_str_eq(esc("\xe2\x82"
			     "A",
			     SIZE_MAX),
			 FFFD FFFD "A");
	ck_assert_str_eq(esc("\xc0\xaf", SIZE_MAX), FFFD FFFD); /* overlong '/' */
	ck_assert_str_eq(esc("\xe0\x80\xaf", SIZE_MAX), FFFD FFFD FFFD); /* overlong */
	ck_assert_str_eq(esc("\xed\xa0\x80", SIZE_MAX), FFFD FFFD FFFD); /* surrogate U+D800 */
	ck_assert_str_eq(esc("\xf4\x90\x80\x80", SIZE_MAX), FFFD FFFD FFFD FFFD); /* > U+10FFFF */
	ck_assert_str_eq(esc("\xf5\xfe\xff", SIZE_MAX), FFFD FFFD FFFD);
	/* a quote or backslash right after a broken lead byte is still escaped */
	ck_assert_str_eq(esc("\xe2\"\xc3\\", SIZE_MAX), FFFD "\\\"" FFFD "\\\\");
}
END_TEST

START_TEST(test_controls)
{
	ck_assert_str_eq(esc("a\tb\rc\x01"
			     "d\x1b[31m\x7f",
			     SIZE_MAX),
			 "a" FFFD "b" FFFD "c" FFFD "d" FFFD "[31m" FFFD);
	ck_assert_str_eq(esc("\xc2\x85\xc2\x9f\xc2\xa0", SIZE_MAX), FFFD FFFD "\xc2\xa0"); /* C1 */
}
END_TEST

/* Independent decoder: the code point at s (n >= 1 bytes), its length in *len, or -1 if ill-formed. */
static long decode(const unsigned char *s, size_t n, size_t *len)
{
	long cp;
	size_t need;

	if (s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if ((s[0] & 0xe0) == 0xc0) {
		need = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		need = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		need = 4;
		cp = s[0] & 0x07;
	} else {
		return -1;
	}
	if (n < need)
		return -1;
	for (size_t i = 1; i < need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) || (need == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = need;
	return cp;
}

/*
 * What a Prometheus parser needs of an escaped label value: NULL if out is fine, else what is wrong
 * (plain checks: a ck_assert per byte would be a mark point per byte).
 */
static const char *unsafe(const char *out)
{
	const unsigned char *s = (const unsigned char *)out;
	size_t n = strlen(out), len;

	for (size_t i = 0; i < n; i += len) {
		long cp = decode(s + i, n - i, &len);

		if (cp < 0)
			return "invalid UTF-8";
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
			return "a control character";
		if (cp == '"')
			return "an unescaped quote";
		if (cp == '\\') {
			if (i + 1 >= n || !strchr("\\\"n", s[i + 1]))
				return "a bad escape";
			len = 2;
		}
	}
	return NULL;
}

START_TEST(test_random_sweep)
{
	static const unsigned char pick[] = {
		'a',  '"',  '\\', '\n', '\t', 0x7f, 0x80, 0x85, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xc3,
		0xdf, 0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0x01, ' ',  0x8f, 0x90
	};
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned char v[12];

	for (int iter = 0; iter < 100000; iter++) {
		size_t n = 1 + iter % sizeof(v);

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			v[i] = (x >> 32) % 4 ? pick[(x >> 40) % sizeof(pick)]
					     : (unsigned char)(x >> 48);
			if (!v[i])
				v[i] = 'z';
		}
		struct bufout o = fresh();
		const char *why;

		promfmt_label_value(&o, (const char *)v, n);
		why = bufout_result(&o) < 0 ? "no room" : unsafe(big);
		if (why)
			ck_abort_msg("iteration %d: %s in \"%s\"", iter, why, big);
	}
}
END_TEST

static const char *value(double v)
{
	struct bufout o = fresh();

	promfmt_sample(&o, "m", NULL, 0, v);
	ck_assert_int_ge(bufout_result(&o), 3);
	ck_assert_int_eq(big[o.off - 1], '\n');
	big[o.off - 1] = '\0';
	return big + 2;
}

START_TEST(test_special_values)
{
	ck_assert_str_eq(value(NAN), "NaN");
	ck_assert_str_eq(value(-NAN), "NaN");
	ck_assert_str_eq(value(INFINITY), "+Inf");
	ck_assert_str_eq(value(-INFINITY), "-Inf");
	ck_assert_str_eq(value(0), "0");
	ck_assert_str_eq(value(-0.0), "-0");
}
END_TEST

START_TEST(test_doubles)
{
	const double vals[] = { 0.1,
				1.0 / 3,
				2.0 / 3,
				1e21,
				1e-7,
				123456789012345678.0,
				DBL_MAX,
				DBL_MIN,
				DBL_TRUE_MIN,
				-1.5,
				9007199254740993.0,
				0.1 + 0.2 };

	ck_assert_str_eq(value(0.1), "0.1");
	ck_assert_str_eq(value(0.25), "0.25");
	ck_assert_str_eq(value(1e21), "1e+21");
	ck_assert_str_eq(value(0.1 + 0.2), "0.30000000000000004");
	ck_assert_str_eq(value(1.0 / 3), "0.3333333333333333");
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		const char *s = value(vals[i]);

		ck_assert_msg(strtod(s, NULL) == vals[i], "%s does not read back", s);
		ck_assert_uint_le(strlen(s), 24);
	}
}
END_TEST

START_TEST(test_locale)
{
	static const char *const names[] = { "de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "de_DE",
					     "fr_FR" };
	const char *got = NULL;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !got; i++)
		got = setlocale(LC_NUMERIC, names[i]);
	if (!got)
		return; /* no locale with a decimal comma installed here */
	ck_assert_str_eq(value(0.25), "0.25");
	ck_assert_str_eq(value(1.0 / 3), "0.3333333333333333");
	ck_assert_str_eq(value(1.5e-300), "1.5e-300");
	setlocale(LC_NUMERIC, "C");
}
END_TEST

START_TEST(test_u64)
{
	struct bufout o = fresh();

	promfmt_sample_u64(&o, "a_total", NULL, 0, UINT64_MAX);
	promfmt_sample_u64(&o, "b_total", NULL, 0, 0);
	promfmt_sample_u64(&o, "c_total", NULL, 0, (1ull << 53) + 1);
	ck_assert_str_eq(big,
			 "a_total 18446744073709551615\nb_total 0\nc_total 9007199254740993\n");
}
END_TEST

START_TEST(test_names)
{
	ck_assert(promfmt_name_ok("vnoise_up"));
	ck_assert(promfmt_name_ok("_x"));
	ck_assert(promfmt_name_ok(":a:b_9"));
	ck_assert(promfmt_name_ok("A"));
	ck_assert(!promfmt_name_ok(""));
	ck_assert(!promfmt_name_ok(NULL));
	ck_assert(!promfmt_name_ok("9a"));
	ck_assert(!promfmt_name_ok("a-b"));
	ck_assert(!promfmt_name_ok("a b"));
	ck_assert(!promfmt_name_ok("caf\xc3\xa9"));
	ck_assert(promfmt_label_name_ok("comm"));
	ck_assert(promfmt_label_name_ok("_a1"));
	ck_assert(!promfmt_label_name_ok("a:b"));
	ck_assert(!promfmt_label_name_ok("__name__"));
	ck_assert(!promfmt_label_name_ok("1a"));
	ck_assert(!promfmt_label_name_ok(""));
}
END_TEST

/*
 * The collector's hypervisor family as a scraper sees it: a valid name and labels, one sample per
 * class, the host cause's name (a host comm from a guest: untrusted) escaped like any source.
 */
START_TEST(test_hypervisor_family)
{
	static const char *const cls[] = { "host_preempt", "host_wait", "vmexit", "host_irq" };
	struct bufout o = fresh();
	struct promfmt_label l[3] = { { "node", "7", SIZE_MAX }, { "job", "j", SIZE_MAX } };

	ck_assert(promfmt_name_ok("vnoise_node_hypervisor_seconds_total"));
	for (size_t i = 0; i < 3; i++)
		ck_assert(promfmt_label_name_ok(i == 0 ? "node" : i == 1 ? "job" : "class"));
	promfmt_family(&o, "vnoise_node_hypervisor_seconds_total", "counter",
		       "Hypervisor noise of the node's ranks, by class");
	for (int k = 0; k < 4; k++) {
		l[2] = (struct promfmt_label){ "class", cls[k], 16 };
		promfmt_sample(&o, "vnoise_node_hypervisor_seconds_total", l, 3, k == 0 ? 0.5 : 0);
	}
	ck_assert_str_eq(
	    big,
	    "# HELP vnoise_node_hypervisor_seconds_total Hypervisor noise of the node's "
	    "ranks, by class\n"
	    "# TYPE vnoise_node_hypervisor_seconds_total counter\n"
	    "vnoise_node_hypervisor_seconds_total{node=\"7\",job=\"j\",class=\"host_preempt\"} "
	    "0.5\n"
	    "vnoise_node_hypervisor_seconds_total{node=\"7\",job=\"j\",class=\"host_wait\"} 0\n"
	    "vnoise_node_hypervisor_seconds_total{node=\"7\",job=\"j\",class=\"vmexit\"} 0\n"
	    "vnoise_node_hypervisor_seconds_total{node=\"7\",job=\"j\",class=\"host_irq\"} 0\n");
	/* a host comm of 16 bytes without NUL, with a quote: cut at the field, escaped */
	ck_assert_str_eq(esc("h\"g0123456789abcdefXYZ", 16), "h\\\"g0123456789abc");
}
END_TEST

START_TEST(test_full)
{
	char buf[24];
	struct bufout o = { buf, sizeof(buf), 0, 0 };
	const struct promfmt_label l = { "comm", "abcdefghijklmnop", 16 };

	promfmt_sample_u64(&o, "m_total", NULL, 0, 7); /* 10 bytes */
	ck_assert_int_eq(bufout_result(&o), 10);
	promfmt_sample_u64(&o, "m_total", &l, 1, 7); /* does not fit */
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);
	ck_assert_uint_lt(strlen(buf), sizeof(buf));
	promfmt_sample_u64(&o, "x", NULL, 0, 1); /* nothing more once full */
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);
	ck_assert_uint_lt(o.off, sizeof(buf));
	ck_assert_ptr_null(strstr(buf, "x 1"));

	/* exact fit: 23 bytes and the NUL */
	o = (struct bufout){ buf, sizeof(buf), 0, 0 };
	promfmt_sample_u64(&o, "abcdefghijklmnopqrst", NULL, 0, 1);
	ck_assert_int_eq(bufout_result(&o), 23);
	ck_assert_str_eq(buf, "abcdefghijklmnopqrst 1\n");
	promfmt_family(&o, "m", "gauge", "");
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);

	/* an escaped value that would overflow in its middle */
	o = (struct bufout){ buf, 8, 0, 0 };
	promfmt_label_value(&o, "\xff\xff\xff", SIZE_MAX); /* 9 bytes out */
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);
	ck_assert_uint_lt(strlen(buf), 8);

	o = (struct bufout){ buf, 0, 0, 0 }; /* no room at all */
	promfmt_sample(&o, "m", NULL, 0, 1);
	ck_assert_int_eq(bufout_result(&o), -ENOSPC);
}
END_TEST

static Suite *promfmt_suite(void)
{
	Suite *s = suite_create("promfmt");
	TCase *tc = tcase_create("lines");
	TCase *te = tcase_create("escaping");
	TCase *tv = tcase_create("values");
	TCase *tb = tcase_create("buffer");

	tcase_add_test(tc, test_family);
	tcase_add_test(tc, test_hypervisor_family);
	tcase_add_test(tc, test_sample_lines);
	tcase_add_test(tc, test_names);
	suite_add_tcase(s, tc);
	tcase_add_test(te, test_escape);
	tcase_add_test(te, test_fixed_field);
	tcase_add_test(te, test_utf8);
	tcase_add_test(te, test_controls);
	tcase_add_test(te, test_random_sweep);
	suite_add_tcase(s, te);
	tcase_add_test(tv, test_special_values);
	tcase_add_test(tv, test_doubles);
	tcase_add_test(tv, test_locale);
	tcase_add_test(tv, test_u64);
	suite_add_tcase(s, tv);
	tcase_add_test(tb, test_full);
	suite_add_tcase(s, tb);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(promfmt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
