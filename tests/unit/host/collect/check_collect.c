/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for `vnoise-host collect`'s option parser (host/collect/collect.c): defaults, every option,
 * rejects, and the convention (docs/CLI.md): the old letters -l -m -s -w -r work and warn, a bare non-zero
 * --period, --slot or --duration (seconds before) is refused with a hint, the common letters mean the common
 * options, the help shows no alias.
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "collect/collect.h"

#define CLI_PARAMS struct collect_opts
#define CLI_PARSE collect_parse
#include "cli_check.h"

static int parse_opts(struct collect_opts *o, char *msg, ...)
{
	char *argv[64];
	int argc = 0;
	va_list ap;

	argv[argc++] = "collect";
	va_start(ap, msg);
	for (char *a; (a = va_arg(ap, char *)) && argc < 63;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return collect_parse(argc, argv, o, msg, 256);
}

START_TEST(test_defaults)
{
	struct collect_opts o;

	ck_assert_int_eq(parse_opts(&o, err, "-k", "keys", NULL), 0);
	ck_assert_str_eq(o.listen, "127.0.0.1:7361"); /* loopback unless told */
	ck_assert_ptr_null(o.metrics); /* off unless asked */
	ck_assert_str_eq(o.store, "vnoise-collect.db");
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

	ck_assert_int_eq(parse_opts(&o, err, "--key-file", "k", "--listen", "[::1]:0", "--metrics",
				    "0.0.0.0:9361", "--store", "s.pcap", "--pcap-out", "o.pcap",
				    "--slot", "250ms", "--sample-nodes", "2", "--wait-nodes", "8",
				    "--slots", "32", "--exclude-pct", "12.5", "--exclude-min", "3",
				    "--max-nodes", "100", "--duration", "10s", "--period", "1s",
				    "--json", "-v", "--job", "cfd", "--job", "md", NULL),
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
	ck_assert_int_eq(parse_opts(&o, err, "-k", "k", "--pcap-in", "in.pcap", NULL), 0);
	ck_assert_ptr_null(o.store);
	ck_assert_int_eq(parse_opts(&o, err, "-k", "k", "--no-store", "--slot", "0", NULL), 0);
	ck_assert_ptr_null(o.store);
	ck_assert_uint_eq(o.slot_ns, 0);
	ck_assert_int_eq(parse_opts(&o, err, "--help", NULL), 1);
}
END_TEST

START_TEST(test_rejects)
{
	static const char *const bad[][4] = {
		{ "--listen", "127.0.0.1:1", NULL }, /* no key file */
		{ "-k", "k", "--listen", "example.com:1" },
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
		{ "--pcap-in", "in", "-k", "k" }, /* ok alone, but below with --pcap-out */
	};
	struct collect_opts o;

	for (size_t i = 0; i + 1 < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		ck_assert_msg(parse_opts(&o, err, bad[i][0], bad[i][1], bad[i][2], bad[i][3],
					 NULL) == -EINVAL,
			      "case %zu accepted", i);
		ck_assert_msg(err[0] && !strchr(err, '\n'), "case %zu: no one-line reason", i);
	}
	ck_assert_int_eq(parse_opts(&o, err, "-k", "k", "--pcap-in", "a", "--pcap-out", "b", NULL),
			 -EINVAL);
	ck_assert_int_eq(
	    parse_opts(&o, err, "-k", "k", "--store", "same", "--pcap-out", "same", NULL), -EINVAL);
}
END_TEST

START_TEST(test_old_letters_warn)
{
	static const char *const old[][3] = {
		{ "-l", "127.0.0.1:0", "-l is deprecated, use --listen" },
		{ "-m", "127.0.0.1:9361", "-m is deprecated, use --metrics" },
		{ "-s", "s.pcap", "-s is deprecated, use --store" },
		{ "-w", "o.pcap", "-w is deprecated, use --pcap-out" },
		{ "-r", "in.pcap", "-r is deprecated, use --pcap-in" },
	};
	char out[512];
	int rc;

	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++) {
		STDERR_OF(out, rc = parse("collect", "-k", "k", old[i][0], old[i][1], NULL));
		ck_assert_msg(rc == 0, "%s: %s", old[i][0], err);
		ck_assert_msg(strstr(out, old[i][2]), "%s: stderr '%s'", old[i][0], out);
		ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
	}
	/* they still set what they did */
	STDERR_OF(out, rc = parse("collect", "-k", "k", "-l", "[::1]:0", "-m", "0.0.0.0:1", "-s",
				  "st", "-w", "w.pcap", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.listen, "[::1]:0");
	ck_assert_str_eq(P.metrics, "0.0.0.0:1");
	ck_assert_str_eq(P.store, "st");
	ck_assert_str_eq(P.pcap_out, "w.pcap");
	STDERR_OF(out, rc = parse("collect", "-k", "k", "-r", "in.pcap", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.pcap_in, "in.pcap");
	/* the new spellings are silent */
	STDERR_OF(out, rc = parse("collect", "--key-file", "k", "--listen", "127.0.0.1:0",
				  "--store", "s", "--pcap-out", "o", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(test_time_rule)
{
	/* --period, --slot and --duration were seconds without a unit: a bare number is refused */
	FAILS("--period 2: a time without a unit is in microseconds; write 2s (or 2us)", "collect",
	      "-k", "k", "--period", "2");
	FAILS("-p 1: 1s 1us", "collect", "-k", "k", "-p", "1");
	FAILS("--slot 0.5: 0.5s 0.5us", "collect", "-k", "k", "--slot", "0.5");
	FAILS("-d 10: 10s", "collect", "-k", "k", "-d", "10");
	/* 0 needs no unit; units as written */
	OK("collect", "-k", "k", "--slot", "0", "-d", "0", "-p", "1500000us");
	ck_assert_uint_eq(P.slot_ns, 0);
	ck_assert_uint_eq(P.duration_ns, 0);
	ck_assert_uint_eq(P.period_ns, 1500000000ull);
	FAILS("--period 500us 1ms", "collect", "-k", "k", "--period", "500us");
}
END_TEST

START_TEST(test_same_letter)
{
	struct collect_opts a;

	/* the common letters collect takes are the common options */
	OK("collect", "-k", "k", "-d", "2s", "-p", "1s", "-j", "-q", "-v");
	a = P;
	OK("collect", "--key-file", "k", "--duration", "2s", "--period", "1s", "--json", "--quiet",
	   "--verbose");
	ck_assert_str_eq(a.key_file, P.key_file);
	ck_assert_uint_eq(a.duration_ns, P.duration_ns);
	ck_assert_uint_eq(a.period_ns, P.period_ns);
	ck_assert_int_eq(a.json, P.json);
	ck_assert_int_eq(a.quiet, P.quiet);
	ck_assert_int_eq(a.verbose, P.verbose);
	/* --job is long-only; the letters of other commands are not taken */
	OK("collect", "-k", "k", "--job", "cfd");
	ck_assert_str_eq(P.jobs[0], "cfd");
	FAILS("unknown option '-c'", "collect", "-k", "k", "-c", "0");
	FAILS("unknown option '-S'", "collect", "-k", "k", "-S", "1s");
	FAILS("unknown option '-o'", "collect", "-k", "k", "-o", "f");
}
END_TEST

START_TEST(test_help)
{
	char buf[8192], small[16];
	size_t n = collect_usage(buf, sizeof(buf));

	ck_assert_uint_eq(n, strlen(buf));
	ck_assert_int_eq(parse("collect", "--help", NULL), 1);
	ck_assert_ptr_nonnull(strstr(buf, "  -k, --key-file FILE"));
	ck_assert_ptr_nonnull(strstr(buf, "      --listen ADDR:PORT"));
	ck_assert_ptr_nonnull(strstr(buf, "      --pcap-in FILE"));
	ck_assert_ptr_nonnull(strstr(buf, "  -p, --period TIME"));
	ck_assert_ptr_nonnull(strstr(buf, "rises more than P%")); /* wrapped within 80 columns */
	ck_assert_ptr_nonnull(
	    strstr(buf, "\nexit: 0 ok, 1 failed, 2 usage, 4 cannot here, 5 damaged"));
	/* the deprecated letters are in no help */
	ck_assert_ptr_null(strstr(buf, "-l,"));
	ck_assert_ptr_null(strstr(buf, "-s,"));
	ck_assert_ptr_null(strstr(buf, "-w,"));
	ck_assert_ptr_null(strstr(buf, "-r,"));
	ck_assert_ptr_null(strstr(buf, "-m,"));
	ck_assert_uint_eq(collect_usage(small, sizeof(small)), n);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
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
	t = tcase_create("convention");
	tcase_add_test(t, test_old_letters_warn);
	tcase_add_test(t, test_time_rule);
	tcase_add_test(t, test_same_letter);
	tcase_add_test(t, test_help);
	suite_add_tcase(s, t);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
