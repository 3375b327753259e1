/* SPDX-License-Identifier: MIT */
/*
 * params: command line of the vnoise-guest measuring commands (measure, top, hist, record, report), parsed by
 * one pure function into a struct (STYLE.md 9) over the common option table (cli/cliopt.h, docs/CLI.md).
 * Option names follow rtla osnoise. Times are stored in ns.
 */
#ifndef VNOISE_GUEST_MEASURE_PARAMS_H
#define VNOISE_GUEST_MEASURE_PARAMS_H

#include <stddef.h>
#include <stdint.h>
#include "noise.h"
#include "util/actions.h"

#define PARAMS_MAX_CPUS 1024

enum vn_cmd { CMD_MEASURE, CMD_TOP, CMD_HIST, CMD_RECORD, CMD_REPORT };

enum vn_helper_mode { HELPER_AUTO, HELPER_BPF, HELPER_PROC };

/*
 * An embedder's sink (vnoise-guest agent): every sample and kernel-helper event is passed here instead of to
 * the local attribution engine (the embedder's consumer attributes them), records
 * lost before reaching it are reported per CPU, the run ends when *stop becomes non-zero, no signal handler is
 * installed and nothing is printed at the end. With output set as well (agent -o FILE) the run also attributes
 * and splits them itself (the host's dispatch trace log read, the embedder answering the clock) and records
 * them into output as record -o does. Called from the thread that runs measure_run().
 */
struct measure_sink {
	void (*sample)(void *ctx, const struct vn_sample *s);
	void (*event)(void *ctx, const struct vn_event *e);
	void (*lost)(void *ctx, int cpu, uint64_t n); /* cpu -1: not tied to one CPU */
	void (*tick)(void *ctx, uint64_t drained_ns); /* after every drain: every record that ended
							  before drained_ns was passed (give or take
							  a sampler that is pushing one right now) */
	void *ctx;
	const int *stop; /* read with acquire */
	uint64_t poll_ns; /* drain interval (default 50 ms) */
};

struct measure_params {
	enum vn_cmd cmd;
	int cpus[PARAMS_MAX_CPUS];
	int ncpus; /* 0 with cpus_all */
	int cpus_all; /* --cpus all (default) */
	uint64_t period_ns; /* default 1 s */
	uint64_t runtime_ns; /* default = period */
	uint64_t threshold_ns; /* default 5 us */
	uint64_t duration_ns; /* 0 = until SIGINT/SIGTERM */
	uint64_t stop_single_ns; /* 0 = off */
	uint64_t stop_total_ns; /* 0 = off */
	int policy; /* SCHED_OTHER (default), SCHED_FIFO, SCHED_RR */
	int prio;
	int json;
	int top_n; /* sources listed per CPU, default 10 */
	enum vn_helper_mode helper;
	int no_hcall;
	int quiet;
	int verbose;
	const char *output; /* record -o */
	const char *input; /* report FILE */
	int report_hist; /* report --hist: the hist view of the file */
	int report_gaps; /* report --gaps: one JSON line per gap (guest/views/view_gaps) */
	const char
	    *html; /* report --html OUT.html: the HTML report of the file, written to OUT.html */
	int wide; /* --wide: the text views' full tables (over 80 columns) */
	uint64_t bucket_ns; /* hist --bucket-size: linear rows of this width (0: 4 an octave) */
	int entries; /* hist --entries: at most this many rows, then "over" (0: the default) */
	int top_set; /* --top given */
	int batch; /* top --batch: the stream of tables, not the screen */
	int force; /* --force: measure CPUs another vnoise sampler holds (measure/cpuclaim), marked so */
	struct action_chain on_threshold; /* --on-threshold: run on a -s/-S hit (util/actions.h) */
	struct action_chain on_end; /* --on-end: run when the run ends */
	const struct measure_sink *sink; /* not from the command line: set by an embedder */
};

/*
 * Parse argv (argv[0] is the command name: "measure", "top"...). On error returns -EINVAL with a one-line
 * message in err. Returns 1 when --help was asked (usage text is for the caller to print).
 */
int params_parse(int argc, char **argv, struct measure_params *p, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* Usage text of a command. */
const char *params_usage(enum vn_cmd cmd);
/* The command's name: "measure", "top", "hist", "record", "report". */
const char *params_cmd_name(enum vn_cmd cmd);

#endif
