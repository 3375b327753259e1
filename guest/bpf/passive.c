/* SPDX-License-Identifier: MIT */
/* passive: loads the passive kernel helper from its skeleton (guest/bpf/passive_loader.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bpf/bpfutil.h"
#include "bpf/ktrace_loader.h"
#include "bpf/passive.h"
#include "bpf/passive_loader.h"
#include "passive.skel.h"

struct passive {
	struct passive_bpf *skel;
	struct vn_tgt *tgt; /* mmapped pv_tgt */
	size_t tgt_len;
	int used[VN_TGT_MAX]; /* tgid (or 1 for cgroup/CPU targets) holding each index; 0: free */
	int ncpu; /* indexes 0..ncpu-1 belong to CPU mode */
	struct ring_buffer *spans; /* the span ring (opts.spans) */
	passive_span_fn span_fn; /* the current passive_spans() call's callback */
	void *span_ctx;
};

/* The settings in .rodata: the CPUs whose user tasks are targets 0..ncpus-1, cgroup lookups on or off. */
static int pv_configure(struct passive *pv, const struct passive_opts *o, const char **why)
{
	int i;

	for (i = 0; i < o->ncpus; i++) {
		if (o->cpus[i] < 0 || o->cpus[i] >= PV_MAX_CPUS || o->cpus[i] >= VN_TGT_MAX) {
			*why = "CPU number beyond the passive helper's limit (256)";
			return -ERANGE;
		}
		pv->skel->rodata->cfg.cpu_slot[o->cpus[i]] = (__u32)i + 1;
		pv->used[i] = 1;
	}
	pv->ncpu = o->ncpus;
	pv->skel->rodata->cfg.ncgroups = o->cgroups ? 1 : 0;
	pv->skel->rodata->cfg.spans = o->spans ? 1 : 0;
	if (o->spans && bpf_map__set_max_entries(pv->skel->maps.pv_spans, PV_SPAN_RING)) {
		*why = "cannot size the span ring";
		return -EINVAL;
	}
	if (!o->spans) /* no span records: the wakeup program has nothing to do */
		bpf_program__set_autoload(pv->skel->progs.pv_sched_wakeup, false);
	return 0;
}

/* ring_buffer callback: one span record to the caller of passive_spans(). */
static int pv_span_cb(void *ctx, void *data, size_t len)
{
	struct passive *pv = ctx;

	if (len >= sizeof(struct pv_span) && pv->span_fn)
		pv->span_fn(pv->span_ctx, data);
	return 0;
}

/* Open -> configure -> leave out what this kernel lacks -> load -> attach -> map the counters. */
static int pv_load(struct passive *pv, const struct passive_opts *o, const char **why)
{
	struct btf *vmlinux;
	int err;

	bpfutil_set_print(); /* libbpf's own lines only with -v: the reason is said in one line */
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		*why = "no kernel BTF (/sys/kernel/btf/vmlinux)";
		return -ENOENT;
	}
	pv->skel = passive_bpf__open();
	if (!pv->skel) {
		btf__free(vmlinux);
		*why = "cannot open the passive kernel helper";
		return -errno ? -errno : -EINVAL;
	}
	err = pv_configure(pv, o, why);
	if (!err && bpfutil_drop_missing(pv->skel->obj, vmlinux, ktrace_is_required, NULL)) {
		*why = "kernel lacks a required tracepoint";
		err = -ENOTSUP;
	}
	btf__free(vmlinux);
	if (err)
		return err;
	err = passive_bpf__load(pv->skel);
	if (err) {
		*why = err == -EPERM ? BPFUTIL_WHY_EPERM
				     : "the kernel refused the passive helper's eBPF programs";
		return err;
	}
	err = passive_bpf__attach(pv->skel);
	if (err) {
		*why = "cannot attach the passive helper";
		return err;
	}
	pv->tgt_len = ((size_t)VN_TGT_MAX * sizeof(struct vn_tgt) + 4095) & ~(size_t)4095;
	pv->tgt =
	    mmap(NULL, pv->tgt_len, PROT_READ, MAP_SHARED, bpf_map__fd(pv->skel->maps.pv_tgt), 0);
	if (pv->tgt == MAP_FAILED) {
		pv->tgt = NULL;
		*why = "cannot map the target counters";
		return -errno;
	}
	if (o->spans) {
		pv->spans =
		    ring_buffer__new(bpf_map__fd(pv->skel->maps.pv_spans), pv_span_cb, pv, NULL);
		if (!pv->spans) {
			*why = "cannot map the span ring";
			return -errno ? -errno : -ENOMEM;
		}
	}
	return 0;
}

int passive_open(struct passive **out, const struct passive_opts *o, const char **why)
{
	struct passive *pv = calloc(1, sizeof(*pv));
	int err;

	*out = NULL;
	*why = "";
	if (!pv)
		return -ENOMEM;
	err = pv_load(pv, o, why);
	if (err) {
		passive_close(pv);
		return err;
	}
	*out = pv;
	return 0;
}

/* A free index, its counters cleared (the array is not writable through the mapping: use the syscall). */
static int pv_take(struct passive *pv, int owner)
{
	static const struct vn_tgt zero;
	__u32 i;

	for (i = (__u32)pv->ncpu; i < VN_TGT_MAX; i++) {
		if (pv->used[i])
			continue;
		if (bpf_map_update_elem(bpf_map__fd(pv->skel->maps.pv_tgt), &i, &zero, BPF_ANY))
			return -errno;
		pv->used[i] = owner;
		return (int)i;
	}
	return -ENOSPC;
}

int passive_add_pid(struct passive *pv, int tgid)
{
	__u32 key = (__u32)tgid, idx;
	int i;

	if (tgid <= 0)
		return -EINVAL;
	i = pv_take(pv, tgid);
	if (i < 0)
		return i;
	idx = (__u32)i;
	if (bpf_map_update_elem(bpf_map__fd(pv->skel->maps.pv_tgid), &key, &idx, BPF_NOEXIST)) {
		pv->used[i] = 0;
		return -errno;
	}
	return i;
}

void passive_del_pid(struct passive *pv, int tgid)
{
	__u32 key = (__u32)tgid, idx;

	if (!bpf_map_lookup_elem(bpf_map__fd(pv->skel->maps.pv_tgid), &key, &idx)) {
		bpf_map_delete_elem(bpf_map__fd(pv->skel->maps.pv_tgid), &key);
		if (idx < VN_TGT_MAX)
			pv->used[idx] = 0;
	}
}

int passive_add_cgroup(struct passive *pv, uint64_t cgid)
{
	__u64 key = cgid;
	__u32 idx;
	int i = pv_take(pv, 1);

	if (i < 0)
		return i;
	idx = (__u32)i;
	if (bpf_map_update_elem(bpf_map__fd(pv->skel->maps.pv_cgrp), &key, &idx, BPF_NOEXIST)) {
		pv->used[i] = 0;
		return -errno;
	}
	return i;
}

const struct vn_tgt *passive_tgt(const struct passive *pv, int idx)
{
	if (!pv->tgt || idx < 0 || idx >= VN_TGT_MAX)
		return NULL;
	return &pv->tgt[idx];
}

int passive_tgt_fd(const struct passive *pv)
{
	return bpf_map__fd(pv->skel->maps.pv_tgt);
}

size_t passive_tgt_size(const struct passive *pv)
{
	return pv->tgt_len;
}

void passive_set_detail(struct passive *pv, int on)
{
	__atomic_store_n(&pv->skel->data->pv_detail, on ? 1u : 0u, __ATOMIC_RELAXED);
}

uint64_t passive_runs(const struct passive *pv)
{
	uint64_t n = 0;

	for (int i = 0; i < PV_MAX_CPUS; i++)
		n += __atomic_load_n(&pv->skel->bss->pv_cpus[i].runs, __ATOMIC_RELAXED);
	return n;
}

int passive_spans(struct passive *pv, passive_span_fn fn, void *ctx)
{
	int n;

	if (!pv->spans)
		return 0;
	pv->span_fn = fn;
	pv->span_ctx = ctx;
	n = ring_buffer__consume(pv->spans);
	pv->span_fn = NULL;
	return n;
}

uint64_t passive_span_drops(const struct passive *pv)
{
	uint64_t n = 0;

	for (int i = 0; i < PV_MAX_CPUS; i++)
		n += __atomic_load_n(&pv->skel->bss->pv_cpus[i].span_drops, __ATOMIC_RELAXED);
	return n;
}

void passive_close(struct passive *pv)
{
	if (!pv)
		return;
	ring_buffer__free(pv->spans);
	if (pv->tgt)
		munmap(pv->tgt, pv->tgt_len);
	passive_bpf__destroy(pv->skel);
	free(pv);
}
