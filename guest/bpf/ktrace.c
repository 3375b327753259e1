/* SPDX-License-Identifier: MIT */
/*
 * ktrace: loads the kernel helper from its embedded skeleton ELF through the generic bpf_object API, so the
 * three builds (exact, lagging or no steal clock) share one loader. Tracepoints and hypercall wrappers that
 * this kernel lacks are left unloaded (looked up in vmlinux BTF first); everything else must attach.
 */
#include <cpuid.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bpf/ktrace.h"

#define KTRACE_RING_ORDER 15 /* 32768 records (2 MiB) per monitored CPU */
#include "bpf/ktrace_loader.h"
#include "ktrace.skel.h"
#include "ktrace_nosteal.skel.h"
#include "ktrace_rqsteal.skel.h"
#include "bpf/bpfutil.h"
#include "util/log.h"

struct ktrace {
	struct bpf_object *obj;
	struct ktrace_slot *ring; /* mmapped evring: nring rings of 1 << order slots */
	size_t ring_len;
	int nring, order;
	int ring_cpu[KTRACE_MAX_CPUS]; /* CPU of each ring */
	struct bpf_link *links[KTRACE_MAX_PROGS];
	int nlinks;
	int stats_fd;
	int steal;
	int nhcalls;
	uint64_t received;
	__u64 *tail; /* in .bss, per CPU */
	void *bss; /* live .bss mapping */
	size_t bss_len;
	struct ktrace_cpu *cpus; /* inside .bss */
	__u32 *sampler_tid; /* inside .bss */
};

/*
 * Does this guest run on KVM (CPUID hypervisor leaf "KVMKVMKVM")? Without KVM the hypercall wrappers are never
 * called, and their fentry/fexit trampolines only add live kernel text patching — which, under QEMU TCG,
 * occasionally deadlocks the guest (a vCPU loops on the patch site's int3 while the patching CPU waits for
 * it in the sync IPI; seen about once in ten attaches with a busy vCPU).
 */
static bool on_kvm(void)
{
	unsigned int a, b, c, d;
	char sig[13];

	__cpuid(1, a, b, c, d);
	if (!(c & (1u << 31))) /* no hypervisor */
		return false;
	__cpuid(0x40000000, a, b, c, d);
	memcpy(sig, &b, 4);
	memcpy(sig + 4, &c, 4);
	memcpy(sig + 8, &d, 4);
	sig[12] = 0;
	return !strcmp(sig, "KVMKVMKVM");
}

/* Is sym (a per-CPU variable) resolvable by the BPF loader? Needs it in kallsyms (CONFIG_KALLSYMS_ALL). */
static int ktrace_ksym_exists(const char *sym)
{
	char line[256], name[128];
	FILE *f = fopen("/proc/kallsyms", "re");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %127s", name) == 1 && !strcmp(name, sym))
			found = 1;
	}
	fclose(f);
	return found;
}

bool ktrace_is_required(const char *sec)
{
	return !strcmp(sec, "tp_btf/sched_switch") || !strcmp(sec, "tp_btf/irq_handler_entry") ||
	       !strcmp(sec, "tp_btf/irq_handler_exit") || !strcmp(sec, "tp_btf/softirq_entry") ||
	       !strcmp(sec, "tp_btf/softirq_exit");
}

static bool ktrace_is_hcall(const char *sec)
{
	return !strncmp(sec, "fentry/", 7) || !strncmp(sec, "fexit/", 6);
}

static struct bpf_map *ktrace_find_map(struct bpf_object *obj, const char *suffix)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, obj)
	{
		const char *n = bpf_map__name(m);
		size_t ln = strlen(n), ls = strlen(suffix);

		if (ln >= ls && !strcmp(n + ln - ls, suffix))
			return m;
	}
	return NULL;
}

/* The settings in .rodata: the monitored CPUs and their rings; the ring map sized to match. */
static int ktrace_configure(struct ktrace *kh, const struct ktrace_opts *o, const char **why)
{
	struct bpf_map *rodata, *rbmap;
	struct ktrace_config *cfg;
	size_t sz;
	int i;

	rodata = ktrace_find_map(kh->obj, ".rodata");
	if (!rodata) {
		*why = "BPF object has no .rodata";
		return -EINVAL;
	}
	cfg = (struct ktrace_config *)bpf_map__initial_value(rodata, &sz);
	if (!cfg || sz < sizeof(*cfg)) {
		*why = "BPF .rodata too small";
		return -EINVAL;
	}
	kh->nring = 0;
	kh->order = KTRACE_RING_ORDER;
	cfg->ring_order = (__u32)kh->order;
	for (i = 0; i < o->ncpus; i++) {
		if (o->cpus[i] < 0 || o->cpus[i] >= KTRACE_MAX_CPUS) {
			*why = "CPU number beyond the kernel helper's limit (256)";
			return -ERANGE;
		}
		if (cfg->monitored[o->cpus[i]])
			continue;
		cfg->monitored[o->cpus[i]] = 1;
		cfg->ring_slot[o->cpus[i]] = (__u32)kh->nring;
		kh->ring_cpu[kh->nring++] = o->cpus[i];
	}
	rbmap = bpf_object__find_map_by_name(kh->obj, "evring");
	if (!rbmap || !kh->nring ||
	    bpf_map__set_max_entries(rbmap, (__u32)kh->nring << kh->order)) {
		*why = "cannot size the event rings";
		return -EINVAL;
	}
	return 0;
}

/* Hypercall wrappers unless no_hcall; what this kernel lacks is left unloaded (a required one: -ENOTSUP). */
static int ktrace_choose(struct ktrace *kh, int no_hcall, const struct btf *vmlinux,
			 const char **why)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, kh->obj)
	{
		if (no_hcall && ktrace_is_hcall(bpf_program__section_name(prog)))
			bpf_program__set_autoload(prog, false);
	}
	if (bpfutil_drop_missing(kh->obj, vmlinux, ktrace_is_required, NULL)) {
		*why = "kernel lacks a required tracepoint";
		return -ENOTSUP;
	}
	kh->nhcalls = 0;
	bpf_object__for_each_program(prog, kh->obj)
	{
		if (bpf_program__autoload(prog) &&
		    !strncmp(bpf_program__section_name(prog), "fentry/", 7))
			kh->nhcalls++;
	}
	return 0;
}

/* Load, then attach every program chosen; all of them must attach. */
static int ktrace_load_attach(struct ktrace *kh, const char **why)
{
	struct bpf_program *prog;
	int err;

	err = bpf_object__load(kh->obj);
	if (err) {
		*why = err == -EPERM ? BPFUTIL_WHY_EPERM : "the kernel refused the eBPF programs";
		return err;
	}
	bpf_object__for_each_program(prog, kh->obj)
	{
		struct bpf_link *l;

		if (!bpf_program__autoload(prog))
			continue;
		if (kh->nlinks >= KTRACE_MAX_PROGS) {
			*why = "too many programs";
			return -E2BIG;
		}
		l = bpf_program__attach(prog);
		if (!l) {
			err = -errno;
			*why = "cannot attach an eBPF program";
			return err;
		}
		kh->links[kh->nlinks++] = l;
	}
	return 0;
}

/* Map the live .bss (exactly one struct ktrace_shared; the generic API does not) and the event rings. */
static int ktrace_map_memory(struct ktrace *kh, const char **why)
{
	struct bpf_map *bss = ktrace_find_map(kh->obj, ".bss");
	struct bpf_map *rbmap = bpf_object__find_map_by_name(kh->obj, "evring");
	struct ktrace_shared *sh;

	if (!bss || !rbmap) {
		*why = "BPF object lacks .bss or the ring buffer";
		return -EINVAL;
	}
	if (bpf_map__value_size(bss) < sizeof(*sh)) {
		*why = "BPF .bss too small";
		return -EINVAL;
	}
	kh->bss_len = (bpf_map__value_size(bss) + 4095) & ~(size_t)4095;
	sh = mmap(NULL, kh->bss_len, PROT_READ | PROT_WRITE, MAP_SHARED, bpf_map__fd(bss), 0);
	if (sh == MAP_FAILED) {
		*why = "cannot map the BPF .bss";
		return -errno;
	}
	kh->bss = sh;
	kh->sampler_tid = sh->sampler_tid;
	kh->cpus = sh->cpus;
	kh->tail = sh->tail;
	kh->ring_len = ((size_t)kh->nring << kh->order) * sizeof(struct ktrace_slot);
	kh->ring_len = (kh->ring_len + 4095) & ~(size_t)4095;
	kh->ring = mmap(NULL, kh->ring_len, PROT_READ, MAP_SHARED, bpf_map__fd(rbmap), 0);
	if (kh->ring == MAP_FAILED) {
		kh->ring = NULL;
		*why = "cannot map the event rings";
		return -errno;
	}
	return 0;
}

/* One variant (object elf, hypercalls or not): open -> configure -> choose -> load, attach -> map. */
static int ktrace_try_open(struct ktrace *kh, const void *elf, size_t elf_sz,
			   const struct ktrace_opts *o, int no_hcall, const struct btf *vmlinux,
			   const char **why)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "vnoise_kh");
	int err;

	kh->obj = bpf_object__open_mem(elf, elf_sz, &oo);
	if (!kh->obj) {
		*why = "cannot open the BPF object";
		return -errno;
	}
	err = ktrace_configure(kh, o, why);
	if (!err)
		err = ktrace_choose(kh, no_hcall, vmlinux, why);
	if (!err)
		err = ktrace_load_attach(kh, why);
	if (!err)
		err = ktrace_map_memory(kh, why);
	return err;
}

static void ktrace_teardown(struct ktrace *kh)
{
	int i;

	if (kh->ring)
		munmap(kh->ring, kh->ring_len);
	kh->ring = NULL;
	if (kh->bss)
		munmap(kh->bss, kh->bss_len);
	kh->bss = NULL;
	for (i = 0; i < kh->nlinks; i++)
		bpf_link__destroy(kh->links[i]);
	kh->nlinks = 0;
	bpf_object__close(kh->obj);
	kh->obj = NULL;
}

/* The embedded object of a steal mode: 1 exact steal clock, 2 lagging, 0 none. */
static const void *ktrace_elf(int steal, size_t *sz)
{
	if (steal == 1)
		return ktrace_bpf__elf_bytes(sz);
	if (steal == 2)
		return ktrace_rqsteal_bpf__elf_bytes(sz);
	return ktrace_nosteal_bpf__elf_bytes(sz);
}

/* Is err final (no other variant can do better)? */
static bool ktrace_final(int err)
{
	return !err || err == -ERANGE || err == -ENOTSUP;
}

/*
 * Open the most capable variant this kernel takes: exact steal clock, lagging steal clock, none; each with
 * and without hypercalls. Sets kh->steal. On failure kh holds nothing.
 */
static int ktrace_open_best(struct ktrace *kh, const struct ktrace_opts *o,
			    const struct btf *vmlinux, const char **why)
{
	const char *env = getenv("VNOISE_KH_STEAL"); /* benchmarks: force a variant (0, 1 or 2) */
	int err = -ENOENT, nohc, first;
	size_t sz;
	const void *elf;

	first = ktrace_ksym_exists("steal_time") ? 1 : 2;
	if (env && env[0] >= '0' && env[0] <= '2' && !env[1])
		first = env[0] - '0';
	for (kh->steal = first; kh->steal >= 0; kh->steal--) {
		if (kh->steal == 1 && first == 2)
			continue;
		elf = ktrace_elf(kh->steal, &sz);
		for (nohc = o->no_hcall || !on_kvm(); nohc <= 1; nohc++) {
			err = ktrace_try_open(kh, elf, sz, o, nohc, vmlinux, why);
			if (ktrace_final(err))
				break;
			log_debug("kernel helper (steal mode %d, hypercalls %s) failed: %s",
				  kh->steal, nohc ? "off" : "on", *why);
			ktrace_teardown(kh);
			if (err == -EPERM && geteuid() != 0)
				return err;
		}
		if (ktrace_final(err))
			break;
	}
	if (err)
		ktrace_teardown(kh);
	return err;
}

int ktrace_open(struct ktrace **out, const struct ktrace_opts *o, const char **why)
{
	struct ktrace *kh;
	struct btf *vmlinux;
	int err;

	*out = NULL;
	*why = "";
	bpfutil_set_print();
	kh = calloc(1, sizeof(*kh));
	if (!kh)
		return -ENOMEM;
	kh->stats_fd = -1;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		*why = "no kernel BTF (/sys/kernel/btf/vmlinux)";
		free(kh);
		return -ENOENT;
	}
	/* before the attach: see bpfutil_enable_stats() */
	kh->stats_fd = bpfutil_enable_stats();
	err = ktrace_open_best(kh, o, vmlinux, why);
	btf__free(vmlinux);
	if (err) {
		if (kh->stats_fd >= 0)
			close(kh->stats_fd);
		free(kh);
		return err;
	}
	*out = kh;
	return 0;
}

void ktrace_set_sampler(struct ktrace *kh, int cpu, int tid)
{
	if (kh && cpu >= 0 && cpu < KTRACE_MAX_CPUS)
		__atomic_store_n(&kh->sampler_tid[cpu], (__u32)tid, __ATOMIC_RELEASE);
}

int ktrace_drain(struct ktrace *kh, ktrace_event_fn fn, void *ctx)
{
	uint64_t size = 1ULL << kh->order, n = 0;
	int k;

	for (k = 0; k < kh->nring; k++) {
		int cpu = kh->ring_cpu[k];
		const struct ktrace_slot *ring = kh->ring + ((size_t)k << kh->order);
		uint64_t t = kh->tail[cpu], budget = size;

		while (budget--) {
			const struct ktrace_slot *sl = &ring[t & (size - 1)];
			uint64_t seq = __atomic_load_n(&sl->seq, __ATOMIC_ACQUIRE);
			struct vn_event e;

			if (seq != t + 1)
				break; /* not written yet: the next drain gets it */
			e = sl->e;
			/* Trust nothing beyond the record's own CPU: the slot says where it came from. */
			e.cpu = (__u16)cpu;
			fn(ctx, &e);
			t++;
			n++;
		}
		__atomic_store_n(&kh->tail[cpu], t, __ATOMIC_RELEASE);
	}
	kh->received += n;
	return (int)(n > INT32_MAX ? INT32_MAX : n);
}

int ktrace_get_stats(struct ktrace *kh, struct ktrace_stats *st)
{
	struct bpfutil_stats bs;
	int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < KTRACE_MAX_CPUS; i++) {
		st->events += __atomic_load_n(&kh->cpus[i].events, __ATOMIC_RELAXED);
		st->dropped += __atomic_load_n(&kh->cpus[i].dropped, __ATOMIC_RELAXED);
		st->desync += __atomic_load_n(&kh->cpus[i].desync, __ATOMIC_RELAXED);
	}
	st->received = kh->received;
	st->stats_enabled = kh->stats_fd >= 0;
	bpfutil_stats_init(&bs, st->progs, KTRACE_MAX_PROGS);
	bpfutil_stats_read(&bs, kh->obj);
	st->nprogs = bs.nprogs;
	st->run_cnt = bs.run_cnt;
	st->run_time_ns = bs.run_time_ns;
	return 0;
}

uint64_t ktrace_dropped(const struct ktrace *kh)
{
	uint64_t d = 0;

	for (int i = 0; i < KTRACE_MAX_CPUS; i++)
		d += __atomic_load_n(&kh->cpus[i].dropped, __ATOMIC_RELAXED);
	return d;
}

const char *ktrace_steal_source(const struct ktrace *kh)
{
	return kh->steal == 1 ? "kvm-steal-clock" : kh->steal == 2 ? "rq-steal-clock" : "none";
}

int ktrace_nhcalls(const struct ktrace *kh)
{
	return kh->nhcalls;
}

void ktrace_close(struct ktrace *kh)
{
	if (!kh)
		return;
	ktrace_teardown(kh);
	if (kh->stats_fd >= 0)
		close(kh->stats_fd);
	free(kh);
}
