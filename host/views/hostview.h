/* SPDX-License-Identifier: MIT */
/*
 * hostview: vnoise-host's views over one hostagg engine — the text table (summary and top refresh) and the
 * JSON document "vnoise.host/1" (README.md documents the schema). Data goes to the given stream; the views
 * never change the engine.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTVIEW_H
#define VNOISE_HOST_VIEWS_HOSTVIEW_H

#include <stdint.h>
#include <stdio.h>
#include "engine/hostagg.h"

/* Run-wide facts printed with every view. */
struct hostview_info {
	const char *source; /* "live" or the record file name */
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
	/* per-program BPF statistics (live only; nprogs 0 from a file) */
	int nprogs;
	const char (*prog_names)[40];
	const uint64_t *prog_cnt, *prog_ns;
};

/* The text table of every domain and vCPU (top and the end-of-run summary). */
void hostview_text(FILE *f, const struct hostagg *a, const struct hostview_info *in);

struct json_writer;

/* --flows: a domain's capture and top flows (nothing when it has no flow data), as text lines and as the
 * JSON keys "capture" and "flows" inside the domain's object; shared with the --guest view. */
void hostview_flows_text(FILE *f, const struct hostagg_domain *d, const struct hostview_info *in);
void hostview_flows_json(struct json_writer *w, const struct hostagg_domain *d,
			 const struct hostview_info *in);
/* Start a JSON document on f with the run-wide head fields (schema, source, start/end/duration, period). */
void hostview_json_head(struct json_writer *w, FILE *f, const char *schema,
			const struct hostview_info *in);

/* The JSON document (schema vnoise.host/1). Returns 0 or -errno from the writer. */
int hostview_json(FILE *f, const struct hostagg *a, const struct hostview_info *in)
    __attribute__((warn_unused_result));

#endif
