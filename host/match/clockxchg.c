/* SPDX-License-Identifier: MIT */
/*
 * clockxchg: one domain's clock exchange on the host side (see clockxchg.h).
 *
 * One exchange at a time, on the VN_SHM_CLOCK_GRID_NS grid of host time: the request goes out and the host
 * watches the mailbox for up to SPIN_NS; after UNANSWERED_SPIN exchanges in a row without an answer (no
 * responder in the guest) it stops watching and only looks again at the next rounds, until an answer comes.
 * Once the model is good (clocksync_pace), requests go out every few grid points and the watch is shorter. A
 * vCPU that shares the watching thread's pCPU cannot answer during the watch (seen on a 2-CPU host: answers
 * came a scheduler slice late), so when the answering vCPU is pinned to one pCPU and this thread may run
 * elsewhere, the thread moves off that pCPU once (logged); an answer that comes later is picked up at the
 * next round (its larger round trip only widens its own error bound, and each 100 ms bucket keeps its best
 * exchange). An exchange unanswered for ABANDON_NS is abandoned and counted.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include "shm.h"
#include "match/clockxchg.h"
#include "match/dtlpub.h"
#include "util/log.h"
#include "util/monotime.h"

#define SPIN_NS 300000ULL
#define SPIN_MIN_NS 100000ULL /* the watch once the model is good: at least this (clocksync_pace) */
#define ABANDON_NS 100000000ULL
#define UNANSWERED_SPIN 3u /* exchanges unanswered in a row after which the host stops watching */
#define REALIGN_LATE_NS 10000000000ULL /* a new epoch's clock not aligned after this: warned */

struct clockxchg {
	char name[300]; /* for logs */
	uint32_t nvcpus;
	uint32_t *tids; /* vCPU host thread ids (0 unknown) */
	struct clocksync cs;
	bool outstanding;
	uint64_t sent_ns, next_exchange_ns;
	uint64_t exchanges, abandoned;
	uint32_t unanswered; /* exchanges in a row without an answer */
	uint32_t ans_cpu; /* guest CPU of the last answer (VN_SHM_CPU_UNKNOWN) */
	bool placed; /* keep_off_answerer() ran */
	uint64_t realign_ns; /* an epoch change whose clock alignment is not logged yet */
	bool realign_late; /* ... and it was said that it is late */
};

struct clockxchg *clockxchg_new(const char *name, uint32_t nvcpus)
{
	struct clockxchg *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->nvcpus = nvcpus;
	x->ans_cpu = VN_SHM_CPU_UNKNOWN;
	x->tids = calloc(nvcpus ? nvcpus : 1, sizeof(*x->tids));
	if (!x->tids || clocksync_init(&x->cs, NULL)) {
		clockxchg_free(x);
		errno = ENOMEM;
		return NULL;
	}
	return x;
}

void clockxchg_free(struct clockxchg *x)
{
	if (!x)
		return;
	free(x->tids);
	free(x);
}

void clockxchg_set_tids(struct clockxchg *x, const uint32_t *tids, uint32_t n)
{
	for (uint32_t i = 0; i < n && i < x->nvcpus; i++)
		x->tids[i] = tids[i];
}

/* Keep this thread off the pCPU the answering vCPU is pinned to, if it can run elsewhere. Once. */
static void keep_off_answerer(struct clockxchg *x)
{
	cpu_set_t vset, mine;
	int c, pc = -1;

	if (x->placed || x->ans_cpu >= x->nvcpus || !x->tids[x->ans_cpu])
		return;
	x->placed = true;
	if (sched_getaffinity((pid_t)x->tids[x->ans_cpu], sizeof(vset), &vset) ||
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
		log_debug("guest channel %s: monitor thread stays SCHED_OTHER", x->name);
	log_info("guest channel %s: clock answered by vCPU %u, pinned to CPU %d: watching from the "
		 "other "
		 "CPUs",
		 x->name, x->ans_cpu, pc);
}

static void exchange_done(struct clockxchg *x, const struct dtl_clock_reply *r, uint64_t recv_ns)
{
	x->ans_cpu = r->cpu;
	keep_off_answerer(x);
	x->outstanding = false;
	x->unanswered = 0;
	x->exchanges++;
	(void)clocksync_update(&x->cs, r->host_send_ns, r->guest_ns, recv_ns);
	if (log_verbosity() >= 2) {
		struct clocksync_state st;

		clocksync_state(&x->cs, recv_ns, &st);
		log_debug(
		    "clock: sample offset %lld ns +- %.1f us, model offset %lld ns +- %llu ns",
		    (long long)r->guest_ns - (long long)(r->host_send_ns / 2 + recv_ns / 2),
		    (double)(recv_ns - r->host_send_ns) / 2e3, (long long)st.offset_ns,
		    (unsigned long long)st.uncertainty_ns);
	}
}

/* Watch the mailbox for the answer to the request sent at t, up to watch_ns. */
static void clock_watch(struct clockxchg *x, struct dtl_writer *w, uint64_t t, uint64_t watch_ns)
{
	struct dtl_clock_reply r;
	int rc;

	do {
		rc = dtlwriter_reply(w, &r);
		if (rc == 1) {
			exchange_done(x, &r, now_ns());
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

void clockxchg_round(struct clockxchg *x, struct dtl_writer *w, uint64_t now)
{
	struct dtl_clock_reply r;
	struct clocksync_pace pace;
	uint64_t t, seq;

	if (!w)
		return;
	if (x->outstanding) {
		if (dtlwriter_reply(w, &r) == 1) {
			exchange_done(x, &r, now_ns());
			if (log_verbosity() >= 2)
				log_debug("clock: late answer, rtt %.1f us",
					  (double)(now_ns() - x->sent_ns) / 1e3);
		} else if (now - x->sent_ns > ABANDON_NS) {
			x->outstanding = false;
			x->abandoned++;
			if (x->unanswered < UINT32_MAX)
				x->unanswered++;
		}
	}
	if (x->outstanding || now < x->next_exchange_ns)
		return;
	clocksync_pace(&x->cs, now, VN_SHM_CLOCK_GRID_NS, SPIN_MIN_NS, SPIN_NS, &pace);
	x->next_exchange_ns = (now / pace.every_ns + 1) * pace.every_ns; /* on the grid */
	t = now_ns();
	dtlwriter_request(w, t, &seq);
	x->outstanding = true;
	x->sent_ns = t;
	if (x->unanswered < UNANSWERED_SPIN)
		clock_watch(x, w, t, pace.watch_ns);
}

void clockxchg_new_mailbox(struct clockxchg *x)
{
	x->outstanding = false; /* the request line is gone with the area */
	x->unanswered = 0;
}

void clockxchg_restart(struct clockxchg *x, uint64_t now, bool realign)
{
	if (realign) {
		x->realign_ns = now;
		x->realign_late = false;
	}
	clocksync_reset(&x->cs);
	x->outstanding = false;
	x->next_exchange_ns = 0;
}

void clockxchg_check_realigned(struct clockxchg *x, uint64_t now, uint64_t epoch)
{
	struct clocksync_state st;
	double t;

	if (!x->realign_ns)
		return;
	t = now > x->realign_ns ? (double)(now - x->realign_ns) / 1e9 : 0.0;
	clocksync_state(&x->cs, now, &st);
	if (st.valid && st.uncertainty_ns <= DTLPUB_MAX_UNCERTAINTY_NS) {
		log_info("guest channel %s: epoch %llu: clock aligned again within %.1f us, %.2f s "
			 "after the epoch began",
			 x->name, (unsigned long long)epoch, (double)st.uncertainty_ns / 1e3, t);
		x->realign_ns = 0;
	} else if (!x->realign_late && now > x->realign_ns + REALIGN_LATE_NS) {
		log_warn(
		    "guest channel %s: epoch %llu: clock not aligned within %.1f ms %.0f s after "
		    "the epoch began (%llu exchanges so far)",
		    x->name, (unsigned long long)epoch, (double)DTLPUB_MAX_UNCERTAINTY_NS / 1e6, t,
		    (unsigned long long)x->exchanges);
		x->realign_late = true;
	}
}

const struct clocksync *clockxchg_model(const struct clockxchg *x)
{
	return &x->cs;
}

bool clockxchg_valid(const struct clockxchg *x)
{
	return x->cs.mode != CLOCKSYNC_MODE_NONE;
}

void clockxchg_stats(const struct clockxchg *x, struct clockxchg_stats *out)
{
	out->exchanges = x->exchanges;
	out->abandoned = x->abandoned;
	out->ans_cpu = x->ans_cpu;
}
