/* SPDX-License-Identifier: MIT */
/*
 * vmap: domain -> QEMU pid, vCPU/emulator/I/O thread ids, devices; per-vCPU counters (see vmap.h).
 * REFERENCE.md §2: QEMU pid from /var/run/libvirt/qemu/<name>.pid, vCPU.N.delay = run_delay in ns,
 * query-cpus-fast's thread-id (not props.thread-id) when QMP is used, read with util/jsonread.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libvirt/libvirt-qemu.h>
#include "dtl.h"
#include "util/jsonread.h"
#include "util/log.h"
#include "util/parse.h"
#include "libvirt/session.h"
#include "libvirt/qemuthread.h"
#include "libvirt/virtxml.h"
#include "libvirt/vmap.h"
#include "libvirt/vmap_priv.h"

static int read_small(const char *path, char *buf, size_t cap)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return (int)n;
	}
	close(fd);
	buf[n] = 0;
	return (int)n;
}

static int qemu_pid_of(virDomainPtr dom, const char *name, pid_t *pid)
{
	char path[512], buf[64];
	uint64_t v;
	char *nl;

	(void)dom;
	snprintf(path, sizeof(path), "/var/run/libvirt/qemu/%s.pid", name);
	if (read_small(path, buf, sizeof(buf)) <= 0)
		return -ESRCH;
	nl = strchr(buf, '\n');
	if (nl)
		*nl = 0;
	if (parse_u64(buf, &v) || v < 2 || v > 4194304)
		return -ESRCH;
	*pid = (pid_t)v;
	return 0;
}

/* Thread names under /proc/<pid>/task: vCPU N -> tid, emulator (tid == pid), I/O threads. */
static int map_by_names(struct vmap_dom *m)
{
	char path[320], comm[64];
	struct dirent *de;
	DIR *d;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)m->qemu_pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		uint64_t tid;
		unsigned vcpu;
		char *nl;

		if (parse_u64(de->d_name, &tid) || tid > UINT32_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", (int)m->qemu_pid, de->d_name);
		if (read_small(path, comm, sizeof(comm)) <= 0)
			continue;
		nl = strchr(comm, '\n');
		if (nl)
			*nl = 0;
		if (tid == (uint64_t)m->qemu_pid)
			m->emulator_tid = (uint32_t)tid;
		switch (qemuthread_classify(comm, &vcpu, NULL, 0)) {
		case QEMUTHREAD_VCPU:
			if (vcpu < m->nvcpus && !m->tids[vcpu]) {
				m->tids[vcpu] = (uint32_t)tid;
				found++;
			}
			break;
		case QEMUTHREAD_IOTHREAD:
			if (m->niothreads < VMAP_MAX_IOTHREADS)
				m->iothreads[m->niothreads++] = (uint32_t)tid;
			break;
		default:
			break;
		}
	}
	closedir(d);
	return found;
}

int vmap_qmp_tids(const char *reply, size_t len, uint32_t nvcpus, uint32_t *tids, char *msg,
		  size_t msg_len)
{
	uint32_t got[VN_HOST_MAX_VCPUS] = { 0 };
	const struct jsonr_value *root, *ret, *e;
	struct jsonr_doc *doc = NULL;
	int rc, i = 0, found = 0;

	if (nvcpus > VN_HOST_MAX_VCPUS)
		nvcpus = VN_HOST_MAX_VCPUS;
	if (len > VMAP_QMP_MAX) {
		snprintf(msg, msg_len, "reply of %zu bytes, more than %u", len, VMAP_QMP_MAX);
		return -E2BIG;
	}
	/* every value takes at least one byte and a separator: len / 2 + 2 values always fit */
	doc = jsonr_doc_new(len ? len : 1, (uint32_t)(len / 2 + 2));
	if (!doc) {
		snprintf(msg, msg_len, "%s", strerror(errno));
		return -ENOMEM;
	}
	rc = jsonr_parse(doc, reply, len, &root);
	if (rc) {
		snprintf(msg, msg_len, "reply is not JSON (%s at byte %zu)", doc->err,
			 doc->err_off);
		rc = rc == -E2BIG ? -E2BIG : -EPROTO;
		goto out;
	}
	rc = -EPROTO;
	if (root->kind != JSONR_OBJ) {
		snprintf(msg, msg_len, "reply is not a JSON object");
		goto out;
	}
	if (jsonr_obj_get(root, "error")) {
		const char *desc =
		    jsonr_get_str(jsonr_obj_get(jsonr_obj_get(root, "error"), "desc"));

		snprintf(msg, msg_len, "QMP error: %.200s", desc ? desc : "(no description)");
		rc = -EREMOTEIO;
		goto out;
	}
	ret = jsonr_obj_get(root, "return");
	if (!ret || ret->kind != JSONR_ARR) {
		snprintf(msg, msg_len, "reply has no \"return\" array");
		goto out;
	}
	for (e = ret->child; e; e = e->next, i++) {
		uint64_t idx, tid;

		if (e->kind != JSONR_OBJ || jsonr_get_u64(jsonr_obj_get(e, "cpu-index"), &idx) ||
		    jsonr_get_u64(jsonr_obj_get(e, "thread-id"), &tid) || tid < 1 ||
		    tid > INT32_MAX) {
			snprintf(msg, msg_len,
				 "element %d of \"return\" lacks an integer cpu-index or thread-id",
				 i);
			goto out;
		}
		if (idx >= nvcpus)
			continue;
		if (got[idx]) {
			snprintf(msg, msg_len, "cpu-index %" PRIu64 " listed twice", idx);
			goto out;
		}
		got[idx] = (uint32_t)tid;
		found++;
	}
	memcpy(tids, got, nvcpus * sizeof(*tids));
	rc = found;
out:
	jsonr_doc_free(doc);
	return rc;
}

/* QMP query-cpus-fast into m->tids. The number of vCPUs found, or -errno with the reason in msg. */
static int map_by_qmp(virDomainPtr dom, struct vmap_dom *m, char *msg, size_t msg_len)
{
	char *reply = NULL;
	int rc;

	if (virDomainQemuMonitorCommand(dom, "{\"execute\":\"query-cpus-fast\"}", &reply, 0) < 0) {
		snprintf(msg, msg_len, "%s", session_last_error());
		return -EIO;
	}
	rc = vmap_qmp_tids(reply, reply ? strlen(reply) : 0, m->nvcpus, m->tids, msg, msg_len);
	free(reply);
	return rc;
}

int vmap_map(virDomainPtr dom, bool use_qmp, struct vmap_dom *m, char *msg, size_t msg_len)
{
	virDomainInfo info;
	const char *name;
	char *xml = NULL;
	int rc, found;

	memset(m, 0, sizeof(*m));
	name = virDomainGetName(dom);
	if (!name || virDomainGetUUIDString(dom, m->uuid) < 0) {
		snprintf(msg, msg_len, "domain lookup: %s", session_last_error());
		return -EIO;
	}
	snprintf(m->name, sizeof(m->name), "%s", name);
	if (virDomainGetInfo(dom, &info) < 0) {
		snprintf(msg, msg_len, "domain %s: %s", name, session_last_error());
		return -EIO;
	}
	if (info.state != VIR_DOMAIN_RUNNING && info.state != VIR_DOMAIN_PAUSED &&
	    info.state != VIR_DOMAIN_BLOCKED) {
		snprintf(msg, msg_len, "domain %s is not running", name);
		return -ESRCH;
	}
	m->nvcpus = info.nrVirtCpu > VN_HOST_MAX_VCPUS ? VN_HOST_MAX_VCPUS : info.nrVirtCpu;
	xml = virDomainGetXMLDesc(dom, 0);
	if (!xml) {
		snprintf(msg, msg_len, "domain %s XML: %s", name, session_last_error());
		return -EIO;
	}
	if (virtxml_domain_type(xml, m->virt, sizeof(m->virt)))
		snprintf(m->virt, sizeof(m->virt), "?");
	if (virtxml_shmem(xml, m->shmem, sizeof(m->shmem), &m->shmem_size) < 0)
		m->shmem[0] = 0;
	if (virtxml_channel_path(xml, VN_DTL_BELL_PORT, m->bell, sizeof(m->bell)))
		m->bell[0] = 0;
	if (virtxml_taps(xml, m->taps, sizeof(m->taps)) < 0)
		log_warn("domain %s: tap list too long, truncated", name);
	free(xml);
	rc = qemu_pid_of(dom, name, &m->qemu_pid);
	if (rc) {
		snprintf(msg, msg_len,
			 "domain %s: QEMU pid not found (/var/run/libvirt/qemu/%s.pid)", name,
			 name);
		return rc;
	}
	if (use_qmp) {
		char why[256];

		found = map_by_qmp(dom, m, why, sizeof(why));
		m->tid_source = "qmp";
		if (found < 0) {
			snprintf(msg, msg_len, "domain %s: query-cpus-fast: %s", name, why);
			return found;
		}
		(void)map_by_names(m); /* emulator and I/O threads; vCPU slots already set stay */
	} else {
		found = map_by_names(m);
		m->tid_source = "thread-names";
		if (found < 0) {
			snprintf(msg, msg_len, "domain %s: /proc/%d/task: %s", name,
				 (int)m->qemu_pid, strerror(-found));
			return found;
		}
	}
	if (found == 0) {
		snprintf(msg, msg_len, "domain %s: no vCPU thread found (%s)%s", name,
			 m->tid_source, use_qmp ? "" : "; try --qmp");
		return -ENOENT;
	}
	if ((uint32_t)found < m->nvcpus)
		log_warn("domain %s: %d of %u vCPU threads found (%s)", name, found, m->nvcpus,
			 m->tid_source);
	return 0;
}

int vmap_schedstat(pid_t pid, uint32_t tid, struct vmap_vcpu_ctr *c)
{
	char path[128], buf[128];
	unsigned long long a, b, d;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/task/%u/schedstat", (int)pid, tid);
	rc = read_small(path, buf, sizeof(buf));
	if (rc <= 0)
		return rc < 0 ? rc : -EIO;
	if (sscanf(buf, "%llu %llu %llu", &a, &b, &d) != 3)
		return -EIO;
	c->exec_ns = a;
	c->run_delay_ns = b;
	c->pcount = d;
	c->ss_ok = true;
	return 0;
}

int vmap_libvirt_stats(virConnectPtr conn, const char *const *uuids, const uint32_t *nvcpus,
		       struct vmap_vcpu_ctr *const *ctr, int n)
{
	virDomainStatsRecordPtr *recs = NULL;
	int nrec, i, j;

	nrec = virConnectGetAllDomainStats(conn, VIR_DOMAIN_STATS_VCPU, &recs,
					   VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE);
	if (nrec < 0)
		return -EIO;
	for (i = 0; i < nrec; i++) {
		char uuid[VIR_UUID_STRING_BUFLEN];

		if (virDomainGetUUIDString(recs[i]->dom, uuid) < 0)
			continue;
		for (j = 0; j < n; j++) {
			uint32_t v;

			if (!uuids[j] || strcmp(uuids[j], uuid))
				continue;
			for (v = 0; v < nvcpus[j]; v++) {
				char key[48];
				unsigned long long delay, t;
				int okd, okt;

				snprintf(key, sizeof(key), "vcpu.%u.delay", v);
				okd = virTypedParamsGetULLong(recs[i]->params, recs[i]->nparams,
							      key, &delay);
				snprintf(key, sizeof(key), "vcpu.%u.time", v);
				okt = virTypedParamsGetULLong(recs[i]->params, recs[i]->nparams,
							      key, &t);
				if (okd == 1 && okt == 1) {
					ctr[j][v].delay_ns = delay;
					ctr[j][v].time_ns = t;
					ctr[j][v].lv_ok = true;
				}
			}
		}
	}
	virDomainStatsRecordListFree(recs);
	return 0;
}
