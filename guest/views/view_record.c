/* SPDX-License-Identifier: MIT */
/*
 * view_record: record file writer over recwriter (see view_record.h). META and STATS are key=value text
 * (protocol/README.md); samples and events are buffered up to RECORD_BUF records per chunk.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "format/recwriter.h"
#include "record.h"
#include "util/version.h"
#include "views/view_record.h"

#define RECORD_BUF 65536 /* records per SAMPLES or EVENTS chunk */
#define RECORD_MAX_IRQ 4096 /* IRQ numbers whose names go into META */
#define RECORD_DTL_BUF 4096 /* DTL spans or gaps per chunk */
#define RECORD_MAX_CAUSES 4096 /* cause words whose names are written (more are left out) */

struct view_record {
	struct recfile_writer *w;
	struct vn_sample *sbuf;
	size_t ns;
	struct vn_event *evbuf;
	size_t nev;
	uint64_t dropped; /* buffers lost to failed writes */
	uint64_t lost_samples, lost_events, lost_dtl; /* records of failed chunks (not written) */
	struct vn_rec_dtl_span *dspan; /* [RECORD_DTL_BUF], allocated with the first */
	size_t ndspan;
	struct vn_rec_dtl_gap *dgap; /* [RECORD_DTL_BUF] */
	size_t ndgap;
	uint32_t *cause; /* cause words named so far */
	size_t ncause;
	char *ctext; /* DTL_CAUSES lines not yet written */
	size_t ctlen;
	int detail_said; /* dtl_detail=task written */
};

struct view_record *view_record_open(const char *path)
{
	struct view_record *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->evbuf = malloc(RECORD_BUF * sizeof(*r->evbuf));
	r->sbuf = malloc(RECORD_BUF * sizeof(*r->sbuf));
	r->w = recwriter_open(path);
	if (!r->w || !r->evbuf || !r->sbuf) {
		int err = errno;

		view_record_abort(r);
		errno = err;
		return NULL;
	}
	return r;
}

/* A key=value text chunk written with open_memstream: fill() prints into f. */
static int text_chunk(struct view_record *r, uint16_t type, const struct view *v,
		      void (*fill)(FILE *f, const struct view *v), char **out)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err;

	if (!f)
		return -ENOMEM;
	fill(f, v);
	fclose(f);
	err = recwriter_chunk(r->w, type, buf, (uint32_t)len);
	if (out && !err)
		*out = buf;
	else
		free(buf);
	return err;
}

static void meta_text(FILE *f, const struct view *v)
{
	char host[256] = "";
	unsigned int irq;
	int i;

	gethostname(host, sizeof(host) - 1);
	fprintf(f,
		"tool=vnoise-guest\nversion=%s\nhostname=%s\nkernel_helper=%s\nsteal_source=%s\n"
		"hypercall_wrappers=%d\nthreshold_ns=%llu\nperiod_ns=%llu\nruntime_ns=%llu\ncpus=",
		version_string(), host, v->helper, v->steal_source, v->nhcalls,
		(unsigned long long)v->threshold_ns, (unsigned long long)v->period_ns,
		(unsigned long long)v->runtime_ns);
	for (i = 0; i < v->ncpus; i++)
		fprintf(f, "%s%d", i ? "," : "", v->cpus[i]);
	fputs("\nvnoise_tids=", f);
	for (i = 0; i < v->nself; i++)
		fprintf(f, "%s%d", i ? "," : "", v->self[i]);
	fputc('\n', f);
	for (irq = 0; v->irq_name && irq < RECORD_MAX_IRQ; irq++) {
		const char *n = v->irq_name(v->irq_ctx, irq);

		if (n)
			fprintf(f, "irq.%u=%s\n", irq, n);
	}
}

int view_record_start(struct view_record *r, const struct view *v)
{
	return text_chunk(r, VN_CHUNK_META, v, meta_text, NULL);
}

static void proc_text(FILE *f, const struct view *v)
{
	int i, c;

	for (i = 0; v->proc && i < v->ncpus; i++) {
		const struct view_proc *vp = &v->proc[i];

		if (!vp->valid)
			continue;
		for (c = 0; c < VN_CLASS_MAX; c++)
			fprintf(f, "proc.%d.count.%d=%llu\n", v->cpus[i], c,
				(unsigned long long)vp->count[c]);
		fprintf(f, "proc.%d.steal_ns=%llu\n", v->cpus[i], (unsigned long long)vp->steal_ns);
		for (c = 0; c < vp->nsrc; c++)
			fprintf(f, "proc.%d.src.%d=%u %llu %s\n", v->cpus[i], c, vp->src[c].cls,
				(unsigned long long)vp->src[c].count, vp->src[c].name);
	}
}

static void stats_text(FILE *f, const struct view *v)
{
	int i;

	fprintf(f,
		"duration_ns=%llu\nbpf_events=%llu\nbpf_dropped=%llu\nbpf_desync=%llu\nbpf_run_cnt="
		"%llu\n"
		"bpf_run_ns=%llu\nsampler_dropped=%llu\nsampler_iterations=%llu\nsampler_loop_ns=%"
		"llu\n",
		(unsigned long long)v->duration_ns, (unsigned long long)v->bpf_events,
		(unsigned long long)v->bpf_dropped, (unsigned long long)v->bpf_desync,
		(unsigned long long)v->bpf_run_cnt, (unsigned long long)v->bpf_run_ns,
		(unsigned long long)v->sampler_dropped, (unsigned long long)v->sampler_iterations,
		(unsigned long long)v->sampler_loop_ns);
	for (i = 0; i < v->nprogs; i++)
		fprintf(f, "bpf_prog.%s=%llu %llu\n", v->progs[i].name,
			(unsigned long long)v->progs[i].run_cnt,
			(unsigned long long)v->progs[i].run_ns);
	fprintf(f, "dtl=%s\n", v->dtl ? v->dtl : "absent");
	fprintf(f, "dtl_late=%llu\n", (unsigned long long)v->dtl_late);
	fprintf(f, "t0_ns=%llu\n", (unsigned long long)v->t0_ns);
	proc_text(f, v);
}

/* The DTL chunks: causes first (a reader names spans with them), then spans, then gaps. */
static int flush_dtl(struct view_record *r)
{
	int err = 0;

	if (r->ctlen)
		err = recwriter_chunk(r->w, VN_CHUNK_DTL_CAUSES, r->ctext, (uint32_t)r->ctlen);
	if (!err && r->ndspan)
		err = recwriter_chunk(r->w, VN_CHUNK_DTL_SPANS, r->dspan,
				      (uint32_t)(r->ndspan * sizeof(*r->dspan)));
	if (!err && r->ndgap)
		err = recwriter_chunk(r->w, VN_CHUNK_DTL_GAPS, r->dgap,
				      (uint32_t)(r->ndgap * sizeof(*r->dgap)));
	if (err)
		r->lost_dtl +=
		    r->ndspan + r->ndgap; /* kept or not, they go: counted with the rest */
	free(r->ctext);
	r->ctext = NULL;
	r->ctlen = r->ndspan = r->ndgap = 0;
	return err;
}

int view_record_flush(struct view_record *r)
{
	int err = flush_dtl(r);

	if (!err && r->ns)
		err = recwriter_chunk(r->w, VN_CHUNK_SAMPLES, r->sbuf,
				      (uint32_t)(r->ns * sizeof(*r->sbuf)));
	if (!err && r->nev)
		err = recwriter_chunk(r->w, VN_CHUNK_EVENTS, r->evbuf,
				      (uint32_t)(r->nev * sizeof(*r->evbuf)));
	if (err) { /* what a failed flush leaves: the file ends after its last whole chunk */
		r->lost_samples += r->ns;
		r->lost_events += r->nev;
	}
	r->ns = r->nev = 0;
	return err;
}

void view_record_sample(struct view_record *r, const struct vn_sample *s)
{
	if (r->ns == RECORD_BUF && view_record_flush(r))
		r->dropped++;
	if (r->ns < RECORD_BUF)
		r->sbuf[r->ns++] = *s;
}

void view_record_event(struct view_record *r, const struct vn_event *e)
{
	if (r->nev == RECORD_BUF && view_record_flush(r))
		r->dropped++;
	if (r->nev < RECORD_BUF)
		r->evbuf[r->nev++] = *e;
}

/* "cause.<word>=<cls> <pid> <comm>" for a cause named "class:comm[pid]" (detail task), once per word. */
static void name_cause(struct view_record *r, const struct dtl_span *s, const char *name)
{
	const char *colon = name ? strchr(name, ':') : NULL, *br = name ? strrchr(name, '[') : NULL;
	unsigned long pid = 0;
	char line[160], *nt;
	size_t k;
	int n = 0;

	for (k = 0; k < r->ncause && r->cause[k] != s->cause; k++)
		;
	if (colon && br > colon && sscanf(br, "[%lu]", &pid) == 1 && k == r->ncause &&
	    r->ncause < RECORD_MAX_CAUSES &&
	    (r->cause || (r->cause = calloc(RECORD_MAX_CAUSES, 4)))) {
		if (!r->detail_said)
			n = snprintf(line, sizeof(line), "dtl_detail=task\n");
		r->detail_said = 1;
		r->cause[r->ncause++] = s->cause;
		n += snprintf(line + n, sizeof(line) - (size_t)n, "cause.%u=%u %lu %.*s\n",
			      s->cause, s->cls, pid,
			      (int)(br - colon - 1 < 15 ? br - colon - 1 : 15), colon + 1);
	}
	if (n <= 0 || (size_t)n >= sizeof(line) || !(nt = realloc(r->ctext, r->ctlen + (size_t)n)))
		return;
	memcpy(nt + r->ctlen, line, (size_t)n);
	r->ctext = nt;
	r->ctlen += (size_t)n;
}

void view_record_dtl_span(void *ctx, uint32_t cpu, const struct dtl_span *s, const char *cause_name)
{
	struct view_record *r = ctx;
	struct vn_rec_dtl_span *d;

	if (!r->dspan && !(r->dspan = malloc(RECORD_DTL_BUF * sizeof(*r->dspan))))
		return;
	if (r->ndspan == RECORD_DTL_BUF && view_record_flush(r))
		r->dropped++;
	if (r->ndspan == RECORD_DTL_BUF)
		return;
	name_cause(r, s, cause_name);
	d = &r->dspan[r->ndspan++];
	memset(d, 0, sizeof(*d));
	d->start_ns = s->start_ns;
	d->end_ns = s->end_ns;
	d->cause = s->cause;
	d->cpu = (uint16_t)cpu;
	d->kind = s->kind;
	d->cls = s->cls;
	d->hclass = s->hclass;
	d->flags = s->flags;
}

void view_record_dtl_gap(void *ctx, const struct vn_rec_dtl_gap *g)
{
	struct view_record *r = ctx;

	if (!r->dgap && !(r->dgap = malloc(RECORD_DTL_BUF * sizeof(*r->dgap))))
		return;
	if (r->ndgap == RECORD_DTL_BUF && view_record_flush(r))
		r->dropped++;
	if (r->ndgap < RECORD_DTL_BUF)
		r->dgap[r->ndgap++] = *g;
}

uint64_t view_record_dropped(const struct view_record *r)
{
	return r ? r->dropped : 0;
}

void view_record_error_text(const struct view_record *r, int err, const char *path, char *buf,
			    size_t len)
{
	snprintf(buf, len,
		 "writing '%s': %s; the file ends after %" PRIu64 " whole chunks (%" PRIu64
		 " bytes) and reads as not closed; %" PRIu64 " samples, %" PRIu64
		 " events and %" PRIu64 " DTL records not written",
		 path, strerror(err < 0 ? -err : err), recwriter_chunks(r->w),
		 recwriter_bytes(r->w), r->lost_samples + r->ns, r->lost_events + r->nev,
		 r->lost_dtl + r->ndspan + r->ndgap);
}

int view_record_seal(struct view_record *r, const struct view *v, const char *path, char *why,
		     size_t len)
{
	char *stats = NULL;
	int err;

	err = view_record_flush(r);
	if (!err)
		err = text_chunk(r, VN_CHUNK_STATS, v, stats_text, &stats);
	if (!err) {
		err = recwriter_close(r->w, stats);
		r->w = NULL;
		if (err && why && len)
			snprintf(
			    why, len,
			    "writing '%s': %s while closing it (every record and the STATS chunk "
			    "were written before)",
			    path, strerror(-err));
	} else {
		if (why && len)
			view_record_error_text(r, err, path, why, len);
		recwriter_abort(r->w);
		r->w = NULL;
	}
	free(stats);
	view_record_abort(r);
	return err;
}

void view_record_abort(struct view_record *r)
{
	if (!r)
		return;
	recwriter_abort(r->w);
	free(r->sbuf);
	free(r->evbuf);
	free(r->dspan);
	free(r->dgap);
	free(r->cause);
	free(r->ctext);
	free(r);
}
