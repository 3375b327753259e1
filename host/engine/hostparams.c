/* SPDX-License-Identifier: MIT */
/* hostparams: getopt_long based parser of vnoise-host's commands; no side effects beyond the struct. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "engine/hostparams.h"
#include "util/parse.h"

static const char usage[] =
    "usage: vnoise-host {top|record|list} [options]   |   vnoise-host report FILE [--json] [--top "
    "N]\n"
    "  -c, --connect URI      libvirt URI (default qemu:///system)\n"
    "  -D, --domain NAME      monitor this domain (repeatable; default every running domain)\n"
    "  -p, --period TIME      statistics period (default 1s; unit s when none)\n"
    "  -d, --duration TIME    stop after TIME (default: until Ctrl-C; unit s when none)\n"
    "  -o, --output FILE      record: file to write\n"
    "  -g, --guest            combined view: read each domain's vnoise guest channel (ivshmem), "
    "align\n"
    "                         the clocks, subtract hypervisor time from guest noise and attribute "
    "it\n"
    "                         (JSON schema vnoise.match/1); report: show a --guest recording that "
    "way\n"
    "      --flows            top, record: capture on each domain's tap devices; packets and "
    "bytes\n"
    "                         per flow and period into and out of the guest, next to the guest's\n"
    "                         network noise with --guest (needs root)\n"
    "      --flows-top N      flows listed per domain and direction (default 10)\n"
    "  -j, --json             JSON output (schema vnoise.host/1)\n"
    "  -n, --top N            preemptors, exit reasons and IRQs listed per vCPU (default 5)\n"
    "      --no-dispatch      counters only (libvirt, schedstat): no host tracing\n"
    "      --no-irqs          no host IRQ/softirq accounting in the dispatch log\n"
    "      --qmp              map vCPU threads with QMP query-cpus-fast (taints the domain)\n"
    "  -q, --quiet            no progress messages;  -v, --verbose  more\n";

const char *hostparams_usage(void)
{
	return usage;
}

#define FAIL(...)                                   \
	do {                                        \
		snprintf(err, errlen, __VA_ARGS__); \
		return -EINVAL;                     \
	} while (0)

int hostparams_parse(int argc, char **argv, struct host_params *p, char *err, size_t errlen)
{
	enum { OPT_NODISP = 256, OPT_NOIRQ, OPT_QMP, OPT_FLOWS, OPT_FLOWS_TOP };
	static const struct option opts[] = { { "connect", required_argument, 0, 'c' },
					      { "domain", required_argument, 0, 'D' },
					      { "period", required_argument, 0, 'p' },
					      { "duration", required_argument, 0, 'd' },
					      { "output", required_argument, 0, 'o' },
					      { "json", no_argument, 0, 'j' },
					      { "top", required_argument, 0, 'n' },
					      { "no-dispatch", no_argument, 0, OPT_NODISP },
					      { "no-irqs", no_argument, 0, OPT_NOIRQ },
					      { "qmp", no_argument, 0, OPT_QMP },
					      { "guest", no_argument, 0, 'g' },
					      { "flows", no_argument, 0, OPT_FLOWS },
					      { "flows-top", required_argument, 0, OPT_FLOWS_TOP },
					      { "quiet", no_argument, 0, 'q' },
					      { "verbose", no_argument, 0, 'v' },
					      { "help", no_argument, 0, 'h' },
					      { 0, 0, 0, 0 } };
	int c, cur, flows_top_set = 0;

	memset(p, 0, sizeof(*p));
	p->period_ns = 1000000000ULL;
	p->top_n = 5;
	p->flows_top = 10;
	if (argc < 1)
		FAIL("missing command");
	if (!strcmp(argv[0], "top"))
		p->cmd = HCMD_TOP;
	else if (!strcmp(argv[0], "record"))
		p->cmd = HCMD_RECORD;
	else if (!strcmp(argv[0], "report"))
		p->cmd = HCMD_REPORT;
	else if (!strcmp(argv[0], "list"))
		p->cmd = HCMD_LIST;
	else
		FAIL("unknown command '%s' (want top, record, report or list)", argv[0]);
	optind = 0;
	opterr = 0;
	for (;;) {
		cur = optind ? optind : 1;
		c = getopt_long(argc, argv, "+:c:D:p:d:o:jgn:qvh", opts, NULL);
		if (c == -1) {
			if (p->cmd == HCMD_REPORT && !p->input && optind < argc) {
				/* after "--" FILE is the last argument: no more options parsed */
				int dashdash = !strcmp(argv[optind - 1], "--");

				p->input = argv[optind++];
				if (!dashdash)
					continue;
			}
			break;
		}
		switch (c) {
		case 'c':
			if (!*optarg)
				FAIL("invalid --connect '': want a libvirt URI");
			p->uri = optarg;
			break;
		case 'D':
			if (!*optarg || strlen(optarg) > 127)
				FAIL("invalid --domain '%s': want a domain name", optarg);
			if (p->ndomains == HOSTPARAMS_MAX_DOMAINS)
				FAIL("too many --domain (at most %d)", HOSTPARAMS_MAX_DOMAINS);
			p->domains[p->ndomains++] = optarg;
			break;
		case 'p':
			if (parse_duration(optarg, 1000000000ULL, &p->period_ns) ||
			    p->period_ns < 10000000ULL || p->period_ns > 3600000000000ULL)
				FAIL("invalid --period '%s': want 10ms..1h", optarg);
			break;
		case 'd':
			if (parse_duration(optarg, 1000000000ULL, &p->duration_ns) ||
			    !p->duration_ns || p->duration_ns > 31ULL * 24 * 3600 * 1000000000ULL)
				FAIL("invalid --duration '%s': want > 0 (e.g. 10, 10s, 500ms, 2m)",
				     optarg);
			break;
		case 'o':
			if (!*optarg)
				FAIL("invalid --output '': want a file name");
			p->output = optarg;
			break;
		case 'j':
			p->json = 1;
			break;
		case 'n':
			if (parse_int(optarg, 1, 1000, &p->top_n))
				FAIL("invalid --top '%s': want 1..1000", optarg);
			break;
		case OPT_NODISP:
			p->no_dispatch = 1;
			break;
		case OPT_NOIRQ:
			p->no_irqs = 1;
			break;
		case OPT_QMP:
			p->qmp = 1;
			break;
		case 'g':
			p->guest = 1;
			break;
		case OPT_FLOWS:
			p->flows = 1;
			break;
		case OPT_FLOWS_TOP:
			if (parse_int(optarg, 1, 1000, &p->flows_top))
				FAIL("invalid --flows-top '%s': want 1..1000", optarg);
			flows_top_set = 1;
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
			FAIL("unknown option '%s'", argv[cur]);
		}
	}
	if (optind < argc)
		FAIL("unexpected argument '%s'", argv[optind]);
	if (p->cmd == HCMD_RECORD && !p->output)
		FAIL("record needs -o FILE");
	if (p->cmd != HCMD_RECORD && p->output)
		FAIL("-o is for record only");
	if (p->cmd == HCMD_LIST && p->guest)
		FAIL("--guest is for top, record and report");
	if (p->cmd == HCMD_LIST && (p->flows || flows_top_set))
		FAIL("--flows and --flows-top are for top and record");
	if ((p->cmd == HCMD_TOP || p->cmd == HCMD_RECORD) && flows_top_set && !p->flows)
		FAIL("--flows-top needs --flows");
	if (p->cmd == HCMD_REPORT) {
		if (!p->input)
			FAIL("report needs a FILE");
		if (p->ndomains || p->uri || p->duration_ns || p->no_dispatch || p->qmp)
			FAIL("report reads a file: --connect, --domain, --duration, --no-dispatch "
			     "and "
			     "--qmp do not apply");
		if (p->flows)
			FAIL("report reads a file: --flows does not apply (recorded flows are "
			     "shown; "
			     "--flows-top N limits them)");
	}
	return 0;
}
