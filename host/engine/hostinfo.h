/* SPDX-License-Identifier: MIT */
/*
 * hostinfo: the run-wide facts that go with an aggregate to every view and exporter — where the data came
 * from, the span it covers, the run's loss and overhead counters, the domains' DTL publishers and the view
 * options of the command line. The live engine fills one at each period's end (host/engine/live.c), the
 * record reader from a file's chunks (host/views/hostrec.c); the views and exporters only read it.
 */
#ifndef VNOISE_HOST_ENGINE_HOSTINFO_H
#define VNOISE_HOST_ENGINE_HOSTINFO_H

#include <stdint.h>

#define HOSTINFO_MAX_SELF 64 /* vnoise-host threads recognised in the lists */

/* One domain's dispatch trace log publisher and region file (live runs only): JSON keys "dtl", "region". */
struct hostinfo_dtl {
	char name[128]; /* the domain */
	const char *state; /* "on", "v1-agent", "other-publisher", "failed" */
	const char *detail; /* "class" or "task" */
	uint64_t published, dropped; /* entries, intervals not published */
	/* --guest: the bell (JSON key "bell"; NULL: not shown): "none", "unconnected", "silent", "heard" */
	const char *bell;
	uint64_t bell_rings, bell_arms;
	/* the region file (JSON key "region"; NULL: not shown): "mapped", "lost" (it shrank under the
	 * mapping; opened again), "refused" (owner or mode); why: one line when not mapped */
	const char *region;
	char region_why[160];
	uint64_t region_refused,
	    region_lost; /* files refused, times lost (since the domain was seen) */
};

/* Run-wide facts printed with every view. */
struct hostinfo {
	const char *source; /* "live" or the record file name */
	const char
	    *cmd; /* live: the command measuring ("top", "record", "serve"), for the text's title */
	uint64_t start_ns, end_ns; /* host CLOCK_MONOTONIC span covered */
	uint64_t period_ns;
	const char *dispatch; /* "bpf", "off" */
	int irqs; /* host IRQ accounting on */
	int kvm; /* VM-exit tracing attached */
	uint64_t schedlog_drops; /* records lost between kernel and user space */
	uint64_t schedlog_anomalies; /* inconsistent switch sequences repaired */
	uint64_t events_dropped; /* libvirt lifecycle events lost */
	uint32_t reconnects; /* libvirtd connections re-established */
	uint64_t bpf_events; /* dispatch program runs */
	uint64_t bpf_run_ns; /* their total run time (0 if statistics are off) */
	int top_n;
	int flows_top; /* flows listed per domain and direction (--flows) */
	uint64_t
	    self_cpu_ns; /* vnoise-host's own CPU time (user + system, all threads; live only) */
	uint64_t rounds; /* the monitor's rounds (wake-ups) so far (live only; 0: not shown) */
	/* per-program BPF statistics (live only; nprogs 0 from a file) */
	int nprogs;
	const char (*prog_names)[40];
	const uint64_t *prog_cnt, *prog_ns;
	int wide; /* --wide: text rows as wide as they need, lists on one line */
	/* vnoise-host's own thread ids (the recording process's, for a file): labelled "(vnoise)" */
	int nself;
	uint32_t self_tids[HOSTINFO_MAX_SELF];
	/* the domains' DTL publishers (live only; ndtl 0 from a file) */
	const struct hostinfo_dtl *dtl;
	int ndtl;
};

/* vnoise-host's own thread ids (/proc/self/task) into tids (at most max); returns how many. */
int hostinfo_self_tids(uint32_t *tids, int max);

#endif
