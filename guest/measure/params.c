/* SPDX-License-Identifier: MIT */
/* params: getopt_long based parser of the measuring commands; no side effects beyond the struct. */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include "measure/params.h"
#include "util/parse.h"

static const char usage_measure[] =
    "usage: vnoise-guest {measure|top|hist|record} [options]\n"
    "  -c, --cpus LIST        CPUs to measure: 0,2-3 or all (default all online)\n"
    "  -p, --period TIME      sampling period (default 1s; unit us when none)\n"
    "  -r, --runtime TIME     sampler runtime per period (default = period)\n"
    "  -T, --threshold TIME   smallest gap counted as noise (default 5us)\n"
    "  -d, --duration TIME    stop after TIME (default: until Ctrl-C; unit s when none)\n"
    "  -s, --stop-single TIME stop when one gap exceeds TIME, print its lead-up, exit 3\n"
    "  -S, --stop-total TIME  stop when a CPU's noise exceeds TIME, exit 3\n"
    "  -P, --priority POL     other (default), fifo:N or rr:N for the samplers\n"
    "  -j, --json             JSON output (schema vnoise.measure/1)\n"
    "  -n, --top N            noise sources listed per CPU (default 10)\n"
    "  -o, --output FILE      record: file to write\n"
    "      --helper MODE      auto (default), bpf (fail without eBPF) or proc (counters only)\n"
    "      --no-hypercall     do not trace KVM hypercall wrappers\n"
    "  -q, --quiet            no progress messages;  -v, --verbose  more\n";

static const char usage_report[] = "usage: vnoise-guest report FILE [--json] [--top N] [--hist]\n";

const char *params_usage(enum vn_cmd cmd)
{
	return cmd == CMD_REPORT ? usage_report : usage_measure;
}

static int cmd_of(const char *name, enum vn_cmd *cmd)
{
	static const struct {
		const char *n;
		enum vn_cmd c;
	} cmds[] = { { "measure", CMD_MEASURE },
		     { "top", CMD_TOP },
		     { "hist", CMD_HIST },
		     { "record", CMD_RECORD },
		     { "report", CMD_REPORT } };
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(name, cmds[i].n)) {
			*cmd = cmds[i].c;
			return 0;
		}
	return -EINVAL;
}

#define FAIL(...)                                   \
	do {                                        \
		snprintf(err, errlen, __VA_ARGS__); \
		return -EINVAL;                     \
	} while (0)

int params_parse(int argc, char **argv, struct measure_params *p, char *err, size_t errlen)
{
	enum { OPT_HELPER = 256, OPT_NOHC, OPT_HIST };
	static const struct option opts[] = { { "cpus", required_argument, 0, 'c' },
					      { "period", required_argument, 0, 'p' },
					      { "runtime", required_argument, 0, 'r' },
					      { "threshold", required_argument, 0, 'T' },
					      { "duration", required_argument, 0, 'd' },
					      { "stop-single", required_argument, 0, 's' },
					      { "stop-total", required_argument, 0, 'S' },
					      { "priority", required_argument, 0, 'P' },
					      { "json", no_argument, 0, 'j' },
					      { "top", required_argument, 0, 'n' },
					      { "output", required_argument, 0, 'o' },
					      { "helper", required_argument, 0, OPT_HELPER },
					      { "no-hypercall", no_argument, 0, OPT_NOHC },
					      { "quiet", no_argument, 0, 'q' },
					      { "verbose", no_argument, 0, 'v' },
					      { "help", no_argument, 0, 'h' },
					      { "hist", no_argument, 0, OPT_HIST },
					      { 0, 0, 0, 0 } };
	int c, runtime_set = 0, rc, cur;

	memset(p, 0, sizeof(*p));
	p->cpus_all = 1;
	p->period_ns = 1000000000ULL;
	p->threshold_ns = 5000;
	p->policy = SCHED_OTHER;
	p->top_n = 10;
	if (argc < 1 || cmd_of(argv[0], &p->cmd))
		FAIL("unknown command '%s'", argc ? argv[0] : "");
	optind = 0;
	opterr = 0;
	for (;;) {
		/* the argument getopt looks at: an error may be in the middle of a group "-qx" */
		cur = optind ? optind : 1;
		c = getopt_long(argc, argv, "+:c:p:r:T:d:s:S:P:jn:o:qvh", opts, NULL);
		if (c == -1) {
			/* report FILE [options]: options may also follow the FILE */
			if (p->cmd == CMD_REPORT && !p->input && optind < argc &&
			    strcmp(argv[optind - 1], "--")) {
				p->input = argv[optind++];
				continue;
			}
			break;
		}
		switch (c) {
		case 'c':
			if (!strcmp(optarg, "all")) {
				p->cpus_all = 1;
				p->ncpus = 0;
				break;
			}
			rc = parse_cpulist(optarg, p->cpus, PARAMS_MAX_CPUS, PARAMS_MAX_CPUS,
					   &p->ncpus);
			if (rc)
				FAIL("invalid --cpus '%s': want a list like 0,2-3 or 'all'",
				     optarg);
			p->cpus_all = 0;
			break;
		case 'p':
			if (parse_duration(optarg, 1000, &p->period_ns) || p->period_ns < 1000 ||
			    p->period_ns > 10000000000ULL)
				FAIL("invalid --period '%s': want 1us..10s", optarg);
			break;
		case 'r':
			if (parse_duration(optarg, 1000, &p->runtime_ns) || p->runtime_ns < 1000)
				FAIL("invalid --runtime '%s': want >= 1us", optarg);
			runtime_set = 1;
			break;
		case 'T':
			if (parse_duration(optarg, 1000, &p->threshold_ns) || p->threshold_ns < 1 ||
			    p->threshold_ns > 1000000000ULL)
				FAIL("invalid --threshold '%s': want 1ns..1s", optarg);
			break;
		case 'd':
			if (parse_duration(optarg, 1000000000ULL, &p->duration_ns) ||
			    !p->duration_ns || p->duration_ns > 31ULL * 24 * 3600 * 1000000000ULL)
				FAIL("invalid --duration '%s': want > 0 (e.g. 10, 10s, 500ms, 2m)",
				     optarg);
			break;
		case 's':
			if (parse_duration(optarg, 1000, &p->stop_single_ns) || !p->stop_single_ns)
				FAIL(
				    "invalid --stop-single '%s': want a time > 0 (us when no unit)",
				    optarg);
			break;
		case 'S':
			if (parse_duration(optarg, 1000, &p->stop_total_ns) || !p->stop_total_ns)
				FAIL("invalid --stop-total '%s': want a time > 0 (us when no unit)",
				     optarg);
			break;
		case 'P':
			if (!strcmp(optarg, "other") || !strcmp(optarg, "o")) {
				p->policy = SCHED_OTHER;
				p->prio = 0;
			} else if ((!strncmp(optarg, "fifo:", 5) || !strncmp(optarg, "f:", 2) ||
				    !strncmp(optarg, "rr:", 3) || !strncmp(optarg, "r:", 2))) {
				const char *n = strchr(optarg, ':') + 1;

				p->policy = optarg[0] == 'f' ? SCHED_FIFO : SCHED_RR;
				if (parse_int(n, 1, 99, &p->prio))
					FAIL("invalid --priority '%s': priority must be 1..99",
					     optarg);
			} else {
				FAIL("invalid --priority '%s': want other, fifo:N or rr:N", optarg);
			}
			break;
		case 'j':
			p->json = 1;
			break;
		case 'n':
			if (parse_int(optarg, 0, 1000, &p->top_n))
				FAIL("invalid --top '%s': want 0..1000", optarg);
			break;
		case 'o':
			p->output = optarg;
			break;
		case OPT_HELPER:
			if (!strcmp(optarg, "auto"))
				p->helper = HELPER_AUTO;
			else if (!strcmp(optarg, "bpf"))
				p->helper = HELPER_BPF;
			else if (!strcmp(optarg, "proc"))
				p->helper = HELPER_PROC;
			else
				FAIL("invalid --helper '%s': want auto, bpf or proc", optarg);
			break;
		case OPT_NOHC:
			p->no_hcall = 1;
			break;
		case OPT_HIST:
			p->report_hist = 1;
			break;
		case 'q':
			p->quiet = 1;
			break;
		case 'v':
			p->verbose++;
			break;
		case 'h':
			return 1;
		case ':':
			FAIL("option '%s' needs a value", argv[cur]);
		default:
			if (optopt && strncmp(argv[cur], "--", 2))
				FAIL("unknown option '-%c'", optopt);
			FAIL("unknown option '%s'", argv[cur]);
		}
	}
	if (p->cmd == CMD_REPORT) {
		if (!p->input && optind == argc - 1)
			p->input = argv[optind++];
		if (!p->input || optind != argc)
			FAIL("report needs exactly one FILE");
		if (p->output)
			FAIL("-o is for record only");
		return 0;
	}
	if (optind != argc)
		FAIL("unexpected argument '%s'", argv[optind]);
	if (!runtime_set)
		p->runtime_ns = p->period_ns;
	if (p->runtime_ns > p->period_ns)
		FAIL("--runtime must not exceed --period");
	if (p->cmd == CMD_RECORD && !p->output)
		FAIL("record needs -o FILE");
	if (p->cmd != CMD_RECORD && p->output)
		FAIL("-o is for record only");
	if (p->json && (p->cmd == CMD_TOP || p->cmd == CMD_HIST))
		FAIL("--json is not available for %s (use measure --json)",
		     p->cmd == CMD_TOP ? "top" : "hist");
	return 0;
}
