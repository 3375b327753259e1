/* SPDX-License-Identifier: MIT */
/*
 * guestchan: one domain's guest channel on the host side (see guestchan.h).
 *
 * Clock exchanges: one at a time, on the VN_SHM_CLOCK_GRID_NS grid of host time (the agent spins around the
 * predicted arrival). The request goes out and the host watches the mailbox for up to SPIN_NS. A vCPU that
 * shares the watching thread's pCPU cannot answer during the watch (seen on a 2-CPU host: answers came a
 * scheduler slice late), so when the answering vCPU is pinned to one pCPU and this thread may run elsewhere,
 * the thread moves off that pCPU once (logged);
 * an answer that comes later is picked up at the next round (its larger round trip only widens its own
 * error bound, and each 100 ms bucket keeps its best exchange). An exchange unanswered for ABANDON_NS is
 * abandoned and counted.
 *
 * Guest records are converted with the current model; records read before any model exists are dropped and
 * counted (unsynced). The guest horizon is the smallest ring horizon the agent published (records that end
 * before it are all in the ring), converted to host time.
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "match/clocksync.h"
#include "match/guestchan.h"
#include "util/log.h"
#include "match/match.h"
#include "attrib/merge.h"
#include "channel/shmreader.h"
#include "util/monotime.h"

#define SPIN_NS 300000ULL
#define UNSYNCED_WAIT_NS 200000000ULL /* ... but not longer than this: then read and count them */
/*
 * Hostile input bounds: an agent publishes each ring in time order give or take one drain (2 ms), so a record
 * ending more than REORDER_NS before the ring's latest is refused (counted): this bounds the sorted inserts
 * of the matcher and the guest-only view. And at most PENDING_MAX records are fed while the guest's horizon
 * stands still, which bounds their memory.
 */
#define REORDER_NS 50000000ULL
#define PENDING_MAX (1u << 18)
#define ABANDON_NS 100000000ULL
#define POLL_MAX 16384u /* records per ring and round (1.6 M/s at the 5 ms round) */
#define MAX_MAP (1ULL << 30)
#define GONLY_SRC 64u /* guest-only sources diffed per vCPU and period */

struct gvcpu {
	uint64_t last_end; /* latest record end fed from this ring (guest time) */
	uint64_t gonly_ns[VN_CLASS_MAX], gonly_gaps, gonly_gap_ns; /* this period */
	uint64_t lat_sum, lat_max, lat_n; /* this period, live gaps only */
	struct merge_source prev[GONLY_SRC]; /* guest-only sources at the last period end */
	uint32_t nprev;
};

struct guestchan {
	uint32_t dom, nvcpus;
	char path[300];
	void *base;
	size_t size;
	struct shm_reader *rd;
	uint64_t epoch;
	struct clocksync cs;
	bool outstanding;
	uint64_t sent_ns, next_exchange_ns;
	uint64_t exchanges, abandoned;
	uint32_t ans_cpu; /* guest CPU of the last answer (VN_SHM_CPU_UNKNOWN) */
	bool placed; /* keep_off_answerer() ran */
	uint32_t *tids; /* vCPU host thread ids (0 unknown) */
	struct match *m;
	struct merge *mg; /* guest-only view, guest time */
	uint64_t mg_horizon; /* guest time */
	uint64_t unsynced;
	uint64_t gonly_nomem; /* records the guest-only view could not take */
	uint64_t rejected; /* out of order beyond REORDER_NS, or beyond the pending cap: not fed */
	uint64_t pending; /* records fed since the guest horizon last moved */
	uint64_t guest_h; /* guest horizon (guest time) */
	uint64_t dbg;
	bool clocked; /* guestchan_clock ran this round */
	uint64_t attach_ns; /* host time the current epoch was attached: older gaps are backlog */
	uint64_t match_now; /* host time of the current match_process() call */
	struct gvcpu *v;
};

static void on_gonly_gap(void *ctx, int cpu, uint64_t dur_ns, const uint64_t class_ns[VN_CLASS_MAX])
{
	struct guestchan *gc = ctx;
	struct gvcpu *v;
	int c;

	if (cpu < 0 || (uint32_t)cpu >= gc->nvcpus)
		return;
	v = &gc->v[cpu];
	v->gonly_gaps++;
	v->gonly_gap_ns += dur_ns;
	for (c = 0; c < VN_CLASS_MAX; c++)
		v->gonly_ns[c] += class_ns[c];
}

/* A matched gap: live latency (gap end -> matched), for gaps that ended after the epoch was attached. */
static void on_matched_gap(void *ctx, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			   const uint64_t guest_ns[VN_CLASS_MAX],
			   const uint64_t host_ns[VN_HOST_HCLASS_MAX], uint64_t residual_ns)
{
	struct guestchan *gc = ctx;
	struct gvcpu *v;
	uint64_t l;

	(void)start_ns;
	(void)guest_ns;
	(void)host_ns;
	(void)residual_ns;
	if (vcpu >= gc->nvcpus || end_ns < gc->attach_ns || gc->match_now < end_ns)
		return;
	v = &gc->v[vcpu];
	l = gc->match_now - end_ns;
	v->lat_sum += l;
	v->lat_n++;
	if (l > v->lat_max)
		v->lat_max = l;
}

static int new_merge(struct guestchan *gc)
{
	merge_free(gc->mg);
	gc->mg = merge_new(on_gonly_gap, gc);
	gc->mg_horizon = 0;
	for (uint32_t i = 0; i < gc->nvcpus; i++)
		gc->v[i].nprev = 0;
	return gc->mg ? 0 : -ENOMEM;
}

struct guestchan *guestchan_open(const char *shm_name, uint32_t dom, uint32_t nvcpus, char *why,
				 size_t whylen)
{
	struct guestchan *gc;
	struct stat st;
	int fd;

	if (!shm_name || !*shm_name || strchr(shm_name, '/') || !nvcpus ||
	    nvcpus > MATCH_MAX_VCPUS) {
		snprintf(why, whylen, "no usable ivshmem name");
		errno = EINVAL;
		return NULL;
	}
	gc = calloc(1, sizeof(*gc));
	if (!gc)
		goto nomem;
	gc->dom = dom;
	gc->nvcpus = nvcpus;
	gc->v = calloc(nvcpus, sizeof(*gc->v));
	gc->tids = calloc(nvcpus, sizeof(*gc->tids));
	gc->ans_cpu = VN_SHM_CPU_UNKNOWN;
	gc->m = match_new(NULL);
	if (gc->m)
		match_set_gap_cb(gc->m, on_matched_gap, gc);
	if (!gc->v || !gc->tids || !gc->m || clocksync_init(&gc->cs, NULL) || new_merge(gc))
		goto nomem;
	snprintf(gc->path, sizeof(gc->path), "/dev/shm/%s", shm_name);
	fd = open(gc->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		snprintf(why, whylen, "%s: %s", gc->path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)VN_SHM_HEADER_SIZE ||
	    (uint64_t)st.st_size > MAX_MAP) {
		snprintf(why, whylen, "%s: not a usable region (%lld bytes)", gc->path,
			 (long long)st.st_size);
		close(fd);
		errno = EINVAL;
		goto fail;
	}
	gc->size = (size_t)st.st_size;
	gc->base = mmap(NULL, gc->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (gc->base == MAP_FAILED) {
		gc->base = NULL;
		snprintf(why, whylen, "%s: mmap: %s", gc->path, strerror(errno));
		goto fail;
	}
	gc->rd = shmreader_attach(gc->base, gc->size);
	if (!gc->rd)
		goto nomem;
	return gc;
nomem:
	snprintf(why, whylen, "out of memory");
	errno = ENOMEM;
fail:
	guestchan_close(gc);
	return NULL;
}

void guestchan_close(struct guestchan *gc)
{
	if (!gc)
		return;
	shmreader_detach(gc->rd);
	if (gc->base)
		munmap(gc->base, gc->size);
	match_free(gc->m);
	merge_free(gc->mg);
	free(gc->v);
	free(gc->tids);
	free(gc);
}

void guestchan_set_tids(struct guestchan *gc, const uint32_t *tids, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < gc->nvcpus; i++)
		gc->tids[i] = tids[i];
}

uint32_t guestchan_nvcpus(const struct guestchan *gc)
{
	return gc->nvcpus;
}

void guestchan_host_out(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			char state)
{
	(void)match_add_out(gc->m, vcpu, start_ns, end_ns, state);
}

void guestchan_host_run(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			uint32_t pid, const char *comm, int idle)
{
	(void)match_add_run(gc->m, vcpu, start_ns, end_ns, pid, comm, idle);
}

void guestchan_host_agg(struct guestchan *gc, uint32_t vcpu, uint16_t kind, uint32_t id,
			const char *name, uint64_t total_ns)
{
	uint8_t h = kind == VN_HOST_AGG_EXIT ? VN_HOST_HCLASS_VMEXIT : VN_HOST_HCLASS_IRQ;

	(void)match_add_agg(gc->m, vcpu, h,
			    kind == VN_HOST_AGG_EXIT ? id : (uint32_t)kind << 24 | id, name,
			    total_ns);
}

/* ---- clock ---- */

/* Keep this thread off the pCPU the answering vCPU is pinned to, if it can run elsewhere. Once. */
static void keep_off_answerer(struct guestchan *gc)
{
	cpu_set_t vset, mine;
	int c, pc = -1;

	if (gc->placed || gc->ans_cpu >= gc->nvcpus || !gc->tids[gc->ans_cpu])
		return;
	gc->placed = true;
	if (sched_getaffinity((pid_t)gc->tids[gc->ans_cpu], sizeof(vset), &vset) ||
	    CPU_COUNT(&vset) != 1 || sched_getaffinity(0, sizeof(mine), &mine))
		return;
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &vset))
			pc = c;
	if (pc < 0 || !CPU_ISSET(pc, &mine) || CPU_COUNT(&mine) < 2)
		return;
	CPU_CLR(pc, &mine);
	if (sched_setaffinity(0, sizeof(mine), &mine))
		return;
	/* the other CPUs run vCPUs too: wake on the grid point, not a scheduler slice later (a request sent
	 * late misses the guest's spin window); the loop sleeps all but ~1% of the time */
	if (sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 1 }))
		log_debug("guest channel %s: monitor thread stays SCHED_OTHER", gc->path);
	log_info("guest channel %s: clock answered by vCPU %u, pinned to CPU %d: watching from the "
		 "other "
		 "CPUs",
		 gc->path, gc->ans_cpu, pc);
}

static void exchange_done(struct guestchan *gc, const struct shmreader_clock_reply *r,
			  uint64_t recv_ns)
{
	gc->ans_cpu = r->cpu;
	keep_off_answerer(gc);
	gc->outstanding = false;
	gc->exchanges++;
	(void)clocksync_update(&gc->cs, r->host_send_ns, r->guest_ns, recv_ns);
}

static void clock_round(struct guestchan *gc, uint64_t now)
{
	struct shmreader_clock_reply r;
	uint64_t t;
	int rc;

	if (gc->outstanding) {
		rc = shmreader_mailbox_reply(gc->rd, &r);
		if (rc == 1) {
			exchange_done(gc, &r, now_ns());
			if (log_verbosity() >= 2)
				log_debug("clock: late answer, rtt %.1f us",
					  (double)(now_ns() - gc->sent_ns) / 1e3);
		} else if (now - gc->sent_ns > ABANDON_NS) {
			gc->outstanding = false;
			gc->abandoned++;
		}
	}
	if (gc->outstanding || now < gc->next_exchange_ns)
		return;
	gc->next_exchange_ns = (now / VN_SHM_CLOCK_GRID_NS + 1) * VN_SHM_CLOCK_GRID_NS;
	t = now_ns();
	if (shmreader_mailbox_send(gc->rd, gc->base, t, &r.req_seq))
		return;
	gc->outstanding = true;
	gc->sent_ns = t;
	do {
		rc = shmreader_mailbox_reply(gc->rd, &r);
		if (rc == 1) {
			exchange_done(gc, &r, now_ns());
			if (log_verbosity() >= 2)
				log_debug("clock: rtt %.1f us (sent %.3f ms after the grid point)",
					  (double)(now_ns() - t) / 1e3,
					  (double)(t % VN_SHM_CLOCK_GRID_NS) / 1e6);
			break;
		}
		if (rc != 0 && rc != -EAGAIN)
			break;
	} while (now_ns() - t < SPIN_NS);
}

static bool clocksync_state_valid(const struct guestchan *gc)
{
	return gc->cs.mode != CLOCKSYNC_MODE_NONE;
}

/* ---- records ---- */

/* Convert [*start, *end) from guest to host time in place; false (counted as unsynced) without a model. */
static bool to_host(struct guestchan *gc, __u64 *start, __u64 *end)
{
	uint64_t s, e;

	if (clocksync_g2h(&gc->cs, *start, &s) || clocksync_g2h(&gc->cs, *end, &e)) {
		gc->unsynced++;
		return false;
	}
	*start = s;
	*end = e;
	return true;
}

static void on_record(void *ctx, uint32_t ring, uint64_t pos, const struct vn_shm_slot *rec)
{
	struct guestchan *gc = ctx;

	(void)pos;
	if (ring >= gc->nvcpus)
		return;
	{
		struct gvcpu *v = &gc->v[ring];
		uint64_t end = rec->type == VN_SHM_REC_SAMPLE ? rec->payload.sample.end_ns
							      : rec->payload.event.end_ns;

		if ((v->last_end > REORDER_NS && end < v->last_end - REORDER_NS) ||
		    gc->pending >= PENDING_MAX) {
			gc->rejected++;
			return;
		}
		if (end > v->last_end)
			v->last_end = end;
		gc->pending++;
	}
	if (rec->type == VN_SHM_REC_SAMPLE) {
		struct vn_sample x = rec->payload.sample;

		x.cpu = (uint16_t)ring;
		if (merge_add_sample(gc->mg, &x) == -ENOMEM)
			gc->gonly_nomem++;
		if (to_host(gc, &x.start_ns, &x.end_ns))
			(void)match_add_sample(
			    gc->m, ring, &x,
			    clocksync_uncertainty_ns(&gc->cs, rec->payload.sample.end_ns));
	} else {
		struct vn_event x = rec->payload.event;

		x.cpu = (uint16_t)ring;
		if (merge_add_event(gc->mg, &x) == -ENOMEM)
			gc->gonly_nomem++;
		if (to_host(gc, &x.start_ns, &x.end_ns))
			(void)match_add_event(gc->m, ring, &x);
	}
}

static void follow_epoch(struct guestchan *gc)
{
	struct vn_shm_header h;

	if (shmreader_check(gc->rd) != SHMREADER_OK || shmreader_header(gc->rd, &h) ||
	    h.epoch == gc->epoch)
		return;
	if (gc->epoch)
		log_info("guest channel %s: new epoch %llu (guest agent restarted)", gc->path,
			 (unsigned long long)h.epoch);
	gc->epoch = h.epoch;
	gc->attach_ns = now_ns();
	clocksync_reset(&gc->cs);
	gc->outstanding = false;
	gc->next_exchange_ns = 0;
	gc->guest_h = 0;
	gc->pending = 0;
	for (uint32_t i = 0; i < gc->nvcpus; i++)
		gc->v[i].last_end = 0;
	if (new_merge(gc))
		log_warn("guest channel %s: out of memory for the guest-only view", gc->path);
}

void guestchan_clock(struct guestchan *gc, uint64_t now)
{
	follow_epoch(gc);
	if (shmreader_state(gc->rd) != SHMREADER_OK)
		return;
	clock_round(gc, now);
	gc->clocked = true;
}

void guestchan_tick(struct guestchan *gc, uint64_t now, uint64_t host_horizon_ns)
{
	struct shmreader_ring_info ri;
	uint64_t gh = UINT64_MAX, ghh;
	uint32_t r, n;
	bool any = false;

	follow_epoch(gc);
	if (shmreader_state(gc->rd) != SHMREADER_OK)
		return;
	if (!gc->clocked)
		clock_round(gc, now);
	gc->clocked = false;
	if (!clocksync_state_valid(gc) && now < gc->attach_ns + UNSYNCED_WAIT_NS)
		return; /* records wait in the ring until their times can be converted... */
	n = shmreader_nrings(gc->rd);
	for (r = 0; r < n && r < gc->nvcpus; r++) {
		if (shmreader_poll(gc->rd, r, on_record, gc, POLL_MAX) == -EPROTO)
			return;
		if (!shmreader_ring_info(gc->rd, r, &ri) && ri.horizon_ns) {
			any = true;
			if (ri.horizon_ns < gh)
				gh = ri.horizon_ns;
		}
	}
	if (!any)
		return;
	if (gh > gc->guest_h)
		gc->pending = 0;
	gc->guest_h = gh;
	if (gh > gc->mg_horizon) {
		if (merge_process(gc->mg, gh))
			log_warn("guest channel %s: out of memory in the guest-only view",
				 gc->path);
		gc->mg_horizon = gh;
	}
	if (clocksync_g2h(&gc->cs, gh, &ghh))
		return;
	if (log_verbosity() >= 2 && ++gc->dbg % 200 == 0)
		log_debug(
		    "guest channel %s: guest horizon %.3f ms behind, host horizon %.3f ms behind",
		    gc->path, ((double)now - (double)ghh) / 1e6,
		    ((double)now - (double)host_horizon_ns) / 1e6);
	gc->match_now = now_ns();
	(void)match_process(gc->m, ghh, host_horizon_ns, gc->match_now);
}

/* ---- period records ---- */

static void put_src(struct vn_host_msrc *out, size_t cap, size_t *n, const struct vn_host_msrc *s)
{
	if (*n < cap)
		out[(*n)++] = *s;
}

/* Guest-only sources: what merge attributed since the last period end (cumulative totals diffed). */
static void gonly_sources(struct guestchan *gc, uint32_t vcpu, uint64_t start,
			  struct vn_host_msrc *out, size_t cap, size_t *n)
{
	struct gvcpu *v = &gc->v[vcpu];
	struct merge_source cur[GONLY_SRC];
	size_t k, j, nc = merge_top_sources(gc->mg, (int)vcpu, cur, GONLY_SRC);

	for (k = 0; k < nc; k++) {
		uint64_t pt = 0, pc = 0;
		struct vn_host_msrc s = { .start_ns = start, .dom = gc->dom, .vcpu = vcpu };

		for (j = 0; j < v->nprev; j++)
			if (v->prev[j].cls == cur[k].cls && v->prev[j].id == cur[k].id &&
			    !strncmp(v->prev[j].comm, cur[k].comm, VN_COMM_LEN)) {
				pt = v->prev[j].total_ns;
				pc = v->prev[j].count;
				break;
			}
		if (cur[k].total_ns <= pt)
			continue;
		s.kind = VN_HOST_MSRC_GONLY;
		s.cls = cur[k].cls;
		s.id = cur[k].id;
		memcpy(s.comm, cur[k].comm, VN_HOST_COMM_LEN);
		s.comm[VN_HOST_COMM_LEN - 1] = 0;
		s.count = cur[k].count - pc;
		s.total_ns = cur[k].total_ns - pt;
		s.max_ns = cur[k].max_ns;
		put_src(out, cap, n, &s);
	}
	memcpy(v->prev, cur, nc * sizeof(cur[0]));
	v->nprev = (uint32_t)nc;
}

/* The combined view's totals of vCPU i for the period from the matcher (nothing if it has none). */
static void match_totals(const struct match_stats *p, struct vn_host_match *o)
{
	uint32_t k;

	o->gaps = p->gaps;
	o->gap_ns = p->gap_ns;
	o->max_gap_ns = p->max_gap_ns;
	o->runtime_ns = p->runtime_ns;
	for (k = 0; k < VN_CLASS_MAX && k < 8; k++)
		o->guest_ns[k] = p->guest_ns[k];
	for (k = 0; k < VN_HOST_HCLASS_MAX; k++)
		o->host_ns[k] = p->host_ns[k];
	o->residual_ns = p->residual_ns;
	o->reduced_ns = p->reduced_ns;
	o->big_gaps = p->big_gaps;
	o->big_matched = p->big_matched;
	o->big_explained = p->big_explained;
	o->big_guest = p->big_guest;
	o->uncertainty_max_ns = p->uncertainty_max_ns;
}

/* The combined view's sources of vCPU i for the period, appended to src (capacity cap, *n used). */
static void match_sources(const struct guestchan *gc, uint32_t i, const struct match_stats *p,
			  uint64_t start_ns, struct vn_host_msrc *src, size_t cap, size_t *n)
{
	for (uint32_t k = 0; k < p->nsrc; k++) {
		const struct match_source *ms = &p->src[k];
		struct vn_host_msrc s = { .start_ns = start_ns, .dom = gc->dom, .vcpu = i };

		s.kind = ms->kind == MATCH_K_HOST ? VN_HOST_MSRC_HOST : VN_HOST_MSRC_GUEST;
		s.cls = ms->cls;
		s.id = ms->id;
		memcpy(s.comm, ms->comm, VN_HOST_COMM_LEN);
		s.comm[VN_HOST_COMM_LEN - 1] = 0;
		s.count = ms->count;
		s.total_ns = ms->total_ns;
		s.max_ns = ms->max_ns;
		put_src(src, cap, n, &s);
	}
}

/* vCPU i's latency and guest-only figures of the period into o; they start again from zero. */
static void vcpu_totals(struct gvcpu *v, struct vn_host_match *o)
{
	for (uint32_t k = 0; k < 8; k++)
		o->gonly_ns[k] = v->gonly_ns[k];
	o->latency_max_ns = v->lat_max;
	o->latency_sum_ns = v->lat_sum;
	o->latency_gaps = v->lat_n;
	v->lat_max = v->lat_sum = v->lat_n = 0;
	o->gonly_gaps = v->gonly_gaps;
	o->gonly_gap_ns = v->gonly_gap_ns;
	memset(v->gonly_ns, 0, sizeof(v->gonly_ns));
	v->gonly_gaps = v->gonly_gap_ns = 0;
}

/* The channel's reader counters (state, epoch, records and losses). */
static void chan_reader(const struct guestchan *gc, struct vn_host_chan *ch)
{
	struct shmreader_stats st;
	struct vn_shm_status gs;

	switch (shmreader_state(gc->rd)) {
	case SHMREADER_OK:
		ch->state = VN_HOST_CHAN_OK;
		break;
	case SHMREADER_CORRUPT:
		ch->state = VN_HOST_CHAN_CORRUPT;
		break;
	default:
		ch->state = VN_HOST_CHAN_WAITING;
	}
	ch->epoch = gc->epoch;
	ch->agent_state = shmreader_status(gc->rd, &gs) == 0 ? gs.agent_state : ~0u;
	ch->rings = shmreader_nrings(gc->rd);
	shmreader_stats(gc->rd, &st);
	ch->records = st.records;
	ch->lost = st.lost;
	ch->missed = st.missed;
	ch->torn = st.torn;
	ch->invalid = st.invalid + st.stale + gc->rejected;
	ch->corrupt = st.corrupt;
	ch->epochs = st.epochs;
	ch->guest_dropped = st.producer_dropped;
	ch->unsynced = gc->unsynced;
}

/* The clock model at end_ns and the matcher's late and refused records. */
static void chan_clock(struct guestchan *gc, uint64_t end_ns, struct vn_host_chan *ch)
{
	struct clocksync_state cst;
	struct match_counters mc;

	clocksync_state(&gc->cs, end_ns, &cst);
	log_debug("guest channel %s: clock mode %d drift %.3f ppm, min rtt %llu ns, window %u, "
		  "answering vCPU %u",
		  gc->path, (int)cst.mode, cst.drift_ppm, (unsigned long long)cst.min_rtt_ns,
		  cst.window_used, gc->ans_cpu);
	ch->clock_offset_ns = cst.valid ? cst.offset_ns : 0;
	ch->clock_uncertainty_ns = cst.valid ? cst.uncertainty_ns : UINT64_MAX;
	ch->clock_min_rtt_ns = cst.min_rtt_ns;
	ch->clock_exchanges = gc->exchanges;
	ch->clock_rejected = cst.rejected + gc->abandoned;
	for (uint32_t i = 0; i < gc->nvcpus; i++) {
		match_counters(gc->m, i, &mc);
		ch->late += mc.late;
		ch->match_dropped += mc.dropped;
	}
}

void guestchan_period(struct guestchan *gc, uint64_t start_ns, uint64_t end_ns,
		      struct vn_host_match *ms, struct vn_host_msrc *src, size_t *nsrc,
		      struct vn_host_chan *ch)
{
	size_t cap = *nsrc, n = 0;

	for (uint32_t i = 0; i < gc->nvcpus; i++) {
		const struct match_stats *p = match_stats_period(gc->m, i);
		struct vn_host_match *o = &ms[i];

		memset(o, 0, sizeof(*o));
		o->start_ns = start_ns;
		o->end_ns = end_ns;
		o->dom = gc->dom;
		o->vcpu = i;
		if (p) {
			match_totals(p, o);
			match_sources(gc, i, p, start_ns, src, cap, &n);
		}
		vcpu_totals(&gc->v[i], o);
		gonly_sources(gc, i, start_ns, src, cap, &n);
	}
	match_period_reset(gc->m);
	*nsrc = n;
	memset(ch, 0, sizeof(*ch));
	ch->start_ns = start_ns;
	ch->end_ns = end_ns;
	ch->dom = gc->dom;
	chan_reader(gc, ch);
	chan_clock(gc, end_ns, ch);
}
