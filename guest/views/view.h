/* SPDX-License-Identifier: MIT */
/*
 * view: the output side shared by live runs (measure/top/hist/record) and offline reports (report FILE). A
 * struct view holds what one run measured — the merge engine's per-CPU totals, per-class histograms, the
 * overhead counters and the proc fallback's counters. A view is a small ops table over it (rtla's top/hist
 * over one core), chosen once per run by view_pick(): text (view_text.c), JSON (view_json.c), histograms
 * (view_hist.c) and top (view_top.c). record is not a printer but a recorder beside one (view_record.h).
 * This file also holds the pieces several views print (header, tables, sources, overhead line). Text views fit
 * 80 columns (one unit per column, said in its heading); --wide gives the one wide table of before.
 */
#ifndef VNOISE_GUEST_VIEWS_VIEW_H
#define VNOISE_GUEST_VIEWS_VIEW_H

#include <stdint.h>
#include <stdio.h>
#include "views/hist.h"
#include "attrib/explain.h"
#include "attrib/merge.h"
#include "measure/params.h"
#include "measure/hypsplit.h"

/* With the host's log: the split of a CPU's worst gap (merge_cpu()->worst), kept by view_hyp_cb(). */
struct view_worst_split {
	uint64_t start_ns, end_ns; /* the gap split; both 0: none yet */
	struct gapsplit_res res;
	size_t nsrc;
	struct hypsplit_gsrc src[HYPSPLIT_GAP_SOURCES];
};

/* What the view keeps per CPU beyond the merge engine's totals: the histograms and the worst gap's split. */
struct view_cpu_hist {
	struct view_worst_split worst;
	struct hist all; /* every noise sample */
	struct hist cls[VN_CLASS_MAX]; /* per sample, its time of that class (when > 0) */
	struct hist
	    hyp[VN_HCLASS_PARTS]; /* with a DTL: per split sample, its hypervisor time by class */
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
#define VIEW_MAX_SELF          \
	(2 * PARAMS_MAX_CPUS + \
	 1) /* vnoise's threads: the main one, the samplers, another's (--force) */

/*
 * Per-CPU totals as shown: the merge totals with the proc fallback's adjustments and, with a DTL, the
 * hypervisor split (view_row()): steal and unexplained less what the DTL explained, which is in hyp_ns[]
 * (enum vn_hclass, then hw at VN_HCLASS_HW). The shown classes and hyp_ns[] add up to noise_ns.
 */
struct view_row {
	uint64_t runtime_ns, noise_ns, max_single_ns, samples;
	uint64_t class_ns[VN_CLASS_MAX], class_count[VN_CLASS_MAX];
	uint64_t hyp_ns[VN_HCLASS_PARTS], hyp_count[VN_HCLASS_PARTS];
	uint64_t
	    hyp_in_guest_ns; /* host time the DTL showed inside guest events (out of their classes) */
	double available_pct;
};

/*
 * top's state per CPU: the totals and sources at its previous refresh, so that it shows the last period.
 * max_ns is the largest noise sample since then (kept by view_gap_cb()).
 */
struct view_period {
	uint64_t t_ns; /* view duration_ns at the previous refresh */
	uint64_t max_ns;
	struct view_row row;
	struct merge_source *src; /* copy of the merge engine's sources (append-only, same order) */
	size_t nsrc, cap;
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
	} progs[VIEW_MAX_PROGS];
	int top_n;
	int wide; /* --wide: the full table of before (over 80 columns) */
	uint64_t
	    bucket_ns; /* hist rows: linear of this width from 0; 0: 4 an octave from the threshold */
	int entries; /* hist rows at most, then "over" (0: 256 linear, all log) */
	uint64_t
	    t0_ns; /* CLOCK_MONOTONIC when sampling began (0: unknown): origin of the lead-up's times */
	const char
	    *version; /* the vnoise that measured: version_string(), or a record's META version= */
	int replayed; /* report FILE: version is the recording's (NULL: the file does not say) */
	const char *partial; /* report FILE: why the file could not be read whole (NULL: it was) */
	int nself; /* vnoise's own threads (tids), labelled "(vnoise)" among the sources */
	int self[VIEW_MAX_SELF];
	/* --force: CPUs another vnoise sampler was sampling too (measure/cpuclaim); its thread is in self */
	int nshared;
	struct view_shared {
		int cpu, pid;
		char what[16];
	} shared[PARAMS_MAX_CPUS];
	struct view_period *period; /* [ncpus] for top (view_period_new()), else NULL */
	/* the host's dispatch trace log (guest/dtl): the split of steal and unexplained, NULL without */
	struct hypsplit *hs;
	const char *dtl; /* dtl_state_name() (a report: as recorded); NULL: "absent" */
	int hs_err; /* the split ran out of memory */
	uint64_t
	    dtl_late; /* gaps attributed without the DTL: its horizon came too late (report: recorded) */
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
	/* An interactive view's keys, at every poll of the live loop between ticks: 1 to end the run. */
	int (*input)(FILE *f, const struct view *v);
};

extern const struct view_ops view_text_ops, view_json_ops, view_hist_ops, view_top_ops,
    view_screen_ops;

/* The view of a command: hist, top (its screen on a terminal, else its stream), JSON or text; none at all
 * for an embedder's sink (it reports). */
const struct view_ops *view_pick(const struct measure_params *p);

/* Fold a gap into the histograms and top's period maximum and queue it for the hypervisor split (merge
 * callback; ctx is the struct view). */
void view_gap_cb(void *ctx, int cpu, uint64_t dur_ns, const uint64_t class_ns[VN_CLASS_MAX]);
/* Fold a split gap's hypervisor parts into the histograms (hypsplit's part callback; ctx is the view). */
void view_hyp_cb(void *ctx, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		 const struct gapsplit_res *res);
/* Whether the run had a DTL (its split is shown: "dtl" is not "absent"). */
int view_has_dtl(const struct view *v);
/* The row of CPU index idx; returns whether the CPU got any record. */
int view_row(const struct view *v, int idx, struct view_row *r);
/* "+1.234567 s": t_ns in seconds from the start of the run (t0_ns), as rtla shows its traces; returns b. */
const char *view_since_start(char *b, size_t n, const struct view *v, uint64_t t_ns);
/* The last events that fell into noise on each CPU (for --stop-single/--stop-total), in seconds from t0_ns. */
void view_leadup(FILE *f, const struct view *v);
/* Whether a thread source is one of vnoise's own threads (v->self). */
int view_is_self(const struct view *v, const struct merge_source *s);
/* top's per-CPU state for v (v->ncpus set): 0 or -ENOMEM; view_period_free() accepts NULL. */
int view_period_new(struct view *v) __attribute__((warn_unused_result));
void view_period_free(struct view *v);

/* Building blocks of the views. The classes shown, in column order. */
extern const int view_shown[];
#define VIEW_NSHOWN 7

/*
 * The class table: one set of parts per CPU that adds up to its NOISE exactly (integer ns). In order: the
 * guest classes but UNEXPL (view_shown[0..5]), the hypervisor classes and HW (enum vn_hclass, then
 * VN_HCLASS_HW), UNEXPL. Without a split (no DTL, or the host's log covered no sample) the hypervisor parts
 * and HW are 0 and not shown, and UNEXPL is the residual. With a split, HW is the residual and UNEXPL holds
 * only the samples the split left as they were (they came before the host's log covered them: their steal
 * stays STEAL, the rest UNEXPL); it is shown only when it holds time.
 */
#define VIEW_PART_HYP (VIEW_NSHOWN - 1) /* the first hypervisor part */
#define VIEW_PART_UNEXPL (VIEW_PART_HYP + VN_HCLASS_PARTS)
#define VIEW_NPARTS (VIEW_PART_UNEXPL + 1)
/* Part p's time in r (ns; in top's period rows a difference, which may wrap below 0: read it signed). */
uint64_t view_part_ns(const struct view_row *r, int p);
/* Part p's column head: classes_guest_label() or classes_hyp_label(). */
const char *view_part_label(int p);
/* The sum of r's parts: its NOISE. */
uint64_t view_parts_total(const struct view_row *r);
/* Whether the host's log split any sample of the run (its hypervisor parts are shown). */
int view_split(const struct view *v);
/* Whether the table of rows[v->ncpus] shows part p. */
int view_part_shown(const struct view *v, const struct view_row *rows, int p);
/* Under a table of rows[v->ncpus]: the samples the host's log did not cover, the host time left inside
 * guest events, and the footer (shared/attrib/explain) of the rows' STEAL, UNEXPL and HW. */
void view_notes(FILE *f, const struct view *v, const struct view_row *rows);
/* The footer's figures of rows[v->ncpus]: TOTAL, STEAL, UNEXPL, HW over all CPUs (below 0: 0). */
void view_explain(const struct view *v, const struct view_row *rows, struct explain_totals *t);
/* The run header: the version that measured, threshold, duration; kernel helper, steal source; "partial:". */
void view_header(FILE *f, const struct view *v);
/* The per-CPU tables of rows[ncpus]: the totals, then the class table (a column per CPU, a row per part,
 * TOTAL and %NOISE; blocks of 4 CPUs) and view_notes(); --wide: one row per CPU with every part. */
void view_table_rows(FILE *f, const struct view *v, const struct view_row *rows);
/* The same of the totals. */
void view_table(FILE *f, const struct view *v);
/* The top_n noise sources of each CPU (or its busiest interrupt counters in proc mode), a table each. */
void view_sources(FILE *f, const struct view *v);
/*
 * One CPU's source table: src[n] largest first, runtime_ns the base of %RUNTIME; with_max VIEW_MAX or
 * VIEW_MAX_RUN: each source's largest event (MAX(us); top's period tables, whose title says so: the run's
 * largest, a period keeps no maximum per source); 0: no such column.
 */
enum { VIEW_MAX = 1, VIEW_MAX_RUN = 2 };
void view_source_table(FILE *f, const struct view *v, const struct merge_source *src, size_t n,
		       uint64_t runtime_ns, int with_max);
/* The hypervisor sources of each CPU (with a DTL), a table each. */
void view_hyp_sources(FILE *f, const struct view *v);
/* Sampler loop cost, BPF cost and drops. */
void view_overhead_line(FILE *f, const struct view *v);
/* Sampler loop time per iteration; BPF run time per event (0 without runs). */
double view_loop_ns(const struct view *v);
double view_bpf_ns(const struct view *v);

#endif
