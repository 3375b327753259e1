/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/cmd/hostparams, the command line of vnoise-host (top, record, report, list, serve): defaults,
 * every option in its long and short form, time units (a time needs one: a bare non-zero --period or
 * --duration, seconds before, is rejected with a hint), the repeatable --domain and its limit, the
 * per-command rules (record needs -o, -o only for record, report FILE and the options that do not apply to
 * it), --flows and --flows-top and their rules, the errors (-EINVAL and a one-line message naming the
 * culprit), --dtl-detail class|task (top and record only), the deprecated -c (works, warns), the same letter meaning the same option in every command,
 * each command's help (only its options), and repeated calls in one process (getopt state is reset).
 */
#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dtl.h"
#include "cmd/hostparams.h"

#define MS 1000000ULL
#define S 1000000000ULL

#define CLI_PARAMS struct host_params
#define CLI_PARSE hostparams_parse
#include "cli_check.h"

/* The help of cmd (one buffer, overwritten by the next call). */
static const char *usage_of(enum host_cmd cmd)
{
	static char buf[8192];

	ck_assert_uint_lt(hostparams_usage(cmd, buf, sizeof(buf)), sizeof(buf));
	return buf;
}

static void check_defaults(enum host_cmd cmd)
{
	int i;

	ck_assert_int_eq(P.cmd, cmd);
	ck_assert_ptr_null(P.uri);
	ck_assert_int_eq(P.ndomains, 0);
	for (i = 0; i < HOSTPARAMS_MAX_DOMAINS; i++)
		ck_assert_ptr_null(P.domains[i]);
	ck_assert_uint_eq(P.period_ns, 1 * S);
	ck_assert_uint_eq(P.duration_ns, 0);
	ck_assert_int_eq(P.json, 0);
	ck_assert_int_eq(P.top_n, 5);
	ck_assert_int_eq(P.no_dispatch, 0);
	ck_assert_int_eq(P.no_irqs, 0);
	ck_assert_int_eq(P.qmp, 0);
	ck_assert_int_eq(P.flows, 0);
	ck_assert_int_eq(P.flows_top, 10);
	ck_assert_int_eq(P.wide, 0);
	ck_assert_int_eq(P.dtl_detail, VN_DTL_DETAIL_CLASS);
	ck_assert_int_eq(P.quiet, 0);
	ck_assert_int_eq(P.verbose, 0);
}

/* ---- commands and defaults ---- */

START_TEST(test_defaults)
{
	OK("top");
	check_defaults(HCMD_TOP);
	ck_assert_ptr_null(P.output);
	ck_assert_ptr_null(P.input);
	OK("list");
	check_defaults(HCMD_LIST);
	ck_assert_ptr_null(P.output);
	OK("record", "-o", "host.vnr");
	check_defaults(HCMD_RECORD);
	ck_assert_str_eq(P.output, "host.vnr");
	ck_assert_ptr_null(P.input);
	OK("report", "host.vnr");
	check_defaults(HCMD_REPORT);
	ck_assert_str_eq(P.input, "host.vnr");
	ck_assert_ptr_null(P.output);
}
END_TEST

START_TEST(test_defaults_reset)
{
	/* a parse starts from the defaults, whatever the struct held */
	memset(&P, 0xa5, sizeof(P));
	ck_assert_int_eq(hostparams_parse(1, (char *[]){ "top", NULL }, &P, err, sizeof(err)), 0);
	check_defaults(HCMD_TOP);
	ck_assert_ptr_null(P.output);
	ck_assert_ptr_null(P.input);
}
END_TEST

START_TEST(test_unknown_command)
{
	FAILS("stat", "stat");
	FAILS("top record report list", "TOP");
	FAILS("unknown command", "");
	FAILS("unknown command '--help'", "--help");
	memset(err, 0, sizeof(err));
	ck_assert_int_eq(hostparams_parse(0, (char *[]){ NULL }, &P, err, sizeof(err)), -EINVAL);
	check_message("command");
}
END_TEST

/* ---- options ---- */

START_TEST(test_connect)
{
	OK("top", "-c", "qemu+ssh://root@h1/system");
	ck_assert_str_eq(P.uri, "qemu+ssh://root@h1/system");
	OK("list", "--connect", "qemu:///session");
	ck_assert_str_eq(P.uri, "qemu:///session");
	OK("record", "--connect=test:///default", "-o", "f");
	ck_assert_str_eq(P.uri, "test:///default");
	FAILS("--connect", "top", "--connect", "");
	FAILS("--connect", "top", "--connect=");
	FAILS("--connect", "top", "-c", "");
}
END_TEST

START_TEST(test_domain)
{
	OK("top", "-D", "vm1");
	ck_assert_int_eq(P.ndomains, 1);
	ck_assert_str_eq(P.domains[0], "vm1");
	OK("top", "--domain", "a", "-D", "b", "--domain=c");
	ck_assert_int_eq(P.ndomains, 3);
	ck_assert_str_eq(P.domains[0], "a");
	ck_assert_str_eq(P.domains[1], "b");
	ck_assert_str_eq(P.domains[2], "c");
	ck_assert_ptr_null(P.domains[3]);
	FAILS("--domain", "top", "--domain", "");
	FAILS("--domain", "top", "-D", "");
}
END_TEST

START_TEST(test_domain_limit)
{
	char *argv[2 * HOSTPARAMS_MAX_DOMAINS + 6];
	char names[HOSTPARAMS_MAX_DOMAINS + 1][16];
	int argc = 0, i;

	argv[argc++] = "record";
	argv[argc++] = "-o";
	argv[argc++] = "x.vnr";
	for (i = 0; i < HOSTPARAMS_MAX_DOMAINS; i++) {
		snprintf(names[i], sizeof(names[i]), "vm%d", i);
		argv[argc++] = "-D";
		argv[argc++] = names[i];
	}
	argv[argc] = NULL;
	ck_assert_msg(hostparams_parse(argc, argv, &P, err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(P.ndomains, HOSTPARAMS_MAX_DOMAINS);
	for (i = 0; i < HOSTPARAMS_MAX_DOMAINS; i++)
		ck_assert_str_eq(P.domains[i], names[i]);

	/* one more */
	snprintf(names[i], sizeof(names[i]), "vm%d", i);
	argv[argc++] = "--domain";
	argv[argc++] = names[i];
	argv[argc] = NULL;
	memset(err, 0, sizeof(err));
	ck_assert_int_eq(hostparams_parse(argc, argv, &P, err, sizeof(err)), -EINVAL);
	check_message("--domain 16");
}
END_TEST

START_TEST(test_domain_name_length)
{
	char name[130];

	memset(name, 'd', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	/* 128 characters: too long */
	name[128] = 0;
	FAILS("--domain", "top", "--domain", name);
	/* 127: the longest */
	name[127] = 0;
	OK("top", "--domain", name);
	ck_assert_uint_eq(strlen(P.domains[0]), 127);
}
END_TEST

START_TEST(test_period)
{
	OK("top", "-p", "2s");
	ck_assert_uint_eq(P.period_ns, 2 * S);
	OK("top", "--period", "500ms");
	ck_assert_uint_eq(P.period_ns, 500 * MS);
	OK("top", "--period=1.5s");
	ck_assert_uint_eq(P.period_ns, 1500 * MS);
	OK("top", "-p", "2s");
	ck_assert_uint_eq(P.period_ns, 2 * S);
	OK("top", "-p", "1m");
	ck_assert_uint_eq(P.period_ns, 60 * S);
	/* the bounds: 10 ms .. 1 h */
	OK("top", "-p", "10ms");
	ck_assert_uint_eq(P.period_ns, 10 * MS);
	OK("top", "-p", "1h");
	ck_assert_uint_eq(P.period_ns, 3600 * S);
	OK("list", "-p", "0.01s");
	ck_assert_uint_eq(P.period_ns, 10 * MS);
	FAILS("--period '9ms'", "top", "-p", "9ms");
	FAILS("--period", "top", "-p", "0");
	FAILS("--period", "top", "-p", "3601s");
	FAILS("--period", "top", "-p", "3600000000001ns");
	FAILS("--period", "top", "-p", "61m");
	FAILS("--period 'abc'", "top", "--period", "abc");
	FAILS("--period", "top", "-p", "-1");
	FAILS("--period", "top", "-p", "");
	FAILS("--period", "top", "-p", "1 s");
	FAILS("--period", "top", "-p", "1sec");
	FAILS("--period", "top", "-p", "5x");
}
END_TEST

START_TEST(test_duration)
{
	OK("top", "-d", "10s");
	ck_assert_uint_eq(P.duration_ns, 10 * S);
	OK("record", "-o", "f", "--duration", "500ms");
	ck_assert_uint_eq(P.duration_ns, 500 * MS);
	OK("top", "--duration=2m");
	ck_assert_uint_eq(P.duration_ns, 120 * S);
	OK("top", "-d", "1ns");
	ck_assert_uint_eq(P.duration_ns, 1);
	/* 31 days is the most */
	OK("top", "-d", "744h");
	ck_assert_uint_eq(P.duration_ns, 744ULL * 3600 * S);
	FAILS("--duration", "top", "-d", "745h");
	FAILS("--duration '0'", "top", "-d", "0");
	FAILS("--duration", "top", "-d", "0ms");
	FAILS("--duration", "top", "-d", "-5");
	FAILS("--duration 'soon'", "top", "--duration", "soon");
	FAILS("--duration", "top", "-d", "");
	FAILS("--duration", "top", "-d", "99999999999999999999");
}
END_TEST

START_TEST(test_top)
{
	OK("top", "-n", "3");
	ck_assert_int_eq(P.top_n, 3);
	OK("top", "--top", "1");
	ck_assert_int_eq(P.top_n, 1);
	OK("report", "f", "--top=1000");
	ck_assert_int_eq(P.top_n, 1000);
	FAILS("--top '0'", "top", "-n", "0");
	FAILS("--top '1001'", "top", "-n", "1001");
	FAILS("--top", "top", "-n", "-1");
	FAILS("--top", "top", "-n", "x");
	FAILS("--top", "top", "-n", "5ms");
	FAILS("--top", "top", "--top", "");
}
END_TEST

START_TEST(test_flags)
{
	OK("top", "-j", "-q", "-v");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.quiet, 1);
	ck_assert_int_eq(P.verbose, 1);
	ck_assert_int_eq(P.no_dispatch, 0);
	OK("top", "--json", "--quiet", "--verbose", "--verbose", "-v");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.verbose, 3);
	OK("top", "-jvv");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.verbose, 2);
	OK("top", "--no-dispatch");
	ck_assert_int_eq(P.no_dispatch, 1);
	ck_assert_int_eq(P.no_irqs, 0);
	ck_assert_int_eq(P.qmp, 0);
	OK("record", "-o", "f", "--no-irqs");
	ck_assert_int_eq(P.no_irqs, 1);
	ck_assert_int_eq(P.no_dispatch, 0);
	OK("list", "--qmp");
	ck_assert_int_eq(P.qmp, 1);
	OK("top", "-D", "a");
	ck_assert_int_eq(P.guest, 0);
	OK("top", "--guest", "-D", "a");
	ck_assert_int_eq(P.guest, 1);
	OK("record", "-g", "-o", "f");
	ck_assert_int_eq(P.guest, 1);
	OK("report", "f", "--guest", "--json");
	ck_assert_int_eq(P.guest, 1);
	ck_assert_int_eq(P.json, 1);
	FAILS("--guest is for top, record and report", "list", "--guest");
	/* flags take no value */
	FAILS("--json", "top", "--json=1");
}
END_TEST

/* --wide (top, record, report): the text views as wide as their rows; list --json: vnoise.list/1. */
START_TEST(test_wide_and_list_json)
{
	OK("top", "--wide");
	ck_assert_int_eq(P.wide, 1);
	OK("record", "-o", "f", "--wide", "--guest");
	ck_assert_int_eq(P.wide, 1);
	OK("report", "f", "--wide");
	ck_assert_int_eq(P.wide, 1);
	OK("top");
	ck_assert_int_eq(P.wide, 0);
	FAILS("--wide", "top", "--wide=1");
	for (int c = HCMD_TOP; c <= HCMD_REPORT; c++)
		ck_assert_msg(strstr(usage_of((enum host_cmd)c), "      --wide"),
			      "command %d lacks --wide", c);
	OK("list", "--json");
	ck_assert_int_eq(P.json, 1);
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_LIST), "  -j, --json"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_LIST), "vnoise.list/1"));
}
END_TEST

START_TEST(test_flows)
{
	OK("top", "--flows");
	ck_assert_int_eq(P.flows, 1);
	ck_assert_int_eq(P.flows_top, 10);
	ck_assert_int_eq(P.guest, 0);
	OK("record", "-o", "f", "--flows", "--guest", "--json");
	ck_assert_int_eq(P.flows, 1);
	ck_assert_int_eq(P.guest, 1);
	OK("top", "--flows", "--flows-top", "3");
	ck_assert_int_eq(P.flows_top, 3);
	OK("record", "--flows-top=1000", "-o", "f", "--flows");
	ck_assert_int_eq(P.flows_top, 1000);
	ck_assert_int_eq(P.flows, 1);
	OK("top", "--flows", "--flows-top", "1");
	ck_assert_int_eq(P.flows_top, 1);
	/* --flows is independent of the dispatch log and of -n */
	OK("top", "--flows", "--no-dispatch", "-n", "2");
	ck_assert_int_eq(P.flows, 1);
	ck_assert_int_eq(P.no_dispatch, 1);
	ck_assert_int_eq(P.top_n, 2);
	ck_assert_int_eq(P.flows_top, 10);
	/* report shows what was recorded: --flows-top limits it, --flows does not apply */
	OK("report", "f.vnr", "--flows-top", "4");
	ck_assert_int_eq(P.flows_top, 4);
	ck_assert_int_eq(P.flows, 0);
	FAILS("report --flows", "report", "f.vnr", "--flows");
	FAILS("--flows --flows-top top record", "list", "--flows");
	FAILS("--flows --flows-top top record", "list", "--flows-top", "3");
	FAILS("--flows-top needs --flows", "top", "--flows-top", "3");
	FAILS("--flows-top needs --flows", "record", "-o", "f", "--flows-top", "3");
	FAILS("--flows-top '0'", "top", "--flows", "--flows-top", "0");
	FAILS("--flows-top '1001'", "top", "--flows", "--flows-top", "1001");
	FAILS("--flows-top", "top", "--flows", "--flows-top", "x");
	FAILS("--flows-top", "top", "--flows", "--flows-top", "");
	FAILS("'--flows-top' needs a value", "top", "--flows", "--flows-top");
	FAILS("--flows", "top", "--flows=1");
}
END_TEST

/* --dtl-detail: class (default) or task, for the live commands only; a bad value is one line. */
START_TEST(test_dtl_detail)
{
	OK("top", "--dtl-detail", "task");
	ck_assert_int_eq(P.dtl_detail, VN_DTL_DETAIL_TASK);
	OK("record", "-o", "f", "--dtl-detail=class", "--guest");
	ck_assert_int_eq(P.dtl_detail, VN_DTL_DETAIL_CLASS);
	OK("top", "--dtl-detail", "class", "--dtl-detail", "task");
	ck_assert_int_eq(P.dtl_detail, VN_DTL_DETAIL_TASK);
	OK("top");
	ck_assert_int_eq(P.dtl_detail, VN_DTL_DETAIL_CLASS);
	FAILS("invalid --dtl-detail 'names': want class or task", "top", "--dtl-detail", "names");
	FAILS("invalid --dtl-detail '': want class or task", "top", "--dtl-detail", "");
	FAILS("invalid --dtl-detail 'Task'", "record", "-o", "f", "--dtl-detail", "Task");
	FAILS("'--dtl-detail' needs a value", "top", "--dtl-detail");
	FAILS("--dtl-detail is for top and record", "list", "--dtl-detail", "task");
	FAILS("--dtl-detail is for top and record", "report", "f.vnr", "--dtl-detail", "class");
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_TOP), "      --dtl-detail class|task"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_RECORD), "      --dtl-detail class|task"));
	ck_assert_ptr_null(strstr(usage_of(HCMD_REPORT), "--dtl-detail"));
	ck_assert_ptr_null(strstr(usage_of(HCMD_LIST), "--dtl-detail"));
}
END_TEST

START_TEST(test_all_options_together)
{
	OK("record", "--connect", "qemu:///system", "-D", "a", "--domain", "b", "-p", "250ms", "-d",
	   "30s", "-o", "out.vnr", "-j", "-n", "7", "--no-irqs", "--qmp", "-q", "-v");
	ck_assert_int_eq(P.cmd, HCMD_RECORD);
	ck_assert_str_eq(P.uri, "qemu:///system");
	ck_assert_int_eq(P.ndomains, 2);
	ck_assert_str_eq(P.domains[1], "b");
	ck_assert_uint_eq(P.period_ns, 250 * MS);
	ck_assert_uint_eq(P.duration_ns, 30 * S);
	ck_assert_str_eq(P.output, "out.vnr");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.top_n, 7);
	ck_assert_int_eq(P.no_dispatch, 0);
	ck_assert_int_eq(P.no_irqs, 1);
	ck_assert_int_eq(P.qmp, 1);
	ck_assert_int_eq(P.quiet, 1);
	ck_assert_int_eq(P.verbose, 1);
	ck_assert_ptr_null(P.input);
}
END_TEST

START_TEST(test_serve_batch_metrics_html)
{
	OK("serve");
	check_defaults(HCMD_SERVE);
	ck_assert_ptr_null(P.metrics);
	OK("serve", "--metrics", "127.0.0.1:9464", "--json", "-D", "a", "--dtl-detail", "task");
	ck_assert_str_eq(P.metrics, "127.0.0.1:9464");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.dtl_detail, VN_DTL_DETAIL_TASK);
	OK("serve", "--metrics=[::1]:0");
	ck_assert_str_eq(P.metrics, "[::1]:0");
	OK("serve", "--metrics", "localhost:9464");
	ck_assert_str_eq(P.metrics, "localhost:9464");
	OK("serve", "--metrics", ":9464");
	FAILS(
	    "invalid --metrics 'example.com:9464': want ADDR:PORT: 1.2.3.4:P, [::1]:P, localhost:P",
	    "serve", "--metrics", "example.com:9464");
	FAILS("invalid --metrics '9464'", "serve", "--metrics", "9464");
	FAILS("invalid --metrics ''", "serve", "--metrics", "");
	FAILS("--metrics is for serve only", "top", "--metrics", "127.0.0.1:1");
	FAILS("-o is for record only", "serve", "-o", "x.vnr");
	OK("top", "--batch");
	ck_assert_int_eq(P.batch, 1);
	OK("top");
	ck_assert_int_eq(P.batch, 0);
	FAILS("--batch is for top only", "serve", "--batch");
	FAILS("--batch is for top only", "record", "-o", "f", "--batch");
	OK("report", "f.vnr", "--html", "out.html");
	ck_assert_str_eq(P.html, "out.html");
	FAILS("--html and --json: choose one", "report", "f.vnr", "--html", "o.html", "--json");
	FAILS("--html is for report only", "top", "--html", "o.html");
	FAILS("invalid --html ''", "report", "f.vnr", "--html", "");
	OK("serve", "--remote-write", "http://127.0.0.1:9090/api/v1/write");
	ck_assert_str_eq(P.remote_write, "http://127.0.0.1:9090/api/v1/write");
	FAILS("invalid --remote-write 'ftp://h/x'", "serve", "--remote-write", "ftp://h/x");
	FAILS("invalid --remote-write", "serve", "--remote-write", "http://");
	FAILS("--remote-write is for serve only", "top", "--remote-write", "http://h:1/w");
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_SERVE), "      --remote-write URL"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_SERVE), "      --metrics ADDR:PORT"));
	ck_assert_ptr_null(strstr(usage_of(HCMD_TOP), "--metrics"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_TOP), "      --batch"));
	ck_assert_ptr_null(strstr(usage_of(HCMD_SERVE), "--batch"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_REPORT), "      --html OUT.html"));
}
END_TEST

/* ---- per-command rules ---- */

START_TEST(test_output_rules)
{
	OK("record", "--output", "a.vnr");
	ck_assert_str_eq(P.output, "a.vnr");
	OK("record", "--output=b.vnr");
	ck_assert_str_eq(P.output, "b.vnr");
	FAILS("record -o", "record");
	FAILS("record -o", "record", "-j", "-D", "x");
	FAILS("--output", "record", "-o", "");
	FAILS("-o record", "top", "-o", "x.vnr");
	FAILS("-o record", "list", "--output", "x.vnr");
	FAILS("-o record", "report", "f.vnr", "-o", "x.vnr");
}
END_TEST

START_TEST(test_report_file)
{
	OK("report", "f.vnr", "--json", "-n", "3");
	ck_assert_str_eq(P.input, "f.vnr");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.top_n, 3);
	/* options before FILE, and around it */
	OK("report", "--json", "-n", "4", "g.vnr");
	ck_assert_str_eq(P.input, "g.vnr");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.top_n, 4);
	OK("report", "-n", "2", "h.vnr", "-j", "-v");
	ck_assert_str_eq(P.input, "h.vnr");
	ck_assert_int_eq(P.top_n, 2);
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.verbose, 1);
	OK("report", "/tmp/dir with space/r.vnr", "-q");
	ck_assert_str_eq(P.input, "/tmp/dir with space/r.vnr");
	ck_assert_int_eq(P.quiet, 1);
	/* "--" ends the options: a FILE that looks like one, and nothing after it */
	OK("report", "--", "-odd.vnr");
	ck_assert_str_eq(P.input, "-odd.vnr");
	OK("report", "-j", "--", "--json");
	ck_assert_str_eq(P.input, "--json");
	ck_assert_int_eq(P.json, 1);
	OK("report", "f.vnr", "--");
	ck_assert_str_eq(P.input, "f.vnr");
	FAILS("unexpected '--json'", "report", "--", "f.vnr", "--json");
	FAILS("unexpected 'g.vnr'", "report", "f.vnr", "--", "g.vnr");
	/* the value of an option is not the FILE */
	FAILS("report FILE", "report", "-n", "3");
	FAILS("report FILE", "report");
	FAILS("unexpected 'b.vnr'", "report", "a.vnr", "b.vnr");
	FAILS("unexpected 'b.vnr'", "report", "-j", "a.vnr", "-n", "2", "b.vnr");
}
END_TEST

START_TEST(test_report_options)
{
	/* the live-only options do not apply to a file */
	FAILS("--connect", "report", "f.vnr", "--connect", "qemu:///system");
	FAILS("--connect", "report", "-c", "qemu:///system", "f.vnr");
	FAILS("--domain", "report", "f.vnr", "-D", "vm1");
	FAILS("--duration", "report", "f.vnr", "-d", "5s");
	FAILS("--no-dispatch", "report", "f.vnr", "--no-dispatch");
	FAILS("--qmp", "report", "--qmp", "f.vnr");
	/* a missing FILE is named before them */
	FAILS("report FILE", "report", "--connect", "qemu:///system");
}
END_TEST

/* ---- errors ---- */

START_TEST(test_unknown_option)
{
	FAILS("unknown option '--bogus'", "top", "--bogus");
	FAILS("unknown option '-x'", "top", "-x");
	FAILS("unknown option '--bogus=1'", "list", "--bogus=1");
	FAILS("unknown option '--bogus'", "report", "f.vnr", "--bogus");
	FAILS("unknown option '--bogus'", "record", "-o", "f", "-j", "--bogus", "-q");
	/* -x inside a group: the message names the group */
	FAILS("unknown option -jx", "top", "-jx");
	/* --no is ambiguous (--no-dispatch, --no-irqs) */
	FAILS("option --no", "top", "--no");
}
END_TEST

START_TEST(test_missing_value)
{
	FAILS("'--period' needs a value", "top", "--period");
	FAILS("'-p' needs a value", "top", "-p");
	FAILS("'-o' needs a value", "record", "-o");
	FAILS("'--output' needs a value", "record", "--output");
	FAILS("'--domain' needs a value", "top", "-j", "--domain");
	FAILS("'-n' needs a value", "report", "f.vnr", "-n");
	FAILS("'--connect' needs a value", "list", "--connect");
	FAILS("'-d' needs a value", "top", "-q", "-d");
}
END_TEST

START_TEST(test_unexpected_argument)
{
	FAILS("unexpected argument 'extra'", "top", "extra");
	FAILS("unexpected argument 'extra'", "top", "-j", "extra", "-q");
	FAILS("unexpected argument 'x.vnr'", "record", "x.vnr");
	FAILS("unexpected argument 'vm1'", "list", "vm1");
	FAILS("unexpected argument 'x'", "top", "--", "x");
	/* options after an unexpected argument are not parsed as options */
	FAILS("unexpected argument 'extra'", "top", "extra", "--bogus");
}
END_TEST

START_TEST(test_help)
{
	ck_assert_int_eq(parse("top", "--help", NULL), 1);
	ck_assert_int_eq(parse("top", "-h", NULL), 1);
	/* no -o needed for help, no FILE for report */
	ck_assert_int_eq(parse("record", "-h", NULL), 1);
	ck_assert_int_eq(parse("report", "--help", NULL), 1);
	ck_assert_int_eq(parse("report", "a.vnr", "--help", NULL), 1);
	ck_assert_int_eq(parse("list", "-v", "--help", NULL), 1);
	ck_assert_int_eq(parse("top", "-jh", NULL), 1);
	/* an earlier error wins */
	FAILS("--bogus", "top", "--bogus", "--help");
	FAILS("--period", "top", "-p", "x", "--help");
	/* the usage names every command and option */
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_RECORD), "record"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_REPORT), "report FILE"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_TOP), "--no-dispatch"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_LIST), "--qmp"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_TOP), "--domain"));
}
END_TEST

START_TEST(test_help_per_command)
{
	static const char *const not_list[] = { "--period", "--duration",    "--output",
						"--guest",  "--flows",	     "--wide",
						"--top",    "--no-dispatch", "--no-irqs" };
	static const char *const not_report[] = { "--connect",	"--domain", "--period",
						  "--duration", "--output", "--no-dispatch",
						  "--no-irqs",	"--qmp",    "--flows " };
	size_t i;

	/* each command's help shows the options it takes, and only those */
	for (i = 0; i < sizeof(not_list) / sizeof(not_list[0]); i++)
		ck_assert_msg(!strstr(usage_of(HCMD_LIST), not_list[i]), "list shows %s",
			      not_list[i]);
	for (i = 0; i < sizeof(not_report) / sizeof(not_report[0]); i++)
		ck_assert_msg(!strstr(usage_of(HCMD_REPORT), not_report[i]), "report shows %s",
			      not_report[i]);
	ck_assert_ptr_null(strstr(usage_of(HCMD_TOP), "--output"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_RECORD), "  -o, --output FILE"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_TOP), "  -p, --period TIME"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_TOP), "      --connect URI"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_REPORT), "  -g, --guest"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_REPORT), "--flows-top N"));
	ck_assert_ptr_nonnull(strstr(usage_of(HCMD_LIST), "  -D, --domain NAME"));
	/* the deprecated -c is in no help */
	for (i = HCMD_TOP; i <= HCMD_LIST; i++)
		ck_assert_ptr_null(strstr(usage_of((enum host_cmd)i), "-c,"));
	/* the help of the parsed command: p->cmd is set when --help returns 1 */
	ck_assert_int_eq(parse("list", "--help", NULL), 1);
	ck_assert_int_eq(P.cmd, HCMD_LIST);
	/* too small a buffer: truncated, the length needed returned */
	{
		char small[16];
		size_t n = hostparams_usage(HCMD_TOP, small, sizeof(small));

		ck_assert_uint_eq(n, strlen(usage_of(HCMD_TOP)));
		ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	}
}
END_TEST

/* ---- the convention: time rule, deprecated spellings, letters ---- */

START_TEST(test_bare_time_rejected)
{
	/* --period and --duration were seconds without a unit: a bare number is refused, with the hint */
	FAILS("-p 2: a time without a unit is in microseconds; write 2s (or 2us)", "top", "-p",
	      "2");
	FAILS("--period 1.5: 1.5s 1.5us", "top", "--period=1.5");
	FAILS("-d 10: microseconds 10s 10us", "record", "-o", "f", "-d", "10");
	FAILS("--duration 3: 3s", "top", "--duration", "3");
	/* a unit, and 0 (no unit needed), are taken as written */
	OK("top", "-p", "100000us", "-d", "2500000us");
	ck_assert_uint_eq(P.period_ns, 100 * MS);
	ck_assert_uint_eq(P.duration_ns, 2500 * MS);
	FAILS("invalid --period '0'", "top", "-p", "0");
}
END_TEST

START_TEST(test_deprecated_c)
{
	char out[512];
	int rc;

	/* -c is --cpus in other commands; here it stays one release as --connect, with a warning */
	STDERR_OF(out, rc = parse("top", "-c", "qemu:///session", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.uri, "qemu:///session");
	ck_assert_ptr_nonnull(strstr(out, "warning: -c is deprecated, use --connect"));
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
	STDERR_OF(out, rc = parse("list", "--connect", "qemu:///session", "-D", "a", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out, "");
	/* its errors name the option by its new name */
	FAILS("--connect", "top", "-c", "");
}
END_TEST

START_TEST(test_same_letter)
{
	static const char *const cmds[][3] = {
		{ "top", NULL }, { "record", "-o", "f" }, { "report", "f", NULL }, { "list", NULL }
	};
	struct host_params a;
	size_t i;

	/* every letter is the common option of that letter in every command */
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *c0 = cmds[i][0], *c1 = cmds[i][1], *c2 = cmds[i][2];

		ck_assert_int_eq(parse(c0, "-p", "2s", "-n", "3", "-j", "-q", "-v", c1, c2, NULL),
				 0);
		a = P;
		ck_assert_int_eq(parse(c0, "--period", "2s", "--top", "3", "--json", "--quiet",
				       "--verbose", c1, c2, NULL),
				 0);
		ck_assert_uint_eq(a.period_ns, P.period_ns);
		ck_assert_int_eq(a.top_n, P.top_n);
		ck_assert_int_eq(a.json, P.json);
		ck_assert_int_eq(a.quiet, P.quiet);
		ck_assert_int_eq(a.verbose, P.verbose);
	}
	OK("top", "-D", "x", "-g", "-d", "1s");
	ck_assert_str_eq(P.domains[0], "x");
	ck_assert_int_eq(P.guest, 1);
	ck_assert_uint_eq(P.duration_ns, 1 * S);
	OK("record", "-o", "f");
	ck_assert_str_eq(P.output, "f");
	/* the letters of other commands' options are not taken here */
	FAILS("unknown option '-C'", "top", "-C", "x");
	FAILS("unknown option '-T'", "top", "-T", "5us");
	FAILS("unknown option '-r'", "top", "-r", "5us");
	FAILS("unknown option '-k'", "top", "-k", "f");
}
END_TEST

START_TEST(test_small_error_buffer)
{
	char small[8];

	memset(small, 'Z', sizeof(small));
	ck_assert_int_eq(
	    hostparams_parse(2, (char *[]){ "top", "--bogus", NULL }, &P, small, sizeof(small)),
	    -EINVAL);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert_int_eq(hostparams_parse(2, (char *[]){ "top", "--bogus", NULL }, &P, small, 0),
			 -EINVAL);
}
END_TEST

START_TEST(test_repeated_calls)
{
	/* getopt state does not leak from one parse into the next, even after an error in a group */
	FAILS("unknown option", "top", "-jx");
	OK("top", "-v");
	ck_assert_int_eq(P.json, 0);
	ck_assert_int_eq(P.verbose, 1);
	ck_assert_int_eq(parse("top", "-vh", NULL), 1);
	OK("report", "a.vnr");
	ck_assert_str_eq(P.input, "a.vnr");
	ck_assert_int_eq(P.verbose, 0);
	OK("report", "-j", "b.vnr");
	ck_assert_str_eq(P.input, "b.vnr");
	FAILS("needs a value", "top", "-p");
	OK("top", "-p", "3s");
	ck_assert_uint_eq(P.period_ns, 3 * S);
	OK("list");
	check_defaults(HCMD_LIST);
}
END_TEST

static Suite *hostparams_suite(void)
{
	Suite *s = suite_create("hostparams");
	TCase *tc;

	tc = tcase_create("commands");
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_defaults_reset);
	tcase_add_test(tc, test_unknown_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("options");
	tcase_add_test(tc, test_connect);
	tcase_add_test(tc, test_domain);
	tcase_add_test(tc, test_domain_limit);
	tcase_add_test(tc, test_domain_name_length);
	tcase_add_test(tc, test_period);
	tcase_add_test(tc, test_duration);
	tcase_add_test(tc, test_top);
	tcase_add_test(tc, test_flags);
	tcase_add_test(tc, test_flows);
	tcase_add_test(tc, test_dtl_detail);
	tcase_add_test(tc, test_all_options_together);
	suite_add_tcase(s, tc);

	tc = tcase_create("rules");
	tcase_add_test(tc, test_output_rules);
	tcase_add_test(tc, test_serve_batch_metrics_html);
	tcase_add_test(tc, test_report_file);
	tcase_add_test(tc, test_report_options);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_unknown_option);
	tcase_add_test(tc, test_missing_value);
	tcase_add_test(tc, test_unexpected_argument);
	tcase_add_test(tc, test_small_error_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("help");
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_help_per_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("convention");
	tcase_add_test(tc, test_bare_time_rejected);
	tcase_add_test(tc, test_deprecated_c);
	tcase_add_test(tc, test_same_letter);
	tcase_add_test(tc, test_wide_and_list_json);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cli_check_main(hostparams_suite(), test_repeated_calls);
}
