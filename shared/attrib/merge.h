/* SPDX-License-Identifier: MIT */
/*
 * merge: the attribution engine. It takes the sampler's gaps and runtime windows and the kernel helper's
 * net-duration events of the same CPUs (same clock) and splits the time of every gap by class and by source:
 * each event adds its overlap with the gap to its own (class, source) and takes the same overlap away from its
 * parent, so nested events are counted once, net (osnoise semantics), also when they cross gap boundaries.
 * Steal observations fill what events left unexplained inside their window. What nothing explains is
 * VN_CLASS_UNEXPLAINED. Per class the gap's parts always add up to the gap's duration.
 *
 * Feeding order: events and samples of a CPU may arrive in any order relative to each other; a gap is
 * attributed when merge_process() is called with a horizon at or past its end, and every event overlapping it
 * must have been added by then. A CPU's horizon is capped at its sampler's progress (the latest end of any
 * sample record), so events inside a gap that is still in progress are kept until the gap arrives. Single-threaded; the caller owns the struct.
 */
#ifndef VNOISE_ATTRIB_MERGE_H
#define VNOISE_ATTRIB_MERGE_H

#include <stddef.h>
#include <stdint.h>
#include "noise.h"

#define MERGE_MAX_CPUS 1024
#define MERGE_RECENT 8

struct merge_source {
	uint8_t cls;
	uint32_t id; /* see protocol/noise.h */
	char comm[VN_COMM_LEN];
	uint64_t count; /* events of this source that overlapped a gap */
	uint64_t total_ns; /* net time attributed inside gaps */
	uint64_t max_ns; /* largest single event (net, within gaps) */
};

#define MERGE_WORST_PARTS \
	16 /* sources of the worst gap listed at most (the rest: one part a class) */
#define MERGE_WORST_BEFORE 4 /* events of earlier gaps kept as the worst gap's lead-up */
#define MERGE_ID_REST UINT32_MAX /* a part's id: the class's sources beyond those listed */

/*
 * A CPU's longest gap so far, split by source: parts[] (total_ns: the source's net time in the gap; count 1)
 * add up to end_ns - start_ns exactly, and per class to class_ns[] (what the gap callback was given: STEAL and
 * UNEXPLAINED are one part each). before[]: the last events of earlier gaps on the CPU, oldest first.
 */
struct merge_worst {
	uint64_t start_ns, end_ns; /* both 0: no gap yet */
	uint64_t class_ns[VN_CLASS_MAX];
	uint32_t nparts, nbefore;
	struct merge_source parts[MERGE_WORST_PARTS];
	struct vn_event before[MERGE_WORST_BEFORE];
};

struct merge_cpu {
	int cpu;
	int active; /* got any record */
	uint64_t runtime_ns; /* sum of sampler windows */
	uint64_t noise_ns; /* sum of gap durations */
	uint64_t max_single_ns;
	uint64_t samples;
	uint64_t class_ns[VN_CLASS_MAX];
	uint64_t class_count[VN_CLASS_MAX];
	uint64_t steal_seen_ns; /* steal reported by the kernel helper on this CPU */
	uint64_t steal_unplaced_ns; /* ... that no unexplained gap time could hold (outside gaps) */
	uint64_t clamped; /* gaps whose parts exceeded their length (clock skew) and were scaled */
	uint64_t events; /* events received */
	uint64_t late; /* events/samples older than what was already attributed */
	struct merge_source *src; /* nsrc entries, unordered */
	uint32_t nsrc;
	/* last events that fell into gaps, for --stop-* reports: ring of MERGE_RECENT */
	struct vn_event recent[MERGE_RECENT];
	uint64_t recent_ov[MERGE_RECENT];
	uint32_t nrecent;
	uint64_t last_gap_start, last_gap_end;
	struct merge_worst worst; /* the longest gap (the first of equal ones) */
	struct merge_worst
	    pworst; /* ... since the last merge_period_worst_reset() (top's period) */
	void *priv;
};

/* Called for every attributed gap: its duration and its parts by class (they add up to dur_ns). */
typedef void (*merge_gap_fn)(void *ctx, int cpu, uint64_t dur_ns,
			     const uint64_t class_ns[VN_CLASS_MAX]);

struct merge;

struct merge *merge_new(merge_gap_fn fn, void *ctx); /* NULL + errno */
void merge_free(struct merge *m);
int merge_add_event(struct merge *m, const struct vn_event *e) __attribute__((warn_unused_result));
int merge_add_sample(struct merge *m, const struct vn_sample *s)
    __attribute__((warn_unused_result));
/* Attribute every gap that ends at or before horizon_ns (UINT64_MAX: everything). Returns 0 or -ENOMEM. */
int merge_process(struct merge *m, uint64_t horizon_ns) __attribute__((warn_unused_result));
/* The records waiting for a horizon (events, steal observations, gaps); *bytes: what they hold, their
 * scratch included (the arrays' room is at most twice that: they grow by doubling). For a budget on what a
 * stream makes merge hold, and on the work of an insert (it passes at most that many records). */
size_t merge_held(const struct merge *m, size_t *bytes);
/* Records passed by the sorted inserts since merge_new (the work a stream out of order costs). */
uint64_t merge_insert_steps(const struct merge *m);
/* Start a new period for every CPU's pworst (top's refresh). */
void merge_period_worst_reset(struct merge *m);
/* The CPU's totals (NULL if it never got a record). Valid until the next call that adds records. */
const struct merge_cpu *merge_cpu(const struct merge *m, int cpu);
/* Copy up to max of the CPU's sources into out, largest total first; returns how many. */
size_t merge_top_sources(const struct merge *m, int cpu, struct merge_source *out, size_t max);
/* "irq:local_timer", "softirq:TIMER", "thread:kworker/1:2[123]"... into buf; irq names via names_fn; a
 * MERGE_ID_REST part "irq:(others)"... */
typedef const char *(*merge_irq_name_fn)(void *ctx, uint32_t irq);
const char *merge_source_name(const struct merge_source *s, merge_irq_name_fn fn, void *ctx,
			      char *buf, size_t len);
const char *merge_vector_name(uint32_t vec); /* VN_VEC_* -> "local_timer"... */
const char *merge_softirq_name(uint32_t vec);
const char *merge_hcall_name(uint32_t id);

#endif
