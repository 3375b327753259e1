/* SPDX-License-Identifier: MIT */
/*
 * hostrec: vnoise-host's record-file writer (a live sink) and the `report` command (see hostrec.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/exitcode.h"
#include "engine/live.h"
#include "format/recwriter.h"
#include "format/htmlplot.h"
#include "views/hostgaps.h"
#include "views/hosthtml.h"
#include "views/hostrec.h"
#include "engine/hostbind.h"
#include "util/log.h"
#include "util/outfile.h"
#include "util/parse.h"

/* irq.<n>=<name> lines of a HOST_META chunk. */
static void apply_irq_names(struct hostagg *a, const void *payload, size_t len)
{
	const char *pos = payload, *end = (const char *)payload + len;
	struct recfile_kv kv;

	while (recfile_kv_next(&pos, end, &kv) == 1) {
		char num[16], name[32];
		uint64_t irq;

		if (kv.key_len < 5 || kv.key_len - 4 >= sizeof(num) || memcmp(kv.key, "irq.", 4))
			continue;
		memcpy(num, kv.key + 4, kv.key_len - 4);
		num[kv.key_len - 4] = 0;
		if (parse_u64(num, &irq) || irq > UINT32_MAX || !kv.val_len)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)kv.val_len, kv.val);
		(void)hostagg_set_irq_name(a, (uint32_t)irq, name);
	}
}

/* A report in progress: the engine, the run's facts for the views, and what was wrong with the file. */
struct replay {
	const char *path;
	struct hostagg *a;
	struct hostinfo in;
	struct hostinfo_dtl dtl[VN_HOST_MAX_DOMAINS]; /* in.dtl: the last STATS chunk's */
	struct hosthtml *html; /* --html: the page's collector, fed every chunk (NULL without) */
	uint64_t html_dropped; /* records the page had no room for */
	struct hostgaps *gaps; /* --gaps: the HOST_MGAP records (NULL without) */
	int gaps_err; /* --gaps: out of memory */
	uint64_t bad; /* malformed host chunks */
	uint64_t chunks; /* intact chunks read */
	bool host_file; /* a HOST_META chunk was seen */
	bool guest_file; /* a (guest) META chunk: the file is vnoise-guest's */
	bool damaged, truncated;
};

/* HOST_META: the run's settings and the names of host IRQs. */
static void take_meta(struct replay *rp, const struct recfile_chunk *ch)
{
	char mode[16];
	uint64_t v;

	rp->host_file = true;
	if (hostbind_kv_u64(ch->payload, ch->len, "period_ns", &v))
		rp->in.period_ns = v;
	if (hostbind_kv_str(ch->payload, ch->len, "dispatch", mode, sizeof(mode)))
		rp->in.dispatch = strcmp(mode, "bpf") ? "off" : "bpf";
	if (hostbind_kv_u64(ch->payload, ch->len, "irqs", &v))
		rp->in.irqs = v != 0;
	if (hostbind_kv_u64(ch->payload, ch->len, "kvm", &v))
		rp->in.kvm = v != 0;
	if (hostbind_kv_u64(ch->payload, ch->len, "start_ns", &v))
		rp->in.start_ns = rp->in.end_ns = v;
	/* its main thread until a STATS chunk lists them all */
	if (hostbind_kv_u64(ch->payload, ch->len, "self_pid", &v) && v && v <= UINT32_MAX &&
	    !rp->in.nself) {
		rp->in.self_tids[0] = (uint32_t)v;
		rp->in.nself = 1;
	}
	apply_irq_names(rp->a, ch->payload, ch->len);
}

/* self_tids=1,2,3 (STATS, END): the recording vnoise-host's threads, labelled "(vnoise)" by the views. */
static void take_self_tids(struct replay *rp, const struct recfile_chunk *ch)
{
	char list[HOSTINFO_MAX_SELF * 11 + 1], *tok, *save = NULL;
	uint64_t v;

	if (!hostbind_kv_str(ch->payload, ch->len, "self_tids", list, sizeof(list)))
		return;
	rp->in.nself = 0;
	for (tok = strtok_r(list, ",", &save); tok && rp->in.nself < HOSTINFO_MAX_SELF;
	     tok = strtok_r(NULL, ",", &save))
		if (!parse_u64(tok, &v) && v && v <= UINT32_MAX)
			rp->in.self_tids[rp->in.nself++] = (uint32_t)v;
}

/* A key's value as a string in line (cap bytes); false if it does not fit. */
static bool kv_line(const char *val, size_t len, char *line, size_t cap)
{
	if (len >= cap)
		return false;
	memcpy(line, val, len);
	line[len] = 0;
	return true;
}

/* One "dtl.K=STATE DETAIL PUBLISHED DROPPED NAME" value into x; false if malformed. */
static bool parse_dtl(const char *val, size_t len, struct hostinfo_dtl *x)
{
	static const char *const states[] = {
		"on",	"v1-agent", "other-publisher", "failed",
		"lost", "refused", /* the region file was not mapped (live.c's fill_dtl) */
	};
	char line[256], state[24], detail[8];
	unsigned long long pub, drop;
	int name_at = 0;

	if (!kv_line(val, len, line, sizeof(line)))
		return false;
	if (sscanf(line, "%23s %7s %llu %llu %n", state, detail, &pub, &drop, &name_at) != 4 ||
	    !name_at || !line[name_at])
		return false;
	x->state = "?";
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(state, states[i]))
			x->state = states[i];
	x->detail = !strcmp(detail, "task") ? "task" : "class";
	x->published = pub;
	x->dropped = drop;
	snprintf(x->name, sizeof(x->name), "%s", line + name_at);
	return true;
}

/* One "bell.K=STATE RINGS ARMS NAME" value onto the DTL entry of the same domain; false if malformed. */
static bool parse_bell(struct replay *rp, const char *val, size_t len)
{
	static const char *const states[] = { "none", "unconnected", "silent", "heard" };
	char line[256], state[16];
	unsigned long long rings, arms;
	int name_at = 0;

	if (!kv_line(val, len, line, sizeof(line)))
		return false;
	if (sscanf(line, "%15s %llu %llu %n", state, &rings, &arms, &name_at) != 3 || !name_at ||
	    !line[name_at])
		return false;
	for (int i = 0; i < rp->in.ndtl; i++) {
		struct hostinfo_dtl *x = &rp->dtl[i];

		if (strcmp(x->name, line + name_at))
			continue;
		x->bell = "?";
		for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++)
			if (!strcmp(state, states[k]))
				x->bell = states[k];
		x->bell_rings = rings;
		x->bell_arms = arms;
		return true;
	}
	return false;
}

/* One "region.K=STATE REFUSED LOST NAMELEN NAME[ WHY]" value onto the DTL entry of the same domain. */
static bool parse_region(struct replay *rp, const char *val, size_t len)
{
	static const char *const states[] = { "mapped", "lost", "refused" };
	char line[384], state[16];
	unsigned long long refused, lost;
	size_t nlen;
	int at = 0;

	if (!kv_line(val, len, line, sizeof(line)))
		return false;
	if (sscanf(line, "%15s %llu %llu %zu %n", state, &refused, &lost, &nlen, &at) != 4 || !at ||
	    !nlen || nlen > strlen(line + at))
		return false;
	for (int i = 0; i < rp->in.ndtl; i++) {
		struct hostinfo_dtl *x = &rp->dtl[i];
		const char *why = line + at + nlen;

		if (strlen(x->name) != nlen || memcmp(x->name, line + at, nlen))
			continue;
		x->region = "?";
		for (size_t k = 0; k < sizeof(states) / sizeof(states[0]); k++)
			if (!strcmp(state, states[k]))
				x->region = states[k];
		x->region_refused = refused;
		x->region_lost = lost;
		snprintf(x->region_why, sizeof(x->region_why), "%s", *why == ' ' ? why + 1 : "");
		return true;
	}
	return false;
}

/*
 * dtl.K lines (STATS, END): the domains' DTL publishers at that time, for the views' "dtl" keys; then the
 * bell.K lines of --guest (the "bell" keys) and the region.K lines (the "region" keys).
 */
static void take_dtl(struct replay *rp, const struct recfile_chunk *ch)
{
	const char *pos = ch->payload, *end = (const char *)ch->payload + ch->len;
	struct recfile_kv kv;

	rp->in.dtl = rp->dtl;
	rp->in.ndtl = 0;
	while (recfile_kv_next(&pos, end, &kv) == 1 && rp->in.ndtl < (int)VN_HOST_MAX_DOMAINS)
		if (kv.key_len > 4 && !memcmp(kv.key, "dtl.", 4) &&
		    parse_dtl(kv.val, kv.val_len, &rp->dtl[rp->in.ndtl])) {
			rp->dtl[rp->in.ndtl].bell = NULL;
			rp->dtl[rp->in.ndtl].region = NULL;
			rp->dtl[rp->in.ndtl].region_why[0] = 0;
			rp->in.ndtl++;
		}
	pos = ch->payload;
	while (recfile_kv_next(&pos, end, &kv) == 1)
		if (kv.key_len > 5 && !memcmp(kv.key, "bell.", 5))
			(void)parse_bell(rp, kv.val, kv.val_len);
		else if (kv.key_len > 7 && !memcmp(kv.key, "region.", 7))
			(void)parse_region(rp, kv.val, kv.val_len);
}

/* STATS and END: the run's loss and overhead counters so far (the last one wins). */
static void take_stats(struct replay *rp, const struct recfile_chunk *ch)
{
	uint64_t v;

	take_self_tids(rp, ch);
	take_dtl(rp, ch);
	/* the time of the chunk: a file without periods (no domain) or cut short still ends there */
	if (hostbind_kv_u64(ch->payload, ch->len, "end_ns", &v) && v > rp->in.end_ns &&
	    v >= rp->in.start_ns)
		rp->in.end_ns = v;
	if (hostbind_kv_u64(ch->payload, ch->len, "dispatch_dropped", &v))
		rp->in.schedlog_drops = v;
	if (hostbind_kv_u64(ch->payload, ch->len, "dispatch_anomalies", &v))
		rp->in.schedlog_anomalies = v;
	if (hostbind_kv_u64(ch->payload, ch->len, "events_dropped", &v))
		rp->in.events_dropped = v;
	if (hostbind_kv_u64(ch->payload, ch->len, "reconnects", &v))
		rp->in.reconnects = (uint32_t)v;
	if (hostbind_kv_u64(ch->payload, ch->len, "rounds", &v))
		rp->in.rounds = v;
	if (hostbind_kv_u64(ch->payload, ch->len, "bpf_events", &v))
		rp->in.bpf_events = v;
	if (hostbind_kv_u64(ch->payload, ch->len, "bpf_run_ns", &v))
		rp->in.bpf_run_ns = v;
}

/* The run's end: the latest period end of a HOST_PERIOD chunk. */
static void take_period_end(struct replay *rp, const struct recfile_chunk *ch)
{
	struct vn_host_period last;

	if (ch->len < sizeof(last))
		return;
	memcpy(&last, (const char *)ch->payload + ch->len - sizeof(last), sizeof(last));
	if (last.end_ns > rp->in.end_ns)
		rp->in.end_ns = last.end_ns;
}

static void take_chunk(struct replay *rp, const struct recfile_chunk *ch)
{
	rp->chunks++;
	if (rp->html && hosthtml_chunk(rp->html, ch->type, ch->payload, ch->len))
		rp->html_dropped++;
	switch (ch->type) {
	case VN_CHUNK_HOST_META:
		take_meta(rp, ch);
		break;
	case VN_CHUNK_META:
		rp->guest_file = true;
		break;
	case VN_CHUNK_HOST_MGAP: {
		int err = rp->gaps ? hostgaps_chunk(rp->gaps, ch->payload, ch->len) : 0;

		if (err == -EINVAL)
			rp->bad++;
		else if (err)
			rp->gaps_err = 1;
		break;
	}
	case VN_CHUNK_HOST_DOMAIN:
		if (hostbind_apply(rp->a, ch->payload, ch->len))
			rp->bad++;
		break;
	case VN_CHUNK_STATS:
	case VN_CHUNK_END:
		take_stats(rp, ch);
		break;
	default:
		/* record arrays through the engine's one chunk table; guest chunks and future types
		 * are not host records and are passed over */
		if (hostagg_feed_chunk(rp->a, ch->type, ch->payload, ch->len) < 0)
			rp->bad++;
		if (ch->type == VN_CHUNK_HOST_PERIOD)
			take_period_end(rp, ch);
		break;
	}
}

/* Read the whole file into the engine. Returns EXIT_OK, or the exit code of a file that cannot be read on. */
static int read_file(struct replay *rp, struct recfile_reader *r)
{
	struct recfile_chunk ch;
	int rc;

	for (;;) {
		rc = recreader_next(r, &ch);
		if (rc == 0)
			return EXIT_OK;
		if (rc > 0) {
			take_chunk(rp, &ch);
			continue;
		}
		if (recreader_recoverable(rc)) {
			log_warn("%s: %s (skipped)", rp->path, recreader_error(r));
			rp->damaged = true;
			continue;
		}
		if (rc == -ENODATA) {
			log_warn("%s: %s", rp->path, recreader_error(r));
			rp->truncated = true;
			return EXIT_OK;
		}
		log_err("%s: %s", rp->path, recreader_error(r));
		return rc == -EPROTO || rc == -EPROTONOSUPPORT ? EXIT_DAMAGED : EXIT_FAIL;
	}
}

/* After reading: say what was wrong; EXIT_OK if the view can be shown, else the exit code. */
static int check_file(struct replay *rp, const struct hostview_ops *view)
{
	if (!rp->host_file && rp->truncated && !rp->chunks) {
		log_err("%s: cut before its first chunk (the recording was stopped as it began): "
			"nothing to report",
			rp->path);
		return EXIT_DAMAGED;
	}
	if (!rp->host_file && rp->guest_file) {
		log_err("%s: a vnoise-guest record file (a guest's view): read it with "
			"'vnoise-guest report %s'",
			rp->path, rp->path);
		return EXIT_DAMAGED;
	}
	if (!rp->host_file) {
		log_err("%s: not a vnoise-host record file (no HOST_META chunk)", rp->path);
		return EXIT_DAMAGED;
	}
	if (rp->bad) {
		log_warn("%s: %" PRIu64 " malformed host chunks skipped", rp->path, rp->bad);
		rp->damaged = true;
	}
	if (rp->a->bad_records)
		log_warn("%s: %" PRIu64 " records named an unknown domain or vCPU", rp->path,
			 rp->a->bad_records);
	if (view->needs_match && !hostagg_has_match(rp->a)) {
		log_err("%s: no combined guest + host data (recorded without --guest)", rp->path);
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

/* --html: the page into path. EXIT_OK, or EXIT_FAIL said in one line. */
static int write_html(struct replay *rp, const struct host_params *p)
{
	const char *partial = rp->truncated ? "the file ends early (truncated); the last period is "
					      "incomplete"
			      : rp->damaged
				  ? "damaged chunks were skipped; their periods are incomplete"
				  : NULL;
	int err;

	if (rp->html_dropped)
		log_warn("%s: %" PRIu64 " chunks only partly on the HTML page (out of memory)",
			 rp->path, rp->html_dropped);
	err = hosthtml_write(rp->html, rp->a, &rp->in, p->guest, partial, p->html);
	if (!err)
		return EXIT_OK;
	log_err("report: cannot write '%s': %s", p->html, outfile_strerror(err));
	return outfile_exit_code(err);
}

/* --gaps: the lines on stdout. EXIT_OK; EXIT_CANNOT when the file holds no matched gap; EXIT_FAIL, said in
 * one line. */
static int write_gaps(struct replay *rp)
{
	long n;

	if (rp->gaps_err) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	if (hostgaps_bad(rp->gaps)) {
		log_warn("%s: %" PRIu64 " gap records whose parts do not add up skipped", rp->path,
			 hostgaps_bad(rp->gaps));
		rp->damaged = true;
	}
	if (hostgaps_domains(rp->gaps) > 1)
		log_warn("%s: gaps of %u domains: those of the first recorded are printed",
			 rp->path, hostgaps_domains(rp->gaps));
	n = hostgaps_write(rp->gaps, stdout);
	if (n > 0)
		return EXIT_OK;
	if (n < 0) {
		log_err("report: cannot write the gaps: %s", strerror((int)-n));
		return EXIT_FAIL;
	}
	log_err("%s: no matched guest gaps: %s", rp->path,
		hostagg_has_match(rp->a) ? "the guest's agent measured none that were matched"
					 : "recorded without --guest");
	return EXIT_CANNOT;
}

int hostrec_report(const struct host_params *p)
{
	const struct hostview_ops *view = hostview_pick(p->guest, p->json);
	struct replay rp = {
		.path = p->input,
		.in = { .source = p->input,
			.dispatch = "?",
			.top_n = p->top_n,
			.flows_top = p->flows_top,
			.wide = p->wide },
	};
	struct recfile_reader *r;
	int ret = EXIT_FAIL;

	if (p->html && htmlplot_same_file(p->input, p->html)) {
		log_err("report: --html '%s' is the record file itself (see 'vnoise-host report "
			"--help')",
			p->html);
		return EXIT_USAGE;
	}
	rp.a = hostagg_new();
	rp.html = p->html ? hosthtml_new() : NULL;
	rp.gaps = p->gaps ? hostgaps_new() : NULL;
	r = recreader_open(p->input);
	if (!rp.a || !r || (p->html && !rp.html) || (p->gaps && !rp.gaps)) {
		log_err("cannot read %s: %s", p->input, strerror(errno));
		goto out;
	}
	ret = read_file(&rp, r);
	if (!ret)
		ret = check_file(&rp, view);
	if (ret)
		goto out;
	if (p->html) {
		ret = write_html(&rp, p);
		if (ret)
			goto out;
	} else if (p->gaps) {
		ret = write_gaps(&rp);
		if (ret)
			goto out;
	} else if (hostview_show(view, stdout, rp.a, &rp.in)) {
		log_err("cannot write the report");
		ret = EXIT_FAIL;
		goto out;
	}
	ret = rp.damaged || rp.truncated ? EXIT_DAMAGED : EXIT_OK;
out:
	recreader_close(r);
	hosthtml_free(rp.html);
	hostgaps_free(rp.gaps);
	hostagg_free(rp.a);
	return ret;
}

/* ---- record -o FILE: the writer, a sink of the live engine ---- */

struct recsink {
	const char *path;
	struct recfile_writer *w;
	int err; /* the first write error */
};

/* One chunk; after an error the writer refuses at once, and counts what it refused (said at the end). */
static void rec_chunk(struct recsink *r, uint16_t type, const void *pl, size_t len)
{
	int rc;

	if (!r->w)
		return;
	rc = recwriter_chunk(r->w, type, pl, (uint32_t)len);
	if (rc && !r->err) {
		r->err = rc;
		log_err("%s: %s: recording stops here", r->path, strerror(-rc));
	}
}

static int rec_open(void *ctx, const char *meta, size_t len)
{
	struct recsink *r = ctx;

	r->w = recwriter_open(r->path);
	if (!r->w) {
		int err = errno;

		log_err("cannot create %s: %s", r->path, outfile_strerror(-err));
		return outfile_exit_code(-err);
	}
	rec_chunk(r, VN_CHUNK_HOST_META, meta, len);
	return r->err ? outfile_exit_code(r->err) : EXIT_OK;
}

/* The END chunk closes the file. */
static void rec_end_chunk(struct recsink *r, const char *end_text)
{
	int rc;

	if (!r->w)
		return;
	if (r->err) /* the END chunk is refused too */
		log_warn("%s: %" PRIu64
			 " chunks (periods, statistics, the end marker) were not recorded "
			 "after the error; the summary covers the whole run",
			 r->path, recwriter_lost(r->w) + 1);
	rc = recwriter_close(r->w, end_text);
	r->w = NULL;
	if (rc && !r->err) {
		r->err = rc;
		log_err("%s: %s while closing it", r->path, strerror(-rc));
	}
}

static void rec_sink_chunk(void *ctx, uint16_t type, const void *payload, size_t len)
{
	if (type == VN_CHUNK_END)
		rec_end_chunk(ctx, payload);
	else
		rec_chunk(ctx, type, payload, len);
}

static int rec_sink_end(void *ctx, const struct hostagg *total, const struct hostinfo *in)
{
	struct recsink *r = ctx;

	(void)total;
	(void)in;
	return r->err ? outfile_exit_code(r->err) : EXIT_OK;
}

static void rec_sink_close(void *ctx)
{
	struct recsink *r = ctx;

	if (r->w)
		recwriter_abort(r->w);
	free(r);
}

static const struct live_sink_ops rec_sink_ops = {
	.name = "record",
	.open = rec_open,
	.chunk = rec_sink_chunk,
	.end = rec_sink_end,
	.close = rec_sink_close,
};

int hostrec_sink_add(struct live *lv, const char *path)
{
	struct recsink *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	r->path = path;
	return live_add_sink(lv, &rec_sink_ops, r);
}
