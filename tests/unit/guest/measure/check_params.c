/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/measure/params: defaults of every command, every option in its long and short form with its
 * units, the errors (-EINVAL and a one-line message naming the option), --help, and repeated calls in one
 * process (getopt state is reset by params_parse).
 */
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "measure/params.h"

#define MS 1000000ULL
#define S 1000000000ULL

#define CLI_PARAMS struct measure_params
#define CLI_PARSE params_parse
#include "cli_check.h"

static void check_defaults(enum vn_cmd cmd)
{
	ck_assert_int_eq(P.cmd, cmd);
	ck_assert_int_eq(P.cpus_all, 1);
	ck_assert_int_eq(P.ncpus, 0);
	ck_assert_uint_eq(P.period_ns, 1 * S);
	ck_assert_uint_eq(P.threshold_ns, 5000);
	ck_assert_uint_eq(P.duration_ns, 0);
	ck_assert_uint_eq(P.stop_single_ns, 0);
	ck_assert_uint_eq(P.stop_total_ns, 0);
	ck_assert_int_eq(P.policy, SCHED_OTHER);
	ck_assert_int_eq(P.prio, 0);
	ck_assert_int_eq(P.json, 0);
	ck_assert_int_eq(P.top_n, 10);
	ck_assert_int_eq(P.helper, HELPER_AUTO);
	ck_assert_int_eq(P.no_hcall, 0);
	ck_assert_int_eq(P.quiet, 0);
	ck_assert_int_eq(P.verbose, 0);
	ck_assert_int_eq(P.report_hist, 0);
	ck_assert_int_eq(P.wide, 0);
}

/* ---- defaults ---- */

START_TEST(test_defaults_measuring)
{
	OK("measure");
	check_defaults(CMD_MEASURE);
	ck_assert_uint_eq(P.runtime_ns, 1 * S);
	ck_assert_ptr_null(P.output);
	ck_assert_ptr_null(P.input);

	OK("top");
	check_defaults(CMD_TOP);
	ck_assert_uint_eq(P.runtime_ns, P.period_ns);

	OK("hist");
	check_defaults(CMD_HIST);
	ck_assert_uint_eq(P.runtime_ns, P.period_ns);

	OK("record", "-o", "out.vnr");
	check_defaults(CMD_RECORD);
	ck_assert_uint_eq(P.runtime_ns, P.period_ns);
	ck_assert_str_eq(P.output, "out.vnr");
}
END_TEST

START_TEST(test_defaults_report)
{
	OK("report", "rec.vnr");
	ck_assert_int_eq(P.cmd, CMD_REPORT);
	ck_assert_str_eq(P.input, "rec.vnr");
	ck_assert_int_eq(P.json, 0);
	ck_assert_int_eq(P.top_n, 10);
	ck_assert_int_eq(P.report_hist, 0);
	ck_assert_ptr_null(P.output);
}
END_TEST

START_TEST(test_unknown_command)
{
	FAILS("bogus", "bogus");
	FAILS("inject", "inject", "--cpu", "1");
}
END_TEST

/* ---- options ---- */

START_TEST(test_period)
{
	OK("measure", "--period", "500ms");
	ck_assert_uint_eq(P.period_ns, 500 * MS);
	ck_assert_uint_eq(P.runtime_ns, 500 * MS); /* runtime follows the period */
	OK("measure", "-p", "500ms");
	ck_assert_uint_eq(P.period_ns, 500 * MS);
	OK("measure", "--period=2s");
	ck_assert_uint_eq(P.period_ns, 2 * S);
	OK("measure", "-p250us");
	ck_assert_uint_eq(P.period_ns, 250000);
	OK("measure", "-p", "500"); /* us by default */
	ck_assert_uint_eq(P.period_ns, 500000);
	OK("measure", "-p", "1us");
	ck_assert_uint_eq(P.period_ns, 1000);
	OK("measure", "-p", "10s");
	ck_assert_uint_eq(P.period_ns, 10 * S);
	FAILS("--period", "measure", "--period", "0");
	FAILS("--period", "measure", "-p", "999ns");
	FAILS("--period", "measure", "-p", "11s");
	FAILS("--period 10x", "measure", "--period", "10x");
	FAILS("--period", "measure", "--period", "10 ms");
	FAILS("--period", "measure", "--period", "-1");
}
END_TEST

START_TEST(test_runtime)
{
	OK("measure", "--runtime", "300ms");
	ck_assert_uint_eq(P.runtime_ns, 300 * MS);
	ck_assert_uint_eq(P.period_ns, 1 * S);
	OK("measure", "-r", "100", "-p", "200"); /* us by default */
	ck_assert_uint_eq(P.runtime_ns, 100000);
	ck_assert_uint_eq(P.period_ns, 200000);
	/* checked after all options, in any order */
	OK("measure", "-r", "1s", "-p", "1s");
	ck_assert_uint_eq(P.runtime_ns, P.period_ns);
	FAILS("--runtime --period", "measure", "--runtime", "2s");
	FAILS("--runtime --period", "measure", "-p", "100ms", "-r", "200ms");
	FAILS("--runtime --period", "measure", "-r", "200ms", "-p", "100ms");
	FAILS("--runtime", "measure", "-r", "0");
	FAILS("--runtime", "measure", "--runtime", "ms");
}
END_TEST

START_TEST(test_threshold)
{
	OK("measure", "--threshold", "2");
	ck_assert_uint_eq(P.threshold_ns, 2000); /* us by default */
	OK("measure", "-T", "100ns");
	ck_assert_uint_eq(P.threshold_ns, 100);
	OK("measure", "-T", "1.5us");
	ck_assert_uint_eq(P.threshold_ns, 1500);
	OK("measure", "--threshold=1s");
	ck_assert_uint_eq(P.threshold_ns, 1 * S);
	FAILS("--threshold", "measure", "--threshold", "0");
	FAILS("--threshold", "measure", "-T", "2s");
	FAILS("--threshold", "measure", "-T", "2usec");
}
END_TEST

START_TEST(test_duration)
{
	OK("measure", "--duration", "10s");
	ck_assert_uint_eq(P.duration_ns, 10 * S);
	OK("measure", "-d", "500ms");
	ck_assert_uint_eq(P.duration_ns, 500 * MS);
	OK("measure", "-d", "2m");
	ck_assert_uint_eq(P.duration_ns, 120 * S);
	OK("measure", "-d", "1h");
	ck_assert_uint_eq(P.duration_ns, 3600 * S);
	OK("measure", "-d", "1.5s");
	ck_assert_uint_eq(P.duration_ns, 1500 * MS);
	FAILS("--duration", "measure", "--duration", "0");
	FAILS("--duration", "measure", "-d", "10sec");
	FAILS("--duration", "measure", "-d", "1000h");
}
END_TEST

START_TEST(test_stop)
{
	OK("measure", "--stop-single", "100");
	ck_assert_uint_eq(P.stop_single_ns, 100000); /* us by default */
	OK("measure", "-s", "1ms");
	ck_assert_uint_eq(P.stop_single_ns, 1 * MS);
	OK("measure", "--stop-total", "10ms");
	ck_assert_uint_eq(P.stop_total_ns, 10 * MS);
	OK("measure", "-S", "50");
	ck_assert_uint_eq(P.stop_total_ns, 50000);
	OK("hist", "-s", "20", "-S", "30");
	ck_assert_uint_eq(P.stop_single_ns, 20000);
	ck_assert_uint_eq(P.stop_total_ns, 30000);
	FAILS("--stop-single", "measure", "--stop-single", "0");
	FAILS("--stop-single", "measure", "-s", "x");
	FAILS("--stop-total", "measure", "--stop-total", "0");
	FAILS("--stop-total", "measure", "-S", "1ks");
}
END_TEST

START_TEST(test_priority)
{
	OK("measure", "--priority", "fifo:50");
	ck_assert_int_eq(P.policy, SCHED_FIFO);
	ck_assert_int_eq(P.prio, 50);
	OK("measure", "-P", "rr:10");
	ck_assert_int_eq(P.policy, SCHED_RR);
	ck_assert_int_eq(P.prio, 10);
	OK("measure", "-P", "f:1");
	ck_assert_int_eq(P.policy, SCHED_FIFO);
	ck_assert_int_eq(P.prio, 1);
	OK("measure", "-P", "r:99");
	ck_assert_int_eq(P.policy, SCHED_RR);
	ck_assert_int_eq(P.prio, 99);
	OK("measure", "-P", "fifo:50", "--priority", "other");
	ck_assert_int_eq(P.policy, SCHED_OTHER);
	ck_assert_int_eq(P.prio, 0);
	OK("measure", "-P", "o");
	ck_assert_int_eq(P.policy, SCHED_OTHER);
	FAILS("--priority fifo:0", "measure", "--priority", "fifo:0");
	FAILS("--priority fifo:100", "measure", "-P", "fifo:100");
	FAILS("--priority fifo:x", "measure", "-P", "fifo:x");
	FAILS("--priority", "measure", "-P", "fifo:");
	FAILS("--priority", "measure", "-P", "fifo");
	FAILS("--priority", "measure", "-P", "rr:-1");
	FAILS("--priority", "measure", "-P", "rr:+5");
	FAILS("--priority", "measure", "-P", "batch");
	FAILS("--priority", "measure", "-P", "");
}
END_TEST

START_TEST(test_cpus)
{
	OK("measure", "--cpus", "0,2-4,7");
	ck_assert_int_eq(P.cpus_all, 0);
	ck_assert_int_eq(P.ncpus, 5);
	ck_assert_int_eq(P.cpus[0], 0);
	ck_assert_int_eq(P.cpus[1], 2);
	ck_assert_int_eq(P.cpus[2], 3);
	ck_assert_int_eq(P.cpus[3], 4);
	ck_assert_int_eq(P.cpus[4], 7);
	OK("measure", "-c", "3,1,1");
	ck_assert_int_eq(P.cpus_all, 0);
	ck_assert_int_eq(P.ncpus, 2);
	ck_assert_int_eq(P.cpus[0], 1);
	ck_assert_int_eq(P.cpus[1], 3);
	OK("measure", "-c", "all");
	ck_assert_int_eq(P.cpus_all, 1);
	ck_assert_int_eq(P.ncpus, 0);
	OK("measure", "-c", "1", "--cpus", "all");
	ck_assert_int_eq(P.cpus_all, 1);
	ck_assert_int_eq(P.ncpus, 0);
	OK("measure", "--cpus=all", "-c", "2");
	ck_assert_int_eq(P.cpus_all, 0);
	ck_assert_int_eq(P.ncpus, 1);
	ck_assert_int_eq(P.cpus[0], 2);
	OK("measure", "-c", "0-1023");
	ck_assert_int_eq(P.ncpus, PARAMS_MAX_CPUS);
	ck_assert_int_eq(P.cpus[PARAMS_MAX_CPUS - 1], PARAMS_MAX_CPUS - 1);
	FAILS("--cpus 3-1", "measure", "--cpus", "3-1");
	FAILS("--cpus", "measure", "-c", "1024");
	FAILS("--cpus", "measure", "-c", "1,");
	FAILS("--cpus", "measure", "-c", "ALL");
	FAILS("--cpus", "measure", "-c", "");
}
END_TEST

START_TEST(test_helper)
{
	OK("measure", "--helper", "auto");
	ck_assert_int_eq(P.helper, HELPER_AUTO);
	OK("measure", "--helper", "bpf");
	ck_assert_int_eq(P.helper, HELPER_BPF);
	OK("measure", "--helper=proc");
	ck_assert_int_eq(P.helper, HELPER_PROC);
	FAILS("--helper ebpf", "measure", "--helper", "ebpf");
	FAILS("--helper", "measure", "--helper", "");
}
END_TEST

START_TEST(test_flags)
{
	OK("measure", "--json");
	ck_assert_int_eq(P.json, 1);
	OK("record", "-j", "-o", "f.vnr");
	ck_assert_int_eq(P.json, 1);
	OK("measure", "--top", "5");
	ck_assert_int_eq(P.top_n, 5);
	OK("top", "-n", "0");
	ck_assert_int_eq(P.top_n, 0);
	OK("top", "-n1000");
	ck_assert_int_eq(P.top_n, 1000);
	OK("measure", "--no-hypercall");
	ck_assert_int_eq(P.no_hcall, 1);
	OK("measure", "--quiet");
	ck_assert_int_eq(P.quiet, 1);
	OK("measure", "-q");
	ck_assert_int_eq(P.quiet, 1);
	OK("measure", "--verbose");
	ck_assert_int_eq(P.verbose, 1);
	OK("measure", "-v", "-v", "--verbose");
	ck_assert_int_eq(P.verbose, 3);
	OK("measure", "-vv");
	ck_assert_int_eq(P.verbose, 2);
	OK("measure", "-qj");
	ck_assert_int_eq(P.quiet, 1);
	ck_assert_int_eq(P.json, 1);
	OK("record", "--output", "a.vnr");
	ck_assert_str_eq(P.output, "a.vnr");
	OK("record", "--output=b.vnr");
	ck_assert_str_eq(P.output, "b.vnr");
	OK("record", "-oc.vnr");
	ck_assert_str_eq(P.output, "c.vnr");
	FAILS("--top", "measure", "--top", "1001");
	FAILS("--top", "measure", "-n", "-1");
	FAILS("--top", "measure", "-n", "x");
}
END_TEST

START_TEST(test_all_options_together)
{
	OK("record", "-c", "1-2", "-p", "100ms", "-r", "50ms", "-T", "10", "-d", "30s", "-s", "1ms",
	   "-S", "5ms", "-P", "fifo:95", "-j", "-n", "3", "-o", "x.vnr", "--helper", "proc",
	   "--no-hypercall", "-v");
	ck_assert_int_eq(P.cmd, CMD_RECORD);
	ck_assert_int_eq(P.cpus_all, 0);
	ck_assert_int_eq(P.ncpus, 2);
	ck_assert_uint_eq(P.period_ns, 100 * MS);
	ck_assert_uint_eq(P.runtime_ns, 50 * MS);
	ck_assert_uint_eq(P.threshold_ns, 10000);
	ck_assert_uint_eq(P.duration_ns, 30 * S);
	ck_assert_uint_eq(P.stop_single_ns, 1 * MS);
	ck_assert_uint_eq(P.stop_total_ns, 5 * MS);
	ck_assert_int_eq(P.policy, SCHED_FIFO);
	ck_assert_int_eq(P.prio, 95);
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.top_n, 3);
	ck_assert_str_eq(P.output, "x.vnr");
	ck_assert_int_eq(P.helper, HELPER_PROC);
	ck_assert_int_eq(P.no_hcall, 1);
	ck_assert_int_eq(P.verbose, 1);
}
END_TEST

/* ---- errors ---- */

/* The time rule: a bare number is in us; where it used to be s (--duration), it is rejected. */
START_TEST(test_time_rule)
{
	OK("measure", "-p", "100", "-r", "50", "-T", "7", "-s", "900", "-S", "1000");
	ck_assert_uint_eq(P.period_ns, 100000);
	ck_assert_uint_eq(P.runtime_ns, 50000);
	ck_assert_uint_eq(P.threshold_ns, 7000);
	ck_assert_uint_eq(P.stop_single_ns, 900000);
	ck_assert_uint_eq(P.stop_total_ns, 1000000);
	FAILS("-d 10: microseconds 10s 10us", "measure", "-d", "10");
	FAILS("--duration 1.5: 1.5s", "hist", "--duration", "1.5");
	FAILS("-d 30: 30s", "record", "-o", "x.vnr", "-d", "30");
	OK("measure", "-d", "10us");
	ck_assert_uint_eq(P.duration_ns, 10000);
}
END_TEST

/* Every common letter is the same option as its long name (cli/cliopt.h). */
START_TEST(test_letters_are_long_names)
{
	static const char *const pairs[][3] = {
		{ "-c", "--cpus", "1-2" },	 { "-p", "--period", "2ms" },
		{ "-r", "--runtime", "1ms" },	 { "-T", "--threshold", "9us" },
		{ "-d", "--duration", "3s" },	 { "-s", "--stop-single", "1ms" },
		{ "-S", "--stop-total", "2ms" }, { "-P", "--priority", "rr:3" },
		{ "-j", "--json", NULL },	 { "-n", "--top", "4" },
		{ "-q", "--quiet", NULL },	 { "-v", "--verbose", NULL },
	};
	struct measure_params a;
	size_t i;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		ck_assert_msg(parse("measure", pairs[i][0], pairs[i][2], NULL) == 0, "%s: %s",
			      pairs[i][0], err);
		a = P;
		ck_assert_msg(parse("measure", pairs[i][1], pairs[i][2], NULL) == 0, "%s: %s",
			      pairs[i][1], err);
		ck_assert_msg(!memcmp(&a, &P, sizeof(a)), "%s differs from %s", pairs[i][0],
			      pairs[i][1]);
	}
	OK("record", "-o", "x.vnr");
	a = P;
	OK("record", "--output", "x.vnr");
	ck_assert(!memcmp(&a, &P, sizeof(a)));
}
END_TEST

START_TEST(test_output_rules)
{
	FAILS("record -o", "record");
	FAILS("record -o", "record", "-j");
	FAILS("-o record", "measure", "-o", "x.vnr");
	FAILS("-o record", "hist", "--output", "x.vnr");
	FAILS("-o record", "top", "-o", "x.vnr");
}
END_TEST

START_TEST(test_unknown_option)
{
	FAILS("--bogus", "measure", "--bogus");
	FAILS("--bogus", "measure", "-q", "--bogus=1");
	FAILS("-x", "measure", "-x");
	FAILS("-x", "measure", "-qx");
	/* in the middle of a group of short options, and after a long one */
	FAILS("-x", "measure", "-xq");
	FAILS("-x", "measure", "--json", "-xq");
	FAILS("--json", "measure", "--json=1");
}
END_TEST

START_TEST(test_missing_value)
{
	FAILS("--period value", "measure", "--period");
	FAILS("-p value", "measure", "-p");
	FAILS("-o value", "record", "-q", "-o");
	FAILS("--helper value", "measure", "--helper");
	FAILS("--cpus value", "measure", "-j", "--cpus");
	FAILS("-qT value", "measure", "-qT");
}
END_TEST

START_TEST(test_stray_argument)
{
	FAILS("foo", "measure", "foo");
	FAILS("foo", "measure", "-j", "foo", "-q");
	FAILS("foo", "top", "-p", "1ms", "foo");
	FAILS("foo", "record", "-o", "x", "foo");
}
END_TEST

START_TEST(test_json_top)
{
	FAILS("--json top", "top", "--json");
	FAILS("--json hist", "hist", "-j");
	FAILS("--json top", "top", "-j");
}
END_TEST

/* --wide: the full text tables, for every measuring command and report; not with --json. */
START_TEST(test_wide)
{
	static const char *const cmds[] = { "measure", "top", "hist" };
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		OK(cmds[i], "--wide");
		ck_assert_int_eq(P.wide, 1);
	}
	OK("record", "-o", "x.vnr", "--wide");
	ck_assert_int_eq(P.wide, 1);
	OK("report", "a.vnr", "--wide");
	ck_assert_int_eq(P.wide, 1);
	OK("report", "a.vnr", "--hist", "--wide", "--json"); /* --hist wins over --json */
	ck_assert_int_eq(P.wide, 1);
	FAILS("--wide is for the text views", "measure", "--wide", "--json");
	FAILS("--wide is for the text views", "report", "a.vnr", "-j", "--wide");
	FAILS("--wide", "measure", "--wide=1");
	ck_assert_ptr_nonnull(strstr(params_usage(CMD_MEASURE), "--wide"));
	ck_assert_ptr_nonnull(strstr(params_usage(CMD_REPORT), "--wide"));
}
END_TEST

START_TEST(test_report_files)
{
	FAILS("report FILE", "report");
	FAILS("report FILE", "report", "--json");
	FAILS("report FILE", "report", "a.vnr", "b.vnr");
	FAILS("report FILE", "report", "--json", "a.vnr", "b.vnr");
	FAILS("report FILE", "report", "a.vnr", "--json", "b.vnr");
	FAILS("--bogus", "report", "a.vnr", "--bogus");
	FAILS("-o record", "report", "a.vnr", "-o", "x.vnr");
}
END_TEST

START_TEST(test_report_options)
{
	OK("report", "--json", "--hist", "a.vnr");
	ck_assert_int_eq(P.cmd, CMD_REPORT);
	ck_assert_str_eq(P.input, "a.vnr");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.report_hist, 1);
	/* the documented form: report FILE [--json] [--top N] [--hist] */
	OK("report", "b.vnr", "--json", "--top", "3", "--hist");
	ck_assert_str_eq(P.input, "b.vnr");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.top_n, 3);
	ck_assert_int_eq(P.report_hist, 1);
	OK("report", "-n", "4", "c.vnr", "-j");
	ck_assert_str_eq(P.input, "c.vnr");
	ck_assert_int_eq(P.top_n, 4);
	ck_assert_int_eq(P.json, 1);
	/* "--" ends the options: a file named like an option */
	OK("report", "--", "-j");
	ck_assert_str_eq(P.input, "-j");
	ck_assert_int_eq(P.json, 0);
}
END_TEST

START_TEST(test_help)
{
	ck_assert_int_eq(parse("measure", "--help", NULL), 1);
	ck_assert_int_eq(parse("top", "-h", NULL), 1);
	ck_assert_int_eq(parse("record", "-h", NULL), 1); /* no -o needed for help */
	ck_assert_int_eq(parse("report", "--help", NULL), 1);
	ck_assert_int_eq(parse("report", "a.vnr", "--help", NULL), 1);
	ck_assert_int_eq(parse("measure", "-j", "-h", "--bogus", NULL), 1);
	ck_assert_ptr_nonnull(params_usage(CMD_MEASURE));
	ck_assert_ptr_nonnull(strstr(params_usage(CMD_MEASURE), "--period"));
	ck_assert_ptr_nonnull(strstr(params_usage(CMD_REPORT), "report FILE"));
}
END_TEST

/* report --html OUT.html: the HTML report; not with --json or --hist, not for the measuring commands. */
START_TEST(test_report_html)
{
	OK("report", "a.vnr", "--html", "out.html");
	ck_assert_str_eq(P.html, "out.html");
	ck_assert_str_eq(P.input, "a.vnr");
	OK("report", "--html", "o.html", "--top", "3", "b.vnr");
	ck_assert_str_eq(P.html, "o.html");
	ck_assert_str_eq(P.input, "b.vnr");
	ck_assert_int_eq(P.top_n, 3);
	OK("report", "a.vnr");
	ck_assert_ptr_null(P.html);
	FAILS("--html and --json: choose one", "report", "a.vnr", "--html", "o.html", "-j");
	FAILS("--html and --hist: choose one", "report", "a.vnr", "--hist", "--html", "o.html");
	FAILS("invalid --html ''", "report", "a.vnr", "--html", "");
	FAILS("--html", "report", "a.vnr", "--html");
	FAILS("--html is for report only", "measure", "--html", "o.html");
	FAILS("--html is for report only", "record", "-o", "x.vnr", "--html", "o.html");
	ck_assert(strstr(params_usage(CMD_REPORT), "--html OUT.html"));
	ck_assert(!strstr(params_usage(CMD_MEASURE), "--html"));
	ck_assert(!strstr(params_usage(CMD_RECORD), "--html"));
}
END_TEST

/* help: per command, only the options it takes; every line fits 80 columns. */
static int lists(enum vn_cmd cmd, const char *opt)
{
	char want[64];

	snprintf(want, sizeof(want), "--%s ", opt);
	return strstr(params_usage(cmd), want) != NULL;
}

START_TEST(test_help_per_command)
{
	static const char *const report_lacks[] = { "cpus",	"period",   "runtime", "threshold",
						    "duration", "priority", "output",  "helper" };
	enum vn_cmd c;

	for (c = CMD_MEASURE; c <= CMD_REPORT; c++) {
		const char *u = params_usage(c);

		while (*u) {
			size_t n = strcspn(u, "\n");

			ck_assert_msg(n <= 80, "help of %d: %.*s", c, (int)n, u);
			u += n + (u[n] == '\n');
		}
		ck_assert(lists(c, "wide"));
		ck_assert(lists(c, "top") == (c != CMD_HIST)); /* hist lists no sources */
		ck_assert(lists(c, "batch") == (c == CMD_TOP));
		ck_assert(lists(c, "bucket-size") == (c == CMD_HIST || c == CMD_REPORT));
	}
	FAILS("--top is not for hist", "hist", "-n", "3");
	FAILS("--batch is for top only", "measure", "--batch");
	FAILS("--bucket-size is for hist", "measure", "--bucket-size", "1us");
	ck_assert(!lists(CMD_MEASURE, "output") && lists(CMD_MEASURE, "json"));
	/* --force: the measuring commands, not report (it samples nothing) */
	for (c = CMD_MEASURE; c < CMD_REPORT; c++)
		ck_assert(lists(c, "force"));
	ck_assert(!lists(CMD_REPORT, "force"));
	FAILS("--force is for the measuring commands", "report", "x.vnr", "--force");
	ck_assert(!lists(CMD_TOP, "output") && !lists(CMD_TOP, "json"));
	ck_assert(!lists(CMD_HIST, "output") && !lists(CMD_HIST, "json"));
	ck_assert(lists(CMD_RECORD, "output") && lists(CMD_RECORD, "json"));
	ck_assert(!lists(CMD_MEASURE, "hist") && lists(CMD_REPORT, "hist"));
	for (size_t i = 0; i < sizeof(report_lacks) / sizeof(report_lacks[0]); i++)
		ck_assert_msg(!lists(CMD_REPORT, report_lacks[i]), "report lists --%s",
			      report_lacks[i]);
	ck_assert_ptr_nonnull(strstr(params_usage(CMD_TOP), "usage: vnoise-guest top "));
}
END_TEST

START_TEST(test_small_error_buffer)
{
	char small[8], *argv[] = { "measure", "--period", "0", NULL };

	memset(small, 'Z', sizeof(small));
	ck_assert_int_eq(params_parse(3, argv, &P, small, sizeof(small)), -EINVAL);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert_int_eq(params_parse(3, argv, &P, NULL, 0), -EINVAL);
}
END_TEST

/* ---- repeated calls: getopt state must not leak from one call to the next ---- */

START_TEST(test_repeated_calls)
{
	int i;

	for (i = 0; i < 3; i++) {
		OK("measure", "-j", "-p", "10ms");
		ck_assert_int_eq(P.json, 1);
		ck_assert_uint_eq(P.period_ns, 10 * MS);
		/* a fresh call starts from defaults */
		OK("measure");
		ck_assert_int_eq(P.json, 0);
		ck_assert_uint_eq(P.period_ns, 1 * S);
	}
	/* an error in the middle of a group of short options, then a fresh parse */
	FAILS("-x", "measure", "-vxq");
	OK("measure", "-j");
	ck_assert_int_eq(P.json, 1);
	ck_assert_int_eq(P.verbose, 0);
	ck_assert_int_eq(P.quiet, 0);
	/* --help in the middle of a group, then a fresh parse */
	ck_assert_int_eq(parse("measure", "-hv", NULL), 1);
	OK("hist", "-q");
	ck_assert_int_eq(P.cmd, CMD_HIST);
	ck_assert_int_eq(P.quiet, 1);
	ck_assert_int_eq(P.verbose, 0);
	/* a stray argument, then fewer arguments than before */
	FAILS("stray", "measure", "-q", "-j", "-v", "stray");
	OK("top", "-n", "2");
	ck_assert_int_eq(P.top_n, 2);
	ck_assert_int_eq(P.quiet, 0);
	/* a parse that stopped on a missing value */
	FAILS("-p", "measure", "-p");
	OK("report", "r.vnr");
	ck_assert_str_eq(P.input, "r.vnr");
	OK("measure", "-T", "3");
	ck_assert_uint_eq(P.threshold_ns, 3000);
}
END_TEST

static Suite *params_suite(void)
{
	Suite *s = suite_create("params");
	TCase *tc;

	tc = tcase_create("defaults");
	tcase_add_test(tc, test_defaults_measuring);
	tcase_add_test(tc, test_defaults_report);
	tcase_add_test(tc, test_unknown_command);
	suite_add_tcase(s, tc);

	tc = tcase_create("options");
	tcase_add_test(tc, test_period);
	tcase_add_test(tc, test_runtime);
	tcase_add_test(tc, test_threshold);
	tcase_add_test(tc, test_duration);
	tcase_add_test(tc, test_stop);
	tcase_add_test(tc, test_priority);
	tcase_add_test(tc, test_cpus);
	tcase_add_test(tc, test_helper);
	tcase_add_test(tc, test_flags);
	tcase_add_test(tc, test_all_options_together);
	tcase_add_test(tc, test_time_rule);
	tcase_add_test(tc, test_letters_are_long_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, test_output_rules);
	tcase_add_test(tc, test_unknown_option);
	tcase_add_test(tc, test_missing_value);
	tcase_add_test(tc, test_stray_argument);
	tcase_add_test(tc, test_json_top);
	tcase_add_test(tc, test_wide);
	tcase_add_test(tc, test_small_error_buffer);
	suite_add_tcase(s, tc);

	tc = tcase_create("report");
	tcase_add_test(tc, test_report_files);
	tcase_add_test(tc, test_report_options);
	tcase_add_test(tc, test_report_html);
	suite_add_tcase(s, tc);

	tc = tcase_create("help");
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_help_per_command);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return cli_check_main(params_suite(), test_repeated_calls);
}
