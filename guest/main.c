/* SPDX-License-Identifier: MIT */
/* vnoise-guest: per-CPU OS-noise tracker for Linux guests. Command dispatch only. */
#include <stdio.h>
#include <string.h>
#include "agent/agent.h"
#include "inject/inject.h"
#include "util/log.h"
#include "measure/measure.h"
#include "monitor/monitor.h"
#include "mpi/mpi.h"
#include "measure/params.h"

static const char usage[] =
    "usage: vnoise-guest COMMAND [options]\n"
    "commands:\n"
    "  measure   measure OS noise per CPU and attribute it to its sources, then print a summary\n"
    "  top       the same table, refreshed every period\n"
    "  hist      distribution of noise sample durations per CPU and per class\n"
    "  record    measure and write everything to a file (-o FILE)\n"
    "  report    views of a record file: report FILE [--json] [--hist]\n"
    "  inject    a noise source with known size (--cpu N --level PCT | --spike US --every MS)\n"
    "  agent     the guest side of the host channel (so far: --probe, its devices)\n"
    "  monitor   passive mode: the noise hitting chosen processes, a cgroup or CPUs (no sampler)\n"
    "  mpi       run an MPI job with the interval pipeline: vnoise-guest mpi [options] -- mpirun "
    "...\n"
    "run 'vnoise-guest COMMAND --help' for the options of a command\n";

int main(int argc, char **argv)
{
	struct measure_params p;
	char err[256];
	int rc;

	log_set_prog("vnoise-guest");
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (!strcmp(argv[1], "inject"))
		return inject_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "agent"))
		return agent_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "monitor"))
		return monitor_main(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mpi"))
		return mpi_main(argc - 1, argv + 1);
	if (strcmp(argv[1], "measure") && strcmp(argv[1], "top") && strcmp(argv[1], "hist") &&
	    strcmp(argv[1], "record") && strcmp(argv[1], "report")) {
		log_err("unknown command '%s' (see 'vnoise-guest --help')", argv[1]);
		return EXIT_USAGE;
	}
	rc = params_parse(argc - 1, argv + 1, &p, err, sizeof(err));
	if (rc == 1) {
		enum vn_cmd cmd = !strcmp(argv[1], "report") ? CMD_REPORT : CMD_MEASURE;

		fputs(params_usage(cmd), stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-guest %s --help')", err, argv[1]);
		return EXIT_USAGE;
	}
	log_set_verbosity(p.quiet ? -1 : p.verbose);
	if (p.cmd == CMD_REPORT)
		return replay_run(&p);
	return measure_run(&p);
}
