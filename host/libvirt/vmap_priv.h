/* SPDX-License-Identifier: MIT */
/*
 * vmap internals for the unit suite: the reading of a QMP query-cpus-fast reply, a pure function.
 */
#ifndef VNOISE_HOST_LIBVIRT_VMAP_PRIV_H
#define VNOISE_HOST_LIBVIRT_VMAP_PRIV_H

#include <stddef.h>
#include <stdint.h>

#define VMAP_QMP_MAX (1u << 20) /* longest query-cpus-fast reply read, bytes */

/*
 * The vCPU threads in a query-cpus-fast reply of len bytes ({"return":[{"cpu-index":N,"thread-id":TID,
 * ...},...]}, other top-level members such as libvirt's "id" allowed): each element's own "thread-id", not
 * props.thread-id (the thread number within a core). Strict: the reply must be one JSON object whose
 * "return" is an array of objects, each with an integer cpu-index and a thread-id in 1..INT32_MAX, no
 * cpu-index twice. On success tids[0..nvcpus) hold the thread of each vCPU below nvcpus (0 for one not
 * listed; vCPUs at or above nvcpus are skipped) and the number of vCPUs set is returned. Else tids is left
 * as it was, a one-line reason is written to msg (msg_len bytes) and -EPROTO (malformed, not that shape),
 * -EREMOTEIO (a QMP error reply), -E2BIG (longer than VMAP_QMP_MAX or nested too deep) or -ENOMEM is
 * returned.
 */
int vmap_qmp_tids(const char *reply, size_t len, uint32_t nvcpus, uint32_t *tids, char *msg,
		  size_t msg_len) __attribute__((warn_unused_result));

#endif
