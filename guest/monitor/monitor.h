/* SPDX-License-Identifier: MIT */
/*
 * monitor: `vnoise-guest monitor`, passive mode: the noise hitting chosen processes, cgroups or the user
 * tasks of CPUs, from the passive kernel helper (no sampler), and with a dispatch trace log from the host
 * (guest/dtl) the time the host took their vCPU while they ran or waited for it (monitor/hypspan). Also the
 * cause names and totals that `vnoise-guest mpi` (mpi/mpi.c) prints.
 */
#ifndef VNOISE_GUEST_MONITOR_MONITOR_H
#define VNOISE_GUEST_MONITOR_MONITOR_H

#include <stddef.h>
#include <stdint.h>
#include "app.h"

#define MONITOR_MAX 64 /* targets */

struct monitor_params {
	int pids[MONITOR_MAX]; /* --pid */
	int npid;
	const char *cgroups[MONITOR_MAX]; /* --cgroup (argv strings) */
	int ncg;
	int cpus[VN_TGT_MAX]; /* --cpus */
	int ncpus;
	uint64_t duration_ns; /* 0 = until Ctrl-C (or every process exited) */
	uint64_t period_ns; /* default 1 s */
	int json;
	int quiet;
	int wide; /* --wide: the hypervisor causes in the table too */
};

/*
 * Parse argv (argv[0] = "monitor"): 0, 1 for --help, or -EINVAL with one line in err. Pure apart from the
 * warning line of a deprecated spelling (cli/cliopt.h); whether the targets exist is not checked here.
 */
int monitor_parse(int argc, char **argv, struct monitor_params *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));
const char *monitor_usage(void);
/* The command: parse, follow the targets, print every period and a summary. An exit code. */
int monitor_main(int argc, char **argv);
/* "thread:comm[pid]", "irq:local_timer", "softirq:NET_RX", "steal"... into buf. */
const char *monitor_cause_name(const struct vn_tgt_cause *c, char *buf, size_t len);
/* Noise of all classes. */
uint64_t monitor_noise_total(const struct vn_tgt *t);

#endif
