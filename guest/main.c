/* SPDX-License-Identifier: MIT */
/* vnoise-guest: per-CPU OS-noise tracker for Linux guests. The command table and dispatch only. */
#include <stdio.h>
#include "agent/agent.h"
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "inject/inject.h"
#include "util/log.h"
#include "measure/measure.h"
#include "monitor/monitor.h"
#include "mpi/mpi.h"
#include "measure/params.h"

/* measure, top, hist, record and report: one parser (params), one engine (measure, replay). */
static int run_measure(int argc, char **argv)
{
	struct measure_params p;
	char err[256];
	int rc = params_parse(argc, argv, &p, err, sizeof(err));

	if (rc == 1) {
		fputs(params_usage(p.cmd), stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-guest %s --help')", err, argv[0]);
		return EXIT_USAGE;
	}
	log_set_verbosity(p.quiet ? -1 : p.verbose);
	if (p.cmd == CMD_REPORT)
		return replay_run(&p);
	return measure_run(&p);
}

static const struct cliopt_cmd commands[] = {
	{ "measure", "measure OS noise per CPU and its sources, then print a summary",
	  run_measure },
	{ "top", "the same table, refreshed every period", run_measure },
	{ "hist", "distribution of the noise durations per CPU and per class", run_measure },
	{ "record", "measure and write everything to a file (-o FILE)", run_measure },
	{ "report", "the views of a record file: report FILE", run_measure },
	{ "inject", "a noise source of known size on one CPU (for tests)", inject_main },
	{ "agent", "the guest end of the host channel: QGA ports, ivshmem, clock", agent_main },
	{ "monitor", "passive: the noise hitting processes, a cgroup or CPUs", monitor_main },
	{ "mpi", "run an MPI job and report its delayed ranks: mpi -- mpirun ...", mpi_main },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	return cliopt_dispatch("vnoise-guest", commands, argc, argv);
}
