/* SPDX-License-Identifier: MIT */
/* vnoise-host: per-vCPU hypervisor view of KVM/QEMU domains through libvirt. The command table only. */
#include <stdio.h>
#include "agent/agentcmd.h"
#include "cli/cliopt.h"
#include "collect/collect.h"
#include "collect/query.h"
#include "cli/exitcode.h"
#include "cmd/hostparams.h"
#include "views/hostrec.h"
#include "util/log.h"
#include "cmd/livecmd.h"
#include "setup/setupcmd.h"

/* top, record, report and list: one parser (hostparams), the live loop or the record reader. */
static int run_host(int argc, char **argv)
{
	struct host_params p;
	char err[256], help[4096];
	int rc = hostparams_parse(argc, argv, &p, err, sizeof(err));

	if (rc == 1) {
		hostparams_usage(p.cmd, help, sizeof(help));
		fputs(help, stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-host %s --help')", err, argv[0]);
		return EXIT_USAGE;
	}
	log_set_verbosity(p.quiet ? -1 : p.verbose);
	if (p.cmd == HCMD_REPORT)
		return hostrec_report(&p);
	return livecmd_run(&p);
}

static const struct cliopt_cmd commands[] = {
	{ "top", "live table per domain and vCPU: steal, out-time, preemptors, exits", run_host },
	{ "record", "the same, written to a file (-o FILE); the run's summary at the end",
	  run_host },
	{ "report", "the views of a record file: report FILE", run_host },
	{ "list", "the domains: QEMU pid, vCPU thread ids, shmem and tap devices", run_host },
	{ "serve", "the long-running service: DTL publishing, Prometheus /metrics", run_host },
	{ "collect", "cluster collector: node reports, ranking, sampling, /metrics", collect_main },
	{ "query", "the collector's store: slow-node ranking, node timeline, job causes",
	  query_main },
	{ "agent", "the guest agent of a domain over org.vnoise.0: status, start, stop",
	  agentcmd_main },
	{ "enable", "add vnoise's shared memory and channels to a domain (-D DOM)", setupcmd_main },
	{ "disable", "remove what enable added from a domain (-D DOM)", setupcmd_main },
	{ NULL, NULL, NULL },
};

int main(int argc, char **argv)
{
	return cliopt_dispatch("vnoise-host", commands, argc, argv);
}
