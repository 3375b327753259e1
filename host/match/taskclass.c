/* SPDX-License-Identifier: MIT */
/*
 * taskclass: host task -> DTL cause class (see taskclass.h). The vCPU threads of all registered domains are
 * kept in one array sorted by tid (rebuilt when a domain changes: rare), searched per lookup. /proc is read
 * only on a cache miss: PID/stat (flags, parent) and PID/status (Tgid).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dtl.h"
#include "match/taskclass.h"
#include "match/taskclass_priv.h"

#define PF_KTHREAD 0x00200000u
#define KTHREADD_PID 2u

struct tc_entry {
	uint32_t pid; /* 0: empty */
	uint32_t tgid; /* 0: unknown (the task was gone) */
	bool kthread;
	char comm[VN_DTL_COMM_LEN]; /* as the caller saw it when read */
	uint64_t read_ns;
};

struct tc_vcpu {
	uint32_t tid;
	uint32_t dom;
};

struct tc_dom {
	pid_t qemu_pid; /* 0: not registered */
	uint32_t *tids;
	uint32_t n;
};

struct taskclass {
	char root[256];
	struct tc_dom dom[TASKCLASS_MAX_DOMS];
	struct tc_vcpu *vcpus; /* sorted by tid */
	uint32_t nvcpus;
	struct tc_entry cache[TASKCLASS_CACHE];
	struct taskclass_stats st;
};

struct taskclass *taskclass_new(const char *proc_root)
{
	struct taskclass *tc = calloc(1, sizeof(*tc));

	if (!tc)
		return NULL;
	snprintf(tc->root, sizeof(tc->root), "%s", proc_root ? proc_root : "/proc");
	return tc;
}

void taskclass_free(struct taskclass *tc)
{
	if (!tc)
		return;
	for (uint32_t i = 0; i < TASKCLASS_MAX_DOMS; i++)
		free(tc->dom[i].tids);
	free(tc->vcpus);
	free(tc);
}

static int cmp_vcpu(const void *a, const void *b)
{
	const struct tc_vcpu *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The sorted index of every registered vCPU thread. */
static int rebuild(struct taskclass *tc)
{
	uint32_t n = 0, k = 0;
	struct tc_vcpu *v;

	for (uint32_t d = 0; d < TASKCLASS_MAX_DOMS; d++)
		n += tc->dom[d].n;
	v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v)
		return -ENOMEM;
	for (uint32_t d = 0; d < TASKCLASS_MAX_DOMS; d++)
		for (uint32_t i = 0; i < tc->dom[d].n; i++)
			v[k++] = (struct tc_vcpu){ .tid = tc->dom[d].tids[i], .dom = d };
	if (k)
		qsort(v, k, sizeof(*v), cmp_vcpu);
	free(tc->vcpus);
	tc->vcpus = v;
	tc->nvcpus = k;
	return 0;
}

void taskclass_del_domain(struct taskclass *tc, uint32_t dom)
{
	if (dom >= TASKCLASS_MAX_DOMS || !tc->dom[dom].qemu_pid)
		return;
	free(tc->dom[dom].tids);
	tc->dom[dom] = (struct tc_dom){ 0 };
	(void)rebuild(tc); /* fewer entries: cannot fail for lack of memory in a way that matters */
}

int taskclass_set_domain(struct taskclass *tc, uint32_t dom, pid_t qemu_pid, const uint32_t *tids,
			 uint32_t n)
{
	struct tc_dom *d;
	uint32_t k = 0;

	if (dom >= TASKCLASS_MAX_DOMS)
		return -EINVAL;
	taskclass_del_domain(tc, dom);
	d = &tc->dom[dom];
	d->tids = n ? malloc(n * sizeof(*d->tids)) : NULL;
	if (n && !d->tids)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		if (tids[i])
			d->tids[k++] = tids[i];
	d->n = k;
	d->qemu_pid = qemu_pid > 0 ? qemu_pid : -1;
	if (rebuild(tc)) {
		free(d->tids);
		*d = (struct tc_dom){ 0 };
		return -ENOMEM;
	}
	return 0;
}

/* The domain whose vCPU thread tid is, or -1. */
static int vcpu_dom(const struct taskclass *tc, uint32_t tid)
{
	uint32_t lo = 0, hi = tc->nvcpus;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (tc->vcpus[mid].tid == tid)
			return (int)tc->vcpus[mid].dom;
		if (tc->vcpus[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Read a small /proc file into buf (NUL-terminated). Returns its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* PID/stat: the fields after "(comm)": state ppid pgrp session tty_nr tpgid flags. */
static bool read_stat(const struct taskclass *tc, uint32_t pid, uint32_t *ppid, uint32_t *flags)
{
	char path[300], buf[1024], *p;
	unsigned long long pp, fl;
	char state;

	snprintf(path, sizeof(path), "%s/%u/stat", tc->root, pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return false;
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c %llu %*d %*d %*d %*d %llu", &state, &pp, &fl) != 3)
		return false;
	*ppid = (uint32_t)pp;
	*flags = (uint32_t)fl;
	return true;
}

/* PID/status: Tgid, or 0. */
static uint32_t read_tgid(const struct taskclass *tc, uint32_t pid)
{
	char path[300], buf[4096], *p;
	unsigned long t;

	snprintf(path, sizeof(path), "%s/%u/status", tc->root, pid);
	if (read_small(path, buf, sizeof(buf)) < 0)
		return 0;
	p = strstr(buf, "\nTgid:");
	if (!p || sscanf(p + 6, " %lu", &t) != 1)
		return 0;
	return (uint32_t)t;
}

static bool same_comm(const char *a, const char *b)
{
	return !strncmp(a, b ? b : "", VN_DTL_COMM_LEN);
}

/* The cache entry of pid, read from /proc when missing, for another comm, or old. */
static const struct tc_entry *lookup(struct taskclass *tc, uint32_t pid, const char *comm,
				     uint64_t now_ns)
{
	struct tc_entry *e = &tc->cache[(pid * 2654435761u) & (TASKCLASS_CACHE - 1)];
	uint32_t ppid = 0, flags = 0;

	if (e->pid == pid && same_comm(e->comm, comm) && now_ns >= e->read_ns &&
	    now_ns - e->read_ns < TASKCLASS_TTL_NS)
		return e;
	if (e->pid && e->pid != pid)
		tc->st.evictions++;
	tc->st.reads++;
	memset(e, 0, sizeof(*e));
	e->pid = pid;
	e->read_ns = now_ns;
	snprintf(e->comm, sizeof(e->comm), "%.*s", VN_DTL_COMM_LEN - 1, comm ? comm : "");
	if (!read_stat(tc, pid, &ppid, &flags)) {
		tc->st.gone++;
		return e;
	}
	e->kthread = (flags & PF_KTHREAD) || ppid == KTHREADD_PID || pid == KTHREADD_PID;
	e->tgid = e->kthread ? pid : read_tgid(tc, pid);
	return e;
}

/* "CPU <n>/KVM" or "CPU <n>/TCG" (QEMU's vCPU threads), read by hand: this runs for every host record. */
static bool vcpu_comm(const char *comm)
{
	const char *p = comm;

	if (!p || strncmp(p, "CPU", 3))
		return false;
	for (p += 3; *p == ' '; p++)
		;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == '/' && (!strncmp(p + 1, "KVM", 3) || !strncmp(p + 1, "TCG", 3));
}

uint32_t taskclass_of(struct taskclass *tc, uint32_t dom, uint32_t pid, const char *comm,
		      uint64_t now_ns)
{
	const struct tc_entry *e;
	pid_t qemu = dom < TASKCLASS_MAX_DOMS ? tc->dom[dom].qemu_pid : 0;
	int vd;

	if (!pid)
		return VN_DTL_CLASS_IDLE;
	tc->st.lookups++;
	vd = vcpu_dom(tc, pid);
	if (vd >= 0)
		return (uint32_t)vd == dom ? VN_DTL_CLASS_QEMU : VN_DTL_CLASS_OTHER_VCPU;
	e = lookup(tc, pid, comm, now_ns);
	if (qemu > 0 && e->tgid == (uint32_t)qemu)
		return VN_DTL_CLASS_QEMU;
	if (e->kthread)
		return VN_DTL_CLASS_HOST_KTHREAD;
	if (vcpu_comm(comm))
		return VN_DTL_CLASS_OTHER_VCPU;
	return VN_DTL_CLASS_HOST_USER;
}

void taskclass_stats(const struct taskclass *tc, struct taskclass_stats *out)
{
	*out = tc->st;
}
