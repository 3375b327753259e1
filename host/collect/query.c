/* SPDX-License-Identifier: MIT */
/* query: `vnoise-host query`, the collector's store answered in text or JSON (see query.h). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sqlite3.h>
#include "collect/query.h"
#include "collect/collect.h"
#include "collect/store.h"
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "format/datagram.h"
#include "util/json.h"
#include "util/termsafe.h"
#include "util/termcell.h"
#include "attrib/classes.h"
#include "attrib/merge.h"
#include "views/hostview.h"
#include "util/log.h"
#include "util/monotime.h"
#include "util/parse.h"

/*
 * The collector's ranking (clusteragg.c: iv_close, mean_delay, by_delay) in SQL. A node's interval compute
 * is its slowest rank's; an interval is compared when at least two nodes of the job reported it (the store
 * keeps per job and interval the node count, the fastest compute and the slowest node in job_interval); a
 * node's delay in it is its compute minus the fastest node's; the ranking is by mean delay, slowest first,
 * ties by node id; "slowest" counts the intervals where the node was the slowest (among equals the last
 * to arrive). Every node that reported in the range is ranked (mean delay 0 when never compared). The
 * range applies to the job's interval start (job_interval.start_ns: its first report's), so that a day's
 * ranking reads that day's rows of interval in key order (job, interval, node).
 */
const char query_ranking_sql[] =
    "SELECT i.job_id, i.node_id,"
    "  coalesce(avg(CASE WHEN j.nodes >= 2 THEN i.compute_ns - j.min_compute_ns END), 0)"
    "   AS mean_delay_ns,"
    "  coalesce(sum(j.nodes >= 2 AND j.slow_node = i.node_id), 0) AS slowest,"
    "  coalesce(sum(j.nodes >= 2), 0) AS intervals, sum(i.noise_ns) AS noise_ns,"
    "  sum(i.hypervisor_ns) AS hypervisor_ns"
    " FROM job_interval AS j JOIN interval AS i"
    "  ON i.job_id = j.job_id AND i.interval_id = j.interval_id"
    " WHERE j.start_ns >= ?1 AND j.start_ns < ?2 AND (?3 IS NULL OR j.job_id = ?3)"
    " GROUP BY i.job_id, i.node_id ORDER BY i.job_id, mean_delay_ns DESC, i.node_id";

/* A node's intervals: the jobs' intervals in the range (job_interval_time), then one key lookup each. */
static const char timeline_sql[] =
    "SELECT i.interval_id, i.job_id, i.start_ns, i.end_ns, i.compute_ns, i.noise_ns, i.sampled,"
    " i.verdict, i.parts, i.nmi_ns, i.irq_ns, i.softirq_ns, i.thread_ns, i.hcall_ns, i.steal_ns,"
    " i.unexplained_ns, i.host_preempt_ns, i.host_wait_ns, i.vmexit_ns, i.host_irq_ns"
    " FROM job_interval AS j JOIN interval AS i"
    "  ON i.job_id = j.job_id AND i.interval_id = j.interval_id AND i.node_id = ?3"
    " WHERE j.start_ns >= ?1 AND j.start_ns < ?2 ORDER BY i.start_ns, i.interval_id";

static const char causes_sql[] =
    "SELECT class, src_kind, src_id, name, sum(noise_ns) AS ns, sum(count), count(DISTINCT node_id)"
    " FROM cause WHERE job_id = ?3 AND start_ns >= ?1 AND start_ns < ?2"
    " AND (?5 IS NULL OR node_id = ?5)"
    " GROUP BY class, src_kind, src_id, name ORDER BY ns DESC, class, src_id LIMIT ?4";

static const char classes_sql[] =
    "SELECT count(*), count(DISTINCT node_id), sum(noise_ns), sum(compute_ns), sum(nmi_ns),"
    " sum(irq_ns), sum(softirq_ns), sum(thread_ns), sum(hcall_ns), sum(steal_ns),"
    " sum(unexplained_ns), sum(host_preempt_ns), sum(host_wait_ns), sum(vmexit_ns),"
    " sum(host_irq_ns) FROM interval WHERE job_id = ?3 AND start_ns >= ?1 AND start_ns < ?2"
    " AND (?4 IS NULL OR node_id = ?4)";

enum { O_STORE = CLIOPT_OWN, O_FROM, O_TO, O_NODE };

static const struct cliopt query_opts_table[] = {
	{ .id = O_STORE,
	  .name = "store",
	  .has_arg = 1,
	  .arg = "FILE",
	  .help = "the collector's store (default ./" COLLECT_DEFAULT_STORE ")" },
	{ .id = O_FROM,
	  .name = "from",
	  .has_arg = 1,
	  .arg = "WHEN",
	  .help = "intervals started at or after WHEN (default: the first)" },
	{ .id = O_TO,
	  .name = "to",
	  .has_arg = 1,
	  .arg = "WHEN",
	  .help = "intervals that started before WHEN (default: no bound)" },
	{ .id = O_NODE,
	  .name = "node",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "causes: of node N only (why is it slow)" },
	{ .id = CLIOPT_TOP, .help = "causes shown (default 10)" },
	{ .id = CLIOPT_JSON, .help = "one vnoise.query/1 JSON object" },
	{ .id = CLIOPT_QUIET },
	{ .id = CLIOPT_VERBOSE },
	{ .id = CLIOPT_HELP },
	{ 0 },
};

static const char usage_head[] =
    "usage: vnoise-host query [options] ranking [JOB] | timeline NODE | causes JOB\n"
    "Ask the collector's store (vnoise-host collect --store):\n"
    "  ranking [JOB]   the slow-node ranking per job (the collector report's)\n"
    "  timeline NODE   a node's intervals: compute, noise by class, sampled or not\n"
    "  causes JOB      a job's noise by class and its top causes (the nodes'\n"
    "                  sources); --node N: of one node\n"
    "JOB is a name given to the nodes' --job or a 16-hex-digit job id.\n";
static const char usage_tail[] =
    "WHEN: now, -DURATION before now (-1h, -30m), @SECONDS since the epoch, or\n"
    "YYYY-MM-DD[THH:MM[:SS]] in UTC. Tables print local times.\n"
    "exit: 0 ok, 1 failed, 2 usage, 4 nothing of that node or job in the range,\n"
    "      5 a damaged, foreign or newer store\n";

size_t query_usage(char *buf, size_t len)
{
	size_t n = strlen(usage_head);
	int w;

	snprintf(buf, len, "%s", usage_head);
	n += cliopt_help(query_opts_table, n < len ? buf + n : NULL, n < len ? len - n : 0);
	w = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, "%s", usage_tail);
	return n + (w > 0 ? (size_t)w : 0);
}

int query_parse_when(const char *s, uint64_t now_ns, uint64_t *out_ns)
{
	struct tm tm = { 0 };
	int end = 0;
	uint64_t v;

	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		char err[160];

		if (cliopt_parse_time("--from", s + 1, NULL, &v, err, sizeof(err)) || v > now_ns)
			return -EINVAL;
		*out_ns = now_ns - v;
		return 0;
	}
	if (s[0] == '@') {
		if (parse_u64(s + 1, &v) || v > UINT64_MAX / 1000000000ull)
			return -EINVAL;
		*out_ns = v * 1000000000ull;
		return 0;
	}
	if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &end) != 3 ||
	    end != 10)
		return -EINVAL;
	if (s[end] == 'T' || s[end] == ' ') {
		int e2 = 0;

		if (sscanf(s + end + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &e2) != 2 || e2 != 5)
			return -EINVAL;
		end += 6;
		if (s[end] == ':') {
			if (sscanf(s + end + 1, "%2d%n", &tm.tm_sec, &e2) != 1 || e2 != 2)
				return -EINVAL;
			end += 3;
		}
	}
	if (s[end] == 'Z')
		end++;
	if (s[end] || tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
	    tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	time_t t = timegm(&tm);
	if (t < 0)
		return -EINVAL;
	*out_ns = (uint64_t)t * 1000000000ull;
	return 0;
}

uint64_t query_job_id(const char *job)
{
	uint64_t v = 0;
	size_t n = strlen(job);

	if (n == 16 && strspn(job, "0123456789abcdefABCDEF") == 16) {
		for (size_t i = 0; i < 16; i++) {
			char c = job[i];

			v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
		}
		return v;
	}
	return datagram_job_id(job);
}

/* The command and its argument, at argv[optind]. */
static int take_positional(struct cliopt_parser *ps, int argc, char **argv, struct query_opts *o)
{
	const char *w = argv[optind++];
	const char *a = optind < argc && argv[optind][0] != '-' ? argv[optind] : NULL;

	if (o->what)
		return cliopt_fail(ps, "unexpected argument '%s'", w);
	if (!strcmp(w, "ranking")) {
		o->what = QUERY_RANKING;
	} else if (!strcmp(w, "timeline")) {
		o->what = QUERY_TIMELINE;
		if (!a || parse_u64(a, &o->node_id))
			return cliopt_fail(ps, "timeline: want a node id (a number), not '%s'",
					   a ? a : "nothing");
	} else if (!strcmp(w, "causes")) {
		o->what = QUERY_CAUSES;
		if (!a || !*a || strlen(a) > 31)
			return cliopt_fail(ps, "causes: want a job (a name or 16 hex digits)");
	} else {
		return cliopt_fail(ps, "unknown query '%s' (want ranking, timeline or causes)", w);
	}
	if (a && o->what != QUERY_TIMELINE) {
		if (strlen(a) > 31)
			return cliopt_fail(ps, "%s: '%.40s' is not a job", w, a);
		o->job = a;
	}
	if (a)
		optind++;
	return 0;
}

static int take_option(struct cliopt_parser *ps, int c, uint64_t now_ns, struct query_opts *o)
{
	const struct cliopt_flags flags = { &o->json, &o->quiet, &o->verbose };

	if (cliopt_flag(c, &flags))
		return 0;
	switch (c) {
	case O_STORE:
		o->store = ps->arg;
		return 0;
	case O_FROM:
	case O_TO:
		if (query_parse_when(ps->arg, now_ns, c == O_FROM ? &o->from_ns : &o->to_ns))
			return cliopt_fail(ps,
					   "%s: '%s' is not a time (now, -1h, @SECONDS or "
					   "YYYY-MM-DDTHH:MM:SS UTC)",
					   cliopt_name(ps), ps->arg);
		return 0;
	case O_NODE:
		if (parse_u64(ps->arg, &o->cause_node))
			return cliopt_fail(ps, "--node: want a node id (a number), not '%s'",
					   ps->arg);
		o->have_cause_node = 1;
		return 0;
	case CLIOPT_TOP:
		return cliopt_int(ps, 1, 100000, &o->top);
	case CLIOPT_HELP:
		return 1;
	}
	return cliopt_fail(ps, "unexpected option %s", ps->spelled);
}

int query_parse(int argc, char **argv, uint64_t now_ns, struct query_opts *o, char *err,
		size_t errlen)
{
	struct cliopt_parser ps;
	int c, rc;

	memset(o, 0, sizeof(*o));
	o->store = COLLECT_DEFAULT_STORE;
	o->top = 10;
	rc = cliopt_init(&ps, query_opts_table, argc, argv, err, errlen);
	if (rc)
		return rc;
	for (;;) {
		while ((c = cliopt_next(&ps)) > 0) {
			rc = take_option(&ps, c, now_ns, o);
			if (rc)
				return rc;
		}
		if (c < 0)
			return c;
		if (optind >= argc)
			break;
		rc = take_positional(&ps, argc, argv, o);
		if (rc)
			return rc;
	}
	if (!o->what)
		return cliopt_fail(&ps, "what to ask: ranking, timeline NODE or causes JOB");
	if (o->to_ns && o->to_ns <= o->from_ns)
		return cliopt_fail(&ps, "--to must come after --from");
	if (o->have_cause_node && o->what != QUERY_CAUSES)
		return cliopt_fail(&ps, "--node is for causes (timeline takes its NODE)");
	return 0;
}

/* ---- the queries ---- */

/* The class columns the queries select, in the order of the record classes 1 .. VN_REPORT_CLS_MAX - 1 (the
 * store's <name>_ns columns); named as the datagram names the class, but hypercall as the schema spells it. */
#define CLASS_COLS (VN_REPORT_CLS_MAX - 1)

static const char *class_col(int c)
{
	return c + 1 == VN_CLASS_HCALL ? "hcall" : datagram_class_name((unsigned)c + 1);
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql, const struct query_opts *o)
{
	sqlite3_stmt *q;

	if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK) {
		log_err("query: %s", sqlite3_errmsg(db));
		return NULL;
	}
	sqlite3_bind_int64(q, 1, (sqlite3_int64)o->from_ns);
	sqlite3_bind_int64(q, 2, o->to_ns ? (sqlite3_int64)o->to_ns : INT64_MAX);
	return q;
}

/* The name the collector was given for job_id, into buf ("" when none). */
static void job_name(sqlite3 *db, uint64_t job_id, char *buf, size_t len)
{
	sqlite3_stmt *q;

	buf[0] = 0;
	if (sqlite3_prepare_v2(db, "SELECT name FROM job WHERE job_id = ?1", -1, &q, NULL) !=
	    SQLITE_OK)
		return;
	sqlite3_bind_int64(q, 1, (sqlite3_int64)job_id);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
}

static void json_head(struct json_writer *w, const struct query_opts *o, const char *what)
{
	json_obj_begin(w);
	json_kv_str(w, "schema", "vnoise.query/1");
	json_kv_str(w, "query", what);
	json_kv_str(w, "store", o->store);
	json_kv_u64(w, "from_ns", o->from_ns);
	if (o->to_ns)
		json_kv_u64(w, "to_ns", o->to_ns);
	else
		json_kv_str(w, "to_ns", NULL);
}

/* A job's heading: text, or the job's JSON keys (the object is open). */
static void job_begin(sqlite3 *db, struct json_writer *w, FILE *f, uint64_t job_id, int json)
{
	char name[64], hex[24], safe[TERMSAFE_LEN(64)];

	job_name(db, job_id, name, sizeof(name));
	snprintf(hex, sizeof(hex), "%016" PRIx64, job_id);
	if (json) {
		json_obj_begin(w);
		json_kv_str(w, "job", name[0] ? name : NULL);
		json_kv_str(w, "job_id", hex);
		json_key(w, "ranking");
		json_arr_begin(w);
		return;
	}
	fprintf(f, "\njob %s%s%s%s\n%4s %10s %12s %9s %9s %12s %12s\n",
		termsafe(safe, sizeof(safe), name, sizeof(name)), name[0] ? " (" : "", hex,
		name[0] ? ")" : "", "pos", "node", "delay_us", "slowest", "intervals", "noise_ms",
		"hyp_ms");
}

static int ranking(sqlite3 *db, const struct query_opts *o, FILE *f, struct json_writer *w)
{
	sqlite3_stmt *q = prepare(db, query_ranking_sql, o);
	uint64_t cur = 0;
	unsigned rank = 0;
	int first = 1, rc;

	if (!q)
		return EXIT_FAIL;
	if (o->job)
		sqlite3_bind_int64(q, 3, (sqlite3_int64)query_job_id(o->job));
	if (o->json) {
		json_head(w, o, "ranking");
		json_key(w, "jobs");
		json_arr_begin(w);
	}
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		uint64_t job = (uint64_t)sqlite3_column_int64(q, 0);
		uint64_t node = (uint64_t)sqlite3_column_int64(q, 1);
		double delay = sqlite3_column_double(q, 2);

		if (first || job != cur) {
			if (!first && o->json) {
				json_arr_end(w);
				json_obj_end(w);
			}
			job_begin(db, w, f, job, o->json);
			cur = job;
			first = 0;
			rank = 0;
		}
		rank++;
		if (o->json) {
			json_obj_begin(w);
			json_kv_u64(w, "node", node);
			json_kv_double(w, "mean_delay_ns", nearbyint(delay));
			json_kv_u64(w, "slowest", (uint64_t)sqlite3_column_int64(q, 3));
			json_kv_u64(w, "intervals", (uint64_t)sqlite3_column_int64(q, 4));
			json_kv_u64(w, "noise_ns", (uint64_t)sqlite3_column_int64(q, 5));
			json_kv_u64(w, "hypervisor_ns", (uint64_t)sqlite3_column_int64(q, 6));
			json_obj_end(w);
			continue;
		}
		fprintf(f, "%4u %10" PRIu64 " %12.1f %9" PRId64 " %9" PRId64 " %12.3f %12.3f\n",
			rank, node, delay / 1e3, (int64_t)sqlite3_column_int64(q, 3),
			(int64_t)sqlite3_column_int64(q, 4),
			(double)sqlite3_column_int64(q, 5) / 1e6,
			(double)sqlite3_column_int64(q, 6) / 1e6);
	}
	if (rc != SQLITE_DONE)
		log_err("query: %s", sqlite3_errmsg(db));
	sqlite3_finalize(q);
	if (o->json) {
		if (!first) {
			json_arr_end(w);
			json_obj_end(w);
		}
		json_arr_end(w);
		json_obj_end(w);
	} else if (first) {
		fprintf(f, "no intervals in the range\n");
	} else {
		fputs(
		    "pos: place in the ranking (1 = the slowest); delay_us: mean compute time "
		    "beyond\n"
		    "the fastest node's over the stored intervals in the range (the collector's\n"
		    "final table averages every interval it compared); slowest: intervals it was\n"
		    "the slowest in; intervals: compared ones (2 nodes or more)\n",
		    f);
	}
	return rc == SQLITE_DONE ? EXIT_OK : EXIT_FAIL;
}

/* The local time of epoch ns t: "HH:MM:SS.mmm"; its day into day ("YYYY-MM-DD"). */
static void local_time(uint64_t t, char *hms, size_t hlen, char *day, size_t dlen)
{
	time_t sec = (time_t)(t / 1000000000ull);
	struct tm tm;
	char b[16];

	if (!localtime_r(&sec, &tm)) {
		snprintf(hms, hlen, "?");
		snprintf(day, dlen, "?");
		return;
	}
	strftime(b, sizeof(b), "%H:%M:%S", &tm);
	snprintf(hms, hlen, "%s.%03u", b, (unsigned)(t / 1000000ull % 1000));
	strftime(day, dlen, "%Y-%m-%d %Z", &tm);
}

/* The timeline's text state: the day and the job of the row before. */
struct tl_text {
	char day[40];
	uint64_t job;
	char job_name[TERMSAFE_LEN(64)];
};

/* One timeline row: JSON object or text line (80 columns: a day line when the day changes). */
static void timeline_row(sqlite3 *db, sqlite3_stmt *q, FILE *f, struct json_writer *w, int json,
			 struct tl_text *tt)
{
	uint64_t hyp = 0;

	for (int c = 16; c < 20; c++)
		hyp += (uint64_t)sqlite3_column_int64(q, c);
	if (!json) {
		uint64_t job = (uint64_t)sqlite3_column_int64(q, 1);
		char hms[24], day[40], name[64], safe[TERMSAFE_LEN(64)], cut[16];

		local_time((uint64_t)sqlite3_column_int64(q, 2), hms, sizeof(hms), day,
			   sizeof(day));
		if (strcmp(day, tt->day)) {
			fprintf(f, "-- %s\n", day);
			snprintf(tt->day, sizeof(tt->day), "%s", day);
		}
		if (job != tt->job || !tt->job_name[0]) {
			job_name(db, job, name, sizeof(name));
			if (!name[0])
				snprintf(name, sizeof(name), "%016" PRIx64, job);
			termsafe(safe, sizeof(safe), name, sizeof(name));
			snprintf(tt->job_name, sizeof(tt->job_name), "%s", safe);
			tt->job = job;
		}
		termcell_fit(tt->job_name, 10, false, cut, sizeof(cut));
		fprintf(f, "%9" PRIu64 " %-12s %-10s %10.3f %9.3f %8.3f %4s %s\n",
			(uint64_t)sqlite3_column_int64(q, 0), hms, cut,
			(double)sqlite3_column_int64(q, 4) / 1e6,
			(double)sqlite3_column_int64(q, 5) / 1e6, (double)hyp / 1e6,
			sqlite3_column_int(q, 6) ? "yes" : "no",
			classes_verdict_name((unsigned)sqlite3_column_int(q, 7)));
		return;
	}
	char hex[24];

	snprintf(hex, sizeof(hex), "%016" PRIx64, (uint64_t)sqlite3_column_int64(q, 1));
	json_obj_begin(w);
	json_kv_u64(w, "interval", (uint64_t)sqlite3_column_int64(q, 0));
	json_kv_str(w, "job_id", hex);
	json_kv_u64(w, "start_ns", (uint64_t)sqlite3_column_int64(q, 2));
	json_kv_u64(w, "end_ns", (uint64_t)sqlite3_column_int64(q, 3));
	json_kv_u64(w, "compute_ns", (uint64_t)sqlite3_column_int64(q, 4));
	json_kv_u64(w, "noise_ns", (uint64_t)sqlite3_column_int64(q, 5));
	json_kv_u64(w, "hypervisor_ns", hyp);
	json_kv_bool(w, "sampled", sqlite3_column_int(q, 6));
	json_kv_u64(w, "verdict", (uint64_t)sqlite3_column_int(q, 7));
	json_kv_str(w, "verdict_name", classes_verdict_name((unsigned)sqlite3_column_int(q, 7)));
	json_kv_u64(w, "parts", (uint64_t)sqlite3_column_int(q, 8));
	json_key(w, "class_ns");
	json_obj_begin(w);
	for (int c = 0; c < CLASS_COLS; c++)
		json_kv_u64(w, class_col(c), (uint64_t)sqlite3_column_int64(q, 9 + c));
	json_obj_end(w);
	json_obj_end(w);
}

/* The end of a listing: the statement finalized, the JSON array and object closed; -1 when the rows ended in
 * an error (said in one line). */
static int finish_rows(sqlite3 *db, sqlite3_stmt *q, int rc, struct json_writer *w)
{
	if (rc != SQLITE_DONE)
		log_err("query: %s", sqlite3_errmsg(db));
	sqlite3_finalize(q);
	if (w) {
		json_arr_end(w);
		json_obj_end(w);
	}
	return rc == SQLITE_DONE ? 0 : -1;
}

static int timeline(sqlite3 *db, const struct query_opts *o, FILE *f, struct json_writer *w)
{
	sqlite3_stmt *q = prepare(db, timeline_sql, o);
	struct tl_text tt = { .job = 0 };
	unsigned n = 0;
	int rc;

	if (!q)
		return EXIT_FAIL;
	sqlite3_bind_int64(q, 3, (sqlite3_int64)o->node_id);
	if (o->json) {
		json_head(w, o, "timeline");
		json_kv_u64(w, "node", o->node_id);
		json_key(w, "intervals");
		json_arr_begin(w);
	}
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (!n && !o->json) /* no table at all for a node without intervals */
			fprintf(f,
				"node %" PRIu64
				" (start: local time)\n%9s %-12s %-10s %10s %9s %8s %4s %s\n",
				o->node_id, "interval", "start", "job", "compute_ms", "noise_ms",
				"hyp_ms", "smpl", "verdict");
		timeline_row(db, q, f, w, o->json, &tt);
		n++;
	}
	if (finish_rows(db, q, rc, o->json ? w : NULL))
		return EXIT_FAIL;
	if (!n)
		log_err("timeline: node %" PRIu64 " reported no interval in the range", o->node_id);
	return n ? EXIT_OK : EXIT_CANNOT;
}

/* The job's intervals in the range by class; the number of intervals (0: none), -1 on error. */
static int64_t causes_classes(sqlite3 *db, const struct query_opts *o, uint64_t job, FILE *f,
			      struct json_writer *w)
{
	sqlite3_stmt *q = prepare(db, classes_sql, o);
	int64_t n;

	if (!q)
		return -1;
	sqlite3_bind_int64(q, 3, (sqlite3_int64)job);
	if (o->have_cause_node)
		sqlite3_bind_int64(q, 4, (sqlite3_int64)o->cause_node);
	if (sqlite3_step(q) != SQLITE_ROW) {
		log_err("query: %s", sqlite3_errmsg(db));
		sqlite3_finalize(q);
		return -1;
	}
	n = sqlite3_column_int64(q, 0);
	if (o->json) {
		json_kv_u64(w, "intervals", (uint64_t)n);
		json_kv_u64(w, "nodes", (uint64_t)sqlite3_column_int64(q, 1));
		json_kv_u64(w, "noise_ns", (uint64_t)sqlite3_column_int64(q, 2));
		json_kv_u64(w, "compute_ns", (uint64_t)sqlite3_column_int64(q, 3));
		json_key(w, "class_ns");
		json_obj_begin(w);
		for (int c = 0; c < CLASS_COLS; c++)
			json_kv_u64(w, class_col(c), (uint64_t)sqlite3_column_int64(q, 4 + c));
		json_obj_end(w);
	} else {
		struct hostview_list l;
		int64_t nodes = sqlite3_column_int64(q, 1);

		fprintf(f, "%" PRId64 " intervals of %" PRId64 " node%s, noise %.3f ms\n", n, nodes,
			nodes == 1 ? "" : "s", (double)sqlite3_column_int64(q, 2) / 1e6);
		hostview_list_begin(&l, f, HOSTVIEW_WIDTH, 2, "  by class (ms):");
		for (int c = 0; c < CLASS_COLS; c++)
			if (sqlite3_column_int64(q, 4 + c))
				hostview_list_item(&l, "%s %.3f", class_col(c),
						   (double)sqlite3_column_int64(q, 4 + c) / 1e6);
		hostview_list_end(&l, "none");
		fprintf(f, "%-12s %10s %-16s %12s %10s %6s\n", "class", "id", "name", "noise_ms",
			"count", "nodes");
	}
	sqlite3_finalize(q);
	return n;
}

/* A cause's name as the views spell it: the stored one, else from its class and id (an interrupt vector, a
 * softirq, a hypercall by name), without the "class:" the class column already says. */
static const char *cause_label(const char *cls, uint32_t id, const char *name, int nl, char *buf,
			       size_t len)
{
	int c = cls ? classes_guest_find(cls) : -ENOENT;
	struct merge_source src = { .id = id };
	char tmp[96];
	const char *colon;

	if ((name && nl > 0) || c < 0 || c == VN_CLASS_THREAD)
		return termsafe(buf, len, name ? name : "", nl > 0 ? (size_t)nl : 0);
	src.cls = (uint8_t)c;
	merge_source_name(&src, NULL, NULL, tmp, sizeof(tmp));
	colon = strchr(tmp, ':');
	snprintf(buf, len, "%s", colon ? colon + 1 : tmp);
	return buf;
}

static void cause_row(sqlite3_stmt *q, FILE *f, struct json_writer *w, int json)
{
	const char *cls = (const char *)sqlite3_column_text(q, 0);
	const char *name = (const char *)sqlite3_column_text(q, 3);
	int nl = sqlite3_column_bytes(q, 3);
	char cls_safe[TERMSAFE_LEN(32)];

	if (!json) {
		char safe[TERMSAFE_LEN(256)];

		fprintf(f, "%-12s %10" PRId64 " %-16s %12.3f %10" PRId64 " %6d\n",
			cls ? termsafe(cls_safe, sizeof(cls_safe), cls, 32) : "?",
			(int64_t)sqlite3_column_int64(q, 2),
			cause_label(cls, (uint32_t)sqlite3_column_int64(q, 2), name, nl, safe,
				    sizeof(safe)),
			(double)sqlite3_column_int64(q, 4) / 1e6,
			(int64_t)sqlite3_column_int64(q, 5), sqlite3_column_int(q, 6));
		return;
	}
	json_obj_begin(w);
	json_kv_str(w, "class", cls);
	json_kv_u64(w, "id", (uint64_t)sqlite3_column_int64(q, 2));
	json_key(w, "name");
	json_strn(w, name ? name : "", name ? (size_t)nl : 0);
	json_kv_u64(w, "noise_ns", (uint64_t)sqlite3_column_int64(q, 4));
	json_kv_u64(w, "count", (uint64_t)sqlite3_column_int64(q, 5));
	json_kv_u64(w, "nodes", (uint64_t)sqlite3_column_int(q, 6));
	json_obj_end(w);
}

static int causes(sqlite3 *db, const struct query_opts *o, FILE *f, struct json_writer *w)
{
	uint64_t job = query_job_id(o->job);
	sqlite3_stmt *q;
	int64_t n;
	int rc;
	char hex[24];

	snprintf(hex, sizeof(hex), "%016" PRIx64, job);
	if (o->json) {
		json_head(w, o, "causes");
		json_kv_str(w, "job_id", hex);
		if (o->have_cause_node)
			json_kv_u64(w, "node", o->cause_node);
	} else {
		char safe[TERMSAFE_LEN(128)];

		fprintf(f, "job %s (%s)", termsafe(safe, sizeof(safe), o->job, 128), hex);
		if (o->have_cause_node)
			fprintf(f, ", node %" PRIu64, o->cause_node);
		fputc('\n', f);
	}
	n = causes_classes(db, o, job, f, w);
	q = n < 0 ? NULL : prepare(db, causes_sql, o);
	if (!q)
		return EXIT_FAIL;
	sqlite3_bind_int64(q, 3, (sqlite3_int64)job);
	sqlite3_bind_int(q, 4, o->top);
	if (o->have_cause_node)
		sqlite3_bind_int64(q, 5, (sqlite3_int64)o->cause_node);
	if (o->json) {
		json_key(w, "causes");
		json_arr_begin(w);
	}
	while ((rc = sqlite3_step(q)) == SQLITE_ROW)
		cause_row(q, f, w, o->json);
	if (finish_rows(db, q, rc, o->json ? w : NULL))
		return EXIT_FAIL;
	if (!n && o->have_cause_node)
		log_err("causes: node %" PRIu64 " of job %s reported no interval in the range",
			o->cause_node, o->job);
	else if (!n)
		log_err("causes: job %s reported no interval in the range", o->job);
	return n ? EXIT_OK : EXIT_CANNOT;
}

int query_main(int argc, char **argv)
{
	struct query_opts o;
	struct json_writer w;
	struct store *s;
	char err[512], help[4096];
	int rc = query_parse(argc, argv, now_rt_ns(), &o, err, sizeof(err));

	if (rc == 1) {
		query_usage(help, sizeof(help));
		fputs(help, stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-host query --help')", err);
		return EXIT_USAGE;
	}
	log_set_verbosity(o.quiet ? -1 : o.verbose);
	s = store_open(o.store, 1, err, sizeof(err));
	if (!s) {
		log_err("store %s", err);
		return errno == EBADMSG || errno == EPROTO ? EXIT_DAMAGED : EXIT_FAIL;
	}
	if (o.json)
		json_init(&w, stdout, 0);
	if (o.what == QUERY_RANKING)
		rc = ranking(store_db(s), &o, stdout, &w);
	else if (o.what == QUERY_TIMELINE)
		rc = timeline(store_db(s), &o, stdout, &w);
	else
		rc = causes(store_db(s), &o, stdout, &w);
	if (o.json && json_finish(&w) && rc == EXIT_OK)
		rc = EXIT_FAIL;
	if (!o.json && (fflush(stdout) || ferror(stdout)) && rc == EXIT_OK)
		rc = EXIT_FAIL;
	store_close(s);
	return rc;
}
