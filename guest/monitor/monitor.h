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
#include "attrib/gapsplit.h"

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
	int verbose; /* -v: libbpf's own lines too */
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
/*
 * One target's row (b - a) split with the host's time in its run and runnable spans, through the one split
 * (shared/attrib/gapsplit). The row's wall time is the gap: its run, plus the THREAD time it waited while
 * another task ran. Its run less the IRQ, SOFTIRQ, NMI, HCALL and STEAL inside it is the quiet part. The
 * host's time is taken from STEAL, then from the run (time the guest counted as the target's own), then from
 * the classes pro rata. out->guest_ns[] and out->hyp_ns[] add up to the returned NOISE exactly;
 * out->quiet_ns is the run that is left, out->over_ns host time beyond the row's wall time (left out).
 */
uint64_t monitor_split(const struct vn_tgt *a, const struct vn_tgt *b, uint64_t host_preempt_ns,
		       uint64_t host_wait_ns, struct gapsplit_res *out);

#endif
