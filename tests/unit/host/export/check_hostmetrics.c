/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/export/hostmetrics: hand-built engine periods (host/engine/hostagg) added into the
 * exporter and the exposition text checked line by line — family names and types, the domain/uuid/vcpu
 * labels, counters in seconds summed over periods and never going down, a domain restarted under another
 * engine index keeping its series, top-N preemptor causes by class and comm plus "other", exits and host
 * IRQs bounded the same way, the guest channel's split only with guest data, hostile domain names and
 * comms escaped, the domain table's eviction, and the text a real HTTP scrape gets.
 */
#include <arpa/inet.h>
#include <check.h>
#include "check_main.h"
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "export/hostmetrics.h"
#include "export/hostmetrics_priv.h"
#include "export/promfmt.h"
#include "export/promfmt_priv.h"
#include "noise.h"

#define MS 1000000ULL
#define S 1000000000ULL
#define NOPROC "/nonexistent-vnoise-proc" /* every task "gone": classified from its comm */

static char text[1 << 20];

static struct hostmetrics *new_m(void)
{
	char err[128];
	struct hostmetrics *m = hostmetrics_new(NULL, NOPROC, err, sizeof(err));

	ck_assert_msg(m, "hostmetrics_new: %s", err);
	return m;
}

static const char *scrape(struct hostmetrics *m)
{
	struct bufout o = { text, sizeof(text), 0, 0 };

	ck_assert_int_eq(hostmetrics_text(m, &o), 0);
	return text;
}

/* The value of the sample line that starts with series + " ", NAN if there is none. */
static double val(const char *t, const char *series)
{
	size_t n = strlen(series);

	for (const char *p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, series, n) && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return NAN;
}

static int count_lines(const char *t, const char *prefix)
{
	int n = 0;
	size_t len = strlen(prefix);

	for (const char *p = t; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		n += !strncmp(p, prefix, len);
	return n;
}

#define V0 "{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\"}"
#define V1 "{domain=\"d1\",uuid=\"u-1\",vcpu=\"1\"}"
#define CAUSE(cls, comm) \
	"{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\",class=\"" cls "\",comm=\"" comm "\"}"

static void bind_dom(struct hostagg *a, uint32_t dom, const char *name, const char *uuid)
{
	ck_assert_int_eq(hostagg_domain(a, dom, name, uuid, "kvm", 4000 + dom, 2, "started"), 0);
	ck_assert_int_eq(hostagg_vcpu_tid(a, dom, 0, 5000 + 10 * dom), 0);
	ck_assert_int_eq(hostagg_vcpu_tid(a, dom, 1, 5001 + 10 * dom), 0);
}

static void period(struct hostagg *a, uint32_t dom, uint32_t vcpu, uint64_t t, uint64_t steal,
		   uint64_t out_r, uint64_t out_s)
{
	struct vn_host_period p = {
		.start_ns = t,
		.end_ns = t + S,
		.dom = dom,
		.vcpu = vcpu,
		.cpu = vcpu,
		.steal_ns = steal,
		.cpu_ns = 500 * MS,
		.out_ns = out_r + out_s + MS,
		.out_periods = 7,
		.out_r_ns = out_r,
		.out_s_ns = out_s,
		.idle_ns = out_s,
		.wait_ns = out_r + out_s / 5, /* R whole; a fifth of S after its wakeups */
		.flags = 7
	};

	ck_assert_int_eq(hostagg_period(a, &p), 0);
}

static void run(struct hostagg *a, uint32_t dom, uint32_t vcpu, uint64_t t, uint32_t pid,
		const char *comm, uint64_t len)
{
	struct vn_host_run r = { .start_ns = t,
				 .end_ns = t + len,
				 .out_start_ns = t,
				 .dom = dom,
				 .vcpu = vcpu,
				 .pid = pid };

	memcpy(r.comm, comm, strnlen(comm, sizeof(r.comm)));
	ck_assert_int_eq(hostagg_run(a, &r), 0);
}

static void agg(struct hostagg *a, uint32_t dom, uint16_t kind, uint32_t id, uint64_t count,
		uint64_t ns)
{
	struct vn_host_agg g = { .dom = dom,
				 .vcpu = 0,
				 .kind = kind,
				 .isa = 1,
				 .id = id,
				 .count = count,
				 .total_ns = ns,
				 .max_ns = ns };

	ck_assert_int_eq(hostagg_agg(a, &g), 0);
}

static struct hostinfo info(uint64_t t)
{
	struct hostinfo in = { .source = "live",
			       .start_ns = t,
			       .end_ns = t + S,
			       .period_ns = S,
			       .dispatch = "bpf",
			       .irqs = 1,
			       .kvm = 1,
			       .self_cpu_ns = t / 100,
			       .bpf_events = t / 1000,
			       .bpf_run_ns = t / 10000,
			       .schedlog_drops = 3 };

	return in;
}

/* One period of domain 0 (two vCPUs): vCPU 0 preempted by a hog and a kworker, exits, host IRQs. */
static void feed_one(struct hostmetrics *m, struct hostagg *a, uint64_t t)
{
	struct hostinfo in = info(t);

	hostagg_reset(a);
	period(a, 0, 0, t, 100 * MS, 200 * MS, 50 * MS);
	period(a, 0, 1, t, 10 * MS, 20 * MS, 5 * MS);
	run(a, 0, 0, t, 777, "vnhog", 150 * MS);
	run(a, 0, 0, t + 200 * MS, 778, "vnhog", 30 * MS); /* another pid, same comm: one cause */
	run(a, 0, 0, t + 300 * MS, 90, "kworker/0:1", 20 * MS);
	run(a, 0, 0, t + 400 * MS, 5001, "CPU 1/KVM", 5 * MS); /* its own domain's vCPU 1 */
	agg(a, 0, VN_HOST_AGG_EXIT, 12, 100, 3 * MS); /* VMX HLT */
	agg(a, 0, VN_HOST_AGG_EXIT, 1, 40, 1 * MS);
	agg(a, 0, VN_HOST_AGG_IRQ, 24, 10, 2 * MS);
	agg(a, 0, VN_HOST_AGG_SOFTIRQ, 3, 5, 1 * MS);
	hostmetrics_period(m, a, &in);
}

START_TEST(test_families_and_values)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	const char *t;

	ck_assert_ptr_nonnull(a);
	t = scrape(m); /* before any period: run-wide families only */
	ck_assert_double_eq(val(t, "vnoise_host_periods_total"), 0);
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_steal_seconds_total{"), 0);
	bind_dom(a, 0, "d1", "u-1");
	feed_one(m, a, 10 * S);
	t = scrape(m);
	ck_assert_ptr_nonnull(strstr(t, "# TYPE vnoise_host_vcpu_steal_seconds_total counter\n"));
	ck_assert_ptr_nonnull(strstr(t, "# TYPE vnoise_host_info gauge\n"));
	ck_assert_ptr_nonnull(strstr(t, "vnoise_host_domain_info{domain=\"d1\",uuid=\"u-1\","
					"virt=\"kvm\"} 1\n"));
	ck_assert_double_eq(val(t, "vnoise_host_periods_total"), 1);
	ck_assert_double_eq_tol(val(t, "vnoise_host_vcpu_steal_seconds_total" V0), 0.1, 1e-12);
	ck_assert_double_eq_tol(val(t, "vnoise_host_vcpu_steal_seconds_total" V1), 0.01, 1e-12);
	/* the out-time split: runnable 210 ms = 205 ms of other tasks' runs + 5 waiting; halted the other 41 ms
	 * switched out; 4 ms exits, 3 ms host IRQs */
	{
		static const char *const cause[] = { "preempted", "waiting", "halted", "exits",
						     "irq" };
		static const double want[] = { 0.205, 0.005, 0.041, 0.004, 0.003 };
		char name[256];

		for (int k = 0; k < 5; k++) {
			snprintf(name, sizeof(name),
				 "vnoise_host_vcpu_out_seconds_total{domain=\"d1\",uuid=\"u-1\","
				 "vcpu=\"0\",cause=\"%s\"}",
				 cause[k]);
			ck_assert_double_eq_tol(val(t, name), want[k], 1e-12);
		}
	}
	ck_assert_double_eq(val(t, "vnoise_host_vcpu_out_intervals_total" V0), 7);
	/* causes by class and comm: two hog pids are one series; no pid anywhere */
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("host-user-task", "vnhog")),
	    0.18, 1e-12);
	ck_assert_double_eq(
	    val(t, "vnoise_host_vcpu_preemptions_total" CAUSE("host-user-task", "vnhog")), 2);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("qemu-emulator", "CPU 1/KVM")),
	    0.005, 1e-12);
	ck_assert_ptr_null(strstr(t, "pid="));
	ck_assert_double_eq(
	    val(t, "vnoise_host_vcpu_exits_total{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\",isa=\"vmx\","
		   "reason=\"HLT\"}"),
	    100);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_host_irq_seconds_total{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\","
		   "kind=\"irq\",source=\"24\"}"),
	    0.002, 1e-12);
	ck_assert_double_eq(val(t, "vnoise_host_dispatch_records_lost_total"), 3);
	ck_assert_double_eq_tol(val(t, "vnoise_host_self_cpu_seconds_total"), 0.1, 1e-12);
	ck_assert_double_eq_tol(val(t, "vnoise_host_last_period_end_seconds"), 11, 1e-12);
	ck_assert_ptr_nonnull(strstr(t, "vnoise_host_info{version=\""));
	/* no guest data: the combined view's families are announced but have no samples */
	ck_assert_ptr_nonnull(strstr(t, "# TYPE vnoise_host_vcpu_noise_seconds_total counter\n"));
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_noise_seconds_total{"), 0);
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_gaps_total{"), 0);
	ck_assert_ptr_nonnull(strstr(t, "guest_channel=\"false\""));
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* Every family and label name is valid, every family has HELP and TYPE once, before its samples. */
START_TEST(test_names_valid)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	char last[128] = "";

	bind_dom(a, 0, "d1", "u-1");
	feed_one(m, a, 10 * S);
	for (const char *p = scrape(m); *p; p = strchr(p, '\n') + 1) {
		char name[128];

		if (!strncmp(p, "# TYPE ", 7)) {
			ck_assert_int_eq(sscanf(p + 7, "%127s", name), 1);
			ck_assert_msg(promfmt_name_ok(name), "bad name %s", name);
			ck_assert_msg(strcmp(name, last), "family %s twice", name);
			snprintf(last, sizeof(last), "%s", name);
			if (!strncmp(p + 7 + strlen(name), " counter\n", 9))
				ck_assert_msg(strlen(name) > 6 &&
						  !strcmp(name + strlen(name) - 6, "_total"),
					      "counter %s without _total", name);
		} else if (*p != '#') {
			ck_assert_msg(!strncmp(p, last, strlen(last)) &&
					  (p[strlen(last)] == '{' || p[strlen(last)] == ' '),
				      "sample outside its family %s: %.60s", last, p);
		}
	}
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* Parse "series value" lines of t into parallel arrays; returns how many. */
static int samples(const char *t, char (*series)[300], double *v, int max)
{
	int n = 0;

	for (const char *p = t; *p && n < max; p = strchr(p, '\n') + 1) {
		const char *sp = strrchr(p, ' '), *nl = strchr(p, '\n');

		if (*p == '#' || !sp || sp > nl)
			continue;
		snprintf(series[n], 300, "%.*s", (int)(sp - p), p);
		v[n++] = strtod(sp + 1, NULL);
	}
	return n;
}

static char prev_s[512][300], cur_s[512][300];
static double prev_v[512], cur_v[512];

/* Counters only go up, period after period, and a restarted domain (another engine index, same UUID)
 * keeps its series. */
START_TEST(test_monotonic_restart)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	int np = 0;

	bind_dom(a, 0, "d1", "u-1");
	for (int k = 0; k < 6; k++) {
		int nc;

		if (k == 3) { /* restarted: bound again under another index, new threads */
			hostagg_free(a);
			a = hostagg_new();
			bind_dom(a, 0, "other", "u-2");
			bind_dom(a, 5, "d1", "u-1");
		}
		if (k < 3) {
			feed_one(m, a, (10 + k) * S);
		} else {
			struct hostinfo in = info((10 + k) * S);

			hostagg_reset(a);
			period(a, 5, 0, (10 + k) * S, 1 * MS, 2 * MS, 0);
			run(a, 5, 0, (10 + k) * S, 999, "vnhog", 1 * MS);
			hostmetrics_period(m, a, &in);
		}
		nc = samples(scrape(m), cur_s, cur_v, 512);
		for (int i = 0; i < np; i++) {
			int j;

			if (!strstr(prev_s[i], "_total"))
				continue;
			for (j = 0; j < nc && strcmp(prev_s[i], cur_s[j]); j++)
				;
			ck_assert_msg(j < nc, "period %d: series %s vanished", k, prev_s[i]);
			ck_assert_msg(cur_v[j] >= prev_v[i], "period %d: %s went down %g -> %g", k,
				      prev_s[i], prev_v[i], cur_v[j]);
		}
		memcpy(prev_s, cur_s, sizeof(cur_s));
		memcpy(prev_v, cur_v, sizeof(cur_v));
		np = nc;
	}
	ck_assert_double_eq_tol(val(scrape(m), "vnoise_host_vcpu_steal_seconds_total" V0),
				0.3 + 0.003, 1e-9);
	ck_assert_double_eq_tol(
	    val(text, "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("host-user-task", "vnhog")),
	    3 * 0.18 + 0.003, 1e-9);
	ck_assert_int_eq(count_lines(text, "vnoise_host_domain_info{domain=\"d1\""), 1);
	ck_assert_double_eq(
	    val(text, "vnoise_host_domain_starts_total{domain=\"d1\",uuid=\"u-1\"}"), 1);
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* Top-N causes by class and comm: the first N (largest first) keep their series, the rest and later
 * newcomers add into "other" of their class. */
START_TEST(test_top_causes_other)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	struct hostinfo in = info(10 * S);
	const char *t;
	char comm[16], series[256];
	double other;

	bind_dom(a, 0, "d1", "u-1");
	period(a, 0, 0, 10 * S, 0, 500 * MS, 0);
	for (int i = 0; i < 12; i++) {
		snprintf(comm, sizeof(comm), "task%02d", i);
		run(a, 0, 0, 10 * S + i * 10 * MS, 1000 + i, comm, (20 - i) * MS);
	}
	hostmetrics_period(m, a, &in);
	t = scrape(m);
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_preemptor_seconds_total{"),
			 HOSTMETRICS_TOP_CAUSES + 1);
	for (int i = 0; i < 12; i++) {
		snprintf(
		    series, sizeof(series),
		    "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("host-user-task", "task%02d"),
		    i);
		if (i < (int)HOSTMETRICS_TOP_CAUSES)
			ck_assert_double_eq_tol(val(t, series), (20 - i) / 1e3, 1e-12);
		else
			ck_assert(isnan(val(t, series)));
	}
	other = val(t, "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("host-user-task", "other"));
	ck_assert_double_eq_tol(other, (12 + 11 + 10 + 9) / 1e3, 1e-12);
	/* next period: a big newcomer goes to other; a named one still counts */
	hostagg_reset(a);
	in = info(11 * S);
	run(a, 0, 0, 11 * S, 4242, "newbig", 300 * MS);
	run(a, 0, 0, 11 * S + 400 * MS, 1005, "task05", 1 * MS);
	run(a, 0, 0, 11 * S + 500 * MS, 90, "kworker/0:1", 2 * MS);
	hostmetrics_period(m, a, &in);
	t = scrape(m);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("host-user-task", "other")),
	    other + 0.3 + 0.002, 1e-12);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("host-user-task", "task05")),
	    0.016, 1e-12);
	ck_assert(isnan(
	    val(t, "vnoise_host_vcpu_preemptor_seconds_total" CAUSE("host-user-task", "newbig"))));
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* Exit reasons and IRQ sources: HOSTMETRICS_MAX_AGGS named, the rest "other". */
START_TEST(test_aggs_bounded)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	struct hostinfo in = info(10 * S);
	const char *t;

	bind_dom(a, 0, "d1", "u-1");
	period(a, 0, 0, 10 * S, 0, 0, 0);
	for (uint32_t i = 0; i < 20; i++) {
		agg(a, 0, VN_HOST_AGG_EXIT, i, 100 - i, (100 - i) * 1000);
		agg(a, 0, VN_HOST_AGG_IRQ, 100 + i, 10, (50 - i) * 1000);
	}
	hostmetrics_period(m, a, &in);
	t = scrape(m);
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_exits_total{"), HOSTMETRICS_MAX_AGGS + 1);
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_host_irqs_total{"),
			 HOSTMETRICS_MAX_AGGS + 1);
	ck_assert_double_eq(
	    val(t,
		"vnoise_host_vcpu_exits_total{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\",isa=\"other\","
		"reason=\"other\"}"),
	    84 + 83 + 82 + 81);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_host_irq_seconds_total{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\","
		   "kind=\"other\",source=\"other\"}"),
	    (34 + 33 + 32 + 31) * 1e-6, 1e-12);
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* Hostile domain names and comms: escaped, one line per sample, valid UTF-8. */
START_TEST(test_hostile_names)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	struct hostinfo in = info(10 * S);
	const char *t;

	ck_assert_int_eq(hostagg_domain(a, 0, "ev\"il\n} 1\\x\xff", "u\"1", "kvm", 1, 1, "started"),
			 0);
	period(a, 0, 0, 10 * S, MS, MS, 0);
	run(a, 0, 0, 10 * S, 66, "a\"b\nc", MS);
	run(a, 0, 0, 10 * S + 10 * MS, 67, "other", 2 * MS); /* not a second "other" series */
	for (int i = 0; i < 9; i++) /* fill the table: the rest go to other */
		run(a, 0, 0, 10 * S + (20 + i) * MS, 70 + i, i & 1 ? "odd" : "even", MS / 2);
	for (int i = 0; i < 9; i++) {
		char c[16];

		snprintf(c, sizeof(c), "t%d", i);
		run(a, 0, 0, 10 * S + (40 + i) * MS, 80 + i, c, MS / 4);
	}
	hostmetrics_period(m, a, &in);
	t = scrape(m);
	ck_assert_ptr_nonnull(strstr(t,
				     "vnoise_host_vcpu_steal_seconds_total{domain=\"ev\\\"il\\n} "
				     "1\\\\x\xef\xbf\xbd\",uuid=\"u\\\"1\",vcpu=\"0\"} 0.001\n"));
	ck_assert_ptr_nonnull(strstr(t, "comm=\"a\\\"b\\nc\"} 0.001\n"));
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_preemptor_seconds_total{"),
			 HOSTMETRICS_TOP_CAUSES + 1);
	ck_assert_int_eq(count_lines(t, "vnoise_host_vcpu_preemptions_total{"),
			 HOSTMETRICS_TOP_CAUSES + 1);
	ck_assert_ptr_nonnull(strstr(t, "comm=\"other\"} 0.003\n")); /* 2 ms + 4 x 0.25 ms */
	for (const char *p = t; *p; p = strchr(p, '\n') + 1)
		ck_assert_msg(*p == '#' || !strncmp(p, "vnoise_host_", 12), "stray line %.40s", p);
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* The guest channel: the split by origin and class and the clock gauges appear with guest data. */
START_TEST(test_guest_split)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	struct hostinfo in = info(10 * S);
	struct vn_host_match mt = { .start_ns = 10 * S,
				    .end_ns = 11 * S,
				    .dom = 0,
				    .vcpu = 0,
				    .gaps = 4,
				    .gap_ns = 10 * MS };
	struct vn_host_chan ch = { .start_ns = 10 * S,
				   .end_ns = 11 * S,
				   .dom = 0,
				   .clock_offset_ns = -5000,
				   .clock_uncertainty_ns = 20000 };
	const char *t;

	mt.guest_ns[VN_CLASS_IRQ] = 3 * MS;
	mt.host_ns[VN_HCLASS_HOST_PREEMPT] = 6 * MS;
	mt.residual_ns = 1 * MS;
	bind_dom(a, 0, "d1", "u-1");
	period(a, 0, 0, 10 * S, 0, 0, 0);
	ck_assert_int_eq(hostagg_match(a, &mt), 0);
	ck_assert_int_eq(hostagg_chan(a, &ch), 0);
	hostmetrics_period(m, a, &in);
	t = scrape(m);
	ck_assert_double_eq(val(t, "vnoise_host_vcpu_gaps_total" V0), 4);
	ck_assert(isnan(val(t, "vnoise_host_vcpu_gaps_total" V1))); /* no guest data on vCPU 1 */
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_noise_seconds_total{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\","
		   "origin=\"guest\",class=\"irq\"}"),
	    0.003, 1e-12);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_noise_seconds_total{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\","
		   "origin=\"hypervisor\",class=\"host_preempt\"}"),
	    0.006, 1e-12);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_vcpu_noise_seconds_total{domain=\"d1\",uuid=\"u-1\",vcpu=\"0\","
		   "origin=\"hw\",class=\"residual\"}"),
	    0.001, 1e-12);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_domain_clock_uncertainty_seconds{domain=\"d1\",uuid=\"u-1\"}"),
	    2e-5, 1e-15);
	ck_assert_double_eq_tol(
	    val(t, "vnoise_host_domain_clock_offset_seconds{domain=\"d1\",uuid=\"u-1\"}"), -5e-6,
	    1e-15);
	ck_assert_ptr_nonnull(strstr(t, "guest_channel=\"true\""));
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* The channels' region files: refused and lost counted per domain, only for domains with a channel. */
START_TEST(test_region_counters)
{
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = new_m();
	struct hostinfo in = info(10 * S);
	struct hostinfo_dtl dtl = { .name = "d1",
				    .state = "refused",
				    .detail = "class",
				    .region = "refused",
				    .region_why = "owner uid 1000, not root or libvirt-qemu",
				    .region_refused = 1,
				    .region_lost = 2 };
	const char *t;

	bind_dom(a, 0, "d1", "u-1");
	bind_dom(a, 1, "d2", "u-2");
	period(a, 0, 0, 10 * S, 0, 0, 0);
	period(a, 1, 0, 10 * S, 0, 0, 0);
	in.dtl = &dtl;
	in.ndtl = 1;
	hostmetrics_period(m, a, &in);
	t = scrape(m);
	ck_assert_double_eq(
	    val(t, "vnoise_host_domain_region_refused_total{domain=\"d1\",uuid=\"u-1\"}"), 1);
	ck_assert_double_eq(
	    val(t, "vnoise_host_domain_region_lost_total{domain=\"d1\",uuid=\"u-1\"}"), 2);
	ck_assert(
	    isnan(val(t, "vnoise_host_domain_region_refused_total{domain=\"d2\",uuid=\"u-2\"}")));
	hostmetrics_stop(m);
	hostagg_free(a);
}
END_TEST

/* More domains over time than the table holds: the ones not seen for longest are evicted, counted. */
START_TEST(test_domain_eviction)
{
	struct hostmetrics *m = new_m();
	const char *t;

	for (uint32_t k = 0; k < 5; k++) {
		struct hostagg *a = hostagg_new();
		struct hostinfo in = info((10 + k) * S);

		for (uint32_t i = 0; i < VN_HOST_MAX_DOMAINS; i++) {
			char name[32];

			snprintf(name, sizeof(name), "dom-%u-%u", k, i);
			ck_assert_int_eq(hostagg_domain(a, i, name, name, "kvm", 1, 1, "started"),
					 0);
			period(a, i, 0, (10 + k) * S, MS, 0, 0);
		}
		hostmetrics_period(m, a, &in);
		hostagg_free(a);
	}
	t = scrape(m);
	ck_assert_int_eq(count_lines(t, "vnoise_host_domain_info{"), HOSTMETRICS_MAX_DOMAINS);
	ck_assert_double_eq(val(t, "vnoise_host_exporter_domains_evicted_total"),
			    5 * VN_HOST_MAX_DOMAINS - HOSTMETRICS_MAX_DOMAINS);
	ck_assert_ptr_null(strstr(t, "domain=\"dom-0-"));
	ck_assert_ptr_nonnull(strstr(t, "domain=\"dom-4-63\""));
	hostmetrics_stop(m);
}
END_TEST

/* A real scrape over HTTP gets the same text; a bad address is refused with a reason. */
START_TEST(test_http)
{
	char err[128], req[] = "GET /metrics HTTP/1.0\r\n\r\n", *resp = malloc(1 << 20);
	struct hostagg *a = hostagg_new();
	struct hostmetrics *m = hostmetrics_new("127.0.0.1:0", NOPROC, err, sizeof(err));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	size_t got = 0;
	ssize_t n;
	int fd;

	ck_assert_msg(m, "%s", err);
	ck_assert_uint_ne(hostmetrics_port(m), 0);
	bind_dom(a, 0, "d1", "u-1");
	feed_one(m, a, 10 * S);
	sa.sin_port = htons(hostmetrics_port(m));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((n = read(fd, resp + got, (1 << 20) - 1 - got)) > 0)
		got += (size_t)n;
	resp[got] = 0;
	close(fd);
	ck_assert_ptr_nonnull(strstr(resp, " 200 "));
	ck_assert_ptr_nonnull(strstr(resp, "\r\n\r\n"));
	ck_assert_str_eq(strstr(resp, "\r\n\r\n") + 4, scrape(m));
	hostmetrics_stop(m);
	hostagg_free(a);
	free(resp);
	ck_assert_ptr_null(hostmetrics_start("nowhere", err, sizeof(err)));
	ck_assert_str_ne(err, "");
	hostmetrics_stop(NULL);
	hostmetrics_period(NULL, NULL, NULL);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hostmetrics");
	TCase *tc = tcase_create("text");

	tcase_add_test(tc, test_families_and_values);
	tcase_add_test(tc, test_region_counters);
	tcase_add_test(tc, test_names_valid);
	tcase_add_test(tc, test_monotonic_restart);
	tcase_add_test(tc, test_top_causes_other);
	tcase_add_test(tc, test_aggs_bounded);
	tcase_add_test(tc, test_hostile_names);
	tcase_add_test(tc, test_guest_split);
	tcase_add_test(tc, test_domain_eviction);
	suite_add_tcase(s, tc);
	tc = tcase_create("http");
	tcase_add_test(tc, test_http);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return check_main(suite());
}
