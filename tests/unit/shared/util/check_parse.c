/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/util/parse: the strict number helpers and socket addresses as users write them. Every helper must reject empty strings, signs and
 * blanks where not allowed, trailing junk, hex and overflow, and leave *out alone on error.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "util/parse.h"

#define SENTINEL_U64 0xdeadbeefcafef00dULL

/* parse_u64 must fail with err and leave the output untouched. */
static void u64_fails(const char *s, int err)
{
	uint64_t v = SENTINEL_U64;

	ck_assert_msg(parse_u64(s, &v) == err, "parse_u64(\"%s\") != %d", s, err);
	ck_assert_msg(v == SENTINEL_U64, "parse_u64(\"%s\") wrote output on error", s);
}

static uint64_t u64_ok(const char *s)
{
	uint64_t v = SENTINEL_U64;

	ck_assert_msg(parse_u64(s, &v) == 0, "parse_u64(\"%s\") failed", s);
	return v;
}

static void dur_fails(const char *s, uint64_t unit, int err)
{
	uint64_t v = SENTINEL_U64;
	int rc = parse_duration(s, unit, &v);

	ck_assert_msg(rc == err, "parse_duration(\"%s\") = %d, want %d", s, rc, err);
	ck_assert_msg(v == SENTINEL_U64, "parse_duration(\"%s\") wrote output on error", s);
}

static uint64_t dur_ok(const char *s, uint64_t unit)
{
	uint64_t v = SENTINEL_U64;
	int rc = parse_duration(s, unit, &v);

	ck_assert_msg(rc == 0, "parse_duration(\"%s\") = %d", s, rc);
	return v;
}

static void dbl_fails(const char *s, int err)
{
	double v = -42.0;
	int rc = parse_double(s, &v);

	ck_assert_msg(rc == err, "parse_double(\"%s\") = %d, want %d", s, rc, err);
	ck_assert_msg(v == -42.0, "parse_double(\"%s\") wrote output on error", s);
}

/* ---- parse_u64 ---- */

START_TEST(test_u64_valid)
{
	ck_assert_uint_eq(u64_ok("0"), 0);
	ck_assert_uint_eq(u64_ok("1"), 1);
	ck_assert_uint_eq(u64_ok("42"), 42);
	ck_assert_uint_eq(u64_ok("007"), 7);
	ck_assert_uint_eq(u64_ok("4294967296"), 4294967296ULL);
	ck_assert_uint_eq(u64_ok("18446744073709551615"), UINT64_MAX);
}
END_TEST

START_TEST(test_u64_invalid)
{
	u64_fails("", -EINVAL);
	u64_fails(NULL, -EINVAL);
	u64_fails("-1", -EINVAL);
	u64_fails("-0", -EINVAL);
	u64_fails("+1", -EINVAL);
	u64_fails(" 1", -EINVAL);
	u64_fails("\t1", -EINVAL);
	u64_fails("1 ", -EINVAL);
	u64_fails("1\n", -EINVAL);
	u64_fails("10x", -EINVAL);
	u64_fails("0x10", -EINVAL);
	u64_fails("1.0", -EINVAL);
	u64_fails("1e3", -EINVAL);
	u64_fails("x", -EINVAL);
}
END_TEST

START_TEST(test_u64_overflow)
{
	u64_fails("18446744073709551616", -ERANGE);
	u64_fails("99999999999999999999999", -ERANGE);
}
END_TEST

/* ---- parse_int ---- */

START_TEST(test_int_ranges)
{
	int v = -7;

	ck_assert_int_eq(parse_int("0", 0, 10, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(parse_int("10", 0, 10, &v), 0);
	ck_assert_int_eq(v, 10);
	ck_assert_int_eq(parse_int("-5", -10, 10, &v), 0);
	ck_assert_int_eq(v, -5);
	ck_assert_int_eq(parse_int("2147483647", 0, 2147483647, &v), 0);
	ck_assert_int_eq(v, 2147483647);
	ck_assert_int_eq(parse_int("-2147483648", -2147483647 - 1, 0, &v), 0);
	ck_assert_int_eq(v, -2147483647 - 1);

	v = -7;
	ck_assert_int_eq(parse_int("11", 0, 10, &v), -ERANGE);
	ck_assert_int_eq(parse_int("-1", 0, 10, &v), -ERANGE);
	ck_assert_int_eq(parse_int("0", 1, 99, &v), -ERANGE);
	ck_assert_int_eq(parse_int("100", 1, 99, &v), -ERANGE);
	ck_assert_int_eq(parse_int("2147483648", 0, 2147483647, &v), -ERANGE);
	ck_assert_int_eq(parse_int("99999999999999999999", 0, 10, &v), -ERANGE);
	ck_assert_int_eq(v, -7);
}
END_TEST

START_TEST(test_int_invalid)
{
	static const char *const bad[] = {
		"", "-", "+1", " 1", "1 ", "1x", "0x1", "1.5", "--1", "a"
	};
	size_t i;
	int v = -7;

	ck_assert_int_eq(parse_int(NULL, 0, 10, &v), -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse_int(bad[i], -100, 100, &v) == -EINVAL, "parse_int(\"%s\")",
			      bad[i]);
	ck_assert_int_eq(v, -7);
}
END_TEST

/* ---- parse_double ---- */

START_TEST(test_double_valid)
{
	double v;

	ck_assert_int_eq(parse_double("0", &v), 0);
	ck_assert_double_eq(v, 0.0);
	ck_assert_int_eq(parse_double("5", &v), 0);
	ck_assert_double_eq(v, 5.0);
	ck_assert_int_eq(parse_double("0.1", &v), 0);
	ck_assert_double_eq(v, 0.1);
	ck_assert_int_eq(parse_double(".5", &v), 0);
	ck_assert_double_eq(v, 0.5);
	ck_assert_int_eq(parse_double("1e-3", &v), 0);
	ck_assert_double_eq(v, 1e-3);
	ck_assert_int_eq(parse_double("2.5E2", &v), 0);
	ck_assert_double_eq(v, 250.0);
}
END_TEST

START_TEST(test_double_invalid)
{
	dbl_fails("", -EINVAL);
	dbl_fails(NULL, -EINVAL);
	dbl_fails("inf", -EINVAL);
	dbl_fails("infinity", -EINVAL);
	dbl_fails("nan", -EINVAL);
	dbl_fails("NaN", -EINVAL);
	dbl_fails("-1", -EINVAL);
	dbl_fails("+1", -EINVAL);
	dbl_fails(" 1", -EINVAL);
	dbl_fails("1 ", -EINVAL);
	dbl_fails("1.2.3", -EINVAL);
	dbl_fails(".", -EINVAL);
	dbl_fails("1e", -EINVAL);
	dbl_fails("1x", -EINVAL);
	/* decimal only: strtod would take hex floats */
	dbl_fails("0x10", -EINVAL);
	dbl_fails("0x1p3", -EINVAL);
	dbl_fails("1e999", -ERANGE);
}
END_TEST

/* ---- parse_duration ---- */

START_TEST(test_duration_combined)
{
	/* several numbers with units, largest unit first, each once */
	ck_assert_uint_eq(dur_ok("1h2m", 1000), 62ULL * 60000000000ULL);
	ck_assert_uint_eq(dur_ok("1h30m15s", 1), 5415000000000ULL);
	ck_assert_uint_eq(dur_ok("2m30s", 1), 150000000000ULL);
	ck_assert_uint_eq(dur_ok("1s500ms", 1), 1500000000ULL);
	ck_assert_uint_eq(dur_ok("1m1ms", 1), 60001000000ULL); /* "1ms" is a millisecond */
	ck_assert_uint_eq(dur_ok("1ms1us1ns", 1), 1001001);
	ck_assert_uint_eq(dur_ok("1h90m", 1),
			  9000000000000ULL); /* a term may exceed the next unit */
	ck_assert_uint_eq(dur_ok("0.5s250ms", 1), 750000000);
	ck_assert_uint_eq(dur_ok("1h0m", 1), 3600000000000ULL);
	ck_assert_uint_eq(dur_ok("30d", 1), 30ULL * 86400000000000ULL); /* days: a retention */
	ck_assert_uint_eq(dur_ok("1d12h", 1), 36ULL * 3600000000000ULL);
	/* a bare number stands alone; order and repetition */
	dur_fails("1h30", 1000, -EINVAL);
	dur_fails("30m1h", 1000, -EINVAL);
	dur_fails("1s1s", 1000, -EINVAL);
	dur_fails("1ms1s", 1000, -EINVAL);
	dur_fails("1h 2m", 1000, -EINVAL);
	dur_fails("1h-2m", 1000, -EINVAL);
	dur_fails("1h+2m", 1000, -EINVAL);
	dur_fails("1hm", 1000, -EINVAL);
	dur_fails("1h2", 1000, -EINVAL);
	dur_fails("1h0x2m", 1000, -EINVAL);
	/* the sum must fit too */
	ck_assert_uint_eq(dur_ok("5124095h", 1), 5124095ULL * 3600000000000ULL);
	dur_fails("5124095h60m", 1, -ERANGE);
	dur_fails("5124095h34m33s709551616ns", 1, -ERANGE);
	ck_assert_uint_eq(dur_ok("5124095h34m33s709551615ns", 1), UINT64_MAX);
}
END_TEST

START_TEST(test_duration_units)
{
	ck_assert_uint_eq(dur_ok("7ns", 1000), 7);
	ck_assert_uint_eq(dur_ok("7us", 1), 7000);
	ck_assert_uint_eq(dur_ok("7ms", 1), 7000000);
	ck_assert_uint_eq(dur_ok("7s", 1), 7000000000ULL);
	ck_assert_uint_eq(dur_ok("7m", 1), 420000000000ULL);
	ck_assert_uint_eq(dur_ok("7h", 1), 25200000000000ULL);
	ck_assert_uint_eq(dur_ok("0", 1000), 0);
	ck_assert_uint_eq(dur_ok("0s", 1000), 0);
}
END_TEST

START_TEST(test_duration_default_unit)
{
	ck_assert_uint_eq(dur_ok("5", 1), 5);
	ck_assert_uint_eq(dur_ok("5", 1000), 5000);
	ck_assert_uint_eq(dur_ok("5", 1000000000ULL), 5000000000ULL);
	/* an explicit unit wins over the default */
	ck_assert_uint_eq(dur_ok("5ns", 1000000000ULL), 5);
}
END_TEST

START_TEST(test_duration_fraction)
{
	ck_assert_uint_eq(dur_ok("1.5ms", 1), 1500000);
	ck_assert_uint_eq(dur_ok("0.1", 1000), 100);
	ck_assert_uint_eq(dur_ok(".25s", 1), 250000000);
	ck_assert_uint_eq(dur_ok("0.3us", 1), 300);
	ck_assert_uint_eq(dur_ok("1.001ms", 1), 1001000);
	ck_assert_uint_eq(dur_ok("1e-3s", 1), 1000000);
	ck_assert_uint_eq(dur_ok("2.5", 1000000000ULL), 2500000000ULL);
}
END_TEST

START_TEST(test_duration_rounding)
{
	/* to the nearest ns, halves up */
	ck_assert_uint_eq(dur_ok("0.4ns", 1), 0);
	ck_assert_uint_eq(dur_ok("0.5ns", 1), 1);
	ck_assert_uint_eq(dur_ok("1.4ns", 1), 1);
	ck_assert_uint_eq(dur_ok("1.6ns", 1), 2);
	ck_assert_uint_eq(dur_ok("1.0004us", 1), 1000);
	ck_assert_uint_eq(dur_ok("1.0006us", 1), 1001);
}
END_TEST

START_TEST(test_duration_junk)
{
	static const char *const bad[] = { "",	    "ms",    "10 ms",  "10sec", "10S",
					   "10Ms",  " 10ms", "10ms ",  "-1ms",	"+1ms",
					   "10mss", "10 ",   "1.2.3",  "inf",	"nans",
					   "1e",    "0x10",  "0x10ms", "10us5", "s" };
	size_t i;

	dur_fails(NULL, 1, -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		dur_fails(bad[i], 1000, -EINVAL);
}
END_TEST

START_TEST(test_duration_overflow)
{
	/* exact integers up to UINT64_MAX ns */
	ck_assert_uint_eq(dur_ok("18446744073709551615ns", 1000), UINT64_MAX);
	ck_assert_uint_eq(dur_ok("18446744073709551615", 1), UINT64_MAX);
	ck_assert_uint_eq(dur_ok("9007199254740993ns", 1), 9007199254740993ULL);
	ck_assert_uint_eq(dur_ok("18446744073709551us", 1), 18446744073709551000ULL);
	/* UINT64_MAX ns is about 5124095.6 h */
	ck_assert_uint_eq(dur_ok("5124095h", 1), 5124095ULL * 3600000000000ULL);
	dur_fails("18446744073709551616ns", 1, -ERANGE);
	dur_fails("18446744073709552us", 1, -ERANGE);
	dur_fails("5124096h", 1, -ERANGE);
	dur_fails("18446744073709551616", 1, -ERANGE);
	dur_fails("18446744073709551615", 1000, -ERANGE);
	dur_fails("1e20ns", 1, -ERANGE);
	dur_fails("1e400", 1, -ERANGE);
	dur_fails("99999999999999999999999999h", 1, -ERANGE);
}
END_TEST

/* ---- parse_cpulist ---- */

static int cpus_buf[64];

/* Parses s (max 64, limit 128) and compares with want[0..nwant). */
static void cpulist_is(const char *s, const int *want, int nwant)
{
	int n = -1, i, rc;

	memset(cpus_buf, 0xff, sizeof(cpus_buf));
	rc = parse_cpulist(s, cpus_buf, 64, 128, &n);
	ck_assert_msg(rc == 0, "parse_cpulist(\"%s\") = %d", s, rc);
	ck_assert_msg(n == nwant, "parse_cpulist(\"%s\"): n = %d, want %d", s, n, nwant);
	for (i = 0; i < n; i++)
		ck_assert_msg(cpus_buf[i] == want[i], "parse_cpulist(\"%s\")[%d] = %d, want %d", s,
			      i, cpus_buf[i], want[i]);
}

static void cpulist_fails(const char *s, int max, int limit, int err)
{
	int n = -1, rc;

	rc = parse_cpulist(s, cpus_buf, max, limit, &n);
	ck_assert_msg(rc == err, "parse_cpulist(\"%s\", %d, %d) = %d, want %d", s, max, limit, rc,
		      err);
	ck_assert_msg(n == -1, "parse_cpulist(\"%s\") set n on error", s);
}

START_TEST(test_cpulist_valid)
{
	static const int one[] = { 0 }, mix[] = { 0, 2, 3, 4, 7 }, big[] = { 127 };

	cpulist_is("0", one, 1);
	cpulist_is("0,2-4,7", mix, 5);
	cpulist_is("00", one, 1);
	cpulist_is("127", big, 1);
	cpulist_is("0-0", one, 1);
}
END_TEST

START_TEST(test_cpulist_merge)
{
	static const int sorted[] = { 0, 2, 3, 4, 7 }, ov[] = { 1, 2, 3, 4, 5, 6 }, two[] = { 3 };

	cpulist_is("7,2-4,0", sorted, 5);
	cpulist_is("4,3,2,7,0,0,3", sorted, 5);
	cpulist_is("1-4,3-6,2", ov, 6);
	cpulist_is("3,3,3", two, 1);
	cpulist_is("7,0,2-4,3-4,2", sorted, 5);
}
END_TEST

START_TEST(test_cpulist_invalid)
{
	static const char *const bad[] = { "",	   "3-1",  "1,",   ",1",   "1-", "a",	  "-1",
					   "1,,2", "1--2", "1-a",  " 1",   "1 ", "1-2-3", "1;2",
					   "0x1",  "+1",   "1-+2", "1, 2", "1.5" };
	size_t i;

	cpulist_fails(NULL, 64, 128, -EINVAL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cpulist_fails(bad[i], 64, 128, -EINVAL);
}
END_TEST

START_TEST(test_cpulist_limit)
{
	int n = -1;

	/* a CPU >= limit */
	cpulist_fails("128", 64, 128, -ERANGE);
	cpulist_fails("0,200", 64, 128, -ERANGE);
	cpulist_fails("0-128", 64, 128, -ERANGE);
	cpulist_fails("99999999999999999999999", 64, 128, -ERANGE);
	cpulist_fails("0-99999999999999999999999", 64, 128, -ERANGE);
	/* too many entries */
	cpulist_fails("0-4", 4, 128, -ERANGE);
	cpulist_fails("0,1,2,3,4", 4, 128, -ERANGE);
	ck_assert_int_eq(parse_cpulist("0-3", cpus_buf, 4, 128, &n), 0);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(parse_cpulist("127", cpus_buf, 4, 128, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cpus_buf[0], 127);
}
END_TEST

START_TEST(test_cpulist_max_counts_unique)
{
	int cpus[4], n = -1;

	/* the limit is on distinct CPUs: duplicates and overlaps do not count twice */
	ck_assert_int_eq(parse_cpulist("0-3,1-2,3,0", cpus, 4, 128, &n), 0);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(cpus[0], 0);
	ck_assert_int_eq(cpus[3], 3);
	n = -1;
	ck_assert_int_eq(parse_cpulist("2,2,2,2,2,2,2,2", cpus, 1, 128, &n), 0);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(cpus[0], 2);
	n = -1;
	ck_assert_int_eq(parse_cpulist("0-3,2-4", cpus, 4, 128, &n), -ERANGE);
	ck_assert_int_eq(n, -1);
}
END_TEST

START_TEST(test_cpulist_full_range)
{
	static int cpus[1024];
	int n = -1, i;

	ck_assert_int_eq(parse_cpulist("0-1023,0-1023,512", cpus, 1024, 1024, &n), 0);
	ck_assert_int_eq(n, 1024);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(cpus[i], i);
	ck_assert_int_eq(parse_cpulist("0-1024", cpus, 1024, 1024, &n), -ERANGE);
}
END_TEST

/* addr as parse_sockaddr(min_port 0) reads it, formatted back ("" when refused) */
static const char *addr(const char *in)
{
	static char out[64];
	struct sockaddr_storage ss;
	socklen_t len;

	if (parse_sockaddr(in, 0, &ss, &len))
		return "";
	ck_assert_uint_eq(len, ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
						       : sizeof(struct sockaddr_in6));
	return parse_sockaddr_fmt((struct sockaddr *)&ss, out, sizeof(out));
}

START_TEST(test_sockaddr_as_written)
{
	struct sockaddr_storage ss;
	socklen_t len;

	ck_assert_str_eq(addr("1.2.3.4:80"), "1.2.3.4:80");
	ck_assert_str_eq(addr("[::1]:9464"), "[::1]:9464");
	ck_assert_str_eq(addr("[::]:0"), "[::]:0");
	ck_assert_str_eq(addr("localhost:9464"), "127.0.0.1:9464");
	ck_assert_str_eq(addr(":9464"), "0.0.0.0:9464"); /* every interface */
	/* no resolver, no bare port, no junk */
	ck_assert_str_eq(addr("example.com:80"), "");
	ck_assert_str_eq(addr("9464"), "");
	ck_assert_str_eq(addr(""), "");
	ck_assert_str_eq(addr(":"), "");
	ck_assert_str_eq(addr("[]:80"), "");
	ck_assert_str_eq(addr("[::1]9464"), "");
	ck_assert_str_eq(addr("localhost:65536"), "");
	ck_assert_str_eq(addr("1.2.3.4:-1"), "");
	ck_assert_str_eq(addr("1.2.3.4:80x"), "");
	/* a destination wants a port > 0 */
	ck_assert_int_eq(parse_sockaddr("localhost:0", 1, &ss, &len), -EINVAL);
	ck_assert_int_eq(parse_sockaddr("localhost:1", 1, &ss, &len), 0);
}
END_TEST

static Suite *parse_suite(void)
{
	Suite *s = suite_create("parse");
	TCase *tc;

	tc = tcase_create("u64");
	tcase_add_test(tc, test_u64_valid);
	tcase_add_test(tc, test_u64_invalid);
	tcase_add_test(tc, test_u64_overflow);
	suite_add_tcase(s, tc);

	tc = tcase_create("int");
	tcase_add_test(tc, test_int_ranges);
	tcase_add_test(tc, test_int_invalid);
	suite_add_tcase(s, tc);

	tc = tcase_create("double");
	tcase_add_test(tc, test_double_valid);
	tcase_add_test(tc, test_double_invalid);
	suite_add_tcase(s, tc);

	tc = tcase_create("duration");
	tcase_add_test(tc, test_duration_units);
	tcase_add_test(tc, test_duration_default_unit);
	tcase_add_test(tc, test_duration_fraction);
	tcase_add_test(tc, test_duration_rounding);
	tcase_add_test(tc, test_duration_junk);
	tcase_add_test(tc, test_duration_overflow);
	tcase_add_test(tc, test_duration_combined);
	suite_add_tcase(s, tc);

	tc = tcase_create("cpulist");
	tcase_add_test(tc, test_cpulist_valid);
	tcase_add_test(tc, test_cpulist_merge);
	tcase_add_test(tc, test_cpulist_invalid);
	tcase_add_test(tc, test_cpulist_limit);
	tcase_add_test(tc, test_cpulist_max_counts_unique);
	tcase_add_test(tc, test_cpulist_full_range);
	suite_add_tcase(s, tc);

	tc = tcase_create("sockaddr");
	tcase_add_test(tc, test_sockaddr_as_written);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(parse_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
