/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/views/hosttui_model, the terminal-free half of `vnoise-host top`'s screen: rows built
 * from a hostagg fed with records of known size (two domains, a hog that preempts vCPU 0 for 300 ms of a
 * 1 s period, exits, host IRQs, --guest shares), domain rows as means of their vCPUs, the top preemptor,
 * the detail pane, the sparkline history; the order (sort by any column, reversed, ties, filter by name,
 * expanded domains); the column layout at 80 columns and narrower (columns dropped, never past the width)
 * and wide; the readable units; the sparkline in UTF-8 and ASCII; /proc/stat parsing; the period keys.
 */
#include <check.h>
#include "check_main.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/hostagg.h"
#include "views/hosttui_model.h"

#define MS 1000000ULL
#define S 1000000000ULL
#define T0 (1000 * S)

static const char *const UA = "6f1c0b6e-0000-4000-8000-00000000000a";
static const char *const UB = "6f1c0b6e-0000-4000-8000-00000000000b";

static struct hostagg *A;
static struct hostinfo IN;
static struct hosttui_model M;

static void vcpu_period(uint32_t dom, uint32_t v, uint64_t start, uint64_t out_r_ns)
{
	struct vn_host_period
	    p = { .start_ns = start,
		  .end_ns = start + S,
		  .dom = dom,
		  .vcpu = v,
		  .tid = 4000 + v,
		  .cpu = v,
		  .steal_ns = out_r_ns / 2,
		  .out_ns = out_r_ns + 100 * MS,
		  .out_r_ns = out_r_ns,
		  .out_s_ns = 100 * MS,
		  .idle_ns = 100 * MS,
		  .wait_ns = out_r_ns /* the R intervals whole; the S ones had no wakeup */ };

	ck_assert_int_eq(hostagg_period(A, &p), 0);
}

static void run(uint32_t dom, uint32_t v, uint64_t start, uint64_t len, uint32_t pid,
		const char *comm)
{
	struct vn_host_run r = { .start_ns = start,
				 .end_ns = start + len,
				 .out_start_ns = start,
				 .dom = dom,
				 .vcpu = v,
				 .pid = pid };

	snprintf(r.comm, sizeof(r.comm), "%s", comm);
	ck_assert_int_eq(hostagg_run(A, &r), 0);
}

static void agg(uint32_t dom, uint32_t v, uint16_t kind, uint32_t id, uint64_t count,
		uint64_t total)
{
	struct vn_host_agg g = { .start_ns = T0,
				 .end_ns = T0 + S,
				 .dom = dom,
				 .vcpu = v,
				 .kind = kind,
				 .isa = 1,
				 .id = id,
				 .count = count,
				 .total_ns = total };

	ck_assert_int_eq(hostagg_agg(A, &g), 0);
}

/* One period: alpha (2 vCPUs, kvm) with the hog on vCPU 0, beta (1 vCPU, TCG). */
static void feed(uint64_t start, bool with_beta)
{
	vcpu_period(0, 0, start, 300 * MS);
	vcpu_period(0, 1, start, 50 * MS);
	run(0, 0, start + 10 * MS, 290 * MS, 77, "vnhog");
	run(0, 0, start + 400 * MS, 10 * MS, 88, "kworker/0:1");
	run(0, 1, start + 10 * MS, 30 * MS, 88, "kworker/0:1");
	run(0, 1, start + 50 * MS, 20 * MS, 77, "vnhog");
	agg(0, 0, VN_HOST_AGG_EXIT, 1, 2000, 4 * MS); /* EXTERNAL_INTERRUPT */
	agg(0, 0, VN_HOST_AGG_EXIT, 12, 500, 1 * MS); /* HLT */
	agg(0, 0, VN_HOST_AGG_IRQ, 42, 100, 10 * MS);
	agg(0, 0, VN_HOST_AGG_SOFTIRQ, 3, 50, 5 * MS);
	agg(0, 0, VN_HOST_AGG_VECTOR, 0, 1000, 5 * MS);
	if (with_beta)
		vcpu_period(1, 0, start, 100 * MS);
	IN.start_ns = start;
	IN.end_ns = start + S;
}

static void setup(void)
{
	A = hostagg_new();
	ck_assert_ptr_nonnull(A);
	ck_assert_int_eq(hostagg_domain(A, 0, "alpha", UA, "kvm", 100, 2, "started"), 0);
	ck_assert_int_eq(hostagg_domain(A, 1, "beta", UB, "qemu", 200, 1, "started"), 0);
	memset(&IN, 0, sizeof(IN));
	IN.source = "live";
	IN.period_ns = S;
	IN.kvm = 1;
	memset(&M, 0, sizeof(M));
}

static void teardown(void)
{
	hosttui_model_free(&M);
	hostagg_free(A);
}

static const struct hosttui_row *row(const char *uuid, long vcpu)
{
	for (size_t i = 0; i < M.n; i++)
		if (!strcmp(M.rows[i].uuid, uuid) && M.rows[i].is_vcpu == (vcpu >= 0) &&
		    (vcpu < 0 || M.rows[i].vcpu == (uint32_t)vcpu))
			return &M.rows[i];
	return NULL;
}

static void update(uint64_t start, bool with_beta)
{
	hostagg_reset(A);
	feed(start, with_beta);
	ck_assert_int_eq(hosttui_model_update(&M, A, &IN), 0);
}

START_TEST(rows_from_agg)
{
	const struct hosttui_row *v0, *v1, *d, *b;

	update(T0, true);
	ck_assert_uint_eq(M.n, 5);
	v0 = row(UA, 0);
	v1 = row(UA, 1);
	d = row(UA, -1);
	b = row(UB, -1);
	ck_assert(v0 && v1 && d && b && row(UB, 0));
	ck_assert_double_eq_tol(v0->val[HOSTTUI_COL_PREEMPT], 30.0, 1e-9);
	/* out-time: 300 ms preempted + 100 ms halted + 5 ms exits + 20 ms host IRQs */
	ck_assert_double_eq_tol(v0->val[HOSTTUI_COL_OUT], 42.5, 1e-9);
	ck_assert_double_eq_tol(v0->val[HOSTTUI_COL_STEAL], 15.0, 1e-9);
	ck_assert_double_eq_tol(v0->val[HOSTTUI_COL_EXITS], 2500.0, 1e-9);
	ck_assert_double_eq_tol(v0->val[HOSTTUI_COL_HIRQ], 2.0, 1e-9); /* 10 + 5 + 5 ms */
	ck_assert_str_eq(v0->top, "vnhog[77]");
	ck_assert_str_eq(v1->top, "kworker/0:1[88]");
	/* the domain: means of its vCPUs' shares, sum of their rates, the top preemptor over both */
	ck_assert_double_eq_tol(d->val[HOSTTUI_COL_PREEMPT], 17.5, 1e-9);
	ck_assert_double_eq_tol(d->val[HOSTTUI_COL_EXITS], 2500.0, 1e-9);
	ck_assert_str_eq(d->top, "vnhog[77]");
	ck_assert_uint_eq(d->nvcpus, 2);
	ck_assert_str_eq(b->name, "beta");
	ck_assert_str_eq(b->top, "-");
	ck_assert(d->running && d->seen && !d->expanded);
	/* the history holds this period's preempted% at its end, no data before */
	ck_assert(v0->hist[HOSTTUI_HISTORY - 1] > 29.99f && v0->hist[HOSTTUI_HISTORY - 1] < 30.01f);
	ck_assert(v0->hist[HOSTTUI_HISTORY - 2] < 0.0f);
}
END_TEST

START_TEST(detail_pane)
{
	const struct hosttui_detail *det;

	update(T0, true);
	det = row(UA, 0)->det;
	ck_assert_ptr_nonnull(det);
	ck_assert_int_eq(det->npre, 2);
	ck_assert_str_eq(det->pre[0].name, "vnhog[77]");
	ck_assert_double_eq_tol(det->pre[0].a, 100.0 * 290 / 425, 1e-9); /* 290 of 425 ms out */
	ck_assert_double_eq_tol(det->pre[0].b, 29.0, 1e-9);
	ck_assert_int_eq(det->nexit, 2);
	ck_assert_str_eq(det->exit[0].name, "EXTERNAL_INTERRUPT");
	ck_assert_double_eq_tol(det->exit[0].a, 2000.0, 1e-9);
	ck_assert_double_eq_tol(det->exit[0].b, 2.0, 1e-9); /* us per exit */
	ck_assert_int_eq(det->nirq, 3);
	ck_assert_str_eq(det->irq[0].name, "irq 42"); /* largest total first, kinds merged */
	ck_assert_double_eq_tol(det->irq[0].b, 1.0, 1e-9);
	ck_assert_str_eq(det->note, "");
	ck_assert_uint_eq(det->tid, 4000);
	ck_assert_double_eq_tol(det->idle_pct, 25.0, 1e-9);
	ck_assert_str_eq(det->out_line,
			 "out 42.5% = preempted 30.0 (vnhog[77] 29.0, kworker/0:1[88] 1.0) "
			 "+ waiting 0.0 + halted 10.0 + exits 0.5 + irq 2.0");
	/* a TCG domain says why it has no exits */
	ck_assert_str_eq(row(UB, 0)->det->note, "TCG domain: no VM exits");
}
END_TEST

START_TEST(guest_columns)
{
	struct vn_host_match mt = { .start_ns = T0, .end_ns = T0 + S, .dom = 0, .vcpu = 0 };

	hostagg_reset(A);
	feed(T0, false);
	mt.gaps = 10;
	mt.guest_ns[3] = 20 * MS;
	mt.host_ns[VN_HCLASS_HOST_PREEMPT] = 300 * MS;
	mt.residual_ns = 10 * MS;
	ck_assert_int_eq(hostagg_match(A, &mt), 0);
	ck_assert_int_eq(hosttui_model_update(&M, A, &IN), 0);
	ck_assert(row(UA, 0)->has_guest && !row(UA, 1)->has_guest);
	ck_assert_double_eq_tol(row(UA, 0)->val[HOSTTUI_COL_GUEST], 2.0, 1e-9);
	ck_assert_double_eq_tol(row(UA, 0)->val[HOSTTUI_COL_HYP], 30.0, 1e-9);
	ck_assert_double_eq_tol(row(UA, 0)->val[HOSTTUI_COL_HW], 1.0, 1e-9);
	/* the domain: the mean over the vCPUs that have guest data */
	ck_assert(row(UA, -1)->has_guest);
	ck_assert_double_eq_tol(row(UA, -1)->val[HOSTTUI_COL_HYP], 30.0, 1e-9);
}
END_TEST

START_TEST(history_and_gone)
{
	update(T0, true);
	update(T0 + S, false); /* beta has no data this period */
	update(T0 + 2 * S, true);
	ck_assert_uint_eq(M.periods, 3);
	/* beta's 100 ms runnable out-time had no task on its pCPU: waiting, not preempted (0, not "no data") */
	ck_assert(row(UB, 0)->hist[HOSTTUI_HISTORY - 2] < 0.0f);
	ck_assert(row(UB, 0)->hist[HOSTTUI_HISTORY - 1] == 0.0f);
	ck_assert(row(UB, 0)->hist[HOSTTUI_HISTORY - 3] == 0.0f);
	for (int k = HOSTTUI_HISTORY - 3; k < HOSTTUI_HISTORY; k++)
		ck_assert(row(UA, 0)->hist[k] > 29.99f);
	/* the rows stay after 70 periods; the history keeps the last HOSTTUI_HISTORY */
	for (int i = 3; i < 70; i++)
		update(T0 + (uint64_t)i * S, i % 2);
	ck_assert_uint_eq(M.n, 5);
	for (int k = 0; k < HOSTTUI_HISTORY; k++)
		ck_assert(row(UA, 0)->hist[k] > 29.99f);
}
END_TEST

/* The names of the visible rows in order: "alpha", "alpha/0", ... */
static void order_str(const struct hosttui_view *v, char *buf, size_t len)
{
	size_t idx[16], n = hosttui_model_order(&M, v, idx, 16), o = 0;

	buf[0] = 0;
	for (size_t k = 0; k < n; k++) {
		const struct hosttui_row *r = &M.rows[idx[k]];

		if (r->is_vcpu)
			o += (size_t)snprintf(buf + o, len - o, "%s%s/%u", k ? " " : "", r->name,
					      r->vcpu);
		else
			o += (size_t)snprintf(buf + o, len - o, "%s%s", k ? " " : "", r->name);
	}
}

START_TEST(sort_filter_expand)
{
	struct hosttui_view v = { .sort = HOSTTUI_COL_PREEMPT };
	char buf[256];

	update(T0, true);
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "alpha beta"); /* 17.5% before 10% */
	v.reverse = true;
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "beta alpha");
	v.reverse = false;
	v.sort = HOSTTUI_COL_NAME;
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "alpha beta"); /* names A-Z */
	v.sort = HOSTTUI_COL_EXITS;
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "alpha beta");
	v.sort = HOSTTUI_COL_TOP; /* "-" < "vnhog[77]" */
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "beta alpha");
	/* expanded: the vCPU rows under their domain, in the same order */
	hosttui_model_expand(&M, UA, 1);
	v.sort = HOSTTUI_COL_PREEMPT;
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "alpha alpha/0 alpha/1 beta");
	v.reverse = true;
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "beta alpha alpha/1 alpha/0");
	v.reverse = false;
	v.sort = HOSTTUI_COL_NAME; /* ties: vCPU number */
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "alpha alpha/0 alpha/1 beta");
	hosttui_model_expand(&M, NULL, -1); /* flip every domain */
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "alpha beta beta/0");
	/* the filter: case-insensitive substring of the domain name, its vCPUs with it */
	snprintf(v.filter, sizeof(v.filter), "ET");
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "beta beta/0");
	snprintf(v.filter, sizeof(v.filter), "zzz");
	order_str(&v, buf, sizeof(buf));
	ck_assert_str_eq(buf, "");
	ck_assert(hosttui_filter_match("Web-Frontend", "front"));
	ck_assert(hosttui_filter_match("x", ""));
	ck_assert(!hosttui_filter_match("ab", "abc"));
}
END_TEST

START_TEST(copy_is_deep)
{
	struct hosttui_model f = { 0 };

	update(T0, true);
	ck_assert_int_eq(hosttui_model_copy(&f, &M), 0);
	update(T0 + S, true);
	row(UA, 0)->det->pre[0].name[0] = 'X';
	ck_assert_uint_eq(f.n, M.n);
	ck_assert_uint_eq(f.periods, 1);
	for (size_t i = 0; i < f.n; i++)
		if (f.rows[i].is_vcpu && !strcmp(f.rows[i].uuid, UA) && f.rows[i].vcpu == 0)
			ck_assert_str_eq(f.rows[i].det->pre[0].name, "vnhog[77]");
	hosttui_model_free(&f);
	ck_assert_ptr_null(f.rows);
}
END_TEST

/* Columns placed in width: in screen order, no overlap, none past the width; returns a mask. */
static unsigned layout_ok(int width, bool guest, struct hosttui_colpos *cp, int *n)
{
	unsigned mask = 0;
	int end = -1;

	*n = hosttui_layout(width, guest, cp);
	for (int k = 0; k < *n; k++) {
		ck_assert_int_gt(cp[k].x, end);
		ck_assert_int_gt(cp[k].w, 0);
		ck_assert_int_le(cp[k].x + cp[k].w, width);
		end = cp[k].x + cp[k].w - 1;
		if (k)
			ck_assert_int_gt(cp[k].col, cp[k - 1].col);
		mask |= 1u << cp[k].col;
	}
	return mask;
}

START_TEST(layout_widths)
{
	struct hosttui_colpos cp[HOSTTUI_NCOLS];
	const unsigned host_cols = (1u << HOSTTUI_COL_GUEST) - 1;
	unsigned m;
	int n;

	/* 80 columns, host view: every host column and a sparkline */
	m = layout_ok(80, false, cp, &n);
	ck_assert_uint_eq(m, host_cols | 1u << HOSTTUI_COL_SPARK);
	ck_assert_int_ge(cp[n - 1].w, HOSTTUI_SPARK_MIN);
	/* 80 columns with the guest ones: the sparkline goes first, every figure stays */
	m = layout_ok(80, true, cp, &n);
	ck_assert_uint_eq(m, (1u << HOSTTUI_COL_SPARK) - 1);
	/* 70: the least important figures go too, the guest ones before the others */
	m = layout_ok(70, true, cp, &n);
	ck_assert(m & 1u << HOSTTUI_COL_GUEST);
	ck_assert(m & 1u << HOSTTUI_COL_PREEMPT);
	ck_assert(m & 1u << HOSTTUI_COL_TOP);
	ck_assert(!(m & 1u << HOSTTUI_COL_HW));
	ck_assert(!(m & 1u << HOSTTUI_COL_SPARK));
	/* wide: everything, the sparkline HOSTTUI_HISTORY cells, names up to 24 */
	m = layout_ok(250, true, cp, &n);
	ck_assert_int_eq(n, HOSTTUI_NCOLS);
	ck_assert_int_eq(cp[n - 1].w, HOSTTUI_HISTORY);
	ck_assert_int_eq(cp[0].w, 24);
	/* 80 and 120: the name and the top preemptor readable before the sparkline grows */
	layout_ok(80, false, cp, &n);
	ck_assert_int_eq(cp[0].w, 24);
	layout_ok(120, false, cp, &n);
	ck_assert_int_eq(cp[0].w, 24);
	ck_assert_int_eq(cp[4].col, HOSTTUI_COL_TOP);
	ck_assert_int_eq(cp[4].w, 18);
	ck_assert_int_eq(cp[n - 1].col, HOSTTUI_COL_SPARK);
	ck_assert_int_eq(cp[n - 1].x + cp[n - 1].w, 120);
	/* every width from 1 to 300: the name and preempted% stay (when they fit), nothing past it */
	for (int w = 1; w <= 300; w++) {
		m = layout_ok(w, w % 2, cp, &n);
		if (w >= 19)
			ck_assert(m & 1u << HOSTTUI_COL_PREEMPT);
		ck_assert(n > 0 && cp[0].col == HOSTTUI_COL_NAME);
	}
}
END_TEST

/* Names fitted to a column: whole when they fit; else cut in the middle, a trailing [PID] kept whole. */
START_TEST(fit_names)
{
	char a[64], b[64];

	ck_assert_str_eq(termcell_fit("web1", 10, true, a, sizeof(a)), "web1");
	ck_assert_str_eq(termcell_fit("web-prod-01", 11, false, a, sizeof(a)), "web-prod-01");
	/* web-prod-01 and web-prod-02 stay apart at 10 cells */
	ck_assert_str_eq(termcell_fit("web-prod-01", 10, false, a, sizeof(a)), "web-p~d-01");
	ck_assert_str_eq(termcell_fit("web-prod-02", 10, false, b, sizeof(b)), "web-p~d-02");
	ck_assert_str_ne(a, b);
	/* the pid whole */
	ck_assert_str_eq(termcell_fit("linuxhog[10793]", 10, false, a, sizeof(a)), "li~[10793]");
	ck_assert_str_eq(termcell_fit("vnoise-test-vm[1079]", 12, false, a, sizeof(a)),
			 "vnois~[1079]");
	/* UTF-8: an ellipsis of one cell (three bytes), cells counted, not bytes */
	termcell_fit("vnoise-test-12345-abc", 12, true, a, sizeof(a));
	ck_assert_str_eq(a, "vnoise\u20265-abc");
	termcell_fit("d\u00e9j\u00e0-vu-domain-42", 8, true, a, sizeof(a));
	ck_assert_str_eq(a, "d\u00e9j\u00e0\u2026-42");
	/* too narrow for an ellipsis: cut */
	ck_assert_str_eq(termcell_fit("abcdef", 2, true, a, sizeof(a)), "ab");
}
END_TEST

START_TEST(units)
{
	char b[32];

	ck_assert_str_eq(hosttui_fmt_pct(0, b, sizeof(b)), "0");
	ck_assert_str_eq(hosttui_fmt_pct(0.004, b, sizeof(b)), "<0.01");
	ck_assert_str_eq(hosttui_fmt_pct(0.05, b, sizeof(b)), "0.05");
	ck_assert_str_eq(hosttui_fmt_pct(1.234, b, sizeof(b)), "1.23");
	ck_assert_str_eq(hosttui_fmt_pct(12.345, b, sizeof(b)), "12.3");
	ck_assert_str_eq(hosttui_fmt_pct(99.99, b, sizeof(b)), "100");
	ck_assert_str_eq(hosttui_fmt_rate(0, b, sizeof(b)), "0");
	ck_assert_str_eq(hosttui_fmt_rate(950, b, sizeof(b)), "950");
	ck_assert_str_eq(hosttui_fmt_rate(1234, b, sizeof(b)), "1.2k");
	ck_assert_str_eq(hosttui_fmt_rate(34000, b, sizeof(b)), "34k");
	ck_assert_str_eq(hosttui_fmt_rate(999600, b, sizeof(b)), "1.0M");
	ck_assert_str_eq(hosttui_fmt_rate(5.6e6, b, sizeof(b)), "5.6M");
	ck_assert_str_eq(hosttui_fmt_ns(850, b, sizeof(b)), "850ns");
	ck_assert_str_eq(hosttui_fmt_ns(12300, b, sizeof(b)), "12.3us");
	ck_assert_str_eq(hosttui_fmt_ns(4500000, b, sizeof(b)), "4.50ms");
	ck_assert_str_eq(hosttui_fmt_ns(999960, b, sizeof(b)), "1.00ms");
	ck_assert_str_eq(hosttui_fmt_ns(1250000000, b, sizeof(b)), "1.25s");
	ck_assert_str_eq(hosttui_fmt_ns(185 * S, b, sizeof(b)), "3m05s");
	ck_assert_str_eq(hosttui_fmt_ns(7300 * S, b, sizeof(b)), "2h01m");
	ck_assert_str_eq(hosttui_fmt_ns(400000 * S, b, sizeof(b)), "4d15h");
	/* every figure fits 7 cells */
	for (double v = 0.001; v < 1e13; v *= 1.37) {
		ck_assert_int_le(strlen(hosttui_fmt_pct(v < 100 ? v : 100, b, sizeof(b))), 7);
		ck_assert_int_le(strlen(hosttui_fmt_rate(v, b, sizeof(b))), 7);
		ck_assert_int_le(strlen(hosttui_fmt_ns((uint64_t)(v * 1000), b, sizeof(b))), 7);
	}
}
END_TEST

START_TEST(sparkline)
{
	float h[HOSTTUI_HISTORY];
	char b[HOSTTUI_HISTORY * 3 + 1];

	for (int k = 0; k < HOSTTUI_HISTORY; k++)
		h[k] = -1.0f;
	h[HOSTTUI_HISTORY - 4] = 0.0f;
	h[HOSTTUI_HISTORY - 3] = 10.0f;
	h[HOSTTUI_HISTORY - 2] = 20.0f;
	h[HOSTTUI_HISTORY - 1] = 40.0f;
	/* scaled to the largest shown; no data and 0 are blank */
	ck_assert_str_eq(termcell_spark(h, HOSTTUI_HISTORY, 6, false, b, sizeof(b)), "   .-#");
	ck_assert_str_eq(termcell_spark(h, HOSTTUI_HISTORY, 4, true, b, sizeof(b)),
			 " \u2582\u2584\u2588");
	/* small noise stays low: the scale is at least 1% */
	h[HOSTTUI_HISTORY - 3] = 0.2f;
	h[HOSTTUI_HISTORY - 2] = 0.5f;
	h[HOSTTUI_HISTORY - 1] = 1.0f;
	ck_assert_str_eq(termcell_spark(h, HOSTTUI_HISTORY, 3, true, b, sizeof(b)),
			 "\u2582\u2584\u2588");
	h[HOSTTUI_HISTORY - 1] = 0.01f;
	ck_assert_str_eq(termcell_spark(h, HOSTTUI_HISTORY, 1, true, b, sizeof(b)), "\u2581");
	/* a width above the history is cut to it; a short buffer is never overrun */
	ck_assert_uint_eq(strlen(termcell_spark(h, HOSTTUI_HISTORY, 200, false, b, sizeof(b))),
			  HOSTTUI_HISTORY);
	ck_assert_uint_eq(strlen(termcell_spark(h, HOSTTUI_HISTORY, 20, true, b, 7)), 6);
}
END_TEST

START_TEST(cpu_and_period)
{
	uint64_t busy, total;

	ck_assert_int_eq(
	    hosttui_cpu_parse("cpu  100 5 50 800 40 3 2 0 7 0\ncpu0 1 2 3 4\n", &busy, &total), 0);
	ck_assert_uint_eq(total, 1000);
	ck_assert_uint_eq(busy, 160);
	ck_assert_int_eq(hosttui_cpu_parse("intr 1 2 3", &busy, &total), -EINVAL);
	ck_assert_int_eq(hosttui_cpu_parse("cpu  1 2", &busy, &total), -EINVAL);
	ck_assert_uint_eq(hosttui_period_step(S, 1), 2 * S);
	ck_assert_uint_eq(hosttui_period_step(S, -1), 500 * MS);
	ck_assert_uint_eq(hosttui_period_step(1500 * MS, 1), 2 * S);
	ck_assert_uint_eq(hosttui_period_step(1500 * MS, -1), S);
	ck_assert_uint_eq(hosttui_period_step(250 * MS, -1), 250 * MS);
	ck_assert_uint_eq(hosttui_period_step(60 * S, 1), 60 * S);
	ck_assert_uint_eq(hosttui_period_step(100 * MS, -1), 100 * MS);
	ck_assert_uint_eq(hosttui_period_step(100 * MS, 1), 250 * MS);
	ck_assert_str_eq(hosttui_col_name(HOSTTUI_COL_PREEMPT), "prmpt%");
	ck_assert_str_eq(hosttui_col_name(99), "?");
}
END_TEST

static Suite *hosttui_model_suite(void)
{
	Suite *s = suite_create("hosttui_model");
	TCase *rows = tcase_create("rows"), *order = tcase_create("order");
	TCase *layout = tcase_create("layout"), *fmt = tcase_create("units");

	tcase_add_checked_fixture(rows, setup, teardown);
	tcase_add_test(rows, rows_from_agg);
	tcase_add_test(rows, detail_pane);
	tcase_add_test(rows, guest_columns);
	tcase_add_test(rows, history_and_gone);
	tcase_add_test(rows, copy_is_deep);
	suite_add_tcase(s, rows);
	tcase_add_checked_fixture(order, setup, teardown);
	tcase_add_test(order, sort_filter_expand);
	suite_add_tcase(s, order);
	tcase_add_test(layout, layout_widths);
	suite_add_tcase(s, layout);
	tcase_add_test(fmt, units);
	tcase_add_test(fmt, fit_names);
	tcase_add_test(fmt, sparkline);
	tcase_add_test(fmt, cpu_and_period);
	suite_add_tcase(s, fmt);
	return s;
}

int main(void)
{
	return check_main(hosttui_model_suite());
}
