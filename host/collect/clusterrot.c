/* SPDX-License-Identifier: MIT */
/*
 * clusterrot: round-robin sampling over the collector's nodes (see clusterrot.h). A job waits until
 * cfg.wait_nodes of its nodes are live (registered, not excluded, heard from within CS_LIVE_SLOTS slots and
 * at least 3 s); then every slot takes the next cfg.sample_nodes live nodes in node-id order from where the
 * last slot stopped and sends each a SAMPLE command leasing detailed tracing until the slot ends. At a slot's
 * end the nodes it sampled are judged on the median of their last CS_RECENT compute times, sampled and not.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg_priv.h"
#include "collect/clusterrot.h"
#include "util/termsafe.h"

#define CS_LIVE_SLOTS \
	3 /* a node silent for this many slots (at least 3 s) is skipped by the rotation */

static int node_live(const struct clusteragg *cs, const struct node *n, uint64_t now_ns)
{
	uint64_t quiet = CS_LIVE_SLOTS * cs->cfg.slot_ns;

	if (quiet < 3000000000ull)
		quiet = 3000000000ull;
	return n->registered && !n->excluded && n->addrlen && now_ns - n->last_seen_ns < quiet;
}

static void send_sample(struct clusteragg *cs, struct job *jb, struct node *n, uint64_t now_ns,
			uint64_t lease_ns)
{
	const struct datagram_key *k = &cs->cfg.keys->keys[0];
	struct datagram_meta m = { 0 };
	struct datagram_buf b;
	int len;

	m.kind = VN_REPORT_SAMPLE;
	m.key_id = k->id;
	m.flags = VN_REPORT_F_LAST;
	m.node_id = n->node_id;
	m.session_id = n->seq.session_id;
	m.job_id = n->job_id;
	m.interval_id = jb->slot;
	m.seq = now_ns > cs->last_cmd_seq ? now_ns : cs->last_cmd_seq + 1;
	cs->last_cmd_seq = m.seq;
	m.send_realtime_ns = now_ns;
	m.start_realtime_ns = now_ns;
	m.end_realtime_ns = now_ns + lease_ns;
	if (datagram_init(&b, &m) || (len = datagram_seal(&b, k->key, k->len)) < 0 ||
	    cs->cfg.send(cs->cfg.send_ctx, (const struct sockaddr *)&n->addr, n->addrlen, b.data,
			 (size_t)len)) {
		cs->st.cmd_errors++;
		return;
	}
	cs->st.cmds_sent++;
	n->cmds_sent++;
}

double clusterrot_median(const struct node *n, int side)
{
	uint32_t v[CS_RECENT];
	uint32_t k = n->nrecent[side] < CS_RECENT ? n->nrecent[side] : CS_RECENT;

	if (!k)
		return 0;
	memcpy(v, n->recent[side], k * sizeof(v[0]));
	for (uint32_t a = 1; a < k; a++)
		for (uint32_t b = a; b > 0 && v[b - 1] > v[b]; b--) {
			uint32_t t = v[b];

			v[b] = v[b - 1];
			v[b - 1] = t;
		}
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + (double)v[k / 2]) / 2;
}

/*
 * The slot of jb ended: judge the nodes it sampled. Medians, not means: one hypervisor stall in a sampled
 * interval must not take a node out.
 */
static void slot_end(struct clusteragg *cs, struct job *jb, uint64_t now_ns)
{
	for (uint32_t i = 0; i < jb->nsampled; i++) {
		struct node *n = &cs->nodes[jb->sampled[i]];
		double ratio;

		double ms, mb;

		if (n->excluded || n->nrecent[0] < cs->cfg.exclude_min ||
		    n->nrecent[1] < cs->cfg.exclude_min)
			continue;
		ms = clusterrot_median(n, 0);
		mb = clusterrot_median(n, 1);
		if (mb <= 0)
			continue;
		ratio = ms / mb;
		if (ratio > 1 + cs->cfg.exclude_ratio) {
			n->excluded = 1;
			n->excluded_ratio = ratio;
			send_sample(cs, jb, n, now_ns, 0); /* stop now */
			clusteragg_event(cs,
					 "node %" PRIu64
					 " taken out of the rotation: compute %.0f us per interval "
					 "while sampled, %.0f us otherwise (x%.2f)",
					 n->node_id, n->cmp_sampled.mean / 1e3,
					 n->cmp_base.mean / 1e3, ratio);
		}
	}
	jb->nsampled = 0;
}

static void slot_start(struct clusteragg *cs, struct job *jb, uint64_t now_ns)
{
	uint32_t want = cs->cfg.sample_nodes, seen = 0;

	if (!jb->sampled) {
		jb->sampled = calloc(want, sizeof(*jb->sampled));
		if (!jb->sampled)
			return;
	}
	jb->nsampled = 0;
	jb->slot_end_ns = now_ns + cs->cfg.slot_ns;
	if (jb->cursor >= jb->nnodes)
		jb->cursor = 0;
	while (jb->nsampled < want && seen < jb->nnodes) {
		uint32_t idx = jb->nodes[jb->cursor];
		struct node *n = &cs->nodes[idx];

		jb->cursor = (jb->cursor + 1) % jb->nnodes;
		seen++;
		if (!node_live(cs, n, now_ns))
			continue;
		jb->sampled[jb->nsampled++] = idx;
		n->slots_sampled++;
		send_sample(cs, jb, n, now_ns, cs->cfg.slot_ns);
	}
}

/* A job as the events name it: its name as given to --job and its id, or the id alone. */
static const char *job_label(const struct job *jb, char *buf, size_t len)
{
	char safe[TERMSAFE_LEN(64)];

	if (jb->name)
		snprintf(buf, len, "%s (%016" PRIx64 ")",
			 termsafe(safe, sizeof(safe), jb->name, 64), jb->job_id);
	else
		snprintf(buf, len, "%016" PRIx64, jb->job_id);
	return buf;
}

void clusterrot_tick(struct clusteragg *cs, uint64_t now_ns)
{
	if (!cs->cfg.slot_ns)
		return;
	for (uint32_t j = 0; j < cs->njobs; j++) {
		struct job *jb = &cs->jobs[j];
		uint32_t live = 0;
		char lab[TERMSAFE_LEN(64) + 24];

		if (jb->rotating == 2 || (jb->rotating == 1 && now_ns < jb->slot_end_ns))
			continue;
		if (jb->rotating == 0) {
			for (uint32_t i = 0; i < jb->nnodes; i++)
				live += node_live(cs, &cs->nodes[jb->nodes[i]], now_ns);
			if (live < cs->cfg.wait_nodes)
				continue;
			clusteragg_event(cs, "job %s: rotation starts over %u nodes, %u per slot",
					 job_label(jb, lab, sizeof(lab)), live,
					 cs->cfg.sample_nodes);
			jb->rotating = 1;
			jb->slot = 0;
			jb->cursor = 0;
			slot_start(cs, jb, now_ns);
			continue;
		}
		slot_end(cs, jb, now_ns);
		if (cs->cfg.max_slots && jb->slot + 1 >= cs->cfg.max_slots) {
			jb->rotating = 2;
			clusteragg_event(cs, "job %s: rotation done after %" PRIu64 " slots",
					 job_label(jb, lab, sizeof(lab)), jb->slot + 1);
			continue;
		}
		jb->slot++;
		slot_start(cs, jb, now_ns);
	}
}

int clusterrot_sampled_now(const struct clusteragg *cs, const struct job *jb, uint32_t idx)
{
	if (jb->rotating != 1)
		return 0;
	for (uint32_t i = 0; i < jb->nsampled; i++)
		if (jb->sampled[i] == idx)
			return 1;
	return 0;
}
