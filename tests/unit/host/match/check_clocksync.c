/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/match/clocksync. A simulated guest clock G(H) = H0 + theta0 + floor((H - H0) (1 + beta) +
 * gamma (H - H0)^2) at 1e18 ns scale (offsets up to +-9e17, drift 0, +5, -7 ppm, optionally ramping 1 ppm/s)
 * answers exchanges with chosen or random (seeded, asymmetric, heavy-tailed) one-way delays. Topics:
 * parameters; the no-sample and few-sample fallbacks; the bucket filter and window; accuracy and the bound
 * (the reported uncertainty covers the true conversion error at every query of many random trials, including
 * worst-case asymmetry and a drifting drift, and stays small); conversion monotonicity, precision and range;
 * rejects and their counts, hostile values; clock steps (guest reboot, jump, lone glitch, guest time going
 * back, threshold, confirmation); staleness; reset.
 */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "match/clocksync.h"
#include "match/clocksync_priv.h"

/* ck_assert reports every passed assertion to the runner (a write each): hot loops use this instead */
#define CHECK(cond, ...)                           \
	do {                                       \
		if (!(cond))                       \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

#define US 1000ULL
#define MS 1000000ULL
#define S 1000000000ULL

/* ---- simulated clocks ---- */

struct sim {
	uint64_t rng;
	uint64_t H0; /* host time at the start */
	int64_t theta0; /* guest - host at H0 */
	long double beta; /* drift (dimensionless) */
	long double gamma; /* curvature (1/ns): the drift changes by 2 gamma per ns */
	uint64_t now; /* host time of the next exchange */
	uint64_t last_g; /* guest stamp of the last exchange */
};

static uint64_t rnd(struct sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static uint64_t rnd_n(struct sim *s, uint64_t n)
{
	return (rnd(s) >> 11) % n;
}

static double rnd_u(struct sim *s)
{
	return ((double)(rnd(s) >> 11) + 0.5) / 9007199254740992.0;
}

static void sim_init(struct sim *s, uint64_t seed, uint64_t H0, int64_t theta0, double drift_ppm)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed * 0x9e3779b97f4a7c15ull + 1;
	s->H0 = H0;
	s->theta0 = theta0;
	s->beta = (long double)drift_ppm * 1e-6L;
	s->now = H0;
}

/* What the guest clock reads at host time H (H >= H0): G(H) = H0 + theta0 + d (1 + beta) + gamma d^2. */
static uint64_t sim_guest(const struct sim *s, uint64_t H)
{
	long double d = (long double)(H - s->H0);

	d = d * (1.0L + s->beta) + s->gamma * d * d;
	return (uint64_t)((int64_t)s->H0 + s->theta0 + (int64_t)floorl(d));
}

/* Host time at which the guest clock read g, relative to H0 (G inverted; Newton when curved). */
static long double sim_true_host(const struct sim *s, uint64_t g)
{
	long double r = (long double)((int64_t)g - (int64_t)s->H0 - s->theta0);
	long double d = r / (1.0L + s->beta);
	int i;

	for (i = 0; i < 4 && s->gamma != 0.0L; i++)
		d -= (d * (1.0L + s->beta) + s->gamma * d * d - r) /
		     (1.0L + s->beta + 2.0L * s->gamma * d);
	return d;
}

/* True guest - host at host time H. */
static long double sim_true_offset(const struct sim *s, uint64_t H)
{
	long double d = (long double)(int64_t)(H - s->H0);

	return (long double)s->theta0 + s->beta * d + s->gamma * d * d;
}

/* One exchange at s->now with one-way delays d1 (to the guest) and d2 (back); then now += period. */
static enum clocksync_verdict sim_xchg(struct sim *s, struct clocksync *cs, uint64_t d1,
				       uint64_t d2, uint64_t period)
{
	uint64_t send = s->now, g = sim_guest(s, send + d1);

	s->last_g = g;
	s->now += period;
	return clocksync_update(cs, send, g, send + d1 + d2);
}

/* Conversion error of g (ns, signed) and the reported bound. */
static long double conv_err(const struct sim *s, const struct clocksync *cs, uint64_t g,
			    uint64_t *u)
{
	uint64_t host = 0;
	int rc = clocksync_g2h(cs, g, &host);

	CHECK(rc == 0, "g2h(%llu): %d", (unsigned long long)g, rc);
	*u = clocksync_uncertainty_ns(cs, g);
	return (long double)(int64_t)(host - s->H0) - sim_true_host(s, g);
}

/* Assert that the bound covers the error at g; returns |error|. */
static long double check_bound(const struct sim *s, const struct clocksync *cs, uint64_t g,
			       uint64_t seed, const char *what)
{
	uint64_t u;
	long double e = fabsl(conv_err(s, cs, g, &u));

	CHECK(e <= (long double)u, "seed %llu %s: error %.1Lf ns > uncertainty %llu ns",
	      (unsigned long long)seed, what, e, (unsigned long long)u);
	return e;
}

static struct clocksync CS;

static void init_params(const struct clocksync_params *p)
{
	ck_assert_int_eq(clocksync_init(&CS, p), 0);
}

/* Strict settings for synthetic truth that is exactly linear: no model slack, 1 ns stamp granularity. */
static void strict_params(struct clocksync_params *p)
{
	clocksync_params_default(p);
	p->stamp_err_ns = 1;
	p->wander_ppm = 0.0;
}

/* 3 s of clean exchanges every 10 ms on a fresh default estimator. */
static void warm_up(struct sim *s, uint64_t seed, double drift_ppm)
{
	int i;

	init_params(NULL);
	sim_init(s, seed, 1000000000000000000ull, -999000000000000000ll, drift_ppm);
	for (i = 0; i < 300; i++)
		ck_assert_int_le(
		    sim_xchg(s, &CS, 400 + rnd_n(s, 400), 400 + rnd_n(s, 400), 10 * MS),
		    CLOCKSYNC_ACCEPTED);
}

/* ---- params ---- */

START_TEST(test_params_defaults)
{
	struct clocksync_params p;
	struct clocksync_state st;

	clocksync_params_default(&p);
	ck_assert_uint_eq(p.bucket_ns, 100 * MS);
	ck_assert_uint_eq(p.window, 32);
	ck_assert_uint_eq(p.step_confirm, 2);
	ck_assert_int_eq(clocksync_init(&CS, NULL), 0);
	ck_assert_int_eq(memcmp(&CS.p, &p, sizeof(p)), 0);
	clocksync_state(&CS, 5 * S, &st);
	ck_assert(!st.valid);
	ck_assert(st.stale);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_NONE);
	ck_assert_uint_eq(st.uncertainty_ns, UINT64_MAX);
	ck_assert_uint_eq(st.accepted + st.rejected + st.steps + st.refits, 0);
}
END_TEST

START_TEST(test_params_invalid)
{
	struct clocksync_params p, d;

	clocksync_params_default(&d);
#define BAD(field, value)                                           \
	do {                                                        \
		p = d;                                              \
		p.field = value;                                    \
		ck_assert_int_eq(clocksync_init(&CS, &p), -EINVAL); \
	} while (0)
	BAD(bucket_ns, 0);
	BAD(window, 1);
	BAD(window, CLOCKSYNC_MAX_WINDOW + 1);
	BAD(min_fit_samples, 1);
	BAD(min_fit_samples, d.window + 1);
	BAD(max_rtt_ns, 0);
	BAD(max_drift_ppm, 0.0);
	BAD(max_drift_ppm, NAN);
	BAD(max_drift_ppm, 20000.0);
	BAD(wander_ppm, -1.0);
	BAD(step_k, 0.5);
	BAD(step_k, INFINITY);
	BAD(step_confirm, 0);
	BAD(step_confirm, CLOCKSYNC_MAX_CONFIRM + 1);
	BAD(stale_ns, 0);
	BAD(good_every, 0);
	BAD(good_every, 65);
	BAD(good_watch_k, 0);
	BAD(good_watch_k, 1001);
#undef BAD
	p = d;
	p.window = CLOCKSYNC_MAX_WINDOW;
	p.min_fit_samples = 2;
	p.step_confirm = CLOCKSYNC_MAX_CONFIRM;
	ck_assert_int_eq(clocksync_init(&CS, &p), 0);
}
END_TEST

/* ---- fallback: no sample, few samples ---- */

START_TEST(test_no_sample)
{
	uint64_t h = 7;

	init_params(NULL);
	ck_assert_int_eq(clocksync_g2h(&CS, 1000, &h), -EAGAIN);
	ck_assert_uint_eq(h, 7);
	ck_assert_uint_eq(clocksync_uncertainty_ns(&CS, 1000), UINT64_MAX);
}
END_TEST

START_TEST(test_one_sample)
{
	struct clocksync_params p;
	struct clocksync_state st;
	uint64_t host, send = 1000000000000000000ull, g = 200000000000000123ull;

	clocksync_params_default(&p);
	p.wander_ppm = 0.5;
	p.stamp_err_ns = 100;
	init_params(&p);
	/* rtt 2001: the sample is g - (send + 1000.5) */
	ck_assert_int_eq(clocksync_update(&CS, send, g, send + 2001), CLOCKSYNC_USED);
	clocksync_state(&CS, send + 2001, &st);
	ck_assert(st.valid);
	ck_assert(!st.stale);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_OFFSET);
	ck_assert(st.drift_ppm == 0.0);
	ck_assert_uint_eq(st.window_used, 1);
	ck_assert_uint_eq(st.min_rtt_ns, 2001);
	ck_assert_uint_eq(st.last_update_ns, send + 2001);
	/* conversion of the stamp itself: the midpoint, rounded */
	ck_assert_int_eq(clocksync_g2h(&CS, g, &host), 0);
	ck_assert_uint_le(host > send + 1000 ? host - (send + 1000) : send + 1000 - host, 1);
	/* bound at the stamp: rtt/2 + stamp_err (+1 rounding); one second later: + max_drift + 2 wander */
	ck_assert_uint_eq(clocksync_uncertainty_ns(&CS, g), 1000 + 100 + 2);
	ck_assert_uint_eq(clocksync_uncertainty_ns(&CS, g + S), 1101 + 100000 + 1000 + 1);
	ck_assert_uint_eq(clocksync_uncertainty_ns(&CS, g - S), 1101 + 100000 + 1000 + 1);
}
END_TEST

START_TEST(test_few_samples_offset_only)
{
	struct clocksync_params p;
	struct clocksync_state st;
	struct sim s;
	int i;

	strict_params(&p);
	init_params(&p);
	sim_init(&s, 1, 1000000000000000000ull, -300000000000000000ll, 5.0);
	/* 7 buckets (< min_fit_samples 8) spanning 0.6 s: offset only */
	for (i = 0; i < 7; i++)
		ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 100 * MS), CLOCKSYNC_USED);
	clocksync_state(&CS, s.now, &st);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_OFFSET);
	ck_assert(st.drift_ppm == 0.0);
	ck_assert_uint_eq(st.window_used, 7);
	check_bound(&s, &CS, s.last_g, 1, "offset only");
	/* 8 buckets but only 0.7 s of span: still offset only */
	ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 100 * MS), CLOCKSYNC_USED);
	clocksync_state(&CS, s.now, &st);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_OFFSET);
	/* 11 buckets over 1.0 s: drift fitted */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 100 * MS), CLOCKSYNC_USED);
	clocksync_state(&CS, s.now, &st);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_DRIFT);
	ck_assert_msg(fabs(st.drift_ppm - 5.0) < 0.01, "drift %f", st.drift_ppm);
	check_bound(&s, &CS, s.last_g, 1, "drift");
}
END_TEST

/* A drift beyond max_drift_ppm is not believed: offset only. */
START_TEST(test_absurd_drift_falls_back)
{
	struct clocksync_params p;
	struct clocksync_state st;
	struct sim s;
	int i;

	strict_params(&p);
	p.max_drift_ppm = 20.0;
	p.step_min_ns = 1 * MS; /* keep the step detector out of it */
	init_params(&p);
	sim_init(&s, 2, 1000000000000000000ull, 5000000000ll, 50.0);
	for (i = 0; i < 20; i++)
		sim_xchg(&s, &CS, 300, 300, 100 * MS);
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 0);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_OFFSET);
	ck_assert(st.drift_ppm == 0.0);
}
END_TEST

/* ---- bucket filter and window ---- */

START_TEST(test_bucket_keeps_lowest_rtt)
{
	struct clocksync_params p;
	struct clocksync_state st;
	uint64_t host, b = 1000000000000000000ull, g0 = 400000000000000000ull;
	int64_t off;

	strict_params(&p);
	init_params(&p);
	/* bucket of b: a slow exchange stamped right at its send (biased by +5 us), then a fast one, then a
	 * middle one; only the fast one must remain */
	ck_assert_int_eq(clocksync_update(&CS, b, g0, b + 10 * US), CLOCKSYNC_USED);
	ck_assert_int_eq(clocksync_update(&CS, b + 1 * MS, g0 + 1 * MS + 500, b + 1 * MS + 1000),
			 CLOCKSYNC_USED);
	ck_assert_int_eq(clocksync_update(&CS, b + 2 * MS, g0 + 2 * MS, b + 2 * MS + 5000),
			 CLOCKSYNC_ACCEPTED);
	clocksync_state(&CS, b + 3 * MS, &st);
	ck_assert_uint_eq(st.window_used, 1);
	ck_assert_uint_eq(st.min_rtt_ns, 1000);
	ck_assert_uint_eq(st.accepted, 3);
	ck_assert_uint_eq(st.refits, 2);
	off = (int64_t)g0 - (int64_t)b;
	ck_assert_int_eq(st.offset_ns, off);
	ck_assert_int_eq(clocksync_g2h(&CS, g0 + 1 * MS + 500, &host), 0);
	ck_assert_uint_eq(host, b + 1 * MS + 500);
	/* the next bucket opens a new window entry */
	ck_assert_int_eq(
	    clocksync_update(&CS, b + 100 * MS, g0 + 100 * MS + 900, b + 100 * MS + 1800),
	    CLOCKSYNC_USED);
	clocksync_state(&CS, b + 101 * MS, &st);
	ck_assert_uint_eq(st.window_used, 2);
}
END_TEST

START_TEST(test_window_bounded)
{
	struct clocksync_params p;
	struct clocksync_state st;
	struct sim s;
	int i;

	strict_params(&p);
	p.window = 4;
	p.min_fit_samples = 3;
	init_params(&p);
	sim_init(&s, 3, 1000000000000000000ull, 123456789ll, 0.0);
	sim_xchg(&s, &CS, 50, 50, 100 * MS); /* rtt 100: the best, in the first bucket only */
	for (i = 0; i < 9; i++) {
		sim_xchg(&s, &CS, 500, 500, 100 * MS);
		clocksync_state(&CS, s.now, &st);
		ck_assert_uint_eq(st.window_used, i + 2 < 4 ? i + 2 : 4);
		ck_assert_uint_eq(st.min_rtt_ns, i + 2 <= 4 ? 100 : 1000);
	}
	ck_assert_uint_eq(st.accepted, 10);
}
END_TEST

/* ---- accuracy and the bound ---- */

struct trial_out {
	long double max_err; /* largest |error| seen at the newest stamp after warm-up */
	uint64_t max_u; /* largest uncertainty at the newest stamp after warm-up */
	double drift_err_ppm; /* |fitted - true| at the end */
	uint64_t checks;
};

/*
 * One random trial: a fresh clock (offset, drift), per-trial asymmetric delay distributions (base + exponential
 * each way), 3% outliers of 0.2-3 ms on one side, an exchange every 10-20 ms for n exchanges. After every
 * exchange the bound is checked at the stamp, 0-2 s back, 0.5 s and 3 s ahead, and at "now" via the state.
 */
static void run_trial(const struct clocksync_params *p, uint64_t seed, double drift_ppm,
		      double ramp_ppm_per_s, int n, int asym_mode, struct trial_out *out)
{
	struct clocksync_state st;
	struct sim s;
	uint64_t base1, base2, mean1, mean2, g_first = 0, warm;
	int i;

	init_params(p);
	memset(out, 0, sizeof(*out));
	sim_init(&s, seed, 1000000000000000000ull + seed * 1234567891ull % (1000 * S), 0,
		 drift_ppm);
	s.theta0 = (int64_t)rnd_n(&s, 1800000000000000000ull) - 900000000000000000ll;
	s.gamma = (long double)ramp_ppm_per_s * 1e-6L / 2e9L;
	base1 = 150 + rnd_n(&s, 1500);
	base2 = 150 + rnd_n(&s, 1500);
	mean1 = 50 + rnd_n(&s, 2000);
	mean2 = 50 + rnd_n(&s, 2000);
	warm = s.now + 2 * S;
	for (i = 0; i < n; i++) {
		uint64_t d1 = base1 + (uint64_t)(-log(rnd_u(&s)) * (double)mean1);
		uint64_t d2 = base2 + (uint64_t)(-log(rnd_u(&s)) * (double)mean2);
		uint64_t send = s.now, u;
		long double e;
		enum clocksync_verdict v;

		if (rnd_n(&s, 100) < 3) {
			if (rnd_n(&s, 2))
				d1 += 200 * US + rnd_n(&s, 2800 * US);
			else
				d2 += 200 * US + rnd_n(&s, 2800 * US);
		}
		if (asym_mode == 1) { /* stamped right at send: every midpoint is late by rtt/2 */
			d2 += d1;
			d1 = 0;
		} else if (asym_mode == 2) { /* stamped right at receive */
			d1 += d2;
			d2 = 0;
		}
		v = sim_xchg(&s, &CS, d1, d2, 10 * MS + rnd_n(&s, 10 * MS));
		ck_assert_msg(v == CLOCKSYNC_USED || v == CLOCKSYNC_ACCEPTED,
			      "seed %llu: verdict %s", (unsigned long long)seed,
			      clocksync_verdict_name(v));
		if (!g_first)
			g_first = s.last_g;
		e = check_bound(&s, &CS, s.last_g, seed, "at stamp");
		out->checks++;
		if (send >= warm) {
			u = clocksync_uncertainty_ns(&CS, s.last_g);
			if (e > out->max_err)
				out->max_err = e;
			if (u > out->max_u)
				out->max_u = u;
		}
		check_bound(&s, &CS, s.last_g - rnd_n(&s, s.last_g - g_first + 1) % (2 * S), seed,
			    "in the past");
		check_bound(&s, &CS, s.last_g + S / 2, seed, "0.5 s ahead");
		check_bound(&s, &CS, s.last_g + 3 * S, seed, "3 s ahead");
		out->checks += 3;
		clocksync_state(&CS, s.now, &st);
		e = fabsl((long double)st.offset_ns - sim_true_offset(&s, s.now));
		CHECK(e <= (long double)st.uncertainty_ns + 1,
		      "seed %llu: offset error %.1Lf > uncertainty %llu", (unsigned long long)seed,
		      e, (unsigned long long)st.uncertainty_ns);
		out->checks++;
	}
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 0);
	ck_assert_uint_eq(st.rejected, 0);
	out->drift_err_ppm =
	    fabs(st.drift_ppm - drift_ppm - ramp_ppm_per_s * (double)(s.now - s.H0) / (double)S);
}

static const double drifts[] = { 0.0, 5.0, -7.0 };

/* Many random trials, strict settings: the bound always holds, and it is tight enough to be useful. */
START_TEST(test_bound_random_strict)
{
	struct clocksync_params p;
	struct trial_out o;
	uint64_t checks = 0, worst_u = 0;
	long double worst_e = 0;
	double worst_drift = 0;
	int seed;

	strict_params(&p);
	for (seed = 1; seed <= 90; seed++) {
		run_trial(&p, (uint64_t)seed, drifts[seed % 3], 0.0, 600, 0, &o);
		checks += o.checks;
		if (o.max_u > worst_u)
			worst_u = o.max_u;
		if (o.max_err > worst_e)
			worst_e = o.max_err;
		if (o.drift_err_ppm > worst_drift)
			worst_drift = o.drift_err_ppm;
		/* the acceptance bar under TCG is 50 us; with rtts of a few us it must be far below */
		ck_assert_msg(o.max_u <= 10 * US, "seed %d: uncertainty %llu ns", seed,
			      (unsigned long long)o.max_u);
		ck_assert_msg(o.max_err <= 3 * US, "seed %d: error %.0Lf ns", seed, o.max_err);
		ck_assert_msg(o.drift_err_ppm <= 1.0, "seed %d: drift off by %f ppm", seed,
			      o.drift_err_ppm);
	}
	ck_assert_uint_gt(checks, 200000);
	ck_assert_uint_gt(worst_u, 0);
}
END_TEST

/* Defaults (stamp error 100 ns, wander 0.5 ppm): the same, with the default slack. */
START_TEST(test_bound_random_defaults)
{
	struct clocksync_params p;
	struct trial_out o;
	int seed;

	clocksync_params_default(&p);
	for (seed = 100; seed < 130; seed++) {
		run_trial(&p, (uint64_t)seed, drifts[seed % 3], 0.0, 600, 0, &o);
		ck_assert_msg(o.max_u <= 15 * US, "seed %d: uncertainty %llu ns", seed,
			      (unsigned long long)o.max_u);
	}
}
END_TEST

/* Worst-case asymmetry: the guest always stamps at one end of the window; the bound still holds. */
START_TEST(test_bound_extreme_asymmetry)
{
	struct clocksync_params p;
	struct trial_out o;
	int seed;

	strict_params(&p);
	for (seed = 200; seed < 230; seed++) {
		run_trial(&p, (uint64_t)seed, drifts[seed % 3], 0.0, 400, 1 + seed % 2, &o);
		ck_assert_msg(o.max_u <= 20 * US, "seed %d: uncertainty %llu ns", seed,
			      (unsigned long long)o.max_u);
	}
}
END_TEST

/*
 * A truth that is not a line: the drift ramps by 1 ppm/s (6-9 ppm over a trial). Over the longest span a
 * query covers (window 3.2 s + 3 s ahead) it stays within 2.4 us of a line, inside the default wander of
 * 0.5 ppm * span: the bound must still hold, through its wander term.
 */
START_TEST(test_bound_drift_ramp)
{
	struct clocksync_params p;
	struct trial_out o;
	int seed;

	clocksync_params_default(&p);
	p.stamp_err_ns = 1;
	for (seed = 300; seed < 330; seed++) {
		run_trial(&p, (uint64_t)seed, drifts[seed % 3], seed % 2 ? 1.0 : -1.0, 600, 0, &o);
		ck_assert_msg(o.max_u <= 20 * US, "seed %d: uncertainty %llu ns", seed,
			      (unsigned long long)o.max_u);
	}
}
END_TEST

/* Outliers with huge rtt (up to 50 ms, all on one side) do not pull the estimate. */
START_TEST(test_outliers_ignored)
{
	struct clocksync_params p;
	struct clocksync_state st;
	struct sim s;
	uint64_t u;
	long double e;
	int i;

	strict_params(&p);
	init_params(&p);
	sim_init(&s, 4, 1000000000000000000ull, -987654321012345678ll, -7.0);
	for (i = 0; i < 1000; i++) {
		if (rnd_n(&s, 100) < 30) {
			uint64_t d1 = 1 * MS + rnd_n(&s, 49 * MS);

			/* one exchange at a time: the next request follows the answer */
			sim_xchg(&s, &CS, d1, 200, d1 + 200 + 5 * MS);
		} else {
			sim_xchg(&s, &CS, 400 + rnd_n(&s, 200), 400 + rnd_n(&s, 200), 5 * MS);
		}
	}
	sim_xchg(&s, &CS, 150 * MS, 100, 5 * MS); /* absurd rtt: rejected */
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.rejected, 1);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_RTT], 1);
	ck_assert_uint_eq(st.steps, 0);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_DRIFT);
	ck_assert_msg(fabs(st.drift_ppm + 7.0) < 0.2, "drift %f", st.drift_ppm);
	ck_assert_uint_le(st.min_rtt_ns, 1200);
	sim_xchg(&s, &CS, 500, 500, 5 * MS);
	e = fabsl(conv_err(&s, &CS, s.last_g, &u));
	ck_assert_msg(e <= 700, "error %.0Lf", e);
	ck_assert_uint_le(u, 2 * US);
	ck_assert(e <= (long double)u);
}
END_TEST

/* ---- conversion ---- */

START_TEST(test_conversion_monotonic)
{
	struct clocksync_params p;
	struct clocksync_state st;
	struct sim s;
	uint64_t g, prev, host, base;
	int k, i;

	strict_params(&p);
	for (k = 0; k < 3; k++) {
		init_params(&p);
		sim_init(&s, 5 + (uint64_t)k, 1000000000000000000ull, -900000000000000000ll + k,
			 drifts[k]);
		for (i = 0; i < 300; i++)
			sim_xchg(&s, &CS, 300 + rnd_n(&s, 900), 300 + rnd_n(&s, 900), 20 * MS);
		clocksync_state(&CS, s.now, &st);
		ck_assert(st.drift_ppm != 0.0); /* a real slope, so rounding steps occur */
		/* dense around the anchor and far away, then coarse over +-1e15 ns */
		for (base = s.last_g - 5000000; base <= s.last_g + 5000000; base += 5000000) {
			ck_assert_int_eq(clocksync_g2h(&CS, base, &prev), 0);
			for (g = base + 1; g < base + 2000000; g++) {
				CHECK(clocksync_g2h(&CS, g, &host) == 0, "g2h failed");
				CHECK(host >= prev, "drift %f: g2h(%llu) < g2h(%llu - 1)",
				      drifts[k], (unsigned long long)g, (unsigned long long)g);
				CHECK(host - prev <= 2, "g2h jumps by %llu",
				      (unsigned long long)(host - prev));
				prev = host;
			}
		}
		ck_assert_int_eq(clocksync_g2h(&CS, s.last_g - 1000000000000000ull, &prev), 0);
		for (g = s.last_g - 1000000000000000ull; g < s.last_g + 1000000000000000ull;
		     g += 999999937ull) {
			CHECK(clocksync_g2h(&CS, g, &host) == 0, "g2h failed");
			CHECK(host >= prev, "coarse: not monotonic at %llu", (unsigned long long)g);
			prev = host;
		}
	}
}
END_TEST

/* 1e18-scale absolute times, symmetric delays: conversions are exact to the ns. */
START_TEST(test_conversion_precision)
{
	static const int64_t offs[] = { -999999999999999999ll, 987654321987654321ll, 0, 1 };
	struct clocksync_params p;
	struct sim s;
	uint64_t u;
	long double e;
	int k, i;

	strict_params(&p);
	for (k = 0; k < 4; k++) {
		init_params(&p);
		sim_init(&s, 6, 1000000000000000000ull + (uint64_t)k * 77777, offs[k], 0.0);
		for (i = 0; i < 200; i++)
			sim_xchg(&s, &CS, 700, 700, 50 * MS);
		for (i = -5; i <= 5; i++) {
			uint64_t g = s.last_g + (uint64_t)((int64_t)i * 1000000007ll);

			e = fabsl(conv_err(&s, &CS, g, &u));
			ck_assert_msg(e <= 1.0L, "offset %lld, g %+d s: error %.2Lf",
				      (long long)offs[k], i, e);
		}
	}
}
END_TEST

/* h2g inverts g2h: round trips within 1 ns near and far from the anchor, monotonic, drift or not. */
START_TEST(test_h2g_inverse)
{
	struct clocksync_params p;
	struct sim s;
	uint64_t g, h, h2, prev = 0, g2;
	int k, i;

	strict_params(&p);
	for (k = 0; k < 3; k++) {
		init_params(&p);
		ck_assert_int_eq(clocksync_h2g(&CS, 5 * S, &g), -EAGAIN);
		sim_init(&s, 11 + (uint64_t)k, 1000000000000000ull, -400000000000000ll + k * 3,
			 drifts[k]);
		for (i = 0; i < 300; i++)
			sim_xchg(&s, &CS, 300 + rnd_n(&s, 900), 300 + rnd_n(&s, 900), 20 * MS);
		for (i = -1000; i <= 1000; i++) {
			h = s.now + (uint64_t)((int64_t)i * 1000003ll);
			ck_assert_int_eq(clocksync_h2g(&CS, h, &g), 0);
			ck_assert_int_eq(clocksync_g2h(&CS, g, &h2), 0);
			CHECK(h2 + 1 >= h && h2 <= h + 1, "drift %f: h %llu -> g %llu -> h %llu",
			      drifts[k], (unsigned long long)h, (unsigned long long)g,
			      (unsigned long long)h2);
			CHECK(i == -1000 || g >= prev, "h2g not monotonic");
			prev = g;
		}
		for (h = s.now; h < s.now + 100000; h++) {
			ck_assert_int_eq(clocksync_h2g(&CS, h, &g2), 0);
			CHECK(g2 >= prev || h == s.now, "h2g not monotonic (dense)");
			prev = g2;
		}
		ck_assert_int_eq(clocksync_h2g(&CS, 1ull << 63, &g), -ERANGE);
	}
}
END_TEST

START_TEST(test_conversion_range)
{
	uint64_t host = 0;

	init_params(NULL);
	/* guest runs 1 s ahead of the host */
	ck_assert_int_eq(clocksync_update(&CS, 5 * S, 6 * S, 5 * S + 1000), CLOCKSYNC_USED);
	ck_assert_int_eq(clocksync_g2h(&CS, 6 * S + 500, &host), 0);
	ck_assert_uint_eq(host, 5 * S + 1000);
	ck_assert_int_eq(clocksync_g2h(&CS, S / 2, &host), -ERANGE); /* before host time 0 */
	ck_assert_int_eq(clocksync_g2h(&CS, 1ull << 63, &host), -ERANGE);
	ck_assert_uint_eq(clocksync_uncertainty_ns(&CS, 1ull << 63), UINT64_MAX);
}
END_TEST

/* ---- rejects ---- */

START_TEST(test_reject_counting)
{
	struct clocksync_state st;
	uint64_t b = 1000000000000000000ull, g = 3000000000000ull, h1, h2;

	init_params(NULL);
	ck_assert_int_eq(clocksync_update(&CS, b, g, b + 1000), CLOCKSYNC_USED);
	ck_assert_int_eq(clocksync_g2h(&CS, g, &h1), 0);
	ck_assert_int_eq(clocksync_update(&CS, b + 10 * MS, g + 10 * MS, b + 10 * MS - 1),
			 CLOCKSYNC_REJ_ORDER);
	ck_assert_int_eq(
	    clocksync_update(&CS, b + 20 * MS, g + 20 * MS, b + 20 * MS + 100 * MS + 1),
	    CLOCKSYNC_REJ_RTT);
	ck_assert_int_eq(clocksync_update(&CS, b + 20 * MS, g + 20 * MS, b + 20 * MS + 100 * MS),
			 CLOCKSYNC_ACCEPTED); /* exactly max_rtt is allowed */
	ck_assert_int_eq(clocksync_update(&CS, b - 1, g, b + 500), CLOCKSYNC_REJ_HOST_BACK);
	ck_assert_int_eq(clocksync_update(&CS, 1ull << 63, g, 1ull << 63), CLOCKSYNC_REJ_RANGE);
	ck_assert_int_eq(clocksync_update(&CS, b + 30 * MS, 1ull << 63, b + 30 * MS + 1),
			 CLOCKSYNC_REJ_RANGE);
	ck_assert_int_eq(clocksync_update(&CS, b + 30 * MS, g, UINT64_MAX), CLOCKSYNC_REJ_RANGE);
	clocksync_state(&CS, b + 40 * MS, &st);
	ck_assert_uint_eq(st.accepted, 2);
	ck_assert_uint_eq(st.rejected, 6);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_ORDER], 1);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_RTT], 1);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_HOST_BACK], 1);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_RANGE], 3);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_UNCONFIRMED], 0);
	ck_assert_uint_eq(st.window_used, 1);
	/* rejects leave the model alone */
	ck_assert_int_eq(clocksync_g2h(&CS, g, &h2), 0);
	ck_assert_uint_eq(h1, h2);
	ck_assert_str_eq(clocksync_verdict_name(CLOCKSYNC_REJ_HOST_BACK), "rej_host_back");
}
END_TEST

/* Hostile exchanges (random 64-bit values, extreme offsets) after a good start: no undefined behaviour
 * (the sanitizer build runs this), every one counted, conversions succeed or say -ERANGE. */
START_TEST(test_hostile_inputs)
{
	struct clocksync_state st;
	struct sim s;
	uint64_t host, n = 0;
	int i, rc;

	init_params(NULL);
	ck_assert_int_eq(clocksync_update(&CS, (1ull << 63) - 4001, 0, (1ull << 63) - 1),
			 CLOCKSYNC_USED);
	ck_assert_int_eq(clocksync_g2h(&CS, 0, &host), 0);
	ck_assert_uint_eq(host, (1ull << 63) - 2001);
	ck_assert_int_eq(clocksync_g2h(&CS, (1ull << 63) - 1, &host), -ERANGE);

	warm_up(&s, 14, 5.0);
	for (i = 0; i < 20000; i++) {
		uint64_t a = rnd(&s), b = rnd(&s), c = rnd(&s);

		if (i % 3 == 0) { /* plausible host times, wild guest stamp */
			a = s.now + rnd_n(&s, 1000);
			c = a + rnd_n(&s, 2000);
			b >>= rnd_n(&s, 64);
		}
		(void)clocksync_update(&CS, a, b, c);
		n++;
		rc = clocksync_g2h(&CS, rnd(&s) >> rnd_n(&s, 64), &host);
		CHECK(rc == 0 || rc == -ERANGE, "g2h: %d", rc);
		(void)clocksync_uncertainty_ns(&CS, rnd(&s) >> rnd_n(&s, 64));
	}
	clocksync_state(&CS, 0, &st);
	clocksync_state(&CS, UINT64_MAX, &st);
	ck_assert_uint_eq(st.accepted + st.rejected + st.pending, 300 + n);
}
END_TEST

/* ---- steps ---- */

START_TEST(test_step_guest_reboot)
{
	struct clocksync_state st;
	struct sim s;
	uint64_t acc;
	int i;

	warm_up(&s, 7, 5.0);
	clocksync_state(&CS, s.now, &st);
	acc = st.accepted;
	/* the guest reboots: its clock restarts near 2 s */
	s.theta0 = 2000000000ll - (int64_t)s.now;
	s.H0 = s.now;
	ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_PENDING);
	ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_STEP);
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 1);
	ck_assert_uint_eq(st.accepted, acc + 2);
	ck_assert_uint_eq(st.rejected, 0);
	ck_assert_int_eq(st.mode, CLOCKSYNC_MODE_OFFSET);
	check_bound(&s, &CS, s.last_g, 7, "after reboot");
	for (i = 0; i < 200; i++)
		ck_assert_int_le(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_ACCEPTED);
	check_bound(&s, &CS, s.last_g, 7, "settled");
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 1);
}
END_TEST

START_TEST(test_step_jump)
{
	struct clocksync_state st;
	struct sim s;

	warm_up(&s, 8, -7.0);
	s.theta0 += 1 * MS; /* the guest clock jumps 1 ms forward */
	ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_PENDING);
	ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_STEP);
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 1);
	check_bound(&s, &CS, s.last_g, 8, "after jump");
}
END_TEST

/* A lone wild sample is held, then rejected when the next one agrees with the model. */
START_TEST(test_step_lone_glitch)
{
	struct clocksync_state st;
	struct sim s;
	uint64_t before, after, send, g_old;

	warm_up(&s, 9, 0.0);
	g_old = s.last_g;
	ck_assert_int_eq(clocksync_g2h(&CS, g_old, &before), 0);
	send = s.now;
	ck_assert_int_eq(
	    clocksync_update(&CS, send, sim_guest(&s, send + 500) + 300 * US, send + 1000),
	    CLOCKSYNC_PENDING);
	s.now += 10 * MS;
	ck_assert_int_le(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_ACCEPTED);
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 0);
	ck_assert_uint_eq(st.rejected, 1);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_UNCONFIRMED], 1);
	ck_assert_int_eq(clocksync_g2h(&CS, g_old, &after), 0);
	ck_assert_uint_le(after > before ? after - before : before - after, 1000);
	/* two glitches that disagree with each other do not make a step either */
	send = s.now;
	ck_assert_int_eq(clocksync_update(&CS, send, sim_guest(&s, send) + 300 * US, send + 1000),
			 CLOCKSYNC_PENDING);
	send += 10 * MS;
	ck_assert_int_eq(clocksync_update(&CS, send, sim_guest(&s, send) - 400 * US, send + 1000),
			 CLOCKSYNC_PENDING);
	s.now = send + 10 * MS;
	ck_assert_int_le(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_ACCEPTED);
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 0);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_UNCONFIRMED], 3);
}
END_TEST

/*
 * A guest stamp back in time beyond the tolerance is a step candidate even when its offset looks plausible;
 * within the tolerance it is fine. The previous answer was stamped at the very end of a 1 ms round trip, so
 * a stamp 2 us earlier in the next exchange is only 3 us off in offset: the time order gives it away.
 */
START_TEST(test_step_guest_backwards)
{
	struct clocksync_state st;
	struct sim s;
	uint64_t send, g;

	warm_up(&s, 10, 0.0);
	ck_assert_int_le(sim_xchg(&s, &CS, 1 * MS, 0, 1 * MS + 1000), CLOCKSYNC_ACCEPTED);
	g = s.last_g;
	send = s.now;
	ck_assert_int_eq(clocksync_update(&CS, send, g - 2 * US, send + 1000), CLOCKSYNC_PENDING);
	send += 1000;
	ck_assert_int_le(clocksync_update(&CS, send, g - 500, send + 1000), CLOCKSYNC_ACCEPTED);
	clocksync_state(&CS, send + 1000, &st);
	ck_assert_uint_eq(st.rej[CLOCKSYNC_R_UNCONFIRMED], 1);
	ck_assert_uint_eq(st.rejected, 1);
	ck_assert_uint_eq(st.steps, 0);
}
END_TEST

/* Deviations within k * (uncertainty + rtt/2) + step_min are no step; step_confirm 1 steps at once. */
START_TEST(test_step_threshold_and_confirm)
{
	struct clocksync_params p;
	struct clocksync_state st;
	struct sim s;
	int i;

	warm_up(&s, 11, 0.0);
	s.theta0 += 5 * US; /* below step_min_ns (10 us) */
	for (i = 0; i < 5; i++)
		ck_assert_int_le(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_ACCEPTED);
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 0);

	clocksync_params_default(&p);
	p.step_confirm = 1;
	init_params(&p);
	sim_init(&s, 12, 1000000000000000000ull, 42, 0.0);
	for (i = 0; i < 50; i++)
		sim_xchg(&s, &CS, 500, 500, 10 * MS);
	s.theta0 -= 50 * US;
	ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_STEP);
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 1);
	ck_assert_uint_eq(st.window_used, 1);
	check_bound(&s, &CS, s.last_g, 12, "after step");
}
END_TEST

/* ---- staleness and reset ---- */

START_TEST(test_stale)
{
	struct clocksync_state st;
	uint64_t b = 1000000000000000000ull;

	init_params(NULL);
	ck_assert_int_eq(clocksync_update(&CS, b, 7 * S, b + 1000), CLOCKSYNC_USED);
	clocksync_state(&CS, b + 1000 + 5 * S, &st);
	ck_assert(!st.stale);
	clocksync_state(&CS, b + 1000 + 5 * S + 1, &st);
	ck_assert(st.stale);
	ck_assert(st.valid); /* still converts; the caller decides */
	ck_assert_uint_gt(st.uncertainty_ns, 500 * US); /* 5 s of unknown drift */
	/* rejected samples do not refresh it */
	ck_assert_int_eq(clocksync_update(&CS, b + 6 * S, 8 * S, b + 6 * S - 1),
			 CLOCKSYNC_REJ_ORDER);
	clocksync_state(&CS, b + 6 * S + 1, &st);
	ck_assert(st.stale);
	ck_assert_int_eq(clocksync_update(&CS, b + 6 * S, 7 * S + 6 * S - 1000, b + 6 * S + 1000),
			 CLOCKSYNC_USED);
	clocksync_state(&CS, b + 6 * S + 2000, &st);
	ck_assert(!st.stale);
	ck_assert_uint_eq(st.last_update_ns, b + 6 * S + 1000);
}
END_TEST

START_TEST(test_reset)
{
	struct clocksync_state st;
	struct sim s;
	uint64_t host;

	warm_up(&s, 13, 5.0);
	clocksync_reset(&CS);
	ck_assert_int_eq(clocksync_g2h(&CS, s.last_g, &host), -EAGAIN);
	clocksync_state(&CS, s.now, &st);
	ck_assert(!st.valid);
	ck_assert_uint_eq(st.resets, 1);
	ck_assert_uint_eq(st.accepted, 300);
	ck_assert_uint_eq(st.window_used, 0);
	/* any clock is taken after a reset, even one far from the old model */
	s.theta0 = 12345;
	ck_assert_int_eq(sim_xchg(&s, &CS, 500, 500, 10 * MS), CLOCKSYNC_USED);
	check_bound(&s, &CS, s.last_g, 13, "after reset");
	clocksync_state(&CS, s.now, &st);
	ck_assert_uint_eq(st.steps, 0);
}
END_TEST

/* p's estimator fed 3 s of exchanges every 10 ms with one-way delays of d ns. */
static void fed(const struct clocksync_params *p, struct sim *s, uint64_t seed, uint64_t d)
{
	init_params(p);
	sim_init(s, seed, 1000000000000000000ull, 5000, 1.0);
	for (int i = 0; i < 300; i++)
		(void)sim_xchg(s, &CS, d, d, 10 * MS);
}

START_TEST(test_pace)
{
	struct clocksync_params p;
	struct clocksync_pace pc;
	struct sim s;
	uint64_t u;

	/* no model: every grid point, the whole watch */
	init_params(NULL);
	clocksync_pace(&CS, 5 * S, 50 * MS, 100 * US, 300 * US, &pc);
	ck_assert_uint_eq(pc.every_ns, 50 * MS);
	ck_assert_uint_eq(pc.watch_ns, 300 * US);
	/* a good drift fit: every 4th grid point, the watch 8 x the bound within [min, max] */
	fed(NULL, &s, 21, 400);
	clocksync_pace(&CS, s.now, 50 * MS, 1 * US, 300 * US, &pc);
	u = clocksync_uncertainty_ns(&CS, s.last_g);
	ck_assert_uint_le(u, 20 * US);
	ck_assert_uint_eq(pc.every_ns, 200 * MS);
	ck_assert_uint_ge(pc.watch_ns,
			  4 * u); /* the bound at now is a little wider than at last_g */
	ck_assert_uint_le(pc.watch_ns, 16 * u);
	clocksync_pace(&CS, s.now, 50 * MS, 250 * US, 300 * US, &pc);
	ck_assert_uint_eq(pc.watch_ns, 250 * US);
	/* stale (nothing for 6 s): every grid point again */
	clocksync_pace(&CS, s.now + 6 * S, 50 * MS, 100 * US, 300 * US, &pc);
	ck_assert_uint_eq(pc.every_ns, 50 * MS);
	ck_assert_uint_eq(pc.watch_ns, 300 * US);
	/* a bound above good_unc_ns (round trips of 100 us): every grid point */
	fed(NULL, &s, 22, 50 * US);
	clocksync_pace(&CS, s.now, 50 * MS, 100 * US, 300 * US, &pc);
	ck_assert_uint_gt(clocksync_uncertainty_ns(&CS, s.last_g), 20 * US);
	ck_assert_uint_eq(pc.every_ns, 50 * MS);
	/* thinning off */
	clocksync_params_default(&p);
	p.good_unc_ns = 0;
	fed(&p, &s, 23, 400);
	clocksync_pace(&CS, s.now, 50 * MS, 100 * US, 300 * US, &pc);
	ck_assert_uint_eq(pc.every_ns, 50 * MS);
	ck_assert_uint_eq(pc.watch_ns, 300 * US);
}
END_TEST

static Suite *clocksync_suite(void)
{
	Suite *s = suite_create("clocksync");
	TCase *tc;

	tc = tcase_create("params");
	tcase_add_test(tc, test_params_defaults);
	tcase_add_test(tc, test_params_invalid);
	suite_add_tcase(s, tc);

	tc = tcase_create("fallback");
	tcase_add_test(tc, test_no_sample);
	tcase_add_test(tc, test_one_sample);
	tcase_add_test(tc, test_few_samples_offset_only);
	tcase_add_test(tc, test_absurd_drift_falls_back);
	suite_add_tcase(s, tc);

	tc = tcase_create("filter");
	tcase_add_test(tc, test_bucket_keeps_lowest_rtt);
	tcase_add_test(tc, test_window_bounded);
	suite_add_tcase(s, tc);

	tc = tcase_create("bound");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_bound_random_strict);
	tcase_add_test(tc, test_bound_random_defaults);
	tcase_add_test(tc, test_bound_extreme_asymmetry);
	tcase_add_test(tc, test_bound_drift_ramp);
	tcase_add_test(tc, test_outliers_ignored);
	suite_add_tcase(s, tc);

	tc = tcase_create("conversion");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_conversion_monotonic);
	tcase_add_test(tc, test_conversion_precision);
	tcase_add_test(tc, test_conversion_range);
	tcase_add_test(tc, test_h2g_inverse);
	suite_add_tcase(s, tc);

	tc = tcase_create("reject");
	tcase_add_test(tc, test_reject_counting);
	tcase_add_test(tc, test_hostile_inputs);
	suite_add_tcase(s, tc);

	tc = tcase_create("step");
	tcase_add_test(tc, test_step_guest_reboot);
	tcase_add_test(tc, test_step_jump);
	tcase_add_test(tc, test_step_lone_glitch);
	tcase_add_test(tc, test_step_guest_backwards);
	tcase_add_test(tc, test_step_threshold_and_confirm);
	tcase_add_test(tc, test_pace);
	suite_add_tcase(s, tc);

	tc = tcase_create("stale_reset");
	tcase_add_test(tc, test_stale);
	tcase_add_test(tc, test_reset);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(clocksync_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
