/* SPDX-License-Identifier: MIT */
/*
 * hostrec: record-file text chunks of vnoise-host and the `report` command (see hostrec.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/exitcode.h"
#include "views/hostrec.h"
#include "util/log.h"
#include "match/matchview.h"
#include "util/parse.h"

int hostrec_domain_text(char *buf, size_t cap, uint32_t dom, const struct vmap_dom *m,
			const char *event, uint64_t t_ns)
{
	size_t o = 0;
	uint32_t i;
	int n;

#define PUT(...)                                             \
	do {                                                 \
		n = snprintf(buf + o, cap - o, __VA_ARGS__); \
		if (n < 0 || (size_t)n >= cap - o)           \
			return -ENOSPC;                      \
		o += (size_t)n;                              \
	} while (0)
	PUT("dom=%u\nevent=%s\nt_ns=%" PRIu64
	    "\nname=%s\nuuid=%s\nvirt=%s\nqemu_pid=%d\nnvcpus=%u\n",
	    dom, event, t_ns, m->name, m->uuid, m->virt, (int)m->qemu_pid, m->nvcpus);
	PUT("emulator_tid=%u\ntid_source=%s\nshmem=%s\nshmem_size=%" PRIu64 "\ntaps=%s\n",
	    m->emulator_tid, m->tid_source ? m->tid_source : "", m->shmem, m->shmem_size, m->taps);
	PUT("iothreads=");
	for (i = 0; i < m->niothreads; i++)
		PUT("%s%u", i ? "," : "", m->iothreads[i]);
	PUT("\n");
	for (i = 0; i < m->nvcpus; i++)
		PUT("vcpu.%u.tid=%u\n", i, m->tids[i]);
#undef PUT
	return (int)o;
}

static bool kv_str(const void *pl, size_t len, const char *key, char *out, size_t cap)
{
	const char *v;
	size_t vl;

	if (!recfile_kv_get(pl, len, key, &v, &vl) || vl >= cap)
		return false;
	memcpy(out, v, vl);
	out[vl] = 0;
	return true;
}

static bool kv_u64(const void *pl, size_t len, const char *key, uint64_t *out)
{
	char buf[32];

	return kv_str(pl, len, key, buf, sizeof(buf)) && !parse_u64(buf, out);
}

int hostrec_domain_apply(struct hostagg *a, const void *payload, size_t len)
{
	char name[HOSTAGG_NAME_LEN], uuid[40], virt[8], event[16];
	uint64_t dom, pid = 0, nv, tid;
	uint32_t i;
	int rc;

	if (!kv_u64(payload, len, "dom", &dom) || dom >= VN_HOST_MAX_DOMAINS ||
	    !kv_u64(payload, len, "nvcpus", &nv) || nv > VN_HOST_MAX_VCPUS ||
	    !kv_str(payload, len, "event", event, sizeof(event)))
		return -EINVAL;
	if (!kv_str(payload, len, "name", name, sizeof(name)))
		name[0] = 0;
	if (!kv_str(payload, len, "uuid", uuid, sizeof(uuid)))
		uuid[0] = 0;
	if (!kv_str(payload, len, "virt", virt, sizeof(virt)))
		virt[0] = 0;
	if (!kv_u64(payload, len, "qemu_pid", &pid) || pid > UINT32_MAX)
		pid = 0;
	rc = hostagg_domain(a, (uint32_t)dom, name, uuid, virt, (uint32_t)pid, (uint32_t)nv, event);
	if (rc)
		return rc;
	for (i = 0; i < nv; i++) {
		char key[32];

		snprintf(key, sizeof(key), "vcpu.%u.tid", i);
		if (kv_u64(payload, len, key, &tid) && tid && tid <= UINT32_MAX &&
		    hostagg_vcpu_tid(a, (uint32_t)dom, i, (uint32_t)tid))
			return -EINVAL;
	}
	return 0;
}

/* irq.<n>=<name> lines of a HOST_META chunk. */
static void apply_irq_names(struct hostagg *a, const void *payload, size_t len)
{
	const char *pos = payload, *end = (const char *)payload + len;
	struct recfile_kv kv;

	while (recfile_kv_next(&pos, end, &kv) == 1) {
		char num[16], name[32];
		uint64_t irq;

		if (kv.key_len < 5 || kv.key_len - 4 >= sizeof(num) || memcmp(kv.key, "irq.", 4))
			continue;
		memcpy(num, kv.key + 4, kv.key_len - 4);
		num[kv.key_len - 4] = 0;
		if (parse_u64(num, &irq) || irq > UINT32_MAX || !kv.val_len)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)kv.val_len, kv.val);
		(void)hostagg_set_irq_name(a, (uint32_t)irq, name);
	}
}

/* Copy records out of a payload (it is not aligned for the struct in general) and feed them. */
#define FEED(type, fn)                                                              \
	do {                                                                        \
		type rec;                                                           \
		size_t off;                                                         \
		if (ch.len % sizeof(type)) {                                        \
			bad++;                                                      \
			break;                                                      \
		}                                                                   \
		for (off = 0; off < ch.len; off += sizeof(type)) {                  \
			memcpy(&rec, (const char *)ch.payload + off, sizeof(type)); \
			(void)fn(a, &rec);                                          \
		}                                                                   \
	} while (0)

int hostrec_report(const struct host_params *p)
{
	struct hostview_info in = {
		.source = p->input, .dispatch = "?", .top_n = p->top_n, .flows_top = p->flows_top
	};
	struct recfile_reader *r = NULL;
	struct hostagg *a = NULL;
	struct recfile_chunk ch;
	uint64_t bad = 0, v;
	bool host_file = false, damaged = false, truncated = false;
	int rc, ret = EXIT_FAIL;
	char mode[16];

	a = hostagg_new();
	r = recreader_open(p->input);
	if (!a || !r) {
		log_err("cannot read %s: %s", p->input, strerror(errno));
		goto out;
	}
	for (;;) {
		rc = recreader_next(r, &ch);
		if (rc == 0)
			break;
		if (rc < 0) {
			if (recreader_recoverable(rc)) {
				log_warn("%s: %s (skipped)", p->input, recreader_error(r));
				damaged = true;
				continue;
			}
			if (rc == -ENODATA) {
				log_warn("%s: %s", p->input, recreader_error(r));
				truncated = true;
				break;
			}
			log_err("%s: %s", p->input, recreader_error(r));
			ret = rc == -EPROTO || rc == -EPROTONOSUPPORT ? EXIT_DAMAGED : EXIT_FAIL;
			goto out;
		}
		switch (ch.type) {
		case VN_CHUNK_HOST_META:
			host_file = true;
			if (kv_u64(ch.payload, ch.len, "period_ns", &v))
				in.period_ns = v;
			if (kv_str(ch.payload, ch.len, "dispatch", mode, sizeof(mode)))
				in.dispatch = strcmp(mode, "bpf") ? "off" : "bpf";
			if (kv_u64(ch.payload, ch.len, "irqs", &v))
				in.irqs = v != 0;
			if (kv_u64(ch.payload, ch.len, "kvm", &v))
				in.kvm = v != 0;
			if (kv_u64(ch.payload, ch.len, "start_ns", &v))
				in.start_ns = in.end_ns = v;
			apply_irq_names(a, ch.payload, ch.len);
			break;
		case VN_CHUNK_HOST_DOMAIN:
			if (hostrec_domain_apply(a, ch.payload, ch.len))
				bad++;
			break;
		case VN_CHUNK_HOST_PERIOD:
			FEED(struct vn_host_period, hostagg_period);
			{
				struct vn_host_period last;

				if (ch.len >= sizeof(last)) {
					memcpy(&last,
					       (const char *)ch.payload + ch.len - sizeof(last),
					       sizeof(last));
					if (last.end_ns > in.end_ns)
						in.end_ns = last.end_ns;
				}
			}
			break;
		case VN_CHUNK_HOST_OUT:
			FEED(struct vn_host_out, hostagg_out);
			break;
		case VN_CHUNK_HOST_RUN:
			FEED(struct vn_host_run, hostagg_run);
			break;
		case VN_CHUNK_HOST_AGG:
			FEED(struct vn_host_agg, hostagg_agg);
			break;
		case VN_CHUNK_HOST_MATCH:
			FEED(struct vn_host_match, hostagg_match);
			break;
		case VN_CHUNK_HOST_MSRC:
			FEED(struct vn_host_msrc, hostagg_msrc);
			break;
		case VN_CHUNK_HOST_CHAN:
			FEED(struct vn_host_chan, hostagg_chan);
			break;
		case VN_CHUNK_HOST_FLOW:
			FEED(struct vn_host_flow, hostagg_flow);
			break;
		case VN_CHUNK_HOST_TAP:
			FEED(struct vn_host_tap, hostagg_tap);
			break;
		case VN_CHUNK_STATS:
		case VN_CHUNK_END:
			if (kv_u64(ch.payload, ch.len, "dispatch_dropped", &v))
				in.schedlog_drops = v;
			if (kv_u64(ch.payload, ch.len, "dispatch_anomalies", &v))
				in.schedlog_anomalies = v;
			if (kv_u64(ch.payload, ch.len, "events_dropped", &v))
				in.events_dropped = v;
			if (kv_u64(ch.payload, ch.len, "reconnects", &v))
				in.reconnects = (uint32_t)v;
			if (kv_u64(ch.payload, ch.len, "bpf_events", &v))
				in.bpf_events = v;
			if (kv_u64(ch.payload, ch.len, "bpf_run_ns", &v))
				in.bpf_run_ns = v;
			break;
		default:
			break; /* guest chunks or future types */
		}
	}
	if (!host_file) {
		log_err("%s: not a vnoise-host record file (no HOST_META chunk)", p->input);
		ret = EXIT_DAMAGED;
		goto out;
	}
	if (bad) {
		log_warn("%s: %" PRIu64 " malformed host chunks skipped", p->input, bad);
		damaged = true;
	}
	if (a->bad_records)
		log_warn("%s: %" PRIu64 " records named an unknown domain or vCPU", p->input,
			 a->bad_records);
	if (p->guest && !hostagg_has_match(a)) {
		log_err("%s: no combined guest + host data (recorded without --guest)", p->input);
		ret = EXIT_FAIL;
		goto out;
	}
	if (p->json) {
		if (p->guest ? matchview_json(stdout, a, &in) : hostview_json(stdout, a, &in)) {
			log_err("cannot write the report");
			goto out;
		}
	} else if (p->guest) {
		matchview_text(stdout, a, &in);
	} else {
		hostview_text(stdout, a, &in);
	}
	ret = damaged || truncated ? EXIT_DAMAGED : EXIT_OK;
out:
	recreader_close(r);
	hostagg_free(a);
	return ret;
}
