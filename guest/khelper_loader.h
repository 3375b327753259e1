/* SPDX-License-Identifier: MIT */
/*
 * Loader of the eBPF kernel helper (khelper.bpf.c): open -> set rodata -> load -> attach -> drain -> close.
 * One struct khelper owns the BPF object, its links, the ring buffer reader and the BPF_ENABLE_STATS fd
 * (run-time statistics stay on only while that fd is open, so nothing is left changed on any exit, SIGKILL
 * included). Not thread-safe: one thread drains it.
 */
#ifndef VNOISE_KHELPER_LOADER_H
#define VNOISE_KHELPER_LOADER_H

#include <stdint.h>
#include "noise.h"

struct khelper;

struct khelper_opts {
	const int *cpus; /* monitored CPUs */
	int ncpus;
	int no_hcall; /* do not attach to hypercall wrappers */
};

#define KHELPER_MAX_PROGS 48

struct khelper_prog_stat {
	char name[40];
	uint64_t run_cnt;
	uint64_t run_time_ns;
};

struct khelper_stats {
	uint64_t events; /* records submitted by the kernel side */
	uint64_t dropped; /* records lost to a full ring buffer */
	uint64_t desync; /* exits without entries (attach time), stack overflows */
	uint64_t received; /* records drained by user space */
	uint64_t run_cnt; /* summed over programs (0 when stats could not be enabled) */
	uint64_t run_time_ns;
	int stats_enabled;
	int nprogs;
	struct khelper_prog_stat progs[KHELPER_MAX_PROGS];
};

typedef void (*khelper_event_fn)(void *ctx, const struct vn_event *ev);

/* Load and attach. Returns 0 or -errno (-EPERM: not privileged); *why gets a static one-line reason. */
int khelper_open(struct khelper **out, const struct khelper_opts *o, const char **why)
    __attribute__((warn_unused_result));
/* Mark tid as the sampler of cpu: its run time is the base level, not noise. */
void khelper_set_sampler(struct khelper *kh, int cpu, int tid);
/* Drain the ring buffer without blocking, calling fn per record. Returns records drained or -errno. */
int khelper_drain(struct khelper *kh, khelper_event_fn fn, void *ctx);
int khelper_get_stats(struct khelper *kh, struct khelper_stats *st);
/* Records lost to a full ring buffer so far (cheap: no syscall, unlike khelper_get_stats). */
uint64_t khelper_dropped(const struct khelper *kh);
/* "kvm steal clock" or "none" */
const char *khelper_steal_source(const struct khelper *kh);
int khelper_nhcalls(const struct khelper *kh);
void khelper_close(struct khelper *kh);

struct btf;
/* Does this kernel have what a program of section sec ("tp_btf/x", "fentry/f") attaches to? */
int khelper_has_target(const struct btf *vmlinux, const char *sec);

#endif
