/* SPDX-License-Identifier: MIT */
/*
 * clockresp: the guest side of the clock exchange (protocol/dtl.h: vn_dtl_header.request / .reply), one copy
 * for every process that answers — the agent's clock thread and guest/dtl's responder thread. It holds
 * VN_DTL_RESPONDER_LOCK (flock LOCK_EX | LOCK_NB, retried every CLOCKRESP_LOCK_RETRY_NS while another
 * process holds it: one answering process per guest), follows the host area with its own dtlreader, answers
 * each new request with the guest CLOCK_MONOTONIC and its CPU, and predicts the next request's arrival: the
 * host posts on the VN_SHM_CLOCK_GRID_NS grid, so the next one arrives at the next grid point + the host's
 * usual lateness + the clock offset (the smallest guest_ns - host_send_ns seen). Around that point the caller
 * polls closely (spins, or sleeps step_ns between polls: the cheap mode), elsewhere it sleeps poll_ns. The
 * window opens earlier by the wake-up lateness it keeps measuring. The answer's delay is the exchange's error
 * bound; the host keeps its best exchanges, so an occasional late answer costs nothing but that exchange.
 *
 * Not thread-safe: one thread drives a responder (clockresp_round in a loop, sleeping what it returns).
 */
#ifndef VNOISE_GUEST_DTL_CLOCKRESP_H
#define VNOISE_GUEST_DTL_CLOCKRESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CLOCKRESP_LOCK_RETRY_NS 1000000000ULL
/* The production setting (guest/dtl's responder, `agent --passive`): sleep between polls, never spin. */
#define CLOCKRESP_CHEAP_POLL_NS 10000000ULL /* poll_ns: before the first answer */
/* step_ns: between polls inside a window (at most ~4 per window) */
#define CLOCKRESP_CHEAP_STEP_NS 100000ULL

struct clockresp;

struct clockresp_params {
	const char *lock_path; /* NULL: VN_DTL_RESPONDER_LOCK */
	uint64_t poll_ns; /* sleep outside the window; 0: 5 ms */
	uint64_t
	    step_ns; /* inside the window: 0 spins (precise, costly), else sleeps this between polls */
};

struct clockresp_stats {
	bool holds_lock; /* this responder answers (it holds the lock) */
	uint64_t replies; /* requests answered */
	uint64_t in_window; /* of which found while polling inside a predicted window */
	uint64_t rounds; /* clockresp_round calls (= wake-ups + spins) */
	uint64_t wakes; /* sleeps up to a predicted window that ended */
	uint64_t late_sum_ns, late_max_ns; /* how late those wake-ups were */
	uint64_t lock_tries; /* failed attempts to take the lock */
};

/*
 * A responder on the host area [area, area + area_size), writable (the reply line is written there).
 * Takes the lock at the first round. Returns NULL with errno (ENOMEM).
 */
struct clockresp *clockresp_new(void *area, size_t area_size, const struct clockresp_params *p)
    __attribute__((warn_unused_result));
void clockresp_free(struct clockresp *c); /* accepts NULL; releases the lock */

/*
 * One round: take the lock if not held (at most every CLOCKRESP_LOCK_RETRY_NS), follow the host header,
 * answer a new request (stamped when it is seen). Returns how long to wait before the next round in ns (0:
 * poll again at once); *now (if not NULL) gets the guest CLOCK_MONOTONIC read at the start of the round
 * (one clock read per idle round: under TCG a wake-up and a clock read are what a responder costs).
 */
uint64_t clockresp_round(struct clockresp *c, uint64_t *now);
void clockresp_stats(const struct clockresp *c, struct clockresp_stats *out);

#endif
