/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/cli/cliopt: the common option table, the convention checks of cliopt_init, the
 * deprecated aliases (they work and warn once), the time rule (bare = us; rejected where a bare number used
 * to mean another unit; combined units; out of range named as such), the getopt error lines, the generated
 * help, the implicit -V/--version of every command and the program dispatch (cliopt_dispatch: usage,
 * version, no or unknown command, derived from the command table).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "util/version.h"

/* A small command built the way every vnoise command is: common options, own options, aliases. */
struct demo {
	uint64_t period_ns, duration_ns, every_ns;
	int top, json, quiet;
	const char *output, *udp;
};

enum { OPT_UDP = CLIOPT_OWN, OPT_EVERY };

static const struct cliopt demo_opts[] = {
	{ .id = CLIOPT_PERIOD, .help = "sampling period (default 1s)" },
	{ .id = CLIOPT_DURATION },
	{ .id = CLIOPT_TOP },
	{ .id = CLIOPT_JSON },
	{ .id = CLIOPT_OUTPUT },
	{ .id = CLIOPT_QUIET },
	{ .id = CLIOPT_HELP },
	{ .id = OPT_UDP,
	  .name = "udp",
	  .has_arg = 1,
	  .arg = "ADDR:PORT",
	  .help = "send datagrams" },
	{ .id = OPT_EVERY,
	  .name = "every",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "interval",
	  .bare_unit = "ms" },
	{ .id = OPT_UDP, .name = "hidden-udp", .has_arg = 1, .help = "" },
	{ .name = "out", .alias_of = CLIOPT_OUTPUT },
	{ .letter = 'u', .alias_of = OPT_UDP },
	{ .letter = 'J', .alias_of = CLIOPT_JSON },
	{ 0 },
};

static int demo_parse(int argc, char **argv, struct demo *d, char *e, size_t elen)
{
	struct cliopt_parser ps;
	int c, rc = cliopt_init(&ps, demo_opts, argc, argv, e, elen);

	memset(d, 0, sizeof(*d));
	if (rc)
		return rc;
	while ((c = cliopt_next(&ps)) > 0) {
		switch (c) {
		case CLIOPT_PERIOD:
			rc = cliopt_time(&ps, &d->period_ns);
			break;
		case CLIOPT_DURATION:
			rc = cliopt_time(&ps, &d->duration_ns);
			break;
		case OPT_EVERY:
			rc = cliopt_time(&ps, &d->every_ns);
			break;
		case CLIOPT_TOP:
			rc = cliopt_int(&ps, 0, 1000, &d->top);
			break;
		case CLIOPT_JSON:
			d->json = 1;
			break;
		case CLIOPT_QUIET:
			d->quiet = 1;
			break;
		case CLIOPT_OUTPUT:
			d->output = ps.arg;
			break;
		case OPT_UDP:
			d->udp = ps.arg;
			break;
		case CLIOPT_HELP:
			return 1;
		}
		if (rc)
			return rc;
	}
	if (c < 0)
		return c;
	if (optind != argc)
		return cliopt_fail(&ps, "unexpected argument '%s'", argv[optind]);
	return 0;
}

#define CLI_PARAMS struct demo
#define CLI_PARSE demo_parse
#include "cli_check.h"

START_TEST(test_common_spellings)
{
	OK("demo", "-p", "100", "-n", "3", "-j", "-o", "f", "-q");
	ck_assert_uint_eq(P.period_ns, 100000);
	ck_assert_int_eq(P.top, 3);
	ck_assert_int_eq(P.json, 1);
	ck_assert_str_eq(P.output, "f");
	ck_assert_int_eq(P.quiet, 1);
	OK("demo", "--period", "2ms", "--top=4", "--json", "--output=g", "--quiet");
	ck_assert_uint_eq(P.period_ns, 2000000);
	ck_assert_int_eq(P.top, 4);
	ck_assert_str_eq(P.output, "g");
	ck_assert_int_eq(parse("demo", "-h", NULL), 1);
	ck_assert_int_eq(parse("demo", "--help", NULL), 1);
}
END_TEST

START_TEST(test_time_rule)
{
	/* bare = microseconds; units as parse_duration; 0 needs no unit */
	OK("demo", "-p", "250");
	ck_assert_uint_eq(P.period_ns, 250000);
	OK("demo", "-p", "1.5ms", "-d", "10s", "--every", "20ms");
	ck_assert_uint_eq(P.period_ns, 1500000);
	ck_assert_uint_eq(P.duration_ns, 10000000000ULL);
	ck_assert_uint_eq(P.every_ns, 20000000);
	OK("demo", "-d", "0", "--every", "0");
	ck_assert_uint_eq(P.duration_ns, 0);
	OK("demo", "-d", "10us");
	ck_assert_uint_eq(P.duration_ns, 10000);
	/* where a bare number used to mean another unit: rejected, never reinterpreted */
	FAILS("-d 10: microseconds 10s 10us", "demo", "-d", "10");
	FAILS("--duration 2.5: 2.5s", "demo", "--duration", "2.5");
	FAILS("--every 5: microseconds 5ms 5us", "demo", "--every", "5");
	FAILS("--every 5:", "demo", "--every=5");
	FAILS("--period 10x", "demo", "-p", "10x");
	FAILS("--duration", "demo", "-d", "10sec");
	FAILS("--top 1001 0..1000", "demo", "-n", "1001");
}
END_TEST

START_TEST(test_time_messages)
{
	/* overflow is named as such, not as a malformed time */
	FAILS("--duration 99999999999999999999 out of range", "demo", "-d", "99999999999999999999");
	ck_assert_ptr_null(strstr(err, "want a time"));
	FAILS("--period out of range", "demo", "-p", "5124096h");
	FAILS("--duration out of range", "demo", "-d", "5124095h60m");
	/* combined units, largest first */
	OK("demo", "-d", "1h2m");
	ck_assert_uint_eq(P.duration_ns, 62ULL * 60 * 1000000000ULL);
	OK("demo", "-p", "1s500ms", "--every", "2m30s");
	ck_assert_uint_eq(P.period_ns, 1500000000ULL);
	ck_assert_uint_eq(P.every_ns, 150000000000ULL);
	FAILS("--duration 30m1h want a time such as 1m30s", "demo", "-d", "30m1h");
	FAILS("--duration 1h30 want a time", "demo", "-d", "1h30");
	ck_assert_ptr_null(strstr(err, "out of range"));
}
END_TEST

START_TEST(test_aliases_warn)
{
	char out[512];
	int rc;

	STDERR_OF(out, rc = parse("demo", "--out", "f", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.output, "f");
	ck_assert_ptr_nonnull(strstr(out, "warning: --out is deprecated, use -o (--output)"));
	ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
	STDERR_OF(out, rc = parse("demo", "-u", "1.2.3.4:5", "-J", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(P.udp, "1.2.3.4:5");
	ck_assert_int_eq(P.json, 1);
	ck_assert_ptr_nonnull(strstr(out, "-u is deprecated, use --udp"));
	ck_assert_ptr_nonnull(strstr(out, "-J is deprecated, use -j (--json)"));
	/* the new spellings are silent */
	STDERR_OF(out, rc = parse("demo", "--output", "f", "--udp", "x", "-j", NULL));
	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(out, "");
	/* a hidden own option works */
	OK("demo", "--hidden-udp", "y");
	ck_assert_str_eq(P.udp, "y");
}
END_TEST

START_TEST(test_getopt_errors)
{
	FAILS("--bogus", "demo", "--bogus");
	FAILS("-x", "demo", "-qx");
	FAILS("-x", "demo", "-xq");
	FAILS("-p value", "demo", "-p");
	FAILS("-qp value", "demo", "-qp");
	FAILS("--period value", "demo", "--period");
	FAILS("--json value", "demo", "--json=1");
	FAILS("stray", "demo", "-q", "stray");
	/* options stop at "--" and at the first non-option */
	FAILS("-q", "demo", "--", "-q");
}
END_TEST

/* cliopt_init on a table must fail with a line that mentions words. */
static void bad_table(const struct cliopt *t, const char *words)
{
	struct cliopt_parser ps;
	char *argv[] = { "demo", NULL };

	memset(err, 0, sizeof(err));
	ck_assert_int_eq(cliopt_init(&ps, t, 1, argv, err, sizeof(err)), -EINVAL);
	check_message(words);
}

START_TEST(test_convention_enforced)
{
	/* an own option cannot take a letter: every letter is a common option's */
	bad_table(
	    (const struct cliopt[]){
		{ .id = CLIOPT_OWN, .name = "pid", .letter = 'x', .has_arg = 1 }, { 0 } },
	    "--pid long-only");
	/* a common option keeps its letter and name */
	bad_table((const struct cliopt[]){ { .id = CLIOPT_PERIOD, .letter = 'P' }, { 0 } },
		  "--period");
	/* a letter used with its common meaning cannot be an alias of something else */
	bad_table((const struct cliopt[]){ { .id = CLIOPT_PERIOD },
					   { .id = CLIOPT_PID },
					   { .letter = 'p', .alias_of = CLIOPT_PID },
					   { 0 } },
		  "-p twice");
	bad_table((const struct cliopt[]){ { .id = CLIOPT_OWN, .name = "json" },
					   { .id = CLIOPT_JSON },
					   { 0 } },
		  "--json twice");
	bad_table((const struct cliopt[]){ { .name = "out", .alias_of = CLIOPT_OUTPUT }, { 0 } },
		  "alias");
	bad_table((const struct cliopt[]){ { .id = 'x' }, { 0 } }, "common");
}
END_TEST

START_TEST(test_common_table)
{
	static const int ids[] = { CLIOPT_CPUS,	      CLIOPT_CGROUP,	CLIOPT_PERIOD,
				   CLIOPT_RUNTIME,    CLIOPT_THRESHOLD, CLIOPT_STOP_SINGLE,
				   CLIOPT_STOP_TOTAL, CLIOPT_DURATION,	CLIOPT_PRIORITY,
				   CLIOPT_JSON,	      CLIOPT_OUTPUT,	CLIOPT_TOP,
				   CLIOPT_QUIET,      CLIOPT_VERBOSE,	CLIOPT_HELP,
				   CLIOPT_DOMAIN,     CLIOPT_KEY_FILE,	CLIOPT_GUEST,
				   CLIOPT_PID,	      CLIOPT_JOB,	CLIOPT_CONNECT,
				   CLIOPT_COLLECTOR,  CLIOPT_NODE_ID,	CLIOPT_VERSION };
	const struct cliopt *o;
	size_t i;

	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		o = cliopt_common(ids[i]);
		ck_assert_ptr_nonnull(o);
		ck_assert_ptr_nonnull(o->name);
		ck_assert_ptr_nonnull(o->help);
		/* a letter id is its letter */
		ck_assert_int_eq(o->letter, ids[i] < 128 ? ids[i] : 0);
	}
	ck_assert_str_eq(cliopt_common(CLIOPT_DURATION)->bare_unit, "s");
	ck_assert_ptr_null(cliopt_common(CLIOPT_PERIOD)->bare_unit);
	ck_assert_ptr_null(cliopt_common('x'));
}
END_TEST

START_TEST(test_flags)
{
	int json = 0, quiet = 0, verbose = 0;
	struct cliopt_flags all = { &json, &quiet, &verbose };
	struct cliopt_flags only_json = { &json, NULL, NULL };

	ck_assert_int_eq(cliopt_flag('j', &all), 1);
	ck_assert_int_eq(cliopt_flag('q', &all), 1);
	ck_assert_int_eq(cliopt_flag('v', &all), 1);
	ck_assert_int_eq(cliopt_flag('v', &all), 1);
	ck_assert_int_eq(json, 1);
	ck_assert_int_eq(quiet, 1);
	ck_assert_int_eq(verbose, 2); /* counted */
	ck_assert_int_eq(cliopt_flag('d', &all), 0); /* not a flag */
	quiet = 0;
	ck_assert_int_eq(cliopt_flag('q', &only_json),
			 0); /* a command without -q does not take it */
	ck_assert_int_eq(quiet, 0);
}
END_TEST

START_TEST(test_help)
{
	char buf[2048];
	size_t n = cliopt_help(demo_opts, buf, sizeof(buf));

	ck_assert_uint_eq(n, strlen(buf));
	ck_assert_ptr_nonnull(
	    strstr(buf, "  -p, --period TIME      sampling period (default 1s)\n"));
	ck_assert_ptr_nonnull(strstr(buf, "  -j, --json             JSON output\n"));
	ck_assert_ptr_nonnull(strstr(buf, "      --udp ADDR:PORT    send datagrams\n"));
	ck_assert_ptr_nonnull(strstr(buf, "  -d, --duration TIME"));
	/* --version is every command's, shown right after -h */
	ck_assert_ptr_nonnull(strstr(buf, "  -h, --help             this help\n"
					  "  -V, --version          print the version and exit\n"));
	/* aliases and hidden options are not shown */
	ck_assert_ptr_null(strstr(buf, "--out "));
	ck_assert_ptr_null(strstr(buf, "hidden"));
	ck_assert_ptr_null(strstr(buf, "-J"));
	ck_assert_ptr_null(strstr(buf, "-u,"));
	/* too small a buffer: truncated, the needed length returned */
	ck_assert_uint_eq(cliopt_help(demo_opts, buf, 10), n);
	ck_assert_uint_eq(strlen(buf), 9);
}
END_TEST

/* Help within 80 columns: a long text wrapped at words under its column, a long option on its own line,
 * a text's own line breaks taken as spaces; the exit-code line from the one table, wrapped too. */
START_TEST(test_help_wraps)
{
	static const struct cliopt wide[] = {
		{ .id = OPT_UDP,
		  .name = "udp",
		  .has_arg = 1,
		  .arg = "ADDR:PORT",
		  .help = "send datagrams to the collector at ADDR:PORT, one per interval, sealed "
			  "with\n      the key of --key-file" },
		{ .id = OPT_EVERY,
		  .name = "every-interval",
		  .has_arg = 1,
		  .arg = "TIME",
		  .help = "interval" },
		{ 0 },
	};
	char buf[2048];
	const char *l;

	cliopt_help(wide, buf, sizeof(buf));
	ck_assert_str_eq(
	    buf, "      --udp ADDR:PORT    send datagrams to the collector at ADDR:PORT, one per\n"
		 "                         interval, sealed with the key of --key-file\n"
		 "      --every-interval TIME\n"
		 "                         interval\n");
	cliopt_exit_help(buf, sizeof(buf), 0,
			 CLIOPT_EXIT(EXIT_OK) | CLIOPT_EXIT(EXIT_USAGE) | CLIOPT_EXIT(EXIT_CANNOT) |
			     CLIOPT_EXIT(EXIT_DAMAGED) | CLIOPT_EXIT(EXIT_UNREACHABLE) |
			     CLIOPT_EXIT(EXIT_NODOMAIN) | CLIOPT_EXIT(EXIT_SYMLINK));
	ck_assert_str_eq(
	    buf, "exit: 0 ok, 2 usage, 4 cannot here, 5 damaged or foreign file,\n"
		 "      6 libvirt unreachable, 7 no such domain, 9 output path is a symlink\n");
	for (l = buf; *l; l += strcspn(l, "\n") + 1)
		ck_assert_uint_le(strcspn(l, "\n"), 80);
	cliopt_exit_help(buf, sizeof(buf), 0, 0);
	ck_assert_str_eq(buf, "");
}
END_TEST

/* ---- --version and the program dispatch, run in a child: --version exits ---- */

static int demo_cmd(int argc, char **argv)
{
	struct demo d;
	char e[256];
	int rc = demo_parse(argc, argv, &d, e, sizeof(e));

	if (rc < 0)
		fprintf(stderr, "error: %s\n", e);
	return rc < 0 ? EXIT_USAGE : rc == 1 ? EXIT_OK : 42;
}

static const struct cliopt_cmd demo_cmds[] = {
	{ "demo", "the demo command", demo_cmd },
	{ "other", "another one", demo_cmd },
	{ "third", "a third", demo_cmd },
	{ NULL, NULL, NULL },
};

struct child {
	int status; /* exit code, or -1 when it did not exit */
	char out[4096], err[1024];
};

static void read_all(FILE *f, char *buf, size_t len)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
}

/* cliopt_dispatch("vnoise-demo", demo_cmds, ...) on the NULL-terminated arguments, in a child. */
static void dispatch(struct child *c, const char *arg, ...)
{
	char *argv[16] = { "vnoise-demo" };
	FILE *o = tmpfile(), *e = tmpfile();
	int argc = 1, st;
	va_list ap;
	pid_t pid;

	ck_assert_ptr_nonnull(o);
	ck_assert_ptr_nonnull(e);
	va_start(ap, arg);
	for (; arg && argc < 15; arg = va_arg(ap, const char *))
		argv[argc++] = (char *)arg;
	va_end(ap);
	argv[argc] = NULL;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fileno(o), 1);
		dup2(fileno(e), 2);
		st = cliopt_dispatch("vnoise-demo", demo_cmds, argc, argv);
		fflush(stdout);
		fflush(stderr);
		_exit(st);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	c->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	read_all(o, c->out, sizeof(c->out));
	read_all(e, c->err, sizeof(c->err));
}

START_TEST(test_version)
{
	static const char *const spell[] = { "--version", "-V" };
	struct child c;
	char want[256];
	size_t i;

	snprintf(want, sizeof(want), "vnoise-demo %s\n", version_string());
	for (i = 0; i < 2; i++) {
		/* the program's, and any command's through the common table */
		dispatch(&c, spell[i], NULL);
		ck_assert_int_eq(c.status, EXIT_OK);
		ck_assert_str_eq(c.out, want);
		ck_assert_str_eq(c.err, "");
		dispatch(&c, "demo", "-q", spell[i], "-p", "1s", NULL);
		ck_assert_int_eq(c.status, EXIT_OK);
		ck_assert_str_eq(c.out, want);
		ck_assert_str_eq(c.err, "");
	}
	/* a flag: no value */
	dispatch(&c, "demo", "--version=1", NULL);
	ck_assert_int_eq(c.status, EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(c.err, "'--version' takes no value"));
	/* a command runs as before */
	dispatch(&c, "other", "-q", NULL);
	ck_assert_int_eq(c.status, 42);
}
END_TEST

START_TEST(test_dispatch)
{
	struct child c;

	dispatch(&c, "--help", NULL);
	ck_assert_int_eq(c.status, EXIT_OK);
	ck_assert_str_eq(c.err, "");
	ck_assert_str_eq(c.out, "usage: vnoise-demo COMMAND [options]\n"
				"commands:\n"
				"  demo      the demo command\n"
				"  other     another one\n"
				"  third     a third\n"
				"options:\n"
				"  -h, --help             this help\n"
				"  -V, --version          print the version and exit\n"
				"run 'vnoise-demo COMMAND --help' for the options of a command\n");
	dispatch(&c, "-h", NULL);
	ck_assert_int_eq(c.status, EXIT_OK);
	ck_assert_ptr_nonnull(strstr(c.out, "  third     a third\n"));
	dispatch(&c, "help", NULL);
	ck_assert_int_eq(c.status, EXIT_OK);
	/* no command, an unknown one: one line naming the commands of the table */
	dispatch(&c, NULL);
	ck_assert_int_eq(c.status, EXIT_USAGE);
	ck_assert_str_eq(c.out, "");
	ck_assert_str_eq(c.err, "vnoise-demo: error: no command (want demo, other or third; see "
				"'vnoise-demo --help')\n");
	dispatch(&c, "bogus", "-q", NULL);
	ck_assert_int_eq(c.status, EXIT_USAGE);
	ck_assert_str_eq(c.out, "");
	ck_assert_str_eq(c.err, "vnoise-demo: error: unknown command 'bogus' (want demo, other or "
				"third; see 'vnoise-demo --help')\n");
	/* a command's own errors and help */
	dispatch(&c, "demo", "--bogus", NULL);
	ck_assert_int_eq(c.status, EXIT_USAGE);
	dispatch(&c, "third", "--help", NULL);
	ck_assert_int_eq(c.status, EXIT_OK);
}
END_TEST

static Suite *cliopt_suite(void)
{
	Suite *s = suite_create("cliopt");
	TCase *tc = tcase_create("parse");

	tcase_add_test(tc, test_common_spellings);
	tcase_add_test(tc, test_time_rule);
	tcase_add_test(tc, test_time_messages);
	tcase_add_test(tc, test_aliases_warn);
	tcase_add_test(tc, test_getopt_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("table");
	tcase_add_test(tc, test_convention_enforced);
	tcase_add_test(tc, test_common_table);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_help_wraps);
	tcase_add_test(tc, test_flags);
	suite_add_tcase(s, tc);

	tc = tcase_create("program");
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_dispatch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(cliopt_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
