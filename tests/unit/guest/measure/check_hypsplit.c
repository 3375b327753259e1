/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for guest/measure/hypsplit, the hypervisor split of the measuring commands: exact sums (host
 * intervals by cause, then aggregates, then hw; steal first), host time winning over guest events (taken
 * out of their classes and counted), vmexit/host_irq only out of unexplained, no DTL (nothing queued), the bounded wait for the
 * horizon (split once it passes, late after the wait), through the views (by_class still adds up to
 * noise_ns, JSON hypervisor object and sources, text table within 80 columns) and the record/report round
 * trip (report FILE gives the live split from the file alone).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dtl/dtl_priv.h"
#include "measure/hypsplit.h"
#include "measure/measure.h"
#include "views/view.h"
#include "views/view_record.h"

#define HOG_CAUSE 0x00010003u

static struct dtl_span span(uint64_t a, uint64_t b, uint8_t cls, uint32_t cause)
{
	struct dtl_span s = { .start_ns = a, .end_ns = b, .cause = cause, .cls = cls };

	s.kind = VN_DTL_KIND_PREEMPTED;
	s.hclass = cls == VN_DTL_CLASS_IDLE ? VN_HCLASS_HOST_WAIT : VN_HCLASS_HOST_PREEMPT;
	return s;
}

/* A store of 4 CPUs; CPU 2: the hog [1000, 3000), idle [3000, 4000), another domain's vCPU [5000, 6000). */
static struct dtl *store3(void)
{
	struct dtl *d = dtl_new_store(4);
	struct dtl_span s[3] = { span(1000, 3000, VN_DTL_CLASS_HOST_USER, HOG_CAUSE),
				 span(3000, 4000, VN_DTL_CLASS_IDLE, 0),
				 span(5000, 6000, VN_DTL_CLASS_OTHER_VCPU, 0) };
	int k;

	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(dtl_set_cause(d, HOG_CAUSE, VN_DTL_CLASS_HOST_USER, 1234, "hog"), 0);
	for (k = 0; k < 3; k++)
		ck_assert_int_eq(dtl_add_span(d, 2, &s[k]), 0);
	return d;
}

static const struct hypsplit_source *find_src(const struct hypsplit_cpu *c, const char *name)
{
	uint32_t i;

	for (i = 0; i < c->nsrc; i++)
		if (!strcmp(c->src[i].name, name))
			return &c->src[i];
	return NULL;
}

static uint64_t src_ns(const struct hypsplit_cpu *c, const char *name)
{
	const struct hypsplit_source *s = find_src(c, name);

	return s ? s->total_ns : 0;
}

/* A gap's parts by class: irq_ns of guest IRQ time, steal, unexplained (a static array: use at once). */
static const uint64_t *gap_classes(uint64_t irq_ns, uint64_t steal_ns, uint64_t unexpl_ns)
{
	static uint64_t cls[VN_CLASS_MAX];

	memset(cls, 0, sizeof(cls));
	cls[VN_CLASS_IRQ] = irq_ns;
	cls[VN_CLASS_STEAL] = steal_ns;
	cls[VN_CLASS_UNEXPLAINED] = unexpl_ns;
	return cls;
}

/* The parts of a CPU's split add up to what left the guest classes. */
static void assert_exact(const struct hypsplit_cpu *c)
{
	uint64_t sum = c->hw_ns, srcsum = 0, from = 0;
	uint32_t i;
	int k;

	for (k = 0; k < VN_HCLASS_MAX; k++)
		sum += c->hyp_ns[k];
	for (i = 0; i < c->nsrc; i++)
		srcsum += c->src[i].total_ns;
	for (k = 0; k < VN_CLASS_MAX; k++)
		from += c->from_class_ns[k];
	ck_assert_uint_eq(sum, from);
	ck_assert_uint_eq(c->from_class_ns[VN_CLASS_STEAL], c->from_steal_ns);
	ck_assert_uint_eq(c->from_class_ns[VN_CLASS_UNEXPLAINED], c->from_unexpl_ns);
	ck_assert_uint_eq(srcsum + c->hw_ns, sum);
}

START_TEST(exact_sums)
{
	struct dtl *d = store3();
	struct hypsplit *hs = hypsplit_new(d, 0);
	struct vn_rec_dtl_gap agg = { .exit_ns = 1000, .irq_ns = 500, .nexit = 1, .isa = 1 };
	const struct hypsplit_cpu *c;
	const struct hypsplit_source *s;

	ck_assert_ptr_nonnull(hs);
	agg.exit[0].reason = 30;
	agg.exit[0].total_ns = 600;
	/* gap [2000, 12000): 2500 guest, 1500 steal, 6000 unexplained */
	ck_assert_int_eq(hypsplit_split(hs, 2, 2000, 12000, gap_classes(2500, 1500, 6000), &agg),
			 0);
	c = hypsplit_cpu(hs, 2);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_PREEMPT], 2000); /* hog 1000 + other vCPU 1000 */
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_WAIT], 1000);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_VMEXIT], 1000);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_IRQ], 500);
	ck_assert_uint_eq(c->hw_ns, 3000);
	ck_assert_uint_eq(c->from_steal_ns, 1500); /* host intervals out of steal first */
	ck_assert_uint_eq(c->from_unexpl_ns, 6000); /* none is left unexplained: the rest is hw */
	ck_assert_uint_eq(c->unexpl_gaps, 1);
	ck_assert_uint_eq(src_ns(c, "host-user-task:hog[1234]"), 1000);
	ck_assert_uint_eq(src_ns(c, "vcpu-of-another-domain"), 1000);
	ck_assert_uint_eq(src_ns(c, "idle"), 1000);
	ck_assert_uint_eq(src_ns(c, "exit:30"), 600);
	ck_assert_uint_eq(src_ns(c, "exit:other"), 400);
	ck_assert_uint_eq(src_ns(c, "host_irq"), 500);
	s = find_src(c, "host-user-task:hog[1234]");
	ck_assert_uint_eq(s->cls, VN_DTL_CLASS_HOST_USER);
	ck_assert_uint_eq(s->hclass, VN_HCLASS_HOST_PREEMPT);
	ck_assert_uint_eq(find_src(c, "idle")->hclass, VN_HCLASS_HOST_WAIT);
	ck_assert_uint_eq(find_src(c, "exit:30")->reason, 30);
	ck_assert_uint_eq(c->in_guest_ns, 0); /* all 3000 of host time fit in steal + unexplained */
	ck_assert_uint_eq(c->from_class_ns[VN_CLASS_IRQ], 0);
	assert_exact(c);
	hypsplit_free(hs);
	dtl_close(d);
}
END_TEST

START_TEST(caps)
{
	struct dtl *d = dtl_new_store(4);
	struct dtl_span a = span(0, 3000, VN_DTL_CLASS_HOST_USER, 0),
			b = span(3000, 4000, VN_DTL_CLASS_HOST_KTHREAD, 0),
			w = span(4000, 9000, VN_DTL_CLASS_IDLE, 0);
	struct vn_rec_dtl_gap agg = { .exit_ns = 5000, .irq_ns = 5000 };
	struct hypsplit *hs = hypsplit_new(d, 0);
	const struct hypsplit_cpu *c;

	ck_assert_int_eq(dtl_add_span(d, 1, &a), 0);
	ck_assert_int_eq(dtl_add_span(d, 1, &b), 0);
	ck_assert_int_eq(dtl_add_span(d, 1, &w), 0);
	/* 4000 of host_preempt over a gap of 3000 IRQ and 1000 unexplained: host time wins, the IRQ gives
	 * way (a preemption inside the handler made it as long); nothing is left for the aggregates */
	ck_assert_int_eq(hypsplit_split(hs, 1, 0, 4000, gap_classes(3000, 0, 1000), &agg), 0);
	c = hypsplit_cpu(hs, 1);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_PREEMPT], 4000);
	ck_assert_uint_eq(src_ns(c, "host-user-task"), 3000);
	ck_assert_uint_eq(src_ns(c, "host-kernel-thread"), 1000);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_VMEXIT] + c->hyp_ns[VN_HCLASS_HOST_IRQ] + c->hw_ns,
			  0);
	/* 3000 of host time lay inside the gap's guest events: out of their class, counted */
	ck_assert_uint_eq(c->in_guest_ns, 3000);
	ck_assert_uint_eq(c->from_class_ns[VN_CLASS_IRQ], 3000);
	ck_assert_uint_eq(c->in_guest_count, 1);
	assert_exact(c);
	/* steal first, then the guest's events; aggregates never take steal */
	ck_assert_int_eq(hypsplit_split(hs, 1, 4000, 6000, gap_classes(1300, 700, 0), &agg), 0);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_WAIT], 2000);
	ck_assert_uint_eq(c->from_steal_ns, 700);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_VMEXIT], 0);
	ck_assert_uint_eq(c->in_guest_ns,
			  3000 + 1300); /* the idle span's 2000 in the gap, less 700 */
	ck_assert_uint_eq(c->in_guest_count, 2);
	/* no host interval: aggregates capped to unexplained, vmexit first */
	ck_assert_int_eq(hypsplit_split(hs, 1, 20000, 26300, gap_classes(0, 300, 6000), &agg), 0);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_VMEXIT], 5000);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_IRQ], 1000);
	ck_assert_uint_eq(c->from_steal_ns, 700); /* this gap's steal stays steal */
	ck_assert_uint_eq(c->hw_ns, 0);
	ck_assert_uint_eq(c->in_guest_count, 2); /* aggregates are never counted in guest events */
	assert_exact(c);
	hypsplit_free(hs);
	dtl_close(d);
}
END_TEST

START_TEST(no_dtl)
{
	uint64_t cls[VN_CLASS_MAX] = { 0 };
	struct hypsplit *hs = hypsplit_new(NULL, 0);
	struct dtl *d = dtl_new_store(2);
	struct hypsplit *hs2 = hypsplit_new(d, 0);

	cls[VN_CLASS_UNEXPLAINED] = 5000;
	ck_assert_int_eq(hypsplit_gap(hs, 0, 1000, 6000, cls), 0);
	ck_assert_uint_eq(hypsplit_process(hs, UINT64_MAX), 0);
	ck_assert_ptr_null(hypsplit_cpu(hs, 0));
	ck_assert_uint_eq(hypsplit_late(hs), 0);
	/* a DTL that never saw a host (absent, no horizon): nothing queued either */
	ck_assert_int_eq(hypsplit_gap(hs2, 0, 1000, 6000, cls), 0);
	ck_assert_uint_eq(hypsplit_pending_end(hs2), 0);
	ck_assert_int_eq(hypsplit_gap(NULL, 0, 1000, 6000, cls), 0);
	hypsplit_free(hs);
	hypsplit_free(hs2);
	hypsplit_free(NULL);
	dtl_close(d);
}
END_TEST

START_TEST(late_horizon)
{
	struct dtl *d = store3();
	struct hypsplit *hs = hypsplit_new(d, 1000);
	uint64_t cls[VN_CLASS_MAX] = { 0 }, guest[VN_CLASS_MAX] = { 0 };
	const struct hypsplit_cpu *c;

	cls[VN_CLASS_UNEXPLAINED] = 2000;
	guest[VN_CLASS_THREAD] = 2000;
	dtl_set_horizon(d, 4500 + HYPSPLIT_MARGIN_NS);
	ck_assert_int_eq(hypsplit_gap(hs, 2, 2000, 4000, cls), 0);
	ck_assert_int_eq(hypsplit_gap(hs, 2, 5000, 7000, cls), 0);
	ck_assert_int_eq(hypsplit_gap(hs, 2, 8000, 10000, cls), 0);
	/* guest events only: queued too (host time inside an event is the host's) */
	ck_assert_int_eq(hypsplit_gap(hs, 2, 11000, 13000, guest), 0);
	ck_assert_uint_eq(hypsplit_pending_end(hs), 4000);
	/* the horizon passed the first gap only; the others wait up to 1000 ns after their end */
	ck_assert_uint_eq(hypsplit_process(hs, 7500), 3);
	c = hypsplit_cpu(hs, 2);
	ck_assert_uint_eq(c->split, 1);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_PREEMPT] + c->hyp_ns[VN_HCLASS_HOST_WAIT], 2000);
	/* the horizon at the second's end is not enough (clock error margin) */
	dtl_set_horizon(d, 7000 + HYPSPLIT_MARGIN_NS - 1);
	ck_assert_uint_eq(hypsplit_process(hs, 7500), 3);
	/* the horizon passes the second in time; the third is late */
	dtl_set_horizon(d, 7000 + HYPSPLIT_MARGIN_NS);
	ck_assert_uint_eq(hypsplit_process(hs, 9500), 2);
	ck_assert_uint_eq(c->split, 2);
	ck_assert_uint_eq(c->late, 0);
	ck_assert_uint_eq(hypsplit_process(hs, 11000), 1);
	ck_assert_uint_eq(c->late, 1);
	ck_assert_uint_eq(hypsplit_process(hs, 14000), 0);
	ck_assert_uint_eq(hypsplit_late(hs), 2);
	ck_assert_uint_eq(c->from_unexpl_ns, 4000); /* the late gap keeps its unexplained time */
	assert_exact(c);
	/* at the end, whatever the horizon has not reached is late at once */
	ck_assert_int_eq(hypsplit_gap(hs, 2, 20000, 22000, cls), 0);
	ck_assert_uint_eq(hypsplit_process(hs, UINT64_MAX), 0);
	ck_assert_uint_eq(c->late, 3);
	hypsplit_free(hs);
	dtl_close(d);
}
END_TEST

/* A blocked span the host took for a halt (VN_DTL_F_HALTED) inside a gap: the sampler was busy, so it is the
 * hypervisor's (host_wait, as the host's matcher counts it), and counted in halted_ns. */
START_TEST(halted_in_gap)
{
	struct dtl *d = dtl_new_store(2);
	struct hypsplit *hs = hypsplit_new(d, 0);
	struct dtl_span w = span(2000, 5000, VN_DTL_CLASS_IDLE, 0);
	uint64_t cls[VN_CLASS_MAX] = { 0 };
	const struct hypsplit_cpu *c;

	w.kind = VN_DTL_KIND_BLOCKED;
	w.flags = VN_DTL_F_HALTED;
	ck_assert_int_eq(dtl_add_span(d, 1, &w), 0);
	dtl_set_horizon(d, 20000 + HYPSPLIT_MARGIN_NS);
	cls[VN_CLASS_UNEXPLAINED] = 4000;
	ck_assert_int_eq(hypsplit_gap(hs, 1, 1000, 5000, cls), 0);
	ck_assert_uint_eq(hypsplit_process(hs, 30000), 0);
	c = hypsplit_cpu(hs, 1);
	ck_assert_ptr_nonnull(c);
	ck_assert_uint_eq(c->hyp_ns[VN_HCLASS_HOST_WAIT], 3000);
	ck_assert_uint_eq(c->halted_ns, 3000);
	ck_assert_uint_eq(c->hw_ns, 1000);
	assert_exact(c);
	hypsplit_free(hs);
	dtl_close(d);
}
END_TEST

/* ---- through the views ---- */

static int view_dtl_defer; /* view_dtl leaves the horizon before the gap: it waits, unsplit */

/* A one-CPU (2) view: a window, a 10 us gap holding 4 us of a thread, the rest unexplained; a DTL store
 * whose hog interval [5000, 9000) overlaps the gap (and the thread: the split never takes guest time). */
static void view_dtl(struct view *v, struct dtl *d, struct view_record *rec, int task)
{
	struct vn_sample win = {
		.start_ns = 1000, .end_ns = 1000000, .cpu = 2, .kind = VN_SAMPLE_WINDOW
	};
	struct vn_sample gap = {
		.start_ns = 2000, .end_ns = 12000, .cpu = 2, .kind = VN_SAMPLE_GAP
	};
	struct vn_event e = {
		.start_ns = 3000, .end_ns = 7000, .net_ns = 4000, .id = 42, .cpu = 2
	};
	struct dtl_span s = span(5000, 9000, VN_DTL_CLASS_HOST_USER, HOG_CAUSE);

	memset(v, 0, sizeof(*v));
	e.cls = VN_CLASS_THREAD;
	memcpy(e.comm, "busy", 4);
	v->helper = "bpf";
	v->steal_source = "none";
	v->threshold_ns = 5000;
	v->duration_ns = 1000000;
	v->ncpus = 1;
	v->cpus[0] = 2;
	v->top_n = 10;
	v->dtl = "ok";
	v->m = merge_new(view_gap_cb, v);
	v->hs = hypsplit_new(d, 0);
	v->hist = calloc(1, sizeof(*v->hist));
	ck_assert_ptr_nonnull(v->hs);
	ck_assert_ptr_nonnull(v->hist);
	hypsplit_set_part_fn(v->hs, view_hyp_cb, v);
	if (task) /* the host's --dtl-detail task: the cause has a name */
		ck_assert_int_eq(dtl_set_cause(d, HOG_CAUSE, VN_DTL_CLASS_HOST_USER, 1234, "hog"),
				 0);
	ck_assert_int_eq(dtl_add_span(d, 2, &s), 0);
	dtl_set_horizon(d, view_dtl_defer ? 1000 : 20000 + HYPSPLIT_MARGIN_NS);
	if (rec) {
		hypsplit_set_recorder(v->hs, view_record_dtl_span, view_record_dtl_gap, rec);
		ck_assert_int_eq(view_record_start(rec, v), 0);
		view_record_sample(rec, &win);
		view_record_sample(rec, &gap);
		view_record_event(rec, &e);
	}
	ck_assert_int_eq(merge_add_sample(v->m, &win), 0);
	ck_assert_int_eq(merge_add_sample(v->m, &gap), 0);
	ck_assert_int_eq(merge_add_event(v->m, &e), 0);
	ck_assert_int_eq(merge_process(v->m, UINT64_MAX), 0);
	ck_assert_uint_eq(hypsplit_process(v->hs, 30000), view_dtl_defer ? 1 : 0);
}

static char *capture(void (*fn)(FILE *f, const struct view *v), const struct view *v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	fn(f, v);
	fclose(f);
	return buf;
}

START_TEST(view_sums)
{
	struct dtl *d = dtl_new_store(4);
	struct view v;
	struct view_row r;
	uint64_t sum = 0;
	char *json, *text, *line;
	int k;

	view_dtl(&v, d, NULL, 1);
	view_row(&v, 0, &r);
	for (k = 0; k < VIEW_NSHOWN; k++)
		sum += r.class_ns[view_shown[k]];
	for (k = 0; k < VN_HCLASS_PARTS; k++)
		sum += r.hyp_ns[k];
	ck_assert_uint_eq(r.noise_ns, 10000);
	ck_assert_uint_eq(sum, r.noise_ns);
	ck_assert_uint_eq(view_parts_total(&r), r.noise_ns); /* the class table's TOTAL */
	ck_assert_int_eq(view_split(&v), 1);
	ck_assert_uint_eq(r.class_ns[VN_CLASS_THREAD], 4000);
	ck_assert_uint_eq(r.class_ns[VN_CLASS_UNEXPLAINED], 0);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HOST_PREEMPT], 4000);
	ck_assert_uint_eq(r.hyp_ns[VN_HCLASS_HW], 2000); /* hw */
	json = capture(view_json_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(json, "\"dtl\": \"ok\""));
	ck_assert_ptr_nonnull(strstr(json, "\"host_preempt\": 4000"));
	ck_assert_ptr_nonnull(strstr(json, "\"hw\": 2000"));
	ck_assert_ptr_nonnull(strstr(json, "\"host_preempt_ns\": 4000"));
	/* the span's 4000 fit in the gap's unexplained 6000: none counted inside guest events */
	ck_assert_ptr_nonnull(strstr(json, "\"in_guest_ns\": 0"));
	ck_assert_ptr_nonnull(strstr(json, "\"kind\": \"hypervisor\""));
	ck_assert_ptr_nonnull(strstr(json, "\"cause_class\": \"host-user-task\""));
	ck_assert_ptr_nonnull(strstr(json, "\"comm\": \"hog\""));
	ck_assert_ptr_nonnull(strstr(json, "\"pid\": 1234"));
	text = capture(view_text_ops.end, &v);
	/* one table: the guest classes, the hypervisor's, HW as the residual (no UNEXPL row: all split) */
	ck_assert_msg(strstr(text, "\nTHREAD           4.0        4.0    40.0\n"), "%s", text);
	ck_assert_ptr_nonnull(strstr(text, "\nHOSTPRE          4.0        4.0    40.0\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nHW               2.0        2.0    20.0\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nTOTAL           10.0       10.0   100.0\n"));
	ck_assert_ptr_null(strstr(text, "\nUNEXPL "));
	ck_assert_ptr_null(strstr(text, "came before the host's log covered them"));
	ck_assert_ptr_nonnull(
	    strstr(text, "dtl ok: the host's log split STEAL and UNEXPL (HW: no host cause)\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nHW 20%: the host's log has no cause for it"));
	ck_assert_ptr_nonnull(strstr(text, "host-user-task:hog[1234]"));
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		ck_assert_msg(strlen(line) <= 80, "over 80 columns: %s", line);
	free(text);
	/* hist: a table of each split sample's hypervisor time (4 us host_preempt, 2 us hw) */
	text = capture(view_hist_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(text, "per hypervisor class"));
	ck_assert_ptr_nonnull(strstr(text, "HPRE"));
	ck_assert_uint_eq(hist_count(&v.hist[0].hyp[VN_HCLASS_HOST_PREEMPT]), 1);
	ck_assert_uint_eq(hist_max(&v.hist[0].hyp[VN_HCLASS_HOST_PREEMPT]), 4000);
	ck_assert_uint_eq(hist_max(&v.hist[0].hyp[VN_HCLASS_HW]), 2000);
	ck_assert_uint_eq(hist_count(&v.hist[0].hyp[VN_HCLASS_HOST_WAIT]), 0);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
		ck_assert_msg(strlen(line) <= 80, "over 80 columns: %s", line);
	free(json);
	free(text);
	/* without a DTL: no hypervisor keys, "dtl": "absent" */
	hypsplit_free(v.hs);
	v.hs = NULL;
	v.dtl = NULL;
	json = capture(view_json_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(json, "\"dtl\": \"absent\""));
	ck_assert_ptr_null(strstr(json, "host_preempt"));
	ck_assert_ptr_null(strstr(json, "\"hypervisor\""));
	ck_assert_ptr_nonnull(strstr(json, "\"unexplained\": 6000"));
	free(json);
	free(v.hist);
	merge_free(v.m);
	dtl_close(d);
}
END_TEST

/* A sample the host's log had not covered when the split gave up on it (late) stays in its guest-only
 * classes: the table shows it as UNEXPL, says so in one line, and still adds up; with a stale log that split
 * nothing, the view says so and shows no hypervisor rows. */
START_TEST(view_uncovered_and_stale)
{
	struct vn_sample gap = {
		.start_ns = 40000, .end_ns = 47000, .cpu = 2, .kind = VN_SAMPLE_GAP
	};
	struct dtl *d = dtl_new_store(4);
	struct view v;
	struct view_row r;
	char *text, *json;

	view_dtl(&v, d, NULL, 1);
	ck_assert_int_eq(merge_add_sample(v.m, &gap), 0);
	ck_assert_int_eq(merge_process(v.m, UINT64_MAX), 0);
	ck_assert_uint_eq(hypsplit_process(v.hs, UINT64_MAX), 0); /* past the horizon: late */
	ck_assert_uint_eq(hypsplit_late(v.hs), 1);
	view_row(&v, 0, &r);
	ck_assert_uint_eq(r.noise_ns, 17000);
	ck_assert_uint_eq(view_parts_total(&r), 17000);
	ck_assert_uint_eq(view_part_ns(&r, VIEW_PART_UNEXPL), 7000);
	ck_assert_uint_eq(view_part_ns(&r, VIEW_PART_HYP + VN_HCLASS_HW), 2000);
	text = capture(view_text_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(text, "\nUNEXPL           7.0        7.0    41.2\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nTOTAL           17.0       17.0   100.0\n"));
	ck_assert_ptr_nonnull(strstr(text,
				     "\n7.0 us in 1 samples came before the host's log covered "
				     "them: not split"));
	free(text);
	json = capture(view_json_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(json, "\"dtl_split\": true"));
	ck_assert_ptr_nonnull(strstr(json, "\"dtl_uncovered_ns\": 7000"));
	ck_assert_ptr_nonnull(strstr(json, "\"dtl_uncovered_samples\": 1"));
	ck_assert_ptr_nonnull(strstr(json, "\"UNEXPL 41%: no guest event explains it"));
	free(json);
	free(v.hist);
	merge_free(v.m);
	hypsplit_free(v.hs);
	dtl_close(d);

	/* the host stopped before the first sample was covered: nothing split, said once, no HOSTPRE row */
	d = dtl_new_store(4);
	view_dtl(&v, d, NULL, 1);
	hypsplit_free(v.hs);
	v.hs = hypsplit_new(d, 0);
	ck_assert_ptr_nonnull(v.hs);
	v.dtl = "stale";
	ck_assert_uint_eq(view_split(&v), 0);
	view_row(&v, 0, &r);
	ck_assert_uint_eq(view_parts_total(&r), r.noise_ns);
	text = capture(view_text_ops.end, &v);
	ck_assert_ptr_nonnull(
	    strstr(text, "dtl stale: nothing was split (the host stopped publishing its log)"));
	ck_assert_ptr_null(strstr(text, "HOSTPRE"));
	ck_assert_ptr_null(strstr(text, "\nHW "));
	ck_assert_ptr_nonnull(strstr(text, "\nUNEXPL           6.0        6.0    60.0\n"));
	ck_assert_ptr_null(strstr(text, "came before the host's log covered them"));
	free(text);
	json = capture(view_json_ops.end, &v);
	ck_assert_ptr_nonnull(strstr(json, "\"dtl_split\": false"));
	free(json);
	free(v.hist);
	merge_free(v.m);
	hypsplit_free(v.hs);
	dtl_close(d);
}
END_TEST

/* top: the split lags the merge, so a period can take out of UNEXPL what an earlier one put there. The
 * period's parts are plain differences: UNEXPL below 0, and the table still adds up to the period's noise. */
START_TEST(view_top_split_lag)
{
	struct dtl *d = dtl_new_store(4);
	struct view v;
	char *first, *second;

	view_dtl_defer = 1;
	view_dtl(&v, d, NULL, 1);
	view_dtl_defer = 0;
	ck_assert_int_eq(view_period_new(&v), 0);
	first = capture(view_top_ops.tick, &v); /* not split yet: 4 us THREAD, 6 us UNEXPL */
	ck_assert_ptr_null(strstr(first, "HOSTPRE"));
	ck_assert_msg(strstr(first, "\nUNEXPL           6.0        6.0    60.0\n"), "%s", first);
	dtl_set_horizon(d, 20000 + HYPSPLIT_MARGIN_NS);
	ck_assert_uint_eq(hypsplit_process(v.hs, 30000), 0);
	second = capture(view_top_ops.tick, &v); /* no new noise; the split moved the 6 us */
	ck_assert_msg(strstr(second, "\nHOSTPRE          4.0        4.0     0.0\n"), "%s", second);
	ck_assert_ptr_nonnull(strstr(second, "\nHW               2.0        2.0     0.0\n"));
	ck_assert_ptr_nonnull(strstr(second, "\nUNEXPL          -6.0       -6.0     0.0\n"));
	ck_assert_ptr_nonnull(strstr(second, "\nTOTAL            0.0        0.0     0.0\n"));
	free(first);
	free(second);
	view_period_free(&v);
	free(v.hist);
	merge_free(v.m);
	hypsplit_free(v.hs);
	dtl_close(d);
}
END_TEST

/* The "cpus" array of a vnoise.measure/1 document (the part report must give as the live run did). */
static char *cpus_part(const char *json)
{
	const char *a = strstr(json, "\"cpus\""), *b = strstr(json, "\"overhead\"");

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	return strndup(a, (size_t)(b - a));
}

/* report's output (JSON) of the record file at path, into a string. */
static char *report_json(const char *path)
{
	char out[] = "/tmp/check_hypsplit_out_XXXXXX";
	int ofd = mkstemp(out), saved;
	struct measure_params p = { .cmd = CMD_REPORT, .json = 1, .top_n = 10, .input = path };
	char *rep = NULL;
	size_t n = 0;
	FILE *f;

	ck_assert_int_ge(ofd, 0);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	dup2(ofd, STDOUT_FILENO);
	ck_assert_int_eq(replay_run(&p), EXIT_OK);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	f = fdopen(ofd, "r");
	rewind(f);
	ck_assert_int_gt(getdelim(&rep, &n, 0, f), 0);
	fclose(f);
	unlink(out);
	return rep;
}

/* Whether the file at path holds the bytes of str. */
static int file_has(const char *path, const char *str)
{
	FILE *f = fopen(path, "r");
	static char buf[1 << 20];
	size_t len;

	ck_assert_ptr_nonnull(f);
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	ck_assert_uint_gt(len, 64);
	return memmem(buf, len, str, strlen(str)) != NULL;
}

/* _i 1: the host published cause names (detail task), 0: classes only. */
START_TEST(record_report_round_trip)
{
	char path[] = "/tmp/check_hypsplit_XXXXXX";
	int fd = mkstemp(path);
	struct dtl *d = dtl_new_store(4);
	struct view_record *rec;
	struct view v;
	char *live, *rep, *a, *b;

	ck_assert_int_ge(fd, 0);
	close(fd);
	rec = view_record_open(path);
	ck_assert_ptr_nonnull(rec);
	view_dtl(&v, d, rec, _i);
	live = capture(view_json_ops.end, &v);
	ck_assert_int_eq(view_record_seal(rec, &v, "", NULL, 0), 0);
	rep = report_json(path);
	ck_assert_ptr_nonnull(strstr(rep, "\"dtl\": \"ok\""));
	a = cpus_part(live);
	b = cpus_part(rep);
	ck_assert_ptr_nonnull(strstr(b, "\"host_preempt\": 4000"));
	if (_i) {
		ck_assert_ptr_nonnull(strstr(b, "\"comm\": \"hog\""));
		ck_assert(file_has(path, "cause.65539=3 1234 hog"));
	} else { /* detail class: the class only, no host name or pid in the output or the file */
		ck_assert_ptr_nonnull(strstr(b, "\"name\": \"host-user-task\""));
		ck_assert_ptr_null(strstr(rep, "hog"));
		ck_assert_ptr_null(strstr(rep, "1234"));
		ck_assert(!file_has(path, "hog"));
		ck_assert(!file_has(path, "cause."));
	}
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	free(live);
	free(rep);
	hypsplit_free(v.hs);
	free(v.hist);
	merge_free(v.m);
	dtl_close(d);
	unlink(path);
}
END_TEST

#define LONG_GAPS 90 /* one a second: longer than the 30 s a store keeps */

/* A 90 s recording, fed as a live run is (spans published as time goes): report splits every gap as the live
 * run did, although the store it replays into keeps 30 s of spans. */
START_TEST(record_report_long)
{
	char path[] = "/tmp/check_hypsplit_XXXXXX";
	int fd = mkstemp(path), k;
	struct dtl *d = dtl_new_store(4);
	struct view_record *rec;
	struct view v;
	struct vn_sample win = {
		.start_ns = 0, .end_ns = 100000000000ull, .cpu = 1, .kind = VN_SAMPLE_WINDOW
	};
	char *live, *rep, *a, *b;

	ck_assert_int_ge(fd, 0);
	close(fd);
	memset(&v, 0, sizeof(v));
	v.helper = "bpf";
	v.steal_source = "none";
	v.duration_ns = 100000000000ull;
	v.ncpus = 1;
	v.cpus[0] = 1;
	v.top_n = 10;
	v.dtl = "ok";
	v.hist = calloc(1, sizeof(*v.hist)); /* as measure has them: the worst gap and the tail */
	v.m = merge_new(view_gap_cb, &v);
	v.hs = hypsplit_new(d, 0);
	hypsplit_set_part_fn(v.hs, view_hyp_cb, &v);
	rec = view_record_open(path);
	ck_assert_ptr_nonnull(rec);
	hypsplit_set_recorder(v.hs, view_record_dtl_span, view_record_dtl_gap, rec);
	ck_assert_int_eq(view_record_start(rec, &v), 0);
	view_record_sample(rec, &win);
	ck_assert_int_eq(merge_add_sample(v.m, &win), 0);
	for (k = 0; k < LONG_GAPS; k++) {
		uint64_t t = (uint64_t)(k + 1) * 1000000000ull;
		struct vn_sample gap = {
			.start_ns = t, .end_ns = t + 20000, .cpu = 1, .kind = VN_SAMPLE_GAP
		};
		struct dtl_span sp = span(t + 5000, t + 5000 + 100 * (uint64_t)(k + 1),
					  k % 3 ? VN_DTL_CLASS_HOST_USER : VN_DTL_CLASS_IDLE, 0);

		ck_assert_int_eq(dtl_add_span(d, 1, &sp), 0);
		dtl_set_horizon(d, t + 500000000ull);
		view_record_sample(rec, &gap);
		ck_assert_int_eq(merge_add_sample(v.m, &gap), 0);
		ck_assert_int_eq(merge_process(v.m, t + 100000), 0);
		hypsplit_process(v.hs, t + 100000);
		ck_assert_int_eq(view_record_flush(rec), 0);
	}
	ck_assert_int_eq(merge_process(v.m, UINT64_MAX), 0);
	dtl_set_horizon(d, UINT64_MAX - HYPSPLIT_MARGIN_NS);
	ck_assert_uint_eq(hypsplit_process(v.hs, UINT64_MAX), 0);
	ck_assert_uint_eq(hypsplit_cpu(v.hs, 1)->split, LONG_GAPS);
	live = capture(view_json_ops.end, &v);
	ck_assert_int_eq(view_record_seal(rec, &v, "", NULL, 0), 0);
	rep = report_json(path);
	a = cpus_part(live);
	b = cpus_part(rep);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_nonnull(strstr(b, "\"host_wait\": "));
	free(a);
	free(b);
	free(live);
	free(rep);
	hypsplit_free(v.hs);
	merge_free(v.m);
	free(v.hist);
	dtl_close(d);
	unlink(path);
}
END_TEST

static Suite *hypsplit_suite(void)
{
	Suite *s = suite_create("hypsplit");
	TCase *tc = tcase_create("split");

	tcase_add_test(tc, exact_sums);
	tcase_add_test(tc, caps);
	tcase_add_test(tc, no_dtl);
	tcase_add_test(tc, late_horizon);
	tcase_add_test(tc, halted_in_gap);
	suite_add_tcase(s, tc);
	tc = tcase_create("views");
	tcase_add_test(tc, view_sums);
	tcase_add_test(tc, view_uncovered_and_stale);
	tcase_add_test(tc, view_top_split_lag);
	tcase_add_loop_test(tc, record_report_round_trip, 0, 2);
	tcase_add_test(tc, record_report_long);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hypsplit_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
