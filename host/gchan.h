/* SPDX-License-Identifier: MIT */
/*
 * gchan: vnoise-host's end of one domain's guest channel (vnoise-host top/record --guest). It maps the
 * domain's ivshmem file (/dev/shm/<name>) and reads it as hostile memory (shared/shmring), keeps the guest
 * clock aligned through the mailbox (shared/clocksync), converts guest records to host time and feeds the
 * matcher (shared/match) together with the dispatch log's out intervals, and keeps the guest-only view of the
 * same records (shared/merge, in guest time). At every period end it produces the period's records:
 * vn_host_match and vn_host_msrc per vCPU, vn_host_chan for the domain (protocol/host.h).
 * Single-threaded: the monitor's main thread owns it.
 */
#ifndef VNOISE_HOST_GCHAN_H
#define VNOISE_HOST_GCHAN_H

#include <stddef.h>
#include <stdint.h>
#include "host.h"

struct gchan;

/*
 * Map /dev/shm/<shm_name> of a domain with nvcpus vCPUs (dom is the record index). Returns the channel or
 * NULL with errno and a one-line reason in why.
 */
struct gchan *gchan_open(const char *shm_name, uint32_t dom, uint32_t nvcpus, char *why,
			 size_t whylen) __attribute__((warn_unused_result));
void gchan_close(struct gchan *gc); /* accepts NULL */

/* The dispatch log's records for this domain's vCPU (host time). */
void gchan_host_out(struct gchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
		    char state);
void gchan_host_run(struct gchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
		    uint32_t pid, const char *comm, int idle);
/* A per-period aggregate of the dispatch log (kind: enum vn_host_agg_kind), after the period's gaps. */
void gchan_host_agg(struct gchan *gc, uint32_t vcpu, uint16_t kind, uint32_t id, const char *name,
		    uint64_t total_ns);

/* The clock exchange alone, first thing in a round: requests should leave close to the grid point the
 * guest expects them at (gchan_tick then skips it). */
void gchan_clock(struct gchan *gc, uint64_t now_ns);

/*
 * One round at host time now: follow the region's epoch, run a clock exchange when one is due, read every
 * ring, and match what both sides have delivered (host_horizon_ns: the dispatch log is complete up to it;
 * UINT64_MAX without a dispatch log).
 */
void gchan_tick(struct gchan *gc, uint64_t now_ns, uint64_t host_horizon_ns);

/* Records of the period [start, end): ms[nvcpus], src (up to *nsrc on entry; count on return) and ch. */
void gchan_period(struct gchan *gc, uint64_t start_ns, uint64_t end_ns, struct vn_host_match *ms,
		  struct vn_host_msrc *src, size_t *nsrc, struct vn_host_chan *ch);

/* The domain's vCPU host thread ids (0: unknown), to keep clock exchanges off the answering vCPU's pCPU. */
void gchan_set_tids(struct gchan *gc, const uint32_t *tids, uint32_t n);
uint32_t gchan_nvcpus(const struct gchan *gc);

#endif
