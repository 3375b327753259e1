/* SPDX-License-Identifier: MIT */
/*
 * explain: the footer's words (see explain.h). The shares are of the table's total, rounded to a whole
 * percent (below 10%: one decimal), and the parts' names are the column heads of shared/attrib/classes.
 */
#include <string.h>
#include "attrib/classes.h"
#include "attrib/explain.h"

/* What each part means and what to do, after "<LABEL> <pct>%: ". */
static const char steal_words[] =
    "the hypervisor ran something else on this vCPU's CPU (the guest's steal clock). Run "
    "vnoise-host on "
    "the host to name it, or ask the provider for dedicated (pinned, not overcommitted) CPUs";
static const char host_steal_words[] =
    "the vCPUs were runnable while something else ran on their CPUs (libvirt's vcpu.N.delay; the "
    "preemptors above name it). Give each vCPU a CPU of its own (pinning) or move those tasks away";
static const char unexpl_words[] =
    "no guest event explains it; in a VM this is mostly the hypervisor (rtla: HW). Run vnoise-host "
    "on "
    "the host to name it, or ask the provider about overcommit and pinning";
static const char hw_words[] =
    "the host's log has no cause for it either: below the host's scheduler (exits and host IRQs it "
    "did "
    "not count, SMIs, firmware, power management). Ask the provider about SMIs and power settings";

static const char host_hw_words[] = "neither the guest's events nor the host's records explain it: "
				    "below the host's scheduler (SMIs, "
				    "firmware, power management, exits the host did not trace). "
				    "Check the SMI and power settings (rtla "
				    "osnoise on the host shows it as HW)";

/* One line for part ns of t with its label and words, if over the threshold; returns 1 if written. */
static int line(char *out, const struct explain_totals *t, uint64_t ns, const char *label,
		const char *words)
{
	double pct;

	if (!t->total_ns || !ns)
		return 0;
	pct = 100.0 * (double)ns / (double)t->total_ns;
	if (pct <= EXPLAIN_MIN_PCT)
		return 0;
	snprintf(out, EXPLAIN_LINE_LEN, "%s %.*f%%: %s", label, pct < 10 ? 1 : 0, pct, words);
	return 1;
}

size_t explain_lines(const struct explain_totals *t, char lines[EXPLAIN_LINES][EXPLAIN_LINE_LEN])
{
	size_t n = 0;

	n += (size_t)line(lines[n], t, t->steal_ns, classes_guest_label(VN_CLASS_STEAL),
			  t->host ? host_steal_words : steal_words);
	n += (size_t)line(lines[n], t, t->unexpl_ns, classes_guest_label(VN_CLASS_UNEXPLAINED),
			  unexpl_words);
	n += (size_t)line(lines[n], t, t->hw_ns, classes_hyp_label(VN_HCLASS_HW),
			  t->host ? host_hw_words : hw_words);
	return n;
}

/* s folded at spaces to width columns, continued lines indented by two. */
static void fold(FILE *f, const char *s, int width)
{
	int indent = 0;

	while (width > 2 && (int)strlen(s) + indent > width) {
		int cut = width - indent;

		while (cut > 0 && s[cut] != ' ')
			cut--;
		if (cut == 0) /* one word wider than the line: printed whole */
			break;
		fprintf(f, "%*s%.*s\n", indent, "", cut, s);
		s += cut + 1;
		indent = 2;
	}
	fprintf(f, "%*s%s\n", indent, "", s);
}

void explain_footer(FILE *f, const struct explain_totals *t, int width)
{
	char lines[EXPLAIN_LINES][EXPLAIN_LINE_LEN];
	size_t n = explain_lines(t, lines);

	for (size_t i = 0; i < n; i++)
		fold(f, lines[i], width);
}
