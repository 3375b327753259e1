/* SPDX-License-Identifier: MIT */
/*
 * clusterout: the collector engine's outputs (see clusterout.h): the Prometheus exposition as one table of
 * metric families, the report as a text table or one vnoise.collect/1 JSON object, and the status line.
 * They only read the engine's state (clusteragg_priv.h); the slow-node ranking they share is sorted anew at
 * every call.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg_priv.h"
#include "collect/clusterout.h"
#include "attrib/classes.h"
#include "util/parse.h"
#include "export/promfmt.h"
#include "util/json.h"
#include "util/termcell.h"
#include "util/termsafe.h"
#include "util/version.h"

/* The node's hypervisor noise, all classes (ns). */
static uint64_t node_hyp_ns(const struct node *n)
{
	uint64_t sum = 0;

	for (int c = VN_REPORT_CLS_HYP_BASE; c < VN_REPORT_CLS_MAX; c++)
		sum += n->class_ns[c];
	return sum;
}

static double mean_delay(const struct node *n)
{
	return n->delay_n ? n->delay_sum / (double)n->delay_n : 0;
}

static int by_delay(const void *a, const void *b, void *ctx)
{
	const struct node *x = &((const struct node *)ctx)[*(const uint32_t *)a];
	const struct node *y = &((const struct node *)ctx)[*(const uint32_t *)b];
	double dx = mean_delay(x), dy = mean_delay(y);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return (x->node_id > y->node_id) - (x->node_id < y->node_id);
}

/*
 * Node indexes of job jb, slowest first (mean delay behind the interval's fastest node; ties by node id).
 * O(n log n): it runs at every /metrics publish, on up to --max-nodes nodes.
 */
static uint32_t *ranking(const struct clusteragg *cs, const struct job *jb)
{
	uint32_t *r = malloc((jb->nnodes ? jb->nnodes : 1) * sizeof(*r));

	if (!r)
		return NULL;
	memcpy(r, jb->nodes, jb->nnodes * sizeof(*r));
	qsort_r(r, jb->nnodes, sizeof(*r), by_delay, cs->nodes);
	return r;
}

static const struct src_ent *top_source(const struct node *n)
{
	const struct src_ent *t = NULL;

	for (int i = 0; i < CS_SRC; i++)
		if (n->src[i].count && (!t || n->src[i].ns > t->ns))
			t = &n->src[i];
	return t;
}

/* ---- the Prometheus exposition: one table of metric families ---- */

/* What a family's emitter gets: the store, the output and room for the labels of one sample. */
struct prom_ctx {
	const struct clusteragg *cs;
	struct bufout *o;
	struct clusteragg_stats st;
	char node[24], job[24];
	struct promfmt_label l[4];
};

struct prom_family {
	const char *name, *type, *help;
	/* writes the family's samples; 0 or -ENOMEM */
	int (*emit)(struct prom_ctx *c, const struct prom_family *fam);
	uint64_t (*total)(const struct clusteragg_stats *st); /* emit_total */
	uint64_t (*node_u64)(const struct clusteragg *cs, uint32_t i); /* emit_node_u64 */
	double (*node_double)(const struct node *n); /* emit_node_double */
};

/* l[0..1] = the node and job labels of node i. */
static const struct node *node_labels(struct prom_ctx *c, uint32_t i)
{
	const struct node *n = &c->cs->nodes[i];

	snprintf(c->node, sizeof(c->node), "%" PRIu64, n->node_id);
	snprintf(c->job, sizeof(c->job), "%016" PRIx64, n->job_id);
	c->l[0] = (struct promfmt_label){ "node", c->node, sizeof(c->node) };
	c->l[1] = (struct promfmt_label){ "job", c->job, sizeof(c->job) };
	return n;
}

/* l[0] = the job label of job j. */
static const struct job *job_label(struct prom_ctx *c, uint32_t j)
{
	snprintf(c->job, sizeof(c->job), "%016" PRIx64, c->cs->jobs[j].job_id);
	c->l[0] = (struct promfmt_label){ "job", c->job, sizeof(c->job) };
	return &c->cs->jobs[j];
}

static int emit_datagrams(struct prom_ctx *c, const struct prom_family *fam)
{
	for (int r = 0; r < CS_RES_MAX; r++) {
		c->l[0] = (struct promfmt_label){ "result", clusteragg_res_name(r), 32 };
		promfmt_sample_u64(c->o, fam->name, c->l, 1, c->st.dgrams[r]);
	}
	return 0;
}

static int emit_total(struct prom_ctx *c, const struct prom_family *fam)
{
	promfmt_sample_u64(c->o, fam->name, NULL, 0, fam->total(&c->st));
	return 0;
}

static int emit_spatial_cv(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t j = 0; j < c->cs->njobs; j++) {
		const struct job *jb = job_label(c, j);

		c->l[1] = (struct promfmt_label){ "of", "compute", 8 };
		promfmt_sample(c->o, fam->name, c->l, 2, jb->spatial_compute.mean);
		c->l[1] = (struct promfmt_label){ "of", "noise", 8 };
		promfmt_sample(c->o, fam->name, c->l, 2, jb->spatial_noise.mean);
	}
	return 0;
}

static int emit_job_info(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t j = 0; j < c->cs->njobs; j++) {
		const struct job *jb = job_label(c, j);

		c->l[1] = (struct promfmt_label){ "name", jb->name ? jb->name : "", SIZE_MAX };
		promfmt_sample_u64(c->o, fam->name, c->l, 2, 1);
	}
	return 0;
}

static int emit_job_slot(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t j = 0; j < c->cs->njobs; j++)
		promfmt_sample_u64(c->o, fam->name, c->l, 1, job_label(c, j)->slot);
	return 0;
}

static int emit_node_u64(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		node_labels(c, i);
		promfmt_sample_u64(c->o, fam->name, c->l, 2, fam->node_u64(c->cs, i));
	}
	return 0;
}

static int emit_node_double(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++)
		promfmt_sample(c->o, fam->name, c->l, 2, fam->node_double(node_labels(c, i)));
	return 0;
}

static int emit_node_intervals(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		c->l[2] = (struct promfmt_label){ "mode", "sampled", 8 };
		promfmt_sample_u64(c->o, fam->name, c->l, 3, n->intervals[0]);
		c->l[2] = (struct promfmt_label){ "mode", "counters", 9 };
		promfmt_sample_u64(c->o, fam->name, c->l, 3, n->intervals[1]);
	}
	return 0;
}

static int emit_node_classes(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		for (int k = 1; k < VN_CLASS_MAX; k++) {
			c->l[2] = (struct promfmt_label){ "class", classes_guest_name(k), 16 };
			promfmt_sample(c->o, fam->name, c->l, 3, n->class_ns[k] / 1e9);
		}
	}
	return 0;
}

/* Hypervisor noise of the node's ranks by class (datagram version 2; zero from older nodes). */
static int emit_node_hyp(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		for (int k = VN_REPORT_CLS_HYP_BASE; k < VN_REPORT_CLS_MAX; k++) {
			c->l[2] = (struct promfmt_label){ "class", datagram_class_name(k), 16 };
			promfmt_sample(c->o, fam->name, c->l, 3, n->class_ns[k] / 1e9);
		}
	}
	return 0;
}

static int emit_node_sources(struct prom_ctx *c, const struct prom_family *fam)
{
	for (uint32_t i = 0; i < c->cs->nnodes; i++) {
		const struct node *n = node_labels(c, i);

		for (uint32_t s = 0; s < n->nexp; s++) {
			c->l[2] = (struct promfmt_label){ "class",
							  datagram_class_name(n->exp[s].cls), 16 };
			c->l[3] =
			    (struct promfmt_label){ "source", n->exp[s].name, VN_REPORT_NAME_LEN };
			promfmt_sample(c->o, fam->name, c->l, 4, n->exp[s].ns / 1e9);
		}
		if (n->nexp == CS_SRC) { /* the rest, from the first source that found no slot */
			c->l[2] = (struct promfmt_label){ "class", "other", 16 };
			c->l[3] = (struct promfmt_label){ "source", "other", 16 };
			promfmt_sample(c->o, fam->name, c->l, 4, n->exp_other_ns / 1e9);
		}
	}
	return 0;
}

static int emit_slow_rank(struct prom_ctx *c, const struct prom_family *fam)
{
	const struct clusteragg *cs = c->cs;

	for (uint32_t j = 0; j < cs->njobs; j++) {
		uint32_t *r = ranking(cs, &cs->jobs[j]);

		if (!r)
			return -ENOMEM;
		for (uint32_t i = 0; i < cs->jobs[j].nnodes; i++) {
			node_labels(c, r[i]);
			promfmt_sample_u64(c->o, fam->name, c->l, 2, i + 1);
		}
		free(r);
	}
	return 0;
}

static uint64_t total_lost(const struct clusteragg_stats *st)
{
	return st->lost;
}

static uint64_t total_cmds(const struct clusteragg_stats *st)
{
	return st->cmds_sent;
}

static uint64_t total_cmd_errors(const struct clusteragg_stats *st)
{
	return st->cmd_errors;
}

static uint64_t total_nodes(const struct clusteragg_stats *st)
{
	return st->nodes;
}

static uint64_t node_datagrams(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].datagrams;
}

static uint64_t node_lost(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].seq.lost;
}

static uint64_t node_slowest(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].slowest;
}

static uint64_t node_slots(const struct clusteragg *cs, uint32_t i)
{
	return cs->nodes[i].slots_sampled;
}

static uint64_t node_sampled(const struct clusteragg *cs, uint32_t i)
{
	return (uint64_t)clusterrot_sampled_now(cs, &cs->jobs[cs->nodes[i].job], i);
}

static uint64_t node_excluded(const struct clusteragg *cs, uint32_t i)
{
	return (uint64_t)cs->nodes[i].excluded;
}

static double node_noise_s(const struct node *n)
{
	return n->noise_ns / 1e9;
}

static double node_compute_s(const struct node *n)
{
	return n->compute_ns / 1e9;
}

static double node_temporal_cv(const struct node *n)
{
	return welford_cv(&n->temporal_noise);
}

static double node_delay_s(const struct node *n)
{
	return mean_delay(n) / 1e9;
}

/* Every family in exposition order (metric names documented in README.md). */
#define FAMILY(n, t, h, e) .name = n, .type = t, .help = h, .emit = e
static const struct prom_family prom_families[] = {
	{ FAMILY("vnoise_collect_datagrams_total", "counter",
		 "Report datagrams received, by what became of them", emit_datagrams) },
	{ FAMILY("vnoise_collect_lost_datagrams_total", "counter",
		 "Sequence numbers never received, all nodes", emit_total),
	  .total = total_lost },
	{ FAMILY("vnoise_collect_commands_total", "counter",
		 "SAMPLE commands sent to nodes (round-robin sampling)", emit_total),
	  .total = total_cmds },
	{ FAMILY("vnoise_collect_command_errors_total", "counter",
		 "SAMPLE commands that could not be sent", emit_total),
	  .total = total_cmd_errors },
	{ FAMILY("vnoise_collect_nodes", "gauge", "Nodes known", emit_total),
	  .total = total_nodes },
	{ FAMILY("vnoise_job_spatial_cv", "gauge",
		 "Mean coefficient of variation between nodes per interval", emit_spatial_cv) },
	{ FAMILY("vnoise_job_info", "gauge", "A job's id and the name given to the collector",
		 emit_job_info) },
	{ FAMILY("vnoise_job_slot", "gauge", "Current round-robin slot of the job",
		 emit_job_slot) },
	{ FAMILY("vnoise_node_datagrams_total", "counter", "Datagrams used, per node",
		 emit_node_u64),
	  .node_u64 = node_datagrams },
	{ FAMILY("vnoise_node_lost_datagrams_total", "counter",
		 "Datagrams of the node never received (sequence gaps)", emit_node_u64),
	  .node_u64 = node_lost },
	{ FAMILY("vnoise_node_intervals_total", "counter",
		 "Intervals reported, sampled (detailed) or from counters", emit_node_intervals) },
	{ FAMILY("vnoise_node_noise_seconds_total", "counter",
		 "Filtered noise of the node's ranks, all classes", emit_node_double),
	  .node_double = node_noise_s },
	{ FAMILY("vnoise_node_class_noise_seconds_total", "counter",
		 "Filtered noise of the node's ranks, by class", emit_node_classes) },
	{ FAMILY(
	    "vnoise_node_hypervisor_seconds_total", "counter",
	    "Hypervisor noise of the node's ranks, by class (from the guests' dispatch trace log)",
	    emit_node_hyp) },
	{ FAMILY("vnoise_node_compute_seconds_total", "counter", "Compute time of the node's ranks",
		 emit_node_double),
	  .node_double = node_compute_s },
	{ FAMILY("vnoise_node_source_noise_seconds_total", "counter",
		 "Noise of the node's sources (from sampled intervals): the first 8 by class and "
		 "name, the rest as other",
		 emit_node_sources) },
	{ FAMILY("vnoise_node_temporal_cv", "gauge",
		 "Coefficient of variation of the node's noise between intervals",
		 emit_node_double),
	  .node_double = node_temporal_cv },
	{ FAMILY("vnoise_node_mean_delay_seconds", "gauge",
		 "Mean compute time behind the fastest node of each interval", emit_node_double),
	  .node_double = node_delay_s },
	{ FAMILY("vnoise_node_slowest_total", "counter",
		 "Intervals in which the node was the slowest of its job", emit_node_u64),
	  .node_u64 = node_slowest },
	{ FAMILY("vnoise_node_slow_rank", "gauge",
		 "Place in the job's slow-node ranking (1 = slowest)", emit_slow_rank) },
	{ FAMILY("vnoise_node_sampled_slots_total", "counter",
		 "Round-robin slots in which the node was sampled", emit_node_u64),
	  .node_u64 = node_slots },
	{ FAMILY("vnoise_node_sampled", "gauge", "1 while the node is sampled", emit_node_u64),
	  .node_u64 = node_sampled },
	{ FAMILY("vnoise_node_excluded", "gauge",
		 "1 when the node was taken out of the rotation (it slows down when sampled)",
		 emit_node_u64),
	  .node_u64 = node_excluded },
};
#undef FAMILY

int clusterout_prom(const struct clusteragg *cs, struct bufout *o)
{
	struct prom_ctx c = { .cs = cs, .o = o };

	clusteragg_stats(cs, &c.st);
	for (size_t k = 0; k < sizeof(prom_families) / sizeof(prom_families[0]); k++) {
		const struct prom_family *fam = &prom_families[k];
		int rc;

		promfmt_family(o, fam->name, fam->type, fam->help);
		rc = fam->emit(&c, fam);
		if (rc)
			return rc;
	}
	return bufout_result(o) < 0 ? -ENOSPC : 0;
}

/* ---- the report: one vnoise.collect/1 JSON object ---- */

/* A double rounded to decimals places (the precision the report has always had), as a JSON number. */
static void kv_fixed(struct json_writer *w, const char *key, double v, int decimals)
{
	double scale = pow(10, decimals);

	json_kv_double(w, key, nearbyint(v * scale) / scale);
}

static void json_head(struct json_writer *w, const struct clusteragg *cs)
{
	struct clusteragg_stats st;

	clusteragg_stats(cs, &st);
	json_kv_str(w, "schema", "vnoise.collect/1");
	json_kv_str(w, "version", version_string());
	json_key(w, "datagrams");
	json_obj_begin(w);
	json_kv_u64(w, "received", st.received);
	for (int r = 0; r < CS_RES_MAX; r++)
		json_kv_u64(w, clusteragg_res_name(r), st.dgrams[r]);
	json_kv_u64(w, "lost", st.lost);
	json_obj_end(w);
	json_key(w, "commands");
	json_obj_begin(w);
	json_kv_u64(w, "sent", st.cmds_sent);
	json_kv_u64(w, "errors", st.cmd_errors);
	json_obj_end(w);
}

static void json_ranking(struct json_writer *w, const struct clusteragg *cs, const struct job *jb)
{
	uint32_t *r = ranking(cs, jb);

	json_key(w, "ranking");
	json_arr_begin(w);
	for (uint32_t i = 0; r && i < jb->nnodes; i++) {
		const struct node *n = &cs->nodes[r[i]];

		json_obj_begin(w);
		json_kv_u64(w, "node", n->node_id);
		kv_fixed(w, "mean_delay_ns", mean_delay(n), 0);
		json_kv_u64(w, "slowest", n->slowest);
		json_kv_u64(w, "intervals", n->delay_n);
		/* how much of the node's noise the hypervisor caused (guest noise = noise_ns - this) */
		json_kv_u64(w, "noise_ns", n->noise_ns);
		json_kv_u64(w, "hypervisor_ns", node_hyp_ns(n));
		json_obj_end(w);
	}
	json_arr_end(w);
	free(r);
}

static void json_job(struct json_writer *w, const struct clusteragg *cs, const struct job *jb)
{
	char id[24];

	snprintf(id, sizeof(id), "%016" PRIx64, jb->job_id);
	json_obj_begin(w);
	json_kv_str(w, "job", jb->name); /* null when the collector was given no name */
	json_kv_str(w, "job_id", id);
	json_kv_u64(w, "nodes", jb->nnodes);
	json_kv_u64(w, "slots", jb->rotating ? jb->slot + 1 : 0);
	json_kv_str(w, "rotation",
		    jb->rotating == 0	? "waiting"
		    : jb->rotating == 1 ? "running"
					: "done");
	json_kv_u64(w, "intervals_compared", jb->intervals_closed);
	json_kv_u64(w, "late", jb->late);
	json_key(w, "spatial_cv");
	json_obj_begin(w);
	kv_fixed(w, "compute", jb->spatial_compute.mean, 6);
	kv_fixed(w, "noise", jb->spatial_noise.mean, 6);
	json_obj_end(w);
	json_ranking(w, cs, jb);
	json_obj_end(w);
}

/* The node's identity, sequence accounting and totals. */
static void json_node_counts(struct json_writer *w, const struct node *n)
{
	char id[24], addr[64] = "";

	snprintf(id, sizeof(id), "%016" PRIx64, n->job_id);
	if (n->addrlen)
		parse_sockaddr_fmt((const struct sockaddr *)&n->addr, addr, sizeof(addr));
	json_kv_u64(w, "node", n->node_id);
	json_kv_str(w, "job_id", id);
	json_kv_u64(w, "session", n->seq.session_id);
	json_kv_str(w, "addr", addr);
	json_kv_bool(w, "registered", n->registered);
	json_kv_u64(w, "datagrams", n->datagrams);
	json_kv_u64(w, "lost", n->seq.lost);
	json_kv_u64(w, "late", n->seq.late);
	json_kv_u64(w, "duplicate", n->seq.dup);
	json_kv_u64(w, "stale", n->seq.stale);
	json_kv_u64(w, "restarts", n->seq.restarts);
	json_kv_u64(w, "resumed", n->seq.resumed);
	json_kv_u64(w, "records", n->records);
	json_key(w, "intervals");
	json_obj_begin(w);
	json_kv_u64(w, "sampled", n->intervals[0]);
	json_kv_u64(w, "counters", n->intervals[1]);
	json_obj_end(w);
	json_kv_u64(w, "noise_ns", n->noise_ns);
	json_kv_u64(w, "compute_ns", n->compute_ns);
	json_key(w, "class_ns");
	json_obj_begin(w);
	for (int c = 1; c < VN_CLASS_MAX; c++)
		json_kv_u64(w, classes_guest_name(c), n->class_ns[c]);
	json_obj_end(w);
	json_kv_u64(w, "hypervisor_total_ns", node_hyp_ns(n));
	json_key(w, "hypervisor_ns");
	json_obj_begin(w);
	for (int c = VN_REPORT_CLS_HYP_BASE; c < VN_REPORT_CLS_MAX; c++)
		json_kv_u64(w, datagram_class_name(c), n->class_ns[c]);
	json_obj_end(w);
}

/* The node's variation, delay and sampling figures. */
static void json_node_figures(struct json_writer *w, const struct node *n)
{
	json_key(w, "temporal_cv");
	json_obj_begin(w);
	kv_fixed(w, "noise", welford_cv(&n->temporal_noise), 6);
	kv_fixed(w, "compute", welford_cv(&n->temporal_compute), 6);
	json_obj_end(w);
	kv_fixed(w, "mean_delay_ns", mean_delay(n), 0);
	json_kv_u64(w, "slowest", n->slowest);
	json_kv_u64(w, "slots_sampled", n->slots_sampled);
	json_kv_u64(w, "commands", n->cmds_sent);
	json_kv_bool(w, "excluded", n->excluded);
	json_key(w, "compute_mean_ns");
	json_obj_begin(w);
	kv_fixed(w, "sampled", n->cmp_sampled.mean, 0);
	kv_fixed(w, "counters", n->cmp_base.mean, 0);
	json_obj_end(w);
	json_key(w, "compute_median_ns");
	json_obj_begin(w);
	kv_fixed(w, "sampled", clusterrot_median(n, 0), 0);
	kv_fixed(w, "counters", clusterrot_median(n, 1), 0);
	json_obj_end(w);
	kv_fixed(w, "excluded_ratio", n->excluded_ratio, 3);
}

/* The node's largest sources (names come from the node: the writer escapes them) and its timeline. */
static void json_node_detail(struct json_writer *w, const struct node *n)
{
	json_key(w, "sources");
	json_arr_begin(w);
	for (int s = 0; s < CS_SRC; s++) {
		if (!n->src[s].count)
			continue;
		json_obj_begin(w);
		json_kv_str(w, "class", datagram_class_name(n->src[s].cls));
		json_kv_u64(w, "id", n->src[s].src_id);
		json_key(w, "name");
		json_strn(w, n->src[s].name, strnlen(n->src[s].name, VN_REPORT_NAME_LEN));
		json_kv_u64(w, "noise_ns", n->src[s].ns);
		json_kv_u64(w, "count", n->src[s].count);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_kv_u64(w, "sources_other_ns", n->src_other_ns);
	json_key(w, "timeline");
	json_arr_begin(w);
	for (uint64_t t = n->tl_n > CS_TL ? n->tl_n - CS_TL : 0; t < n->tl_n; t++) {
		const struct tl_ent *e = &n->tl[t % CS_TL];

		json_obj_begin(w);
		json_kv_u64(w, "interval", e->interval_id);
		json_kv_u64(w, "start_ns", e->start_ns);
		json_kv_u64(w, "end_ns", e->end_ns);
		json_kv_u64(w, "noise_ns", e->noise_ns);
		json_kv_u64(w, "compute_ns", e->compute_ns);
		json_kv_bool(w, "sampled", e->sampled);
		json_obj_end(w);
	}
	json_arr_end(w);
}

static int report_json(const struct clusteragg *cs, FILE *f)
{
	struct json_writer w;

	json_init(&w, f, 0);
	json_obj_begin(&w);
	json_head(&w, cs);
	json_key(&w, "jobs");
	json_arr_begin(&w);
	for (uint32_t j = 0; j < cs->njobs; j++)
		json_job(&w, cs, &cs->jobs[j]);
	json_arr_end(&w);
	json_key(&w, "nodes");
	json_arr_begin(&w);
	for (uint32_t i = 0; i < cs->nnodes; i++) {
		json_obj_begin(&w);
		json_node_counts(&w, &cs->nodes[i]);
		json_node_figures(&w, &cs->nodes[i]);
		json_node_detail(&w, &cs->nodes[i]);
		json_obj_end(&w);
	}
	json_arr_end(&w);
	json_obj_end(&w);
	return json_finish(&w);
}

/* The digits of v. */
static int digits(uint64_t v)
{
	int n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* A node's state in the ranking: excluded, sampled now, or neither. */
static const char *node_state(const struct clusteragg *cs, const struct job *jb, uint32_t i,
			      int wide)
{
	const struct node *n = &cs->nodes[i];

	if (n->excluded)
		return wide ? "excluded" : "X";
	if (clusterrot_sampled_now(cs, jb, i))
		return wide ? "sampled" : "S";
	return "-";
}

/* The --wide table: every figure, one row per node (over 80 columns). */
static void job_table_wide(const struct clusteragg *cs, const struct job *jb, const uint32_t *r,
			   FILE *f)
{
	fprintf(f, "%4s %10s %9s %9s %6s %6s %10s %10s %10s %8s %6s %5s %-8s %s\n", "pos", "node",
		"delay_us", "slowest", "s_ivs", "c_ivs", "noise_ms", "hyp_ms", "compute_ms",
		"temp_cv", "lost", "slots", "state", "top source");
	for (uint32_t i = 0; r && i < jb->nnodes; i++) {
		const struct node *n = &cs->nodes[r[i]];
		const struct src_ent *t = top_source(n);
		char ts[64] = "-", safe[TERMSAFE_LEN(VN_REPORT_NAME_LEN)];

		if (t)
			snprintf(ts, sizeof(ts), "%s:%.16s %.3f ms", datagram_class_name(t->cls),
				 termsafe(safe, sizeof(safe), t->name, sizeof(t->name)),
				 t->ns / 1e6);
		fprintf(f,
			"%4u %10" PRIu64 " %9.1f %9" PRIu64 " %6" PRIu64 " %6" PRIu64
			" %10.3f %10.3f %10.3f %8.3f %6" PRIu64 " %5" PRIu64 " %-8s %s\n",
			i + 1, n->node_id, mean_delay(n) / 1e3, n->slowest, n->intervals[0],
			n->intervals[1], n->noise_ns / 1e6, node_hyp_ns(n) / 1e6,
			n->compute_ns / 1e6, welford_cv(&n->temporal_noise), n->seq.lost,
			n->slots_sampled, node_state(cs, jb, r[i], 1), ts);
	}
	fputs(
	    "pos: place in the ranking (1 = the slowest); delay_us: mean compute time beyond the "
	    "fastest node's per interval; slowest: intervals it was the slowest in; s_ivs, c_ivs: "
	    "intervals reported in detail (sampled) and from counters; temp_cv: the coefficient of "
	    "variation of its noise over time; lost: datagrams; slots: slots sampled\n",
	    f);
}

/* The default table: 80 columns (the node column as wide as the longest id, the source cut in the
 * middle), a legend under it. */
static void job_table(const struct clusteragg *cs, const struct job *jb, const uint32_t *r, FILE *f)
{
	int nw = 4, sw;

	for (uint32_t i = 0; r && i < jb->nnodes; i++)
		if (digits(cs->nodes[r[i]].node_id) > nw)
			nw = digits(cs->nodes[r[i]].node_id);
	/* pos node delay_us slowest noise_ms hyp_ms lost st: 3+1+nw+1+9+1+7+1+9+1+8+1+5+1+2+1 */
	sw = 80 - (52 + nw);
	if (sw < 10)
		sw = 10;
	fprintf(f, "%3s %*s %9s %7s %9s %8s %5s %2s %s\n", "pos", nw, "node", "delay_us", "slowest",
		"noise_ms", "hyp_ms", "lost", "st", "top source");
	for (uint32_t i = 0; r && i < jb->nnodes; i++) {
		const struct node *n = &cs->nodes[r[i]];
		const struct src_ent *t = top_source(n);
		char ts[96] = "-", safe[TERMSAFE_LEN(VN_REPORT_NAME_LEN)], cut[4 * 96];

		if (t)
			snprintf(ts, sizeof(ts), "%s:%s", datagram_class_name(t->cls),
				 termsafe(safe, sizeof(safe), t->name, sizeof(t->name)));
		termcell_fit(ts, sw, false, cut, sizeof(cut));
		fprintf(f, "%3u %*" PRIu64 " %9.1f %7" PRIu64 " %9.3f %8.3f %5" PRIu64 " %2s %s\n",
			i + 1, nw, n->node_id, mean_delay(n) / 1e3, n->slowest, n->noise_ns / 1e6,
			node_hyp_ns(n) / 1e6, n->seq.lost, node_state(cs, jb, r[i], 0), cut);
	}
	fputs("pos: place in the ranking (1 = the slowest); delay_us: mean compute time beyond\n"
	      "the fastest node's per interval; slowest: intervals it was the slowest in;\n"
	      "lost: datagrams; st: S sampled now, X excluded; --wide: every figure\n",
	      f);
}

static void report_text(const struct clusteragg *cs, FILE *f, int wide)
{
	struct clusteragg_stats st;

	clusteragg_stats(cs, &st);
	fprintf(f,
		"datagrams: %" PRIu64 " received, %" PRIu64 " used, %" PRIu64 " lost, %" PRIu64
		" failed authentication,\n  %" PRIu64 " malformed, %" PRIu64 " duplicate, %" PRIu64
		" stale; %" PRIu64 " commands sent\n",
		st.received, st.dgrams[CS_OK], st.lost,
		st.dgrams[CS_BAD_MAC] + st.dgrams[CS_UNKNOWN_KEY], st.dgrams[CS_MALFORMED],
		st.dgrams[CS_DUP], st.dgrams[CS_STALE], st.cmds_sent);
	for (uint32_t j = 0; j < cs->njobs; j++) {
		const struct job *jb = &cs->jobs[j];
		uint32_t *r = ranking(cs, jb);
		char safe[TERMSAFE_LEN(64)];

		fprintf(f,
			"\njob %s%s%016" PRIx64 "%s: %u nodes, %" PRIu64 " slots, %" PRIu64
			" intervals compared;\n  spatial CV of compute %.3f, of noise %.3f\n",
			jb->name ? termsafe(safe, sizeof(safe), jb->name, 64) : "",
			jb->name ? " (" : "", jb->job_id, jb->name ? ")" : "", jb->nnodes,
			jb->rotating ? jb->slot + 1 : 0, jb->intervals_closed,
			jb->spatial_compute.mean, jb->spatial_noise.mean);
		if (wide)
			job_table_wide(cs, jb, r, f);
		else
			job_table(cs, jb, r, f);
		free(r);
	}
}

int clusterout_report(const struct clusteragg *cs, FILE *f, int json, int wide)
{
	if (json)
		return report_json(cs, f);
	report_text(cs, f, wide);
	return 0;
}

void clusterout_status(const struct clusteragg *cs, char *buf, size_t len)
{
	struct clusteragg_stats st;
	unsigned sampled = 0, excluded = 0;

	clusteragg_stats(cs, &st);
	for (uint32_t j = 0; j < cs->njobs; j++)
		sampled += cs->jobs[j].rotating == 1 ? cs->jobs[j].nsampled : 0;
	for (uint32_t i = 0; i < cs->nnodes; i++)
		excluded += (unsigned)cs->nodes[i].excluded;
	snprintf(buf, len,
		 "nodes %" PRIu64 " jobs %" PRIu64 " datagrams %" PRIu64 " used %" PRIu64
		 " lost %" PRIu64 " auth-failed %" PRIu64 " malformed %" PRIu64
		 " sampled-now %u excluded %u",
		 st.nodes, st.jobs, st.received, st.dgrams[CS_OK], st.lost,
		 st.dgrams[CS_BAD_MAC] + st.dgrams[CS_UNKNOWN_KEY], st.dgrams[CS_MALFORMED],
		 sampled, excluded);
}
