/* SPDX-License-Identifier: MIT */
/*
 * guestchan: vnoise-host's end of one domain's guest channel (vnoise-host top/record --guest). It maps the
 * domain's ivshmem file (/dev/shm/<name>) and reads it as hostile memory (shared/channel/shmring), keeps the guest
 * clock aligned through the mailbox (host/match/clocksync), converts guest records to host time and feeds the
 * matcher (host/match/match) together with the dispatch log's out intervals, and keeps the guest-only view of the
 * same records (shared/attrib/merge, in guest time). At every period end it produces the period's records:
 * vn_host_match and vn_host_msrc per vCPU, vn_host_chan for the domain (protocol/host.h).
 * Single-threaded: the monitor's main thread owns it.
 */
#ifndef VNOISE_HOST_MATCH_GUESTCHAN_H
#define VNOISE_HOST_MATCH_GUESTCHAN_H

#include <stddef.h>
#include <stdint.h>
#include "host.h"

struct guestchan;

/*
 * Map /dev/shm/<shm_name> of a domain with nvcpus vCPUs (dom is the record index). Returns the channel or
 * NULL with errno and a one-line reason in why.
 */
struct guestchan *guestchan_open(const char *shm_name, uint32_t dom, uint32_t nvcpus, char *why,
				 size_t whylen) __attribute__((warn_unused_result));
void guestchan_close(struct guestchan *gc); /* accepts NULL */

/* The dispatch log's records for this domain's vCPU (host time). */
void guestchan_host_out(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			char state);
void guestchan_host_run(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			uint32_t pid, const char *comm, int idle);
/* A per-period aggregate of the dispatch log (kind: enum vn_host_agg_kind), after the period's gaps. */
void guestchan_host_agg(struct guestchan *gc, uint32_t vcpu, uint16_t kind, uint32_t id,
			const char *name, uint64_t total_ns);

/* The clock exchange alone, first thing in a round: requests should leave close to the grid point the
 * guest expects them at (guestchan_tick then skips it). */
void guestchan_clock(struct guestchan *gc, uint64_t now_ns);

/*
 * One round at host time now: follow the region's epoch, run a clock exchange when one is due, read every
 * ring, and match what both sides have delivered (host_horizon_ns: the dispatch log is complete up to it;
 * UINT64_MAX without a dispatch log).
 */
void guestchan_tick(struct guestchan *gc, uint64_t now_ns, uint64_t host_horizon_ns);

/* Records of the period [start, end): ms[nvcpus], src (up to *nsrc on entry; count on return) and ch. */
void guestchan_period(struct guestchan *gc, uint64_t start_ns, uint64_t end_ns,
		      struct vn_host_match *ms, struct vn_host_msrc *src, size_t *nsrc,
		      struct vn_host_chan *ch);

/* The domain's vCPU host thread ids (0: unknown), to keep clock exchanges off the answering vCPU's pCPU. */
void guestchan_set_tids(struct guestchan *gc, const uint32_t *tids, uint32_t n);
uint32_t guestchan_nvcpus(const struct guestchan *gc);

#endif
