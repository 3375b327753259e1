/* SPDX-License-Identifier: MIT */
/*
 * clocksync: guest -> host clock mapping from NTP-style exchanges.
 *
 * Sample i: y_i = guest_i - (send_i + recv_i) / 2, h_i = rtt_i / 2 + stamp_err. The guest stamped inside
 * [send, recv], so the true offset theta at guest time x_i is within y_i +- h_i. All y are kept relative to
 * an integer base (off_base_ns) and all x relative to an integer anchor (anchor_ns, the newest window sample),
 * so the doubles only ever hold window-sized differences.
 *
 * The estimate is a weighted least-squares line through the window (weights 1 / h^2). The bound does not
 * depend on how the line was found: for any linear model m and a true offset that is a line L (within d),
 * the error e = m - L is linear too, and at each window sample |e(x_i)| <= |r_i| + h_i + d with r_i the
 * residual. Two such points j < k bound e everywhere: by max(E_j, E_k) between them and by straight
 * extrapolation beyond (the pair bound); one point and the drift prior |slope of L| <= max_drift bound it as
 * E_p + (|b| + max_drift) * |x - x_p| (the prior bound). The smaller of the two, plus d for L vs the truth,
 * is reported. d = wander_ppm * span, span covering the window and the query time.
 */
#include <errno.h>
#include <math.h>
#include <string.h>
#include "match/clocksync.h"
#include "match/clocksync_priv.h"

#define T63 (1ull << 63)

void clocksync_params_default(struct clocksync_params *p)
{
	memset(p, 0, sizeof(*p));
	p->bucket_ns = 100000000ull;
	p->window = 32;
	p->min_fit_samples = 8;
	p->min_fit_span_ns = 1000000000ull;
	p->max_rtt_ns = 100000000ull;
	p->guest_back_tol_ns = 1000;
	p->stamp_err_ns = 100;
	p->max_drift_ppm = 100.0;
	p->wander_ppm = 0.5;
	p->step_k = 3.0;
	p->step_min_ns = 10000;
	p->step_confirm = 2;
	p->stale_ns = 5000000000ull;
	p->good_unc_ns = 20000;
	p->good_every = 4;
	p->good_watch_k = 8;
}

static void model_clear(struct clocksync *cs)
{
	cs->head = 0;
	cs->nwin = 0;
	cs->npend = 0;
	cs->mode = CLOCKSYNC_MODE_NONE;
	cs->anchor_ns = 0;
	cs->off_base_ns = 0;
	cs->a = 0.0;
	cs->b = 0.0;
	cs->xmin = cs->xmax = 0.0;
	cs->pair = false;
	cs->xj = cs->ej = cs->xk = cs->ek = cs->xp = cs->ep = 0.0;
	cs->min_rtt_ns = 0;
}

int clocksync_init(struct clocksync *cs, const struct clocksync_params *p)
{
	struct clocksync_params d;

	if (!p) {
		clocksync_params_default(&d);
		p = &d;
	}
	if (!p->bucket_ns || p->window < 2 || p->window > CLOCKSYNC_MAX_WINDOW ||
	    p->min_fit_samples < 2 || p->min_fit_samples > p->window || !p->max_rtt_ns ||
	    p->max_rtt_ns >= T63 || p->stamp_err_ns >= T63 || p->guest_back_tol_ns >= T63 ||
	    !(p->max_drift_ppm > 0.0) || p->max_drift_ppm > 10000.0 || !(p->wander_ppm >= 0.0) ||
	    p->wander_ppm > 10000.0 || !(p->step_k >= 1.0) || !isfinite(p->step_k) ||
	    p->step_min_ns >= T63 || p->step_confirm < 1 ||
	    p->step_confirm > CLOCKSYNC_MAX_CONFIRM || !p->stale_ns || p->good_unc_ns >= T63 ||
	    p->good_every < 1 || p->good_every > 64 || p->good_watch_k < 1 ||
	    p->good_watch_k > 1000)
		return -EINVAL;
	memset(cs, 0, sizeof(*cs));
	cs->p = *p;
	model_clear(cs);
	return 0;
}

void clocksync_reset(struct clocksync *cs)
{
	model_clear(cs);
	cs->resets++;
}

/* Half the round trip plus the stamp granularity: the hard error bound of one sample. */
static double sample_h(const struct clocksync *cs, const struct clocksync_sample *s)
{
	return (double)(s->rtt_ns / 2) + 0.5 * (double)(s->rtt_ns & 1) + (double)cs->p.stamp_err_ns;
}

/* Offset sample relative to base; false if the difference does not fit (a wild step). */
static bool sample_y(const struct clocksync_sample *s, int64_t base, double *y)
{
	int64_t d;

	if (__builtin_sub_overflow(s->off_ns, base, &d))
		return false;
	*y = (double)d - 0.5 * (double)(s->rtt_ns & 1);
	return true;
}

/* Guest time relative to the anchor; both are below 2^63, so the difference fits. */
static double rel_x(const struct clocksync *cs, uint64_t guest_ns)
{
	return (double)(int64_t)(guest_ns - cs->anchor_ns);
}

static const struct clocksync_sample *win_at(const struct clocksync *cs, uint32_t i)
{
	return &cs->win[(cs->head + i) % cs->p.window];
}

/* The bound (ns, real) at guest time x relative to the anchor; see the top of the file. */
static double bound_at(const struct clocksync *cs, double x)
{
	double span = fmax(x, cs->xmax) - fmin(x, cs->xmin);
	double d = cs->p.wander_ppm * 1e-6 * span;
	double u = cs->ep + (fabs(cs->b) + cs->p.max_drift_ppm * 1e-6) * fabs(x - cs->xp) + 2.0 * d;

	if (cs->pair) {
		double g = cs->xk - cs->xj, up;

		if (x < cs->xj)
			up = cs->ej + (cs->ej + cs->ek + 2.0 * d) * (cs->xj - x) / g;
		else if (x > cs->xk)
			up = cs->ek + (cs->ej + cs->ek + 2.0 * d) * (x - cs->xk) / g;
		else
			up = fmax(cs->ej, cs->ek);
		up += 2.0 * d;
		if (up < u)
			u = up;
	}
	return u;
}

static uint64_t bound_ns(double u)
{
	/* + 1: the conversion rounds to whole ns, and the doubles round too */
	if (!(u < 9e18))
		return UINT64_MAX;
	return (uint64_t)ceil(u) + 1;
}

/* Refit the model to the window (nwin >= 1). O(nwin). */
static void refit(struct clocksync *cs)
{
	double x[CLOCKSYNC_MAX_WINDOW], y[CLOCKSYNC_MAX_WINDOW], h[CLOCKSYNC_MAX_WINDOW];
	double e[CLOCKSYNC_MAX_WINDOW];
	double sw = 0, swx = 0, swy = 0, xm, ym, sxx = 0, sxy = 0, slope, best;
	const struct clocksync_sample *newest = win_at(cs, cs->nwin - 1);
	uint32_t n = cs->nwin, i, j, k, half;

	cs->anchor_ns = newest->guest_ns;
	cs->off_base_ns = newest->off_ns;
	cs->min_rtt_ns = UINT64_MAX;
	cs->xmin = INFINITY;
	cs->xmax = -INFINITY;
	for (i = 0; i < n; i++) {
		const struct clocksync_sample *s = win_at(cs, i);
		double w;

		x[i] = rel_x(cs, s->guest_ns);
		if (!sample_y(s, cs->off_base_ns, &y[i]))
			y[i] = 0.0; /* cannot happen: window samples agree within the step limit */
		h[i] = sample_h(cs, s);
		w = 1.0 / ((h[i] + 1.0) * (h[i] + 1.0));
		sw += w;
		swx += w * x[i];
		swy += w * y[i];
		cs->xmin = fmin(cs->xmin, x[i]);
		cs->xmax = fmax(cs->xmax, x[i]);
		if (s->rtt_ns < cs->min_rtt_ns)
			cs->min_rtt_ns = s->rtt_ns;
	}
	xm = swx / sw;
	ym = swy / sw;
	for (i = 0; i < n; i++) {
		double w = 1.0 / ((h[i] + 1.0) * (h[i] + 1.0));

		sxx += w * (x[i] - xm) * (x[i] - xm);
		sxy += w * (x[i] - xm) * (y[i] - ym);
	}
	cs->mode = CLOCKSYNC_MODE_OFFSET;
	cs->b = 0.0;
	cs->a = ym;
	if (n >= cs->p.min_fit_samples && cs->xmax - cs->xmin >= (double)cs->p.min_fit_span_ns &&
	    sxx > 0.0) {
		slope = sxy / sxx;
		if (fabs(slope) <= cs->p.max_drift_ppm * 1e-6) {
			cs->mode = CLOCKSYNC_MODE_DRIFT;
			cs->b = slope;
			cs->a = ym - slope * xm;
		}
	}

	/* per-sample error bounds, then the points of the two bounds */
	for (i = 0; i < n; i++)
		e[i] = fabs(y[i] - (cs->a + cs->b * x[i])) + h[i];
	slope = fabs(cs->b) + cs->p.max_drift_ppm * 1e-6;
	best = INFINITY;
	for (i = 0; i < n; i++) {
		double v = e[i] + slope * (cs->xmax - x[i]);

		if (v < best) {
			best = v;
			cs->xp = x[i];
			cs->ep = e[i];
		}
	}
	cs->pair = false;
	if (n >= 2) {
		/* j: best of the older half; k: the newer-half point that gives the smallest bound at xmax */
		half = n / 2;
		j = 0;
		for (i = 1; i < half; i++)
			if (e[i] < e[j])
				j = i;
		k = n;
		best = INFINITY;
		for (i = half; i < n; i++) {
			double v;

			if (x[i] <= x[j])
				continue; /* guest times may be slightly out of order (tolerance) */
			v = e[i] + (e[i] + e[j]) * (cs->xmax - x[i]) / (x[i] - x[j]);
			if (v < best) {
				best = v;
				k = i;
			}
		}
		if (k < n) {
			cs->pair = true;
			cs->xj = x[j];
			cs->ej = e[j];
			cs->xk = x[k];
			cs->ek = e[k];
		}
	}
	cs->refits++;
}

/* Put s into the window (its bucket's lowest-rtt sample wins). True when the window changed. */
static bool window_add(struct clocksync *cs, const struct clocksync_sample *s)
{
	struct clocksync_sample *newest;

	if (cs->nwin) {
		newest = &cs->win[(cs->head + cs->nwin - 1) % cs->p.window];
		if (newest->bucket == s->bucket) {
			if (s->rtt_ns >= newest->rtt_ns)
				return false;
			*newest = *s;
			return true;
		}
	}
	if (cs->nwin == cs->p.window) {
		cs->head = (cs->head + 1) % cs->p.window;
		cs->nwin--;
	}
	cs->win[(cs->head + cs->nwin) % cs->p.window] = *s;
	cs->nwin++;
	return true;
}

static void count_accepted(struct clocksync *cs, const struct clocksync_sample *s)
{
	cs->accepted++;
	cs->last_recv_ns = s->send_ns + s->rtt_ns;
	cs->last_guest_ns = s->guest_ns;
}

/* Does s contradict the model (or go back in guest time)? */
static bool is_candidate(const struct clocksync *cs, const struct clocksync_sample *s)
{
	double y, x, dev, lim;

	if (s->guest_ns + cs->p.guest_back_tol_ns < cs->last_guest_ns)
		return true;
	if (!sample_y(s, cs->off_base_ns, &y))
		return true;
	x = rel_x(cs, s->guest_ns);
	dev = fabs(y - (cs->a + cs->b * x));
	lim = cs->p.step_k * (bound_at(cs, x) + sample_h(cs, s)) + (double)cs->p.step_min_ns;
	return !(dev <= lim);
}

/* Do two step candidates (p before s) agree with each other? */
static bool candidates_agree(const struct clocksync *cs, const struct clocksync_sample *p,
			     const struct clocksync_sample *s)
{
	double y, dx, lim;

	if (s->guest_ns + cs->p.guest_back_tol_ns < p->guest_ns)
		return false;
	if (!sample_y(s, p->off_ns, &y))
		return false;
	y += 0.5 * (double)(p->rtt_ns & 1);
	dx = fabs((double)(int64_t)(s->guest_ns - p->guest_ns));
	lim = sample_h(cs, s) + sample_h(cs, p) + cs->p.max_drift_ppm * 1e-6 * dx +
	      (double)cs->p.step_min_ns;
	return fabs(y) <= lim;
}

static void drop_pending(struct clocksync *cs)
{
	cs->rejected += cs->npend;
	cs->rej[CLOCKSYNC_R_UNCONFIRMED] += cs->npend;
	cs->npend = 0;
}

static enum clocksync_verdict reject(struct clocksync *cs, enum clocksync_rej r,
				     enum clocksync_verdict v)
{
	cs->rejected++;
	cs->rej[r]++;
	return v;
}

enum clocksync_verdict clocksync_update(struct clocksync *cs, uint64_t host_send_ns,
					uint64_t guest_ns, uint64_t host_recv_ns)
{
	struct clocksync_sample s;
	uint32_t i, n;

	if (host_send_ns >= T63 || guest_ns >= T63 || host_recv_ns >= T63)
		return reject(cs, CLOCKSYNC_R_RANGE, CLOCKSYNC_REJ_RANGE);
	if (host_recv_ns < host_send_ns)
		return reject(cs, CLOCKSYNC_R_ORDER, CLOCKSYNC_REJ_ORDER);
	if (host_recv_ns - host_send_ns > cs->p.max_rtt_ns)
		return reject(cs, CLOCKSYNC_R_RTT, CLOCKSYNC_REJ_RTT);
	if (cs->seen && host_send_ns < cs->last_send_ns)
		return reject(cs, CLOCKSYNC_R_HOST_BACK, CLOCKSYNC_REJ_HOST_BACK);
	s.guest_ns = guest_ns;
	s.send_ns = host_send_ns;
	s.rtt_ns = host_recv_ns - host_send_ns;
	/* fits in int64_t: guest, send + rtt < 2^63, so guest - send - rtt / 2 > -2^63 */
	s.off_ns = (int64_t)guest_ns - (int64_t)host_send_ns - (int64_t)(s.rtt_ns / 2);
	s.bucket = host_send_ns / cs->p.bucket_ns;
	cs->seen = true;
	cs->last_send_ns = host_send_ns;

	if (cs->mode == CLOCKSYNC_MODE_NONE || !is_candidate(cs, &s)) {
		drop_pending(cs);
		count_accepted(cs, &s);
		if (!window_add(cs, &s))
			return CLOCKSYNC_ACCEPTED;
		refit(cs);
		return CLOCKSYNC_USED;
	}

	/* a possible step: hold it until step_confirm candidates in a row agree */
	if (cs->npend && !candidates_agree(cs, &cs->pend[cs->npend - 1], &s))
		drop_pending(cs);
	cs->pend[cs->npend++] = s;
	if (cs->npend < cs->p.step_confirm)
		return CLOCKSYNC_PENDING;
	n = cs->npend;
	model_clear(cs);
	for (i = 0; i < n; i++) {
		count_accepted(cs, &cs->pend[i]);
		(void)window_add(cs, &cs->pend[i]);
	}
	refit(cs);
	cs->steps++;
	return CLOCKSYNC_STEP;
}

int clocksync_g2h(const struct clocksync *cs, uint64_t guest_ns, uint64_t *host_ns)
{
	double c;
	int64_t off, h;

	if (cs->mode == CLOCKSYNC_MODE_NONE)
		return -EAGAIN;
	if (guest_ns >= T63)
		return -ERANGE;
	c = cs->a + cs->b * rel_x(cs, guest_ns);
	if (!(fabs(c) < 4e18))
		return -ERANGE;
	if (__builtin_add_overflow(cs->off_base_ns, (int64_t)llround(c), &off) ||
	    __builtin_sub_overflow((int64_t)guest_ns, off, &h) || h < 0)
		return -ERANGE;
	*host_ns = (uint64_t)h;
	return 0;
}

int clocksync_h2g(const struct clocksync *cs, uint64_t host_ns, uint64_t *guest_ns)
{
	long double x;
	int64_t d, g;

	if (cs->mode == CLOCKSYNC_MODE_NONE)
		return -EAGAIN;
	if (host_ns >= T63)
		return -ERANGE;
	/* h = g - offset(g) with x = g - anchor: x (1 - b) = h - anchor + off_base + a */
	if (__builtin_sub_overflow((int64_t)host_ns, (int64_t)cs->anchor_ns, &d) ||
	    __builtin_add_overflow(d, cs->off_base_ns, &d))
		return -ERANGE;
	if (d > -(INT64_C(1) << 50) && d < (INT64_C(1) << 50) && fabs(cs->a) < 0x1p50) {
		/* within 13 days of the anchor doubles keep a quarter of a ns: the host's records take
		 * this path (the x87 division and llroundl were a few percent of serve --guest) */
		double xd = ((double)d + cs->a) / (1.0 - cs->b);

		if (!(fabs(xd) < 4e18) ||
		    __builtin_add_overflow((int64_t)cs->anchor_ns, (int64_t)llround(xd), &g) ||
		    g < 0)
			return -ERANGE;
		*guest_ns = (uint64_t)g;
		return 0;
	}
	x = ((long double)d + cs->a) / (1.0L - cs->b);
	if (!(fabsl(x) < 4e18L) ||
	    __builtin_add_overflow((int64_t)cs->anchor_ns, (int64_t)llroundl(x), &g) || g < 0)
		return -ERANGE;
	*guest_ns = (uint64_t)g;
	return 0;
}

uint64_t clocksync_uncertainty_ns(const struct clocksync *cs, uint64_t guest_ns)
{
	if (cs->mode == CLOCKSYNC_MODE_NONE || guest_ns >= T63)
		return UINT64_MAX;
	return bound_ns(bound_at(cs, rel_x(cs, guest_ns)));
}

void clocksync_state(const struct clocksync *cs, uint64_t now_host_ns, struct clocksync_state *st)
{
	long double xl;
	double x, c;
	int64_t off;

	memset(st, 0, sizeof(*st));
	st->mode = cs->mode;
	st->valid = cs->mode != CLOCKSYNC_MODE_NONE;
	st->window_used = cs->nwin;
	st->pending = cs->npend;
	st->min_rtt_ns = cs->nwin ? cs->min_rtt_ns : 0;
	st->last_update_ns = cs->last_recv_ns;
	st->stale = !cs->accepted || (now_host_ns > cs->last_recv_ns &&
				      now_host_ns - cs->last_recv_ns > cs->p.stale_ns);
	st->accepted = cs->accepted;
	st->rejected = cs->rejected;
	st->steps = cs->steps;
	st->resets = cs->resets;
	st->refits = cs->refits;
	memcpy(st->rej, cs->rej, sizeof(st->rej));
	st->uncertainty_ns = UINT64_MAX;
	if (!st->valid)
		return;
	/* guest time of now: g - now = off_base + a + b (g - anchor), solved for x = g - anchor */
	xl = ((long double)now_host_ns - (long double)cs->anchor_ns + (long double)cs->off_base_ns +
	      cs->a) /
	     (1.0L - cs->b);
	x = (double)xl;
	c = cs->a + cs->b * x;
	if (!(fabs(c) < 4e18) || __builtin_add_overflow(cs->off_base_ns, (int64_t)llround(c), &off))
		off = c < 0 ? INT64_MIN : INT64_MAX; /* now is absurdly far from the samples */
	st->offset_ns = off;
	st->drift_ppm = cs->b * 1e6;
	st->uncertainty_ns = bound_ns(bound_at(cs, x));
}

void clocksync_pace(const struct clocksync *cs, uint64_t now_host_ns, uint64_t grid_ns,
		    uint64_t min_watch_ns, uint64_t max_watch_ns, struct clocksync_pace *out)
{
	struct clocksync_state st;
	uint64_t w;

	out->every_ns = grid_ns;
	out->watch_ns = max_watch_ns;
	if (!cs->p.good_unc_ns || cs->mode != CLOCKSYNC_MODE_DRIFT || cs->npend)
		return;
	clocksync_state(cs, now_host_ns, &st);
	if (st.stale || st.uncertainty_ns > cs->p.good_unc_ns)
		return;
	out->every_ns = grid_ns * cs->p.good_every;
	w = st.uncertainty_ns * cs->p.good_watch_k;
	out->watch_ns = w < min_watch_ns ? min_watch_ns : w > max_watch_ns ? max_watch_ns : w;
}

const char *clocksync_verdict_name(enum clocksync_verdict v)
{
	switch (v) {
	case CLOCKSYNC_USED:
		return "used";
	case CLOCKSYNC_ACCEPTED:
		return "accepted";
	case CLOCKSYNC_PENDING:
		return "pending";
	case CLOCKSYNC_STEP:
		return "step";
	case CLOCKSYNC_REJ_RANGE:
		return "rej_range";
	case CLOCKSYNC_REJ_ORDER:
		return "rej_order";
	case CLOCKSYNC_REJ_RTT:
		return "rej_rtt";
	case CLOCKSYNC_REJ_HOST_BACK:
		return "rej_host_back";
	}
	return "?";
}
