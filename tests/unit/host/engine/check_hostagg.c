/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/engine/hostagg, the engine behind vnoise-host's views: domain bindings and their bounds,
 * period sums, rejected records (unknown domain or vCPU, inverted times) counted in bad_records, out
 * intervals joined across period boundaries, the preemptor table (merging, interval counting, idle, the
 * "<other>" overflow entry) and its sorted view, the out-time split by cause (preempted, waiting, halted,
 * exits, irq: parts that sum to the out-time exactly; a task that ran only while the vCPU was halted is no
 * preemptor), the exit/IRQ aggregates (merging, overflow, sorted view per
 * kind), the --flows tables (flows summed per tap, direction and key, the other-flows rows and overflow,
 * taps, sorted view, rejected records), hostagg_reset, and the VM exit reason names.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/hostagg.h"
#include "engine/hostagg_priv.h"
#include "noise.h"

#define US 1000ULL
#define MS 1000000ULL
#define S 1000000000ULL

static struct hostagg *A;

static void setup(void)
{
	A = hostagg_new();
	ck_assert_ptr_nonnull(A);
}

static void teardown(void)
{
	hostagg_free(A);
	A = NULL;
}

/* Binds dom as a running "qemu" domain with nvcpus vCPUs. */
static void bind(uint32_t dom, uint32_t nvcpus)
{
	char name[32];

	snprintf(name, sizeof(name), "vm%u", dom);
	ck_assert_int_eq(
	    hostagg_domain(A, dom, name, "uuid", "qemu", 1000 + dom, nvcpus, "started"), 0);
}

static const struct hostagg_vcpu *vcpu(uint32_t dom, uint32_t v)
{
	const struct hostagg_vcpu *c = hostagg_vcpu_get(A, dom, v);

	ck_assert_msg(c != NULL, "no vCPU %u of domain %u", v, dom);
	return c;
}

static struct vn_host_period period(uint32_t dom, uint32_t v, uint64_t start, uint64_t end)
{
	struct vn_host_period p;

	memset(&p, 0, sizeof(p));
	p.start_ns = start;
	p.end_ns = end;
	p.dom = dom;
	p.vcpu = v;
	p.cpu = ~0u;
	return p;
}

static int out(uint32_t dom, uint32_t v, uint64_t start, uint64_t end, uint8_t flags)
{
	struct vn_host_out o;

	memset(&o, 0, sizeof(o));
	o.start_ns = start;
	o.end_ns = end;
	o.dom = dom;
	o.vcpu = v;
	o.state = 'R';
	o.flags = flags;
	return hostagg_out(A, &o);
}

/* A run of task pid/comm of length len inside the out interval that began at out_start. */
static int run(uint32_t dom, uint32_t v, uint32_t pid, const char *comm, uint64_t out_start,
	       uint64_t len)
{
	struct vn_host_run r;

	memset(&r, 0, sizeof(r));
	r.out_start_ns = out_start;
	r.start_ns = out_start + 10;
	r.end_ns = r.start_ns + len;
	r.dom = dom;
	r.vcpu = v;
	r.pid = pid;
	memcpy(r.comm, comm, strnlen(comm, VN_HOST_COMM_LEN));
	return hostagg_run(A, &r);
}

static int agg(uint32_t dom, uint32_t v, uint16_t kind, uint16_t isa, uint32_t id, uint64_t count,
	       uint64_t total, uint64_t max)
{
	struct vn_host_agg g;

	memset(&g, 0, sizeof(g));
	g.start_ns = 0;
	g.end_ns = 1000 * MS;
	g.dom = dom;
	g.vcpu = v;
	g.kind = kind;
	g.isa = isa;
	g.id = id;
	g.count = count;
	g.total_ns = total;
	g.max_ns = max;
	return hostagg_agg(A, &g);
}

/* The preemptor entry of v with this pid and comm, or NULL. */
static const struct hostagg_preempt *find_preempt(const struct hostagg_vcpu *v, uint32_t pid,
						  const char *comm)
{
	uint32_t i;

	for (i = 0; i < v->npreempt; i++)
		if (v->preempt[i].pid == pid && !strcmp(v->preempt[i].comm, comm))
			return &v->preempt[i];
	return NULL;
}

static const struct hostagg_aggent *find_agg(const struct hostagg_vcpu *v, uint16_t kind,
					     uint16_t isa, uint32_t id)
{
	uint32_t i;

	for (i = 0; i < v->nagg; i++)
		if (v->agg[i].kind == kind && v->agg[i].isa == isa && v->agg[i].id == id)
			return &v->agg[i];
	return NULL;
}

/* ---- domain bindings ---- */

START_TEST(test_domain_bounds)
{
	ck_assert_int_eq(hostagg_domain(A, VN_HOST_MAX_DOMAINS, "x", NULL, "kvm", 1, 1, "started"),
			 -EINVAL);
	ck_assert_int_eq(hostagg_domain(A, UINT32_MAX, "x", NULL, "kvm", 1, 1, "started"), -EINVAL);
	ck_assert_int_eq(
	    hostagg_domain(A, 0, "x", NULL, "kvm", 1, VN_HOST_MAX_VCPUS + 1, "started"), -EINVAL);
	ck_assert(!A->dom[0].seen);
	ck_assert_ptr_null(hostagg_vcpu_get(A, 0, 0));

	/* the largest index and count are fine */
	ck_assert_int_eq(hostagg_domain(A, VN_HOST_MAX_DOMAINS - 1, "last", NULL, "kvm", 1,
					VN_HOST_MAX_VCPUS, "started"),
			 0);
	ck_assert(A->dom[VN_HOST_MAX_DOMAINS - 1].seen);
	ck_assert_uint_eq(A->dom[VN_HOST_MAX_DOMAINS - 1].nvcpus, VN_HOST_MAX_VCPUS);
	ck_assert_ptr_nonnull(hostagg_vcpu_get(A, VN_HOST_MAX_DOMAINS - 1, VN_HOST_MAX_VCPUS - 1));
	ck_assert_ptr_null(hostagg_vcpu_get(A, VN_HOST_MAX_DOMAINS - 1, VN_HOST_MAX_VCPUS));
	ck_assert_ptr_null(hostagg_vcpu_get(A, VN_HOST_MAX_DOMAINS, 0));
	ck_assert_ptr_null(hostagg_vcpu_get(A, 0, 0));
	ck_assert_uint_eq(A->bad_records, 0);
}
END_TEST

START_TEST(test_domain_fields)
{
	char longname[300];
	const struct hostagg_domain *d = &A->dom[5];

	ck_assert_int_eq(hostagg_domain(A, 5, "guest-a", "6f1c0b6e-0000-4000-8000-000000000001",
					"qemu", 4242, 2, "mapped"),
			 0);
	ck_assert(d->seen);
	ck_assert_str_eq(d->name, "guest-a");
	ck_assert_str_eq(d->uuid, "6f1c0b6e-0000-4000-8000-000000000001");
	ck_assert_str_eq(d->virt, "qemu");
	ck_assert_uint_eq(d->qemu_pid, 4242);
	ck_assert_uint_eq(d->nvcpus, 2);
	/* new vCPUs start unseen on an unknown pCPU */
	ck_assert(!vcpu(5, 1)->seen);
	ck_assert_uint_eq(vcpu(5, 1)->cpu, ~0u);
	ck_assert_uint_eq(vcpu(5, 1)->tid, 0);

	/* NULL / empty / 0 keep what is known */
	ck_assert_int_eq(hostagg_domain(A, 5, NULL, "", NULL, 0, 0, NULL), 0);
	ck_assert_int_eq(hostagg_domain(A, 5, "", NULL, "", 0, 0, "reconnected"), 0);
	ck_assert_str_eq(d->name, "guest-a");
	ck_assert_str_eq(d->uuid, "6f1c0b6e-0000-4000-8000-000000000001");
	ck_assert_str_eq(d->virt, "qemu");
	ck_assert_uint_eq(d->qemu_pid, 4242);
	ck_assert_uint_eq(d->nvcpus, 2);

	/* a new pid and a too long name (truncated, terminated) */
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ck_assert_int_eq(hostagg_domain(A, 5, longname, NULL, "kvm-and-more", 777, 2, "started"),
			 0);
	ck_assert_uint_eq(d->qemu_pid, 777);
	ck_assert_uint_eq(strlen(d->name), HOSTAGG_NAME_LEN - 1);
	ck_assert_uint_eq(strlen(d->virt), sizeof(d->virt) - 1);
	ck_assert(!strncmp(d->virt, "kvm-and", sizeof(d->virt) - 1));
}
END_TEST

START_TEST(test_domain_grow)
{
	struct vn_host_period p;

	bind(3, 2);
	ck_assert_ptr_null(hostagg_vcpu_get(A, 3, 2));
	p = period(3, 1, 0, 1000 * MS);
	p.steal_ns = 12345;
	p.tid = 901;
	ck_assert_int_eq(hostagg_period(A, &p), 0);

	/* the domain restarted with more vCPUs: the table grows, old data stays */
	ck_assert_int_eq(hostagg_domain(A, 3, NULL, NULL, NULL, 0, 6, "started"), 0);
	ck_assert_uint_eq(A->dom[3].nvcpus, 6);
	ck_assert_uint_eq(vcpu(3, 1)->steal_ns, 12345);
	ck_assert_uint_eq(vcpu(3, 1)->tid, 901);
	ck_assert_uint_eq(vcpu(3, 5)->cpu, ~0u);
	ck_assert_uint_eq(vcpu(3, 5)->periods, 0);
	p = period(3, 5, 0, 1000 * MS);
	p.exec_ns = 7;
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	ck_assert_uint_eq(vcpu(3, 5)->exec_ns, 7);

	/* fewer vCPUs later does not shrink it */
	ck_assert_int_eq(hostagg_domain(A, 3, NULL, NULL, NULL, 0, 1, "started"), 0);
	ck_assert_uint_eq(A->dom[3].nvcpus, 6);
	ck_assert_uint_eq(vcpu(3, 5)->exec_ns, 7);
	ck_assert_uint_eq(A->bad_records, 0);
}
END_TEST

START_TEST(test_domain_events)
{
	const struct hostagg_domain *d = &A->dom[0];

	ck_assert_int_eq(hostagg_domain(A, 0, "g", NULL, "qemu", 10, 1, "started"), 0);
	ck_assert_uint_eq(d->starts, 1);
	ck_assert_uint_eq(d->stops, 0);
	ck_assert(d->running);
	ck_assert_int_eq(hostagg_domain(A, 0, NULL, NULL, NULL, 0, 1, "stopped"), 0);
	ck_assert_uint_eq(d->starts, 1);
	ck_assert_uint_eq(d->stops, 1);
	ck_assert(!d->running);
	/* other events and no event change neither counter nor state */
	ck_assert_int_eq(hostagg_domain(A, 0, NULL, NULL, NULL, 0, 1, "reconnected"), 0);
	ck_assert_int_eq(hostagg_domain(A, 0, NULL, NULL, NULL, 0, 1, NULL), 0);
	ck_assert_uint_eq(d->starts, 1);
	ck_assert_uint_eq(d->stops, 1);
	ck_assert(!d->running);
	ck_assert_int_eq(hostagg_domain(A, 0, NULL, NULL, NULL, 11, 1, "mapped"), 0);
	ck_assert_uint_eq(d->starts, 2);
	ck_assert(d->running);
	ck_assert_int_eq(hostagg_domain(A, 0, NULL, NULL, NULL, 0, 1, "stopped"), 0);
	ck_assert_int_eq(hostagg_domain(A, 0, NULL, NULL, NULL, 12, 1, "started"), 0);
	ck_assert_uint_eq(d->starts, 3);
	ck_assert_uint_eq(d->stops, 2);
	ck_assert(d->running);
	ck_assert_uint_eq(d->qemu_pid, 12);
	/* a stop before any start is still counted */
	ck_assert_int_eq(hostagg_domain(A, 1, "h", NULL, "kvm", 20, 1, "stopped"), 0);
	ck_assert_uint_eq(A->dom[1].stops, 1);
	ck_assert_uint_eq(A->dom[1].starts, 0);
	ck_assert(!A->dom[1].running);
}
END_TEST

START_TEST(test_vcpu_tid)
{
	bind(2, 2);
	ck_assert(!vcpu(2, 1)->seen);
	ck_assert_int_eq(hostagg_vcpu_tid(A, 2, 1, 5555), 0);
	ck_assert_uint_eq(vcpu(2, 1)->tid, 5555);
	ck_assert(vcpu(2, 1)->seen);
	ck_assert_uint_eq(vcpu(2, 0)->tid, 0);

	ck_assert_int_eq(hostagg_vcpu_tid(A, 2, 2, 1), -EINVAL);
	ck_assert_int_eq(hostagg_vcpu_tid(A, 9, 0, 1), -EINVAL);
	ck_assert_int_eq(hostagg_vcpu_tid(A, VN_HOST_MAX_DOMAINS, 0, 1), -EINVAL);
	ck_assert_uint_eq(A->bad_records, 3);
}
END_TEST

/* ---- period records ---- */

START_TEST(test_period_sums)
{
	struct vn_host_period p;
	const struct hostagg_vcpu *v;

	bind(0, 2);
	p = period(0, 1, 2000 * MS, 3000 * MS);
	p.tid = 100;
	p.cpu = 3;
	p.steal_ns = 1;
	p.cpu_ns = 2;
	p.exec_ns = 3;
	p.run_delay_ns = 4;
	p.pcount = 5;
	p.out_ns = 6;
	p.out_periods = 7;
	p.out_r_ns = 8;
	p.out_s_ns = 9;
	p.idle_ns = 10;
	p.wait_ns = 11;
	p.flags = VN_HOST_PERIOD_F_LIBVIRT;
	ck_assert_int_eq(hostagg_period(A, &p), 0);

	/* an earlier period fed later; unknown cpu and tid 0 keep the last known */
	p = period(0, 1, 1000 * MS, 2000 * MS);
	p.steal_ns = 100;
	p.cpu_ns = 200;
	p.exec_ns = 300;
	p.run_delay_ns = 400;
	p.pcount = 500;
	p.out_ns = 600;
	p.out_periods = 700;
	p.out_r_ns = 800;
	p.out_s_ns = 900;
	p.idle_ns = 1000;
	p.wait_ns = 1100;
	p.flags = VN_HOST_PERIOD_F_SCHEDSTAT | VN_HOST_PERIOD_F_PARTIAL;
	ck_assert_int_eq(hostagg_period(A, &p), 0);

	v = vcpu(0, 1);
	ck_assert(v->seen);
	ck_assert_uint_eq(v->periods, 2);
	ck_assert_uint_eq(v->tid, 100);
	ck_assert_uint_eq(v->cpu, 3);
	ck_assert_uint_eq(v->first_ns, 1000 * MS);
	ck_assert_uint_eq(v->last_ns, 3000 * MS);
	ck_assert_uint_eq(v->flags, VN_HOST_PERIOD_F_LIBVIRT | VN_HOST_PERIOD_F_SCHEDSTAT |
					VN_HOST_PERIOD_F_PARTIAL);
	ck_assert_uint_eq(v->steal_ns, 101);
	ck_assert_uint_eq(v->cpu_ns, 202);
	ck_assert_uint_eq(v->exec_ns, 303);
	ck_assert_uint_eq(v->run_delay_ns, 404);
	ck_assert_uint_eq(v->pcount, 505);
	ck_assert_uint_eq(v->out_ns, 606);
	ck_assert_uint_eq(v->out_periods, 707);
	ck_assert_uint_eq(v->out_r_ns, 808);
	ck_assert_uint_eq(v->out_s_ns, 909);
	ck_assert_uint_eq(v->idle_ns, 1010);
	ck_assert_uint_eq(v->wait_ns, 1111);

	/* a new mapping */
	p = period(0, 1, 3000 * MS, 4000 * MS);
	p.tid = 101;
	p.cpu = 0;
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	ck_assert_uint_eq(v->tid, 101);
	ck_assert_uint_eq(v->cpu, 0);
	ck_assert_uint_eq(v->last_ns, 4000 * MS);
	ck_assert_uint_eq(v->periods, 3);

	/* the other vCPU saw nothing */
	ck_assert(!vcpu(0, 0)->seen);
	ck_assert_uint_eq(vcpu(0, 0)->periods, 0);
	ck_assert_uint_eq(vcpu(0, 0)->steal_ns, 0);
	ck_assert_uint_eq(A->bad_records, 0);
}
END_TEST

START_TEST(test_period_first_at_zero)
{
	struct vn_host_period p;

	/* a first period starting at 0 is a real start, not "unset" */
	bind(0, 1);
	p = period(0, 0, 5000, 6000);
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	p = period(0, 0, 0, 5000);
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	ck_assert_uint_eq(vcpu(0, 0)->first_ns, 0);
	ck_assert_uint_eq(vcpu(0, 0)->last_ns, 6000);
	/* empty period (start == end) is valid */
	p = period(0, 0, 6000, 6000);
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	ck_assert_uint_eq(vcpu(0, 0)->periods, 3);
}
END_TEST

START_TEST(test_bad_records)
{
	struct vn_host_period p;
	const struct hostagg_vcpu *v;
	uint64_t bad = 0;

	bind(1, 2);
	v = vcpu(1, 0);

	/* unknown domain, vCPU out of range, domain index out of range: every record kind */
	p = period(0, 0, 0, 1);
	ck_assert_int_eq(hostagg_period(A, &p), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	p = period(1, 2, 0, 1);
	ck_assert_int_eq(hostagg_period(A, &p), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	p = period(VN_HOST_MAX_DOMAINS, 0, 0, 1);
	ck_assert_int_eq(hostagg_period(A, &p), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_int_eq(out(2, 0, 0, 1, 0), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_int_eq(out(1, 200, 0, 1, 0), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_int_eq(run(3, 0, 77, "kworker", 0, 5), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_int_eq(run(1, 2, 77, "kworker", 0, 5), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_int_eq(agg(4, 0, VN_HOST_AGG_IRQ, 0, 1, 1, 1, 1), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_int_eq(agg(1, UINT32_MAX, VN_HOST_AGG_IRQ, 0, 1, 1, 1, 1), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);

	/* inverted times */
	p = period(1, 0, 2000, 1000);
	p.steal_ns = 99;
	ck_assert_int_eq(hostagg_period(A, &p), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_int_eq(out(1, 0, 2000, 1999, 0), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	{
		struct vn_host_run r;

		memset(&r, 0, sizeof(r));
		r.dom = 1;
		r.start_ns = 50;
		r.end_ns = 40;
		r.pid = 9;
		memcpy(r.comm, "bad", 3);
		ck_assert_int_eq(hostagg_run(A, &r), -EINVAL);
		ck_assert_uint_eq(A->bad_records, ++bad);
		/* idle runs are checked as well */
		r.pid = 0;
		ck_assert_int_eq(hostagg_run(A, &r), -EINVAL);
		ck_assert_uint_eq(A->bad_records, ++bad);
	}

	/* nothing of it was counted */
	ck_assert_uint_eq(v->periods, 0);
	ck_assert_uint_eq(v->steal_ns, 0);
	ck_assert_uint_eq(v->max_out_ns, 0);
	ck_assert_uint_eq(v->run_ns, 0);
	ck_assert_uint_eq(v->npreempt, 0);
	ck_assert_uint_eq(v->nagg, 0);
	ck_assert(!v->seen);
	ck_assert(!A->dom[0].seen);

	/* good records are still taken */
	ck_assert_int_eq(out(1, 1, 0, 10, 0), 0);
	ck_assert_uint_eq(vcpu(1, 1)->max_out_ns, 10);
	ck_assert_uint_eq(A->bad_records, bad);
}
END_TEST

/* ---- out intervals ---- */

/* Worst gaps: the longest kept; a record that does not add up, has too many parts or an unknown class or
 * kind is refused and counted; a name without its NUL gets one. */
START_TEST(test_worst)
{
	struct vn_host_worst w;
	const struct hostagg_vcpu *v;
	uint64_t bad;

	bind(1, 1);
	v = vcpu(1, 0);
	memset(&w, 0, sizeof(w));
	w.dom = 1;
	w.duration_ns = 5 * MS;
	w.nparts = 1;
	w.part[0] = (struct vn_host_wpart){
		.kind = VN_HOST_MSRC_HOST, .cls = VN_HCLASS_HOST_PREEMPT, .id = 42, .ns = 4 * MS
	};
	memset(w.part[0].comm, 'x', VN_HOST_COMM_LEN); /* no NUL */
	w.residual_ns = 1 * MS;
	ck_assert_int_eq(hostagg_worst(A, &w), 0);
	ck_assert_uint_eq(v->match.worst.duration_ns, 5 * MS);
	ck_assert_uint_eq(strlen(v->match.worst.part[0].comm), VN_HOST_COMM_LEN - 1);
	w.duration_ns = 3 * MS; /* shorter: not kept */
	w.part[0].ns = 2 * MS;
	ck_assert_int_eq(hostagg_worst(A, &w), 0);
	ck_assert_uint_eq(v->match.worst.duration_ns, 5 * MS);
	bad = A->bad_records;
	w.duration_ns = 9 * MS; /* parts 2 + 1 ms: do not add up */
	ck_assert_int_eq(hostagg_worst(A, &w), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	w.duration_ns = 3 * MS;
	w.nparts = VN_HOST_WORST_PARTS + 1;
	ck_assert_int_eq(hostagg_worst(A, &w), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	w.nparts = 1;
	w.part[0].cls = VN_HCLASS_MAX;
	ck_assert_int_eq(hostagg_worst(A, &w), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	w.part[0].cls = 0;
	w.part[0].kind = 7;
	ck_assert_int_eq(hostagg_worst(A, &w), -EINVAL);
	ck_assert_uint_eq(A->bad_records, ++bad);
	ck_assert_uint_eq(v->match.worst.duration_ns, 5 * MS);
}
END_TEST

START_TEST(test_out_max)
{
	const struct hostagg_vcpu *v;

	bind(0, 2);
	v = vcpu(0, 0);
	ck_assert_int_eq(out(0, 0, 100, 150, 0), 0);
	ck_assert_uint_eq(v->max_out_ns, 50);
	ck_assert_int_eq(out(0, 0, 200, 230, 0), 0);
	ck_assert_uint_eq(v->max_out_ns, 50);
	ck_assert_int_eq(out(0, 0, 300, 400, VN_HOST_OUT_F_GUESSED), 0);
	ck_assert_uint_eq(v->max_out_ns, 100);
	ck_assert_int_eq(out(0, 0, 500, 500, 0), 0);
	ck_assert_uint_eq(v->max_out_ns, 100);
	/* per vCPU */
	ck_assert_uint_eq(vcpu(0, 1)->max_out_ns, 0);
}
END_TEST

START_TEST(test_out_split_joined)
{
	const struct hostagg_vcpu *v;

	bind(0, 2);
	v = vcpu(0, 0);
	/* 3 ms + 10 ms (a whole period) + 2 ms: one 15 ms interval cut at two boundaries */
	ck_assert_int_eq(out(0, 0, 997 * MS, 1000 * MS, VN_HOST_OUT_F_SPLIT), 0);
	ck_assert_uint_eq(v->max_out_ns, 3 * MS);
	ck_assert_int_eq(out(0, 0, 1000 * MS, 1010 * MS, VN_HOST_OUT_F_CONT | VN_HOST_OUT_F_SPLIT),
			 0);
	ck_assert_uint_eq(v->max_out_ns, 13 * MS);
	ck_assert_int_eq(out(0, 0, 1010 * MS, 1012 * MS, VN_HOST_OUT_F_CONT), 0);
	ck_assert_uint_eq(v->max_out_ns, 15 * MS);

	/* after the last piece the join is over: a later CONT without a SPLIT stands alone */
	ck_assert_int_eq(out(0, 0, 1100 * MS, 1114 * MS, 0), 0);
	ck_assert_uint_eq(v->max_out_ns, 15 * MS);
	ck_assert_int_eq(out(0, 0, 2000 * MS, 2014 * MS, VN_HOST_OUT_F_CONT), 0);
	ck_assert_uint_eq(v->max_out_ns, 15 * MS);

	/* the pieces of one vCPU are not joined with another vCPU's */
	ck_assert_int_eq(out(0, 0, 2990 * MS, 3000 * MS, VN_HOST_OUT_F_SPLIT), 0);
	ck_assert_int_eq(out(0, 1, 3000 * MS, 3008 * MS, VN_HOST_OUT_F_CONT), 0);
	ck_assert_uint_eq(vcpu(0, 1)->max_out_ns, 8 * MS);
	ck_assert_int_eq(out(0, 0, 3000 * MS, 3008 * MS, VN_HOST_OUT_F_CONT), 0);
	ck_assert_uint_eq(v->max_out_ns, 18 * MS);
}
END_TEST

/* ---- preemptors ---- */

START_TEST(test_preempt_merge)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_preempt *e;

	bind(0, 1);
	v = vcpu(0, 0);
	/* kworker runs twice in the interval at 1000 and once in the one at 5000 */
	ck_assert_int_eq(run(0, 0, 42, "kworker/0:1", 1000, 100), 0);
	ck_assert_int_eq(run(0, 0, 42, "kworker/0:1", 1000, 50), 0);
	ck_assert_int_eq(run(0, 0, 42, "kworker/0:1", 5000, 7), 0);
	/* same pid under a new name (exec, prctl) and same name with another pid: separate */
	ck_assert_int_eq(run(0, 0, 42, "bash", 5000, 1), 0);
	ck_assert_int_eq(run(0, 0, 43, "kworker/0:1", 5000, 2), 0);
	/* an interval starting at 0 counts as one too */
	ck_assert_int_eq(run(0, 0, 44, "ksoftirqd/0", 0, 3), 0);
	ck_assert_int_eq(run(0, 0, 44, "ksoftirqd/0", 0, 3), 0);

	ck_assert_uint_eq(v->npreempt, 4);
	e = find_preempt(v, 42, "kworker/0:1");
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->total_ns, 157);
	ck_assert_uint_eq(e->count, 2);
	e = find_preempt(v, 42, "bash");
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->total_ns, 1);
	ck_assert_uint_eq(e->count, 1);
	e = find_preempt(v, 43, "kworker/0:1");
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->total_ns, 2);
	e = find_preempt(v, 44, "ksoftirqd/0");
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->total_ns, 6);
	ck_assert_uint_eq(e->count, 1);
	ck_assert_uint_eq(v->run_ns, 157 + 1 + 2 + 6);
	ck_assert_uint_eq(v->preempt[HOSTAGG_MAX_PREEMPT].count, 0);
}
END_TEST

START_TEST(test_preempt_idle)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_preempt *out1[4];

	bind(0, 1);
	v = vcpu(0, 0);
	ck_assert_int_eq(run(0, 0, 0, "swapper/3", 1000, 400), 0);
	ck_assert_int_eq(run(0, 0, 0, "swapper/3", 2000, 600), 0);
	ck_assert_uint_eq(v->npreempt, 0);
	ck_assert_uint_eq(v->run_ns, 1000);
	ck_assert_uint_eq(hostagg_preempt_sorted(v, out1, 4), 0);
	ck_assert_int_eq(run(0, 0, 1, "systemd", 2000, 5), 0);
	ck_assert_uint_eq(v->npreempt, 1);
	ck_assert_uint_eq(v->run_ns, 1005);
}
END_TEST

START_TEST(test_preempt_comm_full)
{
	const struct hostagg_vcpu *v;
	struct vn_host_run r;

	bind(0, 1);
	v = vcpu(0, 0);
	/* a comm filling all 16 bytes, no NUL */
	memset(&r, 0, sizeof(r));
	r.start_ns = 10;
	r.end_ns = 20;
	r.out_start_ns = 5;
	r.pid = 321;
	memcpy(r.comm, "0123456789abcdef", VN_HOST_COMM_LEN);
	ck_assert_int_eq(hostagg_run(A, &r), 0);
	ck_assert_int_eq(hostagg_run(A, &r), 0);
	ck_assert_uint_eq(v->npreempt, 1);
	ck_assert_str_eq(v->preempt[0].comm, "0123456789abcdef");
	ck_assert_uint_eq(v->preempt[0].total_ns, 20);
	ck_assert_uint_eq(v->preempt[0].count, 1);
}
END_TEST

START_TEST(test_preempt_overflow)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_preempt *o;
	uint32_t i;
	char comm[16];

	bind(0, 1);
	v = vcpu(0, 0);
	for (i = 0; i < HOSTAGG_MAX_PREEMPT; i++) {
		snprintf(comm, sizeof(comm), "task%u", i);
		ck_assert_int_eq(run(0, 0, 1000 + i, comm, 1000, 10), 0);
	}
	ck_assert_uint_eq(v->npreempt, HOSTAGG_MAX_PREEMPT);
	ck_assert_uint_eq(v->preempt[HOSTAGG_MAX_PREEMPT].count, 0);

	/* three more tasks: into "<other>"; intervals counted once each */
	ck_assert_int_eq(run(0, 0, 5000, "late-a", 2000, 1), 0);
	ck_assert_int_eq(run(0, 0, 5001, "late-b", 2000, 2), 0);
	ck_assert_int_eq(run(0, 0, 5002, "late-c", 3000, 4), 0);
	ck_assert_uint_eq(v->npreempt, HOSTAGG_MAX_PREEMPT);
	o = &v->preempt[HOSTAGG_MAX_PREEMPT];
	ck_assert_str_eq(o->comm, "<other>");
	ck_assert_uint_eq(o->pid, 0);
	ck_assert_uint_eq(o->total_ns, 7);
	ck_assert_uint_eq(o->count, 2);

	/* a known task still goes to its own entry */
	ck_assert_int_eq(run(0, 0, 1005, "task5", 3000, 90), 0);
	ck_assert_uint_eq(find_preempt(v, 1005, "task5")->total_ns, 100);
	ck_assert_uint_eq(find_preempt(v, 1005, "task5")->count, 2);
	ck_assert_uint_eq(o->total_ns, 7);
	ck_assert_uint_eq(v->run_ns, HOSTAGG_MAX_PREEMPT * 10 + 7 + 90);
}
END_TEST

START_TEST(test_preempt_sorted)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_preempt *o[8];
	uint32_t n;

	bind(0, 1);
	v = vcpu(0, 0);
	ck_assert_uint_eq(hostagg_preempt_sorted(v, o, 8), 0);
	ck_assert_int_eq(run(0, 0, 1, "a", 100, 30), 0);
	ck_assert_int_eq(run(0, 0, 2, "b", 100, 50), 0);
	ck_assert_int_eq(run(0, 0, 3, "c", 100, 10), 0);
	ck_assert_int_eq(run(0, 0, 4, "d", 100, 40), 0);
	ck_assert_int_eq(run(0, 0, 5, "e", 100, 20), 0);

	n = hostagg_preempt_sorted(v, o, 8);
	ck_assert_uint_eq(n, 5);
	ck_assert_str_eq(o[0]->comm, "b");
	ck_assert_str_eq(o[1]->comm, "d");
	ck_assert_str_eq(o[2]->comm, "a");
	ck_assert_str_eq(o[3]->comm, "e");
	ck_assert_str_eq(o[4]->comm, "c");

	/* truncated to the largest */
	memset(o, 0, sizeof(o));
	n = hostagg_preempt_sorted(v, o, 2);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(o[0]->comm, "b");
	ck_assert_str_eq(o[1]->comm, "d");
	ck_assert_ptr_null(o[2]);
	n = hostagg_preempt_sorted(v, o, 1);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(o[0]->comm, "b");
	ck_assert_uint_eq(hostagg_preempt_sorted(v, o, 0), 0);

	/* growing an entry moves it up */
	ck_assert_int_eq(run(0, 0, 3, "c", 200, 100), 0);
	n = hostagg_preempt_sorted(v, o, 3);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(o[0]->comm, "c");
	ck_assert_str_eq(o[1]->comm, "b");
	ck_assert_str_eq(o[2]->comm, "d");
}
END_TEST

START_TEST(test_preempt_sorted_other)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_preempt *o[HOSTAGG_MAX_PREEMPT + 1];
	uint32_t i, n;
	char comm[16];

	bind(0, 1);
	v = vcpu(0, 0);
	for (i = 0; i < HOSTAGG_MAX_PREEMPT; i++) {
		snprintf(comm, sizeof(comm), "t%u", i);
		ck_assert_int_eq(run(0, 0, 100 + i, comm, 1000, 1 + i), 0);
	}
	/* many small latecomers that add up to the largest entry */
	for (i = 0; i < 50; i++) {
		snprintf(comm, sizeof(comm), "x%u", i);
		ck_assert_int_eq(run(0, 0, 9000 + i, comm, 1000 + i, 10), 0);
	}
	ck_assert_uint_eq(v->preempt[HOSTAGG_MAX_PREEMPT].total_ns, 500);
	ck_assert_uint_eq(v->preempt[HOSTAGG_MAX_PREEMPT].count, 50);

	n = hostagg_preempt_sorted(v, o, 3);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(o[0]->comm, "<other>");
	ck_assert_uint_eq(o[0]->total_ns, 500);
	ck_assert_str_eq(o[1]->comm, "t127");
	ck_assert_str_eq(o[2]->comm, "t126");
	n = hostagg_preempt_sorted(v, o, 1);
	ck_assert_uint_eq(n, 1);
	ck_assert_str_eq(o[0]->comm, "<other>");

	/* everything: the 128 entries and "<other>" */
	n = hostagg_preempt_sorted(v, o, HOSTAGG_MAX_PREEMPT + 1);
	ck_assert_uint_eq(n, HOSTAGG_MAX_PREEMPT + 1);
	for (i = 1; i < n; i++)
		ck_assert_msg(o[i - 1]->total_ns >= o[i]->total_ns, "not sorted at %u", i);
	ck_assert_str_eq(o[n - 1]->comm, "t0");
}
END_TEST

START_TEST(test_preempt_sorted_other_small)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_preempt *o[4];
	uint32_t i;
	char comm[16];

	/* one task past the table: "<other>" holds it alone and ranks like any entry */
	bind(0, 1);
	v = vcpu(0, 0);
	for (i = 0; i < HOSTAGG_MAX_PREEMPT + 1; i++) {
		snprintf(comm, sizeof(comm), "t%u", i);
		ck_assert_int_eq(run(0, 0, 100 + i, comm, 1000, 1000 + i), 0);
	}
	ck_assert_uint_eq(v->preempt[HOSTAGG_MAX_PREEMPT].total_ns, 1000 + HOSTAGG_MAX_PREEMPT);
	ck_assert_uint_eq(hostagg_preempt_sorted(v, o, 4), 4);
	/* t128 (1128 ns) is the largest */
	ck_assert_str_eq(o[0]->comm, "<other>");
	ck_assert_str_eq(o[1]->comm, "t127");
	/* t0 grows past it: "<other>" second, left out of a top 1 */
	ck_assert_int_eq(run(0, 0, 100, "t0", 2000, 5000), 0);
	ck_assert_uint_eq(hostagg_preempt_sorted(v, o, 2), 2);
	ck_assert_str_eq(o[0]->comm, "t0");
	ck_assert_str_eq(o[1]->comm, "<other>");
	ck_assert_uint_eq(hostagg_preempt_sorted(v, o, 1), 1);
	ck_assert_str_eq(o[0]->comm, "t0");
}
END_TEST

/* ---- aggregates ---- */

/* A run like run(), flagged VN_HOST_RUN_F_HALTED: the vCPU slept (before its wakeup) while it ran. */
static int run_halted(uint32_t dom, uint32_t v, uint32_t pid, const char *comm, uint64_t out_start,
		      uint64_t len)
{
	struct vn_host_run r;

	memset(&r, 0, sizeof(r));
	r.out_start_ns = out_start;
	r.start_ns = out_start + 10;
	r.end_ns = r.start_ns + len;
	r.dom = dom;
	r.vcpu = v;
	r.pid = pid;
	r.flags = VN_HOST_RUN_F_HALTED;
	memcpy(r.comm, comm, strnlen(comm, VN_HOST_COMM_LEN));
	return hostagg_run(A, &r);
}

static uint64_t split_sum(const struct hostagg_split *s)
{
	return s->preempt_ns + s->wait_ns + s->halted_ns + s->exit_ns + s->irq_ns;
}

/*
 * One period of a vCPU: 100 ms preempted ('R', the hog ran 90 of it), then a blocked interval of 500 ms
 * whose first 400 ms were before the wakeup (an idler ran 300 ms of them: halted) and the last 100 ms
 * runnable (the hog 60 ms of it); 7 ms of exits, 3 ms of host IRQs. The split: preempted 150 = the hog's
 * runs while runnable, waiting 50, halted 400, exits 7, irq 3; 610 ms in all.
 */
START_TEST(test_out_split_causes)
{
	struct vn_host_period p = period(0, 0, 0, 1000 * MS);
	const struct hostagg_preempt *pre[4];
	struct hostagg_split sp;
	const struct hostagg_vcpu *v;

	bind(0, 1);
	p.out_ns = 600 * MS;
	p.out_r_ns = 100 * MS;
	p.out_s_ns = 500 * MS;
	p.wait_ns = 200 * MS; /* the R interval whole + wakeup to switch-in */
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	ck_assert_int_eq(run(0, 0, 77, "vnhog", 0, 90 * MS), 0);
	ck_assert_int_eq(run_halted(0, 0, 88, "idler", 200 * MS, 300 * MS), 0);
	ck_assert_int_eq(run(0, 0, 77, "vnhog", 200 * MS, 60 * MS), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 12, 100, 7 * MS, MS), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_IRQ, 1, 24, 10, 2 * MS, MS), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_SOFTIRQ, 1, 3, 10, 1 * MS, MS), 0);
	v = vcpu(0, 0);
	hostagg_out_split(v, &sp);
	ck_assert_uint_eq(sp.preempt_ns, 150 * MS);
	ck_assert_uint_eq(sp.wait_ns, 50 * MS);
	ck_assert_uint_eq(sp.halted_ns, 400 * MS);
	ck_assert_uint_eq(sp.exit_ns, 7 * MS);
	ck_assert_uint_eq(sp.irq_ns, 3 * MS);
	ck_assert_uint_eq(sp.switched_ns, 600 * MS);
	ck_assert_uint_eq(sp.out_ns, 610 * MS);
	ck_assert_uint_eq(split_sum(&sp), sp.out_ns);
	/* the idler ran only while the vCPU was halted: not a preemptor, listed apart */
	ck_assert_uint_eq(hostagg_preempt_sorted(v, pre, 4), 1);
	ck_assert_str_eq(pre[0]->comm, "vnhog");
	ck_assert_uint_eq(pre[0]->total_ns, 150 * MS);
	ck_assert_uint_eq(pre[0]->count, 2);
	ck_assert_uint_eq(pre[0]->halted_ns, 0);
	ck_assert_uint_eq(hostagg_halted_sorted(v, pre, 4), 1);
	ck_assert_str_eq(pre[0]->comm, "idler");
	ck_assert_uint_eq(pre[0]->halted_ns, 300 * MS);
	ck_assert_uint_eq(pre[0]->halted_count, 1);
	ck_assert_uint_eq(pre[0]->total_ns, 0);
	ck_assert_uint_eq(find_preempt(v, 88, "idler")->count, 0);
}
END_TEST

/* The parts add up to the out-time exactly whatever the records say, inconsistent ones included (a run
 * delay above the out-time, more runs than runnable time, no period at all). */
START_TEST(test_out_split_sums)
{
	static const uint64_t outs[] = { 0, 1, 999, 600 * MS };
	static const uint64_t waits[] = { 0, 1, 300 * MS, 900 * MS };
	static const uint64_t runs[] = { 0, 7, 250 * MS, 700 * MS };
	struct hostagg_split sp;

	bind(0, 1);
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 4; j++)
			for (size_t k = 0; k < 4; k++) {
				struct vn_host_period p = period(0, 0, 0, S);
				const struct hostagg_vcpu *v;

				hostagg_reset(A);
				p.out_ns = outs[i];
				p.wait_ns = waits[j];
				ck_assert_int_eq(hostagg_period(A, &p), 0);
				if (runs[k])
					ck_assert_int_eq(run(0, 0, 5, "t", 0, runs[k]), 0);
				ck_assert_int_eq(run_halted(0, 0, 6, "h", 0, 3 * MS), 0);
				ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_VECTOR, 0, 1, 1, i * MS, MS),
						 0);
				v = vcpu(0, 0);
				hostagg_out_split(v, &sp);
				ck_assert_uint_eq(split_sum(&sp), sp.out_ns);
				ck_assert_uint_eq(sp.switched_ns, outs[i]);
				ck_assert_uint_eq(sp.preempt_ns + sp.wait_ns + sp.halted_ns,
						  outs[i]);
				ck_assert_uint_le(sp.preempt_ns, v->preempt_ns);
			}
}
END_TEST

START_TEST(test_agg_merge)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_aggent *e;

	bind(0, 1);
	v = vcpu(0, 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 12, 10, 1000, 300), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 12, 1, 900, 900), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 12, 5, 500, 200), 0);
	/* same id under another isa or kind: separate entries */
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 2, 12, 1, 1, 1), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_IRQ, 0, 12, 2, 2, 2), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_SOFTIRQ, 0, 12, 3, 3, 3), 0);
	ck_assert_uint_eq(v->nagg, 4);

	e = find_agg(v, VN_HOST_AGG_EXIT, 1, 12);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->count, 16);
	ck_assert_uint_eq(e->total_ns, 2400);
	ck_assert_uint_eq(e->max_ns, 900);
	e = find_agg(v, VN_HOST_AGG_EXIT, 2, 12);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->count, 1);
	e = find_agg(v, VN_HOST_AGG_IRQ, 0, 12);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->total_ns, 2);
	e = find_agg(v, VN_HOST_AGG_SOFTIRQ, 0, 12);
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->max_ns, 3);
	ck_assert_uint_eq(v->agg_dropped, 0);
}
END_TEST

/* --guest records: per-period combined views sum, maxima stay maxima, sources merge by key */
START_TEST(test_match_sums)
{
	struct vn_host_match m = { .start_ns = 1 * S, .end_ns = 2 * S, .dom = 0, .vcpu = 1 };
	struct vn_host_msrc src = { .start_ns = 1 * S,
				    .dom = 0,
				    .vcpu = 1,
				    .kind = VN_HOST_MSRC_HOST,
				    .cls = VN_HCLASS_HOST_PREEMPT,
				    .id = 42,
				    .comm = "vnhog42" };
	struct vn_host_chan ch = { .start_ns = 1 * S,
				   .end_ns = 2 * S,
				   .dom = 0,
				   .state = VN_HOST_CHAN_OK,
				   .epoch = 7,
				   .records = 100 };
	const struct hostagg_msrc *top[4];
	const struct hostagg_vcpu *v;

	bind(0, 2);
	ck_assert(!hostagg_has_match(A));
	m.gaps = 10;
	m.gap_ns = 5 * MS;
	m.max_gap_ns = 2 * MS;
	m.host_ns[VN_HCLASS_HOST_PREEMPT] = 3 * MS;
	m.guest_ns[VN_CLASS_THREAD] = 1 * MS;
	m.residual_ns = 1 * MS;
	m.latency_max_ns = 7 * MS;
	m.latency_sum_ns = 40 * MS;
	m.latency_gaps = 10;
	m.gonly_ns[VN_CLASS_UNEXPLAINED] = 4 * MS;
	ck_assert_int_eq(hostagg_match(A, &m), 0);
	m.start_ns = 2 * S;
	m.end_ns = 3 * S;
	m.max_gap_ns = 1 * MS;
	m.latency_max_ns = 9 * MS;
	ck_assert_int_eq(hostagg_match(A, &m), 0);
	v = vcpu(0, 1);
	ck_assert(v->match.seen);
	ck_assert_uint_eq(v->match.periods, 2);
	ck_assert_uint_eq(v->match.sum.gaps, 20);
	ck_assert_uint_eq(v->match.sum.gap_ns, 10 * MS);
	ck_assert_uint_eq(v->match.sum.max_gap_ns, 2 * MS);
	ck_assert_uint_eq(v->match.sum.latency_max_ns, 9 * MS);
	ck_assert_uint_eq(v->match.sum.latency_gaps, 20);
	ck_assert_uint_eq(v->match.sum.host_ns[VN_HCLASS_HOST_PREEMPT], 6 * MS);
	ck_assert_uint_eq(v->match.sum.gonly_ns[VN_CLASS_UNEXPLAINED], 8 * MS);
	ck_assert_uint_eq(v->match.sum.start_ns, 1 * S);
	ck_assert_uint_eq(v->match.sum.end_ns, 3 * S);
	/* sources: same key merges, another kind or class does not */
	src.count = 3;
	src.total_ns = 3 * MS;
	src.max_ns = 2 * MS;
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	src.max_ns = 1 * MS;
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	src.kind = VN_HOST_MSRC_GONLY;
	src.cls = VN_CLASS_THREAD;
	src.total_ns = 1 * MS;
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	ck_assert_uint_eq(v->match.nsrc, 2);
	ck_assert_uint_eq(hostagg_msrc_sorted(v, VN_HOST_MSRC_HOST, top, 4), 1);
	ck_assert_str_eq(top[0]->comm, "vnhog42");
	ck_assert_uint_eq(top[0]->count, 6);
	ck_assert_uint_eq(top[0]->total_ns, 6 * MS);
	ck_assert_uint_eq(top[0]->max_ns, 2 * MS);
	ck_assert_uint_eq(hostagg_msrc_sorted(v, VN_HOST_MSRC_GONLY, top, 4), 1);
	ck_assert_uint_eq(hostagg_msrc_sorted(v, VN_HOST_MSRC_GUEST, top, 4), 0);
	/* hostile file contents: bad kind, vCPU, inverted times, unknown domain */
	src.kind = 9;
	ck_assert_int_eq(hostagg_msrc(A, &src), -EINVAL);
	m.vcpu = 5;
	ck_assert_int_eq(hostagg_match(A, &m), -EINVAL);
	m.vcpu = 1;
	m.end_ns = 0;
	ck_assert_int_eq(hostagg_match(A, &m), -EINVAL);
	ch.dom = 3;
	ck_assert_int_eq(hostagg_chan(A, &ch), -EINVAL);
	ch.dom = 0;
	ck_assert_int_eq(hostagg_chan(A, &ch), 0);
	ck_assert(A->dom[0].chan_seen);
	ck_assert_uint_eq(A->dom[0].chan.epoch, 7);
	ck_assert(hostagg_has_match(A));
}
END_TEST

/* A full source table counts what it refused; the class totals still hold that time. */
START_TEST(test_match_src_full)
{
	struct vn_host_msrc src = { .dom = 0,
				    .vcpu = 0,
				    .kind = VN_HOST_MSRC_GUEST,
				    .cls = VN_CLASS_IRQ,
				    .count = 1,
				    .total_ns = 1 };
	const struct hostagg_vcpu *v;
	uint32_t i;

	bind(0, 1);
	for (i = 0; i < HOSTAGG_MAX_MSRC + 5; i++) {
		src.id = i;
		ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	}
	v = vcpu(0, 0);
	ck_assert_uint_eq(v->match.nsrc, HOSTAGG_MAX_MSRC);
	ck_assert_uint_eq(v->match.src_dropped, 5);
	/* device IRQs (ids below VN_VEC_BASE) and softirqs by vector are summed whatever the room */
	ck_assert_uint_eq(v->match.devirq_ns, HOSTAGG_MAX_MSRC + 5);
	ck_assert_uint_eq(v->match.devirq_count, HOSTAGG_MAX_MSRC + 5);
	src.id = VN_VEC_BASE + VN_VEC_LOCAL_TIMER;
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	ck_assert_uint_eq(v->match.devirq_count, HOSTAGG_MAX_MSRC + 5);
	src.cls = VN_CLASS_SOFTIRQ;
	src.id = 3; /* NET_RX */
	src.total_ns = 700;
	src.count = 2;
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	src.kind = VN_HOST_MSRC_GONLY; /* the guest-only view is not summed there */
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	src.kind = VN_HOST_MSRC_GUEST;
	src.id = HOSTAGG_SOFTIRQS; /* no such vector */
	ck_assert_int_eq(hostagg_msrc(A, &src), 0);
	ck_assert_uint_eq(v->match.softirq_ns[3], 1400);
	ck_assert_uint_eq(v->match.softirq_count[3], 4);
	ck_assert_uint_eq(v->match.src_dropped, 10);
	hostagg_reset(A);
	ck_assert_uint_eq(v->match.softirq_ns[3], 0);
	ck_assert_uint_eq(v->match.devirq_ns, 0);
}
END_TEST

START_TEST(test_agg_overflow)
{
	const struct hostagg_vcpu *v;
	uint32_t i;

	bind(0, 1);
	v = vcpu(0, 0);
	for (i = 0; i < HOSTAGG_MAX_AGG; i++)
		ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_IRQ, 0, i, 1, 10, 10), 0);
	ck_assert_uint_eq(v->nagg, HOSTAGG_MAX_AGG);
	ck_assert_uint_eq(v->agg_dropped, 0);

	/* new keys are dropped and their counts kept; known keys still merge */
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_IRQ, 0, HOSTAGG_MAX_AGG, 7, 70, 10), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 1, 5, 50, 10), 0);
	ck_assert_uint_eq(v->nagg, HOSTAGG_MAX_AGG);
	ck_assert_uint_eq(v->agg_dropped, 12);
	ck_assert_ptr_null(find_agg(v, VN_HOST_AGG_EXIT, 1, 1));
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_IRQ, 0, 3, 4, 40, 99), 0);
	ck_assert_uint_eq(find_agg(v, VN_HOST_AGG_IRQ, 0, 3)->count, 5);
	ck_assert_uint_eq(find_agg(v, VN_HOST_AGG_IRQ, 0, 3)->max_ns, 99);
	ck_assert_uint_eq(v->agg_dropped, 12);
	ck_assert_uint_eq(A->bad_records, 0);
}
END_TEST

START_TEST(test_agg_sorted)
{
	const struct hostagg_vcpu *v;
	const struct hostagg_aggent *o[8];
	uint32_t n;

	bind(0, 1);
	v = vcpu(0, 0);
	ck_assert_uint_eq(hostagg_agg_sorted(v, VN_HOST_AGG_EXIT, o, 8), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 1, 1, 300, 1), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_IRQ, 0, 24, 1, 5000, 1), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 12, 1, 900, 1), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 48, 1, 100, 1), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_IRQ, 0, 25, 1, 10, 1), 0);
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 30, 1, 500, 1), 0);

	n = hostagg_agg_sorted(v, VN_HOST_AGG_EXIT, o, 8);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(o[0]->id, 12);
	ck_assert_uint_eq(o[1]->id, 30);
	ck_assert_uint_eq(o[2]->id, 1);
	ck_assert_uint_eq(o[3]->id, 48);
	n = hostagg_agg_sorted(v, VN_HOST_AGG_EXIT, o, 2);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(o[0]->id, 12);
	ck_assert_uint_eq(o[1]->id, 30);
	n = hostagg_agg_sorted(v, VN_HOST_AGG_IRQ, o, 8);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(o[0]->id, 24);
	ck_assert_uint_eq(o[1]->id, 25);
	ck_assert_uint_eq(hostagg_agg_sorted(v, VN_HOST_AGG_SOFTIRQ, o, 8), 0);
	ck_assert_uint_eq(hostagg_agg_sorted(v, VN_HOST_AGG_IRQ, o, 0), 0);

	/* merging moves an entry up */
	ck_assert_int_eq(agg(0, 0, VN_HOST_AGG_EXIT, 1, 48, 1, 1000, 1), 0);
	n = hostagg_agg_sorted(v, VN_HOST_AGG_EXIT, o, 1);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(o[0]->id, 48);
	ck_assert_uint_eq(o[0]->total_ns, 1100);
}
END_TEST

/* ---- reset ---- */

START_TEST(test_irq_names)
{
	struct hostagg *a = hostagg_new();
	char name[40];
	uint32_t i;

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_null(hostagg_irq_name(a, 42));
	ck_assert_int_eq(hostagg_set_irq_name(a, 42, "virtio0-input.0"), 0);
	ck_assert_str_eq(hostagg_irq_name(a, 42), "virtio0-input.0");
	ck_assert_int_eq(hostagg_set_irq_name(a, 42, "eth0"), 0); /* rename, same entry */
	ck_assert_str_eq(hostagg_irq_name(a, 42), "eth0");
	ck_assert_int_eq(hostagg_set_irq_name(a, 7, ""), -EINVAL);
	ck_assert_int_eq(hostagg_set_irq_name(a, 7, NULL), -EINVAL);
	/* long names are cut to the table's width, NUL-terminated */
	ck_assert_int_eq(hostagg_set_irq_name(a, 8, "0123456789012345678901234567890123456789"), 0);
	ck_assert_uint_eq(strlen(hostagg_irq_name(a, 8)), 31);
	for (i = 100; a->nirqnames < HOSTAGG_MAX_IRQNAMES; i++) {
		snprintf(name, sizeof(name), "irq%u", i);
		ck_assert_int_eq(hostagg_set_irq_name(a, i, name), 0);
	}
	ck_assert_int_eq(hostagg_set_irq_name(a, 99999, "full"), -ENOSPC);
	ck_assert_str_eq(hostagg_irq_name(a, 42), "eth0");
	hostagg_reset(a); /* names are bindings: kept */
	ck_assert_str_eq(hostagg_irq_name(a, 42), "eth0");
	hostagg_free(a);
}
END_TEST

START_TEST(test_reset)
{
	struct vn_host_period p;
	const struct hostagg_vcpu *v;
	const struct hostagg_preempt *po[2];

	bind(4, 2);
	ck_assert_int_eq(hostagg_vcpu_tid(A, 4, 0, 4321), 0);
	p = period(4, 0, 0, 1000 * MS);
	p.cpu = 7;
	p.steal_ns = 5;
	p.flags = VN_HOST_PERIOD_F_SCHEDLOG;
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	ck_assert_int_eq(out(4, 0, 10, 20, VN_HOST_OUT_F_SPLIT), 0);
	ck_assert_int_eq(run(4, 0, 9, "kworker", 10, 5), 0);
	ck_assert_int_eq(run(4, 0, 0, "swapper", 10, 5), 0);
	ck_assert_int_eq(agg(4, 0, VN_HOST_AGG_IRQ, 0, 1, 1, 1, 1), 0);
	ck_assert_int_eq(agg(5, 0, VN_HOST_AGG_IRQ, 0, 1, 1, 1, 1), -EINVAL);
	ck_assert_uint_eq(A->bad_records, 1);

	hostagg_reset(A);

	/* bindings stay */
	ck_assert(A->dom[4].seen);
	ck_assert_str_eq(A->dom[4].name, "vm4");
	ck_assert_uint_eq(A->dom[4].nvcpus, 2);
	ck_assert_uint_eq(A->dom[4].qemu_pid, 1004);
	ck_assert(A->dom[4].running);
	v = vcpu(4, 0);
	ck_assert(v->seen);
	ck_assert_uint_eq(v->tid, 4321);
	ck_assert_uint_eq(v->cpu, 7);
	ck_assert_uint_eq(vcpu(4, 1)->cpu, ~0u);
	/* counters go */
	ck_assert_uint_eq(A->bad_records, 0);
	ck_assert_uint_eq(v->periods, 0);
	ck_assert_uint_eq(v->flags, 0);
	ck_assert_uint_eq(v->first_ns, 0);
	ck_assert_uint_eq(v->last_ns, 0);
	ck_assert_uint_eq(v->steal_ns, 0);
	ck_assert_uint_eq(v->max_out_ns, 0);
	ck_assert_uint_eq(v->cur_out_ns, 0);
	ck_assert_uint_eq(v->run_ns, 0);
	ck_assert_uint_eq(v->npreempt, 0);
	ck_assert_uint_eq(v->nagg, 0);
	ck_assert_uint_eq(v->agg_dropped, 0);
	ck_assert_uint_eq(hostagg_preempt_sorted(v, po, 2), 0);

	/* and the engine takes records again */
	ck_assert_int_eq(run(4, 0, 9, "kworker", 30, 6), 0);
	ck_assert_uint_eq(v->npreempt, 1);
	ck_assert_uint_eq(v->preempt[0].total_ns, 6);
	ck_assert_uint_eq(v->preempt[0].count, 1);
	p = period(4, 1, 50, 60);
	ck_assert_int_eq(hostagg_period(A, &p), 0);
	ck_assert_uint_eq(vcpu(4, 1)->first_ns, 50);

	/* reset of an empty engine and free(NULL) are fine */
	hostagg_reset(A);
	hostagg_free(NULL);
}
END_TEST

/* ---- exit reason names ---- */

START_TEST(test_exit_names_vmx)
{
	ck_assert_str_eq(hostagg_exit_name(1, 0), "EXCEPTION_NMI");
	ck_assert_str_eq(hostagg_exit_name(1, 1), "EXTERNAL_INTERRUPT");
	ck_assert_str_eq(hostagg_exit_name(1, 10), "CPUID");
	ck_assert_str_eq(hostagg_exit_name(1, 12), "HLT");
	ck_assert_str_eq(hostagg_exit_name(1, 30), "IO_INSTRUCTION");
	ck_assert_str_eq(hostagg_exit_name(1, 31), "MSR_READ");
	ck_assert_str_eq(hostagg_exit_name(1, 32), "MSR_WRITE");
	ck_assert_str_eq(hostagg_exit_name(1, 48), "EPT_VIOLATION");
	ck_assert_str_eq(hostagg_exit_name(1, 49), "EPT_MISCONFIG");
	ck_assert_str_eq(hostagg_exit_name(1, 52), "PREEMPTION_TIMER");
	ck_assert_str_eq(hostagg_exit_name(1, 75), "NOTIFY");
	/* high bits (bit 31 VM-entry failure, bits 16..30) are not part of the basic reason */
	ck_assert_str_eq(hostagg_exit_name(1, 0x80000000u | 33), "INVALID_STATE");
	ck_assert_str_eq(hostagg_exit_name(1, 0x80000000u | 12), "HLT");
	ck_assert_str_eq(hostagg_exit_name(1, 0x00010000u | 48), "EPT_VIOLATION");
	/* holes and values past the table */
	ck_assert_ptr_null(hostagg_exit_name(1, 4));
	ck_assert_ptr_null(hostagg_exit_name(1, 11));
	ck_assert_ptr_null(hostagg_exit_name(1, 76));
	ck_assert_ptr_null(hostagg_exit_name(1, 0xffff));
	ck_assert_ptr_null(hostagg_exit_name(1, 0x80000000u | 4));
}
END_TEST

START_TEST(test_exit_names_svm)
{
	ck_assert_str_eq(hostagg_exit_name(2, 0x60), "INTR");
	ck_assert_str_eq(hostagg_exit_name(2, 0x61), "NMI");
	ck_assert_str_eq(hostagg_exit_name(2, 0x72), "CPUID");
	ck_assert_str_eq(hostagg_exit_name(2, 0x77), "PAUSE");
	ck_assert_str_eq(hostagg_exit_name(2, 0x78), "HLT");
	ck_assert_str_eq(hostagg_exit_name(2, 0x7b), "IOIO");
	ck_assert_str_eq(hostagg_exit_name(2, 0x7c), "MSR");
	ck_assert_str_eq(hostagg_exit_name(2, 0x400), "NPF");
	ck_assert_ptr_null(hostagg_exit_name(2, 12));
	ck_assert_ptr_null(hostagg_exit_name(2, 0));
	ck_assert_ptr_null(hostagg_exit_name(2, 0x7ff));
	ck_assert_ptr_null(hostagg_exit_name(2, 0x10078));
	/* unknown ISA */
	ck_assert_ptr_null(hostagg_exit_name(0, 12));
	ck_assert_ptr_null(hostagg_exit_name(3, 0x78));
}
END_TEST

/* ---- flows ---- */

static struct vn_host_flow flow(uint32_t dom, const char *tap, unsigned dir, uint16_t dport,
				uint64_t packets, uint64_t bytes)
{
	struct vn_host_flow f;

	memset(&f, 0, sizeof(f));
	f.start_ns = 1 * S;
	f.end_ns = 2 * S;
	f.dom = dom;
	f.dir = (uint8_t)dir;
	f.kind = VN_HOST_FLOW_KIND_FLOW;
	f.ipver = 4;
	f.proto = 17;
	f.ethertype = 0x0800;
	f.sport = 40000;
	f.dport = dport;
	f.src[0] = 10;
	f.dst[0] = 10;
	f.dst[3] = 2;
	snprintf(f.tap, sizeof(f.tap), "%s", tap);
	f.packets = packets;
	f.bytes = bytes;
	return f;
}

START_TEST(test_flow_sums)
{
	const struct vn_host_flow *out[8];
	struct vn_host_flow f;
	const struct hostagg_net *n;

	bind(0, 1);
	f = flow(0, "vnet0", VN_HOST_FLOW_TO_GUEST, 5555, 10, 2420);
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	f.start_ns = 2 * S;
	f.end_ns = 3 * S;
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	/* the same key from the guest, on another tap, another port: other rows */
	f = flow(0, "vnet0", VN_HOST_FLOW_FROM_GUEST, 5555, 1, 60);
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	f = flow(0, "vnet1", VN_HOST_FLOW_TO_GUEST, 5555, 3, 300);
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	f = flow(0, "vnet0", VN_HOST_FLOW_TO_GUEST, 6666, 100, 100000);
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	/* a period's other-flows row */
	f = flow(0, "vnet0", VN_HOST_FLOW_TO_GUEST, 0, 7, 700);
	f.kind = VN_HOST_FLOW_KIND_OTHER;
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	n = A->dom[0].net;
	ck_assert_ptr_nonnull(n);
	ck_assert_uint_eq(n->nflows, 4);
	ck_assert_uint_eq(n->flow[0].packets, 20);
	ck_assert_uint_eq(n->flow[0].bytes, 4840);
	ck_assert_uint_eq(n->flow[0].start_ns, 1 * S);
	ck_assert_uint_eq(n->flow[0].end_ns, 3 * S);
	ck_assert_uint_eq(n->other[VN_HOST_FLOW_TO_GUEST].packets, 7);
	ck_assert_uint_eq(n->other[VN_HOST_FLOW_TO_GUEST].kind, VN_HOST_FLOW_KIND_OTHER);
	ck_assert_uint_eq(n->other[VN_HOST_FLOW_FROM_GUEST].packets, 0);
	ck_assert_uint_eq(n->flows_dropped, 0);
	/* sorted by bytes, per direction */
	ck_assert_uint_eq(hostagg_flows_sorted(&A->dom[0], VN_HOST_FLOW_TO_GUEST, out, 8), 3);
	ck_assert_uint_eq(out[0]->dport, 6666);
	ck_assert_uint_eq(out[1]->bytes, 4840);
	ck_assert_str_eq(out[2]->tap, "vnet1");
	ck_assert_uint_eq(hostagg_flows_sorted(&A->dom[0], VN_HOST_FLOW_TO_GUEST, out, 1), 1);
	ck_assert_uint_eq(out[0]->dport, 6666);
	ck_assert_uint_eq(hostagg_flows_sorted(&A->dom[0], VN_HOST_FLOW_FROM_GUEST, out, 8), 1);
	ck_assert_uint_eq(out[0]->packets, 1);
	ck_assert(hostagg_has_net(A));
	/* a domain without flows */
	bind(1, 1);
	ck_assert_uint_eq(hostagg_flows_sorted(&A->dom[1], VN_HOST_FLOW_TO_GUEST, out, 8), 0);
}
END_TEST

START_TEST(test_flow_overflow)
{
	struct vn_host_flow f;
	const struct hostagg_net *n;
	uint32_t i;

	bind(0, 1);
	for (i = 0; i < HOSTAGG_MAX_FLOWS + 5; i++) {
		f = flow(0, "vnet0", VN_HOST_FLOW_TO_GUEST, (uint16_t)(1000 + i), 2, 200);
		ck_assert_int_eq(hostagg_flow(A, &f), 0);
	}
	n = A->dom[0].net;
	ck_assert_uint_eq(n->nflows, HOSTAGG_MAX_FLOWS);
	ck_assert_uint_eq(n->flows_dropped, 5);
	ck_assert_uint_eq(n->other[VN_HOST_FLOW_TO_GUEST].packets, 10);
	ck_assert_uint_eq(n->other[VN_HOST_FLOW_TO_GUEST].bytes, 1000);
	/* a known flow still finds its row */
	f = flow(0, "vnet0", VN_HOST_FLOW_TO_GUEST, 1000, 1, 100);
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	ck_assert_uint_eq(n->flow[0].packets, 3);
	ck_assert_uint_eq(n->flows_dropped, 5);
}
END_TEST

START_TEST(test_flow_taps)
{
	struct vn_host_tap t;
	const struct hostagg_net *n;
	uint32_t i;

	bind(0, 1);
	memset(&t, 0, sizeof(t));
	t.start_ns = 1 * S;
	t.end_ns = 2 * S;
	snprintf(t.tap, sizeof(t.tap), "vnet0");
	t.packets[0] = 10;
	t.bytes[0] = 1000;
	t.packets[1] = 2;
	t.dropped[0] = 1;
	t.overflow[0] = 3;
	t.truncated = 4;
	ck_assert_int_eq(hostagg_tap(A, &t), 0);
	t.state = VN_HOST_TAP_FAILED;
	ck_assert_int_eq(hostagg_tap(A, &t), 0);
	n = A->dom[0].net;
	ck_assert_uint_eq(n->ntaps, 1);
	ck_assert_str_eq(n->tap[0].tap, "vnet0");
	ck_assert_uint_eq(n->tap[0].periods, 2);
	ck_assert_uint_eq(n->tap[0].failed, 1);
	ck_assert_uint_eq(n->tap[0].packets[0], 20);
	ck_assert_uint_eq(n->tap[0].bytes[0], 2000);
	ck_assert_uint_eq(n->tap[0].packets[1], 4);
	ck_assert_uint_eq(n->tap[0].dropped[0], 2);
	ck_assert_uint_eq(n->tap[0].overflow[0], 6);
	ck_assert_uint_eq(n->tap[0].truncated, 8);
	/* a name without its NUL (16 bytes) is cut, not overrun */
	memset(t.tap, 'x', sizeof(t.tap));
	t.state = VN_HOST_TAP_OK;
	ck_assert_int_eq(hostagg_tap(A, &t), 0);
	ck_assert_uint_eq(strlen(n->tap[1].tap), VN_HOST_COMM_LEN);
	for (i = 0; i < HOSTAGG_MAX_TAPS; i++) {
		snprintf(t.tap, sizeof(t.tap), "t%u", i);
		ck_assert_int_eq(hostagg_tap(A, &t), 0);
	}
	ck_assert_uint_eq(n->ntaps, HOSTAGG_MAX_TAPS);
	ck_assert_uint_eq(n->taps_dropped, 2);
}
END_TEST

START_TEST(test_flow_bad)
{
	struct vn_host_flow f;
	struct vn_host_tap t;

	f = flow(3, "vnet0", VN_HOST_FLOW_TO_GUEST, 1, 1, 1); /* domain not bound */
	ck_assert_int_eq(hostagg_flow(A, &f), -EINVAL);
	ck_assert_uint_eq(A->bad_records, 1);
	bind(0, 1);
	f = flow(0, "vnet0", 2, 1, 1, 1);
	ck_assert_int_eq(hostagg_flow(A, &f), -EINVAL);
	f = flow(0, "vnet0", 0, 1, 1, 1);
	f.kind = 2;
	ck_assert_int_eq(hostagg_flow(A, &f), -EINVAL);
	f = flow(0, "vnet0", 0, 1, 1, 1);
	f.end_ns = f.start_ns - 1;
	ck_assert_int_eq(hostagg_flow(A, &f), -EINVAL);
	f = flow(VN_HOST_MAX_DOMAINS, "vnet0", 0, 1, 1, 1);
	ck_assert_int_eq(hostagg_flow(A, &f), -EINVAL);
	memset(&t, 0, sizeof(t));
	t.dom = 0;
	t.state = 2;
	ck_assert_int_eq(hostagg_tap(A, &t), -EINVAL);
	t.state = 0;
	t.dom = 5;
	ck_assert_int_eq(hostagg_tap(A, &t), -EINVAL);
	ck_assert_uint_eq(A->bad_records, 7);
	ck_assert(!hostagg_has_net(A));
	/* reset empties the tables, keeps the binding */
	f = flow(0, "vnet0", 0, 1, 1, 1);
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	ck_assert(hostagg_has_net(A));
	hostagg_reset(A);
	ck_assert(!hostagg_has_net(A));
	ck_assert_uint_eq(A->dom[0].net->other[0].packets, 0);
	ck_assert_int_eq(hostagg_flow(A, &f), 0);
	ck_assert_uint_eq(A->dom[0].net->nflows, 1);
}
END_TEST

/* ---- record chunks: the one route for live and replay ---- */

/* An unaligned chunk of records goes to the record's feed function, each record in order; text chunks and
 * unknown types are not touched; a length that is not a whole number of records feeds nothing. */
START_TEST(test_feed_chunk)
{
	struct vn_host_period p[2] = { period(0, 0, 0, 1 * S), period(0, 1, 0, 1 * S) };
	struct vn_host_out o = {
		.start_ns = 100, .end_ns = 600, .dom = 0, .vcpu = 1, .state = 'R'
	};
	static char buf[1 + sizeof(p)];

	bind(0, 2);
	p[0].steal_ns = 7;
	p[1].steal_ns = 9;
	memcpy(buf + 1, p, sizeof(p)); /* not aligned for the struct */
	ck_assert_int_eq(hostagg_feed_chunk(A, VN_CHUNK_HOST_PERIOD, buf + 1, sizeof(p)), 1);
	ck_assert_uint_eq(vcpu(0, 0)->steal_ns, 7);
	ck_assert_uint_eq(vcpu(0, 1)->steal_ns, 9);
	ck_assert_int_eq(hostagg_feed_chunk(A, VN_CHUNK_HOST_OUT, &o, sizeof(o)), 1);
	ck_assert_uint_eq(vcpu(0, 1)->max_out_ns, 500);
	ck_assert_int_eq(hostagg_feed_chunk(A, VN_CHUNK_HOST_PERIOD, buf + 1, sizeof(p) - 1),
			 -EINVAL);
	ck_assert_int_eq(hostagg_feed_chunk(A, VN_CHUNK_HOST_META, "a=b\n", 4), 0);
	ck_assert_int_eq(hostagg_feed_chunk(A, 999, buf, 8), 0);
	ck_assert_int_eq(hostagg_feed_chunk(A, VN_CHUNK_HOST_TAP, NULL, 0), 1);
	ck_assert_uint_eq(vcpu(0, 0)->periods, 1);
	ck_assert_uint_eq(A->bad_records, 0);
}
END_TEST

static Suite *hostagg_suite(void)
{
	Suite *s = suite_create("hostagg");
	TCase *tc;

	tc = tcase_create("domain");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_domain_bounds);
	tcase_add_test(tc, test_domain_fields);
	tcase_add_test(tc, test_domain_grow);
	tcase_add_test(tc, test_domain_events);
	tcase_add_test(tc, test_vcpu_tid);
	suite_add_tcase(s, tc);

	tc = tcase_create("period");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_period_sums);
	tcase_add_test(tc, test_period_first_at_zero);
	tcase_add_test(tc, test_bad_records);
	tcase_add_test(tc, test_worst);
	tcase_add_test(tc, test_feed_chunk);
	suite_add_tcase(s, tc);

	tc = tcase_create("out");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_out_max);
	tcase_add_test(tc, test_out_split_joined);
	suite_add_tcase(s, tc);

	tc = tcase_create("preempt");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_preempt_merge);
	tcase_add_test(tc, test_preempt_idle);
	tcase_add_test(tc, test_preempt_comm_full);
	tcase_add_test(tc, test_preempt_overflow);
	tcase_add_test(tc, test_preempt_sorted);
	tcase_add_test(tc, test_preempt_sorted_other);
	tcase_add_test(tc, test_preempt_sorted_other_small);
	tcase_add_test(tc, test_out_split_causes);
	tcase_add_test(tc, test_out_split_sums);
	suite_add_tcase(s, tc);

	tc = tcase_create("agg");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_agg_merge);
	tcase_add_test(tc, test_agg_overflow);
	tcase_add_test(tc, test_agg_sorted);
	suite_add_tcase(s, tc);

	tc = tcase_create("match");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_match_sums);
	tcase_add_test(tc, test_match_src_full);
	suite_add_tcase(s, tc);

	tc = tcase_create("flows");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_flow_sums);
	tcase_add_test(tc, test_flow_overflow);
	tcase_add_test(tc, test_flow_taps);
	tcase_add_test(tc, test_flow_bad);
	suite_add_tcase(s, tc);

	tc = tcase_create("reset");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_reset);
	suite_add_tcase(s, tc);

	tc = tcase_create("irq_names");
	tcase_add_test(tc, test_irq_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("exit_names");
	tcase_add_test(tc, test_exit_names_vmx);
	tcase_add_test(tc, test_exit_names_svm);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hostagg_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
