/* SPDX-License-Identifier: MIT */
/*
 * guestchan: vnoise-host's end of one domain's guest channel (every domain with a vnoise ivshmem device, in
 * top/record), and the one object the monitor talks to for it. It maps the domain's ivshmem file
 * (/dev/shm/<name>) and owns the parts that use it: the dispatch trace log's publishing control
 * (host/match/dtlctl, which runs host/match/dtlpub in the host half), the clock exchange through the DTL
 * mailbox (host/match/clockxchg; any guest responder answers) and, with --guest, the bell
 * (host/match/chanbell). Its own job, with --guest: read the guest half as hostile memory
 * (shared/channel/shmreader), convert the guest's records to host time and hand them to the matcher
 * (host/match/match) together with the dispatch log's out intervals, keep the guest-only view of the same
 * records (shared/attrib/merge, in guest time), and at every period end produce the period's records:
 * vn_host_match and vn_host_msrc per vCPU, vn_host_chan for the domain (protocol/host.h).
 * Faults it rides out (logged, never fatal): a new agent epoch (agent restarted, guest rebooted: the clock and
 * the guest side start again; the ended epoch's records read, lost and missed are logged), the region file
 * removed while the domain runs (the mapping goes on; opened later through QEMU's mapping of it), the region
 * file truncated under the mapping (seen by its size at each round's start, or by the SIGBUS of an access
 * past the new end, caught by host/match/regionguard: the channel is lost, unmapped and opened and validated
 * again later, as a new region). The monitor thread is the one that arms the guard.
 * Single-threaded: the monitor's main thread owns it.
 */
#ifndef VNOISE_HOST_MATCH_GUESTCHAN_H
#define VNOISE_HOST_MATCH_GUESTCHAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "host.h"
#include "match/chanbell.h"
#include "match/dtlctl.h"
#include "match/taskclass.h"

struct guestchan;

/* What a channel does besides keeping the clocks aligned. */
struct guestchan_opts {
	bool match; /* --guest: read the guest area, match, keep the guest-only view */
	bool
	    dispatch; /* a dispatch log feeds the channel (without one nothing is published, horizon 0) */
	uint32_t detail; /* enum vn_dtl_detail of the published causes */
	uint64_t period_ns; /* the aggregate period (informative) */
	struct taskclass *tc; /* cause classes (not owned; NULL: every task host-user-task) */
	uint64_t
	    budget_bytes; /* --guest-budget: what the guest's records may make the channel hold (0:
				  GUESTCHAN_BUDGET_DEFAULT); records over it are refused and counted */
};

/* 64 MiB a domain: at ~250 bytes a waiting record, 2 s of a 64-vCPU guest's records at 1 kHz of noise each
 * waiting twice over for the horizon (which lags by ~50 ms), with room left for bursts. */
#define GUESTCHAN_BUDGET_DEFAULT (64ull << 20)

/*
 * Map /dev/shm/<shm_name> of a domain with nvcpus vCPUs (dom is the record index) and publish its dispatch
 * trace log in the host half of the region (protocol/dtl.h) whenever the guest header allows it (epoch 0 or
 * version >= 2) and no other vnoise-host does (host/match/dtlctl). Returns the channel or NULL with errno and
 * a one-line reason in why. A file whose owner or mode is not trusted (host/match/regiontrust) gives a
 * channel in GUESTCHAN_REGION_REFUSED (said once, counted, why set): it maps nothing, and the name is looked
 * at again every GUESTCHAN_REGION_RETRY_NS (the refused file itself is never taken).
 */
struct guestchan *guestchan_open(const char *shm_name, uint32_t dom, uint32_t nvcpus,
				 const struct guestchan_opts *o, char *why, size_t whylen)
    __attribute__((warn_unused_result));
void guestchan_close(struct guestchan *gc); /* accepts NULL */

/* The region's own state: whether the file is mapped and, when not, why. */
enum guestchan_region {
	GUESTCHAN_REGION_MAPPED = 0,
	GUESTCHAN_REGION_LOST, /* the file shrank under the mapping: unmapped, opened again every
				  GUESTCHAN_REGION_RETRY_NS */
	GUESTCHAN_REGION_REFUSED, /* the file's owner or mode is not trusted (host/match/regiontrust) */
};
#define GUESTCHAN_REGION_RETRY_NS 1000000000ULL

struct guestchan_region_info {
	enum guestchan_region state;
	char why[160]; /* one line ("" while mapped): "owner uid 1000, not root or libvirt-qemu" */
	uint64_t lost; /* times the channel was lost, since it was opened */
	uint64_t refused; /* region files refused (each said once in the log) */
};
void guestchan_region_info(const struct guestchan *gc, struct guestchan_region_info *out);

/* The dispatch log's records for this domain's vCPU (host time); wake_ns as struct vn_host_out's, flags:
 * VN_HOST_OUT_F_*. */
void guestchan_host_out(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			char state, uint64_t wake_ns, uint32_t flags);
void guestchan_host_run(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			uint32_t pid, const char *comm, int idle);
/* The vCPU's out piece the dispatch log holds open since open_ns (UINT64_MAX: none), before each
 * guestchan_tick: its gaps wait for that piece (match_host_open). */
void guestchan_host_open(struct guestchan *gc, uint32_t vcpu, uint64_t open_ns);
/* A per-period aggregate of the dispatch log (kind: enum vn_host_agg_kind), after the period's gaps. */
void guestchan_host_agg(struct guestchan *gc, uint32_t vcpu, uint16_t kind, uint16_t isa,
			uint32_t id, uint64_t count, uint64_t total_ns);
/* The dispatch log's period [start, end) is complete: its aggregates go to the DTL. */
void guestchan_host_period(struct guestchan *gc, uint64_t start_ns, uint64_t end_ns);

/* The clock exchange alone, first thing in a round: requests should leave close to the grid point the
 * guest expects them at (guestchan_tick then skips it). */
void guestchan_clock(struct guestchan *gc, uint64_t now_ns);

/*
 * One round at host time now: follow the guest header (publish or not, see guestchan_open) and, with
 * --guest, the agent's epoch; run a clock exchange when one is due; publish the DTL status (horizon:
 * host_horizon_ns converted, heartbeat, clock mapping); with --guest read every ring and match what both
 * sides have delivered (host_horizon_ns: the dispatch log is complete up to it).
 */
void guestchan_tick(struct guestchan *gc, uint64_t now_ns, uint64_t host_horizon_ns);

/* --guest: records of the period [start, end): ms[nvcpus], src (up to *nsrc on entry; count on return) and
 * ch (a publish-only channel gives zeros and no sources). */
void guestchan_period(struct guestchan *gc, uint64_t start_ns, uint64_t end_ns,
		      struct vn_host_match *ms, struct vn_host_msrc *src, size_t *nsrc,
		      struct vn_host_chan *ch);

/* --guest: each vCPU's longest gap matched in the period, split by source (HOST_WORST records), into out (at
 * most max); returns how many. Call it before guestchan_period(), which starts the next period. */
size_t guestchan_worst(struct guestchan *gc, struct vn_host_worst *out, size_t max);

/* --guest: the gaps matched since the last call, each with its split (HOST_MGAP records, protocol/host.h);
 * *n gets how many. Valid until the next guestchan_tick; a publish-only channel gives none. */
const struct vn_host_mgap *guestchan_gaps(struct guestchan *gc, size_t *n);

/* The domain's vCPU host thread ids (0: unknown), to keep clock exchanges off the answering vCPU's pCPU
 * (clockxchg_set_tids). */
void guestchan_set_tids(struct guestchan *gc, const uint32_t *tids, uint32_t n);
uint32_t guestchan_nvcpus(const struct guestchan *gc);
/*
 * The bell (host/match/chanbell, --guest only): the host socket of the domain's org.vnoise.bell.0 port (NULL
 * or "": none). The channel connects to it, arms the bell and reads the rings; nothing the guest writes there
 * is trusted or kept.
 */
void guestchan_set_bell(struct guestchan *gc, const char *sock_path);
#define GUESTCHAN_IDLE (-1) /* nothing to wait for (no agent publishing) */
#define GUESTCHAN_BUSY (-2) /* the short round is needed */
/*
 * Before the monitor sleeps past its short round: the bell's fd to poll (armed: the agent rings after its
 * next gap), GUESTCHAN_IDLE (no agent, or one that says it is not measuring), or GUESTCHAN_BUSY: gaps wait
 * for a horizon, the clock is not aligned, there is no bell (or not this host's: another publisher), or the
 * agent has not rung yet on this connection (armed meanwhile, for its first ring). Armed only when the fd is
 * returned (or for that first ring): while the short round reads the channel anyway, the agent is not asked
 * to ring. arm false: the monitor keeps its short round (rings came fast): read the rings out, do not arm;
 * GUESTCHAN_IDLE or GUESTCHAN_BUSY.
 */
int guestchan_bell_arm(struct guestchan *gc, uint64_t now, bool arm);
/* The bell's fd reported revents: read and discard the rings; a hang-up closes it (connected again later). */
void guestchan_bell_heard(struct guestchan *gc, short revents, uint64_t now);
/* The bell's state and counters since the channel was opened. */
void guestchan_bell_info(const struct guestchan *gc, struct chanbell_info *out);

/* The channel's DTL publishing: state and counters since the channel was opened. */
void guestchan_dtl_info(const struct guestchan *gc, struct dtlctl_info *out);

#endif
