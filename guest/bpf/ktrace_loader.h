/* SPDX-License-Identifier: MIT */
/*
 * Loader of the eBPF kernel helper (ktrace.bpf.c): open -> set rodata -> load -> attach -> drain -> close.
 * One struct ktrace owns the BPF object, its links, the ring buffer reader and the BPF_ENABLE_STATS fd
 * (run-time statistics stay on only while that fd is open, so nothing is left changed on any exit, SIGKILL
 * included). Not thread-safe: one thread drains it.
 */
#ifndef VNOISE_GUEST_BPF_KTRACE_LOADER_H
#define VNOISE_GUEST_BPF_KTRACE_LOADER_H

#include <stdbool.h>
#include <stdint.h>
#include "noise.h"
#include "bpf/bpfutil.h"

struct ktrace;

struct ktrace_opts {
	const int *cpus; /* monitored CPUs */
	int ncpus;
	int no_hcall; /* do not attach to hypercall wrappers */
};

#define KTRACE_MAX_PROGS 48

struct ktrace_stats {
	uint64_t events; /* records submitted by the kernel side */
	uint64_t dropped; /* records lost to a full ring buffer */
	uint64_t desync; /* exits without entries (attach time), stack overflows */
	uint64_t received; /* records drained by user space */
	uint64_t run_cnt; /* summed over programs (0 when stats could not be enabled) */
	uint64_t run_time_ns;
	int stats_enabled;
	int nprogs;
	struct bpfutil_prog_stat progs[KTRACE_MAX_PROGS]; /* the loaded programs */
};

typedef void (*ktrace_event_fn)(void *ctx, const struct vn_event *ev);

/* Load and attach. Returns 0 or -errno (-EPERM: not privileged); *why gets a static one-line reason. */
int ktrace_open(struct ktrace **out, const struct ktrace_opts *o, const char **why)
    __attribute__((warn_unused_result));
/* Mark tid as the sampler of cpu: its run time is the base level, not noise. */
void ktrace_set_sampler(struct ktrace *kh, int cpu, int tid);
/* Drain the ring buffer without blocking, calling fn per record. Returns records drained or -errno. */
int ktrace_drain(struct ktrace *kh, ktrace_event_fn fn, void *ctx);
int ktrace_get_stats(struct ktrace *kh, struct ktrace_stats *st);
/* Records lost to a full ring buffer so far (cheap: no syscall, unlike ktrace_get_stats). */
uint64_t ktrace_dropped(const struct ktrace *kh);
/* The steal clock in use: "kvm-steal-clock", "rq-steal-clock" or "none". */
const char *ktrace_steal_source(const struct ktrace *kh);
int ktrace_nhcalls(const struct ktrace *kh);
void ktrace_close(struct ktrace *kh);

/*
 * Can the guest's helpers (this one and passive.c) not do without a program of section sec? sched_switch
 * and the irq/softirq pairs are required; vectors, NMI and hypercall wrappers are optional.
 */
bool ktrace_is_required(const char *sec);

#endif
