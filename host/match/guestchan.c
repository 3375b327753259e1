/* SPDX-License-Identifier: MIT */
/*
 * guestchan: one domain's guest channel on the host side (see guestchan.h).
 *
 * Clock exchanges: one at a time, on the VN_SHM_CLOCK_GRID_NS grid of host time (the guest responder spins
 * around the predicted arrival), through the DTL mailbox (dtlwriter_request / dtlwriter_reply): whichever
 * guest process holds the responder lock answers. The request goes out and the host watches the mailbox for
 * up to SPIN_NS; after UNANSWERED_SPIN exchanges in a row without an answer (no responder in the guest) it
 * stops watching and only looks again at the next rounds, until an answer comes. Once the model is good
 * (clocksync_pace), requests go out every few grid points and the watch is shorter. A vCPU that
 * shares the watching thread's pCPU cannot answer during the watch (seen on a 2-CPU host: answers came a
 * scheduler slice late), so when the answering vCPU is pinned to one pCPU and this thread may run elsewhere,
 * the thread moves off that pCPU once (logged);
 * an answer that comes later is picked up at the next round (its larger round trip only widens its own
 * error bound, and each 100 ms bucket keeps its best exchange). An exchange unanswered for ABANDON_NS is
 * abandoned and counted.
 *
 * The DTL: published whenever the guest header says epoch 0 or version >= 2 (checked every round: a v1
 * agent that starts takes the region back) and this process holds flock(LOCK_EX) on the region file (one
 * publisher per domain). Each publisher start is a new host epoch.
 *
 * Guest records are converted with the current model; records read before any model exists are dropped and
 * counted (unsynced). The guest horizon is the smallest ring horizon the agent published (records that end
 * before it are all in the ring), converted to host time.
 *
 * Faults: a new agent epoch (agent restarted, guest rebooted) resets the clock model and the matcher's guest
 * side; the epoch that ended is logged with its records read, lost and missed (the reader's counters since
 * it began), and the clock's first alignment in the new epoch is logged too. The region file removed under a
 * running host (rm /dev/shm/<name>) changes nothing for the mapping, which QEMU and the guest keep using: it
 * is said once (checked every LINK_CHECK_NS). A channel opened after the removal finds the file through a
 * QEMU process that still maps it (/proc/PID/map_files, root).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "match/clocksync.h"
#include "match/dtlpub.h"
#include "match/guestchan.h"
#include "util/log.h"
#include "match/match.h"
#include "attrib/merge.h"
#include "channel/shmreader.h"
#include "util/monotime.h"

#define SPIN_NS 300000ULL
#define SPIN_MIN_NS 100000ULL /* the watch once the model is good: at least this (clocksync_pace) */
#define UNSYNCED_WAIT_NS 200000000ULL /* ... but not longer than this: then read and count them */
/*
 * Hostile input bounds: an agent publishes each ring's samples in time order and its events in time order,
 * so a sample ending more than REORDER_NS before the ring's latest sample, or an event before its latest
 * event, is refused (counted): this bounds the sorted inserts of the matcher and the guest-only view (a
 * queue for each). The two streams are not ordered between them: one drain passes a CPU's samples, then
 * its events, so after a drain held up for 80 ms (its vCPU preempted) the events are 80 ms behind. And at most PENDING_MAX records are fed while the guest's horizon
 * stands still, which bounds their memory.
 */
#define REORDER_NS 50000000ULL
#define PENDING_MAX (1u << 18)
#define ABANDON_NS 100000000ULL
#define POLL_MAX 16384u /* records per ring and round (1.6 M/s at the 5 ms round) */
#define MAX_MAP (1ULL << 30)
#define GONLY_SRC 64u /* guest-only sources diffed per vCPU and period */
#define LOCK_RETRY_NS 1000000000ULL /* another publisher: its lock tried again this often */
#define UNANSWERED_SPIN 3u /* exchanges unanswered in a row after which the host stops watching */
#define LINK_CHECK_NS 1000000000ULL /* the region file's link count is looked at this often */
#define REALIGN_LATE_NS 10000000000ULL /* a new epoch's clock not aligned after this: warned */
#define MONOTONE_MAX_NS \
	1000000ULL /* a model step up to this keeps samples in order (to_host_sample) */
#define REFUSED_WARN_NS \
	10000000000ULL /* refused or skipped records are warned about at most this often */

struct gvcpu {
	uint64_t
	    last_end[2]; /* latest sample [0] and event [1] end fed from this ring (guest time) */
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
	int fd; /* the region file, flock'ed while we publish */
	void *base;
	size_t size;
	struct guestchan_opts o;
	struct dtlpub *pub; /* NULL: not publishing (see dtl_state) */
	enum guestchan_dtl_state dtl_state;
	bool dtl_logged; /* the current non-publishing state was logged */
	uint64_t dtl_published, dtl_dropped,
	    dtl_aggs; /* of publishers closed before the current one */
	uint32_t unanswered; /* exchanges in a row without an answer */
	uint64_t lock_retry_ns; /* DTL_BUSY: when to try the publisher's lock again */
	uint64_t aligned_ns; /* the current publisher's first VN_DTL_S_CLOCK, once logged */
	uint64_t pub_ns; /* host time the current publisher started */
	struct shm_reader *rd; /* --guest only */
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
	/* since the last warning: refused out of order (the worst by, ring), beyond the cap; skipped, late */
	uint64_t w_order, w_order_ns, w_cap, w_skipped, w_late, warn_ns;
	uint32_t w_order_ring;
	uint64_t pending; /* records fed since the guest horizon last moved */
	uint64_t guest_h; /* guest horizon (guest time) */
	uint64_t dbg;
	bool clocked; /* guestchan_clock ran this round */
	uint64_t attach_ns; /* host time the current epoch was attached: older gaps are backlog */
	/* the reader's counters when the current epoch began */
	uint64_t ep_records, ep_lost, ep_missed;
	uint64_t realign_ns; /* an epoch change whose clock alignment is not logged yet */
	bool realign_late; /* ... and it was said that it is late */
	uint64_t link_check_ns; /* next look at the region file's link count */
	bool unlinked; /* the region file was removed (said once) */
	uint64_t match_now; /* host time of the current match_process() call */
	/* the bell (protocol/dtl.h struct vn_dtl_bell), --guest only */
	char bell_path[108]; /* the host socket of org.vnoise.bell.0; "" none */
	int bell_fd; /* -1: not connected */
	uint64_t bell_retry_ns; /* next connect attempt */
	bool bell_heard; /* the agent rang on this connection, this agent epoch: it rings */
	bool bell_armed; /* armed and not rung since */
	uint64_t bell_rings, bell_arms, bell_bytes;
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
			   const uint64_t host_ns[VN_HCLASS_MAX], uint64_t residual_ns)
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

/* Map the region file read-write; take the publisher's lock if nobody holds it. 0 or -1 (why set). */
static int map_region(struct guestchan *gc, char *why, size_t whylen)
{
	struct stat st;

	gc->fd = open(gc->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (gc->fd < 0 && errno == ENOENT)
		gc->fd = open_removed(gc);
	if (gc->fd < 0) {
		snprintf(why, whylen, "%s: %s", gc->path, strerror(errno));
		return -1;
	}
	if (fstat(gc->fd, &st) || !S_ISREG(st.st_mode) || st.st_size < (off_t)VN_SHM_HEADER_SIZE ||
	    (uint64_t)st.st_size > MAX_MAP) {
		snprintf(why, whylen, "%s: not a usable region (%lld bytes)", gc->path,
			 (long long)st.st_size);
		errno = EINVAL;
		return -1;
	}
	gc->size = (size_t)st.st_size;
	gc->base = mmap(NULL, gc->size, PROT_READ | PROT_WRITE, MAP_SHARED, gc->fd, 0);
	if (gc->base == MAP_FAILED) {
		gc->base = NULL;
		snprintf(why, whylen, "%s: mmap: %s", gc->path, strerror(errno));
		return -1;
	}
	if (flock(gc->fd, LOCK_EX | LOCK_NB))
		gc->dtl_state = GUESTCHAN_DTL_BUSY;
	return 0;
}

struct guestchan *guestchan_open(const char *shm_name, uint32_t dom, uint32_t nvcpus,
				 const struct guestchan_opts *o, char *why, size_t whylen)
{
	struct guestchan *gc;

	if (!shm_name || !*shm_name || strchr(shm_name, '/') || !nvcpus ||
	    nvcpus > MATCH_MAX_VCPUS || nvcpus > VN_DTL_MAX_VCPUS) {
		snprintf(why, whylen, "no usable ivshmem name");
		errno = EINVAL;
		return NULL;
	}
	gc = calloc(1, sizeof(*gc));
	if (!gc)
		goto nomem;
	gc->fd = -1;
	gc->bell_fd = -1;
	gc->dom = dom;
	gc->nvcpus = nvcpus;
	gc->o = *o;
	gc->v = calloc(nvcpus, sizeof(*gc->v));
	gc->tids = calloc(nvcpus, sizeof(*gc->tids));
	gc->ans_cpu = VN_SHM_CPU_UNKNOWN;
	if (!gc->v || !gc->tids || clocksync_init(&gc->cs, NULL))
		goto nomem;
	if (o->match) {
		gc->m = match_new(NULL);
		if (gc->m)
			match_set_gap_cb(gc->m, on_matched_gap, gc);
		if (!gc->m || new_merge(gc))
			goto nomem;
	}
	snprintf(gc->path, sizeof(gc->path), "/dev/shm/%s", shm_name);
	if (map_region(gc, why, whylen))
		goto fail;
	if (o->match && !(gc->rd = shmreader_attach(gc->base, gc->size)))
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
	if (gc->bell_fd >= 0)
		close(gc->bell_fd);
	dtlpub_free(gc->pub);
	if (gc->base)
		munmap(gc->base, gc->size);
	if (gc->fd >= 0)
		close(gc->fd); /* releases the publisher's lock */
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
			char state, uint32_t flags)
{
	if (gc->m)
		(void)match_add_out(gc->m, vcpu, start_ns, end_ns, state);
	if (gc->pub)
		dtlpub_out(gc->pub, vcpu, start_ns, end_ns, state, flags, &gc->cs);
}

void guestchan_host_run(struct guestchan *gc, uint32_t vcpu, uint64_t start_ns, uint64_t end_ns,
			uint32_t pid, const char *comm, int idle)
{
	if (gc->m)
		(void)match_add_run(gc->m, vcpu, start_ns, end_ns, pid, comm, idle);
	if (gc->pub)
		dtlpub_run(gc->pub, vcpu, start_ns, end_ns, pid, comm, idle);
}

void guestchan_host_agg(struct guestchan *gc, uint32_t vcpu, uint16_t kind, uint16_t isa,
			uint32_t id, uint64_t count, uint64_t total_ns)
{
	uint8_t h = kind == VN_HOST_AGG_EXIT ? VN_HCLASS_VMEXIT : VN_HCLASS_HOST_IRQ;

	if (gc->m)
		(void)match_add_agg(gc->m, vcpu, h,
				    kind == VN_HOST_AGG_EXIT ? id : (uint32_t)kind << 24 | id, "",
				    total_ns);
	if (gc->pub)
		dtlpub_agg(gc->pub, vcpu, kind, isa, id, count, total_ns);
}

void guestchan_host_period(struct guestchan *gc, uint64_t start_ns, uint64_t end_ns)
{
	if (gc->pub)
		dtlpub_period(gc->pub, start_ns, end_ns, &gc->cs);
}

/* ---- the dispatch trace log ---- */

static void dtl_stop(struct guestchan *gc)
{
	struct dtlpub_stats st;

	if (!gc->pub)
		return;
	dtlpub_stats(gc->pub, &st);
	gc->dtl_published += st.w.entries;
	gc->dtl_dropped += st.w.dropped;
	gc->dtl_aggs += st.aggs;
	dtlpub_free(gc->pub);
	gc->pub = NULL;
	gc->outstanding = false; /* the request line is gone with the area */
}

/* Publish when the guest header allows it (epoch 0 or version >= 2), stop when a v1 agent took it; while
 * another vnoise-host publishes, try its lock again every LOCK_RETRY_NS. */
static void dtl_follow(struct guestchan *gc, uint64_t now)
{
	const struct vn_shm_header *h = gc->base;
	uint64_t ep = __atomic_load_n(&h->epoch, __ATOMIC_ACQUIRE);
	uint32_t ver = __atomic_load_n(&h->version, __ATOMIC_RELAXED);
	struct dtlpub_params pp = { .dom = gc->dom,
				    .nvcpus = gc->nvcpus,
				    .detail = gc->o.detail,
				    .period_ns = gc->o.period_ns };
	char why[256];

	if (gc->dtl_state == GUESTCHAN_DTL_BUSY && now >= gc->lock_retry_ns) {
		gc->lock_retry_ns = now + LOCK_RETRY_NS;
		if (!flock(gc->fd, LOCK_EX | LOCK_NB)) {
			log_info("guest channel %s: publishing the dispatch trace log (the other "
				 "publisher is gone)",
				 gc->path);
			gc->dtl_state = GUESTCHAN_DTL_ON;
			gc->dtl_logged = false;
		}
	}
	if (gc->dtl_state == GUESTCHAN_DTL_BUSY || gc->dtl_state == GUESTCHAN_DTL_FAILED) {
		if (!gc->dtl_logged)
			log_info("guest channel %s: no dispatch trace log: %s", gc->path,
				 gc->dtl_state == GUESTCHAN_DTL_BUSY
				     ? "another vnoise-host publishes it (no clock exchange here)"
				     : "the host area cannot be laid out");
		gc->dtl_logged = true;
		return;
	}
	if (ep && ver < 2) {
		dtl_stop(gc);
		if (gc->dtl_state != GUESTCHAN_DTL_V1)
			log_info(
			    "guest channel %s: a version %u guest agent owns the whole region: no "
			    "dispatch trace log, no clock exchange",
			    gc->path, ver);
		gc->dtl_state = GUESTCHAN_DTL_V1;
		return;
	}
	if (gc->pub)
		return;
	gc->pub = dtlpub_new((char *)gc->base + vn_dtl_area_offset(gc->size),
			     gc->size - vn_dtl_area_offset(gc->size), &pp, dtlpub_new_epoch(),
			     gc->o.tc, why, sizeof(why));
	if (!gc->pub) {
		log_warn("guest channel %s: no dispatch trace log: %s", gc->path, why);
		gc->dtl_state = GUESTCHAN_DTL_FAILED;
		gc->dtl_logged = true;
		return;
	}
	if (gc->dtl_state == GUESTCHAN_DTL_V1)
		log_info("guest channel %s: publishing the dispatch trace log again", gc->path);
	gc->dtl_state = GUESTCHAN_DTL_ON;
	gc->unanswered = 0;
	gc->pub_ns = now;
	gc->aligned_ns = 0;
}

void guestchan_dtl_info(const struct guestchan *gc, struct guestchan_dtl *out)
{
	struct dtlpub_stats st = { 0 };

	memset(out, 0, sizeof(*out));
	out->state = gc->dtl_state;
	out->detail = gc->o.detail;
	if (gc->pub) {
		dtlpub_stats(gc->pub, &st);
		out->epoch = dtlwriter_epoch(dtlpub_writer(gc->pub));
	}
	out->published = gc->dtl_published + st.w.entries;
	out->dropped = gc->dtl_dropped + st.w.dropped;
	out->aggs = gc->dtl_aggs + st.aggs;
}

/* ---- the bell ---- */

#define BELL_RETRY_NS \
	1000000000ULL /* a bell socket that cannot be connected: tried again this often */
#define BELL_READ_MAX \
	64u /* reads per wake-up: a guest writing without pause cannot hold the host */

static bool clocksync_state_valid(const struct guestchan *gc);

void guestchan_set_bell(struct guestchan *gc, const char *sock_path)
{
	if (gc->bell_fd >= 0)
		close(gc->bell_fd);
	gc->bell_fd = -1;
	gc->bell_heard = gc->bell_armed = false;
	gc->bell_retry_ns = 0;
	snprintf(gc->bell_path, sizeof(gc->bell_path), "%s", sock_path ? sock_path : "");
}

static void bell_close(struct guestchan *gc, uint64_t now, const char *why)
{
	log_info("guest channel %s: bell %s: %s; reading the channel every round", gc->path,
		 gc->bell_path, why);
	close(gc->bell_fd);
	gc->bell_fd = -1;
	gc->bell_heard = gc->bell_armed = false;
	gc->bell_retry_ns = now + BELL_RETRY_NS;
}

/* Connect to the bell's socket (QEMU listens on it): 0, or -errno (tried again BELL_RETRY_NS later). */
static int bell_connect(struct guestchan *gc, uint64_t now)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	gc->bell_retry_ns = now + BELL_RETRY_NS;
	if (strlen(gc->bell_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, gc->bell_path, strlen(gc->bell_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = errno;

		close(fd);
		log_debug("guest channel %s: bell %s: %s", gc->path, gc->bell_path, strerror(err));
		return -err;
	}
	gc->bell_fd = fd;
	gc->bell_heard = gc->bell_armed = false;
	log_debug("guest channel %s: bell %s connected", gc->path, gc->bell_path);
	return 0;
}

/* Read and discard what the guest wrote (at most BELL_READ_MAX reads). 1: it rang, 0: nothing, -1: closed. */
static int bell_drain(struct guestchan *gc, uint64_t now)
{
	char buf[256];
	int rang = 0;

	for (unsigned i = 0; i < BELL_READ_MAX; i++) {
		ssize_t n = read(gc->bell_fd, buf, sizeof(buf));

		if (n > 0) {
			gc->bell_bytes += (uint64_t)n;
			rang = 1;
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			break;
		bell_close(gc, now, n ? strerror(errno) : "closed by QEMU");
		return -1;
	}
	if (rang) {
		gc->bell_rings++;
		gc->bell_armed = false;
		if (!gc->bell_heard)
			log_info("guest channel %s: the guest agent rings the bell: sleeping "
				 "between its gaps",
				 gc->path);
		gc->bell_heard = true;
	}
	return rang;
}

void guestchan_bell_heard(struct guestchan *gc, short revents, uint64_t now)
{
	if (gc->bell_fd < 0)
		return;
	if (revents & (POLLIN | POLLHUP | POLLERR))
		(void)bell_drain(gc, now);
	if (gc->bell_fd >= 0 && (revents & (POLLHUP | POLLERR | POLLNVAL)))
		bell_close(gc, now, "hung up");
}

int guestchan_bell_arm(struct guestchan *gc, uint64_t now, bool arm)
{
	struct vn_shm_status gs;

	if (!gc->rd || shmreader_state(gc->rd) != SHMREADER_OK ||
	    (!shmreader_status(gc->rd, &gs) && gs.agent_state != VN_SHM_AGENT_RUNNING))
		return GUESTCHAN_IDLE; /* no agent publishing: nothing to match */
	if (!gc->bell_path[0] || !gc->pub)
		return GUESTCHAN_BUSY; /* no bell, or not this host's to arm */
	if (gc->bell_fd < 0 && (now < gc->bell_retry_ns || bell_connect(gc, now)))
		return GUESTCHAN_BUSY;
	if (gc->bell_armed && bell_drain(gc, now) < 0) /* unarmed, an agent does not ring */
		return GUESTCHAN_BUSY;
	if (gc->bell_heard && (!arm || !clocksync_state_valid(gc) || match_gaps_waiting(gc->m)))
		return GUESTCHAN_BUSY; /* the short round reads anyway: no rings meanwhile */
	if (!gc->bell_armed) {
		dtlwriter_bell_arm(dtlpub_writer(gc->pub));
		gc->bell_arms++;
		gc->bell_armed = true;
	}
	return gc->bell_heard ? gc->bell_fd
			      : GUESTCHAN_BUSY; /* else armed for the agent's first ring */
}

void guestchan_bell_info(const struct guestchan *gc, struct guestchan_bell *out)
{
	out->state = !gc->bell_path[0] ? GUESTCHAN_BELL_NONE
		     : gc->bell_fd < 0 ? GUESTCHAN_BELL_UNCONNECTED
		     : gc->bell_heard  ? GUESTCHAN_BELL_HEARD
				       : GUESTCHAN_BELL_SILENT;
	out->rings = gc->bell_rings;
	out->arms = gc->bell_arms;
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

static void exchange_done(struct guestchan *gc, const struct dtl_clock_reply *r, uint64_t recv_ns)
{
	gc->ans_cpu = r->cpu;
	keep_off_answerer(gc);
	gc->outstanding = false;
	gc->unanswered = 0;
	gc->exchanges++;
	(void)clocksync_update(&gc->cs, r->host_send_ns, r->guest_ns, recv_ns);
	if (log_verbosity() >= 2) {
		struct clocksync_state st;

		clocksync_state(&gc->cs, recv_ns, &st);
		log_debug(
		    "clock: sample offset %lld ns +- %.1f us, model offset %lld ns +- %llu ns",
		    (long long)r->guest_ns - (long long)(r->host_send_ns / 2 + recv_ns / 2),
		    (double)(recv_ns - r->host_send_ns) / 2e3, (long long)st.offset_ns,
		    (unsigned long long)st.uncertainty_ns);
	}
}

/* Watch the mailbox for the answer to the request sent at t, up to watch_ns. */
static void clock_watch(struct guestchan *gc, struct dtl_writer *w, uint64_t t, uint64_t watch_ns)
{
	struct dtl_clock_reply r;
	int rc;

	do {
		rc = dtlwriter_reply(w, &r);
		if (rc == 1) {
			exchange_done(gc, &r, now_ns());
			if (log_verbosity() >= 2)
				log_debug("clock: rtt %.1f us (sent %.3f ms after the grid point)",
					  (double)(now_ns() - t) / 1e3,
					  (double)(t % VN_SHM_CLOCK_GRID_NS) / 1e6);
			return;
		}
		if (rc != 0 && rc != -EAGAIN)
			return;
	} while (now_ns() - t < watch_ns);
}

static void clock_round(struct guestchan *gc, uint64_t now)
{
	struct dtl_writer *w = gc->pub ? dtlpub_writer(gc->pub) : NULL;
	struct dtl_clock_reply r;
	struct clocksync_pace pace;
	uint64_t t, seq;

	if (!w)
		return;
	if (gc->outstanding) {
		if (dtlwriter_reply(w, &r) == 1) {
			exchange_done(gc, &r, now_ns());
			if (log_verbosity() >= 2)
				log_debug("clock: late answer, rtt %.1f us",
					  (double)(now_ns() - gc->sent_ns) / 1e3);
		} else if (now - gc->sent_ns > ABANDON_NS) {
			gc->outstanding = false;
			gc->abandoned++;
			if (gc->unanswered < UINT32_MAX)
				gc->unanswered++;
		}
	}
	if (gc->outstanding || now < gc->next_exchange_ns)
		return;
	clocksync_pace(&gc->cs, now, VN_SHM_CLOCK_GRID_NS, SPIN_MIN_NS, SPIN_NS, &pace);
	gc->next_exchange_ns = (now / pace.every_ns + 1) * pace.every_ns; /* on the grid */
	t = now_ns();
	dtlwriter_request(w, t, &seq);
	gc->outstanding = true;
	gc->sent_ns = t;
	if (gc->unanswered < UNANSWERED_SPIN)
		clock_watch(gc, w, t, pace.watch_ns);
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
		uint64_t end = ev ? rec->payload.event.end_ns : rec->payload.sample.end_ns;
		uint64_t *last = &v->last_end[ev];

		if (*last > REORDER_NS && end < *last - REORDER_NS) {
			gc->rejected++;
			gc->w_order++;
			if (*last - end > gc->w_order_ns) {
				gc->w_order_ns = *last - end;
				gc->w_order_ring = ring;
			}
			return;
		}
		if (gc->pending >= PENDING_MAX) {
			gc->rejected++;
			gc->w_cap++;
			return;
		}
		if (end > *last)
			*last = end;
		gc->pending++;
	}
	if (rec->type == VN_SHM_REC_SAMPLE) {
		struct vn_sample x = rec->payload.sample;

		x.cpu = (uint16_t)ring;
		if (merge_add_sample(gc->mg, &x) == -ENOMEM)
			gc->gonly_nomem++;
		if (to_host_sample(gc, &gc->v[ring], &x))
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

/*
 * A new agent epoch: log the one that ended (records read, lost when it ended or lapped, missed when it was
 * attached: the reader's counters since it began) and start the next from scratch.
 */
static void follow_epoch(struct guestchan *gc)
{
	struct shmreader_stats before, after;
	struct vn_shm_header h;

	shmreader_stats(gc->rd, &before); /* check() adds the lost of an epoch it leaves... */
	if (shmreader_check(gc->rd) != SHMREADER_OK || shmreader_header(gc->rd, &h) ||
	    h.epoch == gc->epoch)
		return;
	shmreader_stats(gc->rd, &after); /* ... and the missed of the one it attaches */
	if (gc->epoch) {
		log_info("guest channel %s: new epoch %llu (guest agent restarted); epoch %llu "
			 "ended: %llu records read, %llu lost, %llu missed",
			 gc->path, (unsigned long long)h.epoch, (unsigned long long)gc->epoch,
			 (unsigned long long)(before.records - gc->ep_records),
			 (unsigned long long)(after.lost - gc->ep_lost),
			 (unsigned long long)(before.missed - gc->ep_missed));
		gc->realign_ns = now_ns();
		gc->realign_late = false;
	}
	gc->ep_records = after.records;
	gc->ep_lost = after.lost;
	gc->ep_missed = before.missed;
	gc->epoch = h.epoch;
	gc->attach_ns = now_ns();
	clocksync_reset(&gc->cs);
	if (gc->m)
		match_guest_reset(gc->m);
	gc->outstanding = false;
	gc->next_exchange_ns = 0;
	gc->guest_h = 0;
	gc->pending = 0;
	gc->bell_heard = gc->bell_armed = false; /* the new agent says again that it rings */
	for (uint32_t i = 0; i < gc->nvcpus; i++)
		gc->v[i].last_end[0] = gc->v[i].last_end[1] = gc->v[i].g_end = gc->v[i].h_end = 0;
	if (new_merge(gc))
		log_warn("guest channel %s: out of memory for the guest-only view", gc->path);
}

void guestchan_clock(struct guestchan *gc, uint64_t now)
{
	if (gc->rd)
		follow_epoch(gc);
	dtl_follow(gc, now);
	clock_round(gc, now);
	gc->clocked = true;
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
	shmreader_stats(gc->rd, &st);
	skipped = st.invalid + st.stale + st.torn;
	for (uint32_t i = 0; i < gc->nvcpus; i++) {
		match_counters(gc->m, i, &mc);
		late += mc.late;
	}
	if (late < gc->w_late ||
	    skipped < gc->w_skipped) { /* the matcher or the reader began again */
		gc->w_late = late;
		gc->w_skipped = skipped;
	}
	if (gc->w_order || gc->w_cap || skipped > gc->w_skipped || late > gc->w_late)
		log_warn(
		    "guest channel %s: refused %llu records out of order (the worst %.1f ms behind "
		    "ring %u's latest of its kind) and %llu while the guest horizon stood still "
		    "(cap %u); "
		    "skipped %llu slots (invalid, stale or torn); %llu gaps came late for the "
		    "matcher (counted as invalid and late; said at most every %.0f s)",
		    gc->path, (unsigned long long)gc->w_order, (double)gc->w_order_ns / 1e6,
		    gc->w_order_ring, (unsigned long long)gc->w_cap, PENDING_MAX,
		    (unsigned long long)(skipped - gc->w_skipped),
		    (unsigned long long)(late - gc->w_late), (double)REFUSED_WARN_NS / 1e9);
	gc->w_order = gc->w_order_ns = gc->w_cap = 0;
	gc->w_skipped = skipped;
	gc->w_late = late;
	gc->warn_ns = now + REFUSED_WARN_NS;
}

/* --guest: read the agent's rings and match what both sides delivered. */
static void match_round(struct guestchan *gc, uint64_t now, uint64_t host_horizon_ns)
{
	struct shmreader_ring_info ri;
	uint64_t gh = UINT64_MAX, ghh;
	uint32_t r, n;
	bool any = false;

	if (shmreader_state(gc->rd) != SHMREADER_OK)
		return;
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
	warn_refused(gc, now);
}

/* Once per publisher: when the DTL status first said the clocks are aligned (entries published from then). */
static void log_aligned(struct guestchan *gc, uint64_t now)
{
	struct dtlpub_stats st;

	dtlpub_stats(gc->pub, &st);
	if (!st.aligned_ns || gc->aligned_ns == st.aligned_ns)
		return;
	gc->aligned_ns = st.aligned_ns;
	log_info(
	    "guest channel %s: dispatch trace log clock aligned within %.1f us, %.2f s after the "
	    "publisher started (%llu exchanges, %llu pieces dropped before)",
	    gc->path, (double)st.aligned_unc_ns / 1e3,
	    now > gc->pub_ns ? (double)(now - gc->pub_ns) / 1e9 : 0.0,
	    (unsigned long long)gc->exchanges, (unsigned long long)st.unsynced);
}

/*
 * After an epoch change, once: the new epoch's clock bound is back within the dispatch trace log's limit
 * (DTLPUB_MAX_UNCERTAINTY_NS); a warning, once, if it is not REALIGN_LATE_NS after the epoch began.
 */
static void check_realigned(struct guestchan *gc, uint64_t now)
{
	struct clocksync_state st;
	double t = now > gc->realign_ns ? (double)(now - gc->realign_ns) / 1e9 : 0.0;

	clocksync_state(&gc->cs, now, &st);
	if (st.valid && st.uncertainty_ns <= DTLPUB_MAX_UNCERTAINTY_NS) {
		log_info("guest channel %s: epoch %llu: clock aligned again within %.1f us, %.2f s "
			 "after the epoch began",
			 gc->path, (unsigned long long)gc->epoch, (double)st.uncertainty_ns / 1e3,
			 t);
		gc->realign_ns = 0;
	} else if (!gc->realign_late && now > gc->realign_ns + REALIGN_LATE_NS) {
		log_warn(
		    "guest channel %s: epoch %llu: clock not aligned within %.1f ms %.0f s after "
		    "the epoch began (%llu exchanges so far)",
		    gc->path, (unsigned long long)gc->epoch,
		    (double)DTLPUB_MAX_UNCERTAINTY_NS / 1e6, t, (unsigned long long)gc->exchanges);
		gc->realign_late = true;
	}
}

/* The region file removed under us (link count 0): the mapping goes on; said once. */
static void check_unlinked(struct guestchan *gc, uint64_t now)
{
	struct stat st;

	gc->link_check_ns = now + LINK_CHECK_NS;
	if (gc->unlinked || fstat(gc->fd, &st) || st.st_nlink)
		return;
	gc->unlinked = true;
	log_warn("guest channel %s: the region file was removed; QEMU still maps it and the guest "
		 "still writes it: reading and publishing go on through this mapping",
		 gc->path);
}

void guestchan_tick(struct guestchan *gc, uint64_t now, uint64_t host_horizon_ns)
{
	if (gc->rd)
		follow_epoch(gc);
	dtl_follow(gc, now);
	if (!gc->clocked)
		clock_round(gc, now);
	gc->clocked = false;
	if (gc->realign_ns)
		check_realigned(gc, now);
	if (now >= gc->link_check_ns)
		check_unlinked(gc, now);
	if (gc->pub) {
		dtlpub_status(gc->pub, now, gc->o.dispatch ? host_horizon_ns : 0, &gc->cs);
		log_aligned(gc, now);
	}
	if (gc->rd)
		match_round(gc, now, host_horizon_ns);
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
	log_debug(
	    "guest channel %s: clock mode %d offset %lld ns +- %llu ns drift %.3f ppm, min rtt "
	    "%llu ns, window %u, answering vCPU %u",
	    gc->path, (int)cst.mode, (long long)cst.offset_ns,
	    (unsigned long long)cst.uncertainty_ns, cst.drift_ppm,
	    (unsigned long long)cst.min_rtt_ns, cst.window_used, gc->ans_cpu);
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
