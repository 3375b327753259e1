/* SPDX-License-Identifier: MIT */
/*
 * hypsplit: the hypervisor split of the measuring commands (measure/top/hist/record/report). Each gap the
 * merge engine attributed is split with the host's dispatch trace log (guest/dtl) by the one split core
 * (shared/attrib/gapsplit): the host intervals overlapping the gap on its CPU give host_preempt (by cause)
 * and host_wait, taken from steal first, then from unexplained, then out of the gap's guest classes pro rata
 * (a preemption inside an IRQ handler made that IRQ as long: host time wins, as in the host's matcher); the
 * host's aggregates over the gap give vmexit (by reason) and host_irq, taken only from what is still
 * unexplained; what then stays unexplained is hw. Intervals of the vCPU halted are the guest's (idle) time.
 * A CPU's classes still add up to its noise exactly: the view takes from_class_ns[] out of them.
 *
 * A gap is split once the DTL's horizon has passed its end (by HYPSPLIT_MARGIN_NS: a host interval that
 * ends just after the gap, by the clock mapping's error, is in); a gap the horizon has not reached wait_ns after
 * its end is left as it is and counted late ("dtl_late"); a gap that began before the log was complete (its
 * epoch's first horizon, dtl_covered_from) is left as it is and counted uncovered. Without a DTL (NULL or absent) nothing is queued.
 * Replay (report FILE): the gaps the recording split are given with hypsplit_add_recorded() and only they are
 * split, with the aggregates recorded for them and the spans of a store filled with dtl_add_span() (fed in
 * time order after the gaps are queued, hypsplit_replay_horizon() saying how far: the store keeps 30 s). A
 * recorder sees every span used (once) and every gap split, to write them (protocol/record.h).
 * Single-threaded; the caller owns the struct; the dtl is not owned.
 */
#ifndef VNOISE_GUEST_MEASURE_HYPSPLIT_H
#define VNOISE_GUEST_MEASURE_HYPSPLIT_H

#include <stddef.h>
#include <stdint.h>
#include "attrib/gapsplit.h"
#include "dtl/dtl.h"
#include "noise.h"
#include "record.h"

#define HYPSPLIT_WAIT_NS 1000000000ull /* default bound on the wait for the horizon */
#define HYPSPLIT_MARGIN_NS \
	1000000ull /* the horizon must pass a gap's end by this much (clock error) */
#define HYPSPLIT_MAX_CPUS 1024
#define HYPSPLIT_NAME_LEN 64
#define HYPSPLIT_REASON_OTHER UINT32_MAX /* vmexit source of the reasons beyond the top ones */

/* One hypervisor source of a CPU: a host cause (host_preempt/host_wait), an exit reason, or host IRQs. */
struct hypsplit_source {
	uint8_t hclass; /* enum vn_hclass */
	uint8_t cls; /* enum vn_dtl_class of a cause (host_preempt/host_wait), else 0 */
	uint16_t isa; /* vmexit: 1 VMX, 2 SVM, 0 unknown */
	uint32_t reason; /* vmexit: the exit reason or HYPSPLIT_REASON_OTHER */
	char name
	    [HYPSPLIT_NAME_LEN]; /* dtl_cause_name(), "exit:<reason>", "exit:other", "host_irq" */
	uint64_t count; /* gaps it took time from */
	uint64_t total_ns;
	uint64_t max_ns; /* the most it took from one gap */
};

/* A CPU's split so far. The view subtracts from_*_ns from steal/unexplained and adds hyp_ns[] and hw_ns. */
struct hypsplit_cpu {
	uint64_t hyp_ns[VN_HCLASS_MAX],
	    hyp_count[VN_HCLASS_MAX]; /* count: gaps holding that class */
	uint64_t hw_ns, hw_count;
	uint64_t in_guest_ns,
	    in_guest_count; /* host span time that lay inside guest events (moved out of their classes); gaps */
	uint64_t from_steal_ns, from_unexpl_ns; /* time moved out of STEAL and UNEXPLAINED */
	uint64_t from_class_ns
	    [VN_CLASS_MAX]; /* time moved out of each guest class (STEAL, UNEXPL too) */
	uint64_t
	    halted_ns; /* of the host time in split gaps, what the host's log had as halted (the guest was
			  busy there: it is the hypervisor's all the same) */
	uint64_t
	    uncovered; /* gaps left as they were: they began before the host's log was complete */
	uint64_t unexpl_gaps; /* split gaps that held unexplained time (none is left in them) */
	uint64_t split; /* gaps split with the DTL */
	uint64_t late; /* gaps left as they were: the horizon did not pass them in time */
	uint64_t rec_end_ns; /* recorder: end of the last span passed on (spans are passed once) */
	struct hypsplit_source *src; /* nsrc entries, unordered */
	uint32_t nsrc, cap;
};

#define HYPSPLIT_GAP_SOURCES \
	26 /* a split gap's sources: 16 causes, 8 exit reasons and other, host IRQs */
/* One hypervisor source's time in one split gap (hypsplit_gap_sources()). */
struct hypsplit_gsrc {
	uint8_t hclass; /* enum vn_hclass */
	char name[HYPSPLIT_NAME_LEN]; /* as struct hypsplit_source's */
	uint64_t ns;
};

typedef void (*hypsplit_span_fn)(void *ctx, uint32_t cpu, const struct dtl_span *s,
				 const char *cause_name);
typedef void (*hypsplit_rgap_fn)(void *ctx, const struct vn_rec_dtl_gap *g);
/* One split gap [start_ns, end_ns) of cpu and its split (the view's histograms, report --gaps): what stays
 * in each guest class and the hypervisor parts with hw, adding up to the gap. */
typedef void (*hypsplit_part_fn)(void *ctx, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
				 const struct gapsplit_res *res);

struct hypsplit;

/* A splitter over d (NULL: no DTL, nothing is ever split); wait_ns 0: HYPSPLIT_WAIT_NS. NULL + errno. */
struct hypsplit *hypsplit_new(struct dtl *d, uint64_t wait_ns) __attribute__((warn_unused_result));
void hypsplit_free(struct hypsplit *hs); /* accepts NULL */
/* Pass every span used and every gap split to these (either may be NULL). */
void hypsplit_set_recorder(struct hypsplit *hs, hypsplit_span_fn span, hypsplit_rgap_fn gap,
			   void *ctx);
/* Pass every split gap's parts to fn (NULL: none). */
void hypsplit_set_part_fn(struct hypsplit *hs, hypsplit_part_fn fn, void *ctx);
/* Replay: split only the gaps given here (any order), with their recorded aggregates. 0 or -errno. */
int hypsplit_add_recorded(struct hypsplit *hs, const struct vn_rec_dtl_gap *g)
    __attribute__((warn_unused_result));
/* One attributed gap of cpu, [start_ns, end_ns) with its parts by class (merge callback). Queued only when
 * there is a DTL (host time inside a guest event is the host's too). 0 or -ENOMEM. */
int hypsplit_gap(struct hypsplit *hs, int cpu, uint64_t start_ns, uint64_t end_ns,
		 const uint64_t class_ns[VN_CLASS_MAX]) __attribute__((warn_unused_result));
/* Split the queued gaps the horizon has passed; those it has not passed wait_ns after their end (now_ns:
 * guest CLOCK_MONOTONIC; UINT64_MAX: all of them) are counted late. Returns the gaps still queued. */
size_t hypsplit_process(struct hypsplit *hs, uint64_t now_ns);
/* Replay: the store now holds every recorded span of cpu that ends before end_ns; hypsplit_process() splits
 * the recorded gaps of cpu that end by then (or all with now_ns UINT64_MAX). */
void hypsplit_replay_horizon(struct hypsplit *hs, uint32_t cpu, uint64_t end_ns);
/* The oldest end among the queued gaps (0: none queued). */
uint64_t hypsplit_pending_end(const struct hypsplit *hs);
/* The split of cpu (NULL if none of its gaps was split or late). */
const struct hypsplit_cpu *hypsplit_cpu(const struct hypsplit *hs, int cpu);
/* Copy up to max of cpu's sources into out, largest total first; returns how many. */
size_t hypsplit_top(const struct hypsplit *hs, int cpu, struct hypsplit_source *out, size_t max);
/* Inside the part callback: the sources of the gap being split, into out (at most max); their times add up to
 * the split's hyp_ns[] of every class but hw. Returns how many. */
size_t hypsplit_gap_sources(const struct hypsplit *hs, struct hypsplit_gsrc *out, size_t max);
/* Gaps counted late, all CPUs. */
uint64_t hypsplit_late(const struct hypsplit *hs);
/* Split one gap (its parts by guest class) now with the aggregates agg (NULL: none), through the split core
 * (shared/attrib/gapsplit): the step under hypsplit_process. 0 or -ENOMEM. */
int hypsplit_split(struct hypsplit *hs, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		   const uint64_t class_ns[VN_CLASS_MAX], const struct vn_rec_dtl_gap *agg)
    __attribute__((warn_unused_result));

#endif
