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

static int ktrace_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* Quiet by default: the loader reports one clear line itself. -v shows warnings, -vv everything. */
	if (log_verbosity() < (level == LIBBPF_DEBUG ? 2 : 1))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

/* Does this kernel have what prog attaches to? */
int ktrace_has_target(const struct btf *vmlinux, const char *sec)
{
	char name[128];
	const char *target;

	if (!vmlinux)
		return 1;
	if (!strncmp(sec, "tp_btf/", 7)) {
		snprintf(name, sizeof(name), "btf_trace_%s", sec + 7);
		return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
	}
	target = strchr(sec, '/');
	if (!target)
		return 1;
	return btf__find_by_name_kind(vmlinux, target + 1, BTF_KIND_FUNC) > 0;
}

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

static int ktrace_is_optional(const char *sec)
{
	/* sched_switch and the irq/softirq pairs are the core; vectors, NMI and hypercalls are optional. */
	return strcmp(sec, "tp_btf/sched_switch") && strcmp(sec, "tp_btf/irq_handler_entry") &&
	       strcmp(sec, "tp_btf/irq_handler_exit") && strcmp(sec, "tp_btf/softirq_entry") &&
	       strcmp(sec, "tp_btf/softirq_exit");
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

static int ktrace_try_open(struct ktrace *kh, const void *elf, size_t elf_sz,
			   const struct ktrace_opts *o, int no_hcall, const struct btf *vmlinux,
			   const char **why)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .object_name = "vnoise_kh");
	struct bpf_program *prog;
	struct bpf_map *rodata, *bss, *rbmap;
	struct ktrace_config *cfg;
	struct ktrace_shared *sh;
	size_t sz;
	int err, i;

	kh->obj = bpf_object__open_mem(elf, elf_sz, &oo);
	if (!kh->obj) {
		*why = "cannot open the BPF object";
		return -errno;
	}
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
	kh->nhcalls = 0;
	bpf_object__for_each_program(prog, kh->obj)
	{
		const char *sec = bpf_program__section_name(prog);
		int want = ktrace_has_target(vmlinux, sec);

		if (!strncmp(sec, "fentry/", 7) || !strncmp(sec, "fexit/", 6)) {
			if (no_hcall)
				want = 0;
			if (want && !strncmp(sec, "fentry/", 7))
				kh->nhcalls++;
		}
		if (!want) {
			if (!ktrace_is_optional(sec)) {
				*why = "kernel lacks a required tracepoint";
				return -ENOTSUP;
			}
			bpf_program__set_autoload(prog, false);
		}
	}
	err = bpf_object__load(kh->obj);
	if (err) {
		*why = err == -EPERM
			   ? "not permitted to load eBPF (need root or CAP_BPF+CAP_PERFMON)"
			   : "the kernel refused the eBPF programs";
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
	bss = ktrace_find_map(kh->obj, ".bss");
	if (!bss) {
		*why = "BPF object lacks .bss or the ring buffer";
		return -EINVAL;
	}
	/* The .bss holds exactly one struct ktrace_shared; map the live kernel copy (the generic API does not). */
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

int ktrace_open(struct ktrace **out, const struct ktrace_opts *o, const char **why)
{
	struct ktrace *kh;
	struct btf *vmlinux = NULL;
	const void *elf;
	size_t sz;
	int err = -ENOENT, nohc = 0, first;
	const char *env;

	*out = NULL;
	*why = "";
	libbpf_set_print(ktrace_libbpf_print);
	kh = calloc(1, sizeof(*kh));
	if (!kh)
		return -ENOMEM;
	kh->stats_fd = -1;
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		err = -ENOENT;
		*why = "no kernel BTF (/sys/kernel/btf/vmlinux)";
		goto out;
	}
	/* Most capable first: exact steal clock, lagging steal clock, none; each with and without hypercalls. */
	first = ktrace_ksym_exists("steal_time") ? 1 : 2;
	env = getenv("VNOISE_KH_STEAL"); /* benchmarks: force a steal-clock variant (0, 1 or 2) */
	if (env && env[0] >= '0' && env[0] <= '2' && !env[1])
		first = env[0] - '0';
	for (kh->steal = first; kh->steal >= 0; kh->steal--) {
		if (kh->steal == 1 && first == 2)
			continue;
		if (kh->steal == 1)
			elf = ktrace_bpf__elf_bytes(&sz);
		else if (kh->steal == 2)
			elf = ktrace_rqsteal_bpf__elf_bytes(&sz);
		else
			elf = ktrace_nosteal_bpf__elf_bytes(&sz);
		for (nohc = o->no_hcall || !on_kvm(); nohc <= 1; nohc++) {
			err = ktrace_try_open(kh, elf, sz, o, nohc, vmlinux, why);
			if (!err || err == -ERANGE || err == -ENOTSUP)
				break;
			log_debug("kernel helper (steal mode %d, hypercalls %s) failed: %s",
				  kh->steal, nohc ? "off" : "on", *why);
			ktrace_teardown(kh);
			if (err == -EPERM && geteuid() != 0)
				goto out;
		}
		if (!err || err == -ERANGE || err == -ENOTSUP)
			break;
	}
	if (err)
		goto out;
	if (nohc)
		kh->nhcalls = 0;
	kh->stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
	if (kh->stats_fd < 0)
		log_debug("BPF_ENABLE_STATS failed: %s", strerror(errno));
out:
	btf__free(vmlinux);
	if (err) {
		ktrace_teardown(kh);
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
	struct bpf_program *prog;
	int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < KTRACE_MAX_CPUS; i++) {
		st->events += __atomic_load_n(&kh->cpus[i].events, __ATOMIC_RELAXED);
		st->dropped += __atomic_load_n(&kh->cpus[i].dropped, __ATOMIC_RELAXED);
		st->desync += __atomic_load_n(&kh->cpus[i].desync, __ATOMIC_RELAXED);
	}
	st->received = kh->received;
	st->stats_enabled = kh->stats_fd >= 0;
	bpf_object__for_each_program(prog, kh->obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		struct ktrace_prog_stat *ps;

		if (!bpf_program__autoload(prog) || st->nprogs >= KTRACE_MAX_PROGS)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		ps = &st->progs[st->nprogs++];
		snprintf(ps->name, sizeof(ps->name), "%s", bpf_program__name(prog));
		ps->run_cnt = info.run_cnt;
		ps->run_time_ns = info.run_time_ns;
		st->run_cnt += info.run_cnt;
		st->run_time_ns += info.run_time_ns;
	}
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
