/* SPDX-License-Identifier: MIT */
/*
 * view: the output side shared by live runs (measure/top/hist/record) and offline reports (report FILE). A
 * struct view holds what one run measured — the merge engine's per-CPU totals, per-class histograms, the
 * overhead counters and the proc fallback's counters. A view is a small ops table over it (rtla's top/hist
 * over one core), chosen once per run by view_pick(): text (view_text.c), JSON (view_json.c), histograms
 * (view_hist.c) and top (view_top.c). record is not a printer but a recorder beside one (view_record.h).
 * This file also holds the pieces several views print (header, table, sources, overhead line).
 */
#ifndef VNOISE_GUEST_VIEWS_VIEW_H
#define VNOISE_GUEST_VIEWS_VIEW_H

#include <stdint.h>
#include <stdio.h>
#include "views/hist.h"
#include "attrib/merge.h"
#include "measure/params.h"

struct view_cpu_hist {
	struct hist all; /* every noise sample */
	struct hist cls[VN_CLASS_MAX]; /* per sample, its time of that class (when > 0) */
};

/* Counters-only fallback (kernel_helper "proc"): per-CPU counts between start and end. */
struct view_proc {
	int valid;
	uint64_t count[VN_CLASS_MAX];
	uint64_t steal_ns;
	int nsrc;
	struct {
		char name[48];
		uint8_t cls;
		uint64_t count;
	} src[8];
};

#define VIEW_MAX_PROGS 48

struct view {
	const char *helper; /* "bpf" or "proc" */
	const char *steal_source; /* "kvm-steal-clock", "rq-steal-clock", "proc-stat", "none" */
	int nhcalls; /* hypercall wrappers traced */
	uint64_t threshold_ns, duration_ns, period_ns, runtime_ns;
	int ncpus;
	int cpus[PARAMS_MAX_CPUS];
	struct view_cpu_hist *hist; /* [ncpus], may be NULL */
	struct view_proc *proc; /* [ncpus], NULL unless helper is proc */
	struct merge *m;
	merge_irq_name_fn irq_name;
	void *irq_ctx;
	/* overhead */
	uint64_t bpf_events, bpf_dropped, bpf_desync, bpf_run_cnt, bpf_run_ns;
	uint64_t sampler_dropped, sampler_iterations, sampler_loop_ns;
	int nprogs; /* per BPF program run-time statistics (BPF_ENABLE_STATS) */
	struct {
		char name[40];
		uint64_t run_cnt, run_ns;
	} progs[VIEW_MAX_PROGS];
	int top_n;
};

/*
 * How a run's results are shown. The live engine calls start once when sampling begins (what the view says on
 * stderr; planned_ns is --duration, 0 = until stopped), tick once per refresh period while sampling (with
 * v->duration_ns the time measured so far), end once with the final totals; report FILE calls only end.
 * Data goes to f (stdout). Any op may be NULL.
 */
struct view_ops {
	void (*start)(const struct view *v, uint64_t planned_ns);
	void (*tick)(FILE *f, const struct view *v);
	void (*end)(FILE *f, const struct view *v);
};

extern const struct view_ops view_text_ops, view_json_ops, view_hist_ops, view_top_ops;

/* The view of a command: hist, top, JSON or text; none at all for an embedder's sink (it reports). */
const struct view_ops *view_pick(const struct measure_params *p);

/* Fold a gap into the histograms (merge callback; ctx is the struct view). */
void view_gap_cb(void *ctx, int cpu, uint64_t dur_ns, const uint64_t class_ns[VN_CLASS_MAX]);
/* Per-CPU values as shown: the merge totals with the proc fallback's adjustments. */
struct view_row {
	uint64_t runtime_ns, noise_ns, max_single_ns, samples;
	uint64_t class_ns[VN_CLASS_MAX], class_count[VN_CLASS_MAX];
	double available_pct;
};
int view_row(const struct view *v, int idx, struct view_row *r);
/* The last events that fell into noise on each CPU (for --stop-single/--stop-total). */
void view_leadup(FILE *f, const struct view *v);

/* Building blocks of the views. The classes shown, in column order. */
extern const int view_shown[];
#define VIEW_NSHOWN 7
/* "12us", "12.3ms" or "1.2s" into b; returns b. */
const char *view_fmt_us(char *b, size_t n, uint64_t ns);
/* The one-line run header: kernel helper, steal source, threshold, duration. */
void view_header(FILE *f, const struct view *v);
/* The per-CPU table, with a count/net cell per shown class. */
void view_table(FILE *f, const struct view *v);
/* The top_n noise sources of each CPU (or its busiest interrupt counters in proc mode). */
void view_sources(FILE *f, const struct view *v);
/* Sampler loop cost, BPF cost and drops. */
void view_overhead_line(FILE *f, const struct view *v);
/* Sampler loop time per iteration; BPF run time per event (0 without runs). */
double view_loop_ns(const struct view *v);
double view_bpf_ns(const struct view *v);

#endif
