/* SPDX-License-Identifier: MIT */
/*
 * schedlog: loader and reader of the host dispatch log (contract in schedlog_loader.h). Open -> size the
 * maps, set the .bss -> choose programs (IRQ ones the kernel has, KVM ones if asked and present) -> load ->
 * attach one by one -> read the ring buffer into an outlog. Aggregates use a period parity (epoch) in their
 * keys: closing a period flips it, waits for programs that read the old parity to finish, then collects and
 * deletes the old parity's entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "schedlog/schedlog.h"
#include "schedlog/schedlog_loader.h"
#include "host.h"
#include "schedlog.skel.h"
#include "bpf/bpfutil.h"
#include "util/log.h"

_Static_assert((int)OUTLOG_REC_SWITCH == SCHEDLOG_REC_SWITCH &&
		   (int)OUTLOG_REC_WAKEUP == SCHEDLOG_REC_WAKEUP &&
		   (int)OUTLOG_REC_RUNNING == SCHEDLOG_REC_RUNNING &&
		   OUTLOG_RF_PREEMPT == SCHEDLOG_RF_PREEMPT,
	       "record types and flags are passed through");
_Static_assert((int)SCHEDLOG_AGG_IRQ == VN_HOST_AGG_IRQ &&
		   (int)SCHEDLOG_AGG_SOFTIRQ == VN_HOST_AGG_SOFTIRQ &&
		   (int)SCHEDLOG_AGG_VECTOR == VN_HOST_AGG_VECTOR &&
		   (int)SCHEDLOG_AGG_EXIT == VN_HOST_AGG_EXIT,
	       "aggregate kinds are those of the host records (protocol/host.h)");

#define SCHEDLOG_GRACE_NS 200000L /* after an epoch flip: programs that read the old one are done */

/* Per slot: aggregates of the last closed period, largest total first. */
struct schedlog_aggv {
	struct schedlog_agg *v;
	int n, cap;
};

struct schedlog {
	struct schedlog_bpf *skel;
	struct bpf_link *links[SCHEDLOG_MAX_PROGS];
	int nlinks;
	struct ring_buffer *rb;
	struct outlog *ol;
	int stats_fd;
	int ncpus;
	int irqs, kvm; /* attached */
	uint64_t reorder_ns;
	uint64_t received;
	uint64_t agg_truncated;
	uint64_t agg_cuts; /* outlog cuts when the aggregates were last collected */
	uint32_t epoch;
	uint32_t slot_tid[SCHEDLOG_MAX_SLOTS]; /* 0: free */
	__u64 *mask; /* user-space copy of the tidmask map */
	uint32_t mask_words;
	struct schedlog_aggv aggs[SCHEDLOG_MAX_SLOTS];
};

/* Program groups by section. */
enum { PG_CORE, PG_IRQ, PG_KVM };

static int prog_group(const char *sec)
{
	if (!strcmp(sec, "tp_btf/sched_switch") || !strcmp(sec, "tp_btf/sched_wakeup"))
		return PG_CORE;
	if (!strncmp(sec, "tracepoint/kvm/", 15))
		return PG_KVM;
	return PG_IRQ;
}

static bool kvm_tracepoints_exist(void)
{
	return !access("/sys/kernel/tracing/events/kvm/kvm_exit/id", R_OK) ||
	       !access("/sys/kernel/debug/tracing/events/kvm/kvm_exit/id", R_OK);
}

static uint32_t pid_max(void)
{
	unsigned long v = 0;
	FILE *f = fopen("/proc/sys/kernel/pid_max", "re");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	if (!v || v > (1ul << 22)) /* PID_MAX_LIMIT */
		v = 1ul << 22;
	return (uint32_t)v;
}

static void teardown(struct schedlog *d)
{
	int i;

	ring_buffer__free(d->rb);
	d->rb = NULL;
	for (i = 0; i < d->nlinks; i++)
		bpf_link__destroy(d->links[i]);
	d->nlinks = 0;
	schedlog_bpf__destroy(d->skel);
	d->skel = NULL;
}

/* One ring buffer record -> the outlog's pending buffer. */
static int on_record(void *ctx, void *data, size_t size)
{
	struct schedlog *d = ctx;
	const struct schedlog_rec *r = data;
	struct outlog_rec o;

	if (size < sizeof(*r))
		return 0;
	d->received++;
	memset(&o, 0, sizeof(o));
	o.ts_ns = r->ts_ns;
	o.run_ns = r->run_ns;
	o.prev_pid = r->prev_pid;
	o.next_pid = r->next_pid;
	o.prev_state = r->prev_state;
	o.prev_slot = r->prev_slot;
	o.next_slot = r->next_slot;
	o.cpu = r->cpu;
	o.type = r->type;
	o.flags = r->flags;
	memcpy(o.prev_comm, r->prev_comm, sizeof(o.prev_comm));
	memcpy(o.next_comm, r->next_comm, sizeof(o.next_comm));
	if (outlog_push(d->ol, &o))
		return 0; /* refused: counted by the outlog (overflow) */
	return 0;
}

static bool is_core(const char *sec)
{
	return prog_group(sec) == PG_CORE;
}

/* Size the ring buffer and the tid bitmap; no CPU runs a monitored thread yet. */
static int size_maps(struct schedlog *d, const struct schedlog_opts *o, const char **why)
{
	uint32_t ring = o->ring_bytes ? o->ring_bytes : SCHEDLOG_RING_BYTES;
	int i;

	if (bpf_map__set_max_entries(d->skel->maps.events, ring) ||
	    bpf_map__set_max_entries(d->skel->maps.tidmask, d->mask_words)) {
		*why = "cannot size the BPF maps";
		return -EINVAL;
	}
	for (i = 0; i < SCHEDLOG_MAX_CPUS; i++) {
		d->skel->bss->dl.cpus[i].running = SCHEDLOG_NO_SLOT;
		d->skel->bss->dl.cpus[i].hi_slot = SCHEDLOG_NO_SLOT;
		d->skel->bss->dl.cpus[i].si_slot = SCHEDLOG_NO_SLOT;
	}
	return 0;
}

/* The programs of the groups asked for, less those this kernel lacks (the scheduler ones are required). */
static int choose_programs(struct schedlog *d, int irqs, int kvm, const struct btf *vmlinux,
			   const char **why)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, d->skel->obj)
	{
		int g = prog_group(bpf_program__section_name(prog));

		bpf_program__set_autoload(prog, g == PG_CORE || (g == PG_IRQ && irqs) ||
						    (g == PG_KVM && kvm));
	}
	if (bpfutil_drop_missing(d->skel->obj, vmlinux, is_core, NULL)) {
		*why = "the kernel lacks the sched_switch/sched_wakeup tracepoints";
		return -ENOTSUP;
	}
	return 0;
}

/* Attach the loaded programs one by one: the scheduler ones must attach, others are skipped with a warning. */
static int attach_programs(struct schedlog *d, int *kvm, const char **why)
{
	struct bpf_program *prog;
	int err;

	bpf_object__for_each_program(prog, d->skel->obj)
	{
		const char *sec = bpf_program__section_name(prog);
		struct bpf_link *l;

		if (!bpf_program__autoload(prog))
			continue;
		if (d->nlinks >= SCHEDLOG_MAX_PROGS) {
			*why = "too many programs";
			return -E2BIG;
		}
		l = bpf_program__attach(prog);
		if (!l) {
			err = -errno;
			if (prog_group(sec) == PG_CORE) {
				*why = "cannot attach to sched_switch/sched_wakeup";
				return err;
			}
			log_warn("dispatch log: cannot attach %s: %s; going on without it", sec,
				 strerror(-err));
			if (prog_group(sec) == PG_KVM)
				*kvm = 0;
			continue;
		}
		d->links[d->nlinks++] = l;
	}
	return 0;
}

/*
 * Open, configure, load and attach with the given groups, then open the ring buffer reader. On failure
 * everything is torn down and *why says what failed. kvm is cleared if the KVM programs could not attach
 * (they are optional).
 */
static int try_load(struct schedlog *d, const struct schedlog_opts *o, int irqs, int *kvm,
		    const struct btf *vmlinux, const char **why)
{
	int err;

	d->skel = schedlog_bpf__open();
	if (!d->skel) {
		*why = "cannot open the BPF object";
		return -errno;
	}
	err = size_maps(d, o, why);
	if (err)
		goto out;
	err = choose_programs(d, irqs, *kvm, vmlinux, why);
	if (err)
		goto out;
	err = schedlog_bpf__load(d->skel);
	if (err) {
		*why = err == -EPERM || err == -EACCES ? BPFUTIL_WHY_EPERM
						       : "the kernel refused the eBPF programs";
		goto out;
	}
	err = attach_programs(d, kvm, why);
	if (err)
		goto out;
	d->rb = ring_buffer__new(bpf_map__fd(d->skel->maps.events), on_record, d, NULL);
	if (!d->rb) {
		err = -errno;
		*why = "cannot read the ring buffer";
	}
out:
	if (err)
		teardown(d);
	return err;
}

struct schedlog *schedlog_open(const struct schedlog_opts *o, char *msg, size_t msglen)
{
	struct schedlog_opts dflt = { 0 };
	struct schedlog *d = NULL;
	struct btf *vmlinux = NULL;
	const char *why = "";
	int err, kvm;

	if (!o)
		o = &dflt;
	bpfutil_set_print();
	d = calloc(1, sizeof(*d));
	if (!d) {
		err = -ENOMEM;
		why = "out of memory";
		goto out;
	}
	d->stats_fd = -1;
	d->reorder_ns = o->reorder_ns ? o->reorder_ns : SCHEDLOG_REORDER_NS;
	if (o->ring_bytes && (o->ring_bytes < 4096 || (o->ring_bytes & (o->ring_bytes - 1)))) {
		err = -EINVAL;
		why = "ring_bytes must be a power of two >= 4096";
		goto out;
	}
	d->ncpus = libbpf_num_possible_cpus();
	if (d->ncpus <= 0 || d->ncpus > SCHEDLOG_MAX_CPUS) {
		err = d->ncpus <= 0 ? d->ncpus : -ERANGE;
		why = "cannot count the CPUs, or more than 1024";
		goto out;
	}
	d->mask_words = (pid_max() + 63) / 64;
	d->mask = calloc(d->mask_words, sizeof(*d->mask));
	d->ol = outlog_new(SCHEDLOG_MAX_SLOTS, (uint32_t)d->ncpus);
	if (!d->mask || !d->ol) {
		err = -ENOMEM;
		why = "out of memory";
		goto out;
	}
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		err = -ENOENT;
		why = "no kernel BTF (/sys/kernel/btf/vmlinux)";
		goto out;
	}
	d->stats_fd = bpfutil_enable_stats(); /* before the attach: see bpfutil_enable_stats() */
	kvm = o->want_kvm && kvm_tracepoints_exist();
	if (o->want_kvm && !kvm)
		log_debug("dispatch log: no kvm tracepoints on this host; KVM exits not traced");
	err = try_load(d, o, o->want_irqs, &kvm, vmlinux, &why);
	if (err && kvm && err != -EPERM && err != -EACCES) {
		/* e.g. the kvm module without BTF: the exit layout cannot be relocated */
		log_warn("dispatch log: %s with KVM exits; retrying without them", why);
		kvm = 0;
		err = try_load(d, o, o->want_irqs, &kvm, vmlinux, &why);
	}
	if (err)
		goto out;
	d->irqs = !!o->want_irqs;
	d->kvm = kvm;
out:
	btf__free(vmlinux);
	if (err) {
		if (msg && msglen)
			snprintf(msg, msglen, "%s (%s)", why, strerror(-err));
		schedlog_close(d);
		errno = -err;
		return NULL;
	}
	return d;
}

void schedlog_close(struct schedlog *d)
{
	int i;

	if (!d)
		return;
	teardown(d);
	if (d->stats_fd >= 0)
		close(d->stats_fd);
	outlog_free(d->ol);
	for (i = 0; i < SCHEDLOG_MAX_SLOTS; i++)
		free(d->aggs[i].v);
	free(d->mask);
	free(d);
}

/* Set or clear tid's bit in the tidmask map (BPF only reads it; we keep the copy). */
static int mask_set(struct schedlog *d, uint32_t tid, int on)
{
	uint32_t w = tid >> 6;
	__u64 bit = 1ULL << (tid & 63);

	if (w >= d->mask_words)
		return 0; /* beyond pid_max at load: BPF falls back to the hash for it */
	if (on)
		d->mask[w] |= bit;
	else
		d->mask[w] &= ~bit;
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.tidmask), &w, &d->mask[w], BPF_ANY))
		return -errno;
	return 0;
}

static int find_slot(const struct schedlog *d, uint32_t tid)
{
	int i;

	for (i = 0; i < SCHEDLOG_MAX_SLOTS; i++)
		if (d->slot_tid[i] == tid)
			return i;
	return -1;
}

int schedlog_add(struct schedlog *d, uint32_t tid, uint32_t slot)
{
	struct schedlog_slot *s;
	int err;

	if (!tid || slot >= SCHEDLOG_MAX_SLOTS)
		return -EINVAL;
	if (d->slot_tid[slot] && outlog_slot_state(d->ol, slot) == OUTLOG_SLOT_GONE)
		(void)schedlog_del(d, d->slot_tid[slot]); /* exited, not yet reaped by a poll */
	if (find_slot(d, tid) >= 0)
		return -EEXIST;
	if (d->slot_tid[slot])
		return -EBUSY;
	err = outlog_slot_add(d->ol, slot, tid);
	if (err)
		return err;
	s = &d->skel->bss->dl.slots[slot];
	memset(s, 0, sizeof(*s));
	s->tid = tid;
	__atomic_thread_fence(__ATOMIC_RELEASE); /* the slot is ready before its tid maps to it */
	if (bpf_map_update_elem(bpf_map__fd(d->skel->maps.slot_by_tid), &tid, &slot, BPF_NOEXIST)) {
		err = -errno;
		goto out;
	}
	err = mask_set(d, tid, 1);
	if (err) {
		bpf_map_delete_elem(bpf_map__fd(d->skel->maps.slot_by_tid), &tid);
		goto out;
	}
	d->slot_tid[slot] = tid;
	d->aggs[slot].n = 0;
out:
	if (err)
		outlog_slot_del(d->ol, slot);
	return err;
}

int schedlog_del(struct schedlog *d, uint32_t tid)
{
	struct schedlog_slot *s;
	int slot = tid ? find_slot(d, tid) : -1;

	if (slot < 0)
		return -ENOENT;
	(void)mask_set(d, tid, 0);
	bpf_map_delete_elem(bpf_map__fd(d->skel->maps.slot_by_tid), &tid);
	/*
	 * Programs that looked the tid up just before may still update the slot; the window is a few
	 * instructions, and at worst leaves a CPU emitting records that nobody watches.
	 */
	s = &d->skel->bss->dl.slots[slot];
	if (__atomic_exchange_n(&s->out, 0, __ATOMIC_ACQ_REL))
		__atomic_fetch_sub(
		    &d->skel->bss->dl.cpus[s->out_cpu & (SCHEDLOG_MAX_CPUS - 1)].nout, 1,
		    __ATOMIC_RELAXED);
	s->exit_pending = 0;
	outlog_slot_del(d->ol, (uint32_t)slot);
	d->slot_tid[slot] = 0;
	d->aggs[slot].n = 0;
	return 0;
}

int schedlog_poll(struct schedlog *d, uint64_t now_ns)
{
	int n, i;

	n = ring_buffer__consume(d->rb);
	if (n < 0)
		return n;
	outlog_advance(d->ol, now_ns > d->reorder_ns ? now_ns - d->reorder_ns : 0);
	for (i = 0; i < SCHEDLOG_MAX_SLOTS; i++)
		if (d->slot_tid[i] && outlog_slot_state(d->ol, (uint32_t)i) == OUTLOG_SLOT_GONE)
			(void)schedlog_del(d, d->slot_tid[i]);
	return n;
}

struct outlog *schedlog_outlog(struct schedlog *d)
{
	return d->ol;
}

static int agg_cmp(const void *a, const void *b)
{
	const struct schedlog_agg *x = a, *y = b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void agg_append(struct schedlog *d, uint32_t slot, const struct schedlog_agg *a)
{
	struct schedlog_aggv *v = &d->aggs[slot];

	if (v->n == v->cap) {
		int nc = v->cap ? v->cap * 2 : 16;
		struct schedlog_agg *p = realloc(v->v, (size_t)nc * sizeof(*p));

		if (!p) {
			d->agg_truncated++;
			return;
		}
		v->v = p;
		v->cap = nc;
	}
	v->v[v->n++] = *a;
}

/* Move the entries of parity old from one aggregate map into the per-slot lists, deleting them. */
static void agg_collect_map(struct schedlog *d, struct bpf_map *map, int is_kvm, __u8 old)
{
	int fd = bpf_map__fd(map);
	uint32_t cap = bpf_map__max_entries(map), nk = 0, i;
	struct schedlog_agg_key k, next, *keys = calloc(cap, sizeof(*keys));
	void *prev = NULL;

	if (!keys)
		return;
	while (nk < cap && !bpf_map_get_next_key(fd, prev, &next)) {
		struct schedlog_agg_val v;
		struct schedlog_agg a;

		k = next;
		prev = &k;
		if (k.epoch != old || bpf_map_lookup_elem(fd, &k, &v))
			continue;
		keys[nk++] = k;
		if (k.slot >= SCHEDLOG_MAX_SLOTS || !d->slot_tid[k.slot])
			continue; /* removed since */
		memset(&a, 0, sizeof(a));
		a.kind = is_kvm ? SCHEDLOG_AGG_EXIT : k.kind;
		a.isa = is_kvm ? k.kind : 0;
		a.id = k.id;
		a.count = v.count;
		a.total_ns = v.total_ns;
		a.max_ns = v.max_ns;
		agg_append(d, k.slot, &a);
	}
	for (i = 0; i < nk; i++)
		bpf_map_delete_elem(fd, &keys[i]);
	free(keys);
}

/* Close the aggregates' period: flip the epoch, let in-flight programs finish, collect the old parity. */
static void agg_collect(struct schedlog *d)
{
	struct timespec grace = { 0, SCHEDLOG_GRACE_NS };
	__u8 old = (__u8)(d->epoch & 1);
	struct outlog_counters c;
	int i;

	outlog_counters(d->ol, &c);
	d->agg_cuts = c.cuts;
	for (i = 0; i < SCHEDLOG_MAX_SLOTS; i++)
		d->aggs[i].n = 0;
	if (!d->irqs && !d->kvm)
		return;
	d->epoch++;
	__atomic_store_n(&d->skel->bss->dl.epoch, d->epoch, __ATOMIC_SEQ_CST);
	nanosleep(&grace, NULL);
	if (d->irqs)
		agg_collect_map(d, d->skel->maps.irq_agg, 0, old);
	if (d->kvm)
		agg_collect_map(d, d->skel->maps.kvm_agg, 1, old);
	for (i = 0; i < SCHEDLOG_MAX_SLOTS; i++)
		if (d->aggs[i].n > 1)
			qsort(d->aggs[i].v, (size_t)d->aggs[i].n, sizeof(*d->aggs[i].v), agg_cmp);
}

void schedlog_cut(struct schedlog *d, uint64_t end_ns)
{
	outlog_cut(d->ol, end_ns);
	agg_collect(d);
}

int schedlog_take_aggs(struct schedlog *d, uint32_t slot, struct schedlog_agg *out, int max)
{
	struct outlog_counters c;
	struct schedlog_aggv *v;
	int n;

	if (slot >= SCHEDLOG_MAX_SLOTS || max < 0 || (max && !out))
		return -EINVAL;
	outlog_counters(d->ol, &c);
	if (c.cuts != d->agg_cuts)
		agg_collect(d); /* the caller cut the outlog directly */
	v = &d->aggs[slot];
	n = v->n < max ? v->n : max;
	if (n)
		memcpy(out, v->v, (size_t)n * sizeof(*out));
	d->agg_truncated += (uint64_t)(v->n - n);
	v->n = 0;
	return n;
}

bool schedlog_kvm_attached(const struct schedlog *d)
{
	return d && d->kvm;
}

void schedlog_get_stats(struct schedlog *d, struct schedlog_stats *st)
{
	struct bpfutil_stats bs;
	int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < d->ncpus; i++) {
		const struct schedlog_cpu *c = &d->skel->bss->dl.cpus[i];

		st->emitted += __atomic_load_n(&c->emitted, __ATOMIC_RELAXED);
		st->dropped += __atomic_load_n(&c->dropped, __ATOMIC_RELAXED);
		st->healed += __atomic_load_n(&c->healed, __ATOMIC_RELAXED);
		st->agg_full += __atomic_load_n(&c->agg_full, __ATOMIC_RELAXED);
	}
	st->received = d->received;
	st->agg_truncated = d->agg_truncated;
	outlog_counters(d->ol, &st->outlog);
	st->anomalies = st->outlog.missed_in + st->outlog.missed_out + st->outlog.desync +
			st->outlog.late + st->outlog.bad + st->outlog.overflow;
	st->stats_enabled = d->stats_fd >= 0;
	bpfutil_stats_init(&bs, st->progs, SCHEDLOG_MAX_PROGS);
	bpfutil_stats_read(&bs, d->skel->obj);
	st->nprogs = bs.nprogs;
	st->bpf_events = bs.run_cnt;
	st->bpf_run_ns = bs.run_time_ns;
}
