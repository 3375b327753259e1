/* SPDX-License-Identifier: MIT */
/*
 * hostbind: a domain's binding as the HOST_DOMAIN text chunk of a record file ("dom=", "event=", "name=",
 * "uuid=", "vcpu.N.tid=" ... lines): written by the live engine when it maps, re-maps or loses a domain, and
 * applied to an aggregate by the engine itself and by the record reader, so that a file replays into the
 * same bindings the live views had. Also the key lookups of the record's text chunks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "engine/hostbind.h"
#include "format/recfile.h"
#include "util/parse.h"

int hostbind_text(char *buf, size_t cap, uint32_t dom, const struct vmap_dom *m, const char *event,
		  uint64_t t_ns)
{
	size_t o = 0;
	uint32_t i;
	int n;

#define PUT(...)                                             \
	do {                                                 \
		n = snprintf(buf + o, cap - o, __VA_ARGS__); \
		if (n < 0 || (size_t)n >= cap - o)           \
			return -ENOSPC;                      \
		o += (size_t)n;                              \
	} while (0)
	PUT("dom=%u\nevent=%s\nt_ns=%" PRIu64
	    "\nname=%s\nuuid=%s\nvirt=%s\nqemu_pid=%d\nnvcpus=%u\n",
	    dom, event, t_ns, m->name, m->uuid, m->virt, (int)m->qemu_pid, m->nvcpus);
	PUT("emulator_tid=%u\ntid_source=%s\nshmem=%s\nshmem_size=%" PRIu64 "\ntaps=%s\n",
	    m->emulator_tid, m->tid_source ? m->tid_source : "", m->shmem, m->shmem_size, m->taps);
	PUT("iothreads=");
	for (i = 0; i < m->niothreads; i++)
		PUT("%s%u", i ? "," : "", m->iothreads[i]);
	PUT("\n");
	for (i = 0; i < m->nvcpus; i++)
		PUT("vcpu.%u.tid=%u\n", i, m->tids[i]);
#undef PUT
	return (int)o;
}

bool hostbind_kv_str(const void *pl, size_t len, const char *key, char *out, size_t cap)
{
	const char *v;
	size_t vl;

	if (!recfile_kv_get(pl, len, key, &v, &vl) || vl >= cap)
		return false;
	memcpy(out, v, vl);
	out[vl] = 0;
	return true;
}

bool hostbind_kv_u64(const void *pl, size_t len, const char *key, uint64_t *out)
{
	char buf[32];

	return hostbind_kv_str(pl, len, key, buf, sizeof(buf)) && !parse_u64(buf, out);
}

int hostbind_apply(struct hostagg *a, const void *payload, size_t len)
{
	char name[HOSTAGG_NAME_LEN], uuid[40], virt[8], event[16];
	uint64_t dom, pid = 0, nv, tid;
	uint32_t i;
	int rc;

	if (!hostbind_kv_u64(payload, len, "dom", &dom) || dom >= VN_HOST_MAX_DOMAINS ||
	    !hostbind_kv_u64(payload, len, "nvcpus", &nv) || nv > VN_HOST_MAX_VCPUS ||
	    !hostbind_kv_str(payload, len, "event", event, sizeof(event)))
		return -EINVAL;
	if (!hostbind_kv_str(payload, len, "name", name, sizeof(name)))
		name[0] = 0;
	if (!hostbind_kv_str(payload, len, "uuid", uuid, sizeof(uuid)))
		uuid[0] = 0;
	if (!hostbind_kv_str(payload, len, "virt", virt, sizeof(virt)))
		virt[0] = 0;
	if (!hostbind_kv_u64(payload, len, "qemu_pid", &pid) || pid > UINT32_MAX)
		pid = 0;
	rc = hostagg_domain(a, (uint32_t)dom, name, uuid, virt, (uint32_t)pid, (uint32_t)nv, event);
	if (rc)
		return rc;
	for (i = 0; i < nv; i++) {
		char key[32];

		snprintf(key, sizeof(key), "vcpu.%u.tid", i);
		if (hostbind_kv_u64(payload, len, key, &tid) && tid && tid <= UINT32_MAX &&
		    hostagg_vcpu_tid(a, (uint32_t)dom, i, (uint32_t)tid))
			return -EINVAL;
	}
	return 0;
}
