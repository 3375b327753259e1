/* SPDX-License-Identifier: MIT */
/*
 * hostview: vnoise-host's views over one hostagg engine — the ops that every view implements, the walk that
 * shows one (hostview_show), and the host views: the text table (summary and top refresh) and the JSON
 * document "vnoise.host/1" (README.md documents the schema). Data goes to the given stream; the views never
 * change the engine. Text views fit HOSTVIEW_WIDTH columns (lists wrap onto their own lines) unless --wide.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTVIEW_H
#define VNOISE_HOST_VIEWS_HOSTVIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "engine/hostagg.h"

#define HOSTVIEW_WIDTH 80 /* columns of the text views without --wide */
#define HOSTVIEW_MAX_SELF 64 /* vnoise-host threads recognised in the lists */

/* Run-wide facts printed with every view. */
/* One domain's dispatch trace log publisher (live runs only), shown as the JSON key "dtl". */
struct hostview_dtl {
	char name[128]; /* the domain */
	const char *state; /* "on", "v1-agent", "other-publisher", "failed" */
	const char *detail; /* "class" or "task" */
	uint64_t published, dropped; /* entries, intervals not published */
	/* --guest: the bell (JSON key "bell"; NULL: not shown): "none", "unconnected", "silent", "heard" */
	const char *bell;
	uint64_t bell_rings, bell_arms;
};

struct hostview_info {
	const char *source; /* "live" or the record file name */
	uint64_t start_ns, end_ns; /* host CLOCK_MONOTONIC span covered */
	uint64_t period_ns;
	const char *dispatch; /* "bpf", "off" */
	int irqs; /* host IRQ accounting on */
	int kvm; /* VM-exit tracing attached */
	uint64_t schedlog_drops; /* records lost between kernel and user space */
	uint64_t schedlog_anomalies; /* inconsistent switch sequences repaired */
	uint64_t events_dropped; /* libvirt lifecycle events lost */
	uint32_t reconnects; /* libvirtd connections re-established */
	uint64_t bpf_events; /* dispatch program runs */
	uint64_t bpf_run_ns; /* their total run time (0 if statistics are off) */
	int top_n;
	int flows_top; /* flows listed per domain and direction (--flows) */
	uint64_t
	    self_cpu_ns; /* vnoise-host's own CPU time (user + system, all threads; live only) */
	uint64_t rounds; /* the monitor's rounds (wake-ups) so far (live only; 0: not shown) */
	/* per-program BPF statistics (live only; nprogs 0 from a file) */
	int nprogs;
	const char (*prog_names)[40];
	const uint64_t *prog_cnt, *prog_ns;
	int wide; /* --wide: text rows as wide as they need, lists on one line */
	/* vnoise-host's own thread ids (the recording process's, for a file): labelled "(vnoise)" */
	int nself;
	uint32_t self_tids[HOSTVIEW_MAX_SELF];
	/* the domains' DTL publishers (live only; ndtl 0 from a file) */
	const struct hostview_dtl *dtl;
	int ndtl;
};

struct json_writer;

/* One showing of a view: what the ops below get (set up by hostview_show). */
struct hostview_ctx {
	FILE *f;
	const struct hostagg *a;
	const struct hostview_info *in;
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
		  const struct hostview_info *in);

/* --flows: a domain's capture and top flows (nothing when it has no flow data), as text lines and as the
 * JSON keys "capture" and "flows" inside the domain's object; shared with the --guest view. */
void hostview_flows_text(FILE *f, const struct hostagg_domain *d, const struct hostview_info *in);
void hostview_flows_json(struct json_writer *w, const struct hostagg_domain *d,
			 const struct hostview_info *in);
/* The domain's DTL publisher as the JSON key "dtl" ({"state","detail","published","dropped"}); nothing when
 * it has none (no channel, a record file). Shared with the --guest view. */
void hostview_dtl_json(struct json_writer *w, const struct hostagg_domain *d,
		       const struct hostview_info *in);
/* Start a JSON document on w with the run-wide head fields (schema, version, source, start/end/duration,
 * period). */
void hostview_json_head(struct json_writer *w, const char *schema, const struct hostview_info *in);

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

/* Is host thread tid one of vnoise-host's own (in->self_tids)? Is comm a vnoise thread's name? */
bool hostview_is_self(const struct hostview_info *in, uint32_t tid);
bool hostview_is_vnoise_comm(const char *comm);

/* vnoise-host's own thread ids (/proc/self/task) into tids (at most max); returns how many. */
int hostview_self_tids(uint32_t *tids, int max);

#endif
