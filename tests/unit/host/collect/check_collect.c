/* SPDX-License-Identifier: MIT */
/* Unit tests for `vnoise-host collect`'s option parser (host/collect/collect.c): defaults, every option, rejects. */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect.h"

static int parse(struct collect_opts *o, char *err, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = "collect";
	va_start(ap, err);
	for (char *a; (a = va_arg(ap, char *)) && argc < 63;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return collect_parse(argc, argv, o, err, 256);
}

START_TEST(test_defaults)
{
	struct collect_opts o;
	char err[256] = "";

	ck_assert_int_eq(parse(&o, err, "-k", "keys", NULL), 0);
	ck_assert_str_eq(o.listen, "127.0.0.1:7361"); /* loopback unless told */
	ck_assert_ptr_null(o.metrics); /* off unless asked */
	ck_assert_str_eq(o.store, "vnoise-collect.pcap");
	ck_assert_uint_eq(o.slot_ns, 1000000000ull);
	ck_assert_uint_eq(o.sample_nodes, 1);
	ck_assert_uint_eq(o.wait_nodes, 1);
	ck_assert_uint_eq(o.exclude_min, 5);
	ck_assert(o.exclude_pct == 20);
	ck_assert_uint_eq(o.max_slots, 0);
	ck_assert_int_eq(o.json, 0);
}
END_TEST

START_TEST(test_all_options)
{
	struct collect_opts o;
	char err[256] = "";

	ck_assert_int_eq(parse(&o, err, "--key-file", "k", "--listen", "[::1]:0", "--metrics",
			       "0.0.0.0:9361", "--store", "s.pcap", "--pcap-out", "o.pcap",
			       "--slot", "250ms", "--sample-nodes", "2", "--wait-nodes", "8",
			       "--slots", "32", "--exclude-pct", "12.5", "--exclude-min", "3",
			       "--max-nodes", "100", "--duration", "10", "--period", "1s", "--json",
			       "-v", "--job", "cfd", "--job", "md", NULL),
			 0);
	ck_assert_str_eq(o.listen, "[::1]:0");
	ck_assert_str_eq(o.metrics, "0.0.0.0:9361");
	ck_assert_str_eq(o.store, "s.pcap");
	ck_assert_str_eq(o.pcap_out, "o.pcap");
	ck_assert_uint_eq(o.slot_ns, 250000000ull);
	ck_assert_uint_eq(o.sample_nodes, 2);
	ck_assert_uint_eq(o.wait_nodes, 8);
	ck_assert_uint_eq(o.max_slots, 32);
	ck_assert(o.exclude_pct == 12.5);
	ck_assert_uint_eq(o.exclude_min, 3);
	ck_assert_uint_eq(o.max_nodes, 100);
	ck_assert_uint_eq(o.duration_ns, 10000000000ull);
	ck_assert_uint_eq(o.period_ns, 1000000000ull);
	ck_assert_int_eq(o.json, 1);
	ck_assert_int_eq(o.verbose, 1);
	ck_assert_uint_eq(o.njobs, 2);
	ck_assert_str_eq(o.jobs[1], "md");
	/* replay: no store; --no-store; slot 0 = no rotation */
	ck_assert_int_eq(parse(&o, err, "-k", "k", "-r", "in.pcap", NULL), 0);
	ck_assert_ptr_null(o.store);
	ck_assert_int_eq(parse(&o, err, "-k", "k", "--no-store", "--slot", "0", NULL), 0);
	ck_assert_ptr_null(o.store);
	ck_assert_uint_eq(o.slot_ns, 0);
	ck_assert_int_eq(parse(&o, err, "--help", NULL), 1);
}
END_TEST

START_TEST(test_rejects)
{
	static const char *const bad[][4] = {
		{ "--listen", "127.0.0.1:1", NULL }, /* no key file */
		{ "-k", "k", "--listen", "localhost:1" },
		{ "-k", "k", "--listen", "1.2.3.4" },
		{ "-k", "k", "--metrics", "1.2.3.4:70000" },
		{ "-k", "k", "--slot", "10us" },
		{ "-k", "k", "--slot", "-1s" },
		{ "-k", "k", "--sample-nodes", "0" },
		{ "-k", "k", "--wait-nodes", "x" },
		{ "-k", "k", "--slots", "0" },
		{ "-k", "k", "--exclude-pct", "-5" },
		{ "-k", "k", "--period", "10us" },
		{ "-k", "k", "--bogus", NULL },
		{ "-k", "k", "extra", NULL },
		{ "-k", "k", "--slot", NULL },
		{ "-k", "k", "--job", "" },
		{ "-k", "k", "--job", "0123456789abcdef0123456789abcdef" }, /* 32 bytes */
		{ "-r", "in", "-k", "k" }, /* ok alone, but below with --pcap-out */
	};
	struct collect_opts o;
	char err[256];

	for (size_t i = 0; i + 1 < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(parse(&o, err, bad[i][0], bad[i][1], bad[i][2], bad[i][3], NULL) ==
				  -EINVAL,
			      "case %zu accepted", i);
		ck_assert_msg(err[0] && !strchr(err, '\n'), "case %zu: no one-line reason", i);
	}
	ck_assert_int_eq(parse(&o, err, "-k", "k", "-r", "a", "-w", "b", NULL), -EINVAL);
	ck_assert_int_eq(parse(&o, err, "-k", "k", "-s", "same", "-w", "same", NULL), -EINVAL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("collect");
	TCase *t = tcase_create("options");
	SRunner *sr;
	int failed;

	tcase_add_test(t, test_defaults);
	tcase_add_test(t, test_all_options);
	tcase_add_test(t, test_rejects);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
