/* SPDX-License-Identifier: MIT */
/*
 * taskclass: the cause class (protocol/dtl.h enum vn_dtl_class) of a host task that ran on the pCPU a
 * domain's vCPU left, for the dispatch trace log. A vCPU thread of another domain is OTHER_VCPU (every
 * monitored domain's vCPU thread ids are registered; a thread named "CPU N/KVM" or "CPU N/TCG" of an
 * unmonitored QEMU counts too); a thread of this domain's QEMU process is QEMU (its main loop, iothreads,
 * workers, and its own other vCPUs); a kernel thread (PF_KTHREAD in /proc/PID/stat, or a child of kthreadd)
 * is HOST_KTHREAD; anything else HOST_USER. pid 0 (idle) is IDLE, never a cause.
 *
 * What /proc says of a task (kernel thread, thread group) is read once and cached per pid in a bounded,
 * direct-mapped cache (TASKCLASS_CACHE entries): an entry is read again when the comm the caller sees
 * differs (pid reuse) or after TASKCLASS_TTL_NS. Lookups of cached pids make no system call.
 * Single-threaded: vnoise-host's main thread owns it.
 */
#ifndef VNOISE_HOST_MATCH_TASKCLASS_H
#define VNOISE_HOST_MATCH_TASKCLASS_H

#include <stdint.h>
#include <sys/types.h>

#define TASKCLASS_CACHE 1024u /* pids cached (power of two) */
#define TASKCLASS_TTL_NS 10000000000ULL /* a cached pid is read again after this (host ns) */
#define TASKCLASS_MAX_DOMS 64u /* domain indices are < this (VN_HOST_MAX_DOMAINS) */

struct taskclass;

/* A classifier reading proc_root (NULL: "/proc"; tests pass a directory of fake PID/stat, PID/status).
 * Returns NULL with errno. */
struct taskclass *taskclass_new(const char *proc_root) __attribute__((warn_unused_result));
void taskclass_free(struct taskclass *tc); /* accepts NULL */

/* Register domain dom's QEMU pid and vCPU thread ids (n, 0 entries ignored), replacing what it had.
 * Returns 0, -EINVAL (dom out of range) or -ENOMEM (the domain is then unregistered). */
int taskclass_set_domain(struct taskclass *tc, uint32_t dom, pid_t qemu_pid, const uint32_t *tids,
			 uint32_t n) __attribute__((warn_unused_result));
void taskclass_del_domain(struct taskclass *tc, uint32_t dom);

/* The class of host task pid (comm as the dispatch log saw it, may be NULL) as a cause for domain dom's
 * vCPUs, at host time now_ns (for the cache's TTL). */
uint32_t taskclass_of(struct taskclass *tc, uint32_t dom, uint32_t pid, const char *comm,
		      uint64_t now_ns);

#endif
