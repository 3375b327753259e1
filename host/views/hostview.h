/* SPDX-License-Identifier: MIT */
/*
 * hostview: vnoise-host's views over one hostagg engine — the ops that every view implements, the walk that
 * shows one (hostview_show), the host views: the text table (summary and top refresh) and the JSON document
 * "vnoise.host/1" (README.md documents the schema), and a view as a sink of the live engine. Data goes to the
 * given stream; the views never change the engine. Text views fit HOSTVIEW_WIDTH columns (lists wrap onto
 * their own lines) unless --wide.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTVIEW_H
#define VNOISE_HOST_VIEWS_HOSTVIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "engine/hostagg.h"
#include "engine/hostinfo.h"

#define HOSTVIEW_WIDTH 80 /* columns of the text views without --wide */
struct json_writer;

/* One showing of a view: what the ops below get (set up by hostview_show). */
struct hostview_ctx {
	FILE *f;
	const struct hostagg *a;
	const struct hostinfo *in;
	struct json_writer *w; /* JSON views: the document's writer; NULL for text views */
	int top; /* entries per list (in->top_n, capped) */
	int width; /* text views: HOSTVIEW_WIDTH, 0 with --wide (no wrapping) */
	uint32_t ndom; /* domains shown so far */
};

/*
 * A view as small ops over the one engine (rtla's top/hist style): chosen once from the command line
 * (hostview_pick), shown by hostview_show at every top refresh, at the end of a record and by report. The
 * walk is common: a JSON view is one object whose run-wide members head writes, then the array "domains"
 * with one object per domain; a text view is head's lines, then each domain's, or "no domain monitored".
 */
struct hostview_ops {
	bool
	    json; /* one JSON document per showing (a JSON line per top refresh); else a text table */
	bool needs_match; /* shows the combined guest + host data (records made with --guest) */
	void (*head)(struct hostview_ctx *c); /* run-wide part before the domains */
	void (*domain)(struct hostview_ctx *c, const struct hostagg_domain *d); /* each bound one */
};

/* The host views (vnoise.host/1 for JSON); matchview.h has the combined ones. */
extern const struct hostview_ops hostview_text_ops, hostview_json_ops;

/* The view for the combined guest + host data (--guest) or the host's, as JSON or as text. */
const struct hostview_ops *hostview_pick(bool guest, bool json);

/* Show view ops of engine a to f. Returns 0 or -errno from the JSON writer (text views: 0). */
int hostview_show(const struct hostview_ops *ops, FILE *f, const struct hostagg *a,
		  const struct hostinfo *in);

struct live;
struct host_params;

/* What the view sink shows: each period's aggregate (top's lines, serve --json; a text view clears the
 * terminal first unless --batch or stdout is not one), the whole run's at its end (record's summary). */
#define HOSTVIEW_SINK_PERIODS 1u
#define HOSTVIEW_SINK_SUMMARY 2u

/* The view of p (hostview_pick(p->guest, p->json)) on stdout as a sink of the live engine; what it shows is
 * flags (HOSTVIEW_SINK_*). hostview_sink_new gives the sink's context (free with free()) for a sink that
 * shows through it (top's screen falling back to lines: hostview_sink_ops.period); hostview_sink_add adds a
 * new one to lv. NULL / -ENOMEM, -ENOSPC. */
void *hostview_sink_new(const struct host_params *p, unsigned flags)
    __attribute__((warn_unused_result));
int hostview_sink_add(struct live *lv, const struct host_params *p, unsigned flags)
    __attribute__((warn_unused_result));
extern const struct live_sink_ops hostview_sink_ops;

/* --flows: a domain's capture and top flows (nothing when it has no flow data), as text lines and as the
 * JSON keys "capture" and "flows" inside the domain's object; shared with the --guest view. */
void hostview_flows_text(FILE *f, const struct hostagg_domain *d, const struct hostinfo *in);
void hostview_flows_json(struct json_writer *w, const struct hostagg_domain *d,
			 const struct hostinfo *in);
/* The domain's DTL publisher as the JSON key "dtl" ({"state","detail","published","dropped"}); nothing when
 * it has none (no channel, a record file). Shared with the --guest view. */
void hostview_dtl_json(struct json_writer *w, const struct hostagg_domain *d,
		       const struct hostinfo *in);
/* Start a JSON document on w with the run-wide head fields (schema, version, source, start/end/duration,
 * period). */
void hostview_json_head(struct json_writer *w, const char *schema, const struct hostinfo *in);

/*
 * A list of items after a label ("    preemptors: a 1%, b 2%"), wrapped before column width (0: never) with
 * continuation lines indented by indent spaces; shared by the host and the combined text views.
 */
struct hostview_list {
	FILE *f;
	int width, indent;
	int col; /* the current column */
	int n; /* items so far */
};
void hostview_list_begin(struct hostview_list *l, FILE *f, int width, int indent,
			 const char *label);
void hostview_list_item(struct hostview_list *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* End the line; a list without items shows empty ("-"; NULL: nothing). */
void hostview_list_end(struct hostview_list *l, const char *empty);

/* An aggregate entry's kind ("irq", "softirq", "vector", "exit") and its name as the JSON view gives it
 * ("24:virtio0-input", "NET_RX", "LOC", "HLT", "VMX_99"); shared by every host view and the exporter. */
const char *hostview_agg_kind(uint16_t kind);
void hostview_agg_name(const struct hostagg *a, const struct hostagg_aggent *e, char *buf,
		       size_t len);

/*
 * vCPU v's out-time split (hostagg_out_split) as one line, shares of span_ns, naming up to top preemptors:
 * "out 34.3% = preempted 30.1 (vnhog[812] 27.0, kworker/0:1[9] 3.1) + waiting 1.2 + halted 0 + exits 2.5 +
 * irq 0.5". hostview_steal_line: how steal% relates to it: "steal 30.9% = the guest's steal clock: the
 * scheduler's count of preempted + waiting (31.3% in the dispatch log); halted, exits and irq are not in it".
 * Shared by the text views and top's detail pane.
 */
void hostview_out_line(const struct hostagg_vcpu *v, uint64_t span_ns, int top, char *buf,
		       size_t len);
void hostview_steal_line(const struct hostagg_vcpu *v, uint64_t span_ns, char *buf, size_t len);

/* Is host thread tid one of vnoise-host's own (in->self_tids)? Is comm a vnoise thread's name? */
bool hostview_is_self(const struct hostinfo *in, uint32_t tid);
bool hostview_is_vnoise_comm(const char *comm);

#endif
