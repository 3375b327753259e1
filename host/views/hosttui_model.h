/* SPDX-License-Identifier: MIT */
/*
 * hosttui_model: what the interactive screen of `vnoise-host top` shows, without a terminal (so that it is
 * unit-tested): one row per domain and per vCPU built from each period's hostagg (shares of the period in
 * %, rates per second, the top preemptor, a detail pane per vCPU), a history of the last HOSTTUI_HISTORY
 * periods per row for its sparkline, the visible order (filter by domain name, expanded domains, sort by any
 * column), the layout of the columns in a given width (columns dropped, never wrapped), and the readable
 * units. hosttui.c draws it with ncurses. One thread.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTTUI_MODEL_H
#define VNOISE_HOST_VIEWS_HOSTTUI_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "engine/hostagg.h"
#include "views/hostview.h"
#include "util/termcell.h"

#ifndef HOSTTUI_HISTORY
#define HOSTTUI_HISTORY 60 /* periods in each row's sparkline (as hosttui.h) */
#endif
#define HOSTTUI_DETAIL_N 5 /* entries per list of the detail pane */
#define HOSTTUI_FILTER_LEN 64
#define HOSTTUI_SPARK_MIN 8 /* narrowest sparkline shown */

/* The columns, in screen order. The sparkline shows the history of preempted%. */
enum hosttui_col {
	HOSTTUI_COL_NAME, /* domain name, or "  vCPU N" under it */
	HOSTTUI_COL_STEAL, /* steal% (libvirt vcpu.N.delay: runnable, not running) */
	HOSTTUI_COL_OUT, /* out%: switched out, for any reason (idle guest halts included) */
	HOSTTUI_COL_PREEMPT, /* preempted%: runnable while another host task ran (the noise) */
	HOSTTUI_COL_TOP, /* the host task that ran longest while the vCPU was out */
	HOSTTUI_COL_EXITS, /* VM exits per second */
	HOSTTUI_COL_HIRQ, /* host hardirq + softirq time while the vCPU ran, % */
	HOSTTUI_COL_GUEST, /* --guest: the guest's own noise (matched gaps, guest classes) % */
	HOSTTUI_COL_HYP, /* --guest: hypervisor % */
	HOSTTUI_COL_HW, /* --guest: residual ("hw": neither side explains it) % */
	HOSTTUI_COL_SPARK, /* preempted% over the last periods */
	HOSTTUI_NCOLS
};

/* One entry of a detail-pane list: a name and up to two figures (their meaning depends on the list). */
struct hosttui_item {
	char name[56];
	double a, b;
};

/* The detail pane of a vCPU over the last period. */
struct hosttui_detail {
	int npre, nexit, nirq, nhyp, nguest;
	struct hosttui_item pre[HOSTTUI_DETAIL_N]; /* comm[pid]: % of out-time, % of the period */
	struct hosttui_item exit[HOSTTUI_DETAIL_N]; /* reason: per s, average us */
	struct hosttui_item
	    irq[HOSTTUI_DETAIL_N]; /* host irq/softirq/vector: per s, % of the period */
	struct hosttui_item hyp[HOSTTUI_DETAIL_N]; /* --guest hypervisor sources: %, gaps */
	struct hosttui_item guest[HOSTTUI_DETAIL_N]; /* --guest guest sources: %, gaps */
	double idle_pct; /* of out-time: the pCPU it left was idle */
	char out_line[256]; /* the out-time split: hostview_out_line() */
	char steal_line[256]; /* how steal% relates to it: hostview_steal_line() */
	uint32_t tid, cpu; /* host thread, latest pCPU (~0u unknown) */
	char note[96]; /* why a list is empty ("TCG domain: no VM exits") */
};

struct hosttui_row {
	bool is_vcpu;
	bool running; /* the domain is running (stopped ones stay, marked) */
	bool expanded; /* domain rows: its vCPU rows are shown */
	bool has_guest; /* --guest data in the last period */
	bool seen; /* data in the last period */
	char name[HOSTAGG_NAME_LEN]; /* the domain's name (vCPU rows too) */
	char uuid[40];
	uint32_t vcpu; /* vCPU rows */
	uint32_t nvcpus; /* domain rows */
	double val[HOSTTUI_NCOLS]; /* numeric columns (NAME, TOP, SPARK unused) */
	char top[40]; /* "comm[pid]" or "-" */
	float hist[HOSTTUI_HISTORY]; /* preempted% per period, oldest first; < 0: no data */
	struct hosttui_detail *det; /* vCPU rows: owned */
};

struct hosttui_model {
	struct hosttui_row *rows; /* owned */
	size_t n, cap;
	uint64_t periods; /* updates so far */
};

/* What is shown and how: the user's choices (keys). */
struct hosttui_view {
	int sort; /* enum hosttui_col */
	bool reverse;
	bool guest; /* the --guest columns */
	char filter[HOSTTUI_FILTER_LEN]; /* domain-name substring, case-insensitive; "" all */
};

/* One column on screen. */
struct hosttui_colpos {
	int col; /* enum hosttui_col */
	int x, w;
};

/* The model starts empty (zeroed); hosttui_model_free releases rows and details (the struct stays). */
void hosttui_model_free(struct hosttui_model *m);

/*
 * One period ended: cur is its aggregate over [in->start_ns, in->end_ns). Rows are created for new domains
 * and vCPUs, keyed by UUID and vCPU number; every row's history moves by one period. Returns 0 or -ENOMEM
 * (rows that could not be created are missing from this period).
 */
int hosttui_model_update(struct hosttui_model *m, const struct hostagg *cur,
			 const struct hostinfo *in) __attribute__((warn_unused_result));

/* A deep copy of src into dst (dst freed first): the frozen screen of a pause. Returns 0 or -ENOMEM. */
int hosttui_model_copy(struct hosttui_model *dst, const struct hosttui_model *src)
    __attribute__((warn_unused_result));

/* Set or flip (on < 0) the expanded state of the domain uuid (NULL: every domain). */
void hosttui_model_expand(struct hosttui_model *m, const char *uuid, int on);

/*
 * The visible rows in screen order into idx (at most max): domains that pass the filter, sorted by
 * v->sort (numbers largest first, names A-Z; v->reverse inverts; ties by name and vCPU number), each
 * followed by its vCPU rows in the same order when it is expanded. Returns how many.
 */
size_t hosttui_model_order(const struct hosttui_model *m, const struct hosttui_view *v, size_t *idx,
			   size_t max);

/* Does domain name pass filter (case-insensitive substring; "" passes everything)? */
bool hosttui_filter_match(const char *name, const char *filter);

/* The column's header ("steal%", ...) and a one-line description for the help. */
const char *hosttui_col_name(int col);
const char *hosttui_col_help(int col);

/*
 * Place the columns in width screen cells (guest: the --guest columns too): what is left goes to the
 * name (up to 24), the top preemptor (18), the sparkline (up to HOSTTUI_HISTORY), then the top preemptor
 * (22); columns of least importance are
 * dropped first (sparkline below HOSTTUI_SPARK_MIN, hw%, host IRQ%, out%, exits/s, hyp%, steal%, top
 * preemptor) until the rest fit; the name and preempted% always stay. Columns never end past width.
 * Returns how many were placed into out (room for HOSTTUI_NCOLS).
 */
int hosttui_layout(int width, bool guest, struct hosttui_colpos *out);

/* Readable units into buf (returns buf). A share in % with 3 significant digits ("0", "0.05", "12.3",
 * "100"); a rate per second ("950", "1.2k", "34k", "5.6M"); a duration ("850ns", "12.3us", "4.5ms",
 * "1.25s", "3m05s"). Each fits 7 characters. */
const char *hosttui_fmt_pct(double pct, char *buf, size_t len);
const char *hosttui_fmt_rate(double per_s, char *buf, size_t len);
const char *hosttui_fmt_ns(uint64_t ns, char *buf, size_t len);

/* Sparklines and names in their cells: util/termcell (termcell_spark over HOSTTUI_HISTORY, termcell_fit). */

/* /proc/stat's aggregate "cpu" line: busy and total jiffies. Returns 0 or -EINVAL. */
int hosttui_cpu_parse(const char *text, uint64_t *busy, uint64_t *total)
    __attribute__((warn_unused_result));

/* The next period of the `+` (dir > 0) or `-` (dir < 0) key from cur: 250ms 500ms 1s 2s 5s 10s 30s 60s. */
uint64_t hosttui_period_step(uint64_t cur, int dir);

#endif
