/* SPDX-License-Identifier: MIT */
/*
 * dtlhostile: a hostile host and a guest reader of the dispatch trace log (protocol/dtl.h) on one shared file
 * (tests/integration/dtl_hostile.sh runs the reader built with ASan+UBSan). FILE is the whole region; the
 * host area is its upper half, as in a real ivshmem region.
 *   dtlhostile write FILE SECONDS [SEED]   for the first SECONDS - 2 s: the real writer (dtlwriter) publishes
 *       while the tool damages everything it can: bad indices (causes, vCPUs, heads), entries out of order and
 *       in the future, torn entries (odd seq left behind), stale and lapped slots, a header changed under
 *       the epoch, a horizon going back, garbage status / causes / aggregates, random bytes, and 3.5 s of a
 *       frozen horizon and heartbeat; then a clean new epoch (marked DTLH_CLEAN_EPOCH) for 2 s: entries of a
 *       known shape on every vCPU, status, clock requests. Prints one JSON line (clean_put, replies, ...).
 *   dtlhostile read FILE SECONDS           the guest: sync, poll every vCPU, status, causes, aggregates and
 *       the clock responder every millisecond for SECONDS; checks every entry of the clean epoch has its
 *       known shape. Prints one JSON line: the reader's counters, clean_ok / clean_bad, max_round_us,
 *       cpu_ms, rss_kb at 1 s and at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "channel/dtlreader.h"
#include "channel/dtlregion.h"
#include "channel/dtlwriter.h"
#include "channel/shmregion.h"

#define DTLH_CLEAN_EPOCH 0xc1ea000000000000ull /* high bits of the clean epoch */
#define DTLH_NV 4u
#define DTLH_PID 4242u
#define DTLH_COMM "cleanhog"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t xrand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *map_file(const char *path, size_t *size)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDWR);

	if (fd < 0 || fstat(fd, &st) || st.st_size < 65536) {
		fprintf(stderr, "dtlhostile: %s: %s\n", path,
			fd < 0 ? strerror(errno) : "too small");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	*size = (size_t)st.st_size;
	p = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

struct host {
	unsigned char *area;
	size_t size;
	struct dtl_writer *w;
	uint64_t rng, epoch, t, ops, reinits, put;
	uint64_t hold_until, next_hold; /* a garbage status left in place long enough to be read */
	int frozen;
	struct dtlregion_layout
	    l; /* of the last clean initialisation (never read back from the area) */
};

static struct dtl_writer *host_init(struct host *h, uint64_t epoch, uint32_t ncauses,
				    uint32_t entries)
{
	struct dtlwriter_params p = { .nvcpus = DTLH_NV,
				      .max_entries = entries,
				      .ncauses = ncauses,
				      .detail = VN_DTL_DETAIL_TASK,
				      .period_ns = 10000000 };
	char why[128];

	dtlwriter_free(h->w);
	if (dtlregion_layout(h->size, DTLH_NV, ncauses, entries, &h->l)) {
		fprintf(stderr, "dtlhostile: the area is too small\n");
		h->w = NULL;
		return NULL;
	}
	h->w = dtlwriter_init(h->area, h->size, &p, epoch, why, sizeof(why));
	if (!h->w)
		fprintf(stderr, "dtlhostile: dtlwriter_init: %s\n", why);
	h->reinits++;
	return h->w;
}

static struct vn_dtl_entry *hslot(struct host *h, uint64_t v)
{
	uint64_t n = (uint64_t)DTLH_NV * h->l.entries_per_vcpu;

	return (struct vn_dtl_entry *)(h->area + h->l.entries_offset) + v % n;
}

/* Valid traffic: entries (bursts lap the reader), causes (recycled), aggregates, status. */
static void host_valid(struct host *h, uint64_t v)
{
	uint32_t vc = (uint32_t)(v % DTLH_NV), n = v % 97 == 0 ? 200 : 1, i;
	uint32_t cause = dtlwriter_cause(h->w, 1 + (v >> 8) % 4, (uint32_t)(v >> 16) % 50, "task");
	struct vn_dtl_status st = { 0 };
	struct vn_dtl_agg a = { 0 };

	for (i = 0; i < n && h->t < now_ns() - 100000000ull; i++) { /* times stay in the past */
		h->t += 1000;
		(void)dtlwriter_put(h->w, vc, 1 + (v >> 4) % 2, 1 + (v >> 12) % 5, cause, 0, h->t,
				    h->t + 500);
	}
	if (v % 5 == 0) {
		a.period = h->t / 1000000;
		a.start_ns = h->t - 1000;
		a.end_ns = h->t;
		a.exit_count = 1;
		(void)dtlwriter_agg(h->w, vc, &a);
	}
	if (!h->frozen && v % 3 == 0 && now_ns() >= h->hold_until) {
		st.flags = VN_DTL_S_CLOCK;
		st.horizon_ns = h->t - 2000;
		st.heartbeat_ns = h->t;
		st.uncertainty_ns = 1000;
		dtlwriter_status(h->w, &st);
	}
}

/* One adversarial operation. */
static void host_damage(struct host *h, uint64_t v)
{
	struct vn_dtl_header *hd = (void *)h->area;
	struct vn_dtl_ring *ring = (struct vn_dtl_ring *)(h->area + h->l.ring_ctl_offset);
	struct vn_dtl_entry *e = hslot(h, v >> 8);
	uint64_t k, off;

	if (h->frozen && (v % 12 == 6 || v % 12 == 7 || v % 12 == 9 || v % 12 == 11))
		return; /* the frozen window keeps its epoch, header and status: the freeze must be seen */
	switch (v % 12) {
	case 0: /* bad cause index / gen */
		e->cause = (uint32_t)(v >> 16);
		break;
	case 1: /* out of order */
		e->start_ns = e->start_ns > 5000000 ? e->start_ns - 5000000 : 0;
		break;
	case 2: /* in the future */
		e->end_ns = now_ns() + 3600000000000ull;
		break;
	case 3: /* torn (being written at every look: 2L + 1), left behind on a vCPU's newest entry */
		k = SHM_LOAD_ACQ(&ring[(v >> 8) % DTLH_NV].head) - 1;
		e = (struct vn_dtl_entry *)(h->area + h->l.entries_offset) +
		    ((v >> 8) % DTLH_NV) * h->l.entries_per_vcpu +
		    (k & (h->l.entries_per_vcpu - 1));
		if (e->seq && !(e->seq & 1u))
			e->seq -= 1;
		break;
	case 4: /* stale or a newer lap */
		e->seq = v % 2 ? e->seq - 2 : e->seq + 2;
		break;
	case 5: /* heads: back, ahead, absurd */
		ring[(v >> 8) % DTLH_NV].head = v % 3 == 0   ? ring[(v >> 8) % DTLH_NV].head - 3
						: v % 3 == 1 ? ring[(v >> 8) % DTLH_NV].head + 40
							     : UINT64_MAX - (v >> 40);
		break;
	case 6: /* header changed under the epoch (bad indices and geometry) */
		if (v % 4 == 0)
			hd->nvcpus = (uint32_t)(v >> 32);
		else if (v % 4 == 1)
			hd->entries_offset = (v >> 8) & ~63ull;
		else
			hd->period_ns ^= 1;
		break;
	case 7: /* horizon back, status garbage */
		hd->status.horizon_ns = v % 2 ? hd->status.horizon_ns / 2 : v;
		/* valid traffic rewrites the status within microseconds and the reader looks every
		 * millisecond: every 100 ms one garbage status stays 3 ms, so that it is seen for sure */
		if (now_ns() >= h->next_hold) {
			h->hold_until = now_ns() + 3000000ull;
			h->next_hold = now_ns() + 100000000ull;
		}
		break;
	case 8: /* causes and aggregates garbage */
		h->area[h->l.cause_offset + (v >> 8) % (h->l.ncauses * 48)] =
		    (unsigned char)(v >> 40);
		h->area[h->l.agg_offset + (v >> 8) % (DTLH_NV * 4 * 256)] =
		    (unsigned char)(v >> 48);
		break;
	case 9: /* random bytes anywhere in the host area */
		off = (v >> 8) % h->size;
		for (k = 0; k < 1 + v % 32 && off + k < h->size; k++)
			h->area[off + k] = (unsigned char)xrand(&h->rng);
		break;
	case 10: /* invalid entry content */
		e->kind = (uint8_t)(v >> 24);
		e->pad = (uint32_t)(v >> 32);
		break;
	default: /* now and then, the host restarts: a new epoch */
		if ((v >> 8) % 16 == 0)
			host_init(h, ++h->epoch, 4 + (uint32_t)(v >> 8) % 8, 64);
		break;
	}
}

static void host_hostile(struct host *h, uint64_t until)
{
	uint64_t start = now_ns(), v, i;
	int f;

	h->t = now_ns() - 1000000000ull; /* in the past of the reader: valid times */
	if (!host_init(h, ++h->epoch, 8, 64))
		return;
	while (now_ns() < until) {
		/* 3.5 s of a frozen status in the middle, in a fresh epoch with one valid status */
		f = now_ns() - start > 1000000000ull && now_ns() - start < 4500000000ull;
		if (f && !h->frozen && host_init(h, ++h->epoch, 8, 64))
			host_valid(h, 3);
		h->frozen = f;
		for (i = 0; i < 200 && h->w; i++) {
			v = xrand(&h->rng);
			h->ops++;
			if (v % 100 < 90)
				host_valid(h, v);
			else
				host_damage(h, xrand(&h->rng));
		}
		if (!h->w)
			return;
		usleep(200);
	}
}

/* The clean epoch: entries of a known shape (start % 10 us == 0, length 5 us + vCPU), status, requests. */
static int host_clean(struct host *h, uint64_t until, uint64_t *replies)
{
	struct dtl_clock_reply rep;
	struct vn_dtl_status st = { 0 };
	uint64_t t, q, last = 0;
	uint32_t vc, cause;

	if (!host_init(h, DTLH_CLEAN_EPOCH | (h->epoch & 0xffffffffull), 16, 0))
		return -1;
	cause = dtlwriter_cause(h->w, VN_DTL_CLASS_HOST_USER, DTLH_PID, DTLH_COMM);
	while ((t = now_ns()) < until) {
		t = t / 10000 * 10000 - 100000;
		for (vc = 0; vc < DTLH_NV && t > last; vc++)
			if (dtlwriter_put(h->w, vc, VN_DTL_KIND_PREEMPTED, VN_DTL_CLASS_HOST_USER,
					  cause, 0, t, t + 5000 + vc) == 0)
				h->put++;
		last = t;
		st.flags = VN_DTL_S_CLOCK;
		st.horizon_ns = t + 5000;
		st.heartbeat_ns = now_ns();
		st.uncertainty_ns = 2000;
		dtlwriter_status(h->w, &st);
		if (dtlwriter_reply(h->w, &rep) == 1)
			(*replies)++;
		if (h->put % 64 == 0)
			dtlwriter_request(h->w, now_ns(), &q);
		usleep(1000);
	}
	return 0;
}

static int cmd_write(const char *path, double secs, uint64_t seed)
{
	struct host h = { 0 };
	struct dtlwriter_stats st;
	uint64_t replies = 0, end;
	unsigned char *base = map_file(path, &h.size);

	if (!base)
		return 1;
	h.area = base + vn_dtl_area_offset(h.size);
	h.size = h.size - vn_dtl_area_offset(h.size);
	h.rng = seed | 1;
	end = now_ns() + (uint64_t)(secs * 1e9);
	host_hostile(&h, end - 2000000000ull);
	if (!h.w || host_clean(&h, end, &replies))
		return 1;
	dtlwriter_stats(h.w, &st);
	printf("{\"ops\":%" PRIu64 ",\"reinits\":%" PRIu64 ",\"clean_epoch\":%" PRIu64
	       ",\"clean_put\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"replies\":%" PRIu64 "}\n",
	       h.ops, h.reinits, dtlwriter_epoch(h.w), h.put, st.requests, replies);
	dtlwriter_free(h.w);
	return 0;
}

struct guest {
	struct dtl_reader *r;
	void *area;
	uint64_t clean_ok, clean_bad, clean_status;
};

static void on_entry(void *ctx, uint32_t vcpu, const struct vn_dtl_entry *e)
{
	struct guest *g = ctx;
	struct vn_dtl_cause c;

	if (dtlregion_entry_valid(e))
		abort(); /* the reader's contract */
	if ((dtlreader_epoch(g->r) >> 48) != (DTLH_CLEAN_EPOCH >> 48)) {
		(void)!dtlreader_cause(g->r, e->cause, &c); /* recycled, garbage: counted */
		return;
	}
	if (e->start_ns % 10000 == 0 && e->end_ns - e->start_ns == 5000 + vcpu &&
	    e->kind == VN_DTL_KIND_PREEMPTED && e->cls == VN_DTL_CLASS_HOST_USER &&
	    dtlreader_cause(g->r, e->cause, &c) == 0 && c.pid == DTLH_PID &&
	    !strcmp(c.comm, DTLH_COMM))
		g->clean_ok++;
	else
		g->clean_bad++;
}

static void guest_round(struct guest *g)
{
	struct vn_dtl_status st;
	struct vn_dtl_agg a;
	uint64_t q, t;
	uint32_t v;

	(void)dtlreader_sync(g->r);
	for (v = 0; v < dtlreader_nvcpus(g->r); v++) {
		(void)!dtlreader_poll(g->r, v, on_entry, g, 4096);
		(void)!dtlreader_agg(g->r, v, UINT64_MAX, &a);
	}
	if (dtlreader_status(g->r, &st) == 0 &&
	    (dtlreader_epoch(g->r) >> 48) == (DTLH_CLEAN_EPOCH >> 48))
		g->clean_status++;
	if (dtlreader_request(g->r, &q, &t) == 1)
		dtlreader_reply(g->r, g->area, q, t, now_ns(), VN_SHM_CPU_UNKNOWN);
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmRSS:", 6))
			kb = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kb;
}

static int cmd_read(const char *path, double secs)
{
	struct guest g = { 0 };
	struct dtlreader_stats s;
	struct rusage ru;
	size_t size;
	unsigned char *base = map_file(path, &size);
	uint64_t start = now_ns(), end = start + (uint64_t)(secs * 1e9), t0, dt, max_round = 0;
	uint64_t rounds = 0;
	long rss1 = -1;

	if (!base)
		return 1;
	g.area = base + vn_dtl_area_offset(size);
	g.r = dtlreader_new(g.area, size - vn_dtl_area_offset(size));
	if (!g.r)
		return 1;
	while ((t0 = now_ns()) < end) {
		guest_round(&g);
		dt = now_ns() - t0;
		max_round = dt > max_round ? dt : max_round;
		rounds++;
		if (rss1 < 0 && t0 - start > 1000000000ull)
			rss1 = rss_kb();
		usleep(1000);
	}
	dtlreader_stats(g.r, &s);
	getrusage(RUSAGE_SELF, &ru);
	printf("{\"rounds\":%" PRIu64 ",\"epochs\":%" PRIu64 ",\"entries\":%" PRIu64
	       ",\"lost\":%" PRIu64 ",\"torn\":%" PRIu64 ",\"bad\":%" PRIu64
	       ",\"backwards\":%" PRIu64 ",\"bad_header\":%" PRIu64 ",\"bad_status\":%" PRIu64
	       ",\"frozen\":%" PRIu64 ",\"causes_gone\":%" PRIu64 ",\"bad_causes\":%" PRIu64
	       ",\"bad_aggs\":%" PRIu64 ",\"requests\":%" PRIu64 ",\"replies\":%" PRIu64
	       ",\"clean_ok\":%" PRIu64 ",\"clean_bad\":%" PRIu64 ",\"clean_status\":%" PRIu64
	       ",\"max_round_us\":%" PRIu64 ",\"cpu_ms\":%ld,\"rss_kb_1s\":%ld"
	       ",\"rss_kb_end\":%ld}\n",
	       rounds, s.epochs, s.entries, s.lost, s.torn, s.bad, s.backwards, s.bad_header,
	       s.bad_status, s.frozen, s.causes_gone, s.bad_causes, s.bad_aggs, s.requests,
	       s.replies, g.clean_ok, g.clean_bad, g.clean_status, max_round / 1000,
	       (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
		   (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000,
	       rss1, rss_kb());
	dtlreader_free(g.r);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "write"))
		return cmd_write(argv[2], atof(argv[3]),
				 argc > 4 ? strtoull(argv[4], NULL, 0) : 12345);
	if (argc == 4 && !strcmp(argv[1], "read"))
		return cmd_read(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: dtlhostile write FILE SECONDS [SEED] | read FILE SECONDS\n");
	return 2;
}
