/* SPDX-License-Identifier: MIT */
/*
 * guestchan: one domain's guest channel on the host side (see guestchan.h).
 *
 * Guest records are converted with the current clock model (host/match/clockxchg); records read before any
 * model exists are dropped and counted (unsynced). The guest horizon is the smallest ring horizon the agent
 * published (records that end before it are all in the ring), converted to host time.
 *
 * Faults: a new agent epoch (agent restarted, guest rebooted) resets the clock model and the matcher's guest
 * side; the epoch that ended is logged with its records read, lost and missed (the reader's counters since
 * it began), and the clock's first alignment in the new epoch is logged too. The region file removed under a
 * running host (rm /dev/shm/<name>) changes nothing for the mapping, which QEMU and the guest keep using: it
 * is said once (looked at every round). A channel opened after the removal finds the file through a QEMU
 * process that still maps it (/proc/PID/map_files, root).
 *
 * The region file itself: taken only from a trusted owner and mode (host/match/regiontrust, on the opened
 * fd); a refused file is said once, counted and never taken. Each round looks at the file's size before it
 * touches the mapping, and every public entry point that reads or writes the region arms the SIGBUS guard
 * around it (host/match/regionguard) for a truncation between that look and the access: either way the
 * channel is lost (said, counted), the mapping and the parts that use it (reader, DTL control) are dropped
 * with their counters kept, and the file is opened and validated again every REGION_RETRY_NS as a new region.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "match/clockxchg.h"
#include "match/guestchan.h"
#include "match/guestchan_priv.h"
#include "match/flipgate.h"
#include "match/regionguard.h"
#include "match/regiontrust.h"
#include "util/log.h"
#include "match/match.h"
#include "attrib/merge.h"
#include "channel/shmreader.h"
#include "util/monotime.h"

#define UNSYNCED_WAIT_NS \
	200000000ULL /* records wait this long for a clock model: then read, counted */
/*
 * Hostile input bounds. The queues of the matcher and of the guest-only view are sorted by start, so order is
 * checked on start: an agent publishes each ring's samples in time order and its events as they end, so a
 * sample starting more than REORDER_NS before the ring's latest sample start, or an event starting more than
 * EVENT_REORDER_NS before its latest event start (an event is published after the ones nested in it; the
 * host's records are not kept longer for it either: match.c), is refused (counted). The two streams are not ordered between them.
 *
 * Memory: what the guest's records make the matcher and the guest-only view hold, and the host's records
 * waiting for its gaps, is kept under the domain's budget (guestchan_opts.budget_bytes): the host's records
 * under a quarter of it (kept less than 10 s behind the host horizon if need be: match_host_trim), and
 * guest records are refused (counted with the matcher's drops, said at most every REFUSED_WARN_NS) while
 * all that is held, twice over (the arrays grow by doubling), reaches it; it is looked at every POLL_CHUNK
 * records. Work: a round reads at most POLL_MAX records per ring and stops
 * reading once ROUND_WORK records were fed or passed by sorted inserts, starting at the next ring each round;
 * the horizon moves only when every ring was read to its head, so that records left in a ring never come late.
 */
#define REORDER_NS 50000000ULL
#define EVENT_REORDER_NS 10000000000ULL
#define POLL_CHUNK 256u
#define ROUND_WORK GUESTCHAN_ROUND_WORK
#define POLL_MAX 16384u /* records per ring and round (1.6 M/s at the 5 ms round) */
#define MAX_MAP (1ULL << 30)
#define GONLY_SRC 64u /* guest-only sources diffed per vCPU and period */
#define MGAP_MAX 65536u /* matched gaps kept per period for the HOST_MGAP records */
#define REGION_RETRY_NS GUESTCHAN_REGION_RETRY_NS
#define MONOTONE_MAX_NS \
	1000000ULL /* a model step up to this keeps samples in order (to_host_sample) */
#define REFUSED_WARN_NS \
	10000000000ULL /* refused or skipped records are warned about at most this often */

struct gvcpu {
	uint64_t last_start
	    [2]; /* latest sample [0] and event [1] start fed from this ring (guest time) */
	uint64_t g_end,
	    h_end; /* the latest sample's end, guest time and converted (monotone conversion) */
	uint64_t gonly_ns[VN_CLASS_MAX], gonly_gaps, gonly_gap_ns; /* this period */
	uint64_t lat_sum, lat_max, lat_n; /* this period, live gaps only */
	struct merge_source prev[GONLY_SRC]; /* guest-only sources at the last period end */
	uint32_t nprev;
};

struct guestchan {
	uint32_t dom, nvcpus;
	char path[300];
	int fd; /* the region file (the DTL publisher's lock is on it) */
	void *base;
	size_t size;
	struct guestchan_opts o;
	struct dtlctl *dtl; /* whether and when the DTL is published */
	struct clockxchg *clk; /* the clock exchange and its model */
	struct chanbell *bell; /* --guest's doorbell */
	struct shm_reader *rd; /* --guest only */
	uint64_t epoch;
	struct match *m;
	struct merge *mg; /* guest-only view, guest time */
	uint64_t mg_horizon; /* guest time */
	uint64_t unsynced;
	uint64_t gonly_nomem; /* records the guest-only view could not take */
	uint64_t rejected; /* out of order beyond REORDER_NS / EVENT_REORDER_NS: not fed */
	uint64_t over_budget; /* refused: the domain's budget was reached */
	/* since the last warning: refused out of order (the worst by, ring), over budget; skipped, late */
	uint64_t w_order, w_order_ns, w_budget, w_skipped, w_late, warn_ns;
	uint32_t w_order_ring;
	uint64_t budget; /* bytes */
	bool full; /* the budget is reached: refuse (looked at every POLL_CHUNK records) */
	uint64_t fed; /* records fed, since the channel opened */
	uint32_t ring0; /* the ring this round reads first */
	struct flipgate epoch_gate; /* new epochs followed at a bounded rate */
	bool epoch_held; /* a new epoch waits for the gate: the rings are not read meanwhile */
	uint64_t guest_h; /* guest horizon (guest time) */
	uint64_t dbg;
	bool clocked; /* guestchan_clock ran this round */
	uint64_t attach_ns; /* host time the current epoch was attached: older gaps are backlog */
	/* the reader's counters when the current epoch began */
	uint64_t ep_records, ep_lost, ep_missed;
	bool unlinked; /* the region file was removed (said once) */
	/* the region's own state: mapped, lost (shrunk under the mapping) or refused (owner, mode) */
	enum guestchan_region region;
	char region_why[160]; /* why not mapped ("" while mapped) */
	uint64_t region_lost, region_refused; /* times lost; files refused (each said once) */
	uint64_t region_retry_ns; /* next open and validation while not mapped */
	bool refused_any; /* the file last refused: never taken (its owner may still map it) */
	dev_t refused_dev;
	ino_t refused_ino;
	struct regionguard guard; /* a SIGBUS in the mapping ends the access (regionguard.h) */
	struct shmreader_stats
	    rd_prev; /* the counters of the readers dropped with their mappings */
	struct dtlctl_info dtl_prev; /* the same for the DTL controls */
	uint64_t match_now; /* host time of the current match_process() call */
	struct vn_host_mgap *mgap; /* this period's matched gaps (HOST_MGAP), up to MGAP_MAX */
	size_t nmgap, mgapcap;
	uint64_t mgap_dropped; /* beyond MGAP_MAX or out of memory, since the last warning */
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

/* A matched gap as a HOST_MGAP record of the period: its start mapped back to guest time with the model
 * it was converted with (or the one that replaced it: within its error bound, which goes along). */
static void keep_mgap(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
		      const uint64_t guest_ns[VN_CLASS_MAX], const uint64_t host_ns[VN_HCLASS_MAX],
		      uint64_t residual_ns)
{
	const struct clocksync *cs = clockxchg_model(gc->clk);
	struct vn_host_mgap *g;
	uint64_t gs;

	if (end_ns <= start_ns || clocksync_h2g(cs, start_ns, &gs))
		return; /* empty (a start moved up to keep samples in order), or no model */
	if (gc->nmgap == gc->mgapcap) {
		size_t nc = gc->mgapcap ? 2 * gc->mgapcap : 1024;
		void *p = nc <= MGAP_MAX ? realloc(gc->mgap, nc * sizeof(*gc->mgap)) : NULL;

		if (!p) {
			gc->mgap_dropped++;
			return;
		}
		gc->mgap = p;
		gc->mgapcap = nc;
	}
	g = &gc->mgap[gc->nmgap++];
	memset(g, 0, sizeof(*g));
	g->start_ns = gs;
	g->host_start_ns = start_ns;
	g->duration_ns = end_ns - start_ns;
	g->uncertainty_ns = clocksync_uncertainty_ns(cs, gs);
	g->dom = gc->dom;
	g->vcpu = vcpu;
	memcpy(g->guest_ns, guest_ns, sizeof(g->guest_ns));
	memcpy(g->host_ns, host_ns, sizeof(g->host_ns));
	g->residual_ns = residual_ns;
}

const struct vn_host_mgap *guestchan_gaps(struct guestchan *gc, size_t *n)
{
	*n = gc->nmgap;
	gc->nmgap = 0;
	if (gc->mgap_dropped) {
		log_warn("guest channel %s: %" PRIu64
			 " matched gaps not recorded one by one (more than "
			 "%u in a period)",
			 gc->path, gc->mgap_dropped, MGAP_MAX);
		gc->mgap_dropped = 0;
	}
	return gc->mgap;
}

/* A matched gap: its record (HOST_MGAP) and the live latency (gap end -> matched), for gaps that ended after
 * the epoch was attached. */
static void on_matched_gap(void *ctx, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			   const uint64_t guest_ns[VN_CLASS_MAX],
			   const uint64_t host_ns[VN_HCLASS_MAX], uint64_t residual_ns)
{
	struct guestchan *gc = ctx;
	struct gvcpu *v;
	uint64_t l;

	keep_mgap(gc, vcpu, start_ns, end_ns, guest_ns, host_ns, residual_ns);
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

/* The mapping of want ("<path> (deleted)") in /proc/<pid>/maps, opened through map_files. An fd or -1. */
static int open_mapped(const char *pid, const char *want)
{
	char p[320], line[512];
	unsigned long lo, hi;
	int off, fd = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%s/maps", pid);
	f = fopen(p, "re");
	if (!f)
		return -1;
	while (fd < 0 && fgets(line, sizeof(line), f)) {
		off = 0;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) != 2 || !off ||
		    strcmp(line + off, want))
			continue;
		snprintf(p, sizeof(p), "/proc/%s/map_files/%lx-%lx", pid, lo, hi);
		fd = open(p, O_RDWR | O_CLOEXEC);
	}
	fclose(f);
	return fd;
}

/*
 * The region file was removed while its domain runs: open it through a QEMU process (comm qemu*) that still
 * maps it. Returns an fd (errno kept otherwise) or -1.
 */
static int open_removed(struct guestchan *gc)
{
	char want[sizeof(gc->path) + 16], p[320], comm[32];
	int fd = -1, err = errno;
	struct dirent *e;
	DIR *d;
	FILE *f;

	snprintf(want, sizeof(want), "%s (deleted)", gc->path);
	d = opendir("/proc");
	if (!d)
		goto out;
	while (fd < 0 && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof(p), "/proc/%s/comm", e->d_name);
		f = fopen(p, "re");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, "qemu", 4))
			fd = open_mapped(e->d_name, want);
		fclose(f);
		if (fd >= 0) {
			gc->unlinked = true;
			log_warn("guest channel %s: the region file was removed; mapping it "
				 "through QEMU "
				 "(pid %s), which still does",
				 gc->path, e->d_name);
		}
	}
	closedir(d);
out:
	errno = fd < 0 ? err : errno;
	return fd;
}

/* The counters of the readers and controls that went with their mappings, added to the current ones. */
static void add_stats(struct shmreader_stats *a, const struct shmreader_stats *b)
{
	a->records += b->records;
	a->lost += b->lost;
	a->missed += b->missed;
	a->retries += b->retries;
	a->torn += b->torn;
	a->stale += b->stale;
	a->invalid += b->invalid;
	a->corrupt += b->corrupt;
	a->epochs += b->epochs;
	a->producer_dropped += b->producer_dropped;
	a->status_invalid += b->status_invalid;
}

static void reader_stats(const struct guestchan *gc, struct shmreader_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (gc->rd)
		shmreader_stats(gc->rd, out);
	add_stats(out, &gc->rd_prev);
}

/* Drop the mapping and the parts that use it (their counters kept); the guest side starts again. */
static void region_unmap(struct guestchan *gc)
{
	bool mapped = gc->base != NULL;

	if (gc->rd) {
		struct shmreader_stats st;

		shmreader_stats(gc->rd, &st);
		add_stats(&gc->rd_prev, &st);
		shmreader_detach(gc->rd);
		gc->rd = NULL;
	}
	if (gc->dtl) {
		struct dtlctl_info d;

		dtlctl_info(gc->dtl, &d);
		gc->dtl_prev.published += d.published;
		gc->dtl_prev.dropped += d.dropped;
		gc->dtl_prev.aggs += d.aggs;
		dtlctl_free(gc->dtl);
		gc->dtl = NULL;
	}
	if (gc->base)
		munmap(gc->base, gc->size);
	gc->base = NULL;
	gc->size = 0;
	if (gc->fd >= 0)
		close(gc->fd); /* releases the publisher's lock */
	gc->fd = -1;
	if (!mapped)
		return;
	gc->epoch = 0;
	gc->epoch_held = false;
	gc->guest_h = 0;
	if (gc->m)
		match_guest_reset(gc->m);
	clockxchg_new_mailbox(gc->clk);
	chanbell_forget(gc->bell);
}

/* The file fd refers to (st) is not to be used: said once a file, counted, never taken (its owner may have
 * it mapped still). */
static void region_refuse(struct guestchan *gc, const struct stat *st, const char *reason)
{
	bool again =
	    gc->refused_any && st->st_dev == gc->refused_dev && st->st_ino == gc->refused_ino;

	if (!again) {
		snprintf(gc->region_why, sizeof(gc->region_why), "%s", reason);
		gc->refused_any = true;
		gc->refused_dev = st->st_dev;
		gc->refused_ino = st->st_ino;
		gc->region_refused++;
		log_warn(
		    "guest channel %s: refused: %s (anyone else who can write the file owns the "
		    "channel): no guest channel or dispatch trace log for this file",
		    gc->path, reason);
	}
	gc->region = GUESTCHAN_REGION_REFUSED;
}

/*
 * Open the region file, check its owner and mode on the opened file (regiontrust), map it read-write and set
 * up the parts that use it. 0 or -errno with why: -EACCES refused (said and counted), -ENOMEM, others: no
 * usable file.
 */
static int region_open(struct guestchan *gc, const struct dtlpub_params *pp, char *why,
		       size_t whylen)
{
	char reason[128];
	struct stat st;
	int rc;

	gc->fd = open(gc->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (gc->fd < 0 && errno == ENOENT)
		gc->fd = open_removed(gc);
	if (gc->fd < 0 || fstat(gc->fd, &st)) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", gc->path, strerror(errno));
		goto fail;
	}
	if (gc->refused_any && st.st_dev == gc->refused_dev && st.st_ino == gc->refused_ino)
		rc = -EACCES; /* the one refused already */
	else
		rc = regiontrust_check(&st, regiontrust_qemu(), geteuid(), reason, sizeof(reason));
	if (rc) {
		region_refuse(gc, &st, reason);
		snprintf(why, whylen, "%s: refused: %s", gc->path, gc->region_why);
		goto fail;
	}
	if (st.st_size < (off_t)VN_SHM_HEADER_SIZE || (uint64_t)st.st_size > MAX_MAP) {
		snprintf(why, whylen, "%s: not a usable region (%lld bytes)", gc->path,
			 (long long)st.st_size);
		rc = -EINVAL;
		goto fail;
	}
	gc->size = (size_t)st.st_size;
	gc->base = mmap(NULL, gc->size, PROT_READ | PROT_WRITE, MAP_SHARED, gc->fd, 0);
	if (gc->base == MAP_FAILED) {
		gc->base = NULL;
		rc = -errno;
		snprintf(why, whylen, "%s: mmap: %s", gc->path, strerror(errno));
		goto fail;
	}
	rc = -ENOMEM;
	gc->dtl = dtlctl_new(gc->path, gc->fd, gc->base, gc->size, pp, gc->o.tc);
	if (!gc->dtl || (gc->o.match && !(gc->rd = shmreader_attach(gc->base, gc->size)))) {
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	gc->region = GUESTCHAN_REGION_MAPPED;
	gc->region_why[0] = 0;
	return 0;
fail:
	region_unmap(gc);
	return rc;
}

static void dtl_params(const struct guestchan *gc, struct dtlpub_params *pp)
{
	*pp = (struct dtlpub_params){ .dom = gc->dom,
				      .nvcpus = gc->nvcpus,
				      .detail = gc->o.detail,
				      .period_ns = gc->o.period_ns };
}

/* The channel is lost (what: why): said once, counted; the mapping goes, opened again every REGION_RETRY_NS. */
static void region_lost(struct guestchan *gc, const char *what)
{
	gc->region_lost++;
	gc->region = GUESTCHAN_REGION_LOST;
	snprintf(gc->region_why, sizeof(gc->region_why), "%s", what);
	log_warn(
	    "guest channel %s: %s: channel lost (the guest side starts again); the file is opened "
	    "and validated again every %.0f s",
	    gc->path, what, REGION_RETRY_NS / 1e9);
	region_unmap(gc);
	gc->region_retry_ns = now_ns() + REGION_RETRY_NS;
}

/* A SIGBUS in the mapping: the file shrank between the round's look at its size and an access. */
static void region_faulted(struct guestchan *gc)
{
	region_lost(gc, "an access past the region file's end faulted (the file shrank under the "
			"mapping)");
}

/* Not mapped: open and validate the file again when it is time (quietly while it stays unusable). */
static void region_retry(struct guestchan *gc, uint64_t now)
{
	struct dtlpub_params pp;
	char why[256];

	if (now < gc->region_retry_ns)
		return;
	gc->region_retry_ns = now + REGION_RETRY_NS;
	dtl_params(gc, &pp);
	if (region_open(gc, &pp, why, sizeof(why))) {
		log_debug("guest channel %s: still not mapped: %s", gc->path, why);
		return;
	}
	log_info("guest channel %s: the region file is whole and valid again (%zu bytes): channel "
		 "mapped again",
		 gc->path, gc->size);
}

/*
 * Before a round touches the region: open it again if it is not mapped (when due), else look at the file:
 * shorter than the mapping, the channel is lost (pages past its end would fault); removed, said once (the
 * mapping goes on: QEMU and the guest keep using it). True when the region may be used.
 */
static bool region_ready(struct guestchan *gc, uint64_t now)
{
	struct stat st;

	if (!gc->base) {
		region_retry(gc, now);
		return gc->base != NULL;
	}
	if (fstat(gc->fd, &st))
		return true; /* cannot happen on an open fd; the guard still holds */
	if (st.st_size < (off_t)gc->size) {
		char what[96];

		snprintf(what, sizeof(what),
			 "the region file shrank to %lld bytes under the mapping (%zu)",
			 (long long)st.st_size, gc->size);
		region_lost(gc, what);
		return false;
	}
	if (!st.st_nlink && !gc->unlinked) {
		gc->unlinked = true;
		log_warn(
		    "guest channel %s: the region file was removed; QEMU still maps it and the "
		    "guest still writes it: reading and publishing go on through this mapping",
		    gc->path);
	}
	return true;
}

/* Arm the fault guard around an entry point's region accesses; a fault loses the channel and runs ret. */
#define GUARD_BEGIN(gc, ret)                                           \
	do {                                                           \
		regionguard_arm(&(gc)->guard, (gc)->base, (gc)->size); \
		if (sigsetjmp((gc)->guard.jb, 0)) {                    \
			region_faulted(gc);                            \
			ret;                                           \
		}                                                      \
	} while (0)
#define GUARD_END() regionguard_disarm()

struct guestchan *guestchan_open(const char *shm_name, uint32_t dom, uint32_t nvcpus,
				 const struct guestchan_opts *o, char *why, size_t whylen)
{
	struct dtlpub_params pp;
	struct guestchan *gc;
	int rc;

	if (!shm_name || !*shm_name || strchr(shm_name, '/') || !nvcpus ||
	    nvcpus > MATCH_MAX_VCPUS || nvcpus > VN_DTL_MAX_VCPUS) {
		snprintf(why, whylen, "no usable ivshmem name");
		errno = EINVAL;
		return NULL;
	}
	rc = regionguard_install();
	if (rc) {
		snprintf(why, whylen, "cannot install the SIGBUS guard: %s", strerror(-rc));
		errno = -rc;
		return NULL;
	}
	gc = calloc(1, sizeof(*gc));
	if (!gc)
		goto nomem;
	gc->fd = -1;
	gc->dom = dom;
	gc->nvcpus = nvcpus;
	gc->o = *o;
	gc->budget = o->budget_bytes ? o->budget_bytes : GUESTCHAN_BUDGET_DEFAULT;
	snprintf(gc->path, sizeof(gc->path), "/dev/shm/%s", shm_name);
	gc->v = calloc(nvcpus, sizeof(*gc->v));
	gc->clk = clockxchg_new(gc->path, nvcpus);
	gc->bell = chanbell_new(gc->path);
	if (!gc->v || !gc->clk || !gc->bell)
		goto nomem;
	if (o->match) {
		gc->m = match_new(NULL);
		if (gc->m)
			match_set_gap_cb(gc->m, on_matched_gap, gc);
		if (!gc->m || new_merge(gc))
			goto nomem;
	}
	dtl_params(gc, &pp);
	rc = region_open(gc, &pp, why, whylen);
	if (rc == -EACCES) {
		gc->region_retry_ns = now_ns() + REGION_RETRY_NS;
		return gc; /* refused: said, counted and shown; looked at again */
	}
	if (rc) {
		errno = -rc;
		goto fail;
	}
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
	region_unmap(gc);
	chanbell_free(gc->bell);
	match_free(gc->m);
	merge_free(gc->mg);
	free(gc->mgap);
	free(gc->v);
	clockxchg_free(gc->clk);
	free(gc);
}

void guestchan_region_info(const struct guestchan *gc, struct guestchan_region_info *out)
{
	memset(out, 0, sizeof(*out));
	out->state = gc->region;
	snprintf(out->why, sizeof(out->why), "%s", gc->region_why);
	out->lost = gc->region_lost;
	out->refused = gc->region_refused;
}

/* The current publisher: NULL while nothing is published or the region is not mapped. */
static struct dtlpub *cur_pub(const struct guestchan *gc)
{
	return gc->dtl ? dtlctl_pub(gc->dtl) : NULL;
}

void guestchan_set_tids(struct guestchan *gc, const uint32_t *tids, uint32_t n)
{
	clockxchg_set_tids(gc->clk, tids, n);
}

uint32_t guestchan_nvcpus(const struct guestchan *gc)
{
	return gc->nvcpus;
}

void guestchan_host_out(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			char state, uint64_t wake_ns, uint32_t flags)
{
	struct dtlpub *pub = cur_pub(gc);

	if (gc->m)
		(void)match_add_out(gc->m, vcpu, start_ns, end_ns, state);
	if (!pub)
		return;
	GUARD_BEGIN(gc, return );
	dtlpub_out(pub, vcpu, start_ns, end_ns, state, wake_ns, flags, clockxchg_model(gc->clk));
	GUARD_END();
}

void guestchan_host_run(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			uint32_t pid, const char *comm, int idle)
{
	struct dtlpub *pub = cur_pub(gc);

	if (gc->m)
		(void)match_add_run(gc->m, vcpu, start_ns, end_ns, pid, comm, idle);
	if (!pub)
		return;
	GUARD_BEGIN(gc, return );
	dtlpub_run(pub, vcpu, start_ns, end_ns, pid, comm, idle);
	GUARD_END();
}

void guestchan_host_open(struct guestchan *gc, uint32_t vcpu, uint64_t open_ns)
{
	if (gc->m)
		match_host_open(gc->m, vcpu, open_ns);
}

void guestchan_host_agg(struct guestchan *gc, uint32_t vcpu, uint16_t kind, uint16_t isa,
			uint32_t id, uint64_t count, uint64_t total_ns)
{
	uint8_t h = kind == VN_HOST_AGG_EXIT ? VN_HCLASS_VMEXIT : VN_HCLASS_HOST_IRQ;
	struct dtlpub *pub = cur_pub(gc);

	if (gc->m)
		(void)match_add_agg(gc->m, vcpu, h,
				    kind == VN_HOST_AGG_EXIT ? id : (uint32_t)kind << 24 | id, "",
				    total_ns);
	if (!pub)
		return;
	GUARD_BEGIN(gc, return );
	dtlpub_agg(pub, vcpu, kind, isa, id, count, total_ns);
	GUARD_END();
}

void guestchan_host_period(struct guestchan *gc, uint64_t start_ns, uint64_t end_ns)
{
	struct dtlpub *pub = cur_pub(gc);

	if (!pub)
		return;
	GUARD_BEGIN(gc, return );
	dtlpub_period(pub, start_ns, end_ns, clockxchg_model(gc->clk));
	GUARD_END();
}

void guestchan_dtl_info(const struct guestchan *gc, struct dtlctl_info *out)
{
	memset(out, 0, sizeof(*out));
	if (gc->dtl)
		dtlctl_info(gc->dtl, out);
	else
		out->state = DTLCTL_FAILED;
	out->detail = gc->o.detail;
	out->published += gc->dtl_prev.published;
	out->dropped += gc->dtl_prev.dropped;
	out->aggs += gc->dtl_prev.aggs;
}

/* ---- the bell ---- */

void guestchan_set_bell(struct guestchan *gc, const char *sock_path)
{
	chanbell_set_path(gc->bell, sock_path);
}

void guestchan_bell_heard(struct guestchan *gc, short revents, uint64_t now)
{
	chanbell_heard(gc->bell, revents, now);
}

int guestchan_bell_arm(struct guestchan *gc, uint64_t now, bool arm)
{
	struct dtlpub *pub = cur_pub(gc);
	struct vn_shm_status gs;
	bool idle;
	int fd;

	if (!gc->rd || shmreader_state(gc->rd) != SHMREADER_OK)
		return GUESTCHAN_IDLE; /* no agent publishing: nothing to match */
	GUARD_BEGIN(gc, return GUESTCHAN_IDLE);
	idle = !shmreader_status(gc->rd, &gs) && gs.agent_state != VN_SHM_AGENT_RUNNING;
	fd = idle || !pub
		 ? -1 /* no agent publishing, or not this host's bell to arm */
		 : chanbell_arm(gc->bell, now,
				arm && clockxchg_valid(gc->clk) && !match_gaps_waiting(gc->m),
				dtlpub_writer(pub));
	GUARD_END();
	if (idle)
		return GUESTCHAN_IDLE;
	return fd >= 0 ? fd : GUESTCHAN_BUSY;
}

void guestchan_bell_info(const struct guestchan *gc, struct chanbell_info *out)
{
	chanbell_info(gc->bell, out);
}

/* ---- records ---- */

/* Convert [*start, *end) from guest to host time in place; false (counted as unsynced) without a model. */
static bool to_host(struct guestchan *gc, __u64 *start, __u64 *end)
{
	uint64_t s, e;

	const struct clocksync *cs = clockxchg_model(gc->clk);

	if (clocksync_g2h(cs, *start, &s) || clocksync_g2h(cs, *end, &e)) {
		gc->unsynced++;
		return false;
	}
	*start = s;
	*end = e;
	return true;
}

/*
 * A sample converted so that samples in time order in guest time stay so in host time: a gap that begins
 * where the previous sample ended (a window closed and a gap followed) must not begin before it once the
 * clock model has moved between the two (the matcher would take it as late).
 */
static bool to_host_sample(struct guestchan *gc, struct gvcpu *v, struct vn_sample *x)
{
	uint64_t gs = x->start_ns, ge = x->end_ns;

	if (!to_host(gc, &x->start_ns, &x->end_ns))
		return false;
	if (gs >= v->g_end && x->start_ns < v->h_end && v->h_end - x->start_ns <= MONOTONE_MAX_NS) {
		x->start_ns = v->h_end;
		if (x->end_ns < x->start_ns)
			x->end_ns = x->start_ns;
	}
	if (ge >= v->g_end) {
		v->g_end = ge;
		v->h_end = x->end_ns;
	}
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
		bool ev = rec->type != VN_SHM_REC_SAMPLE;
		uint64_t start = ev ? rec->payload.event.start_ns : rec->payload.sample.start_ns;
		uint64_t win = ev ? EVENT_REORDER_NS : REORDER_NS, *last = &v->last_start[ev];

		if (*last > win && start < *last - win) {
			gc->rejected++;
			gc->w_order++;
			if (*last - start > gc->w_order_ns) {
				gc->w_order_ns = *last - start;
				gc->w_order_ring = ring;
			}
			return;
		}
		if (gc->full) {
			gc->over_budget++;
			gc->w_budget++;
			return;
		}
		if (start > *last)
			*last = start;
		gc->fed++;
	}
	if (rec->type == VN_SHM_REC_SAMPLE) {
		struct vn_sample x = rec->payload.sample;

		x.cpu = (uint16_t)ring;
		if (merge_add_sample(gc->mg, &x) == -ENOMEM)
			gc->gonly_nomem++;
		if (to_host_sample(gc, &gc->v[ring], &x))
			(void)match_add_sample(
			    gc->m, ring, &x,
			    clocksync_uncertainty_ns(clockxchg_model(gc->clk),
						     rec->payload.sample.end_ns));
	} else {
		struct vn_event x = rec->payload.event;

		x.cpu = (uint16_t)ring;
		if (merge_add_event(gc->mg, &x) == -ENOMEM)
			gc->gonly_nomem++;
		if (to_host(gc, &x.start_ns, &x.end_ns))
			(void)match_add_event(gc->m, ring, &x);
	}
}

/*
 * A new agent epoch: log the one that ended (records read, lost when it ended or lapped, missed when it was
 * attached: the reader's counters since it began) and start the next from scratch.
 */
static void follow_epoch(struct guestchan *gc)
{
	struct shmreader_stats before, after;
	struct vn_shm_header h;

	const struct vn_shm_header *hd = gc->base;
	uint64_t ep = __atomic_load_n(&hd->epoch, __ATOMIC_ACQUIRE);

	if (gc->epoch && ep != gc->epoch) {
		switch (flipgate_allow(&gc->epoch_gate, now_ns(), ep)) {
		case FLIPGATE_HOLD_BEGAN:
			if (flipgate_say(&gc->epoch_gate, now_ns()))
				log_warn(
				    "guest channel %s: the guest agent started %d epochs within "
				    "%.0f s: new epochs held off for up to %.0f s, or until one "
				    "lasts %.0f s (the rings are not read meanwhile; %llu held "
				    "off so far)",
				    gc->path, FLIPGATE_BURST + 1, FLIPGATE_WINDOW_NS / 1e9,
				    (double)(gc->epoch_gate.hold_until_ns - now_ns()) / 1e9,
				    FLIPGATE_SETTLE_NS / 1e9,
				    (unsigned long long)gc->epoch_gate.held);
			/* fall through */
		case FLIPGATE_HOLD:
			gc->epoch_held = true;
			return;
		case FLIPGATE_FOLLOW:
			break;
		}
	}
	gc->epoch_held = false;
	shmreader_stats(gc->rd, &before); /* check() adds the lost of an epoch it leaves... */
	if (shmreader_check(gc->rd) != SHMREADER_OK || shmreader_header(gc->rd, &h) ||
	    h.epoch == gc->epoch)
		return;
	shmreader_stats(gc->rd, &after); /* ... and the missed of the one it attaches */
	if (gc->epoch) {
		char line[512];

		snprintf(line, sizeof(line),
			 "guest channel %s: new epoch %llu (guest agent restarted); epoch %llu "
			 "ended: %llu records read, %llu lost, %llu missed",
			 gc->path, (unsigned long long)h.epoch, (unsigned long long)gc->epoch,
			 (unsigned long long)(before.records - gc->ep_records),
			 (unsigned long long)(after.lost - gc->ep_lost),
			 (unsigned long long)(before.missed - gc->ep_missed));
		if (flipgate_quiet(&gc->epoch_gate, now_ns()))
			log_debug("%s", line); /* after a hold: the hold's line said enough */
		else
			log_info("%s", line);
	}
	clockxchg_restart(gc->clk, now_ns(), gc->epoch != 0);
	gc->ep_records = after.records;
	gc->ep_lost = after.lost;
	gc->ep_missed = before.missed;
	gc->epoch = h.epoch;
	gc->attach_ns = now_ns();
	if (gc->m)
		match_guest_reset(gc->m);
	gc->guest_h = 0;
	chanbell_forget(gc->bell); /* the new agent says again that it rings */
	for (uint32_t i = 0; i < gc->nvcpus; i++)
		gc->v[i].last_start[0] = gc->v[i].last_start[1] = gc->v[i].g_end = gc->v[i].h_end =
		    0;
	if (new_merge(gc))
		log_warn("guest channel %s: out of memory for the guest-only view", gc->path);
}

/* The DTL's publishing state at host time now; a publisher that stopped or started takes its mailbox along. */
static void dtl_follow(struct guestchan *gc, uint64_t now)
{
	if (dtlctl_follow(gc->dtl, now))
		clockxchg_new_mailbox(gc->clk);
}

/* The clock mailbox: the current publisher's, NULL while nothing is published. */
static struct dtl_writer *pub_writer(const struct guestchan *gc)
{
	struct dtlpub *pub = cur_pub(gc);

	return pub ? dtlpub_writer(pub) : NULL;
}

void guestchan_clock(struct guestchan *gc, uint64_t now)
{
	gc->clocked = true;
	if (!region_ready(gc, now))
		return;
	GUARD_BEGIN(gc, return );
	if (gc->rd)
		follow_epoch(gc);
	dtl_follow(gc, now);
	clockxchg_round(gc->clk, pub_writer(gc), now);
	GUARD_END();
}

/*
 * Records refused, skipped or late since the last warning, said at most every REFUSED_WARN_NS with why: each
 * is counted in the channel's invalid or late figures, and a person reading the log should not have to guess.
 */
static void warn_refused(struct guestchan *gc, uint64_t now)
{
	struct shmreader_stats st;
	struct match_counters mc;
	uint64_t skipped, late = 0;

	if (now < gc->warn_ns)
		return;
	reader_stats(gc, &st);
	skipped = st.invalid + st.stale + st.torn;
	for (uint32_t i = 0; i < gc->nvcpus; i++) {
		match_counters(gc->m, i, &mc);
		late += mc.late + mc.host_late;
	}
	if (late < gc->w_late ||
	    skipped < gc->w_skipped) { /* the matcher or the reader began again */
		gc->w_late = late;
		gc->w_skipped = skipped;
	}
	if (gc->w_order || gc->w_budget || skipped > gc->w_skipped || late > gc->w_late)
		log_warn(
		    "guest channel %s: refused %llu records out of order (the worst started %.1f "
		    "ms "
		    "before ring %u's latest of its kind; counted as invalid) and %llu over the "
		    "domain's budget of %llu MiB (counted as matcher drops); skipped %llu slots "
		    "(invalid, stale or torn); %llu gaps or host records came late for the matcher "
		    "(after what they overlap was matched; said at most "
		    "every %.0f s)",
		    gc->path, (unsigned long long)gc->w_order, (double)gc->w_order_ns / 1e6,
		    gc->w_order_ring, (unsigned long long)gc->w_budget,
		    (unsigned long long)(gc->budget >> 20),
		    (unsigned long long)(skipped - gc->w_skipped),
		    (unsigned long long)(late - gc->w_late), (double)REFUSED_WARN_NS / 1e9);
	gc->w_order = gc->w_order_ns = gc->w_budget = 0;
	gc->w_skipped = skipped;
	gc->w_late = late;
	gc->warn_ns = now + REFUSED_WARN_NS;
}

/* The work the guest's records cost so far: records fed and records passed by sorted inserts. */
static uint64_t work_done(const struct guestchan *gc)
{
	return gc->fed + (gc->mg ? merge_insert_steps(gc->mg) : 0) +
	       (gc->m ? match_insert_steps(gc->m) : 0);
}

/* The guest's waiting records in the matcher and the guest-only view; *bytes: what they hold, with the
 * host's records waiting in the matcher for the guest's gaps (the budget covers both). */
static size_t held(const struct guestchan *gc, size_t *bytes)
{
	size_t bm = 0, bg = 0, n = 0;

	if (gc->mg)
		n += merge_held(gc->mg, &bg);
	if (gc->m) {
		n += match_guest_held(gc->m, &bm);
		bm += match_host_held(gc->m);
	}
	*bytes = bg + bm;
	return n;
}

size_t guestchan_held_bytes(const struct guestchan *gc)
{
	size_t b;

	(void)held(gc, &b);
	return b;
}

uint64_t guestchan_work(const struct guestchan *gc)
{
	return work_done(gc);
}

uint64_t guestchan_over_budget(const struct guestchan *gc)
{
	return gc->over_budget;
}

/*
 * Read the n rings within the round's work, from the ring after last round's first; -EPROTO: corrupt. An
 * insert passes at most the records held (which a chunk adds two to per record: merge and matcher), so a
 * chunk is sized to end within the work left; the last, of one record, may pass it by the records held. The
 * budget is looked at before each chunk.
 */
static int read_rings(struct guestchan *gc, uint32_t n)
{
	uint64_t w0 = work_done(gc), used = 0;

	for (uint32_t k = 0; k < n && used < ROUND_WORK; k++) {
		uint32_t r = (gc->ring0 + k) % n, left = POLL_MAX;
		int got;

		do {
			size_t bytes, recs = held(gc, &bytes);
			uint64_t chunk = (ROUND_WORK - used) / (recs + 2 * POLL_CHUNK + 1);

			chunk = chunk < 1 ? 1 : chunk > POLL_CHUNK ? POLL_CHUNK : chunk;
			if (chunk > left)
				chunk = left;
			gc->full = 2 * bytes >= gc->budget;
			got = shmreader_poll(gc->rd, r, on_record, gc, (uint32_t)chunk);
			if (got == -EPROTO)
				return got;
			left -= (uint32_t)chunk;
			used = work_done(gc) - w0;
		} while (got > 0 && left && used < ROUND_WORK);
	}
	gc->ring0 = n ? (gc->ring0 + 1) % n : 0;
	return 0;
}

/* --guest: read the agent's rings; the guest horizon in host time, or 0 when it cannot move this round. */
static uint64_t read_guest(struct guestchan *gc, uint64_t now)
{
	struct shmreader_ring_info ri;
	uint64_t gh = UINT64_MAX, ghh;
	uint32_t r, n;
	bool any = false;

	if (!gc->rd || gc->epoch_held || shmreader_state(gc->rd) != SHMREADER_OK)
		return 0;
	if (!clockxchg_valid(gc->clk) && now < gc->attach_ns + UNSYNCED_WAIT_NS)
		return 0; /* records wait in the ring until their times can be converted... */
	n = shmreader_nrings(gc->rd);
	if (n > gc->nvcpus)
		n = gc->nvcpus;
	if (read_rings(gc, n) == -EPROTO)
		return 0;
	for (r = 0; r < n; r++) {
		if (shmreader_ring_info(gc->rd, r, &ri) || !ri.horizon_ns)
			continue;
		if (ri.tail < ri.head)
			return 0; /* left for the next round: the horizon waits for its records */
		any = true;
		if (ri.horizon_ns < gh)
			gh = ri.horizon_ns;
	}
	if (!any)
		return 0;
	gc->guest_h = gh;
	if (gh > gc->mg_horizon) {
		if (merge_process(gc->mg, gh))
			log_warn("guest channel %s: out of memory in the guest-only view",
				 gc->path);
		gc->mg_horizon = gh;
	}
	if (clocksync_g2h(clockxchg_model(gc->clk), gh, &ghh))
		return 0;
	return ghh;
}

/* --guest: read the agent's rings and match what both sides delivered; with no guest progress the matcher
 * still lets go of the host's records it can no longer need. */
static void match_round(struct guestchan *gc, uint64_t now, uint64_t host_horizon_ns)
{
	uint64_t ghh = read_guest(gc, now);

	if (ghh && log_verbosity() >= 2 && ++gc->dbg % 200 == 0)
		log_debug(
		    "guest channel %s: guest horizon %.3f ms behind, host horizon %.3f ms behind",
		    gc->path, ((double)now - (double)ghh) / 1e6,
		    ((double)now - (double)host_horizon_ns) / 1e6);
	gc->match_now = now_ns();
	(void)match_process(gc->m, ghh, host_horizon_ns, gc->match_now);
	match_host_trim(gc->m, gc->budget / 4, host_horizon_ns);
	warn_refused(gc, now);
}

void guestchan_tick(struct guestchan *gc, uint64_t now, uint64_t host_horizon_ns)
{
	struct clockxchg_stats xs;
	bool clocked = gc->clocked; /* the round's look at the region was guestchan_clock's */

	gc->clocked = false;
	if (!(clocked && gc->base) && !region_ready(gc, now)) {
		if (gc->m)
			match_round(gc, now, host_horizon_ns); /* the host's records still let go */
		return;
	}
	GUARD_BEGIN(gc, return );
	if (gc->rd)
		follow_epoch(gc);
	dtl_follow(gc, now);
	if (!clocked)
		clockxchg_round(gc->clk, pub_writer(gc), now);
	clockxchg_check_realigned(gc->clk, now, gc->epoch);
	clockxchg_stats(gc->clk, &xs);
	dtlctl_status(gc->dtl, now, gc->o.dispatch ? host_horizon_ns : 0, clockxchg_model(gc->clk),
		      xs.exchanges);
	if (gc->rd)
		match_round(gc, now, host_horizon_ns);
	GUARD_END();
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
	for (k = 0; k < VN_HCLASS_MAX; k++)
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

/* The guest status' agent state (~0u: unknown or not mapped). */
static uint32_t agent_state(struct guestchan *gc)
{
	struct vn_shm_status gs;
	volatile uint32_t a = ~0u; /* volatile: set after the guard's sigsetjmp */

	if (!gc->rd)
		return a;
	GUARD_BEGIN(gc, return ~0u);
	if (!shmreader_status(gc->rd, &gs))
		a = gs.agent_state;
	GUARD_END();
	return a;
}

/* The channel's reader counters (state, epoch, records and losses; totals over its mappings). */
static void chan_reader(struct guestchan *gc, struct vn_host_chan *ch)
{
	struct shmreader_stats st;

	ch->agent_state = agent_state(gc);
	switch (gc->rd ? (int)shmreader_state(gc->rd) : -1) {
	case SHMREADER_OK:
		ch->state = VN_HOST_CHAN_OK;
		break;
	case SHMREADER_CORRUPT:
		ch->state = VN_HOST_CHAN_CORRUPT;
		break;
	case -1:
		ch->state = gc->region == GUESTCHAN_REGION_REFUSED ? VN_HOST_CHAN_REFUSED
								   : VN_HOST_CHAN_LOST;
		break;
	default:
		ch->state = VN_HOST_CHAN_WAITING;
	}
	ch->epoch = gc->epoch;
	ch->rings = gc->rd ? shmreader_nrings(gc->rd) : 0;
	reader_stats(gc, &st);
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
	struct clockxchg_stats xs;
	struct match_counters mc;

	clocksync_state(clockxchg_model(gc->clk), end_ns, &cst);
	clockxchg_stats(gc->clk, &xs);
	log_debug(
	    "guest channel %s: clock mode %d offset %lld ns +- %llu ns drift %.3f ppm, min rtt "
	    "%llu ns, window %u, answering vCPU %u",
	    gc->path, (int)cst.mode, (long long)cst.offset_ns,
	    (unsigned long long)cst.uncertainty_ns, cst.drift_ppm,
	    (unsigned long long)cst.min_rtt_ns, cst.window_used, xs.ans_cpu);
	ch->clock_offset_ns = cst.valid ? cst.offset_ns : 0;
	ch->clock_uncertainty_ns = cst.valid ? cst.uncertainty_ns : UINT64_MAX;
	ch->clock_min_rtt_ns = cst.min_rtt_ns;
	ch->clock_exchanges = xs.exchanges;
	ch->clock_rejected = cst.rejected + xs.abandoned;
	for (uint32_t i = 0; i < gc->nvcpus; i++) {
		match_counters(gc->m, i, &mc);
		ch->late += mc.late + mc.host_late;
		ch->match_dropped += mc.dropped;
	}
	ch->match_dropped += gc->over_budget;
}

size_t guestchan_worst(struct guestchan *gc, struct vn_host_worst *out, size_t max)
{
	const struct clocksync *cs = clockxchg_model(gc->clk);
	size_t n = 0;

	for (uint32_t i = 0; gc->m && i < gc->nvcpus && n < max; i++) {
		const struct vn_host_worst *w = match_worst_period(gc->m, i);
		uint64_t gs;

		if (!w || clocksync_h2g(cs, w->host_start_ns, &gs))
			continue; /* no gap, or no clock model to say when it was in the guest */
		out[n] = *w;
		out[n].start_ns = gs;
		out[n].dom = gc->dom;
		n++;
	}
	return n;
}

void guestchan_period(struct guestchan *gc, uint64_t start_ns, uint64_t end_ns,
		      struct vn_host_match *ms, struct vn_host_msrc *src, size_t *nsrc,
		      struct vn_host_chan *ch)
{
	size_t cap = *nsrc, n = 0;

	if (!gc->m) { /* publish-only channel: no matching */
		memset(ms, 0, gc->nvcpus * sizeof(*ms));
		memset(ch, 0, sizeof(*ch));
		*nsrc = 0;
		return;
	}
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
