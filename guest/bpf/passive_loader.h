/* SPDX-License-Identifier: MIT */
/*
 * Loader of the passive kernel helper (passive.bpf.c): the noise that hits target tasks, accumulated in the
 * kernel per target (struct vn_tgt, protocol/app.h) in an array that can be mapped by other processes through
 * passive_tgt_fd(). Targets are processes (tgid), cgroup v2 directories, or the user tasks of chosen CPUs.
 * Everything is released when the owning process exits, SIGKILL included (no pinning, no tracefs).
 */
#ifndef VNOISE_GUEST_BPF_PASSIVE_LOADER_H
#define VNOISE_GUEST_BPF_PASSIVE_LOADER_H

#include <stddef.h>
#include <stdint.h>
#include "app.h"

struct passive;

struct passive_opts {
	const int *cpus; /* CPU mode: the user tasks of these CPUs are targets 0..ncpus-1 */
	int ncpus;
	int cgroups; /* cgroup targets will be added */
	int spans; /* send the targets' run and runnable spans (struct pv_span) for passive_spans() */
};

struct pv_span;
/* Called by passive_spans() for each span record, in ring order (per CPU in time order). */
typedef void (*passive_span_fn)(void *ctx, const struct pv_span *s);

/* Load and attach. 0 or -errno (-EPERM: not privileged); *why gets a static one-line reason. */
int passive_open(struct passive **out, const struct passive_opts *o, const char **why)
    __attribute__((warn_unused_result));
/* Follow process tgid (all its threads). Returns its target index or -errno (-ENOSPC: VN_TGT_MAX reached). */
int passive_add_pid(struct passive *pv, int tgid);
/* Stop following tgid; its index is reused later, after its counters are cleared. */
void passive_del_pid(struct passive *pv, int tgid);
/* Follow the cgroup v2 whose id is cgid (the inode number of its directory). Target index or -errno. */
int passive_add_cgroup(struct passive *pv, uint64_t cgid);
/* The live counters of target idx (read-only, updated by the kernel). */
const struct vn_tgt *passive_tgt(const struct passive *pv, int idx);
/* The counters array for mmap by another process: fd and page-rounded size. */
int passive_tgt_fd(const struct passive *pv);
size_t passive_tgt_size(const struct passive *pv);
/* Target runs the kernel side closed so far (all CPUs): proof that it sees switches. */
uint64_t passive_runs(const struct passive *pv);
/* Drain the span ring (opts.spans): fn for each record. Returns the records read (>= 0) or -errno. Never
 * blocks; call often enough (every <= 100 ms) that the ring (PV_SPAN_RING) does not fill. */
int passive_spans(struct passive *pv, passive_span_fn fn, void *ctx);
/* Span records the kernel side dropped because the ring was full. */
uint64_t passive_span_drops(const struct passive *pv);
/* Turn cause tracking on or off while the helper runs (on after passive_open()). */
void passive_set_detail(struct passive *pv, int on);
void passive_close(struct passive *pv);

#endif
