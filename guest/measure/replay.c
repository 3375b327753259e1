/* SPDX-License-Identifier: MIT */
/*
 * report: rebuilds the views of a record file (vnoise-guest record -o FILE) by feeding its samples and
 * events through the same merge engine. A damaged or truncated file is reported as far as it could be read;
 * what could not be read is said on stderr and the exit code is EXIT_DAMAGED.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/log.h"
#include "measure/measure.h"
#include "util/parse.h"
#include "format/recfile.h"
#include "record.h"
#include "views/view.h"

#define REPORT_MAX_IRQ 4096

struct report {
	struct view v;
	char *irq[REPORT_MAX_IRQ];
	char helper[16], steal[32];
	int have_meta;
	uint64_t bad_records;
};

static const char *report_irq_name(void *ctx, uint32_t irq)
{
	struct report *r = ctx;

	return irq < REPORT_MAX_IRQ ? r->irq[irq] : NULL;
}

static uint64_t kv_u64(const void *payload, size_t len, const char *key)
{
	const char *val;
	size_t vl;
	char buf[32];
	uint64_t v = 0;

	if (!recfile_kv_get(payload, len, key, &val, &vl) || vl >= sizeof(buf))
		return 0;
	memcpy(buf, val, vl);
	buf[vl] = 0;
	if (parse_u64(buf, &v))
		return 0;
	return v;
}

static void kv_str(const void *payload, size_t len, const char *key, char *out, size_t outlen)
{
	const char *val;
	size_t vl;

	if (!recfile_kv_get(payload, len, key, &val, &vl))
		return;
	if (vl >= outlen)
		vl = outlen - 1;
	memcpy(out, val, vl);
	out[vl] = 0;
}

static void read_meta(struct report *r, const struct recfile_chunk *c)
{
	const char *pos = c->payload, *end = pos + c->len;
	struct recfile_kv kv;
	char cpus[4096] = "";

	r->have_meta = 1;
	kv_str(c->payload, c->len, "kernel_helper", r->helper, sizeof(r->helper));
	kv_str(c->payload, c->len, "steal_source", r->steal, sizeof(r->steal));
	r->v.nhcalls = (int)kv_u64(c->payload, c->len, "hypercall_wrappers");
	r->v.threshold_ns = kv_u64(c->payload, c->len, "threshold_ns");
	r->v.period_ns = kv_u64(c->payload, c->len, "period_ns");
	r->v.runtime_ns = kv_u64(c->payload, c->len, "runtime_ns");
	kv_str(c->payload, c->len, "cpus", cpus, sizeof(cpus));
	if (parse_cpulist(cpus, r->v.cpus, PARAMS_MAX_CPUS, PARAMS_MAX_CPUS, &r->v.ncpus))
		r->v.ncpus = 0;
	while (recfile_kv_next(&pos, end, &kv) > 0) {
		char num[16];
		uint64_t irq;

		if (kv.key_len < 5 || kv.key_len > 14 || strncmp(kv.key, "irq.", 4))
			continue;
		memcpy(num, kv.key + 4, kv.key_len - 4);
		num[kv.key_len - 4] = 0;
		if (parse_u64(num, &irq) || irq >= REPORT_MAX_IRQ || r->irq[irq])
			continue;
		r->irq[irq] = strndup(kv.val, kv.val_len < 64 ? kv.val_len : 64);
	}
}

static void read_stats(struct report *r, const struct recfile_chunk *c)
{
	const void *p = c->payload;
	size_t n = c->len;
	int i, k;

	r->v.duration_ns = kv_u64(p, n, "duration_ns");
	r->v.bpf_events = kv_u64(p, n, "bpf_events");
	r->v.bpf_dropped = kv_u64(p, n, "bpf_dropped");
	r->v.bpf_desync = kv_u64(p, n, "bpf_desync");
	r->v.bpf_run_cnt = kv_u64(p, n, "bpf_run_cnt");
	r->v.bpf_run_ns = kv_u64(p, n, "bpf_run_ns");
	r->v.sampler_dropped = kv_u64(p, n, "sampler_dropped");
	r->v.sampler_iterations = kv_u64(p, n, "sampler_iterations");
	r->v.sampler_loop_ns = kv_u64(p, n, "sampler_loop_ns");
	{
		const char *pos = p, *end = pos + n;
		struct recfile_kv kv;

		while (r->v.nprogs < 48 && recfile_kv_next(&pos, end, &kv) > 0) {
			char val[64];
			unsigned long long cnt, ns;
			size_t nl = kv.key_len - 9;

			if (kv.key_len <= 9 || strncmp(kv.key, "bpf_prog.", 9) ||
			    kv.val_len >= sizeof(val))
				continue;
			memcpy(val, kv.val, kv.val_len);
			val[kv.val_len] = 0;
			if (sscanf(val, "%llu %llu", &cnt, &ns) != 2)
				continue;
			if (nl >= sizeof(r->v.progs[0].name))
				nl = sizeof(r->v.progs[0].name) - 1;
			memcpy(r->v.progs[r->v.nprogs].name, kv.key + 9, nl);
			r->v.progs[r->v.nprogs].name[nl] = 0;
			r->v.progs[r->v.nprogs].run_cnt = cnt;
			r->v.progs[r->v.nprogs].run_ns = ns;
			r->v.nprogs++;
		}
	}
	if (strcmp(r->helper, "proc") || !r->v.proc)
		return;
	for (i = 0; i < r->v.ncpus; i++) {
		struct view_proc *vp = &r->v.proc[i];
		char key[64];

		for (k = 0; k < VN_CLASS_MAX; k++) {
			snprintf(key, sizeof(key), "proc.%d.count.%d", r->v.cpus[i], k);
			vp->count[k] = kv_u64(p, n, key);
		}
		snprintf(key, sizeof(key), "proc.%d.steal_ns", r->v.cpus[i]);
		vp->steal_ns = kv_u64(p, n, key);
		vp->valid = 1;
		for (k = 0; k < 8; k++) {
			char val[128];
			unsigned cls;
			unsigned long long cnt;

			val[0] = 0;
			snprintf(key, sizeof(key), "proc.%d.src.%d", r->v.cpus[i], k);
			kv_str(p, n, key, val, sizeof(val));
			if (sscanf(val, "%u %llu %47s", &cls, &cnt, vp->src[k].name) != 3 ||
			    cls >= VN_CLASS_MAX)
				break;
			vp->src[k].cls = (uint8_t)cls;
			vp->src[k].count = cnt;
		}
		vp->nsrc = k;
	}
}

int replay_run(const struct measure_params *p)
{
	struct report *r = calloc(1, sizeof(*r));
	struct recfile_reader *rd = NULL;
	struct recfile_chunk c;
	int rc = EXIT_OK, n, damaged = 0, i;
	size_t k;

	if (!r) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	strcpy(r->helper, "?");
	strcpy(r->steal, "?");
	r->v.m = merge_new(view_gap_cb, &r->v);
	r->v.top_n = p->top_n;
	r->v.irq_name = report_irq_name;
	r->v.irq_ctx = r;
	rd = recreader_open(p->input);
	if (!rd || !r->v.m) {
		log_err("cannot open '%s': %s", p->input, strerror(errno));
		rc = EXIT_FAIL;
		goto out;
	}
	for (;;) {
		n = recreader_next(rd, &c);
		if (n == 0)
			break;
		if (n < 0) {
			log_err("%s: %s", p->input, recreader_error(rd));
			damaged = 1;
			if (recreader_recoverable(n))
				continue;
			break;
		}
		switch (c.type) {
		case VN_CHUNK_META:
			if (r->have_meta)
				break;
			read_meta(r, &c);
			r->v.hist = calloc((size_t)r->v.ncpus + 1, sizeof(*r->v.hist));
			r->v.proc = !strcmp(r->helper, "proc")
					? calloc((size_t)r->v.ncpus + 1, sizeof(*r->v.proc))
					: NULL;
			for (i = 0; r->v.hist && i < r->v.ncpus; i++) {
				int cl;

				hist_init(&r->v.hist[i].all);
				for (cl = 0; cl < VN_CLASS_MAX; cl++)
					hist_init(&r->v.hist[i].cls[cl]);
			}
			break;
		case VN_CHUNK_SAMPLES:
			for (k = 0; k + sizeof(struct vn_sample) <= c.len;
			     k += sizeof(struct vn_sample))
				if (merge_add_sample(
					r->v.m,
					(const struct vn_sample *)((const char *)c.payload + k)))
					r->bad_records++;
			break;
		case VN_CHUNK_EVENTS:
			for (k = 0; k + sizeof(struct vn_event) <= c.len;
			     k += sizeof(struct vn_event))
				if (merge_add_event(
					r->v.m,
					(const struct vn_event *)((const char *)c.payload + k)))
					r->bad_records++;
			break;
		case VN_CHUNK_STATS:
			read_stats(r, &c);
			break;
		default:
			break;
		}
	}
	if (!r->have_meta) {
		log_err("%s: no readable metadata chunk; nothing to report", p->input);
		rc = EXIT_DAMAGED;
		goto out;
	}
	if (merge_process(r->v.m, UINT64_MAX)) {
		log_err("out of memory");
		rc = EXIT_FAIL;
		goto out;
	}
	r->v.helper = r->helper;
	r->v.steal_source = r->steal;
	if (!r->v.duration_ns) /* no STATS chunk (truncated): use the runtime seen */
		for (i = 0; i < r->v.ncpus; i++) {
			const struct merge_cpu *mc = merge_cpu(r->v.m, r->v.cpus[i]);

			if (mc && mc->runtime_ns > r->v.duration_ns)
				r->v.duration_ns = mc->runtime_ns;
		}
	if (r->bad_records)
		log_warn("%s: %llu invalid records skipped", p->input,
			 (unsigned long long)r->bad_records);
	if (p->report_hist)
		view_hist(stdout, &r->v);
	else if (p->json)
		view_json(stdout, &r->v);
	else
		view_text(stdout, &r->v);
	if (damaged) {
		struct recfile_stats st;

		recreader_stats(rd, &st);
		log_err("%s: reported the %llu intact chunks read; %llu damaged, %llu missing",
			p->input, (unsigned long long)st.chunks, (unsigned long long)st.bad_chunks,
			(unsigned long long)st.missing_chunks);
		rc = EXIT_DAMAGED;
	}
out:
	recreader_close(rd);
	merge_free(r->v.m);
	free(r->v.hist);
	free(r->v.proc);
	for (i = 0; i < REPORT_MAX_IRQ; i++)
		free(r->irq[i]);
	free(r);
	return rc;
}
