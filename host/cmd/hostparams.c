/* SPDX-License-Identifier: MIT */
/*
 * hostparams: the parser of vnoise-host's commands on the common option table (cliopt); no side effects
 * beyond the struct and the warning line of a deprecated spelling.
 *
 * Every command accepts every option of the table, and the rules after the parse reject those that do not
 * apply with the reason ("-o is for record only"); the help of a command shows only the options it takes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "dtl.h"
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "cmd/hostparams.h"
#include "export/remotewrite.h"
#include "util/parse.h"

#define MS 1000000ULL
#define S 1000000000ULL

enum {
	OPT_NO_DISPATCH = CLIOPT_OWN,
	OPT_NO_IRQS,
	OPT_QMP,
	OPT_FLOWS,
	OPT_FLOWS_TOP,
	OPT_WIDE,
	OPT_DTL_DETAIL,
	OPT_BATCH,
	OPT_METRICS,
	OPT_HTML,
	OPT_REMOTE_WRITE,
	OPT_GAPS,
	OPT_GUEST_BUDGET,
	OPT_ON_THRESHOLD,
	OPT_ON_END
};

/* The options whose presence the rules check (the "set" bitmask of the parse). */
enum { SET_FLOWS_TOP = 1, SET_DTL_DETAIL = 2 };

/* The commands an option is shown for in their help. */
enum {
	SHOW_TOP = 1 << HCMD_TOP,
	SHOW_RECORD = 1 << HCMD_RECORD,
	SHOW_REPORT = 1 << HCMD_REPORT,
	SHOW_LIST = 1 << HCMD_LIST,
	SHOW_SERVE = 1 << HCMD_SERVE,
	SHOW_LIVE = SHOW_TOP | SHOW_RECORD | SHOW_SERVE,
	SHOW_ALL = SHOW_LIVE | SHOW_REPORT | SHOW_LIST,
};

struct host_opt {
	struct cliopt o;
	unsigned show; /* SHOW_*: 0 for the deprecated aliases */
};

static const struct host_opt host_opts[] = {
	{ { .id = CLIOPT_CONNECT, .help = "libvirt URI (default qemu:///system)" },
	  SHOW_LIVE | SHOW_LIST },
	{ { .id = CLIOPT_DOMAIN,
	    .help = "monitor this domain (repeatable; default every running domain)" },
	  SHOW_LIVE | SHOW_LIST },
	{ { .id = CLIOPT_PERIOD,
	    .help = "statistics period, 10ms..1h (default 1s)",
	    .bare_unit = "s" },
	  SHOW_LIVE },
	{ { .id = CLIOPT_DURATION, .help = "stop after TIME (default: until Ctrl-C)" }, SHOW_LIVE },
	{ { .id = CLIOPT_OUTPUT, .help = "the record file to write (required)" }, SHOW_RECORD },
	{ { .id = CLIOPT_GUEST,
	    .help = "the combined guest + host view: each domain's vnoise guest channel\n"
		    "                         (ivshmem) read, the clocks aligned, hypervisor time "
		    "subtracted\n"
		    "                         from guest noise and attributed (schema "
		    "vnoise.match/1); for\n"
		    "                         report, of a record made with --guest" },
	  SHOW_LIVE | SHOW_REPORT },
	{ { .id = OPT_GUEST_BUDGET,
	    .name = "guest-budget",
	    .has_arg = 1,
	    .arg = "MIB",
	    .help =
		"what one domain's guest records may make vnoise-host hold, in\n"
		"                         MiB (1..65536, default 64): over it they are refused\n"
		"                         and counted as matcher drops (with --guest)" },
	  SHOW_TOP | SHOW_RECORD },
	{ { .id = OPT_FLOWS,
	    .name = "flows",
	    .help = "capture on each domain's tap devices: packets and bytes per flow and\n"
		    "                         period into and out of the guest, next to the "
		    "guest's network\n"
		    "                         noise with --guest (needs root)" },
	  SHOW_LIVE },
	{ { .id = OPT_FLOWS_TOP,
	    .name = "flows-top",
	    .has_arg = 1,
	    .arg = "N",
	    .help = "flows listed per domain and direction (default 10)" },
	  SHOW_LIVE | SHOW_REPORT },
	{ { .id = OPT_DTL_DETAIL,
	    .name = "dtl-detail",
	    .has_arg = 1,
	    .arg = "class|task",
	    .help =
		"causes in each guest's dispatch trace log: class\n"
		"                         (default) names the kind of host activity only, task\n"
		"                         also the host task's comm and pid" },
	  SHOW_LIVE },
	{ { .id = CLIOPT_JSON,
	    .help = "JSON output: vnoise.host/1, the combined view vnoise.match/1,\n"
		    "                         list vnoise.list/1" },
	  SHOW_ALL },
	{ { .id = OPT_BATCH,
	    .name = "batch",
	    .help = "the line output even on a terminal (no interactive screen)" },
	  SHOW_TOP },
	{ { .id = OPT_METRICS,
	    .name = "metrics",
	    .has_arg = 1,
	    .arg = "ADDR:PORT",
	    .help = "serve Prometheus metrics on http://ADDR:PORT/metrics (e.g.\n"
		    "                         127.0.0.1:9464; default: no listener)" },
	  SHOW_SERVE },
	{ { .id = OPT_REMOTE_WRITE,
	    .name = "remote-write",
	    .has_arg = 1,
	    .arg = "URL",
	    .help = "push the metrics every period with Prometheus remote-write to URL\n"
		    "                         (http://ADDR:PORT/api/v1/write)" },
	  SHOW_SERVE },
	{ { .id = OPT_HTML,
	    .name = "html",
	    .has_arg = 1,
	    .arg = "OUT.html",
	    .help = "write a self-contained HTML report with plots" },
	  SHOW_REPORT },
	{ { .id = OPT_GAPS,
	    .name = "gaps",
	    .help = "one JSON line per matched guest gap: vCPU, start (guest\n"
		    "                         time), length, split by class (a record made\n"
		    "                         with --guest)" },
	  SHOW_REPORT },
	{ { .id = CLIOPT_STOP_SINGLE,
	    .help = "a hit: a vCPU preempted for longer than TIME at once (stop, exit 3)" },
	  SHOW_LIVE },
	{ { .id = CLIOPT_STOP_TOTAL,
	    .help = "a hit: a vCPU preempted for more than TIME in a period (stop, exit\n"
		    "                         3)" },
	  SHOW_LIVE },
	{ { .id = OPT_ON_THRESHOLD,
	    .name = "on-threshold",
	    .has_arg = 1,
	    .arg = "ACTION",
	    .help = "on a -s/-S hit: trace[,file=F], signal,num=N,pid=P|parent,\n"
		    "                         shell,command=CMD or continue (repeat: a chain;\n"
		    "                         without continue the run stops)" },
	  SHOW_LIVE },
	{ { .id = OPT_ON_END,
	    .name = "on-end",
	    .has_arg = 1,
	    .arg = "ACTION",
	    .help = "at the end of the run: the same actions" },
	  SHOW_LIVE },
	{ { .id = CLIOPT_TOP,
	    .help = "preemptors, exit reasons and IRQs listed per vCPU (default 5)" },
	  SHOW_LIVE | SHOW_REPORT },
	{ { .id = OPT_WIDE,
	    .name = "wide",
	    .help = "text tables as wide as they need: lists on one line, preemptors on\n"
		    "                         each vCPU's row (default: 80 columns)" },
	  SHOW_LIVE | SHOW_REPORT },
	{ { .id = OPT_NO_DISPATCH,
	    .name = "no-dispatch",
	    .help = "counters only (libvirt, schedstat): no host tracing" },
	  SHOW_LIVE },
	{ { .id = OPT_NO_IRQS,
	    .name = "no-irqs",
	    .help = "no host IRQ/softirq accounting in the dispatch log" },
	  SHOW_LIVE },
	{ { .id = OPT_QMP,
	    .name = "qmp",
	    .help = "map vCPU threads with QMP query-cpus-fast (taints the domain)" },
	  SHOW_LIVE | SHOW_LIST },
	{ { .id = CLIOPT_QUIET }, SHOW_ALL },
	{ { .id = CLIOPT_VERBOSE }, SHOW_ALL },
	{ { .id = CLIOPT_HELP }, SHOW_ALL },
	/* -c is --cpus elsewhere; vnoise-host has no --cpus, so it stays one release as --connect */
	{ { .letter = 'c', .alias_of = CLIOPT_CONNECT }, 0 },
};

#define NOPTS (sizeof(host_opts) / sizeof(host_opts[0]))

_Static_assert(NOPTS <= CLIOPT_MAX, "host_opts does not fit a cliopt table");

/* The cliopt table of the options shown for the commands in show (SHOW_ALL: every option, aliases too). */
static void host_table(unsigned show, struct cliopt table[NOPTS + 1])
{
	size_t i, n = 0;

	for (i = 0; i < NOPTS; i++)
		if (show == SHOW_ALL || (host_opts[i].show & show))
			table[n++] = host_opts[i].o;
	table[n] = (struct cliopt){ 0 };
}

static const char *const usage_head[] = {
	[HCMD_TOP] = "usage: vnoise-host top [options]\n"
		     "A live table per domain and vCPU every period: steal, out-time, preemptors,\n"
		     "exits.\n",
	[HCMD_RECORD] = "usage: vnoise-host record -o FILE [options]\n"
			"What top shows, written to FILE; prints the run's summary at the end.\n",
	[HCMD_REPORT] = "usage: vnoise-host report FILE [options]\n"
			"The views of a record file.\n",
	[HCMD_LIST] = "usage: vnoise-host list [options]\n"
		      "The domains, their QEMU pid and vCPU thread ids, shmem and tap devices.\n",
	[HCMD_SERVE] =
	    "usage: vnoise-host serve [--metrics ADDR:PORT] [options]\n"
	    "The long-running host view (the systemd service's mode): publishes every\n"
	    "domain's dispatch trace log, serves Prometheus metrics with --metrics, and\n"
	    "prints one JSON line per period with --json.\n",
};

static const char time_note[] = CLIOPT_TIME_LINE;

/* The exit codes each command can give (cli/exitcode.h; docs/CLI.md). */
static unsigned exits_of(enum host_cmd cmd)
{
	unsigned m = CLIOPT_EXITS_COMMON;

	if (cmd == HCMD_REPORT)
		return m | CLIOPT_EXIT(EXIT_DAMAGED) | CLIOPT_EXIT(EXIT_SYMLINK);
	m |= CLIOPT_EXIT(EXIT_UNREACHABLE) | CLIOPT_EXIT(EXIT_NODOMAIN);
	if (cmd != HCMD_LIST)
		m |= CLIOPT_EXIT(EXIT_STOPPED);
	return cmd == HCMD_RECORD ? m | CLIOPT_EXIT(EXIT_SYMLINK) : m;
}

size_t hostparams_usage(enum host_cmd cmd, char *buf, size_t len)
{
	struct cliopt table[NOPTS + 1];
	size_t n;
	int w;

	host_table(1u << cmd, table);
	w = snprintf(buf, len, "%s", usage_head[cmd]);
	n = w > 0 ? (size_t)w : 0;
	n += cliopt_help(table, n < len ? buf + n : NULL, n < len ? len - n : 0);
	if (cmd == HCMD_TOP || cmd == HCMD_RECORD || cmd == HCMD_SERVE) {
		w = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, "%s", time_note);
		n += w > 0 ? (size_t)w : 0;
	}
	return cliopt_exit_help(buf, len, n, exits_of(cmd));
}

static void set_defaults(struct host_params *p)
{
	memset(p, 0, sizeof(*p));
	p->period_ns = 1 * S;
	p->top_n = 5;
	p->flows_top = 10;
	p->dtl_detail = VN_DTL_DETAIL_CLASS;
}

static int command_of(const char *name, enum host_cmd *cmd, char *err, size_t errlen)
{
	static const char *const names[] = { [HCMD_TOP] = "top",
					     [HCMD_RECORD] = "record",
					     [HCMD_REPORT] = "report",
					     [HCMD_LIST] = "list",
					     [HCMD_SERVE] = "serve" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i])) {
			*cmd = (enum host_cmd)i;
			return 0;
		}
	log_reason(err, errlen, "unknown command '%s' (want top, record, report, list or serve)",
		   name);
	return -EINVAL;
}

/* The options with a value that is checked: --connect, --domain, the times and the counts. */
static int take_value(struct cliopt_parser *ps, int c, struct host_params *p, int *set)
{
	const char *a = ps->arg;

	switch (c) {
	case CLIOPT_CONNECT:
		if (!*a)
			return cliopt_fail(ps, "invalid --connect '': want a libvirt URI");
		p->uri = a;
		return 0;
	case CLIOPT_DOMAIN:
		if (!*a || strlen(a) > 127)
			return cliopt_fail(ps, "invalid --domain '%s': want a domain name", a);
		if (p->ndomains == HOSTPARAMS_MAX_DOMAINS)
			return cliopt_fail(ps, "too many --domain (at most %d)",
					   HOSTPARAMS_MAX_DOMAINS);
		p->domains[p->ndomains++] = a;
		return 0;
	case CLIOPT_PERIOD:
		if (cliopt_time(ps, &p->period_ns))
			return -EINVAL;
		if (p->period_ns < 10 * MS || p->period_ns > 3600 * S)
			return cliopt_fail(ps, "invalid --period '%s': want 10ms..1h", a);
		return 0;
	case CLIOPT_DURATION:
		if (cliopt_time(ps, &p->duration_ns))
			return -EINVAL;
		if (!p->duration_ns || p->duration_ns > 31ULL * 24 * 3600 * S)
			return cliopt_fail(
			    ps,
			    "invalid --duration '%s': want > 0 and at most 31 days (e.g. 10s, 2m)",
			    a);
		return 0;
	case CLIOPT_OUTPUT:
		if (!*a)
			return cliopt_fail(ps, "invalid --output '': want a file name");
		p->output = a;
		return 0;
	case CLIOPT_STOP_SINGLE:
	case CLIOPT_STOP_TOTAL: {
		uint64_t *ns = c == CLIOPT_STOP_SINGLE ? &p->stop_single_ns : &p->stop_total_ns;

		if (cliopt_time(ps, ns))
			return -EINVAL;
		if (!*ns)
			return cliopt_fail(ps, "invalid %s '%s': want a time > 0", cliopt_name(ps),
					   a);
		return 0;
	}
	case CLIOPT_TOP:
		return cliopt_int(ps, 1, 1000, &p->top_n);
	case OPT_FLOWS_TOP:
		*set |= SET_FLOWS_TOP;
		return cliopt_int(ps, 1, 1000, &p->flows_top);
	case OPT_METRICS: {
		struct sockaddr_storage ss;
		socklen_t sl;

		if (parse_sockaddr(a, 0, &ss, &sl))
			return cliopt_fail(ps, "invalid --metrics '%s': " PARSE_SOCKADDR_WANT, a);
		p->metrics = a;
		return 0;
	}
	case OPT_REMOTE_WRITE: {
		char why[128];

		if (remotewrite_url_check(a, why, sizeof(why)))
			return cliopt_fail(ps, "invalid --remote-write '%s': %s", a, why);
		p->remote_write = a;
		return 0;
	}
	case OPT_HTML:
		if (!*a)
			return cliopt_fail(ps, "invalid --html '': want a file name");
		p->html = a;
		return 0;
	case OPT_GUEST_BUDGET: {
		int mib;

		if (parse_int(a, 1, 65536, &mib))
			return cliopt_fail(ps, "invalid --guest-budget '%s': want MiB, 1..65536",
					   a);
		p->guest_budget = (uint64_t)mib << 20;
		return 0;
	}
	case OPT_DTL_DETAIL:
		*set |= SET_DTL_DETAIL;
		if (!strcmp(a, "class"))
			p->dtl_detail = VN_DTL_DETAIL_CLASS;
		else if (!strcmp(a, "task"))
			p->dtl_detail = VN_DTL_DETAIL_TASK;
		else
			return cliopt_fail(ps, "invalid --dtl-detail '%s': want class or task", a);
		return 0;
	}
	return cliopt_fail(ps, "hostparams: option %d not handled", c);
}

/* One option: 0, 1 for --help, or -EINVAL with the message in err. */
static int take_option(struct cliopt_parser *ps, int c, struct host_params *p, int *set)
{
	const struct cliopt_flags flags = { &p->json, &p->quiet, &p->verbose };

	if (cliopt_flag(c, &flags))
		return 0;
	switch (c) {
	case OPT_NO_DISPATCH:
		p->no_dispatch = 1;
		return 0;
	case OPT_NO_IRQS:
		p->no_irqs = 1;
		return 0;
	case OPT_QMP:
		p->qmp = 1;
		return 0;
	case CLIOPT_GUEST:
		p->guest = 1;
		return 0;
	case OPT_FLOWS:
		p->flows = 1;
		return 0;
	case OPT_WIDE:
		p->wide = 1;
		return 0;
	case OPT_BATCH:
		p->batch = 1;
		return 0;
	case OPT_GAPS:
		p->gaps = 1;
		return 0;
	case OPT_ON_THRESHOLD:
	case OPT_ON_END: {
		char why[256];

		if (actions_parse(c == OPT_ON_END ? &p->on_end : &p->on_threshold, cliopt_name(ps),
				  ps->arg, why, sizeof(why)))
			return cliopt_fail(ps, "%s", why);
		return 0;
	}
	case CLIOPT_HELP:
		return 1;
	}
	return take_value(ps, c, p, set);
}

/* The options of each command once parsed: what a command does not take is named with the reason. */
static int check_rules(struct cliopt_parser *ps, const struct host_params *p, int set)
{
	if (p->cmd == HCMD_RECORD && !p->output)
		return cliopt_fail(ps, "record needs -o FILE");
	if (p->cmd != HCMD_RECORD && p->output)
		return cliopt_fail(ps, "-o is for record only");
	if (p->batch && p->cmd != HCMD_TOP)
		return cliopt_fail(ps, "--batch is for top only");
	if (p->metrics && p->cmd != HCMD_SERVE)
		return cliopt_fail(ps, "--metrics is for serve only");
	if (p->remote_write && p->cmd != HCMD_SERVE)
		return cliopt_fail(ps, "--remote-write is for serve only");
	if (p->html && p->cmd != HCMD_REPORT)
		return cliopt_fail(ps, "--html is for report only (of a record file)");
	if (p->html && p->json)
		return cliopt_fail(ps, "--html and --json: choose one");
	if (p->gaps && p->cmd != HCMD_REPORT)
		return cliopt_fail(ps, "--gaps is for report only (of a record file)");
	if (p->gaps && (p->json || p->html || p->wide))
		return cliopt_fail(ps, "--gaps and %s: choose one",
				   p->json   ? "--json"
				   : p->html ? "--html"
					     : "--wide");
	if ((p->cmd == HCMD_LIST || p->cmd == HCMD_REPORT) &&
	    (p->stop_single_ns || p->stop_total_ns || p->on_threshold.n || p->on_end.n))
		return cliopt_fail(ps,
				   "-s, -S, --on-threshold and --on-end are for top, record and "
				   "serve");
	if (p->on_threshold.n && !p->stop_single_ns && !p->stop_total_ns)
		return cliopt_fail(ps, "--on-threshold needs a threshold: -s/--stop-single TIME or "
				       "-S/--stop-total TIME");
	if (p->cmd == HCMD_LIST && p->guest)
		return cliopt_fail(ps, "--guest is for top, record and report");
	if (p->guest_budget && (!p->guest || p->cmd == HCMD_REPORT))
		return cliopt_fail(ps, "--guest-budget is for top and record with --guest");
	if ((p->cmd == HCMD_LIST || p->cmd == HCMD_REPORT) && (set & SET_DTL_DETAIL))
		return cliopt_fail(ps, "--dtl-detail is for top, record and serve");
	if (p->cmd == HCMD_LIST && (p->flows || (set & SET_FLOWS_TOP)))
		return cliopt_fail(ps, "--flows and --flows-top are for top, record and serve");
	if (p->cmd != HCMD_LIST && p->cmd != HCMD_REPORT && (set & SET_FLOWS_TOP) && !p->flows)
		return cliopt_fail(ps, "--flows-top needs --flows");
	if (p->cmd != HCMD_REPORT)
		return 0;
	if (!p->input)
		return cliopt_fail(ps, "report needs a FILE");
	if (p->ndomains || p->uri || p->duration_ns || p->no_dispatch || p->qmp)
		return cliopt_fail(ps, "report reads a file: --connect, --domain, --duration, "
				       "--no-dispatch and --qmp do not apply");
	if (p->flows)
		return cliopt_fail(ps,
				   "report reads a file: --flows does not apply (recorded flows "
				   "are shown; --flows-top N limits them)");
	return 0;
}

/*
 * The options up to the end, report's FILE among them: options may follow FILE, except after "--" which
 * makes FILE the last argument. 0, 1 for --help or -EINVAL.
 */
static int take_options(struct cliopt_parser *ps, int argc, char **argv, struct host_params *p,
			int *set)
{
	int c, rc, dashdash;

	for (;;) {
		c = cliopt_next(ps);
		if (c < 0)
			return c;
		if (c > 0) {
			rc = take_option(ps, c, p, set);
			if (rc)
				return rc;
			continue;
		}
		if (p->cmd != HCMD_REPORT || p->input || optind >= argc)
			break;
		dashdash = !strcmp(argv[optind - 1], "--");
		p->input = argv[optind++];
		if (dashdash)
			break;
	}
	if (optind < argc)
		return cliopt_fail(ps, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int hostparams_parse(int argc, char **argv, struct host_params *p, char *err, size_t errlen)
{
	struct cliopt table[NOPTS + 1];
	struct cliopt_parser ps;
	int rc, set = 0;

	set_defaults(p);
	if (argc < 1) {
		log_reason(err, errlen, "missing command");
		return -EINVAL;
	}
	rc = command_of(argv[0], &p->cmd, err, errlen);
	if (rc)
		return rc;
	host_table(SHOW_ALL, table);
	rc = cliopt_init(&ps, table, argc, argv, err, errlen);
	if (!rc)
		rc = take_options(&ps, argc, argv, p, &set);
	if (!rc)
		rc = check_rules(&ps, p, set);
	return rc;
}
