/* SPDX-License-Identifier: MIT */
/*
 * bpfutil: what every eBPF loader of vnoise does the same way (the guest's kernel helpers and the host's
 * schedlog): libbpf's messages routed through the log module, the "does this kernel have what the program
 * attaches to" probe, run-time statistics (BPF_ENABLE_STATS) switched on for the loader's lifetime and
 * read per program. Stateless apart from libbpf's global print hook. Not for BPF programs (see
 * guest/bpf/nest.bpf.h for the shared BPF-side code).
 */
#ifndef VNOISE_BPF_BPFUTIL_H
#define VNOISE_BPF_BPFUTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <bpf/libbpf.h>

#define BPFUTIL_NAME_LEN 40 /* program names kept in statistics, NUL included */
/* The loaders' one-line reason when loading fails for lack of privileges. */
#define BPFUTIL_WHY_EPERM "not permitted to load eBPF (need root or CAP_BPF+CAP_PERFMON)"

/* Route libbpf's messages to stderr by verbosity (bpfutil_print_wanted). Call before opening objects. */
void bpfutil_set_print(void);
/*
 * Does a libbpf message of this level show at log verbosity v? Quiet by default (the loaders report one
 * clear line themselves); -v (1) shows warnings and info, -vv (2) debug messages too.
 */
bool bpfutil_print_wanted(enum libbpf_print_level level, int v);

/*
 * Does this kernel have what a program of section sec attaches to? "tp_btf/x": the tracepoint x
 * (btf_trace_x in vmlinux BTF); "fentry/f", "fexit/f": the kernel function f. Any other section, or no
 * vmlinux BTF: true (loading will tell).
 */
bool bpfutil_has_target(const struct btf *vmlinux, const char *sec);
/*
 * Leave unloaded the programs of obj (still to be loaded) whose target this kernel lacks, each logged at
 * debug level. Returns 0, or -ENOTSUP when one of them is required (required(sec) true): then *sec (if
 * sec is not NULL) names it and the programs after it are left as they were.
 */
int bpfutil_drop_missing(struct bpf_object *obj, const struct btf *vmlinux,
			 bool (*required)(const char *sec), const char **sec)
    __attribute__((warn_unused_result));

/*
 * Turn run-time statistics on (BPF_ENABLE_STATS). They stay on while the returned fd is open, so nothing
 * is left changed on any exit, SIGKILL included. Returns the fd (the caller closes it), or -1 when the
 * kernel refuses (then run_cnt and run_time_ns stay 0; logged at debug level).
 * Call it before attaching and close the fd after detaching: the switch is a static key in the path that
 * runs every attached program (bpf_trace_run*), and patching it while our programs run makes every CPU
 * that runs one trap on the patch's int3 meanwhile. Under QEMU TCG such a patch of hot code can leave a
 * vCPU re-executing a stale int3 for good (tests/vm/README.md).
 */
int bpfutil_enable_stats(void);

/* Run statistics of one program (0 while statistics are off). ns/run = run_time_ns / run_cnt. */
struct bpfutil_prog_stat {
	char name[BPFUTIL_NAME_LEN]; /* the program's name, truncated */
	uint64_t run_cnt; /* runs */
	uint64_t run_time_ns; /* their total run time */
};

/* Per-program run statistics into the caller's array, and their sums. Filled by bpfutil_stats_read. */
struct bpfutil_stats {
	struct bpfutil_prog_stat *progs; /* the caller's array of max entries */
	int max;
	int nprogs; /* entries filled */
	uint64_t run_cnt; /* summed over progs[0 .. nprogs-1] */
	uint64_t run_time_ns; /* summed likewise */
};

/* Empty statistics that will fill progs[0 .. max-1]. */
void bpfutil_stats_init(struct bpfutil_stats *st, struct bpfutil_prog_stat *progs, int max);
/*
 * Append one program's figures and add them to the sums. Returns false (and changes nothing) when the
 * array is full: a program that finds no room is left out of the sums too.
 */
bool bpfutil_stats_add(struct bpfutil_stats *st, const char *name, uint64_t run_cnt,
		       uint64_t run_time_ns);
/* Add the figures of obj's loaded programs in object order (those the kernel will not describe: skipped). */
void bpfutil_stats_read(struct bpfutil_stats *st, const struct bpf_object *obj);

#endif
