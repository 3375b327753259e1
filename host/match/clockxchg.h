/* SPDX-License-Identifier: MIT */
/*
 * clockxchg: the host's end of one domain's clock exchange, NTP-style over shared memory. It posts requests
 * into the dispatch trace log's mailbox (shared/channel/dtlwriter: dtlwriter_request / dtlwriter_reply) on the
 * VN_SHM_CLOCK_GRID_NS grid of host time, where the guest responder spins around the predicted arrival
 * (whichever guest process holds the responder lock answers), watches for the answer, and feeds every answer
 * to the clock model it owns (host/match/clocksync: the estimation itself, pure computation). It paces
 * itself by the model (clocksync_pace), stops watching when nobody answers, keeps the watching thread off the
 * answering vCPU's pCPU, and says in the log when a new guest epoch's clock is aligned again.
 * Single-threaded: the channel's owner (host/match/guestchan) calls it from the monitor's main thread.
 */
#ifndef VNOISE_HOST_MATCH_CLOCKXCHG_H
#define VNOISE_HOST_MATCH_CLOCKXCHG_H

#include <stdbool.h>
#include <stdint.h>
#include "channel/dtlwriter.h"
#include "match/clocksync.h"

struct clockxchg;

/* Counters since the exchange was created. */
struct clockxchg_stats {
	uint64_t exchanges; /* answered */
	uint64_t abandoned; /* unanswered for too long (100 ms): given up */
	uint32_t ans_cpu; /* guest CPU of the last answer (VN_SHM_CPU_UNKNOWN: none yet) */
};

/*
 * An exchange for a domain of nvcpus vCPUs; name (copied) prefixes its log lines ("guest channel NAME: ...").
 * Returns NULL with errno.
 */
struct clockxchg *clockxchg_new(const char *name, uint32_t nvcpus)
    __attribute__((warn_unused_result));
void clockxchg_free(struct clockxchg *x); /* accepts NULL */

/* The domain's vCPU host thread ids (0: unknown), to keep the watch off the answering vCPU's pCPU. */
void clockxchg_set_tids(struct clockxchg *x, const uint32_t *tids, uint32_t n);

/*
 * One round at host time now through mailbox w (NULL: nobody publishes, nothing to do): pick up a late
 * answer or abandon the outstanding request, and when one is due post the next request and watch for its
 * answer (at most 300 us; not while the last requests went unanswered).
 */
void clockxchg_round(struct clockxchg *x, struct dtl_writer *w, uint64_t now);

/* The mailbox changed (its publisher stopped or a new one started): no request is outstanding any more, and
 * the next ones are watched for again. */
void clockxchg_new_mailbox(struct clockxchg *x);

/*
 * A new guest epoch (agent restarted, guest rebooted) at host time now: the model starts again from scratch
 * and the next request goes out at once. realign: say in the log when the clock is aligned again (see
 * clockxchg_check_realigned), or that it is late.
 */
void clockxchg_restart(struct clockxchg *x, uint64_t now, bool realign);
/* After clockxchg_restart(realign): once, the epoch's clock is within the dispatch trace log's bound again
 * (logged with the guest epoch); once, a warning when it is not 10 s after the restart. No-op otherwise. */
void clockxchg_check_realigned(struct clockxchg *x, uint64_t now, uint64_t epoch);

/* The clock model (owned by the exchange; valid until clockxchg_free). */
const struct clocksync *clockxchg_model(const struct clockxchg *x);
/* A model exists: guest times convert (clocksync_g2h). */
bool clockxchg_valid(const struct clockxchg *x);
void clockxchg_stats(const struct clockxchg *x, struct clockxchg_stats *out);

#endif
