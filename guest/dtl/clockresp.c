/* SPDX-License-Identifier: MIT */
/*
 * clockresp: the guest side of the clock exchange, shared by the agent's clock thread and guest/dtl's
 * responder (see clockresp.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include "dtl/clockresp.h"
#include "channel/dtlreader.h"
#include "util/lockfile.h"
#include "util/log.h"
#include "util/monotime.h"

#define POLL_NS 5000000ULL /* default sleep outside the window */
#define SYNC_NS 100000000ULL /* follow the host header this often (new epoch, host gone) */
#define WIN_BEFORE_NS 300000LL /* covers a late wake-up (~100-200 us under TCG) */
#define WIN_AFTER_NS 500000LL /* covers the host's own wake-up jitter */
#define EARLY_MAX_NS \
	3000000ULL /* the window opens earlier by the usual wake-up lateness, at most this */
#define JIT_MAX_NS 3000000LL /* and closes later by the host's usual lateness, at most this */
/* Sleeping between polls (step_ns): no margin before the predicted arrival (the wake-up is late anyway), a
 * short one after it, and with a prediction no poll outside the window (an off-grid request waits for it). */
#define STEP_WIN_AFTER_NS 300000LL
#define ARRIVAL_BRACKET_NS \
	2000000ULL /* an empty poll this close before an answer brackets the arrival */
#define LAG_KEEP 16 /* answers over which the smallest guest - host_send is kept */
/*
 * A request already waiting when its window opened says the lag is overestimated (the first answers, seen
 * at a coarse poll, put it late by up to a poll period; the host's first exchanges are that far off too):
 * each time, the next window opens earlier by twice as much, from WIN_BEFORE_NS up to BACK_MAX_NS, until a
 * request is seen arriving (an empty poll just before it). Without this the window crept back by its
 * margin (~0.3 ms) per exchange: ~90 exchanges (4.6 s) for a 27 ms error, measured in the TCG test guest.
 */
#define BACK_MAX_NS (VN_SHM_CLOCK_GRID_NS / 2)

/* Where the next request will arrive (guest time). */
struct clockpred {
	int64_t lag
	    [LAG_KEEP]; /* guest_ns - host_send_ns of recent answers: offset + our answer delay */
	unsigned int n, next;
	uint64_t last_send;
	double jit_avg,
	    jit_dev; /* EWMA of how long after its grid point the host sends, and deviation */
	double late_avg, late_dev; /* EWMA of how late window wake-ups are, and deviation */
	uint64_t early; /* how much earlier than the window to wake up */
	uint64_t want; /* the window opening the last sleep aimed at (0: none) */
	uint64_t back; /* the window opens this much earlier (see BACK_MAX_NS) */
};

struct clockresp {
	char lock_path[256];
	bool warned_lock; /* a lock file that was not private was found (said once) */
	int lock_fd;
	bool locked;
	uint64_t next_lock_ns;
	void *area;
	struct dtl_reader *r;
	bool attached;
	bool in_window; /* the last round found nothing inside a predicted window */
	uint64_t
	    empty_ns; /* guest time of the last round that found no new request (0: none since the last) */
	uint64_t next_sync_ns;
	uint64_t poll_ns, step_ns;
	struct clockpred pred;
	struct clockresp_stats st;
};

static void pred_add(struct clockpred *p, uint64_t guest_ns, uint64_t host_send_ns)
{
	double j = (double)(host_send_ns % VN_SHM_CLOCK_GRID_NS);

	if (j > VN_SHM_CLOCK_GRID_NS / 2) /* off the grid (e.g. the first request): no phase */
		j = p->jit_avg;
	p->lag[p->next] = (int64_t)(guest_ns - host_send_ns);
	p->next = (p->next + 1) % LAG_KEEP;
	if (p->n < LAG_KEEP)
		p->n++;
	p->last_send = host_send_ns;
	p->jit_dev += ((j > p->jit_avg ? j - p->jit_avg : p->jit_avg - j) - p->jit_dev) / 8;
	p->jit_avg += (j - p->jit_avg) / 8;
}

/*
 * The next request's window in guest time after guest time t: [*open, *close); returns 0 without a
 * prediction. Arrival = next grid point + the host's usual lateness + offset (smallest lag seen).
 */
static int pred_window(const struct clockpred *p, uint64_t t, int64_t before, int64_t after,
		       uint64_t *open, uint64_t *close)
{
	int64_t lag = INT64_MAX, lo, hi;
	uint64_t g;
	unsigned int i;

	if (!p->n)
		return 0;
	for (i = 0; i < p->n; i++)
		if (p->lag[i] < lag)
			lag = p->lag[i];
	lo = (int64_t)(p->jit_avg - 2 * p->jit_dev);
	hi = (int64_t)(p->jit_avg + 2 * p->jit_dev);
	lo = lo < 0 ? 0 : lo;
	hi = hi > JIT_MAX_NS ? JIT_MAX_NS : hi;
	g = (p->last_send / VN_SHM_CLOCK_GRID_NS + 1) * VN_SHM_CLOCK_GRID_NS;
	while ((int64_t)(g + (uint64_t)lag) + hi + after < (int64_t)t)
		g += VN_SHM_CLOCK_GRID_NS;
	*open = g + (uint64_t)lag + (uint64_t)lo - (uint64_t)before - p->early - p->back;
	*close = g + (uint64_t)lag + (uint64_t)hi + (uint64_t)after;
	return 1;
}

/* A poll found nothing at guest time t: how long to wait (0: spin); counts window wake-up lateness. */
static uint64_t pred_wait(struct clockresp *c, uint64_t t, bool *in_window)
{
	struct clockpred *p = &c->pred;
	uint64_t wopen, wclose, d = c->poll_ns;

	if (p->want) {
		double l = t > p->want ? (double)(t - p->want) : 0.0;

		c->st.wakes++;
		c->st.late_sum_ns += (uint64_t)l;
		if ((uint64_t)l > c->st.late_max_ns)
			c->st.late_max_ns = (uint64_t)l;
		p->late_dev +=
		    ((l > p->late_avg ? l - p->late_avg : p->late_avg - l) - p->late_dev) / 8;
		p->late_avg += (l - p->late_avg) / 8;
		p->early = (uint64_t)(p->late_avg + 2 * p->late_dev);
		if (p->early > EARLY_MAX_NS)
			p->early = EARLY_MAX_NS;
		p->want = 0;
	}
	if (c->step_ns) {
		if (!pred_window(p, t, 0, STEP_WIN_AFTER_NS, &wopen, &wclose)) {
			wopen = wclose = 0;
		} else {
			d = VN_SHM_CLOCK_GRID_NS;
		}
	} else if (!pred_window(p, t, WIN_BEFORE_NS, WIN_AFTER_NS, &wopen, &wclose)) {
		wopen = wclose = 0;
	}
	*in_window = wclose && t >= wopen;
	if (*in_window) { /* sleeping between polls: at most ~4 per window, whatever the jitter */
		uint64_t q = (wclose - wopen - p->back) / 4;

		return c->step_ns && q > c->step_ns ? q : c->step_ns;
	}
	if (wclose && wopen - t < d) {
		d = wopen - t;
		p->want = wopen;
	}
	return d;
}

struct clockresp *clockresp_new(void *area, size_t area_size, const struct clockresp_params *p)
{
	struct clockresp *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->r = dtlreader_new(area, area_size);
	if (!c->r) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->area = area;
	c->lock_fd = -1;
	snprintf(c->lock_path, sizeof(c->lock_path), "%s",
		 p && p->lock_path ? p->lock_path : VN_DTL_RESPONDER_LOCK);
	c->poll_ns = p && p->poll_ns ? p->poll_ns : POLL_NS;
	c->step_ns = p ? p->step_ns : 0;
	return c;
}

void clockresp_free(struct clockresp *c)
{
	if (!c)
		return;
	if (c->lock_fd >= 0)
		close(c->lock_fd); /* releases the lock */
	dtlreader_free(c->r);
	free(c);
}

/*
 * Take the responder lock (one answering process per guest); false while another holds it. A lock file that
 * is not private is replaced (util/lockfile), said once.
 */
static bool take_lock(struct clockresp *c)
{
	if (c->lock_fd < 0) {
		bool replaced;
		int fd = lockfile_open(c->lock_path, &replaced);

		if (replaced && !c->warned_lock)
			log_warn("clock responder: %s was not a private file of this user: %s",
				 c->lock_path,
				 fd >= 0 ? "replaced (mode 0600)"
					 : "cannot replace it, not answering");
		c->warned_lock |= replaced;
		if (fd < 0)
			return false;
		c->lock_fd = fd;
	}
	if (flock(c->lock_fd, LOCK_EX | LOCK_NB))
		return false;
	c->locked = true;
	c->st.holds_lock = true;
	return true;
}

/*
 * The guest time a request seen at t arrived: between the last empty poll and t. Without a recent empty poll
 * (a long sleep before), t itself; else the middle, so that answering late does not teach the predictor to
 * come late (the window is placed on this estimate).
 */
static bool bracketed(const struct clockresp *c, uint64_t t)
{
	return c->empty_ns && t >= c->empty_ns && t - c->empty_ns <= ARRIVAL_BRACKET_NS;
}

static uint64_t arrival(const struct clockresp *c, uint64_t t)
{
	return bracketed(c, t) ? c->empty_ns + (t - c->empty_ns) / 2 : t;
}

/* A request seen at t: was it already waiting when its window opened (the lag is overestimated)? */
static void pred_back(struct clockpred *p, bool seen_arriving)
{
	if (seen_arriving)
		p->back = 0;
	else if (p->want) /* the first poll of a window found it */
		p->back = p->back ? (p->back * 2 < BACK_MAX_NS ? p->back * 2 : BACK_MAX_NS)
				  : WIN_BEFORE_NS;
}

uint64_t clockresp_round(struct clockresp *c, uint64_t *now)
{
	uint64_t t = now_ns(), seq, sent;
	int rc;

	if (now)
		*now = t;

	c->st.rounds++;
	if (!c->locked) {
		if (t < c->next_lock_ns)
			return c->next_lock_ns - t;
		if (!take_lock(c)) {
			c->st.lock_tries++;
			c->next_lock_ns = t + CLOCKRESP_LOCK_RETRY_NS;
			return CLOCKRESP_LOCK_RETRY_NS;
		}
	}
	if (!c->attached || t >= c->next_sync_ns) {
		c->attached = dtlreader_sync(c->r) >= 0;
		c->next_sync_ns = t + SYNC_NS;
		if (!c->attached)
			return c->poll_ns;
	}
	rc = dtlreader_request(c->r, &seq, &sent);
	if (rc == 1) {
		int cpu = sched_getcpu();

		t = now_ns(); /* after seeing the request: the stamp must follow the host's send */
		dtlreader_reply(c->r, c->area, seq, sent, t,
				cpu < 0 ? VN_SHM_CPU_UNKNOWN : (uint32_t)cpu);
		c->st.replies++;
		c->st.in_window += c->in_window;
		pred_back(&c->pred, bracketed(c, t));
		pred_add(&c->pred, arrival(c, t), sent);
		c->empty_ns = 0;
		return 0;
	}
	if (rc < 0) {
		c->attached = false;
		return c->poll_ns;
	}
	c->empty_ns = t;
	return pred_wait(c, t, &c->in_window);
}

void clockresp_stats(const struct clockresp *c, struct clockresp_stats *out)
{
	*out = c->st;
}
