/* SPDX-License-Identifier: MIT */
/*
 * replay (report FILE): rebuilds the view of a record file (vnoise-guest record -o FILE) by feeding its samples
 * and events through the same merge engine, then shows it through the same view ops as a live run (their end).
 * A damaged or truncated file is reported as far as it could be read, marked partial in the view; what could not
 * be read is said on stderr and the exit code is EXIT_DAMAGED. A directory or other non-file is a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "dtl/dtl.h"
#include "measure/hypsplit.h"
#include "util/log.h"
#include "util/outfile.h"
#include "measure/measure.h"
#include "util/parse.h"
#include "format/htmlplot.h"
#include "format/recreader.h"
#include "host.h"
#include "record.h"
#include "views/view.h"
#include "views/view_gaps.h"
#include "views/view_html.h"

#define REPLAY_MAX_IRQ 4096

struct replay {
	struct view v;
	char *irq[REPLAY_MAX_IRQ];
	char helper[16], steal[32], version[96], dtl[16];
	struct dtl *store; /* the recorded DTL spans and causes (DTL chunks), NULL without */
	struct vn_rec_dtl_span *spans; /* as read, fed to the store after the gaps are attributed */
	size_t nspans, spancap;
	char partial[160]; /* the view's "partial:" line when the file was not read whole */
	const char *html_path; /* --html OUT.html: the page is written there instead of a view */
	struct view_html *html; /* its collector, made with the META chunk */
	struct view_gaps *gaps; /* --gaps: the lines, NULL otherwise */
	int gaps_err; /* --gaps: out of memory while collecting them */
	int have_meta;
	int host_file; /* a HOST_META chunk: the file is vnoise-host's */
	int truncated; /* the file ends early (cut short, or never closed) */
	uint64_t bad_records;
};

static const char *replay_irq_name(void *ctx, uint32_t irq)
{
	struct replay *r = ctx;

	return irq < REPLAY_MAX_IRQ ? r->irq[irq] : NULL;
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

/* vnoise_tids=: the recording vnoise's own threads (main thread and samplers). */
static void read_self(struct view *v, const void *payload, size_t len)
{
	char list[8192] = "", *tok, *save = NULL;
	uint64_t tid;

	kv_str(payload, len, "vnoise_tids", list, sizeof(list));
	for (tok = strtok_r(list, ",", &save); tok && v->nself < VIEW_MAX_SELF;
	     tok = strtok_r(NULL, ",", &save))
		if (!parse_u64(tok, &tid) && tid <= INT32_MAX)
			v->self[v->nself++] = (int)tid;
}

static void read_meta(struct replay *r, const struct recfile_chunk *c)
{
	const char *pos = c->payload, *end = pos + c->len;
	struct recfile_kv kv;
	char cpus[4096] = "";

	r->have_meta = 1;
	kv_str(c->payload, c->len, "kernel_helper", r->helper, sizeof(r->helper));
	kv_str(c->payload, c->len, "steal_source", r->steal, sizeof(r->steal));
	kv_str(c->payload, c->len, "version", r->version, sizeof(r->version));
	read_self(&r->v, c->payload, c->len);
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
		if (parse_u64(num, &irq) || irq >= REPLAY_MAX_IRQ || r->irq[irq])
			continue;
		r->irq[irq] = strndup(kv.val, kv.val_len < 64 ? kv.val_len : 64);
	}
}

/* bpf_prog.NAME=RUNS RUN_NS lines: per BPF program run-time statistics. */
static void read_progs(struct view *v, const void *p, size_t n)
{
	const char *pos = p, *end = pos + n;
	struct recfile_kv kv;

	while (v->nprogs < VIEW_MAX_PROGS && recfile_kv_next(&pos, end, &kv) > 0) {
		char val[64];
		unsigned long long cnt, ns;
		size_t nl = kv.key_len - 9;

		if (kv.key_len <= 9 || strncmp(kv.key, "bpf_prog.", 9) || kv.val_len >= sizeof(val))
			continue;
		memcpy(val, kv.val, kv.val_len);
		val[kv.val_len] = 0;
		if (sscanf(val, "%llu %llu", &cnt, &ns) != 2)
			continue;
		if (nl >= sizeof(v->progs[0].name))
			nl = sizeof(v->progs[0].name) - 1;
		memcpy(v->progs[v->nprogs].name, kv.key + 9, nl);
		v->progs[v->nprogs].name[nl] = 0;
		v->progs[v->nprogs].run_cnt = cnt;
		v->progs[v->nprogs].run_ns = ns;
		v->nprogs++;
	}
}

/* proc.CPU.* lines: the counters-only fallback's per-CPU counts, steal and busiest sources. */
static void read_proc(struct view *v, const void *p, size_t n)
{
	int i, k;

	for (i = 0; i < v->ncpus; i++) {
		struct view_proc *vp = &v->proc[i];
		char key[64];

		for (k = 0; k < VN_CLASS_MAX; k++) {
			snprintf(key, sizeof(key), "proc.%d.count.%d", v->cpus[i], k);
			vp->count[k] = kv_u64(p, n, key);
		}
		snprintf(key, sizeof(key), "proc.%d.steal_ns", v->cpus[i]);
		vp->steal_ns = kv_u64(p, n, key);
		vp->valid = 1;
		for (k = 0; k < 8; k++) {
			char val[128];
			unsigned cls;
			unsigned long long cnt;

			val[0] = 0;
			snprintf(key, sizeof(key), "proc.%d.src.%d", v->cpus[i], k);
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

static void read_stats(struct replay *r, const struct recfile_chunk *c)
{
	const void *p = c->payload;
	size_t n = c->len;

	r->v.duration_ns = kv_u64(p, n, "duration_ns");
	r->v.bpf_events = kv_u64(p, n, "bpf_events");
	r->v.bpf_dropped = kv_u64(p, n, "bpf_dropped");
	r->v.bpf_desync = kv_u64(p, n, "bpf_desync");
	r->v.bpf_run_cnt = kv_u64(p, n, "bpf_run_cnt");
	r->v.bpf_run_ns = kv_u64(p, n, "bpf_run_ns");
	r->v.sampler_dropped = kv_u64(p, n, "sampler_dropped");
	r->v.sampler_iterations = kv_u64(p, n, "sampler_iterations");
	r->v.sampler_loop_ns = kv_u64(p, n, "sampler_loop_ns");
	kv_str(p, n, "dtl", r->dtl, sizeof(r->dtl));
	r->v.dtl_late = kv_u64(p, n, "dtl_late");
	r->v.t0_ns = kv_u64(p, n, "t0_ns"); /* the run's start: 0 in older files (times from boot) */
	read_progs(&r->v, p, n);
	if (!strcmp(r->helper, "proc") && r->v.proc)
		read_proc(&r->v, p, n);
}

/* The first META chunk sets the view up; later ones are ignored. */
static void take_meta(struct replay *r, const struct recfile_chunk *c)
{
	if (r->have_meta)
		return;
	read_meta(r, c);
	r->v.hist = calloc((size_t)r->v.ncpus + 1, sizeof(*r->v.hist)); /* zero-filled: empty */
	r->v.proc =
	    !strcmp(r->helper, "proc") ? calloc((size_t)r->v.ncpus + 1, sizeof(*r->v.proc)) : NULL;
	if (r->html_path)
		r->html = view_html_new(r->v.ncpus); /* NULL: said when the page is written */
}

/* merge's gap callback: the view's, and the HTML page's timeline with --html. */
static void replay_gap_cb(void *ctx, int cpu, uint64_t dur_ns,
			  const uint64_t class_ns[VN_CLASS_MAX])
{
	struct replay *r = ctx;
	const struct merge_cpu *mc;
	int i;

	view_gap_cb(&r->v, cpu, dur_ns, class_ns);
	mc = merge_cpu(r->v.m, cpu); /* its last gap is this one */
	if (r->gaps && mc &&
	    view_gaps_gap(r->gaps, cpu, mc->last_gap_start, mc->last_gap_end, class_ns))
		r->gaps_err = 1;
	if (!r->html || !mc)
		return;
	for (i = 0; i < r->v.ncpus && r->v.cpus[i] != cpu; i++)
		;
	view_html_gap(r->html, i, mc->last_gap_start, mc->last_gap_end, class_ns);
}

/* hypsplit's part callback: the view's, and the gap's line with --gaps. */
static void replay_hyp_cb(void *ctx, uint32_t cpu, uint64_t start_ns, uint64_t end_ns,
			  const struct gapsplit_res *res)
{
	struct replay *r = ctx;

	view_hyp_cb(&r->v, cpu, start_ns, end_ns, res);
	if (r->gaps && view_gaps_split(r->gaps, cpu, start_ns, end_ns, res))
		r->gaps_err = 1;
}

/* Samples and events into the merge engine; records it refuses are counted. */
static void take_records(struct replay *r, const struct recfile_chunk *c)
{
	const char *pl = c->payload;
	size_t k;

	if (c->type == VN_CHUNK_SAMPLES) {
		for (k = 0; k + sizeof(struct vn_sample) <= c->len; k += sizeof(struct vn_sample)) {
			if (merge_add_sample(r->v.m, (const struct vn_sample *)(pl + k)))
				r->bad_records++;
			else if (r->html)
				view_html_sample(r->html, (const struct vn_sample *)(pl + k));
		}
	} else {
		for (k = 0; k + sizeof(struct vn_event) <= c->len; k += sizeof(struct vn_event))
			if (merge_add_event(r->v.m, (const struct vn_event *)(pl + k)))
				r->bad_records++;
	}
}

/* The store and the splitter, made with the first DTL chunk (for the CPUs of META). 0 or -errno. */
static int dtl_setup(struct replay *r)
{
	int i, max = 0;

	if (r->store)
		return 0;
	for (i = 0; i < r->v.ncpus; i++)
		if (r->v.cpus[i] + 1 > max)
			max = r->v.cpus[i] + 1;
	r->store = dtl_new_store((uint32_t)(max ? max : 1));
	r->v.hs = r->store ? hypsplit_new(r->store, 0) : NULL;
	if (!r->v.hs)
		return -ENOMEM;
	hypsplit_set_part_fn(r->v.hs, replay_hyp_cb, r);
	return 0;
}

/* cause.<word>=<cls> <pid> <comm> lines: the names of the recorded causes (detail task). */
static void take_causes(struct replay *r, const struct recfile_chunk *c)
{
	const char *pos = c->payload, *end = pos + c->len;
	struct recfile_kv kv;

	while (recfile_kv_next(&pos, end, &kv) > 0) {
		char key[24], val[64], comm[VN_DTL_COMM_LEN] = "";
		unsigned int cls;
		unsigned long pid;
		uint64_t word;
		int at = 0;

		if (kv.key_len < 7 || kv.key_len >= sizeof(key) || strncmp(kv.key, "cause.", 6) ||
		    kv.val_len >= sizeof(val))
			continue;
		memcpy(key, kv.key + 6, kv.key_len - 6);
		key[kv.key_len - 6] = 0;
		memcpy(val, kv.val, kv.val_len);
		val[kv.val_len] = 0;
		if (parse_u64(key, &word) || word > UINT32_MAX ||
		    sscanf(val, "%u %lu %n", &cls, &pid, &at) != 2 || cls >= VN_DTL_CLASS_MAX)
			continue;
		snprintf(comm, sizeof(comm), "%s", val + at);
		if (dtl_set_cause(r->store, (uint32_t)word, cls, (uint32_t)pid, comm))
			r->bad_records++;
	}
}

/* The DTL the recording used: causes, spans into the store, split gaps into the splitter. */
static void take_dtl(struct replay *r, const struct recfile_chunk *c)
{
	const char *pl = c->payload;
	size_t k;

	if (!r->have_meta || dtl_setup(r)) {
		r->bad_records++;
		return;
	}
	if (c->type == VN_CHUNK_DTL_CAUSES) {
		take_causes(r, c);
	} else if (c->type == VN_CHUNK_DTL_SPANS) {
		size_t n = c->len / sizeof(struct vn_rec_dtl_span);

		if (r->nspans + n > r->spancap) {
			size_t nc = r->spancap ? r->spancap : 4096;
			void *ns;

			while (nc < r->nspans + n)
				nc *= 2;
			ns = realloc(r->spans, nc * sizeof(*r->spans));
			if (!ns) {
				r->bad_records += n;
				return;
			}
			r->spans = ns;
			r->spancap = nc;
		}
		memcpy(r->spans + r->nspans, pl, n * sizeof(*r->spans));
		r->nspans += n;
	} else {
		for (k = 0; k + sizeof(struct vn_rec_dtl_gap) <= c->len;
		     k += sizeof(struct vn_rec_dtl_gap)) {
			struct vn_rec_dtl_gap g;

			memcpy(&g, pl + k, sizeof(g));
			if (hypsplit_add_recorded(r->v.hs, &g))
				r->bad_records++;
		}
	}
}

#define FEED_STEP_NS 10000000000ull /* split what is queued at least every 10 s of a CPU's spans */
#define FEED_STEP_SPANS \
	32768u /* ... and every this many spans (the store keeps 30 s, 65536 per CPU) */

/* The recorded spans into the store in file order (time order per CPU); the gaps they cover are split as
 * the store reaches past them, before it ages the spans out. */
static void feed_spans(struct replay *r)
{
	uint64_t *last = calloc(HYPSPLIT_MAX_CPUS, sizeof(*last));
	size_t k, since = 0;

	for (k = 0; last && k < r->nspans; k++) {
		const struct vn_rec_dtl_span *rs = &r->spans[k];
		struct dtl_span sp = { .start_ns = rs->start_ns,
				       .end_ns = rs->end_ns,
				       .cause = rs->cause,
				       .kind = rs->kind,
				       .cls = rs->cls,
				       .hclass = rs->hclass,
				       .flags = rs->flags };

		if (rs->cpu >= HYPSPLIT_MAX_CPUS || dtl_add_span(r->store, rs->cpu, &sp)) {
			r->bad_records++;
			continue;
		}
		if (++since >= FEED_STEP_SPANS || rs->end_ns > last[rs->cpu] + FEED_STEP_NS) {
			hypsplit_process(r->v.hs, 0);
			since = 0;
			last[rs->cpu] = rs->end_ns;
		}
		hypsplit_replay_horizon(r->v.hs, rs->cpu, rs->end_ns);
	}
	free(last);
}

/* Every chunk of rd into r. Returns 1 when the file is damaged (said on stderr), else 0. */
static int read_chunks(struct replay *r, struct recfile_reader *rd, const char *path)
{
	struct recfile_chunk c;
	int n, damaged = 0;

	while ((n = recreader_next(rd, &c)) != 0) {
		if (n < 0) {
			log_err("%s: %s", path, recreader_error(rd));
			damaged = 1;
			r->truncated |= n == -ENODATA;
			if (recreader_recoverable(n))
				continue;
			break;
		}
		if (c.type == VN_CHUNK_META)
			take_meta(r, &c);
		else if (c.type == VN_CHUNK_HOST_META)
			r->host_file = 1;
		else if (c.type == VN_CHUNK_SAMPLES || c.type == VN_CHUNK_EVENTS)
			take_records(r, &c);
		else if (c.type == VN_CHUNK_STATS)
			read_stats(r, &c);
		else if (c.type == VN_CHUNK_DTL_SPANS || c.type == VN_CHUNK_DTL_GAPS ||
			 c.type == VN_CHUNK_DTL_CAUSES)
			take_dtl(r, &c);
	}
	return damaged;
}

/* Attribute everything read and complete the view: names, and a duration even without a STATS chunk. */
static int finish_view(struct replay *r, const char *path)
{
	int i;

	if (merge_process(r->v.m, UINT64_MAX) || r->v.hs_err || r->gaps_err) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	if (r->v.hs)
		feed_spans(r);
	hypsplit_process(r->v.hs, UINT64_MAX);
	if (r->gaps_err) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	if (!r->dtl[0] && r->v.hs) /* DTL chunks, no STATS (cut short): the run had a DTL */
		snprintf(r->dtl, sizeof(r->dtl), "ok");
	r->v.dtl = r->dtl[0] ? r->dtl : NULL;
	if (r->v.dtl && strcmp(r->v.dtl, "absent") && dtl_setup(r)) { /* a DTL that split nothing */
		log_err("out of memory");
		return EXIT_FAIL;
	}
	r->v.helper = r->helper;
	r->v.steal_source = r->steal;
	r->v.version = r->version[0] ? r->version : NULL;
	r->v.replayed = 1;
	if (!r->v.duration_ns) /* no STATS chunk (truncated): use the runtime seen */
		for (i = 0; i < r->v.ncpus; i++) {
			const struct merge_cpu *mc = merge_cpu(r->v.m, r->v.cpus[i]);

			if (mc && mc->runtime_ns > r->v.duration_ns)
				r->v.duration_ns = mc->runtime_ns;
		}
	if (r->bad_records)
		log_warn("%s: %llu invalid records skipped", path,
			 (unsigned long long)r->bad_records);
	return EXIT_OK;
}

static struct replay *replay_new(const struct measure_params *p)
{
	struct replay *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	strcpy(r->helper, "?");
	strcpy(r->steal, "?");
	r->html_path = p->html;
	if (p->report_gaps && !(r->gaps = view_gaps_new())) {
		free(r);
		return NULL;
	}
	r->v.m = merge_new(replay_gap_cb, r);
	r->v.top_n = p->top_n;
	r->v.wide = p->wide;
	r->v.bucket_ns = p->bucket_ns;
	r->v.entries = p->entries;
	r->v.irq_name = replay_irq_name;
	r->v.irq_ctx = r;
	return r;
}

static void replay_free(struct replay *r)
{
	int i;

	merge_free(r->v.m);
	view_html_free(r->html);
	view_gaps_free(r->gaps);
	hypsplit_free(r->v.hs);
	dtl_close(r->store);
	free(r->spans);
	free(r->v.hist);
	free(r->v.proc);
	for (i = 0; i < REPLAY_MAX_IRQ; i++)
		free(r->irq[i]);
	free(r);
}

/* The view's "partial:" line: where the file ends, or how much damage was skipped. */
static void say_partial(struct replay *r, struct recfile_reader *rd)
{
	struct recfile_stats st;

	recreader_stats(rd, &st);
	if (r->truncated)
		snprintf(r->partial, sizeof(r->partial),
			 "the file ends at chunk %llu (truncated); the last period is incomplete",
			 (unsigned long long)st.chunks);
	else
		snprintf(r->partial, sizeof(r->partial),
			 "%llu damaged, %llu missing chunks skipped; their periods are incomplete",
			 (unsigned long long)st.bad_chunks, (unsigned long long)st.missing_chunks);
	r->v.partial = r->partial;
}

/* --gaps: the lines on stdout. EXIT_OK; EXIT_CANNOT when the file holds no gap; EXIT_FAIL, said in one
 * line. */
static int write_gaps(struct replay *r, const char *path)
{
	long n = view_gaps_write(r->gaps, stdout);

	if (n > 0)
		return EXIT_OK;
	if (!n)
		log_err(
		    "report: %s holds no gaps (none above the threshold was recorded): no line to "
		    "print",
		    path);
	else if (n != -EINVAL)
		log_err("report: cannot write the gaps: %s", strerror((int)-n));
	return n ? EXIT_FAIL : EXIT_CANNOT;
}

/* What the path is, before reading it: a directory or another non-file is a usage error (exit 2). */
static int check_path(const char *path)
{
	struct stat st;

	if (stat(path, &st) || S_ISREG(st.st_mode))
		return EXIT_OK; /* a missing file: said when it is opened */
	log_err("report: '%s' is %s, not a record file (see 'vnoise-guest report --help')", path,
		S_ISDIR(st.st_mode) ? "a directory" : "a device, FIFO or socket");
	return EXIT_USAGE;
}

/* --html: the page of the view into path (atomically). EXIT_OK, or EXIT_FAIL said in one line. */
static int write_html(struct replay *r, const char *path)
{
	int err = r->html ? view_html_write(r->html, &r->v, path) : -ENOMEM;

	if (!err)
		return EXIT_OK;
	log_err("report: cannot write '%s': %s", path, outfile_strerror(err));
	return outfile_exit_code(err);
}

int replay_run(const struct measure_params *p)
{
	struct replay *r;
	struct recfile_reader *rd = NULL;
	const struct view_ops *ops;
	struct recfile_stats st;
	int rc = check_path(p->input), damaged;

	if (rc)
		return rc;
	if (p->html && htmlplot_same_file(p->input, p->html)) {
		log_err("report: --html '%s' is the record file itself (see 'vnoise-guest report "
			"--help')",
			p->html);
		return EXIT_USAGE;
	}
	r = replay_new(p);
	if (!r) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	rd = recreader_open(p->input);
	if (!rd || !r->v.m) {
		log_err("cannot open '%s': %s", p->input, strerror(errno));
		rc = EXIT_FAIL;
		goto out;
	}
	damaged = read_chunks(r, rd, p->input);
	if (!r->have_meta && r->host_file) {
		log_err("%s: a vnoise-host record file (the host's view): read it with "
			"'vnoise-host report %s'",
			p->input, p->input);
		rc = EXIT_DAMAGED;
		goto out;
	}
	if (!r->have_meta) {
		if (!damaged) /* else the reader's error said why, in its one line */
			log_err("%s: no readable metadata chunk; nothing to report", p->input);
		rc = EXIT_DAMAGED;
		goto out;
	}
	rc = finish_view(r, p->input);
	if (rc)
		goto out;
	if (damaged)
		say_partial(r, rd);
	if (p->html) {
		rc = write_html(r, p->html);
		if (rc)
			goto out;
	} else if (p->report_gaps) {
		rc = write_gaps(r, p->input);
		if (rc)
			goto out;
	} else {
		ops = view_pick(p);
		if (ops->end)
			ops->end(stdout, &r->v);
	}
	if (damaged) {
		recreader_stats(rd, &st);
		log_err("%s: reported the %llu intact chunks read; %llu damaged, %llu missing",
			p->input, (unsigned long long)st.chunks, (unsigned long long)st.bad_chunks,
			(unsigned long long)st.missing_chunks);
		rc = EXIT_DAMAGED;
	}
out:
	recreader_close(rd);
	replay_free(r);
	return rc;
}
