/* SPDX-License-Identifier: MIT */
/*
 * view: the output side shared by live runs (measure/top/hist) and offline reports (report FILE). A struct
 * view holds what one run measured — the merge engine's per-CPU totals, per-class histograms, the overhead
 * counters and the proc fallback's counters — and the printers turn it into the text table, the
 * vnoise.measure/1 JSON document or the histogram view. Views are small functions over one engine (rtla).
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
	} progs[48];
	int top_n;
};

void view_text(FILE *f, const struct view *v);
void view_json(FILE *f, const struct view *v);
void view_hist(FILE *f, const struct view *v);
/* One refresh of `top`: the table with a header line; clears the screen when tty is set. */
void view_top(FILE *f, const struct view *v, double elapsed_s, int tty);
/* The last events that fell into noise on each CPU (for --stop-single/--stop-total). */
void view_leadup(FILE *f, const struct view *v);
/* Fold a gap into the histograms (merge callback; ctx is the struct view). */
void view_gap_cb(void *ctx, int cpu, uint64_t dur_ns, const uint64_t class_ns[VN_CLASS_MAX]);
/* Per-CPU values as shown: the merge totals with the proc fallback's adjustments. */
struct view_row {
	uint64_t runtime_ns, noise_ns, max_single_ns, samples;
	uint64_t class_ns[VN_CLASS_MAX], class_count[VN_CLASS_MAX];
	double available_pct;
};
int view_row(const struct view *v, int idx, struct view_row *r);

#endif
