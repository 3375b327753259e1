/* SPDX-License-Identifier: MIT */
/*
 * hostlist: text and JSON output of `vnoise-host list` (see hostlist.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "cli/exitcode.h"
#include "engine/live.h"
#include "views/hostlist.h"
#include "util/json.h"
#include "util/log.h"
#include "util/termsafe.h"
#include "util/version.h"

void hostlist_text(FILE *f, const struct vmap_dom *const *doms, int n)
{
	for (int i = 0; i < n; i++) {
		const struct vmap_dom *m = doms[i];
		char nm[TERMSAFE_LEN(sizeof(m->name))];
		uint32_t v;

		fprintf(f, "%s uuid=%s virt=%s qemu_pid=%d emulator_tid=%u tids=%s shmem=%s",
			termsafe(nm, sizeof(nm), m->name, sizeof(m->name)), m->uuid, m->virt,
			(int)m->qemu_pid, m->emulator_tid, m->tid_source ? m->tid_source : "-",
			m->shmem[0] ? m->shmem : "-");
		if (m->shmem_size)
			fprintf(f, " shmem_size=%" PRIu64, m->shmem_size);
		fprintf(f, " taps=%s\n", m->taps[0] ? m->taps : "-");
		for (v = 0; v < m->nvcpus; v++)
			fprintf(f, "  vcpu %u tid %u\n", v, m->tids[v]);
		for (v = 0; v < m->niothreads; v++)
			fprintf(f, "  iothread tid %u\n", m->iothreads[v]);
	}
}

/* The comma-separated tap names as a JSON array of strings. */
static void json_taps(struct json_writer *w, const char *taps)
{
	const char *p = taps;

	json_key(w, "taps");
	json_arr_begin(w);
	while (*p) {
		size_t len = strcspn(p, ",");

		if (len)
			json_strn(w, p, len);
		p += len;
		if (*p == ',')
			p++;
	}
	json_arr_end(w);
}

static void json_domain(struct json_writer *w, const struct vmap_dom *m)
{
	uint32_t v;

	json_obj_begin(w);
	json_kv_str(w, "name", m->name);
	json_kv_str(w, "uuid", m->uuid);
	json_kv_str(w, "virt", m->virt);
	json_kv_i64(w, "qemu_pid", m->qemu_pid);
	json_kv_u64(w, "emulator_tid", m->emulator_tid);
	json_key(w, "tid_source");
	if (m->tid_source)
		json_str(w, m->tid_source);
	else
		json_null(w);
	json_key(w, "vcpus");
	json_arr_begin(w);
	for (v = 0; v < m->nvcpus && v < VN_HOST_MAX_VCPUS; v++) {
		json_obj_begin(w);
		json_kv_u64(w, "vcpu", v);
		json_kv_u64(w, "tid", m->tids[v]);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_key(w, "iothreads");
	json_arr_begin(w);
	for (v = 0; v < m->niothreads && v < VMAP_MAX_IOTHREADS; v++)
		json_u64(w, m->iothreads[v]);
	json_arr_end(w);
	json_key(w, "shmem");
	if (m->shmem[0])
		json_strn(w, m->shmem, strnlen(m->shmem, sizeof(m->shmem)));
	else
		json_null(w);
	json_kv_u64(w, "shmem_size", m->shmem_size);
	json_taps(w, m->taps);
	json_obj_end(w);
}

int hostlist_json(FILE *f, const char *uri, const struct vmap_dom *const *doms, int n)
{
	struct json_writer w;

	json_init(&w, f, 0);
	json_obj_begin(&w);
	json_kv_str(&w, "schema", "vnoise.list/1");
	json_kv_str(&w, "version", version_string());
	json_kv_str(&w, "uri", uri);
	json_key(&w, "domains");
	json_arr_begin(&w);
	for (int i = 0; i < n; i++)
		json_domain(&w, doms[i]);
	json_arr_end(&w);
	json_obj_end(&w);
	return json_finish(&w);
}

/* ---- `list` as a sink of the live engine ---- */

struct listsink {
	const char *uri;
	bool json;
};

static int list_sink_start(void *ctx, const struct vmap_dom *const *doms, int n)
{
	struct listsink *l = ctx;

	if (!l->json) {
		hostlist_text(stdout, doms, n);
		return fflush(stdout) ? EXIT_FAIL : EXIT_OK;
	}
	if (hostlist_json(stdout, l->uri, doms, n)) {
		log_err("cannot write the list");
		return EXIT_FAIL;
	}
	return EXIT_OK;
}

static const struct live_sink_ops list_sink_ops = {
	.name = "list",
	.start = list_sink_start,
	.close = free,
};

int hostlist_sink_add(struct live *lv, const struct host_params *p)
{
	struct listsink *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->uri = p->uri ? p->uri : "qemu:///system";
	l->json = p->json;
	return live_add_sink(lv, &list_sink_ops, l);
}
