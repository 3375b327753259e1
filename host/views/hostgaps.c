/* SPDX-License-Identifier: MIT */
/*
 * hostgaps: report --gaps of a host record file (see hostgaps.h). The records are copied out of the chunks
 * (a payload is not aligned for the struct), checked, sorted at the end and written.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "attrib/gapline.h"
#include "host.h"
#include "views/hostgaps.h"

struct hostgaps {
	struct gapline *g;
	uint32_t *dom; /* per line */
	size_t n, cap;
	uint64_t bad;
	uint64_t doms; /* bit per domain index that has gaps */
};

_Static_assert(VN_HOST_MAX_DOMAINS <= 64, "a bit per domain");

struct hostgaps *hostgaps_new(void)
{
	return calloc(1, sizeof(struct hostgaps));
}

void hostgaps_free(struct hostgaps *hg)
{
	if (!hg)
		return;
	free(hg->g);
	free(hg->dom);
	free(hg);
}

static int grow(struct hostgaps *hg)
{
	size_t nc = hg->cap ? 2 * hg->cap : 1024;
	void *g, *d;

	g = realloc(hg->g, nc * sizeof(*hg->g));
	if (!g)
		return -ENOMEM;
	hg->g = g;
	d = realloc(hg->dom, nc * sizeof(*hg->dom));
	if (!d)
		return -ENOMEM;
	hg->dom = d;
	hg->cap = nc;
	return 0;
}

/* One record into a line; false when it cannot be one. */
static bool to_line(const struct vn_host_mgap *m, struct gapline *l)
{
	int k;

	if (m->vcpu >= VN_HOST_MAX_VCPUS || m->dom >= VN_HOST_MAX_DOMAINS)
		return false;
	memset(l, 0, sizeof(*l));
	l->cpu = m->vcpu;
	l->start_ns = m->start_ns;
	l->duration_ns = m->duration_ns;
	for (k = 0; k < VN_CLASS_MAX; k++)
		l->guest_ns[k] = m->guest_ns[k];
	for (k = 0; k < VN_HCLASS_MAX; k++)
		l->hyp_ns[k] = m->host_ns[k];
	l->hyp_ns[VN_HCLASS_HW] = m->residual_ns;
	return gapline_sum(l) == l->duration_ns;
}

int hostgaps_chunk(struct hostgaps *hg, const void *payload, size_t len)
{
	struct vn_host_mgap m;
	size_t off;

	if (len % sizeof(m))
		return -EINVAL;
	for (off = 0; off < len; off += sizeof(m)) {
		memcpy(&m, (const char *)payload + off, sizeof(m));
		if (hg->n == hg->cap && grow(hg))
			return -ENOMEM;
		if (!to_line(&m, &hg->g[hg->n])) {
			hg->bad++;
			continue;
		}
		hg->dom[hg->n++] = m.dom;
		hg->doms |= 1ull << m.dom;
	}
	return 0;
}

uint64_t hostgaps_bad(const struct hostgaps *hg)
{
	return hg->bad;
}

uint32_t hostgaps_domains(const struct hostgaps *hg)
{
	return (uint32_t)__builtin_popcountll(hg->doms);
}

static int by_time(const void *a, const void *b)
{
	const struct gapline *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	return x->cpu < y->cpu ? -1 : x->cpu > y->cpu;
}

long hostgaps_write(struct hostgaps *hg, FILE *f)
{
	size_t i, k = 0;
	uint32_t first;

	if (!hg->doms)
		return 0;
	first = (uint32_t)__builtin_ctzll(hg->doms);
	for (i = 0; i < hg->n; i++)
		if (hg->dom[i] == first)
			hg->g[k++] = hg->g[i];
	qsort(hg->g, k, sizeof(*hg->g), by_time);
	for (i = 0; i < k; i++) {
		int err = gapline_write(f, &hg->g[i]);

		if (err)
			return err;
	}
	return (long)k;
}
