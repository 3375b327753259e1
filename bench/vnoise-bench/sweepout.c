/* SPDX-License-Identifier: MIT */
/*
 * sweepout: the sweep's results as the paper's Tables 3-6 (levels as columns: mean, standard deviation,
 * runs) with the comparison to the baseline and vnoise's attribution as extra rows, or as one
 * vnoise.sweep/1 JSON document; and the two sensitivity verdicts.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "util/json.h"
#include "vnbench.h"

#define LABEL_W 26
#define COL_W 10
#define ATTR_TOL 0.5 /* vnoise "attributes" a level when within 50% of the injector's own share */

static int attributed(const struct sweep_level *lv)
{
	return lv->mon_ok && lv->inj_ok && lv->attributed_pct > 0 &&
	       fabs(lv->attributed_pct - lv->inj_pct) <= ATTR_TOL * lv->inj_pct;
}

static int detected(const struct sweep_level *lv)
{
	return lv->cmp_ok && lv->cmp.detected;
}

/*
 * The lowest level at which the predicate holds there and at every higher level: a single lucky level
 * between misses is not a sensitivity.
 */
static int lowest(const struct sweep_result *r, int (*ok)(const struct sweep_level *))
{
	int low = -1;

	for (int i = r->nlevels - 1; i >= 1; i--) {
		if (!ok(&r->lv[i]))
			break;
		low = i;
	}
	return low;
}

void sweepout_verdicts(struct sweep_result *r)
{
	r->lowest_detected = lowest(r, detected);
	r->lowest_attributed = lowest(r, attributed);
}

static void row_label(const char *label)
{
	printf("%-*s", LABEL_W, label);
}

static void cell(const char *s)
{
	printf(" %*s", COL_W - 1, s);
}

static void cellf(const char *fmt, double v)
{
	char b[32];

	snprintf(b, sizeof(b), fmt, v);
	cell(b);
}

/* The title line: the job, its size and the command that reproduces the sweep. */
static void table_title(const struct sweep_result *r)
{
	const struct sweep_params *p = r->p;

	printf("vnoise-bench sweep: %s x %d", opts_op_name(p->d.op), p->d.count);
	if (p->d.op != VNB_OP_BARRIER)
		printf(", %d bytes", p->d.size);
	printf(", %d ranks, %d runs per level in %d job%s (+%d warm-up each), injector on CPU %d   "
	       "(reproduce: %s)\n",
	       p->np, p->d.runs, p->passes, p->passes == 1 ? "" : "s", p->d.warmup, r->cpu,
	       r->command);
}

/* The rows that describe each level's runs: level, mean, deviation, count, median and its 95% CI. */
static void table_runs(const struct sweep_result *r)
{
	char b[64];
	int i, n = r->nlevels;

	row_label("Noise level");
	for (i = 0; i < n; i++) {
		snprintf(b, sizeof(b), "%g%%", r->lv[i].level);
		cell(b);
	}
	printf("\n");
	row_label("Mean, s");
	for (i = 0; i < n; i++)
		cellf("%.5f", r->lv[i].sum.mean);
	printf("\n");
	row_label("Standard deviation, s");
	for (i = 0; i < n; i++)
		cellf("%.5f", r->lv[i].sum.sd);
	printf("\n");
	row_label("Runs");
	for (i = 0; i < n; i++)
		cellf("%.0f", (double)r->lv[i].n);
	printf("\n");
	row_label("Median, s");
	for (i = 0; i < n; i++)
		cellf("%.5f", r->lv[i].sum.median);
	printf("\n");
	row_label("Median 95% CI low, s");
	for (i = 0; i < n; i++)
		if (r->lv[i].sum.med95_ok)
			cellf("%.5f", r->lv[i].sum.med95_lo);
		else
			cell("n/a");
	printf("\n");
	row_label("Median 95% CI high, s");
	for (i = 0; i < n; i++)
		if (r->lv[i].sum.med95_ok)
			cellf("%.5f", r->lv[i].sum.med95_hi);
		else
			cell("n/a");
	printf("\n");
}

/* The comparison of each level with the baseline: rank-sum p, CIs apart, detected. */
static void table_detection(const struct sweep_result *r)
{
	int i, n = r->nlevels;

	row_label("Rank-sum p (larger)");
	for (i = 0; i < n; i++)
		if (r->lv[i].cmp_ok)
			cellf("%.4f", r->lv[i].cmp.p_greater);
		else
			cell("-");
	printf("\n");
	row_label("Mean 99% CIs apart?");
	for (i = 0; i < n; i++)
		cell(!r->lv[i].cmp_ok ? "-" : r->lv[i].cmp.mean99_disjoint ? "yes" : "no");
	printf("   (the detector's own criterion)\n");
	row_label("Detected?");
	for (i = 0; i < n; i++)
		cell(!r->lv[i].cmp_ok ? "-" : r->lv[i].cmp.detected ? "yes" : "no");
	printf("   (p < 0.05 and 95%% median CIs apart)\n");
}

/* What vnoise charged to the injector next to the injector's own CPU share. Returns whether any level had
 * vnoise's figures (it needs root). */
static int table_attribution(const struct sweep_result *r)
{
	int i, n = r->nlevels, any_root = 0;

	row_label("vnoise: injector, %");
	for (i = 0; i < n; i++) {
		any_root |= r->lv[i].mon_ok;
		if (r->lv[i].mon_ok)
			cellf("%.4f", r->lv[i].attributed_pct);
		else
			cell("n/a");
	}
	if (any_root)
		printf("   (share of the ranks' time charged to thread:" SWEEP_INJ_COMM
		       ", same runs)\n");
	else
		printf("   (%s)\n", r->lv[0].mon_why ? r->lv[0].mon_why : "no monitor");
	row_label("Injector CPU, %");
	for (i = 0; i < n; i++)
		if (r->lv[i].inj_ok)
			cellf("%.4f", r->lv[i].inj_pct);
		else
			cellf("%.4f", 0.0);
	printf("   (its own ground truth: thread CPU time / wall time)\n");
	return any_root;
}

/* The verdict lines: the lowest level detected and the lowest attributed, and the sweep's wall time. */
static void table_verdicts(const struct sweep_result *r, int any_root)
{
	if (r->lowest_detected >= 0)
		printf("lowest level detected by the collective detector: %g%%\n",
		       r->lv[r->lowest_detected].level);
	else
		printf("lowest level detected by the collective detector: none\n");
	if (r->lowest_attributed >= 0)
		printf("lowest level vnoise attributes to the injector: %g%%\n",
		       r->lv[r->lowest_attributed].level);
	else if (!any_root)
		printf("lowest level vnoise attributes to the injector: n/a (needs root)\n");
	else
		printf("lowest level vnoise attributes to the injector: none\n");
	printf("(lowest: at that level and every higher one; vnoise attributes a level when its "
	       "share is "
	       "within 50%% of the injector's own)\n");
	printf("sweep took %.0f s\n", r->secs);
}

static void print_table(const struct sweep_result *r)
{
	table_title(r);
	table_runs(r);
	table_detection(r);
	table_verdicts(r, table_attribution(r));
}

static void json_level(struct json_writer *w, const struct sweep_level *lv)
{
	const struct nstats_summary *s = &lv->sum;

	json_obj_begin(w);
	json_kv_double(w, "level_pct", lv->level);
	json_key(w, "runs_s");
	json_arr_begin(w);
	for (size_t i = 0; i < lv->n; i++)
		json_double(w, lv->runs_s[i]);
	json_arr_end(w);
	json_key(w, "summary");
	json_obj_begin(w);
	json_kv_u64(w, "n", s->n);
	json_kv_double(w, "mean_s", s->mean);
	json_kv_double(w, "sd_s", s->sd);
	json_kv_double(w, "median_s", s->median);
	detect_json_ci(w, "median95_s", s->med95_ok, s->med95_lo, s->med95_hi);
	detect_json_ci(w, "median99_s", s->med99_ok, s->med99_lo, s->med99_hi);
	detect_json_ci(w, "mean95_s", s->mean_ok, s->mean95_lo, s->mean95_hi);
	detect_json_ci(w, "mean99_s", s->mean_ok, s->mean99_lo, s->mean99_hi);
	json_kv_double(w, "min_s", s->min);
	json_kv_double(w, "max_s", s->max);
	json_obj_end(w);
	json_key(w, "compare");
	if (lv->cmp_ok) {
		json_obj_begin(w);
		json_kv_double(w, "u", lv->cmp.u);
		json_kv_double(w, "z", lv->cmp.z);
		json_kv_double(w, "p_greater", lv->cmp.p_greater);
		json_kv_double(w, "p_two", lv->cmp.p_two);
		json_kv_bool(w, "exact", lv->cmp.exact);
		json_kv_bool(w, "med95_disjoint", lv->cmp.med95_disjoint);
		json_kv_bool(w, "mean99_disjoint", lv->cmp.mean99_disjoint);
		json_kv_bool(w, "detected", lv->cmp.detected);
		json_obj_end(w);
	} else {
		json_null(w);
	}
	json_key(w, "vnoise");
	if (lv->mon_ok) {
		json_obj_begin(w);
		json_kv_double(w, "attributed_pct", lv->attributed_pct);
		json_kv_u64(w, "charged_ns", lv->mon_charged_ns);
		json_kv_u64(w, "charged_summary_ns", lv->mon_summary_charged_ns);
		json_kv_i64(w, "periods", lv->mon_periods);
		json_kv_i64(w, "jobs", lv->mon_jobs);
		json_kv_u64(w, "monitor_ns", lv->mon_ns);
		json_kv_u64(w, "ranks_run_ns", lv->mon_run_ns);
		json_obj_end(w);
	} else {
		json_obj_begin(w);
		json_kv_str(w, "unavailable", lv->mon_why ? lv->mon_why : "no monitor");
		json_obj_end(w);
	}
	json_key(w, "injector");
	if (lv->inj_ok) {
		json_obj_begin(w);
		json_kv_double(w, "cpu_pct", lv->inj_pct);
		json_kv_u64(w, "busy_ns", lv->inj_busy_ns);
		json_kv_u64(w, "cpu_ns", lv->inj_cpu_ns);
		json_kv_u64(w, "wall_ns", lv->inj_wall_ns);
		json_kv_u64(w, "count", lv->inj_count);
		json_kv_i64(w, "jobs", lv->inj_jobs);
		json_obj_end(w);
	} else {
		json_null(w);
	}
	json_kv_double(w, "secs", lv->secs);
	json_obj_end(w);
}

static int print_json(const struct sweep_result *r)
{
	const struct sweep_params *p = r->p;
	struct json_writer w;

	json_init(&w, stdout, JSON_PRETTY);
	json_obj_begin(&w);
	json_kv_str(&w, "schema", "vnoise.sweep/1");
	json_kv_str(&w, "command", r->command);
	json_kv_str(&w, "op", opts_op_name(p->d.op));
	json_kv_i64(&w, "count", p->d.count);
	json_kv_i64(&w, "size", p->d.op == VNB_OP_BARRIER ? 0 : p->d.size);
	json_kv_i64(&w, "ranks", p->np);
	json_kv_i64(&w, "runs", p->d.runs);
	json_kv_i64(&w, "warmup", p->d.warmup);
	json_kv_i64(&w, "passes", p->passes);
	json_kv_i64(&w, "cpu", r->cpu);
	json_kv_str(&w, "injector_comm", SWEEP_INJ_COMM);
	json_kv_double(&w, "alpha", 0.05);
	json_key(&w, "levels");
	json_arr_begin(&w);
	for (int i = 0; i < r->nlevels; i++)
		json_level(&w, &r->lv[i]);
	json_arr_end(&w);
	json_key(&w, "lowest_detected_pct");
	if (r->lowest_detected >= 0)
		json_double(&w, r->lv[r->lowest_detected].level);
	else
		json_null(&w);
	json_key(&w, "lowest_attributed_pct");
	if (r->lowest_attributed >= 0)
		json_double(&w, r->lv[r->lowest_attributed].level);
	else
		json_null(&w);
	json_kv_double(&w, "secs", r->secs);
	json_obj_end(&w);
	return json_finish(&w);
}

int sweepout_print(const struct sweep_result *r, int json)
{
	if (json)
		return print_json(r) ? -EIO : 0;
	print_table(r);
	return fflush(stdout) ? -EIO : 0;
}
