/* SPDX-License-Identifier: MIT */
/* vnoise-host: per-vCPU hypervisor view of KVM/QEMU domains through libvirt. Command dispatch only. */
#include <stdio.h>
#include <string.h>
#include "collect/collect.h"
#include "cli/exitcode.h"
#include "engine/hostparams.h"
#include "views/hostrec.h"
#include "util/log.h"
#include "engine/live.h"

static const char usage[] =
    "usage: vnoise-host COMMAND [options]\n"
    "commands:\n"
    "  top       live table per domain and vCPU: steal, out-time, preemptors, exits (every "
    "period)\n"
    "  record    the same, written to a file (-o FILE); prints the run's summary at the end\n"
    "  report    views of a record file: report FILE [--json]\n"
    "  list      the domains, their QEMU pid and vCPU thread ids, shmem and tap devices\n"
    "  collect   cluster collector: nodes' UDP reports, ranking, round-robin sampling, /metrics\n"
    "run 'vnoise-host COMMAND --help' for the options\n";

int main(int argc, char **argv)
{
	struct host_params p;
	char err[256], help[4096];
	int rc;

	log_set_prog("vnoise-host");
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (!strcmp(argv[1], "collect"))
		return collect_main(argc - 1, argv + 1);
	rc = hostparams_parse(argc - 1, argv + 1, &p, err, sizeof(err));
	if (rc == 1) {
		hostparams_usage(p.cmd, help, sizeof(help));
		fputs(help, stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-host --help')", err);
		return EXIT_USAGE;
	}
	log_set_verbosity(p.quiet ? -1 : p.verbose);
	if (p.cmd == HCMD_REPORT)
		return hostrec_report(&p);
	return live_run(&p);
}
