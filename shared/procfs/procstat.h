/* SPDX-License-Identifier: MIT */
/*
 * procstat: the counters-only fallback of the guest kernel helper ("kernel_helper": "proc"), used when eBPF
 * is not available. It snapshots /proc/interrupts, /proc/softirqs, /proc/stat (per-CPU steal) and
 * /proc/schedstat (per-CPU run time, run delay and timeslices), and turns two snapshots into per-CPU deltas:
 * event counts by class (nmi, irq, softirq), steal in ns, timeslices, and the busiest sources by name. The
 * parsers are pure functions of the file text (unit-testable, never crash on malformed text: -EINVAL); thin
 * readers feed them the real files. CPUs may come and go between snapshots (hotplug): each file says which
 * CPUs it has columns or lines for, and a delta only uses a part present for that CPU in both snapshots.
 * Counts, not durations: /proc cannot say how long an interrupt ran. Not thread-safe per object.
 */
#ifndef VNOISE_PROCFS_PROCSTAT_H
#define VNOISE_PROCFS_PROCSTAT_H

#include <stddef.h>
#include <stdint.h>
#include "noise.h"

#define PROCSTAT_NAME_LEN 48 /* source names, NUL-terminated, longer ones truncated */
#define PROCSTAT_CPU_MAX 8192 /* CPU numbers must be below this */
#define PROCSTAT_TOP 8 /* sources listed per delta */
#define PROCSTAT_ID_NAMED 0xffffffffu /* id of a named row with no vn_vec equivalent (e.g. "tlb") */

/* procstat_snap.parts / procstat_delta.parts */
#define PROCSTAT_PART_INTERRUPTS 0x1
#define PROCSTAT_PART_SOFTIRQS 0x2
#define PROCSTAT_PART_STAT 0x4
#define PROCSTAT_PART_SCHEDSTAT 0x8

/*
 * One counter row of /proc/interrupts or /proc/softirqs.
 *  - numeric IRQ rows: cls IRQ, id = IRQ number, name = the action name(s) after the chip and hwirq-type
 *    columns, e.g. "virtio0-input.0" ("irq<N>" when the line has no action);
 *  - x86 vector rows: LOC "local_timer", RES "reschedule", CAL "call_function", IWI "irq_work",
 *    PLT "x86_platform_ipi": cls IRQ, id = VN_VEC_BASE + enum vn_vec;
 *  - NMI: cls NMI, id 0, name "nmi";
 *  - other named rows: cls IRQ, id PROCSTAT_ID_NAMED, name = the row label lowercased ("tlb", "spu");
 *  - softirqs: cls SOFTIRQ, id = vector (HI=0 .. RCU=9), name lowercased ("net_rx"); an unknown label gets
 *    PROCSTAT_ID_NAMED.
 * counted = 0 for rows that are not interrupts of this CPU or repeat another row, so class totals do not
 * count them: RTR (APIC read retries), MCP (machine-check polls), PMI (x86 PMIs arrive as NMIs), MIS.
 */
struct procstat_src {
	char name[PROCSTAT_NAME_LEN];
	uint32_t id;
	uint8_t cls; /* enum vn_class */
	uint8_t counted; /* adds to the class total */
};

/* The counters of one file with a column per CPU. Rows that hold one global value (ERR, MIS) are skipped. */
struct procstat_table {
	unsigned int nrows;
	unsigned int ncpus; /* highest CPU column + 1 */
	struct procstat_src *rows;
	uint64_t *counts; /* counts[row * ncpus + cpu], events since boot */
	uint8_t *has_cpu; /* [cpu]: 1 if the file had a column for this CPU */
};

/* Per-CPU scalars from /proc/stat and /proc/schedstat. */
struct procstat_cpu {
	uint8_t has_stat; /* a cpuN line in /proc/stat */
	uint8_t has_sched; /* a cpuN line in /proc/schedstat */
	uint64_t steal_ticks; /* /proc/stat field 8, USER_HZ ticks */
	uint64_t run_ns; /* schedstat field 7: time tasks ran on this CPU */
	uint64_t wait_ns; /* schedstat field 8: time tasks waited on its runqueue (run_delay) */
	uint64_t
	    timeslices; /* schedstat field 9: tasks switched in (pcount), our "context switches" */
};

/* A snapshot of all four files. Owned by the caller (procstat_snap_new/_free); fields are read-only. */
struct procstat_snap {
	uint64_t mono_ns; /* CLOCK_MONOTONIC of procstat_snap_read(), 0 when parsed from text */
	unsigned int parts; /* PROCSTAT_PART_* parsed successfully */
	struct procstat_table irq; /* /proc/interrupts */
	struct procstat_table soft; /* /proc/softirqs */
	unsigned int ncpus; /* entries of cpu[] */
	struct procstat_cpu *cpu;
	long clk_tck; /* USER_HZ used for steal_ticks */
	unsigned int schedstat_version;
};

/* One source in a delta. */
struct procstat_srcdelta {
	char name[PROCSTAT_NAME_LEN];
	uint32_t id;
	uint8_t cls; /* enum vn_class */
	uint8_t pad[3];
	uint64_t count;
};

/* What happened on one CPU between two snapshots. Fields of a part not in .parts are 0. */
struct procstat_delta {
	unsigned int cpu;
	unsigned int parts; /* PROCSTAT_PART_* present for this CPU in both snapshots */
	uint64_t wall_ns; /* cur->mono_ns - prev->mono_ns, 0 if unknown */
	uint64_t nmi; /* NMIs */
	uint64_t irq; /* hard IRQs: device lines + x86 vectors, local timer included */
	uint64_t local_timer; /* of which local timer interrupts */
	uint64_t softirq; /* softirq runs, all vectors */
	uint64_t steal_ns; /* hypervisor steal, USER_HZ resolution */
	uint64_t ctxsw; /* timeslices (schedstat pcount): tasks switched in */
	uint64_t run_ns; /* schedstat run time */
	uint64_t wait_ns; /* schedstat run delay */
	unsigned int nwraps; /* 32-bit counters that wrapped (handled) */
	unsigned int nresets; /* counters that went backwards and were taken from 0 */
	unsigned int ntop;
	struct procstat_srcdelta top[PROCSTAT_TOP]; /* counted sources, count > 0, busiest first */
};

/* A new empty snapshot, or NULL with errno = ENOMEM. */
struct procstat_snap *procstat_snap_new(void) __attribute__((warn_unused_result));
void procstat_snap_free(struct procstat_snap *s);

/*
 * Parsers: replace one part of s with the counters of the given file text (len bytes, need not be
 * NUL-terminated). 0, -EINVAL (malformed: the part is left empty and its bit cleared), -ENOMEM, or for
 * schedstat -ENOTSUP (version < 15). clk_tck is USER_HZ (sysconf(_SC_CLK_TCK)), > 0.
 */
int procstat_parse_interrupts(struct procstat_snap *s, const char *text, size_t len)
    __attribute__((warn_unused_result));
int procstat_parse_softirqs(struct procstat_snap *s, const char *text, size_t len)
    __attribute__((warn_unused_result));
int procstat_parse_stat(struct procstat_snap *s, const char *text, size_t len, long clk_tck)
    __attribute__((warn_unused_result));
int procstat_parse_schedstat(struct procstat_snap *s, const char *text, size_t len)
    __attribute__((warn_unused_result));

/*
 * Read the real files into s and stamp mono_ns. /proc/schedstat is optional (kernels without
 * CONFIG_SCHEDSTATS lack it): its absence leaves PROCSTAT_PART_SCHEDSTAT clear and is not an error.
 * 0 or the first -errno (open/read error or parser error).
 */
int procstat_snap_read(struct procstat_snap *s) __attribute__((warn_unused_result));

/*
 * Read a whole file (of any length) into a new NUL-terminated buffer; *len excludes the NUL. The caller
 * frees *buf. 0 or -errno.
 */
int procstat_read_file(const char *path, char **buf, size_t *len)
    __attribute__((warn_unused_result));

/*
 * Per-CPU deltas cur - prev for one CPU. Sources are matched by (class, id, name): a source new in cur counts
 * from 0; a 32-bit counter (all of /proc/interrupts and /proc/softirqs) that went backwards wrapped once.
 * 0, -EINVAL (NULL argument) or -ENOENT (the CPU is in no part of both snapshots).
 */
int procstat_delta(const struct procstat_snap *prev, const struct procstat_snap *cur,
		   unsigned int cpu, struct procstat_delta *out)
    __attribute__((warn_unused_result));

/*
 * IRQ number -> name table, built from /proc/interrupts, for naming the device IRQs the eBPF helper sees.
 * procstat_irq_name(): the action name of a device IRQ, or for VN_VEC_BASE + enum vn_vec the vector name
 * ("local_timer"...; t may be NULL then); NULL if unknown. The string lives as long as t.
 */
struct procstat_irqnames;
struct procstat_irqnames *procstat_irqnames_parse(const char *text, size_t len)
    __attribute__((warn_unused_result));
struct procstat_irqnames *procstat_irqnames_read(void) __attribute__((warn_unused_result));
void procstat_irqnames_free(struct procstat_irqnames *t);
const char *procstat_irq_name(const struct procstat_irqnames *t, unsigned int irq);

#endif
