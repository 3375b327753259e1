/* SPDX-License-Identifier: MIT */
/* dtlctl: one domain's dispatch trace log publishing control (see dtlctl.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include "shm.h"
#include "match/dtlctl.h"
#include "match/flipgate.h"
#include "util/log.h"

#define LOCK_RETRY_NS 1000000000ULL /* another publisher: its lock tried again this often */

struct dtlctl {
	char name[300]; /* for logs */
	int fd; /* the region file, flock'ed while we publish (not owned) */
	void *base; /* its mapping (not owned) */
	size_t size;
	struct dtlpub_params pp;
	struct taskclass *tc; /* not owned */
	struct dtlpub *pub; /* NULL: not publishing (see state) */
	enum dtlctl_state state;
	bool logged; /* the current non-publishing state was logged */
	uint64_t published, dropped, aggs; /* of publishers closed before the current one */
	uint64_t lock_retry_ns; /* DTLCTL_BUSY: when to try the publisher's lock again */
	uint64_t aligned_ns; /* the current publisher's first VN_DTL_S_CLOCK, once logged */
	uint64_t pub_ns; /* host time the current publisher started */
	struct flipgate gate; /* the layout version followed between 1 and 2 at a bounded rate */
};

struct dtlctl *dtlctl_new(const char *name, int fd, void *base, size_t size,
			  const struct dtlpub_params *pp, struct taskclass *tc)
{
	struct dtlctl *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->fd = fd;
	c->base = base;
	c->size = size;
	c->pp = *pp;
	c->tc = tc;
	if (flock(fd, LOCK_EX | LOCK_NB))
		c->state = DTLCTL_BUSY;
	return c;
}

void dtlctl_free(struct dtlctl *c)
{
	if (!c)
		return;
	dtlpub_free(c->pub);
	free(c);
}

struct dtlpub *dtlctl_pub(const struct dtlctl *c)
{
	return c->pub;
}

static void dtl_stop(struct dtlctl *c)
{
	struct dtlpub_stats st;

	dtlpub_stats(c->pub, &st);
	c->published += st.w.entries;
	c->dropped += st.w.dropped;
	c->aggs += st.aggs;
	dtlpub_free(c->pub);
	c->pub = NULL;
}

/* May the publisher stop (owner 1: a version 1 agent owns the region) or start (owner 2: the region may
 * carry the DTL) now? One line when the gate begins a hold (at most every 10 s). */
static bool version_gate(struct dtlctl *c, uint64_t now, uint32_t owner)
{
	enum flipgate_verdict d = flipgate_allow(&c->gate, now, owner);

	if (d == FLIPGATE_HOLD_BEGAN && flipgate_say(&c->gate, now))
		log_warn(
		    "guest channel %s: the region's layout version changed %d times within %.0f s: "
		    "held off for up to %.0f s, or until one lasts 2 s (%llu changes held off so "
		    "far)",
		    c->name, FLIPGATE_BURST + 1, FLIPGATE_WINDOW_NS / 1e9,
		    (double)(c->gate.hold_until_ns - now) / 1e9, (unsigned long long)c->gate.held);
	return d == FLIPGATE_FOLLOW;
}

/* Publish when the guest header allows it (epoch 0 or version >= 2), stop when a v1 agent took it (each
 * at a bounded rate: match/flipgate); while another vnoise-host publishes, try its lock again every
 * LOCK_RETRY_NS. */
bool dtlctl_follow(struct dtlctl *c, uint64_t now)
{
	const struct vn_shm_header *h = c->base;
	uint64_t ep = __atomic_load_n(&h->epoch, __ATOMIC_ACQUIRE);
	uint32_t ver = __atomic_load_n(&h->version, __ATOMIC_RELAXED);
	bool changed = false;
	char why[256];

	flipgate_seen(&c->gate, now, ep && ver < 2 ? 1 : 2);
	if (c->state == DTLCTL_BUSY && now >= c->lock_retry_ns) {
		c->lock_retry_ns = now + LOCK_RETRY_NS;
		if (!flock(c->fd, LOCK_EX | LOCK_NB)) {
			log_info("guest channel %s: publishing the dispatch trace log (the other "
				 "publisher is gone)",
				 c->name);
			c->state = DTLCTL_ON;
			c->logged = false;
		}
	}
	if (c->state == DTLCTL_BUSY || c->state == DTLCTL_FAILED) {
		if (!c->logged)
			log_info("guest channel %s: no dispatch trace log: %s", c->name,
				 c->state == DTLCTL_BUSY
				     ? "another vnoise-host publishes it (no clock exchange here)"
				     : "the host area cannot be laid out");
		c->logged = true;
		return false;
	}
	if (ep && ver < 2) {
		if (c->pub) {
			if (!version_gate(c, now, 1))
				return false;
			dtl_stop(c);
			changed = true;
		}
		if (c->state != DTLCTL_V1)
			log_info(
			    "guest channel %s: a version %u guest agent owns the whole region: no "
			    "dispatch trace log, no clock exchange",
			    c->name, ver);
		c->state = DTLCTL_V1;
		return changed;
	}
	if (c->pub || (c->state == DTLCTL_V1 && !version_gate(c, now, 2)))
		return false;
	c->pub = dtlpub_new((char *)c->base + vn_dtl_area_offset(c->size),
			    c->size - vn_dtl_area_offset(c->size), &c->pp, dtlpub_new_epoch(),
			    c->tc, why, sizeof(why));
	if (!c->pub) {
		log_warn("guest channel %s: no dispatch trace log: %s", c->name, why);
		c->state = DTLCTL_FAILED;
		c->logged = true;
		return false;
	}
	if (c->state == DTLCTL_V1)
		log_info("guest channel %s: publishing the dispatch trace log again", c->name);
	c->state = DTLCTL_ON;
	c->pub_ns = now;
	c->aligned_ns = 0;
	return true;
}

/* Once per publisher: when the DTL status first said the clocks are aligned (entries published from then). */
static void log_aligned(struct dtlctl *c, uint64_t now, uint64_t exchanges)
{
	struct dtlpub_stats st;

	dtlpub_stats(c->pub, &st);
	if (!st.aligned_ns || c->aligned_ns == st.aligned_ns)
		return;
	c->aligned_ns = st.aligned_ns;
	log_info(
	    "guest channel %s: dispatch trace log clock aligned within %.1f us, %.2f s after the "
	    "publisher started (%llu exchanges, %llu pieces dropped before)",
	    c->name, (double)st.aligned_unc_ns / 1e3,
	    now > c->pub_ns ? (double)(now - c->pub_ns) / 1e9 : 0.0, (unsigned long long)exchanges,
	    (unsigned long long)st.unsynced);
}

void dtlctl_status(struct dtlctl *c, uint64_t now, uint64_t horizon_ns, const struct clocksync *cs,
		   uint64_t exchanges)
{
	if (!c->pub)
		return;
	dtlpub_status(c->pub, now, horizon_ns, cs);
	log_aligned(c, now, exchanges);
}

void dtlctl_info(const struct dtlctl *c, struct dtlctl_info *out)
{
	struct dtlpub_stats st = { 0 };

	memset(out, 0, sizeof(*out));
	out->state = c->state;
	out->detail = c->pp.detail;
	if (c->pub) {
		dtlpub_stats(c->pub, &st);
		out->epoch = dtlwriter_epoch(dtlpub_writer(c->pub));
	}
	out->published = c->published + st.w.entries;
	out->dropped = c->dropped + st.w.dropped;
	out->aggs = c->aggs + st.aggs;
}
