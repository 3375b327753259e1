/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/views/hostview (and the views it picks: match/matchview, views/hostlist), rendered
 * from an engine fed with records through hostagg_feed_chunk, no VM needed: for a realistic domain (2 vCPUs,
 * 5 preemptors with 15-character names, host IRQs, softirqs, vectors, VM exits, --guest sources and
 * channel, --flows), every text table (host view, --guest view, flows; end-of-run summary and one top
 * period) has the same columns in its header and its rows, each header name over its column; every line of
 * the default text views fits 80 columns, and --wide gives the full rows; host IRQ and VM-exit sources of the
 * --guest view are named, the clock offset is in readable units, vnoise's own threads are labelled
 * "(vnoise)" in text and "vnoise": true in JSON; every JSON document carries "version" right after
 * "schema" (vnoise.host/1, vnoise.match/1, vnoise.list/1), and vnoise.list/1 is exactly as specified;
 * names holding terminal controls and bytes >= 0x80 reach no text view raw.
 */
#include <check.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/hostagg.h"
#include "match/matchview.h"
#include "noise.h"
#include "util/version.h"
#include "views/hostlist.h"
#include "views/hostview.h"

#define MS 1000000ULL
#define S 1000000000ULL
#define T0 (1000 * S)

static struct hostagg *A;
static struct hostinfo IN;
static uint32_t SELF; /* this process plays vnoise-host: its pid is in IN.self_tids */

/* 15-character names, the longest a comm has */
static const char *const comms[5] = { "kworker/u16:3-e", "qemu-system-x86", "vnoise-host",
				      "ksoftirqd/12345", "rcu_preempt_abc" };

static void feed(uint16_t type, const void *recs, size_t len)
{
	ck_assert_int_eq(hostagg_feed_chunk(A, type, recs, len), 1);
}

static void feed_period(uint32_t v, uint64_t start)
{
	struct vn_host_period p = {
		.start_ns = start,
		.end_ns = start + S,
		.vcpu = v,
		.tid = 4243 + v,
		.cpu = 1 + v,
		.steal_ns = 248 * MS,
		.cpu_ns = 700 * MS,
		.exec_ns = 708 * MS,
		.run_delay_ns = 250 * MS,
		.pcount = 120,
		.out_ns = 250 * MS,
		.out_periods = 100,
		.out_r_ns = 249 * MS,
		.out_s_ns = 1 * MS,
		.idle_ns = 2 * MS,
		.wait_ns = 249 * MS, /* the dispatch log: the R intervals whole */
	};
	struct vn_host_out o = {
		.start_ns = start + 10 * MS, .end_ns = start + 14 * MS, .vcpu = v, .state = 'R'
	};

	feed(VN_CHUNK_HOST_PERIOD, &p, sizeof(p));
	feed(VN_CHUNK_HOST_OUT, &o, sizeof(o));
}

static void feed_runs(uint32_t v, uint64_t start)
{
	struct vn_host_run r[5];

	memset(r, 0, sizeof(r));
	for (int k = 0; k < 5; k++) {
		r[k].start_ns = start + (uint64_t)k * 10 * MS;
		r[k].end_ns = r[k].start_ns + (uint64_t)(5 - k) * MS;
		r[k].out_start_ns = r[k].start_ns;
		r[k].vcpu = v;
		r[k].pid = k == 2 ? SELF : 1234567 + (uint32_t)k;
		memcpy(r[k].comm, comms[k], strlen(comms[k]));
	}
	feed(VN_CHUNK_HOST_RUN, r, sizeof(r));
}

static void feed_aggs(uint32_t v, uint64_t start)
{
	static const struct {
		uint16_t kind, isa;
		uint32_t id;
	} ids[] = { { VN_HOST_AGG_EXIT, 1, 1 },	   { VN_HOST_AGG_EXIT, 1, 12 },
		    { VN_HOST_AGG_EXIT, 1, 48 },   { VN_HOST_AGG_EXIT, 1, 32 },
		    { VN_HOST_AGG_EXIT, 1, 30 },   { VN_HOST_AGG_IRQ, 0, 50 },
		    { VN_HOST_AGG_IRQ, 0, 51 },	   { VN_HOST_AGG_IRQ, 0, 120 },
		    { VN_HOST_AGG_SOFTIRQ, 0, 3 }, { VN_HOST_AGG_SOFTIRQ, 0, 1 },
		    { VN_HOST_AGG_SOFTIRQ, 0, 9 }, { VN_HOST_AGG_VECTOR, 0, 0 },
		    { VN_HOST_AGG_VECTOR, 0, 1 },  { VN_HOST_AGG_VECTOR, 0, 3 },
		    { VN_HOST_AGG_SOFTIRQ, 0, 7 } };
	struct vn_host_agg g[sizeof(ids) / sizeof(ids[0])];

	memset(g, 0, sizeof(g));
	for (size_t k = 0; k < sizeof(ids) / sizeof(ids[0]); k++) {
		g[k].start_ns = start;
		g[k].end_ns = start + S;
		g[k].vcpu = v;
		g[k].kind = ids[k].kind;
		g[k].isa = ids[k].isa;
		g[k].id = ids[k].id;
		g[k].count = 12345 + k;
		g[k].total_ns = 1234567 * (k + 1);
		g[k].max_ns = 99999;
	}
	feed(VN_CHUNK_HOST_AGG, g, sizeof(g));
}

static struct vn_host_msrc msrc(uint32_t v, uint64_t start, uint8_t kind, uint8_t cls, uint32_t id,
				const char *comm, uint64_t total)
{
	struct vn_host_msrc s = {
		.start_ns = start, .vcpu = v, .kind = kind, .cls = cls, .id = id
	};

	if (comm)
		memcpy(s.comm, comm, strnlen(comm, VN_HOST_COMM_LEN));
	s.count = 1234;
	s.total_ns = total;
	s.max_ns = total / 10;
	return s;
}

static void feed_match(uint32_t v, uint64_t start)
{
	struct vn_host_match m = {
		.start_ns = start,
		.end_ns = start + S,
		.vcpu = v,
		.gaps = 123456,
		.gap_ns = 300 * MS,
		.max_gap_ns = 5 * MS,
		.runtime_ns = 990 * MS,
		.residual_ns = 10 * MS,
		.big_gaps = 120,
		.big_matched = 110,
		.latency_max_ns = 12 * MS,
		.latency_sum_ns = 500 * MS,
		.latency_gaps = 1000,
	};
	struct vn_host_msrc s[] = {
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_HOST_PREEMPT, 1234567, comms[0],
		     90 * MS),
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_HOST_PREEMPT, SELF, "vnoise-host",
		     80 * MS),
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_HOST_PREEMPT, 1234569, comms[3],
		     70 * MS),
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_HOST_IRQ, 3u << 24 | 0, NULL, 6 * MS),
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_HOST_IRQ, 1u << 24 | 50, NULL, 5 * MS),
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_HOST_IRQ, 2u << 24 | 3, NULL, 4 * MS),
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_VMEXIT, 1, NULL, 3 * MS),
		msrc(v, start, VN_HOST_MSRC_HOST, VN_HCLASS_HOST_WAIT, 'S', NULL, 2 * MS),
		msrc(v, start, VN_HOST_MSRC_GUEST, VN_CLASS_THREAD, 4321, "vnoise-guest", 20 * MS),
		msrc(v, start, VN_HOST_MSRC_GUEST, VN_CLASS_THREAD, 1234, "kworker/0:1H-kb",
		     19 * MS),
		msrc(v, start, VN_HOST_MSRC_GUEST, VN_CLASS_IRQ, 25, NULL, 18 * MS),
		msrc(v, start, VN_HOST_MSRC_GUEST, VN_CLASS_IRQ, VN_VEC_BASE, NULL, 17 * MS),
		msrc(v, start, VN_HOST_MSRC_GUEST, VN_CLASS_SOFTIRQ, 3, NULL, 16 * MS),
		msrc(v, start, VN_HOST_MSRC_GUEST, VN_CLASS_SOFTIRQ, 2, NULL, 15 * MS),
		msrc(v, start, VN_HOST_MSRC_GONLY, VN_CLASS_THREAD, 1234, "kworker/0:1H-kb",
		     19 * MS),
		msrc(v, start, VN_HOST_MSRC_GONLY, VN_CLASS_THREAD, 4321, "vnoise-guest", 18 * MS),
		msrc(v, start, VN_HOST_MSRC_GONLY, VN_CLASS_UNEXPLAINED, 0, NULL, 200 * MS),
		msrc(v, start, VN_HOST_MSRC_GONLY, VN_CLASS_IRQ, 26, NULL, 17 * MS),
		msrc(v, start, VN_HOST_MSRC_GONLY, VN_CLASS_SOFTIRQ, 9, NULL, 16 * MS),
	};

	m.guest_ns[VN_CLASS_THREAD] = 100 * MS;
	m.guest_ns[VN_CLASS_IRQ] = 30 * MS;
	m.host_ns[VN_HCLASS_HOST_PREEMPT] = 150 * MS;
	m.host_ns[VN_HCLASS_HOST_IRQ] = 10 * MS;
	m.gonly_ns[VN_CLASS_UNEXPLAINED] = 200 * MS;
	feed(VN_CHUNK_HOST_MATCH, &m, sizeof(m));
	feed(VN_CHUNK_HOST_MSRC, s, sizeof(s));
}

static void feed_chan(uint64_t start)
{
	struct vn_host_chan c = {
		.start_ns = start,
		.end_ns = start + S,
		.state = VN_HOST_CHAN_OK,
		.epoch = 1234567890123ULL,
		.agent_state = 1,
		.rings = 2,
		.records = 123456789,
		.lost = 12345,
		.missed = 678,
		.torn = 9,
		.invalid = 10,
		.corrupt = 1,
		.epochs = 2,
		.guest_dropped = 11,
		.unsynced = 12,
		.clock_offset_ns = -12345678,
		.clock_uncertainty_ns = 12300,
		.clock_min_rtt_ns = 45600,
		.clock_exchanges = 123456,
		.late = 13,
		.match_dropped = 14,
	};

	feed(VN_CHUNK_HOST_CHAN, &c, sizeof(c));
}

static struct vn_host_flow flow(uint64_t start, uint8_t dir, uint8_t proto, uint16_t sport,
				uint16_t dport, uint64_t packets)
{
	static const uint8_t host[4] = { 192, 168, 122, 1 }, guest[4] = { 192, 168, 122, 100 };
	struct vn_host_flow f = { .start_ns = start, .end_ns = start + S, .dir = dir, .ipver = 4 };

	f.proto = proto;
	f.ethertype = 0x0800;
	f.sport = sport;
	f.dport = dport;
	memcpy(f.src, dir == VN_HOST_FLOW_TO_GUEST ? host : guest, 4);
	memcpy(f.dst, dir == VN_HOST_FLOW_TO_GUEST ? guest : host, 4);
	memcpy(f.tap, "vnet12", 6);
	f.packets = packets;
	f.bytes = packets * 1400;
	return f;
}

static void feed_flows(uint64_t start)
{
	struct vn_host_flow f[] = {
		flow(start, VN_HOST_FLOW_TO_GUEST, 17, 54321, 5201, 123456789),
		flow(start, VN_HOST_FLOW_TO_GUEST, 6, 40000, 22, 1234),
		flow(start, VN_HOST_FLOW_FROM_GUEST, 6, 22, 40000, 5678),
	};
	struct vn_host_tap t = { .start_ns = start, .end_ns = start + S, .state = VN_HOST_TAP_OK };

	memcpy(t.tap, "vnet12", 6);
	t.packets[0] = 123458023;
	t.bytes[0] = 123458023ULL * 1400;
	t.packets[1] = 5678;
	t.bytes[1] = 5678 * 1400;
	t.dropped[0] = 12;
	t.truncated = 3;
	t.flows = 3;
	feed(VN_CHUNK_HOST_FLOW, f, sizeof(f));
	feed(VN_CHUNK_HOST_TAP, &t, sizeof(t));
}

/* One period of every record type for both vCPUs. */
static void feed_all(uint64_t start)
{
	for (uint32_t v = 0; v < 2; v++) {
		feed_period(v, start);
		feed_runs(v, start);
		feed_aggs(v, start);
		feed_match(v, start);
	}
	feed_chan(start);
	feed_flows(start);
}

static void setup(void)
{
	A = hostagg_new();
	ck_assert_ptr_nonnull(A);
	SELF = (uint32_t)getpid();
	ck_assert_int_eq(hostagg_domain(A, 0, "vm-realistic",
					"6f1c0b6e-0000-4000-8000-000000000001", "kvm", 4242, 2,
					"started"),
			 0);
	ck_assert_int_eq(hostagg_vcpu_tid(A, 0, 0, 4243), 0);
	ck_assert_int_eq(hostagg_vcpu_tid(A, 0, 1, 4244), 0);
	ck_assert_int_eq(hostagg_set_irq_name(A, 50, "nvme0q1"), 0);
	ck_assert_int_eq(hostagg_set_irq_name(A, 51, "iwlwifi:queue_12"), 0);
	ck_assert_int_eq(hostagg_set_irq_name(A, 120, "vfio-msix[0](0000:3b:00.0)"), 0);
	feed_all(T0);
	feed_all(T0 + S);
	memset(&IN, 0, sizeof(IN));
	IN.source = "live";
	IN.start_ns = T0;
	IN.end_ns = T0 + 2 * S;
	IN.period_ns = S;
	IN.dispatch = "bpf";
	IN.irqs = 1;
	IN.kvm = 1;
	IN.schedlog_drops = 123456;
	IN.events_dropped = 7;
	IN.reconnects = 2;
	IN.top_n = 5;
	IN.flows_top = 10;
	IN.nself = 1;
	IN.self_tids[0] = SELF;
}

static void teardown(void)
{
	hostagg_free(A);
	A = NULL;
}

/* The view as text (caller frees). */
static char *render(const struct hostview_ops *ops, int wide)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	IN.wide = wide;
	ck_assert_int_eq(hostview_show(ops, f, A, &IN), 0);
	fclose(f);
	return buf;
}

/* ---- the table checker ---- */

struct tok {
	int start, end; /* columns [start, end) */
};

/* The whitespace-separated words of line (up to '\n') with their columns; returns how many (<= max). */
static int tokens(const char *line, struct tok *t, int max)
{
	int n = 0, i = 0;

	while (line[i] && line[i] != '\n') {
		if (line[i] == ' ') {
			i++;
			continue;
		}
		ck_assert_int_lt(n, max);
		t[n].start = i;
		while (line[i] && line[i] != '\n' && line[i] != ' ')
			i++;
		t[n++].end = i;
	}
	return n;
}

static const char *next_line(const char *line)
{
	line = strchr(line, '\n');
	return line ? line + 1 : NULL;
}

static bool is_number(const char *line, const struct tok *t)
{
	for (int i = t->start; i < t->end; i++)
		if (!isdigit((unsigned char)line[i]))
			return false;
	return t->end > t->start;
}

/*
 * The table whose header is hdr: its rows are the lines up to the next "domain" line or header whose first
 * word is a number ending under the header's first name. Every row has the header's columns, each value
 * under its name (right-aligned: same end; left-aligned: same start); a row with more words than the header
 * has names has a text last column (it starts under the last name). Returns the rows checked.
 */
static int check_table(const char *hdr)
{
	struct tok h[32], r[64];
	int nh = tokens(hdr, h, 32), rows = 0;
	const char *line = strchr(hdr, '\n');

	for (line = line ? line + 1 : NULL; line && *line; line = next_line(line)) {
		int nr;

		if (!strncmp(line, "domain ", 7))
			break;
		nr = tokens(line, r, 64);
		if (nr > 1 && (!strncmp(line + r[0].start, "vCPU ", 5) ||
			       !strncmp(line + r[0].start, "bytes ", 6)))
			break;
		if (!nr || !is_number(line, &r[0]) || r[0].end != h[0].end)
			continue;
		ck_assert_msg(nr >= nh, "row has %d columns, header %d:\n%.*s\n%.*s", nr, nh,
			      (int)strcspn(hdr, "\n"), hdr, (int)strcspn(line, "\n"), line);
		for (int i = 0; i < nh; i++) {
			bool text = i == nh - 1 && nr > nh;
			bool ok = text ? r[i].start == h[i].start
				       : r[i].end == h[i].end || r[i].start == h[i].start;

			ck_assert_msg(ok, "column %d (%.*s) not under its name:\n%.*s\n%.*s", i,
				      h[i].end - h[i].start, hdr + h[i].start,
				      (int)strcspn(hdr, "\n"), hdr, (int)strcspn(line, "\n"), line);
		}
		rows++;
	}
	return rows;
}

/* Check every table of a text view (headers start with "vCPU" or "bytes"); returns how many there are. */
static int check_tables(const char *text)
{
	int tables = 0;

	for (const char *line = text; line && *line;) {
		struct tok t[32];
		int n = tokens(line, t, 32);

		if (n > 1 && (!strncmp(line + t[0].start, "vCPU ", 5) ||
			      !strncmp(line + t[0].start, "bytes ", 6))) {
			ck_assert_msg(check_table(line) > 0, "table without rows: %.*s",
				      (int)strcspn(line, "\n"), line);
			tables++;
		}
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return tables;
}

/* The longest line of text. */
static int widest(const char *text, const char **where)
{
	int max = 0;

	for (const char *line = text; *line;) {
		int len = (int)strcspn(line, "\n");

		if (len > max) {
			max = len;
			*where = line;
		}
		line += len;
		if (*line)
			line++;
	}
	return max;
}

static void check_fits(const char *text, int width)
{
	const char *where = text;
	int w = widest(text, &where);

	ck_assert_msg(w <= width, "a line of %d columns:\n%.*s\n--- in:\n%s", w, w, where, text);
}

/* ---- tests ---- */

START_TEST(test_host_table_shape)
{
	char *t = render(&hostview_text_ops, 0);

	/* the vCPU table and the two flows tables */
	ck_assert_int_eq(check_tables(t), 3);
	ck_assert_ptr_nonnull(
	    strstr(t, " cpu%  steal%    out%  prmpt%    out/s     sw/s maxout_us\n"));
	/* the row: cpu% is schedstat's 70.80, steal% 24.80 — each under its own name; out% the whole
	 * out-time (25.00 switched out, VM exits and host IRQs), prmpt% the runs of other tasks while
	 * it was runnable (1.50) */
	ck_assert_msg(
	    strstr(t, "     0     4243    1   70.80   24.80   39.81    1.50    100.0    120.0"
		      "      4000\n"),
	    "%s", t);
	ck_assert_msg(strstr(t, "       out 39.8% = preempted 1.5 (kworker/u16:3-e[1234567] 0.5,"),
		      "%s", t);
	/* under the table, the footer's host words for STEAL over 1% of the vCPUs' time */
	ck_assert_msg(strstr(t, "\nSTEAL 25%: the vCPUs were runnable while something else ran"),
		      "%s", t);
	/* titled by the command that measured (a file: report FILE) */
	ck_assert_msg(!strncmp(t, "vnoise-host live: 2.0 s", 23), "%.80s", t);
	free(t);
	IN.cmd = "record";
	t = render(&hostview_text_ops, 0);
	ck_assert_msg(!strncmp(t, "vnoise-host record: 2.0 s", 25), "%.80s", t);
	free(t);
	IN.source = "r.vhr";
	t = render(&hostview_text_ops, 0);
	ck_assert_msg(!strncmp(t, "vnoise-host report r.vhr: 2.0 s", 31), "%.80s", t);
	free(t);
	IN.source = "live";
	IN.cmd = NULL;
	t = render(&hostview_text_ops, 1);
	ck_assert_int_eq(check_tables(t), 3);
	free(t);
}
END_TEST

START_TEST(test_match_table_shape)
{
	char *t = render(&matchview_text_ops, 0);

	ck_assert_int_eq(check_tables(t), 3);
	ck_assert_msg(
	    strstr(t, "  vCPU     gaps  noise%  guest%  hyper%     hw% gaps>1ms   host lat_ms "
		      "maxlat\n"),
	    "%s", t);
	/* under it, the footer: hw (10 ms of the gaps' 300 ms) in the host's words */
	ck_assert_msg(strstr(t, "\nHW 3.3%: neither the guest's events nor the host's records"),
		      "%s", t);
	free(t);
	t = render(&matchview_text_ops, 1);
	ck_assert_int_eq(check_tables(t), 3);
	free(t);
}
END_TEST

/* top shows the engine of one period (reset, then fed): the same tables. */
START_TEST(test_top_period_shape)
{
	char *t;

	hostagg_reset(A);
	feed_all(T0 + 2 * S);
	IN.start_ns = T0 + 2 * S;
	IN.end_ns = T0 + 3 * S;
	t = render(&hostview_text_ops, 0);
	ck_assert_int_eq(check_tables(t), 3);
	check_fits(t, HOSTVIEW_WIDTH);
	free(t);
	t = render(&matchview_text_ops, 0);
	ck_assert_int_eq(check_tables(t), 3);
	check_fits(t, HOSTVIEW_WIDTH);
	free(t);
}
END_TEST

START_TEST(test_fit_80_columns)
{
	const struct hostview_ops *ops[] = { &hostview_text_ops, &matchview_text_ops };

	for (size_t i = 0; i < 2; i++) {
		char *t = render(ops[i], 0);
		const char *where;

		check_fits(t, HOSTVIEW_WIDTH);
		/* every preemptor and source still shown */
		ck_assert_ptr_nonnull(strstr(t, i ? "kworker/0:1H-kb" : "rcu_preempt_abc"));
		ck_assert_ptr_nonnull(strstr(t, "ksoftirqd/12345"));
		free(t);
		/* --wide: today's full rows */
		t = render(ops[i], 1);
		ck_assert_int_gt(widest(t, &where), HOSTVIEW_WIDTH);
		free(t);
	}
}
END_TEST

START_TEST(test_wide_preemptors_on_row)
{
	char *t = render(&hostview_text_ops, 1), *row;

	row = strstr(t, "\n     0     4243 ");
	ck_assert_ptr_nonnull(row);
	row = strndup(row + 1, strcspn(row + 1, "\n"));
	ck_assert_msg(strstr(row, "kworker/u16:3-e[1234567] ") && strstr(row, "idle "), "%s", row);
	free(row);
	free(t);
	/* without --wide they are on their own line */
	t = render(&hostview_text_ops, 0);
	ck_assert_ptr_nonnull(
	    strstr(t, "\n       preemptors (% of out-time, times): kworker/u16:3-e"));
	free(t);
}
END_TEST

START_TEST(test_source_names)
{
	char *t, *j;

	IN.top_n = 10;
	t = render(&matchview_text_ops, 0);
	if (getenv("HOSTVIEW_DUMP"))
		fputs(t, stderr);

	ck_assert_msg(strstr(t, "host_irq:local_timer "), "%s", t);
	ck_assert_ptr_nonnull(strstr(t, "host_irq:50:nvme0q1 "));
	ck_assert_ptr_nonnull(strstr(t, "host_irq:NET_RX "));
	ck_assert_ptr_nonnull(strstr(t, "vmexit:EXTERNAL_INTERRUPT "));
	/* the waiting vCPU thread's state in words, not its letter */
	ck_assert_msg(strstr(t, "host_wait:sleeping "), "%s", t);
	ck_assert_ptr_null(strstr(t, "host_wait:S "));
	ck_assert_ptr_null(strstr(t, "50331648"));
	ck_assert_ptr_null(strstr(t, "16777266"));
	free(t);
	j = render(&matchview_json_ops, 0);
	ck_assert_ptr_nonnull(strstr(j, "\"source\":\"host_irq:local_timer\""));
	ck_assert_ptr_nonnull(strstr(j, "\"source\":\"host_irq:50:nvme0q1\""));
	ck_assert_ptr_nonnull(strstr(j, "\"id\":50331648")); /* the raw id stays in JSON */
	free(j);
}
END_TEST

START_TEST(test_clock_offset)
{
	static const struct {
		int64_t ns;
		const char *text;
	} cases[] = {
		{ 0, "+0.000 us" },
		{ 850000, "+850.000 us" },
		{ -12345678, "-12.346 ms" },
		{ 3250000000LL, "+3.250 s" },
		{ -(36 * 60LL + 27) * 1000000000LL - 41000000LL, "-36:27.041" },
		{ (3 * 3600LL + 4 * 60 + 5) * 1000000000LL + 678000000LL, "+3:04:05.678" },
		{ -(2 * 86400LL + 3 * 3600 + 4 * 60 + 5) * 1000000000LL - 678000000LL,
		  "-2 d 03:04:05.678" },
		{ INT64_MIN, "-106751 d 23:47:16.854" },
	};
	char buf[48], *t;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ck_assert_str_eq(matchview_offset_text(cases[i].ns, buf, sizeof(buf)),
				 cases[i].text);
	t = render(&matchview_text_ops, 0);
	ck_assert_msg(strstr(t, "clock offset -12.346 ms +- 12.3 us"), "%s", t);
	free(t);
}
END_TEST

START_TEST(test_vnoise_labelled)
{
	char *t = render(&hostview_text_ops, 0), *j, self[64];

	snprintf(self, sizeof(self), "vnoise-host[%u] (vnoise) ", SELF);
	ck_assert_msg(strstr(t, self), "%s", t);
	ck_assert_ptr_null(strstr(t, "kworker/u16:3-e[1234567] (vnoise)"));
	free(t);
	t = render(&matchview_text_ops, 0);
	snprintf(self, sizeof(self), "host_preempt:vnoise-host[%u] (vnoise) ", SELF);
	ck_assert_msg(strstr(t, self), "%s", t);
	ck_assert_ptr_nonnull(strstr(t, "thread:vnoise-guest[4321] (vnoise) "));
	ck_assert_ptr_null(strstr(t, "thread:kworker/0:1H-kb[1234] (vnoise)"));
	free(t);
	j = render(&hostview_json_ops, 0);
	snprintf(self, sizeof(self), "\"comm\":\"vnoise-host\",\"pid\":%u,", SELF);
	ck_assert_ptr_nonnull(strstr(j, self));
	ck_assert_ptr_nonnull(strstr(strstr(j, self), "\"vnoise\":true}"));
	ck_assert_ptr_nonnull(strstr(j, "\"vnoise\":false}"));
	free(j);
	j = render(&matchview_json_ops, 0);
	ck_assert_ptr_nonnull(strstr(j, "\"comm\":\"vnoise-guest\",\"total_ns\""));
	ck_assert_ptr_nonnull(strstr(j, "\"vnoise\":true}"));
	free(j);
	/* another process's view of the same engine: nothing is its own */
	IN.nself = 0;
	t = render(&hostview_text_ops, 0);
	ck_assert_ptr_null(strstr(t, "(vnoise)"));
	free(t);
}
END_TEST

START_TEST(test_json_version)
{
	const struct hostview_ops *ops[] = { &hostview_json_ops, &matchview_json_ops };
	const char *schema[] = { "vnoise.host/1", "vnoise.match/1" };

	for (size_t i = 0; i < 2; i++) {
		char *j = render(ops[i], 0), want[128];

		snprintf(want, sizeof(want),
			 "{\"schema\":\"%s\",\"version\":\"%s\",\"source\":", schema[i],
			 version_string());
		ck_assert_msg(!strncmp(j, want, strlen(want)), "%.120s", j);
		free(j);
	}
}
END_TEST

/* Each domain's DTL publisher (live): the key "dtl" in both JSON views; none without one or for others. */
START_TEST(test_dtl_json)
{
	const struct hostview_ops *ops[] = { &hostview_json_ops, &matchview_json_ops };
	struct hostinfo_dtl d[2] = {
		{ .name = "other-vm", .state = "v1-agent", .detail = "class" },
		{ .name = "vm-realistic",
		  .state = "on",
		  .detail = "task",
		  .published = 12345,
		  .dropped = 6 },
	};

	for (size_t i = 0; i < 2; i++) {
		char *j = render(ops[i], 0);

		ck_assert_ptr_null(strstr(j, "\"dtl\""));
		free(j);
		IN.dtl = d;
		IN.ndtl = 2;
		j = render(ops[i], 0);
		ck_assert_msg(strstr(j, "\"dtl\":{\"state\":\"on\",\"detail\":\"task\","
					"\"published\":12345,\"dropped\":6}"),
			      "%s", j);
		ck_assert_ptr_null(strstr(j, "v1-agent"));
		free(j);
		IN.ndtl = 0;
	}
}
END_TEST

/* A domain whose region file was refused: the key "region" says so, why, and the counters. */
START_TEST(test_region_json)
{
	const struct hostview_ops *ops[] = { &hostview_json_ops, &matchview_json_ops };
	struct hostinfo_dtl d = { .name = "vm-realistic",
				  .state = "refused",
				  .detail = "class",
				  .region = "refused",
				  .region_why = "owner uid 1000, not root or libvirt-qemu",
				  .region_refused = 1,
				  .region_lost = 3 };

	for (size_t i = 0; i < 2; i++) {
		char *j;

		IN.dtl = &d;
		IN.ndtl = 1;
		j = render(ops[i], 0);
		ck_assert_msg(
		    strstr(j,
			   "\"region\":{\"state\":\"refused\",\"why\":\"owner uid 1000, not root "
			   "or libvirt-qemu\",\"refused\":1,\"lost\":3}"),
		    "%s", j);
		free(j);
		IN.ndtl = 0;
	}
}
END_TEST

START_TEST(test_list_json)
{
	struct vmap_dom a = { .name = "vm-a",
			      .uuid = "6f1c0b6e-0000-4000-8000-000000000001",
			      .virt = "kvm",
			      .qemu_pid = 4242,
			      .nvcpus = 2,
			      .tids = { 4243, 4244 },
			      .emulator_tid = 4242,
			      .iothreads = { 4250 },
			      .niothreads = 1,
			      .shmem = "vnoise-vm-a",
			      .shmem_size = 4194304,
			      .taps = "vnet0,vnet3",
			      .tid_source = "thread-names" };
	struct vmap_dom b = { .name = "b\"q",
			      .uuid = "u",
			      .virt = "qemu",
			      .qemu_pid = 7,
			      .nvcpus = 1,
			      .tids = { 8 } };
	const struct vmap_dom *doms[] = { &a, &b };
	char *buf = NULL, want[2048];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_int_eq(hostlist_json(f, "qemu:///system", doms, 2), 0);
	fclose(f);
	snprintf(
	    want, sizeof(want),
	    "{\"schema\":\"vnoise.list/1\",\"version\":\"%s\",\"uri\":\"qemu:///system\","
	    "\"domains\":[{\"name\":\"vm-a\",\"uuid\":\"6f1c0b6e-0000-4000-8000-000000000001\","
	    "\"virt\":\"kvm\",\"qemu_pid\":4242,\"emulator_tid\":4242,\"tid_source\":"
	    "\"thread-names\",\"vcpus\":[{\"vcpu\":0,\"tid\":4243},{\"vcpu\":1,\"tid\":4244}],"
	    "\"iothreads\":[4250],\"shmem\":\"vnoise-vm-a\",\"shmem_size\":4194304,"
	    "\"taps\":[\"vnet0\",\"vnet3\"]},"
	    "{\"name\":\"b\\\"q\",\"uuid\":\"u\",\"virt\":\"qemu\",\"qemu_pid\":7,"
	    "\"emulator_tid\":0,\"tid_source\":null,\"vcpus\":[{\"vcpu\":0,\"tid\":8}],"
	    "\"iothreads\":[],\"shmem\":null,\"shmem_size\":0,\"taps\":[]}]}\n",
	    version_string());
	ck_assert_str_eq(buf, want);
	free(buf);
	/* no domain: an empty list, still one document */
	buf = NULL;
	f = open_memstream(&buf, &len);
	ck_assert_int_eq(hostlist_json(f, "test:///default", doms, 0), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "\"uri\":\"test:///default\",\"domains\":[]}\n"));
	free(buf);
	/* the text list as before */
	buf = NULL;
	f = open_memstream(&buf, &len);
	hostlist_text(f, doms, 1);
	fclose(f);
	ck_assert_str_eq(buf,
			 "vm-a uuid=6f1c0b6e-0000-4000-8000-000000000001 virt=kvm qemu_pid=4242 "
			 "emulator_tid=4242 tids=thread-names shmem=vnoise-vm-a "
			 "shmem_size=4194304 taps=vnet0,vnet3\n  vcpu 0 tid 4243\n  vcpu 1 tid "
			 "4244\n  iothread tid 4250\n");
	free(buf);
}
END_TEST

/* No byte of text a terminal would act on: controls other than newline, DEL, bytes >= 0x80. */
static void check_inert(const char *t, const char *what)
{
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		ck_assert_msg((*p >= 0x20 && *p < 0x7f) || *p == '\n',
			      "%s: byte 0x%02x at %td:\n%s", what, *p, (const char *)p - t, t);
}

/*
 * Every text view over names a guest or a host user can set: the domain, host tasks preempting it, and
 * the guest's own thread names (the --guest sources) holding ESC, CR, BEL and bytes >= 0x80. Nothing of them
 * reaches the terminal raw; each shows escaped (util/termsafe).
 */
START_TEST(test_hostile_names)
{
	static const char *const bad[] = { "\x1b]0;pwn\a", "ev\ril\x1b[2J", "\xc3\xbc\x9b\xff" };
	static const struct hostview_ops *const ops[] = { &hostview_text_ops, &matchview_text_ops };
	char *t;

	hostagg_free(A);
	A = hostagg_new();
	ck_assert_ptr_nonnull(A);
	ck_assert_int_eq(hostagg_domain(A, 0, "vm\x1b[31mred\r",
					"6f1c0b6e-0000-4000-8000-000000000002", "kvm", 4242, 2,
					"started"),
			 0);
	for (uint32_t v = 0; v < 2; v++) {
		struct vn_host_run r[3];
		struct vn_host_msrc ms[3];
		struct vn_host_match m = { .start_ns = T0,
					   .end_ns = T0 + S,
					   .vcpu = v,
					   .gaps = 10,
					   .gap_ns = 30 * MS,
					   .runtime_ns = 990 * MS };

		feed_period(v, T0);
		memset(r, 0, sizeof(r));
		for (int k = 0; k < 3; k++) {
			r[k].start_ns = T0 + (uint64_t)k * 10 * MS;
			r[k].end_ns = r[k].start_ns + 3 * MS;
			r[k].out_start_ns = r[k].start_ns;
			r[k].vcpu = v;
			r[k].pid = 2000 + (uint32_t)k;
			memcpy(r[k].comm, bad[k], strlen(bad[k]));
			ms[k] = msrc(v, T0, k ? VN_HOST_MSRC_GUEST : VN_HOST_MSRC_HOST,
				     k ? VN_CLASS_THREAD : VN_HCLASS_HOST_PREEMPT,
				     3000 + (uint32_t)k, bad[k], (uint64_t)(3 - k) * MS);
		}
		m.guest_ns[VN_CLASS_THREAD] = 3 * MS;
		m.host_ns[VN_HCLASS_HOST_PREEMPT] = 3 * MS;
		feed(VN_CHUNK_HOST_RUN, r, sizeof(r));
		feed(VN_CHUNK_HOST_MATCH, &m, sizeof(m));
		feed(VN_CHUNK_HOST_MSRC, ms, sizeof(ms));
	}
	feed_chan(T0);
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		for (int wide = 0; wide < 2; wide++) {
			t = render(ops[o], wide);
			check_inert(t, o ? "--guest view" : "host view");
			ck_assert_msg(strstr(t, "vm\\x1b[31mred\\x0d"), "%s", t);
			ck_assert_msg(strstr(t, o ? "ev\\x0dil\\x1b[2J" : "\\x1b]0;pwn\\x07"), "%s",
				      t);
			free(t);
		}
}
END_TEST

START_TEST(test_vnoise_comm)
{
	ck_assert(hostview_is_vnoise_comm("vnoise-guest"));
	ck_assert(hostview_is_vnoise_comm("vnoise-lvloop"));
	ck_assert(!hostview_is_vnoise_comm("vnoise"));
	ck_assert(!hostview_is_vnoise_comm("kworker/0:1"));
}
END_TEST

static Suite *hostview_suite(void)
{
	Suite *s = suite_create("hostview");
	TCase *tc = tcase_create("views");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_host_table_shape);
	tcase_add_test(tc, test_match_table_shape);
	tcase_add_test(tc, test_top_period_shape);
	tcase_add_test(tc, test_fit_80_columns);
	tcase_add_test(tc, test_wide_preemptors_on_row);
	tcase_add_test(tc, test_source_names);
	tcase_add_test(tc, test_clock_offset);
	tcase_add_test(tc, test_vnoise_labelled);
	tcase_add_test(tc, test_json_version);
	tcase_add_test(tc, test_dtl_json);
	tcase_add_test(tc, test_region_json);
	tcase_add_test(tc, test_list_json);
	tcase_add_test(tc, test_vnoise_comm);
	tcase_add_test(tc, test_hostile_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hostview_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
