/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for shared/procfs/procstat, the /proc counters fallback. The samples of /proc/interrupts, /proc/softirqs
 * and /proc/stat are real text from the 2-CPU Debian 12 KVM test guest (kernel 6.18, /proc/stat's intr line
 * shortened); that kernel has no /proc/schedstat, so the schedstat sample is hand-written in the version 15
 * layout (Documentation/scheduler/sched-stats.rst). TCases: per-file parsing, name rules (shared, ARM-style
 * and action-less IRQ lines), hotplug (missing columns), long lines, malformed text (including every
 * truncation and random byte damage of the real samples), deltas (classes, steal, wraps, new sources, top
 * list), the IRQ name table, and a sanity test on this machine's real files.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "procfs/procstat.h"

static const char interrupts_real[] =
    "           CPU0       CPU1       \n"
    " 24:          1          0  IO-APIC   5-edge      ACPI:Ged\n"
    " 25:          0          1  IO-APIC   6-edge      ACPI:Ged\n"
    " 26:          0         10  IO-APIC   4-edge      ttyS0\n"
    " 28:          0          0 PCI-MSIX-0000:00:01.0   0-edge      virtio0-config\n"
    " 29:          0          0 PCI-MSIX-0000:00:01.0   1-edge      virtio0-inflate\n"
    " 30:          0          0 PCI-MSIX-0000:00:01.0   2-edge      virtio0-deflate\n"
    " 31:          0         61 PCI-MSIX-0000:00:01.0   3-edge      virtio0-stats\n"
    " 32:         28          0 PCI-MSIX-0000:00:01.0   4-edge      virtio0-reporting_vq\n"
    " 33:          0          0 PCI-MSIX-0000:00:05.0   0-edge      virtio4-config\n"
    " 34:         17          0 PCI-MSIX-0000:00:05.0   1-edge      virtio4-input\n"
    " 35:          0          1 PCI-MSIX-0000:00:02.0   0-edge      virtio1-config\n"
    " 36:          0      30411 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n"
    " 37:          0          0 PCI-MSIX-0000:00:03.0   0-edge      virtio2-config\n"
    " 38:          0        710 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\n"
    " 39:        698          0 PCI-MSIX-0000:00:03.0   2-edge      virtio2-output.0\n"
    " 40:          0          0 PCI-MSIX-0000:00:04.0   0-edge      virtio3-config\n"
    " 41:       1645          0 PCI-MSIX-0000:00:04.0   1-edge      virtio3-rx\n"
    " 42:          0       3127 PCI-MSIX-0000:00:04.0   2-edge      virtio3-tx\n"
    " 43:          1          0 PCI-MSIX-0000:00:04.0   3-edge      virtio3-event\n"
    "NMI:          0          0   Non-maskable interrupts\n"
    "LOC:      14424      15293   Local timer interrupts\n"
    "SPU:          0          0   Spurious interrupts\n"
    "PMI:          0          0   Performance monitoring interrupts\n"
    "IWI:          1          0   IRQ work interrupts\n"
    "RTR:          0          0   APIC ICR read retries\n"
    "RES:       3503       4006   Rescheduling interrupts\n"
    "CAL:      36529      17450   Function call interrupts\n"
    "TLB:          0          0   TLB shootdowns\n"
    "TRM:          0          0   Thermal event interrupts\n"
    "ERR:          0\n"
    "MIS:          0\n"
    "PIN:          0          0   Posted-interrupt notification event\n"
    "NPI:          0          0   Nested posted-interrupt event\n"
    "PIW:          0          0   Posted-interrupt wakeup event\n";

static const char softirqs_real[] = "                    CPU0       CPU1       \n"
				    "          HI:          0          0\n"
				    "       TIMER:       8244       9308\n"
				    "      NET_TX:          3          0\n"
				    "      NET_RX:        633        715\n"
				    "       BLOCK:          0      62971\n"
				    "    IRQ_POLL:          0          0\n"
				    "     TASKLET:          2          2\n"
				    "       SCHED:      22854      21142\n"
				    "     HRTIMER:          0          0\n"
				    "         RCU:      14425      16578\n";

static const char stat_real[] =
    "cpu  5660 0 4525 131505 468 0 230 0 0 0\n"
    "cpu0 1750 0 1716 67620 23 0 87 0 0 0\n"
    "cpu1 3909 0 2808 63884 444 0 142 0 0 0\n"
    "intr 216087 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 1 10 0 0 0 0 142 49 0 24\n"
    "ctxt 383765\n"
    "btime 1795396066\n"
    "processes 5904\n"
    "procs_running 1\n"
    "procs_blocked 1\n"
    "softirq 156877 0 17552 3 1348 62971 0 4 43996 0 31003\n";

/* Version 15 layout (hand-written: the test guest's kernel has no CONFIG_SCHEDSTATS). */
static const char schedstat_v15[] =
    "version 15\n"
    "timestamp 4297299139\n"
    "cpu0 0 0 1043421 396114 560239 305719 52634106547 7032318867 617146\n"
    "domain0 00000003 189 188 0 0 0 0 0 188 3 3 0 0 0 0 0 3 26 25 1 122 0 0 0 25 0 0 0 0 0 0 0 0 0 "
    "2161 289 0\n"
    "cpu1 0 0 1019786 384322 551206 302155 51409876425 6828147788 610943\n"
    "domain0 00000003 201 200 0 0 0 0 0 200 2 2 0 0 0 0 0 2 30 29 1 98 0 0 0 29 0 0 0 0 0 0 0 0 0 "
    "2038 305 0\n";

static struct procstat_snap *S;

static void setup(void)
{
	S = procstat_snap_new();
	ck_assert_ptr_nonnull(S);
}

static void teardown(void)
{
	procstat_snap_free(S);
	S = NULL;
}

#define PARSE_INT(s, txt) procstat_parse_interrupts((s), (txt), strlen(txt))
#define PARSE_SOFT(s, txt) procstat_parse_softirqs((s), (txt), strlen(txt))
#define PARSE_STAT(s, txt) procstat_parse_stat((s), (txt), strlen(txt), 100)
#define PARSE_SCHED(s, txt) procstat_parse_schedstat((s), (txt), strlen(txt))

/* Row index by class and name in a table, -1 if absent. */
static int row_of(const struct procstat_table *t, int cls, const char *name)
{
	for (unsigned int i = 0; i < t->nrows; i++) {
		if (t->rows[i].cls == cls && !strcmp(t->rows[i].name, name))
			return (int)i;
	}
	return -1;
}

static uint64_t cnt(const struct procstat_table *t, int row, unsigned int cpu)
{
	return t->counts[(size_t)row * t->ncpus + cpu];
}

/* ---- /proc/interrupts ---- */

START_TEST(test_interrupts_real)
{
	const struct procstat_table *t = &S->irq;
	int r;

	ck_assert_int_eq(PARSE_INT(S, interrupts_real), 0);
	ck_assert(S->parts & PROCSTAT_PART_INTERRUPTS);
	ck_assert_uint_eq(t->ncpus, 2);
	ck_assert(t->has_cpu[0] && t->has_cpu[1]);
	/* 19 numeric + 15 named per-CPU rows; ERR and MIS (one global value) are skipped */
	ck_assert_uint_eq(t->nrows, 19 + 13);
	ck_assert_int_lt(row_of(t, VN_CLASS_IRQ, "err"), 0);
	ck_assert_int_lt(row_of(t, VN_CLASS_IRQ, "mis"), 0);

	r = row_of(t, VN_CLASS_IRQ, "virtio2-input.0");
	ck_assert_int_ge(r, 0);
	ck_assert_uint_eq(t->rows[r].id, 38);
	ck_assert_uint_eq(cnt(t, r, 0), 0);
	ck_assert_uint_eq(cnt(t, r, 1), 710);
	r = row_of(t, VN_CLASS_IRQ, "ACPI:Ged");
	ck_assert_uint_eq(t->rows[r].id, 24);

	r = row_of(t, VN_CLASS_IRQ, "local_timer");
	ck_assert_int_ge(r, 0);
	ck_assert_uint_eq(t->rows[r].id, VN_VEC_BASE + VN_VEC_LOCAL_TIMER);
	ck_assert_uint_eq(cnt(t, r, 0), 14424);
	ck_assert_uint_eq(cnt(t, r, 1), 15293);
	r = row_of(t, VN_CLASS_IRQ, "reschedule");
	ck_assert_uint_eq(t->rows[r].id, VN_VEC_BASE + VN_VEC_RESCHEDULE);
	r = row_of(t, VN_CLASS_IRQ, "call_function");
	ck_assert_uint_eq(t->rows[r].id, VN_VEC_BASE + VN_VEC_CALL_FUNCTION);
	ck_assert_uint_eq(cnt(t, r, 0), 36529);
	r = row_of(t, VN_CLASS_IRQ, "irq_work");
	ck_assert_uint_eq(t->rows[r].id, VN_VEC_BASE + VN_VEC_IRQ_WORK);
	r = row_of(t, VN_CLASS_NMI, "nmi");
	ck_assert_int_ge(r, 0);
	ck_assert_uint_eq(t->rows[r].id, 0);

	r = row_of(t, VN_CLASS_IRQ, "tlb");
	ck_assert_int_ge(r, 0);
	ck_assert_uint_eq(t->rows[r].id, PROCSTAT_ID_NAMED);
	ck_assert_uint_eq(t->rows[r].counted, 1);
	r = row_of(t, VN_CLASS_IRQ, "pmi");
	ck_assert_uint_eq(t->rows[r].counted, 0);
	r = row_of(t, VN_CLASS_IRQ, "rtr");
	ck_assert_uint_eq(t->rows[r].counted, 0);
}
END_TEST

START_TEST(test_interrupts_names)
{
	static const char txt[] =
	    "            CPU0       CPU1\n"
	    "  16:          1          2   IO-APIC  16-fasteoi   ehci_hcd:usb1, "
	    "snd_hda_intel:card0\n"
	    "  11:        100        200     GICv3  27 Level     arch_timer\n"
	    "   7:          0          0   IO-APIC   7-edge\n"
	    "   3:          0          5    XT-PIC          -edge      timer\n"
	    "   9:          0          0   IO-APIC\n"
	    "  12:          4          4   somechip   i8042\n"
	    "PLT:          9          8   Platform interrupts\n"
	    "IPI0:         3          4   Rescheduling interrupts\n";
	const struct procstat_table *t = &S->irq;

	ck_assert_int_eq(PARSE_INT(S, txt), 0);
	ck_assert_int_ge(row_of(t, VN_CLASS_IRQ, "ehci_hcd:usb1, snd_hda_intel:card0"), 0);
	ck_assert_int_ge(row_of(t, VN_CLASS_IRQ, "arch_timer"), 0);
	ck_assert_int_ge(row_of(t, VN_CLASS_IRQ, "irq7"), 0);
	ck_assert_int_ge(row_of(t, VN_CLASS_IRQ, "timer"), 0);
	ck_assert_int_ge(row_of(t, VN_CLASS_IRQ, "irq9"), 0);
	ck_assert_int_ge(row_of(t, VN_CLASS_IRQ, "i8042"), 0);
	ck_assert_uint_eq(t->rows[row_of(t, VN_CLASS_IRQ, "x86_platform_ipi")].id,
			  VN_VEC_BASE + VN_VEC_X86_PLATFORM_IPI);
	ck_assert_uint_eq(t->rows[row_of(t, VN_CLASS_IRQ, "ipi0")].id, PROCSTAT_ID_NAMED);
}
END_TEST

START_TEST(test_interrupts_hotplug)
{
	/* CPU1 offline: /proc/interrupts has no column for it */
	static const char txt[] =
	    "           CPU0       CPU2       CPU3\n"
	    " 24:          1          2          3  IO-APIC   5-edge      ACPI:Ged\n"
	    "LOC:         10         20         30   Local timer interrupts\n"
	    "ERR:          0\n";
	const struct procstat_table *t = &S->irq;
	int r;

	ck_assert_int_eq(PARSE_INT(S, txt), 0);
	ck_assert_uint_eq(t->ncpus, 4);
	ck_assert(t->has_cpu[0] && !t->has_cpu[1] && t->has_cpu[2] && t->has_cpu[3]);
	r = row_of(t, VN_CLASS_IRQ, "local_timer");
	ck_assert_uint_eq(cnt(t, r, 0), 10);
	ck_assert_uint_eq(cnt(t, r, 1), 0);
	ck_assert_uint_eq(cnt(t, r, 2), 20);
	ck_assert_uint_eq(cnt(t, r, 3), 30);
}
END_TEST

START_TEST(test_interrupts_long_lines)
{
	/* 300 CPUs: lines far longer than any line buffer; an action name longer than PROCSTAT_NAME_LEN */
	enum { NC = 300 };
	size_t cap = 64 * 1024, n = 0;
	char *txt = malloc(cap);
	const struct procstat_table *t = &S->irq;
	int r;

	ck_assert_ptr_nonnull(txt);
	for (int c = 0; c < NC; c++)
		n += (size_t)snprintf(txt + n, cap - n, " CPU%d", c);
	n += (size_t)snprintf(txt + n, cap - n, "\n 55:");
	for (int c = 0; c < NC; c++)
		n += (size_t)snprintf(txt + n, cap - n, " %10d", c * 7);
	n += (size_t)snprintf(txt + n, cap - n, " PCI-MSI 1-edge ");
	for (int k = 0; k < 100; k++)
		txt[n++] = (char)('a' + k % 26);
	n += (size_t)snprintf(txt + n, cap - n, "\nLOC:");
	for (int c = 0; c < NC; c++)
		n += (size_t)snprintf(txt + n, cap - n, " %10lld", 4000000000LL - c);
	n += (size_t)snprintf(txt + n, cap - n, "   Local timer interrupts\n");
	ck_assert_uint_lt(n, cap);

	ck_assert_int_eq(procstat_parse_interrupts(S, txt, n), 0);
	ck_assert_uint_eq(t->ncpus, NC);
	ck_assert_uint_eq(t->nrows, 2);
	ck_assert_uint_eq(strlen(t->rows[0].name), PROCSTAT_NAME_LEN - 1);
	ck_assert(!strncmp(t->rows[0].name, "abcdefghijklmnopqrstuvwxyz", 26));
	ck_assert_uint_eq(cnt(t, 0, 299), 299 * 7);
	r = row_of(t, VN_CLASS_IRQ, "local_timer");
	ck_assert_uint_eq(cnt(t, r, 0), 4000000000ull);
	free(txt);
}
END_TEST

START_TEST(test_interrupts_no_trailing_newline)
{
	static const char txt[] = "  CPU0\n  1:  5  IO-APIC  1-edge  i8042";

	ck_assert_int_eq(PARSE_INT(S, txt), 0);
	ck_assert_uint_eq(S->irq.nrows, 1);
	ck_assert_str_eq(S->irq.rows[0].name, "i8042");
}
END_TEST

static const char *const interrupts_bad[] = {
	"",
	"\n\n",
	"  CPU0  CPU1\n", /* header only: accepted? no rows is fine */
	"  cpu0  cpu1\n 1: 0 0 X 1-edge a\n", /* header case */
	"  CPU0  CPUx\n", /* bad CPU number */
	"  CPU1  CPU0\n 1: 0 0 X 1-edge a\n", /* not increasing */
	"  CPU0  CPU0\n", /* duplicate */
	"  CPU0  CPU99999999\n", /* huge CPU number */
	"  CPU0  CPU1\n 1 0 0 X 1-edge a\n", /* no colon */
	"  CPU0  CPU1\n 1: 0 X 1-edge a\n", /* too few values */
	"  CPU0  CPU1\n 1:\n", /* no values */
	"  CPU0  CPU1\n 1: 0 99999999999999999999999 X a\n", /* overflow */
	"  CPU0  CPU1\n 99999999999: 0 0 X 1-edge a\n", /* IRQ number > 32 bits */
	"  CPU0  CPU1  CPU2\nLOC: 1 2 Local timer\n", /* named row, 2 of 3 values */
	"  CPU0  CPU1\n:: 1 2\n", /* empty label */
	"  CPU0  CPU1\n 1: 0 0 X 1-edge a\n\x01\x02\x03\n", /* binary junk */
};

START_TEST(test_interrupts_malformed)
{
	for (size_t i = 0; i < sizeof(interrupts_bad) / sizeof(interrupts_bad[0]); i++) {
		int r = PARSE_INT(S, interrupts_bad[i]);

		if (i == 2) { /* a header without rows is a valid (empty) table */
			ck_assert_int_eq(r, 0);
			continue;
		}
		ck_assert_msg(r == -EINVAL, "sample %zu: %d", i, r);
		ck_assert(!(S->parts & PROCSTAT_PART_INTERRUPTS));
		ck_assert_uint_eq(S->irq.nrows, 0);
	}
	ck_assert_int_eq(procstat_parse_interrupts(S, NULL, 0), -EINVAL);
}
END_TEST

/* Every prefix and random byte damage of each real sample: a result of 0 or -errno, never a crash. */
START_TEST(test_fuzz_samples)
{
	const char *samples[] = { interrupts_real, softirqs_real, stat_real, schedstat_v15 };
	unsigned int seed = 12345;

	for (int k = 0; k < 4; k++) {
		size_t n = strlen(samples[k]);
		char *buf = malloc(n);

		ck_assert_ptr_nonnull(buf);
		for (size_t cut = 0; cut <= n; cut++) {
			memcpy(buf, samples[k], cut);
			(void)!procstat_parse_interrupts(S, buf, cut);
			(void)!procstat_parse_softirqs(S, buf, cut);
			(void)!procstat_parse_stat(S, buf, cut, 100);
			(void)!procstat_parse_schedstat(S, buf, cut);
		}
		for (int round = 0; round < 2000; round++) {
			memcpy(buf, samples[k], n);
			for (int j = 0; j < 4; j++) {
				seed = seed * 1103515245u + 12345u;
				buf[(seed >> 8) % n] = (char)(seed >> 24);
			}
			(void)!procstat_parse_interrupts(S, buf, n);
			(void)!procstat_parse_softirqs(S, buf, n);
			(void)!procstat_parse_stat(S, buf, n, 100);
			(void)!procstat_parse_schedstat(S, buf, n);
		}
		free(buf);
	}
}
END_TEST

/* ---- /proc/softirqs ---- */

START_TEST(test_softirqs_real)
{
	static const char *names[] = { "hi",	   "timer",   "net_tx", "net_rx",  "block",
				       "irq_poll", "tasklet", "sched",	"hrtimer", "rcu" };
	const struct procstat_table *t = &S->soft;

	ck_assert_int_eq(PARSE_SOFT(S, softirqs_real), 0);
	ck_assert(S->parts & PROCSTAT_PART_SOFTIRQS);
	ck_assert_uint_eq(t->nrows, 10);
	ck_assert_uint_eq(t->ncpus, 2);
	for (unsigned int i = 0; i < 10; i++) {
		ck_assert_str_eq(t->rows[i].name, names[i]);
		ck_assert_uint_eq(t->rows[i].id, i);
		ck_assert_int_eq(t->rows[i].cls, VN_CLASS_SOFTIRQ);
	}
	ck_assert_uint_eq(cnt(t, 4, 1), 62971);
	ck_assert_uint_eq(cnt(t, 9, 0), 14425);
}
END_TEST

START_TEST(test_softirqs_malformed)
{
	static const char *bad[] = {
		"",
		"   CPU0 CPU1\n", /* no rows */
		"   CPU0 CPU1\n HI: 0\n", /* too few */
		"   CPU0 CPU1\n HI: 0 0 0\n", /* too many */
		"   CPU0 CPU1\n HI: 0 x\n", /* junk */
		"   CPU0 CPU1\n HI 0 0\n", /* no colon */
		"   CPU0 CPU1\n HI: 0 -1\n", /* negative */
		"  HI: 0 0\n", /* no header */
	};
	static const char unknown[] = "   CPU0 CPU1\n NEW_ONE: 1 2\n HI: 3 4\n";

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(PARSE_SOFT(S, bad[i]) == -EINVAL, "sample %zu", i);
		ck_assert(!(S->parts & PROCSTAT_PART_SOFTIRQS));
	}
	ck_assert_int_eq(PARSE_SOFT(S, unknown), 0);
	ck_assert_str_eq(S->soft.rows[0].name, "new_one");
	ck_assert_uint_eq(S->soft.rows[0].id, PROCSTAT_ID_NAMED);
	ck_assert_uint_eq(S->soft.rows[1].id, 0);
}
END_TEST

/* ---- /proc/stat and /proc/schedstat ---- */

START_TEST(test_stat_real)
{
	static const char hot[] = "cpu  1 2 3 4 5 6 7 8 9 10\n"
				  "cpu0 1 2 3 4 5 6 7 250 0 0\n"
				  "cpu3 1 2 3 4 5 6 7 17 0 0\n"
				  "ctxt 5\n";

	ck_assert_int_eq(PARSE_STAT(S, stat_real), 0);
	ck_assert(S->parts & PROCSTAT_PART_STAT);
	ck_assert_uint_eq(S->ncpus, 2);
	ck_assert(S->cpu[0].has_stat && S->cpu[1].has_stat);
	ck_assert_uint_eq(S->cpu[1].steal_ticks, 0);

	ck_assert_int_eq(PARSE_STAT(S, hot), 0);
	ck_assert_uint_eq(S->ncpus, 4);
	ck_assert(S->cpu[0].has_stat && !S->cpu[1].has_stat && !S->cpu[2].has_stat);
	ck_assert_uint_eq(S->cpu[0].steal_ticks, 250);
	ck_assert_uint_eq(S->cpu[3].steal_ticks, 17);
	ck_assert_int_eq(S->clk_tck, 100);
}
END_TEST

START_TEST(test_stat_malformed)
{
	static const char *bad[] = {
		"",
		"cpu  1 2 3 4 5 6 7 8\n", /* aggregate only */
		"cpu0 1 2 3 4 5 6 7\n", /* no steal field */
		"cpu0 1 2 3 4 5 6 7 x\n", /* junk */
		"cpux 1 2 3 4 5 6 7 8\n", /* bad cpu */
		"cpu0 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 8\n", /* duplicate */
		"cpu99999 1 2 3 4 5 6 7 8\n", /* CPU number too big */
		"cpu0 1 2 3 4 5 6 7 -8\n", /* negative */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(PARSE_STAT(S, bad[i]) == -EINVAL, "sample %zu", i);
		ck_assert(!(S->parts & PROCSTAT_PART_STAT));
	}
	ck_assert_int_eq(procstat_parse_stat(S, stat_real, strlen(stat_real), 0), -EINVAL);
}
END_TEST

START_TEST(test_schedstat)
{
	ck_assert_int_eq(PARSE_SCHED(S, schedstat_v15), 0);
	ck_assert(S->parts & PROCSTAT_PART_SCHEDSTAT);
	ck_assert_uint_eq(S->schedstat_version, 15);
	ck_assert_uint_eq(S->ncpus, 2);
	ck_assert_uint_eq(S->cpu[0].run_ns, 52634106547ull);
	ck_assert_uint_eq(S->cpu[0].wait_ns, 7032318867ull);
	ck_assert_uint_eq(S->cpu[0].timeslices, 617146);
	ck_assert_uint_eq(S->cpu[1].timeslices, 610943);

	ck_assert_int_eq(PARSE_SCHED(S, "version 14\ntimestamp 1\ncpu0 1 2 3 4 5 6 7 8 9\n"),
			 -ENOTSUP);
	ck_assert(!(S->parts & PROCSTAT_PART_SCHEDSTAT));
	ck_assert(!S->cpu[0].has_sched);
	ck_assert_int_eq(PARSE_SCHED(S, "version 17\ncpu0 1 2 3 4 5 6 7 8 9\n"), 0);
	ck_assert_uint_eq(S->cpu[0].timeslices, 9);
}
END_TEST

START_TEST(test_schedstat_malformed)
{
	static const char *bad[] = {
		"",
		"timestamp 1\ncpu0 1 2 3 4 5 6 7 8 9\n", /* no version */
		"version x\ncpu0 1 2 3 4 5 6 7 8 9\n", /* bad version */
		"version 15\n", /* no cpus */
		"version 15\ncpu0 1 2 3 4 5 6 7 8\n", /* 8 fields */
		"version 15\ncpu0 1 2 3 4 5 6 7 8 z\n", /* junk */
		"version 15\ncpu0 1 2 3 4 5 6 7 8 9\ncpu0 1 2 3 4 5 6 7 8 9\n", /* duplicate */
		"version 15\ncpuA 1 2 3 4 5 6 7 8 9\n", /* bad cpu */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(PARSE_SCHED(S, bad[i]) == -EINVAL, "sample %zu", i);
		ck_assert(!(S->parts & PROCSTAT_PART_SCHEDSTAT));
	}
}
END_TEST

/* ---- deltas ---- */

static const char int_a[] = "   CPU0   CPU1\n"
			    " 30:  100  4294967290  PCI-MSI 1-edge  eth0\n"
			    " 31:  10   10          PCI-MSI 2-edge  nvme0q1\n"
			    "NMI:  1    1   Non-maskable interrupts\n"
			    "LOC:  1000 2000  Local timer interrupts\n"
			    "PMI:  1    1   Performance monitoring interrupts\n"
			    "RES:  50   60  Rescheduling interrupts\n";
static const char int_b[] = "   CPU0   CPU1\n"
			    " 30:  150  5           PCI-MSI 1-edge  eth0\n"
			    " 31:  10   12          PCI-MSI 2-edge  nvme0q1\n"
			    " 32:  7    0           PCI-MSI 3-edge  new-dev\n"
			    "NMI:  3    1   Non-maskable interrupts\n"
			    "LOC:  1250 2100  Local timer interrupts\n"
			    "PMI:  3    1   Performance monitoring interrupts\n"
			    "RES:  70   60  Rescheduling interrupts\n";
static const char soft_a[] = "  CPU0 CPU1\n  HI: 0 0\n  TIMER: 100 100\n  NET_RX: 5 5\n";
static const char soft_b[] = "  CPU0 CPU1\n  HI: 0 0\n  TIMER: 340 101\n  NET_RX: 9 5\n";
static const char stat_a[] = "cpu0 1 2 3 4 5 6 7 100 0 0\ncpu1 1 2 3 4 5 6 7 0 0 0\n";
static const char stat_b[] = "cpu0 1 2 3 4 5 6 7 103 0 0\ncpu1 1 2 3 4 5 6 7 0 0 0\n";
static const char sched_a[] = "version 15\ncpu0 0 0 0 0 0 0 1000 500 40\ncpu1 0 0 0 0 0 0 0 0 0\n";
static const char sched_b[] = "version 15\ncpu0 0 0 0 0 0 0 9000 700 55\ncpu1 0 0 0 0 0 0 5 5 5\n";

static struct procstat_snap *snap_of(const char *i, const char *s, const char *st, const char *sc)
{
	struct procstat_snap *x = procstat_snap_new();

	ck_assert_ptr_nonnull(x);
	ck_assert_int_eq(PARSE_INT(x, i), 0);
	ck_assert_int_eq(PARSE_SOFT(x, s), 0);
	ck_assert_int_eq(PARSE_STAT(x, st), 0);
	ck_assert_int_eq(PARSE_SCHED(x, sc), 0);
	return x;
}

START_TEST(test_delta_cpu0)
{
	struct procstat_snap *a = snap_of(int_a, soft_a, stat_a, sched_a);
	struct procstat_snap *b = snap_of(int_b, soft_b, stat_b, sched_b);
	struct procstat_delta d;

	a->mono_ns = 1000;
	b->mono_ns = 5000;
	ck_assert_int_eq(procstat_delta(a, b, 0, &d), 0);
	ck_assert_uint_eq(d.parts, PROCSTAT_PART_INTERRUPTS | PROCSTAT_PART_SOFTIRQS |
				       PROCSTAT_PART_STAT | PROCSTAT_PART_SCHEDSTAT);
	ck_assert_uint_eq(d.wall_ns, 4000);
	ck_assert_uint_eq(d.nmi, 2);
	/* eth0 50 + nvme 0 + new-dev 7 (new source counts from 0) + LOC 250 + RES 20; PMI not counted */
	ck_assert_uint_eq(d.irq, 50 + 7 + 250 + 20);
	ck_assert_uint_eq(d.local_timer, 250);
	ck_assert_uint_eq(d.softirq, 240 + 4);
	ck_assert_uint_eq(d.steal_ns, 30000000ull); /* 3 ticks at USER_HZ 100 */
	ck_assert_uint_eq(d.run_ns, 8000);
	ck_assert_uint_eq(d.wait_ns, 200);
	ck_assert_uint_eq(d.ctxsw, 15);
	ck_assert_uint_eq(d.nwraps, 0);
	ck_assert_uint_eq(d.nresets, 0);
	/* top: local_timer 250, timer 240, eth0 50, reschedule 20, new-dev 7, net_rx 4, nmi 2 */
	ck_assert_uint_eq(d.ntop, 7);
	ck_assert_str_eq(d.top[0].name, "local_timer");
	ck_assert_uint_eq(d.top[0].count, 250);
	ck_assert_str_eq(d.top[1].name, "timer");
	ck_assert_int_eq(d.top[1].cls, VN_CLASS_SOFTIRQ);
	ck_assert_str_eq(d.top[2].name, "eth0");
	ck_assert_uint_eq(d.top[2].id, 30);
	ck_assert_str_eq(d.top[3].name, "reschedule");
	ck_assert_str_eq(d.top[4].name, "new-dev");
	ck_assert_str_eq(d.top[5].name, "net_rx");
	ck_assert_str_eq(d.top[6].name, "nmi");
	ck_assert_int_eq(d.top[6].cls, VN_CLASS_NMI);
	procstat_snap_free(a);
	procstat_snap_free(b);
}
END_TEST

START_TEST(test_delta_wrap_and_reset)
{
	struct procstat_snap *a = snap_of(int_a, soft_a, stat_a, sched_a);
	struct procstat_snap *b = snap_of(int_b, soft_b, stat_b, sched_b);
	struct procstat_delta d;

	/* CPU1: eth0 wrapped 4294967290 -> 5 = 11 events */
	ck_assert_int_eq(procstat_delta(a, b, 1, &d), 0);
	ck_assert_uint_eq(d.nwraps, 1);
	ck_assert_uint_eq(d.irq, 11 + 2 + 100);
	ck_assert_uint_eq(d.ctxsw, 5);
	/* reversed: 64-bit schedstat counters going backwards are resets, not huge deltas */
	ck_assert_int_eq(procstat_delta(b, a, 0, &d), 0);
	ck_assert_uint_eq(d.run_ns, 0);
	ck_assert_uint_eq(d.ctxsw, 0);
	ck_assert_uint_eq(d.steal_ns, 0);
	ck_assert_uint_ge(d.nresets, 4);
	ck_assert_uint_eq(d.wall_ns, 0);
	procstat_snap_free(a);
	procstat_snap_free(b);
}
END_TEST

START_TEST(test_delta_hotplug)
{
	static const char i3[] = "  CPU0  CPU2\n 30: 1 1 X 1-edge eth0\n";
	static const char st3[] = "cpu0 1 2 3 4 5 6 7 0\ncpu2 1 2 3 4 5 6 7 0\n";
	struct procstat_snap *a = snap_of(int_a, soft_a, stat_a, sched_a);
	struct procstat_snap *b = procstat_snap_new();
	struct procstat_delta d;

	ck_assert_ptr_nonnull(b);
	ck_assert_int_eq(PARSE_INT(b, i3), 0);
	ck_assert_int_eq(PARSE_STAT(b, st3), 0);
	/* CPU1 went offline: nothing in common */
	ck_assert_int_eq(procstat_delta(a, b, 1, &d), -ENOENT);
	/* CPU2 came online: not in prev */
	ck_assert_int_eq(procstat_delta(a, b, 2, &d), -ENOENT);
	ck_assert_int_eq(procstat_delta(a, b, 7777, &d), -ENOENT);
	/* CPU0: only the parts both have */
	ck_assert_int_eq(procstat_delta(a, b, 0, &d), 0);
	ck_assert_uint_eq(d.parts, PROCSTAT_PART_INTERRUPTS | PROCSTAT_PART_STAT);
	ck_assert_int_eq(procstat_delta(NULL, b, 0, &d), -EINVAL);
	procstat_snap_free(a);
	procstat_snap_free(b);
}
END_TEST

START_TEST(test_delta_top_limit)
{
	char ta[4096], tb[4096];
	size_t na = 0, nb = 0;
	struct procstat_snap *a = procstat_snap_new(), *b = procstat_snap_new();
	struct procstat_delta d;

	na += (size_t)snprintf(ta + na, sizeof(ta) - na, "  CPU0\n");
	nb += (size_t)snprintf(tb + nb, sizeof(tb) - nb, "  CPU0\n");
	for (int i = 0; i < 20; i++) {
		na +=
		    (size_t)snprintf(ta + na, sizeof(ta) - na, " %d: 0 X %d-edge dev%d\n", i, i, i);
		nb += (size_t)snprintf(tb + nb, sizeof(tb) - nb, " %d: %d X %d-edge dev%d\n", i,
				       (i * 7) % 20, i, i);
	}
	ck_assert_int_eq(procstat_parse_interrupts(a, ta, na), 0);
	ck_assert_int_eq(procstat_parse_interrupts(b, tb, nb), 0);
	ck_assert_int_eq(procstat_delta(a, b, 0, &d), 0);
	ck_assert_uint_eq(d.ntop, PROCSTAT_TOP);
	for (int i = 0; i < PROCSTAT_TOP; i++)
		ck_assert_uint_eq(d.top[i].count, (uint64_t)(19 - i));
	procstat_snap_free(a);
	procstat_snap_free(b);
}
END_TEST

/* ---- IRQ names ---- */

START_TEST(test_irqnames)
{
	struct procstat_irqnames *t =
	    procstat_irqnames_parse(interrupts_real, strlen(interrupts_real));

	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(procstat_irq_name(t, 38), "virtio2-input.0");
	ck_assert_str_eq(procstat_irq_name(t, 24), "ACPI:Ged");
	ck_assert_str_eq(procstat_irq_name(t, 43), "virtio3-event");
	ck_assert_ptr_null(procstat_irq_name(t, 27));
	ck_assert_ptr_null(procstat_irq_name(t, 0));
	ck_assert_str_eq(procstat_irq_name(t, VN_VEC_BASE + VN_VEC_LOCAL_TIMER), "local_timer");
	ck_assert_str_eq(procstat_irq_name(NULL, VN_VEC_BASE + VN_VEC_X86_PLATFORM_IPI),
			 "x86_platform_ipi");
	ck_assert_ptr_null(procstat_irq_name(NULL, VN_VEC_BASE + VN_VEC_MAX));
	ck_assert_ptr_null(procstat_irq_name(NULL, 38));
	procstat_irqnames_free(t);

	errno = 0;
	ck_assert_ptr_null(procstat_irqnames_parse("garbage", 7));
	ck_assert_int_eq(errno, EINVAL);
	procstat_irqnames_free(NULL);
}
END_TEST

/* ---- this machine ---- */

START_TEST(test_real_files)
{
	struct procstat_snap *a = procstat_snap_new(), *b = procstat_snap_new();
	struct procstat_irqnames *names = procstat_irqnames_read();
	long onln = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned int n_irq = 0, n_stat = 0, n_sched = 0;
	struct procstat_delta d;
	char *buf = NULL;
	size_t len = 0;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(names);
	ck_assert_int_eq(procstat_snap_read(a), 0);
	usleep(50000);
	ck_assert_int_eq(procstat_snap_read(b), 0);
	ck_assert_uint_eq(b->parts & 7, 7);
	ck_assert_uint_gt(b->mono_ns, a->mono_ns);

	for (unsigned int c = 0; c < b->irq.ncpus; c++)
		n_irq += b->irq.has_cpu[c];
	for (unsigned int c = 0; c < b->ncpus; c++) {
		n_stat += b->cpu[c].has_stat;
		n_sched += b->cpu[c].has_sched;
	}
	ck_assert_int_eq(n_irq, onln);
	ck_assert_int_eq(n_stat, onln);
	if (b->parts & PROCSTAT_PART_SCHEDSTAT)
		ck_assert_int_eq(n_sched, onln);
	else
		ck_assert_int_eq(access("/proc/schedstat", F_OK), -1);

	for (unsigned int c = 0; c < b->irq.ncpus; c++) {
		if (!b->irq.has_cpu[c])
			continue;
		ck_assert_int_eq(procstat_delta(a, b, c, &d), 0);
		/* monotonic: no counter went backwards */
		ck_assert_uint_eq(d.nresets, 0);
		ck_assert_uint_eq(d.nwraps, 0);
		ck_assert_uint_le(d.steal_ns, d.wall_ns + 20000000ull);
		for (unsigned int r = 0; r < b->irq.nrows && r < a->irq.nrows; r++) {
			if (strcmp(a->irq.rows[r].name, b->irq.rows[r].name))
				continue;
			ck_assert_uint_ge(cnt(&b->irq, (int)r, c), cnt(&a->irq, (int)r, c));
		}
		ck_assert_uint_ge(b->cpu[c].steal_ticks, a->cpu[c].steal_ticks);
	}
	/* every device IRQ line has a name */
	for (unsigned int r = 0; r < b->irq.nrows; r++) {
		if (b->irq.rows[r].cls == VN_CLASS_IRQ && b->irq.rows[r].id < VN_VEC_BASE)
			ck_assert_ptr_nonnull(procstat_irq_name(names, b->irq.rows[r].id));
	}
	ck_assert_int_eq(procstat_read_file("/nonexistent/file", &buf, &len), -ENOENT);
	ck_assert_ptr_null(buf);
	procstat_irqnames_free(names);
	procstat_snap_free(a);
	procstat_snap_free(b);
}
END_TEST

static Suite *procstat_suite(void)
{
	Suite *s = suite_create("procstat");
	TCase *tc;

	tc = tcase_create("interrupts");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_interrupts_real);
	tcase_add_test(tc, test_interrupts_names);
	tcase_add_test(tc, test_interrupts_hotplug);
	tcase_add_test(tc, test_interrupts_long_lines);
	tcase_add_test(tc, test_interrupts_no_trailing_newline);
	tcase_add_test(tc, test_interrupts_malformed);
	suite_add_tcase(s, tc);

	tc = tcase_create("softirqs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_softirqs_real);
	tcase_add_test(tc, test_softirqs_malformed);
	suite_add_tcase(s, tc);

	tc = tcase_create("stat_schedstat");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_stat_real);
	tcase_add_test(tc, test_stat_malformed);
	tcase_add_test(tc, test_schedstat);
	tcase_add_test(tc, test_schedstat_malformed);
	suite_add_tcase(s, tc);

	tc = tcase_create("fuzz");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_fuzz_samples);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("delta");
	tcase_add_test(tc, test_delta_cpu0);
	tcase_add_test(tc, test_delta_wrap_and_reset);
	tcase_add_test(tc, test_delta_hotplug);
	tcase_add_test(tc, test_delta_top_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("irqnames");
	tcase_add_test(tc, test_irqnames);
	suite_add_tcase(s, tc);

	tc = tcase_create("real");
	tcase_add_test(tc, test_real_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(procstat_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
