/* SPDX-License-Identifier: MIT */
/*
 * vmap: what vnoise-host knows of one running domain — name, UUID, virtualisation type, QEMU pid, each
 * vCPU's host thread id, emulator and I/O threads, the ivshmem device and tap devices — read from libvirt
 * (live XML, domain info) and from /proc (QEMU's thread names, "CPU N/TCG" or "CPU N/KVM"), or, with
 * use_qmp, from QMP query-cpus-fast (which taints the domain). Also the per-vCPU counters read each period:
 * libvirt's vcpu.N.delay / vcpu.N.time for all domains in one call, and /proc schedstat.
 * One thread (vnoise-host's main thread) uses these.
 */
#ifndef VNOISE_HOST_LIBVIRT_VMAP_H
#define VNOISE_HOST_LIBVIRT_VMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <libvirt/libvirt.h>
#include "host.h"

#define VMAP_MAX_IOTHREADS 16

struct vmap_vcpu_ctr {
	uint64_t delay_ns, time_ns; /* libvirt, cumulative */
	uint64_t exec_ns, run_delay_ns, pcount; /* schedstat, cumulative */
	bool lv_ok, ss_ok;
};

struct vmap_dom {
	char name[128];
	char uuid[VIR_UUID_STRING_BUFLEN];
	char virt[8]; /* "qemu" (TCG) or "kvm" */
	pid_t qemu_pid;
	uint32_t nvcpus;
	uint32_t tids[VN_HOST_MAX_VCPUS]; /* 0: not found */
	uint32_t emulator_tid;
	uint32_t iothreads[VMAP_MAX_IOTHREADS];
	uint32_t niothreads;
	char shmem[128]; /* "" if none */
	uint64_t shmem_size;
	char taps[256]; /* comma-separated, "" if none */
	char bell
	    [108]; /* host socket of the bell port org.vnoise.bell.0 (protocol/dtl.h), "" if none */
	const char *tid_source; /* "thread-names" or "qmp" */
};

/*
 * Fill m for the running domain dom. Returns 0, -ESRCH (not running / QEMU pid not found), -ENOENT (no
 * vCPU thread found), or another -errno with a one-line reason in msg.
 */
int vmap_map(virDomainPtr dom, bool use_qmp, struct vmap_dom *m, char *msg, size_t msg_len)
    __attribute__((warn_unused_result));

/* Read /proc/<pid>/task/<tid>/schedstat into c (ss_ok). Returns 0 or -errno (thread gone). */
int vmap_schedstat(pid_t pid, uint32_t tid, struct vmap_vcpu_ctr *c);

/*
 * One virConnectGetAllDomainStats(VCPU) call: for every active domain whose UUID matches one of uuids[n],
 * fill ctr[i][vcpu] (lv_ok) for vcpu < nvcpus[i]. Returns 0 or -EIO (connection trouble).
 */
int vmap_libvirt_stats(virConnectPtr conn, const char *const *uuids, const uint32_t *nvcpus,
		       struct vmap_vcpu_ctr *const *ctr, int n);

#endif
