/* SPDX-License-Identifier: MIT */
/*
 * clocksync: the mapping guest CLOCK_MONOTONIC -> host CLOCK_MONOTONIC, estimated from NTP-style exchanges
 * (the host writes a request at host_send_ns, the guest stamps guest_ns while answering, the host sees the
 * answer at host_recv_ns). Pure computation: no I/O, no allocation, no locks; one thread at a time per object.
 *
 * Model: offset = guest - host, offset(g) = a + b * (g - anchor) over guest time g (b = drift). Each exchange
 * gives the sample guest_ns - (send + recv) / 2 with a hard error bound rtt / 2. Per host-time bucket only the
 * lowest-rtt sample is kept; the last `window` buckets are fitted by weighted least squares (weights 1 / h^2),
 * offset only while there are few samples or a short span. The uncertainty is a bound, not a deviation: it
 * holds whenever (1) the guest really stamped inside [send, recv] (+ stamp_err_ns), (2) the true offset stays
 * within wander_ppm * span of a straight line, (3) |true drift| <= max_drift_ppm (only used by the fallback
 * bound). See clocksync.c and the design note for the derivation.
 *
 * Absolute times are integer ns below 2^63 and stay integers; only differences inside the window are doubles.
 */
#ifndef VNOISE_HOST_MATCH_CLOCKSYNC_H
#define VNOISE_HOST_MATCH_CLOCKSYNC_H

#include <stdbool.h>
#include <stdint.h>

#define CLOCKSYNC_MAX_WINDOW 256u /* buckets kept at most */
#define CLOCKSYNC_MAX_CONFIRM 8u /* step_confirm at most */

struct clocksync_params {
	uint64_t bucket_ns; /* host-time bucket: one (lowest-rtt) sample kept per bucket; 100 ms */
	uint32_t window; /* buckets fitted, 2 .. CLOCKSYNC_MAX_WINDOW; 32 */
	uint32_t min_fit_samples; /* drift is fitted from this many buckets on (2 .. window); 8 */
	uint64_t min_fit_span_ns; /* ... and this much guest time between first and last; 1 s */
	uint64_t max_rtt_ns; /* rtt above this is absurd: rejected; 100 ms */
	uint64_t guest_back_tol_ns; /* guest time may go back this much between samples; 1 us */
	uint64_t
	    stamp_err_ns; /* guest clock granularity, added to every rtt / 2; 100 ns (HPET tick 70) */
	double
	    max_drift_ppm; /* |drift| assumed at most this; larger fits fall back to offset only; 100 */
	double wander_ppm; /* the offset is a line within wander_ppm * span (model error); 0.5 */
	double step_k; /* a sample farther than step_k * (uncertainty + rtt/2) + step_min_ns ... */
	uint64_t step_min_ns; /* ... from the model is a step candidate; 3, 10 us */
	uint32_t step_confirm; /* consecutive agreeing candidates that make a step, 1 .. 8; 2 */
	uint64_t stale_ns; /* stale when no accepted sample for this long (host time); 5 s */
	/* pacing (clocksync_pace): once the model fits drift and its bound is within good_unc_ns, exchanges
	 * are needed only every good_every grid points and an answer only within good_watch_k * bound */
	uint64_t good_unc_ns; /* 20 us; 0: never thin */
	uint32_t good_every; /* 1 .. 64; 4 (every 200 ms on the 50 ms grid) */
	uint32_t good_watch_k; /* 1 .. 1000; 8 */
};

/* What clocksync_update() did with one exchange. */
enum clocksync_verdict {
	CLOCKSYNC_USED = 0, /* accepted and entered the window: the model was refitted */
	CLOCKSYNC_ACCEPTED, /* accepted, but its bucket already holds a sample with an rtt as low */
	CLOCKSYNC_PENDING, /* disagrees with the model: held as a possible clock step */
	CLOCKSYNC_STEP, /* completed a step: model reset and refitted from the held samples */
	CLOCKSYNC_REJ_RANGE, /* a time >= 2^63 */
	CLOCKSYNC_REJ_ORDER, /* host_recv < host_send */
	CLOCKSYNC_REJ_RTT, /* rtt > max_rtt_ns */
	CLOCKSYNC_REJ_HOST_BACK, /* host_send before the previous exchange's host_send */
};

/* Rejection reasons as counted (index of rej[]). */
enum clocksync_rej {
	CLOCKSYNC_R_RANGE = 0,
	CLOCKSYNC_R_ORDER,
	CLOCKSYNC_R_RTT,
	CLOCKSYNC_R_HOST_BACK,
	CLOCKSYNC_R_UNCONFIRMED, /* held as a step candidate, then contradicted by a later sample */
	CLOCKSYNC_R_N
};

enum clocksync_mode {
	CLOCKSYNC_MODE_NONE = 0, /* no sample yet (or after a reset) */
	CLOCKSYNC_MODE_OFFSET, /* offset only, drift 0: few samples, short span, or an absurd fitted drift */
	CLOCKSYNC_MODE_DRIFT, /* offset and drift fitted */
};

/* A sample in the window. Private. */
struct clocksync_sample {
	uint64_t guest_ns;
	uint64_t send_ns;
	uint64_t rtt_ns;
	int64_t
	    off_ns; /* guest - send - floor(rtt / 2); the offset sample is off_ns - (rtt & 1) / 2 */
	uint64_t bucket;
};

/* The estimator. Embed it or allocate it; fields are private: read them through clocksync_state(). */
struct clocksync {
	struct clocksync_params p;
	/* window: ring of buckets in host-time order */
	struct clocksync_sample win[CLOCKSYNC_MAX_WINDOW];
	uint32_t head, nwin; /* oldest at head */
	/* step candidates */
	struct clocksync_sample pend[CLOCKSYNC_MAX_CONFIRM];
	uint32_t npend;
	/* model: offset(g) = off_base + a + b * (g - anchor), b dimensionless */
	enum clocksync_mode mode;
	uint64_t anchor_ns; /* guest time of the newest window sample */
	int64_t off_base_ns;
	double a, b;
	/* bound terms, x relative to anchor (ns): see clocksync_uncertainty_ns() */
	double xmin, xmax; /* window span */
	bool pair; /* a two-point bound exists */
	double xj, ej, xk, ek; /* its points (xj < xk) and their errors |residual| + h */
	double xp, ep; /* best point for the drift-prior bound */
	uint64_t min_rtt_ns; /* of the window */
	/* history */
	bool seen; /* an exchange passed the basic checks */
	uint64_t last_send_ns;
	uint64_t last_recv_ns; /* host_recv of the last accepted sample */
	uint64_t last_guest_ns; /* guest stamp of the last accepted sample */
	uint64_t accepted, rejected, steps, resets, refits;
	uint64_t rej[CLOCKSYNC_R_N];
};

/* Snapshot for views and JSON ("clock":{"offset_ns","uncertainty_ns"}). */
struct clocksync_state {
	bool valid; /* a model exists: clocksync_g2h() works */
	bool stale; /* no accepted sample for more than stale_ns before now (or none ever) */
	enum clocksync_mode mode;
	int64_t offset_ns; /* guest - host at now */
	double drift_ppm; /* d(guest - host)/d(guest) in ppm: > 0 means the guest clock runs fast */
	uint64_t uncertainty_ns; /* bound on the conversion error at now; UINT64_MAX when !valid */
	uint64_t min_rtt_ns; /* lowest rtt in the window */
	uint32_t window_used; /* buckets in the window */
	uint32_t pending; /* exchanges held as step candidates (counted once resolved) */
	uint64_t last_update_ns; /* host_recv of the last accepted sample; 0 if none */
	uint64_t accepted, rejected, steps, resets, refits;
	uint64_t rej[CLOCKSYNC_R_N];
};

/* The defaults documented on struct clocksync_params. */
void clocksync_params_default(struct clocksync_params *p);

/* Empty estimator with params p (NULL: defaults). Returns 0 or -EINVAL (a parameter out of range). */
int clocksync_init(struct clocksync *cs, const struct clocksync_params *p)
    __attribute__((warn_unused_result));

/*
 * Feed one exchange, in host order. Returns what happened to it (enum clocksync_verdict); every exchange is
 * counted once as accepted or rejected, a held one when it is resolved. O(window) when the window changes.
 */
enum clocksync_verdict clocksync_update(struct clocksync *cs, uint64_t host_send_ns,
					uint64_t guest_ns, uint64_t host_recv_ns);

/*
 * Host time at which the guest clock read guest_ns. Returns 0, -EAGAIN (no sample yet) or -ERANGE (the
 * result or guest_ns is outside 0 .. 2^63). For a fixed model it is non-decreasing in guest_ns; a refit may
 * move it by up to the uncertainty. O(1), no side effects.
 */
int clocksync_g2h(const struct clocksync *cs, uint64_t guest_ns, uint64_t *host_ns)
    __attribute__((warn_unused_result));

/*
 * Guest time at which the host clock read host_ns: the inverse of clocksync_g2h() (g2h(h2g(h)) is h within
 * 1 ns for a fixed model, up to rounding). Returns 0, -EAGAIN (no sample yet) or -ERANGE. For a fixed model it
 * is non-decreasing in host_ns. O(1), no side effects.
 */
int clocksync_h2g(const struct clocksync *cs, uint64_t host_ns, uint64_t *guest_ns)
    __attribute__((warn_unused_result));

/* Bound on the error of clocksync_g2h(cs, guest_ns) under the model's assumptions; UINT64_MAX without a
 * model. O(1). */
uint64_t clocksync_uncertainty_ns(const struct clocksync *cs, uint64_t guest_ns);

/* Snapshot at host time now_host_ns (offset, uncertainty and staleness are evaluated there). */
void clocksync_state(const struct clocksync *cs, uint64_t now_host_ns, struct clocksync_state *st);

/* When to exchange and how long to wait for the answer (clocksync_pace). */
struct clocksync_pace {
	uint64_t every_ns; /* exchange on the multiples of this (a multiple of the grid) */
	uint64_t watch_ns; /* watch for the answer this long (min_watch_ns .. max_watch_ns) */
};

/*
 * The exchange pace at host time now_host_ns for requests on a grid of grid_ns, the answer watched for up to
 * max_watch_ns: every grid point and the whole watch while the model is being built (no drift fit, stale, or
 * its bound at now above good_unc_ns); once it is good, every good_every grid points, and an answer is
 * watched for only good_watch_k times the bound (at least min_watch_ns): a later answer has an error bound
 * (rtt / 2) too wide to tighten the model, and it is still taken if it comes before the next round. Should
 * the bound grow past good_unc_ns, the pace goes back to every grid point. O(1), no side effects.
 */
void clocksync_pace(const struct clocksync *cs, uint64_t now_host_ns, uint64_t grid_ns,
		    uint64_t min_watch_ns, uint64_t max_watch_ns, struct clocksync_pace *out);

/* Forget the model, window and held samples (e.g. the guest announced a new epoch); keeps the counters and
 * the parameters, counts a reset. */
void clocksync_reset(struct clocksync *cs);

#endif
