/* SPDX-License-Identifier: MIT */
/*
 * hostparams: command line of vnoise-host (top, record, report, list, serve), parsed by one pure function into a
 * struct (STYLE.md 9) through the common option table (shared/cli/cliopt.h, docs/CLI.md). Times are stored
 * in ns and take a unit ("500ms", "2s", "1m"); a time without one is in microseconds, and for one release a
 * bare non-zero --period or --duration (seconds before) is rejected with a hint.
 */
#ifndef VNOISE_HOST_CMD_HOSTPARAMS_H
#define VNOISE_HOST_CMD_HOSTPARAMS_H

#include <stddef.h>
#include <stdint.h>
#include "util/actions.h"

#define HOSTPARAMS_MAX_DOMAINS 16

enum host_cmd { HCMD_TOP, HCMD_RECORD, HCMD_REPORT, HCMD_LIST, HCMD_SERVE };

struct host_params {
	enum host_cmd cmd;
	const char *uri; /* --connect (-c: deprecated alias), default qemu:///system */
	const char *
	    domains[HOSTPARAMS_MAX_DOMAINS]; /* --domain, repeatable; none = every running domain */
	int ndomains;
	uint64_t period_ns; /* default 1 s */
	uint64_t duration_ns; /* 0 = until SIGINT/SIGTERM (top, record) */
	int json;
	int top_n; /* preemptors / exits / irqs listed per vCPU, default 5 */
	int no_dispatch; /* counters only: no host tracing */
	int no_irqs; /* dispatch log without the host IRQ aggregates */
	int qmp; /* map vCPU threads with QMP query-cpus-fast (taints the domain) */
	int guest; /* --guest: the combined guest + host view over the shared-memory channel */
	uint64_t guest_budget; /* --guest-budget MIB, in bytes (0: GUESTCHAN_BUDGET_DEFAULT) */
	int flows; /* --flows: capture on each domain's taps, flows per period (top, record; root) */
	int flows_top; /* --flows-top N: flows listed per domain and direction, default 10 */
	int wide; /* --wide: text views as wide as their rows (default: fit 80 columns) */
	int dtl_detail; /* --dtl-detail class|task: enum vn_dtl_detail of the published DTL (default class) */
	int quiet;
	int verbose;
	const char *output; /* record -o FILE */
	const char *input; /* report FILE */
	int batch; /* top --batch: the line output even on a terminal */
	const char *metrics; /* serve --metrics ADDR:PORT: the Prometheus listener (NULL: none) */
	const char *html; /* report --html OUT.html */
	int gaps; /* report --gaps: one JSON line per matched guest gap (HOST_MGAP records) */
	const char *remote_write; /* serve --remote-write URL (NULL: none) */
	uint64_t stop_single_ns; /* -s: a vCPU's single out interval over it is a hit (0: off) */
	uint64_t stop_total_ns; /* -S: a vCPU's out-time in one period over it is a hit (0: off) */
	struct action_chain on_threshold; /* --on-threshold: run on a hit (util/actions.h) */
	struct action_chain on_end; /* --on-end: run when the run ends */
};

/*
 * Parse argv (argv[0] is the command: "top", "record", "report", "list", "serve"). Returns 0, 1 for --help (p->cmd is
 * set), or -EINVAL with a one-line message in err. A deprecated spelling prints one warning line on stderr.
 */
int hostparams_parse(int argc, char **argv, struct host_params *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));

/*
 * The help of one command (its usage line and only the options it takes) into buf; returns the length it
 * needed, as snprintf.
 */
size_t hostparams_usage(enum host_cmd cmd, char *buf, size_t len);

#endif
