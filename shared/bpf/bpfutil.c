/* SPDX-License-Identifier: MIT */
/* bpfutil: the loaders' common libbpf plumbing (contract in bpfutil.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "bpf/bpfutil.h"
#include "util/log.h"

bool bpfutil_print_wanted(enum libbpf_print_level level, int v)
{
	return v >= (level == LIBBPF_DEBUG ? 2 : 1);
}

static int bpfutil_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!bpfutil_print_wanted(level, log_verbosity()))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void bpfutil_set_print(void)
{
	libbpf_set_print(bpfutil_print);
}

bool bpfutil_has_target(const struct btf *vmlinux, const char *sec)
{
	char name[128];

	if (!vmlinux)
		return true;
	if (!strncmp(sec, "tp_btf/", 7)) {
		snprintf(name, sizeof(name), "btf_trace_%s", sec + 7);
		return btf__find_by_name_kind(vmlinux, name, BTF_KIND_TYPEDEF) > 0;
	}
	if (!strncmp(sec, "fentry/", 7))
		return btf__find_by_name_kind(vmlinux, sec + 7, BTF_KIND_FUNC) > 0;
	if (!strncmp(sec, "fexit/", 6))
		return btf__find_by_name_kind(vmlinux, sec + 6, BTF_KIND_FUNC) > 0;
	return true;
}

int bpfutil_drop_missing(struct bpf_object *obj, const struct btf *vmlinux,
			 bool (*required)(const char *sec), const char **sec)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		const char *s = bpf_program__section_name(prog);

		if (!bpf_program__autoload(prog) || bpfutil_has_target(vmlinux, s))
			continue;
		if (required(s)) {
			if (sec)
				*sec = s;
			return -ENOTSUP;
		}
		log_debug("%s not in this kernel; skipped", s);
		bpf_program__set_autoload(prog, false);
	}
	return 0;
}

int bpfutil_enable_stats(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (fd < 0) {
		log_debug("BPF_ENABLE_STATS failed: %s", strerror(errno));
		return -1;
	}
	return fd;
}

void bpfutil_stats_init(struct bpfutil_stats *st, struct bpfutil_prog_stat *progs, int max)
{
	memset(st, 0, sizeof(*st));
	st->progs = progs;
	st->max = max;
}

bool bpfutil_stats_add(struct bpfutil_stats *st, const char *name, uint64_t run_cnt,
		       uint64_t run_time_ns)
{
	struct bpfutil_prog_stat *ps;

	if (st->nprogs >= st->max)
		return false;
	ps = &st->progs[st->nprogs++];
	snprintf(ps->name, sizeof(ps->name), "%s", name);
	ps->run_cnt = run_cnt;
	ps->run_time_ns = run_time_ns;
	st->run_cnt += run_cnt;
	st->run_time_ns += run_time_ns;
	return true;
}

void bpfutil_stats_read(struct bpfutil_stats *st, const struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		struct bpf_prog_info info;
		__u32 len = sizeof(info);

		if (!bpf_program__autoload(prog))
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		if (!bpfutil_stats_add(st, bpf_program__name(prog), info.run_cnt, info.run_time_ns))
			return;
	}
}
