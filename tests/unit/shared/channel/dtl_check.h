/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the dispatch trace log suites (check_dtlregion, check_dtlwriter, check_dtlreader): ASIZE, the
 * default host area, area_new(size) (zeroed, allocated to the byte: ASan reports any read past it; the caller
 * frees it), DH(area) its header, dtl_open(...) a writer on a fresh area, and a collecting entry callback.
 */
#ifndef VNOISE_DTL_CHECK_H
#define VNOISE_DTL_CHECK_H

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "dtl.h"
#include "channel/dtlwriter.h"

#define ASIZE (64u * 1024) /* default host area */

static inline void *area_new(size_t size)
{
	void *p = NULL;

	ck_assert_int_eq(posix_memalign(&p, 4096, size), 0);
	memset(p, 0, size);
	return p;
}

static inline struct vn_dtl_header *DH(void *area)
{
	return area;
}

static inline struct dtl_writer *dtl_open(void *area, size_t size, uint32_t nvcpus,
					  uint32_t max_entries, uint32_t ncauses, uint32_t detail,
					  uint64_t epoch)
{
	struct dtlwriter_params p = { .nvcpus = nvcpus,
				      .max_entries = max_entries,
				      .ncauses = ncauses,
				      .detail = detail,
				      .period_ns = 100000000 };
	char why[128] = "";
	struct dtl_writer *w = dtlwriter_init(area, size, &p, epoch, why, sizeof(why));

	ck_assert_msg(w != NULL, "dtlwriter_init: %s", why);
	return w;
}

#define GOT_MAX 4096
struct got {
	uint32_t n;
	uint32_t vcpu[GOT_MAX];
	struct vn_dtl_entry e[GOT_MAX];
};

static inline void got_cb(void *ctx, uint32_t vcpu, const struct vn_dtl_entry *e)
{
	struct got *g = ctx;

	if (g->n < GOT_MAX) {
		g->vcpu[g->n] = vcpu;
		g->e[g->n] = *e;
	}
	g->n++;
}

static inline struct vn_dtl_agg agg_make(uint64_t period, uint64_t start, uint64_t end)
{
	struct vn_dtl_agg a;

	memset(&a, 0, sizeof(a));
	a.isa = 1;
	a.nexit = 2;
	a.period = period;
	a.start_ns = start;
	a.end_ns = end;
	a.exit[0] = (struct vn_dtl_exit){ .reason = 30, .count = 10, .total_ns = 5000 };
	a.exit[1] = (struct vn_dtl_exit){ .reason = 48, .count = 3, .total_ns = 2000 };
	a.other_exit_ns = 100;
	a.exit_ns = 7100;
	a.exit_count = 14;
	a.irq_count = 2;
	a.irq_ns = 900;
	return a;
}

#endif
