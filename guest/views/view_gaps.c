/* SPDX-License-Identifier: MIT */
/*
 * view_gaps: report --gaps (see view_gaps.h). The gaps and the splits are two arrays, sorted at the end and
 * joined on (cpu, start, end); a split gap's line is the split (shared/attrib/gapsplit: what stays in each
 * guest class, the hypervisor parts, hw), which adds up to the gap.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/gapline.h"
#include "util/log.h"
#include "views/view_gaps.h"

struct vg_gap {
	uint32_t cpu;
	uint64_t start_ns, end_ns;
	uint64_t ns[VN_CLASS_MAX]; /* guest classes (a split: what stays in them) */
	uint64_t hyp[VN_HCLASS_PARTS]; /* a split: the hypervisor parts and hw */
};

struct vg_list {
	struct vg_gap *g;
	size_t n, cap;
};

struct view_gaps {
	struct vg_list gaps, splits;
};

struct view_gaps *view_gaps_new(void)
{
	return calloc(1, sizeof(struct view_gaps));
}

void view_gaps_free(struct view_gaps *vg)
{
	if (!vg)
		return;
	free(vg->gaps.g);
	free(vg->splits.g);
	free(vg);
}

static int list_add(struct vg_list *l, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		    const uint64_t ns[VN_CLASS_MAX], const uint64_t *hyp)
{
	struct vg_gap *x;

	if (l->n == l->cap) {
		size_t nc = l->cap ? 2 * l->cap : 1024;
		void *p = realloc(l->g, nc * sizeof(*l->g));

		if (!p)
			return -ENOMEM;
		l->g = p;
		l->cap = nc;
	}
	x = &l->g[l->n++];
	memset(x, 0, sizeof(*x));
	x->cpu = cpu;
	x->start_ns = start_ns;
	x->end_ns = end_ns;
	memcpy(x->ns, ns, sizeof(x->ns));
	if (hyp)
		memcpy(x->hyp, hyp, sizeof(x->hyp));
	return 0;
}

int view_gaps_gap(struct view_gaps *vg, int cpu, uint64_t start_ns, uint64_t end_ns,
		  const uint64_t class_ns[VN_CLASS_MAX])
{
	if (cpu < 0 || end_ns <= start_ns)
		return 0;
	return list_add(&vg->gaps, (uint32_t)cpu, start_ns, end_ns, class_ns, NULL);
}

int view_gaps_split(struct view_gaps *vg, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
		    const struct gapsplit_res *res)
{
	return list_add(&vg->splits, cpu, start_ns, end_ns, res->guest_ns, res->hyp_ns);
}

/* By CPU, then start, then end: the join's order. */
static int by_cpu(const void *a, const void *b)
{
	const struct vg_gap *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

/* By start, then CPU: the output's order. */
static int by_time(const void *a, const void *b)
{
	const struct gapline *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

/* Gap g with split s (NULL: none) as a line into out. 0, or -EINVAL when s gives a class more than the gap
 * held. */
static int compose(const struct vg_gap *g, const struct vg_gap *s, struct gapline *out)
{
	int k;

	memset(out, 0, sizeof(*out));
	out->cpu = g->cpu;
	out->start_ns = g->start_ns;
	out->duration_ns = g->end_ns - g->start_ns;
	memcpy(out->guest_ns, g->ns, sizeof(out->guest_ns));
	if (!s)
		return 0;
	for (k = 0; k < VN_CLASS_MAX; k++)
		if (s->ns[k] > g->ns[k])
			return -EINVAL;
	memcpy(out->guest_ns, s->ns, sizeof(out->guest_ns));
	memcpy(out->hyp_ns, s->hyp, sizeof(out->hyp_ns));
	return 0;
}

long view_gaps_write(struct view_gaps *vg, FILE *f)
{
	struct gapline *lines;
	size_t i, j = 0, n = vg->gaps.n;
	long rc = 0;

	if (!n)
		return 0;
	lines = calloc(n, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	qsort(vg->gaps.g, n, sizeof(*vg->gaps.g), by_cpu);
	if (vg->splits.n)
		qsort(vg->splits.g, vg->splits.n, sizeof(*vg->splits.g), by_cpu);
	for (i = 0; i < n && !rc; i++) {
		const struct vg_gap *g = &vg->gaps.g[i], *s = NULL;

		while (j < vg->splits.n && by_cpu(&vg->splits.g[j], g) < 0)
			j++;
		if (j < vg->splits.n && !by_cpu(&vg->splits.g[j], g))
			s = &vg->splits.g[j++];
		if (compose(g, s, &lines[i])) {
			log_err("CPU %u: the split of the gap at %llu ns gives a class more than "
				"the gap held",
				g->cpu, (unsigned long long)g->start_ns);
			rc = -EINVAL;
		}
	}
	qsort(lines, n, sizeof(*lines), by_time);
	for (i = 0; i < n && !rc; i++) {
		int err = gapline_write(f, &lines[i]);

		if (err == -EINVAL)
			log_err(
			    "CPU %u: the gap at %llu ns: its classes do not add up to its %llu ns",
			    lines[i].cpu, (unsigned long long)lines[i].start_ns,
			    (unsigned long long)lines[i].duration_ns);
		rc = err;
	}
	free(lines);
	return rc ? rc : (long)n;
}
