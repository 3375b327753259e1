/* SPDX-License-Identifier: MIT */
/*
 * clusteragg_priv: the collector engine's state, shared by its three files only: host/collect/clusteragg
 * (the engine: nodes, jobs, intervals, statistics), host/collect/clusterrot (the round-robin rotation, which
 * keeps its per-job state in struct job) and host/collect/clusterout (the outputs, read-only). Everything
 * here belongs to the struct clusteragg it hangs off; the same serialisation rules apply (clusteragg.h).
 */
#ifndef VNOISE_HOST_COLLECT_CLUSTERAGG_PRIV_H
#define VNOISE_HOST_COLLECT_CLUSTERAGG_PRIV_H

#include <math.h>
#include <stdint.h>
#include <sys/socket.h>
#include "collect/clusteragg.h"
#include "format/datagram.h"

#define CS_TL 64 /* timeline entries kept per node */
#define CS_SRC 8 /* largest sources kept per node */
#define CS_WIN 64 /* intervals per job kept open for the spatial statistics */
_Static_assert(CS_WIN <= 64, "node.inwin has a bit per window entry");
#define CS_RECENT 32 /* recent compute times per side kept for the exclusion rule */
#define CS_REFUSE_SAY_NS 60000000000ull /* one line per node per minute about refused sessions */

/* Running mean and variance (Welford). */
struct welford {
	uint64_t n;
	double mean, m2;
};

static inline void welford_add(struct welford *w, double x)
{
	double d = x - w->mean;

	w->n++;
	w->mean += d / (double)w->n;
	w->m2 += d * (x - w->mean);
}

static inline double welford_sd(const struct welford *w)
{
	return w->n > 1 ? sqrt(w->m2 / (double)(w->n - 1)) : 0;
}

/* Coefficient of variation (sd / mean), 0 when the mean is 0. */
static inline double welford_cv(const struct welford *w)
{
	return w->mean > 0 ? welford_sd(w) / w->mean : 0;
}

struct tl_ent {
	uint64_t interval_id, start_ns, end_ns, noise_ns, compute_ns;
	uint32_t sampled;
};

struct src_ent {
	uint64_t ns, count;
	uint32_t src_id;
	uint8_t cls, src_kind;
	char name[VN_REPORT_NAME_LEN];
};

struct node {
	uint64_t node_id, job_id;
	uint32_t job;
	int registered, excluded;
	struct sockaddr_storage addr; /* where its HELLO came from: commands go there */
	socklen_t addrlen;
	uint64_t last_seen_ns;
	uint64_t hi_send_ns; /* newest seal time accepted, at most CS_FRESH_NS past its receipt */
	uint64_t
	    refuse_said_ns; /* when a refused session change was last said (CS_REFUSE_SAY_NS) */
	struct datagram_seq seq;
	uint64_t datagrams, records, intervals[2] /* sampled, counters */;
	/* by report class: the guest's (enum vn_class), then the hypervisor's (version 2, from the DTL) */
	uint64_t noise_ns, compute_ns, class_ns[VN_REPORT_CLS_MAX];
	struct src_ent src[CS_SRC];
	uint64_t src_other_ns; /* source noise that did not fit in src[] */
	/*
	 * /metrics (and remote-write): the first CS_SRC sources by (class, name) keep their series for the
	 * node's life, the rest add into "other": counters that never go down or vanish, bounded labels.
	 */
	struct exp_src {
		uint8_t cls;
		char name[VN_REPORT_NAME_LEN];
		uint64_t ns;
	} exp[CS_SRC];
	uint32_t nexp;
	uint64_t exp_other_ns;
	/* the interval whose parts are arriving */
	int cur_have;
	uint64_t cur_id, cur_start, cur_end, cur_noise, cur_compute;
	uint32_t cur_sampled;
	struct tl_ent tl[CS_TL];
	uint64_t tl_n;
	struct welford temporal_noise, temporal_compute;
	struct welford cmp_sampled, cmp_base; /* per-interval compute, sampled and not */
	/* the last CS_RECENT of each (ns, capped at 4.29 s): the exclusion rule compares their medians */
	uint32_t recent[2][CS_RECENT];
	uint32_t nrecent[2];
	double excluded_ratio;
	uint64_t slots_sampled, cmds_sent;
	uint64_t
	    inwin; /* bit k: the node is in its job's window entry k (one report per interval) */
	double delay_sum; /* ns behind the interval's fastest node, summed */
	uint64_t delay_n, slowest;
};

struct iv_node {
	uint32_t node;
	uint64_t compute_ns, noise_ns;
};

struct iv {
	uint64_t interval_id;
	int used;
	struct iv_node *v;
	uint32_t n, cap;
};

struct job {
	uint64_t job_id;
	const char *name; /* from cfg.job_names, or NULL */
	uint32_t *nodes; /* indexes into cs->nodes, sorted by node_id */
	uint32_t nnodes, cap;
	struct iv win[CS_WIN];
	struct welford spatial_compute, spatial_noise; /* per closed interval: cv between nodes */
	uint64_t intervals_closed, late;
	/* rotation */
	int rotating; /* 0 waiting for nodes, 1 rotating, 2 done (max_slots) */
	uint64_t slot, slot_end_ns;
	uint32_t cursor;
	uint32_t *sampled;
	uint32_t nsampled;
};

struct clusteragg {
	struct clusteragg_cfg cfg;
	struct clusteragg_stats st;
	struct node *nodes;
	uint32_t nnodes, ncap;
	uint32_t *hash; /* open addressing: node index + 1, 0 empty */
	uint32_t hcap; /* power of two, >= 2 x max_nodes */
	struct job *jobs;
	uint32_t njobs, jcap;
	uint64_t last_cmd_seq;
	uint64_t
	    jobs_full_said_ns; /* when a datagram refused for a new job was last said (once a minute) */
};

/* One line about a node or a job to cfg.event (no newline; dropped when cfg.event is NULL). */
void clusteragg_event(struct clusteragg *cs, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The name cfg.job_names gives job_id (the last that matches), or NULL. */
const char *clusteragg_job_name(const struct clusteragg *cs, uint64_t job_id);
/*
 * The node hash made again from cs->nodes[0..nnodes) (a state snapshot was loaded into them): 0, or -EBADMSG
 * when two nodes have the same id. cs->nnodes <= cfg.max_nodes, so that the hash has room.
 */
int clusteragg_rehash(struct clusteragg *cs);

/* The rotation's (clusterrot.c), for the outputs: */
/* median of node n's recent compute times of one side (0 sampled, 1 not), ns; 0 when there are none */
double clusterrot_median(const struct node *n, int side);
/* 1 while node idx of job jb is sampled in the current slot */
int clusterrot_sampled_now(const struct clusteragg *cs, const struct job *jb, uint32_t idx);

#endif
