/* SPDX-License-Identifier: MIT */
/*
 * params: the measuring commands' parser, built on the common option table (cli/cliopt.h); no side effects
 * beyond the struct.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "measure/params.h"
#include "util/parse.h"

enum {
	OPT_HELPER = CLIOPT_OWN,
	OPT_NOHC,
	OPT_HIST,
	OPT_WIDE,
	OPT_HTML,
	OPT_GAPS,
	OPT_FORCE,
	OPT_BATCH,
	OPT_BUCKET,
	OPT_ENTRIES,
	OPT_ON_THRESHOLD,
	OPT_ON_END
};

/* The options of measure, top, hist, record and report (report uses --json, --top and --hist). */
static const struct cliopt opts[] = {
	{ .id = CLIOPT_CPUS, .help = "CPUs to measure: 0,2-3 or all (default all online)" },
	{ .id = CLIOPT_PERIOD, .help = "sampling period (default 1s)" },
	{ .id = CLIOPT_RUNTIME, .help = "sampler runtime per period (default = period)" },
	{ .id = CLIOPT_THRESHOLD, .help = "smallest gap counted as noise (default 5us)" },
	{ .id = CLIOPT_DURATION },
	{ .id = CLIOPT_STOP_SINGLE, .help = "stop when one gap exceeds TIME (lead-up, exit 3)" },
	{ .id = CLIOPT_STOP_TOTAL },
	{ .id = CLIOPT_PRIORITY, .help = "other (default), fifo:N or rr:N for the samplers" },
	{ .id = CLIOPT_JSON, .help = "JSON output (schema vnoise.measure/1)" },
	{ .id = CLIOPT_TOP, .help = "noise sources listed per CPU (default 10)" },
	{ .id = CLIOPT_OUTPUT },
	{ .id = OPT_HELPER,
	  .name = "helper",
	  .has_arg = 1,
	  .arg = "MODE",
	  .help = "auto (default), bpf (eBPF or fail), proc (counters)" },
	{ .id = OPT_NOHC, .name = "no-hypercall", .help = "do not trace KVM hypercall wrappers" },
	{ .id = OPT_HIST, .name = "hist", .help = "" }, /* report --hist */
	{ .id = OPT_WIDE,
	  .name = "wide",
	  .help = "the full text tables (one row per CPU, over 80 columns)" },
	{ .id = OPT_HTML,
	  .name = "html",
	  .has_arg = 1,
	  .arg = "OUT.html",
	  .help = "write a self-contained HTML report with plots" },
	{ .id = OPT_GAPS,
	  .name = "gaps",
	  .help = "one JSON line per gap: CPU, start, length, split" },
	{ .id = OPT_FORCE,
	  .name = "force",
	  .help = "measure CPUs another vnoise sampler is on, marked" },
	{ .id = OPT_BUCKET,
	  .name = "bucket-size",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "rows of this width from 0 (default 4 an octave from\n"
		  "                         the threshold)" },
	{ .id = OPT_ENTRIES,
	  .name = "entries",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "at most N rows, the rest in the 'over' row (default\n"
		  "                         256 with --bucket-size, else all)" },
	{ .id = OPT_ON_THRESHOLD,
	  .name = "on-threshold",
	  .has_arg = 1,
	  .arg = "ACTION",
	  .help = "on a -s/-S hit: trace[,file=F], signal,num=N,pid=P|\n"
		  "                         parent, shell,command=CMD or continue (repeat:\n"
		  "                         a chain; without continue the run stops)" },
	{ .id = OPT_ON_END,
	  .name = "on-end",
	  .has_arg = 1,
	  .arg = "ACTION",
	  .help = "at the end of the run: the same actions" },
	{ .id = OPT_BATCH,
	  .name = "batch",
	  .help = "a stream of tables, not the screen (as in a pipe)" },
	{ .id = CLIOPT_QUIET },
	{ .id = CLIOPT_VERBOSE },
	{ .id = CLIOPT_HELP },
	{ 0 },
};

/* What each command's help leaves out: the options it refuses, or has no use for (report). */
static int not_for(enum vn_cmd cmd, int id)
{
	if (id == OPT_BATCH)
		return cmd != CMD_TOP;
	if (id == OPT_ON_THRESHOLD || id == OPT_ON_END)
		return cmd == CMD_REPORT;
	if (id == OPT_BUCKET || id == OPT_ENTRIES)
		return cmd != CMD_HIST && cmd != CMD_REPORT;
	if (cmd == CMD_HIST && id == CLIOPT_TOP) /* hist lists no sources */
		return 1;
	switch (cmd) {
	case CMD_MEASURE:
		return id == CLIOPT_OUTPUT || id == OPT_HTML || id == OPT_GAPS;
	case CMD_TOP:
	case CMD_HIST:
		return id == CLIOPT_OUTPUT || id == CLIOPT_JSON || id == OPT_HTML || id == OPT_GAPS;
	case CMD_RECORD:
		return id == OPT_HTML || id == OPT_GAPS;
	default: /* report FILE: the views of a file */
		return id != CLIOPT_JSON && id != CLIOPT_TOP && id != OPT_HIST && id != OPT_WIDE &&
		       id != OPT_HTML && id != OPT_GAPS && id != CLIOPT_HELP;
	}
}

static const char *const usage_line[] = {
	[CMD_MEASURE] = "usage: vnoise-guest measure [options]\n"
			"Measure the noise on CPUs; at the end a table per CPU and its sources.\n",
	[CMD_TOP] =
	    "usage: vnoise-guest top [options]\n"
	    "Measure; every period a screen of the last period per CPU (--batch: tables).\n",
	[CMD_HIST] = "usage: vnoise-guest hist [options]\n"
		     "Measure; at the end the histogram of noise sample durations, per class.\n",
	[CMD_RECORD] = "usage: vnoise-guest record -o FILE [options]\n"
		       "Measure and record every sample and event into FILE (see report).\n",
	[CMD_REPORT] = "usage: vnoise-guest report FILE [options]\n"
		       "The views of a record file, as the live run showed them.\n",
};

/* The exit codes each command can give (cli/exitcode.h; docs/CLI.md). */
static unsigned exits_of(enum vn_cmd cmd)
{
	unsigned m = CLIOPT_EXITS_COMMON;

	if (cmd == CMD_REPORT)
		return m | CLIOPT_EXIT(EXIT_DAMAGED) | CLIOPT_EXIT(EXIT_SYMLINK);
	m |= CLIOPT_EXIT(EXIT_STOPPED) | CLIOPT_EXIT(EXIT_CONFLICT);
	return cmd == CMD_RECORD ? m | CLIOPT_EXIT(EXIT_SYMLINK) : m;
}

const char *params_usage(enum vn_cmd cmd)
{
	static char usage[CMD_REPORT + 1][4096];
	struct cliopt sel[sizeof(opts) / sizeof(opts[0])];
	size_t i, k = 0;
	int n;

	if (cmd < CMD_MEASURE || cmd > CMD_REPORT)
		cmd = CMD_MEASURE;
	if (usage[cmd][0])
		return usage[cmd];
	for (i = 0; opts[i].id; i++)
		if (!not_for(cmd, opts[i].id))
			sel[k++] = opts[i];
	memset(&sel[k], 0, sizeof(sel[k]));
	for (i = 0; i < k; i++) {
		if (sel[i].id == OPT_HIST && cmd == CMD_REPORT)
			sel[i].help = "the histogram view of the file";
		else if (sel[i].id == CLIOPT_OUTPUT)
			sel[i].help = "the file to write (required)";
	}
	n = snprintf(usage[cmd], sizeof(usage[cmd]), "%s%s", usage_line[cmd],
		     cmd == CMD_REPORT ? "" : CLIOPT_TIME_LINE);
	n += (int)cliopt_help(sel, usage[cmd] + n, sizeof(usage[cmd]) - (size_t)n);
	cliopt_exit_help(usage[cmd], sizeof(usage[cmd]), (size_t)n, exits_of(cmd));
	return usage[cmd];
}

static const struct {
	const char *n;
	enum vn_cmd c;
} cmds[] = { { "measure", CMD_MEASURE },
	     { "top", CMD_TOP },
	     { "hist", CMD_HIST },
	     { "record", CMD_RECORD },
	     { "report", CMD_REPORT } };

const char *params_cmd_name(enum vn_cmd cmd)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (cmds[i].c == cmd)
			return cmds[i].n;
	return "measure";
}

static int cmd_of(const char *name, enum vn_cmd *cmd)
{
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(name, cmds[i].n)) {
			*cmd = cmds[i].c;
			return 0;
		}
	return -EINVAL;
}

/* The --cpus value: a CPU list or "all". */
static int parse_cpus(struct cliopt_parser *ps, struct measure_params *p)
{
	if (!strcmp(ps->arg, "all")) {
		p->cpus_all = 1;
		p->ncpus = 0;
		return 0;
	}
	if (parse_cpulist(ps->arg, p->cpus, PARAMS_MAX_CPUS, PARAMS_MAX_CPUS, &p->ncpus))
		return cliopt_fail(ps, "invalid --cpus '%s': want a list like 0,2-3 or 'all'",
				   ps->arg);
	p->cpus_all = 0;
	return 0;
}

static int parse_helper(struct cliopt_parser *ps, struct measure_params *p)
{
	if (!strcmp(ps->arg, "auto"))
		p->helper = HELPER_AUTO;
	else if (!strcmp(ps->arg, "bpf"))
		p->helper = HELPER_BPF;
	else if (!strcmp(ps->arg, "proc"))
		p->helper = HELPER_PROC;
	else
		return cliopt_fail(ps, "invalid --helper '%s': want auto, bpf or proc", ps->arg);
	return 0;
}

/* ps->arg as a TIME within [min_ns, max_ns]; else the option's line with want. */
static int time_in(struct cliopt_parser *ps, uint64_t min_ns, uint64_t max_ns, const char *want,
		   uint64_t *ns)
{
	uint64_t v;
	int rc = cliopt_time(ps, &v);

	if (rc)
		return rc;
	if (v < min_ns || v > max_ns)
		return cliopt_fail(ps, "invalid %s '%s': want %s", cliopt_name(ps), ps->arg, want);
	*ns = v;
	return 0;
}

/* The times of the measuring commands. */
static int parse_time_opt(struct cliopt_parser *ps, int c, struct measure_params *p)
{
	switch (c) {
	case CLIOPT_PERIOD:
		return time_in(ps, 1000, 10000000000ULL, "1us..10s", &p->period_ns);
	case CLIOPT_RUNTIME:
		return time_in(ps, 1000, UINT64_MAX, ">= 1us", &p->runtime_ns);
	case CLIOPT_THRESHOLD:
		return time_in(ps, 1, 1000000000ULL, "1ns..1s", &p->threshold_ns);
	case CLIOPT_DURATION:
		return time_in(ps, 1, 31ULL * 24 * 3600 * 1000000000ULL,
			       "> 0 and at most 31 days (e.g. 10s, 500ms, 2m)", &p->duration_ns);
	case CLIOPT_STOP_SINGLE:
		return time_in(ps, 1, UINT64_MAX, "a time > 0", &p->stop_single_ns);
	default:
		return time_in(ps, 1, UINT64_MAX, "a time > 0", &p->stop_total_ns);
	}
}

/* One option into p; 1 for --help. */
static int parse_opt(struct cliopt_parser *ps, int c, struct measure_params *p, int *runtime_set)
{
	const struct cliopt_flags flags = { &p->json, &p->quiet, &p->verbose };

	if (cliopt_flag(c, &flags))
		return 0;
	switch (c) {
	case CLIOPT_CPUS:
		return parse_cpus(ps, p);
	case CLIOPT_RUNTIME:
		*runtime_set = 1;
		/* fall through */
	case CLIOPT_PERIOD:
	case CLIOPT_THRESHOLD:
	case CLIOPT_DURATION:
	case CLIOPT_STOP_SINGLE:
	case CLIOPT_STOP_TOTAL:
		return parse_time_opt(ps, c, p);
	case CLIOPT_PRIORITY:
		return cliopt_priority(ps, &p->policy, &p->prio);
	case CLIOPT_TOP:
		p->top_set = 1;
		return cliopt_int(ps, 0, 1000, &p->top_n);
	case CLIOPT_OUTPUT:
		p->output = ps->arg;
		return 0;
	case OPT_HELPER:
		return parse_helper(ps, p);
	case OPT_NOHC:
		p->no_hcall = 1;
		return 0;
	case OPT_HIST:
		p->report_hist = 1;
		return 0;
	case OPT_FORCE:
		p->force = 1;
		return 0;
	case OPT_BATCH:
		p->batch = 1;
		return 0;
	case OPT_BUCKET:
		return time_in(ps, 1, 1000000000ULL, "1ns..1s", &p->bucket_ns);
	case OPT_ENTRIES:
		return cliopt_int(ps, 1, 10000, &p->entries);
	case OPT_WIDE:
		p->wide = 1;
		return 0;
	case OPT_HTML:
		if (!*ps->arg)
			return cliopt_fail(ps, "invalid --html '': want a file name");
		p->html = ps->arg;
		return 0;
	case OPT_GAPS:
		p->report_gaps = 1;
		return 0;
	case OPT_ON_THRESHOLD:
	case OPT_ON_END: {
		char why[256];

		if (actions_parse(c == OPT_ON_END ? &p->on_end : &p->on_threshold, cliopt_name(ps),
				  ps->arg, why, sizeof(why)))
			return cliopt_fail(ps, "%s", why);
		return 0;
	}
	default: /* CLIOPT_HELP */
		return 1;
	}
}

/* What the command needs once every option is read. */
static int check_command(struct cliopt_parser *ps, int argc, char **argv, struct measure_params *p,
			 int runtime_set)
{
	if (p->batch && p->cmd != CMD_TOP)
		return cliopt_fail(ps, "--batch is for top only");
	if ((p->bucket_ns || p->entries) && p->cmd != CMD_HIST && !p->report_hist)
		return cliopt_fail(ps, "--%s is for hist (and report --hist) only",
				   p->bucket_ns ? "bucket-size" : "entries");
	if (p->cmd == CMD_HIST && p->top_set)
		return cliopt_fail(ps, "--top is not for hist (it lists no sources)");
	if (p->cmd == CMD_REPORT) {
		if (!p->input && optind == argc - 1)
			p->input = argv[optind++];
		if (!p->input || optind != argc)
			return cliopt_fail(ps, "report needs exactly one FILE");
		if (p->output)
			return cliopt_fail(ps, "-o is for record only");
		if (p->force)
			return cliopt_fail(
			    ps, "--force is for the measuring commands (a report samples nothing)");
		if (p->wide && p->json && !p->report_hist)
			return cliopt_fail(ps, "--wide is for the text views, not --json");
		if (p->html && (p->json || p->report_hist))
			return cliopt_fail(ps, "--html and %s: choose one",
					   p->json ? "--json" : "--hist");
		if (p->on_threshold.n || p->on_end.n)
			return cliopt_fail(ps, "--on-threshold and --on-end are for the measuring "
					       "commands (a report measures nothing)");
		if (p->report_gaps && (p->json || p->report_hist || p->html || p->wide))
			return cliopt_fail(ps, "--gaps and %s: choose one",
					   p->json	    ? "--json"
					   : p->report_hist ? "--hist"
					   : p->html	    ? "--html"
							    : "--wide");
		return 0;
	}
	if (p->html)
		return cliopt_fail(ps, "--html is for report only (of a record file)");
	if (p->on_threshold.n && !p->stop_single_ns && !p->stop_total_ns)
		return cliopt_fail(ps, "--on-threshold needs a threshold: -s/--stop-single TIME or "
				       "-S/--stop-total TIME");
	if (p->report_gaps)
		return cliopt_fail(ps, "--gaps is for report only (of a record file)");
	if (optind != argc)
		return cliopt_fail(ps, "unexpected argument '%s'", argv[optind]);
	if (!runtime_set)
		p->runtime_ns = p->period_ns;
	if (p->runtime_ns > p->period_ns)
		return cliopt_fail(ps, "--runtime must not exceed --period");
	if (p->cmd == CMD_RECORD && !p->output)
		return cliopt_fail(ps, "record needs -o FILE");
	if (p->cmd != CMD_RECORD && p->output)
		return cliopt_fail(ps, "-o is for record only");
	if (p->json && (p->cmd == CMD_TOP || p->cmd == CMD_HIST))
		return cliopt_fail(ps, "--json is not available for %s (use measure --json)",
				   p->cmd == CMD_TOP ? "top" : "hist");
	if (p->wide && p->json)
		return cliopt_fail(ps, "--wide is for the text views, not --json");
	return 0;
}

int params_parse(int argc, char **argv, struct measure_params *p, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	int c, rc, runtime_set = 0;

	memset(p, 0, sizeof(*p));
	p->cpus_all = 1;
	p->period_ns = 1000000000ULL;
	p->threshold_ns = 5000;
	p->policy = SCHED_OTHER;
	p->top_n = 10;
	if (argc < 1 || cmd_of(argv[0], &p->cmd)) {
		log_reason(err, errlen, "unknown command '%s'", argc ? argv[0] : "");
		return -EINVAL;
	}
	rc = cliopt_init(&ps, opts, argc, argv, err, errlen);
	while (!rc) {
		c = cliopt_next(&ps);
		if (c < 0)
			return c;
		/* report FILE [options]: options may also follow the FILE */
		if (!c && p->cmd == CMD_REPORT && !p->input && optind < argc &&
		    strcmp(argv[optind - 1], "--")) {
			p->input = argv[optind++];
			continue;
		}
		if (!c)
			return check_command(&ps, argc, argv, p, runtime_set);
		rc = parse_opt(&ps, c, p, &runtime_set);
	}
	return rc;
}
