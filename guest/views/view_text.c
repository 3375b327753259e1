/* SPDX-License-Identifier: MIT */
/*
 * view_text: the text summary (measure, record, report FILE): the run header, the per-CPU table, the top noise
 * sources of each CPU and the overhead line. Its start announces the run on stderr.
 */
#include "util/log.h"
#include "views/view_text.h"
#include "views/view_worst.h"

void view_text_start(const struct view *v, uint64_t planned_ns)
{
	char list[256];
	size_t off = 0;
	int i;

	for (i = 0; i < v->ncpus && off < sizeof(list) - 16; i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", i ? "," : "",
					v->cpus[i]);
	log_info("measuring CPU%s %s with kernel helper %s %s", v->ncpus > 1 ? "s" : "", list,
		 v->helper, planned_ns ? "" : "until Ctrl-C");
}

void view_text_end(FILE *f, const struct view *v)
{
	view_header(f, v);
	view_table(f, v);
	view_sources(f, v);
	view_hyp_sources(f, v);
	view_worst_text(f, v);
	view_overhead_line(f, v);
}

const struct view_ops view_text_ops = {
	.start = view_text_start,
	.end = view_text_end,
};
