/* SPDX-License-Identifier: MIT */
/*
 * hostlist: the output of `vnoise-host list` — each mapped domain's QEMU pid, vCPU, emulator and I/O thread
 * ids, shared-memory and tap devices — as text lines or as the JSON document "vnoise.list/1". Pure printers
 * over vmap's domain maps (libvirt is not called), and `list` as a sink of the live engine.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTLIST_H
#define VNOISE_HOST_VIEWS_HOSTLIST_H

#include <stdio.h>
#include "libvirt/vmap.h"

/* The text list of doms[0..n-1] to f: a line per domain, then one per vCPU and I/O thread. */
void hostlist_text(FILE *f, const struct vmap_dom *const *doms, int n);

/*
 * One JSON document "vnoise.list/1" to f: {schema, version, uri, domains: [{name, uuid, virt, qemu_pid,
 * emulator_tid, tid_source, vcpus: [{vcpu, tid}], iothreads: [tid], shmem (null if none), shmem_size,
 * taps: [name]}]}. Returns 0 or -errno from the JSON writer.
 */
int hostlist_json(FILE *f, const char *uri, const struct vmap_dom *const *doms, int n)
    __attribute__((warn_unused_result));

struct live;
struct host_params;

/* `list` as a sink of the live engine: once the domains are mapped, their list on stdout as text, or with
 * p->json as vnoise.list/1 (p->uri, default qemu:///system); the run ends there. Returns 0 or -ENOMEM,
 * -ENOSPC. */
int hostlist_sink_add(struct live *lv, const struct host_params *p)
    __attribute__((warn_unused_result));

#endif
