/* SPDX-License-Identifier: MIT */
/*
 * remotewrite: the remote-write sender (see remotewrite.h). push() turns the text into a WriteRequest
 * (prompb), compresses it with snappy's block format (libsnappy's C API) and queues it; the sender thread
 * POSTs the oldest request with libcurl (one easy handle, kept-alive connection), and on a connection error,
 * 5xx or 429 waits (100 ms doubling to 5 s) and tries the same request again, so a series' samples reach the
 * receiver in time order. The queue holds at most buffer_bytes of compressed requests (the one being sent
 * included): a push that overflows it drops the oldest waiting ones, counted.
 *
 * Building blocks. The protobuf is encoded by hand (prompb.c): remote-write 1.0 is three small frozen
 * messages, and ~100 lines need no code generator, no runtime library and no allocation per message
 * (protobuf-c would add protoc-c to the build and a runtime for them). Snappy is Debian's libsnappy through
 * its C API (snappy-c.h): the block format the spec requires, from upstream, nothing to maintain here.
 * HTTP is Debian's libcurl: kept-alive connections, connect and transfer timeouts, a transfer that can be
 * aborted at stop, IPv6 and host names (resolved and cached by libcurl), and https or authentication later
 * by setting options rather than writing a client; a socket client of our own would be smaller but would
 * re-implement the parts that go wrong (partial reads, keep-alive, chunked answers). fluent-bit's cmetrics
 * has a remote-write encoder but is not packaged in Debian, bundles its own copies of these libraries and
 * would need our text converted into its metric model first.
 */
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <snappy-c.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "util/log.h"
#include "util/monotime.h"
#include "util/version.h"
#include "export/promfmt.h"
#include "export/prompb.h"
#include "export/remotewrite_priv.h"

struct rwreq {
	struct rwreq *next;
	size_t len; /* compressed bytes */
	uint64_t samples;
	uint8_t data[];
};

struct remotewrite {
	char *url;
	size_t cap; /* buffer_bytes */
	remotewrite_post_fn *post;
	void *post_ctx;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake; /* to the sender: work, or stop */
	pthread_cond_t idle; /* to remotewrite_stop: a request left the queue */
	struct rwreq *head, *tail; /* waiting, oldest first */
	struct rwreq *inflight; /* taken by the sender (counted as buffered until done) */
	bool drop_inflight; /* the buffer overflowed with only it to drop: drop it after this try */
	int stop; /* the sender leaves, aborting a transfer (atomic) */
	uint64_t flush_deadline_ns; /* 0, or remotewrite_stop's deadline (monotonic) */
	int failing; /* the last attempt: 0 delivered, 1 to retry, 2 refused (said once per change) */
	struct remotewrite_stats st;
	struct prompb_buf pb; /* push()'s scratch */
	/* the HTTP client, sender thread only */
	CURL *curl;
	struct curl_slist *hdrs;
	char curl_err[CURL_ERROR_SIZE];
	char reply[160]; /* the start of the receiver's answer (for the refusal warning) */
	size_t reply_len;
};

/* ---- the URL ---- */

int remotewrite_url_check(const char *url, char *err, size_t errlen)
{
	const char *h, *p;
	unsigned long port = 80;

	if (!url || strncmp(url, "http://", 7)) {
		log_reason(err, errlen, "not an http:// URL");
		return -EINVAL;
	}
	for (p = url; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f) {
			log_reason(err, errlen, "a space or control character in the URL");
			return -EINVAL;
		}
	h = url + 7;
	if (*h == '[') {
		p = strchr(h, ']');
		if (!p || p == h + 1) {
			log_reason(err, errlen, "an unclosed or empty [IPv6] address");
			return -EINVAL;
		}
		p++;
	} else {
		p = h + strcspn(h, ":/?#");
		if (p == h) {
			log_reason(err, errlen, "no host in the URL");
			return -EINVAL;
		}
	}
	if (*p == ':') {
		char *e;

		errno = 0;
		port = strtoul(p + 1, &e, 10);
		if (e == p + 1 || errno || port == 0 || port > 65535 || (*e && *e != '/')) {
			log_reason(err, errlen, "a bad port in the URL");
			return -EINVAL;
		}
		p = e;
	}
	if (*p && *p != '/') {
		log_reason(err, errlen, "the host must be followed by :PORT or a /path");
		return -EINVAL;
	}
	return 0;
}

/* ---- the HTTP client (libcurl) ---- */

static size_t keep_reply(char *data, size_t size, size_t n, void *arg)
{
	struct remotewrite *rw = arg;
	size_t room = sizeof(rw->reply) - 1 - rw->reply_len,
	       take = size * n < room ? size * n : room;

	memcpy(rw->reply + rw->reply_len, data, take);
	rw->reply_len += take;
	return size * n;
}

static int abort_on_stop(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct remotewrite *rw = arg;

	(void)a, (void)b, (void)c, (void)d;
	return __atomic_load_n(&rw->stop, __ATOMIC_RELAXED);
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int http_open(struct remotewrite *rw, char *err, size_t errlen)
{
	static const char *const hdr[] = {
		"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
		"X-Prometheus-Remote-Write-Version: 0.1.0",
		"Expect:", /* no 100-continue round trip */
	};
	char ua[64];

	pthread_once(&curl_once, curl_init);
	rw->curl = curl_init_rc == CURLE_OK ? curl_easy_init() : NULL;
	for (size_t i = 0; rw->curl && i < sizeof(hdr) / sizeof(hdr[0]); i++) {
		struct curl_slist *l = curl_slist_append(rw->hdrs, hdr[i]);

		if (!l)
			break;
		rw->hdrs = l;
	}
	if (!rw->curl || !rw->hdrs) {
		log_reason(err, errlen, "libcurl could not be initialised");
		return -ENOMEM;
	}
	snprintf(ua, sizeof(ua), "vnoise/%s", version_number());
	curl_easy_setopt(rw->curl, CURLOPT_URL, rw->url);
	curl_easy_setopt(rw->curl, CURLOPT_PROTOCOLS_STR, "http");
	curl_easy_setopt(rw->curl, CURLOPT_HTTPHEADER, rw->hdrs);
	curl_easy_setopt(rw->curl, CURLOPT_USERAGENT, ua); /* copied by libcurl */
	curl_easy_setopt(rw->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(rw->curl, CURLOPT_CONNECTTIMEOUT_MS, REMOTEWRITE_CONNECT_TIMEOUT_MS);
	curl_easy_setopt(rw->curl, CURLOPT_ERRORBUFFER, rw->curl_err);
	curl_easy_setopt(rw->curl, CURLOPT_WRITEFUNCTION, keep_reply);
	curl_easy_setopt(rw->curl, CURLOPT_WRITEDATA, rw);
	curl_easy_setopt(rw->curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(rw->curl, CURLOPT_XFERINFOFUNCTION, abort_on_stop);
	curl_easy_setopt(rw->curl, CURLOPT_XFERINFODATA, rw);
	return 0;
}

static int http_post(void *ctx, const uint8_t *body, size_t len, char *why, size_t whylen)
{
	struct remotewrite *rw = ctx;
	long timeout = REMOTEWRITE_REQUEST_TIMEOUT_MS, code = 0;
	uint64_t deadline = __atomic_load_n(&rw->flush_deadline_ns, __ATOMIC_RELAXED), t = now_ns();
	CURLcode rc;

	if (deadline) /* flushing: no request outlives remotewrite_stop's budget */
		timeout = deadline > t ? (long)((deadline - t) / 1000000) + 1 : 1;
	rw->reply_len = 0;
	rw->curl_err[0] = '\0';
	curl_easy_setopt(rw->curl, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(rw->curl, CURLOPT_POSTFIELDS, (const char *)body);
	curl_easy_setopt(rw->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	rc = curl_easy_perform(rw->curl);
	if (rc != CURLE_OK) {
		log_reason(why, whylen, "%s",
			   rw->curl_err[0] ? rw->curl_err : curl_easy_strerror(rc));
		return rc == CURLE_OUT_OF_MEMORY ? -ENOMEM : -ECONNREFUSED;
	}
	curl_easy_getinfo(rw->curl, CURLINFO_RESPONSE_CODE, &code);
	rw->reply[rw->reply_len] = '\0';
	for (size_t i = 0; i < rw->reply_len; i++)
		if ((unsigned char)rw->reply[i] < ' ' || (unsigned char)rw->reply[i] >= 0x7f)
			rw->reply[i] = ' ';
	log_reason(why, whylen, "HTTP %ld %s", code, rw->reply);
	return (int)code;
}

/* ---- the queue (under rw->lock) ---- */

/* A request leaves the buffer without being delivered. */
static void drop_req(struct remotewrite *rw, struct rwreq *r)
{
	rw->st.dropped_requests++;
	rw->st.dropped_samples += r->samples;
	rw->st.buffered_requests--;
	rw->st.buffered_bytes -= r->len;
	free(r);
}

static void enqueue(struct remotewrite *rw, struct rwreq *r)
{
	if (r->len > rw->cap) { /* it alone is too big */
		rw->st.dropped_requests++;
		rw->st.dropped_samples += r->samples;
		free(r);
		return;
	}
	r->next = NULL;
	if (rw->tail)
		rw->tail->next = r;
	else
		rw->head = r;
	rw->tail = r;
	rw->st.buffered_requests++;
	rw->st.buffered_bytes += r->len;
	while (rw->st.buffered_bytes > rw->cap && rw->head != r) {
		struct rwreq *old = rw->head;

		rw->head = old->next;
		drop_req(rw, old);
	}
	if (rw->st.buffered_bytes > rw->cap && rw->inflight)
		rw->drop_inflight = true;
	pthread_cond_signal(&rw->wake);
}

static void done_inflight(struct remotewrite *rw, bool delivered)
{
	struct rwreq *r = rw->inflight;

	rw->inflight = NULL;
	rw->drop_inflight = false;
	if (!delivered) {
		drop_req(rw, r);
	} else {
		rw->st.requests_sent++;
		rw->st.samples_sent += r->samples;
		rw->st.buffered_requests--;
		rw->st.buffered_bytes -= r->len;
		free(r);
	}
	pthread_cond_broadcast(&rw->idle);
}

/* ---- the sender thread ---- */

/* Sleep until t_ns (monotonic), remotewrite_stop's deadline or stop, whichever comes first. */
static void wait_until(struct remotewrite *rw, uint64_t t_ns)
{
	for (;;) {
		uint64_t d = rw->flush_deadline_ns, t = d && d < t_ns ? d : t_ns;
		struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

		if (rw->stop || now_ns() >= t)
			return;
		pthread_cond_timedwait(&rw->wake, &rw->lock, &ts);
	}
}

/* The outcome of one attempt (under the lock); *backoff_ns advanced. */
static void settle(struct remotewrite *rw, int code, const char *why, uint64_t *backoff_ns)
{
	bool retry = code < 0 || code == 429 || code >= 500;

	if (code >= 200 && code < 300) {
		if (rw->failing)
			log_info("remote write to %s: delivering again", rw->url);
		rw->failing = 0;
		*backoff_ns = REMOTEWRITE_BACKOFF_MIN_NS;
		done_inflight(rw, true);
		return;
	}
	if (rw->failing != (retry ? 1 : 2))
		log_warn("remote write to %s: %s: %s", rw->url, why,
			 retry ? "retrying (the requests stay buffered)"
			       : "refused: dropped (counted)");
	rw->failing = retry ? 1 : 2;
	if (!retry || rw->drop_inflight) {
		done_inflight(rw, false);
		return;
	}
	rw->st.retries++;
	wait_until(rw, now_ns() + *backoff_ns);
	*backoff_ns = *backoff_ns * 2 > REMOTEWRITE_BACKOFF_MAX_NS ? REMOTEWRITE_BACKOFF_MAX_NS
								   : *backoff_ns * 2;
}

static void *sender(void *arg)
{
	struct remotewrite *rw = arg;
	uint64_t backoff = REMOTEWRITE_BACKOFF_MIN_NS;
	sigset_t all;

	sigfillset(&all); /* the caller's signal handlers run in its own threads */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	pthread_mutex_lock(&rw->lock);
	while (!rw->stop) {
		char why[256] = "";
		struct rwreq *r;
		int code;

		if (!rw->inflight && !rw->head) {
			pthread_cond_wait(&rw->wake, &rw->lock);
			continue;
		}
		if (!rw->inflight) {
			rw->inflight = rw->head;
			rw->head = rw->head->next;
			if (!rw->head)
				rw->tail = NULL;
		}
		r = rw->inflight;
		pthread_mutex_unlock(&rw->lock);
		code = rw->post(rw->post_ctx, r->data, r->len, why, sizeof(why));
		pthread_mutex_lock(&rw->lock);
		if (rw->stop && code < 0)
			break; /* aborted by remotewrite_stop: counted there */
		settle(rw, code, why, &backoff);
	}
	pthread_mutex_unlock(&rw->lock);
	return NULL;
}

/* ---- the API ---- */

static void rw_free(struct remotewrite *rw)
{
	if (!rw)
		return;
	if (rw->curl)
		curl_easy_cleanup(rw->curl);
	curl_slist_free_all(rw->hdrs);
	prompb_buf_free(&rw->pb);
	pthread_cond_destroy(&rw->wake);
	pthread_cond_destroy(&rw->idle);
	pthread_mutex_destroy(&rw->lock);
	free(rw->url);
	free(rw);
}

static int rw_init(struct remotewrite *rw, const struct remotewrite_cfg *cfg)
{
	pthread_condattr_t ca;

	rw->url = strdup(cfg->url);
	rw->cap = cfg->buffer_bytes ? cfg->buffer_bytes : REMOTEWRITE_DEFAULT_BUFFER;
	pthread_mutex_init(&rw->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rw->wake, &ca);
	pthread_cond_init(&rw->idle, &ca);
	pthread_condattr_destroy(&ca);
	return rw->url ? 0 : -ENOMEM;
}

struct remotewrite *remotewrite_start_with(const struct remotewrite_cfg *cfg,
					   remotewrite_post_fn *post, void *ctx, char *err,
					   size_t errlen)
{
	struct remotewrite *rw = NULL;
	int rc = remotewrite_url_check(cfg->url, err, errlen);

	if (rc)
		goto out;
	rc = -ENOMEM;
	rw = calloc(1, sizeof(*rw));
	if (!rw || rw_init(rw, cfg)) {
		log_reason(err, errlen, "out of memory");
		goto out;
	}
	rw->post = post ? post : http_post;
	rw->post_ctx = post ? ctx : rw;
	if (!post) {
		rc = http_open(rw, err, errlen);
		if (rc)
			goto out;
	}
	rc = -pthread_create(&rw->thread, NULL, sender, rw);
	if (rc) {
		log_reason(err, errlen, "cannot start the sender thread: %s", strerror(-rc));
		goto out;
	}
	rw->started = true;
out:
	if (rc) {
		rw_free(rw);
		errno = -rc;
		return NULL;
	}
	return rw;
}

struct remotewrite *remotewrite_start(const struct remotewrite_cfg *cfg, char *err, size_t errlen)
{
	return remotewrite_start_with(cfg, NULL, NULL, err, errlen);
}

/* The compressed request of a WriteRequest (NULL: out of memory). */
static struct rwreq *compress_req(const struct prompb_buf *pb, uint64_t samples)
{
	size_t max = snappy_max_compressed_length(pb->len);
	struct rwreq *r = malloc(sizeof(*r) + max);

	if (!r)
		return NULL;
	r->len = max;
	r->samples = samples;
	if (snappy_compress((const char *)pb->p, pb->len, (char *)r->data, &r->len) != SNAPPY_OK) {
		free(r);
		return NULL;
	}
	return r;
}

int remotewrite_push(struct remotewrite *rw, const char *text, size_t len, int64_t ts_ms)
{
	struct prompb_counts c;
	struct rwreq *r = NULL;
	int rc;

	if (!rw)
		return -EINVAL;
	rw->pb.len = 0;
	rc = prompb_write_request(&rw->pb, text, len, ts_ms, &c);
	if (!rc && c.samples)
		r = compress_req(&rw->pb, c.samples);
	pthread_mutex_lock(&rw->lock);
	rw->st.pushes++;
	rw->st.parse_errors += c.bad_lines;
	rw->st.duplicate_samples += c.duplicates;
	if (r) {
		enqueue(rw, r);
	} else if (c.samples) {
		rw->st.dropped_requests++;
		rw->st.dropped_samples += c.samples;
		rc = -ENOMEM;
	}
	pthread_mutex_unlock(&rw->lock);
	return rc;
}

void remotewrite_stats(const struct remotewrite *rw, struct remotewrite_stats *st)
{
	pthread_mutex_t *lock =
	    (pthread_mutex_t *)&rw->lock; /* the counters are read consistently */

	pthread_mutex_lock(lock);
	*st = rw->st;
	pthread_mutex_unlock(lock);
}

int remotewrite_render_prom(const struct remotewrite *rw, const char *prefix, struct bufout *o)
{
	struct remotewrite_stats s;

	if (!rw)
		return 0;
	remotewrite_stats(rw, &s);
	const struct {
		const char *name, *type, *help;
		uint64_t v;
	} f[] = {
		{ "pushes_total", "counter", "Snapshots given to the remote-write sender.",
		  s.pushes },
		{ "requests_total", "counter",
		  "Remote-write requests accepted by the receiver (2xx).", s.requests_sent },
		{ "samples_total", "counter", "Samples in the requests the receiver accepted.",
		  s.samples_sent },
		{ "retries_total", "counter",
		  "Remote-write POSTs that failed (connection error, 5xx, 429) and were tried "
		  "again.",
		  s.retries },
		{ "dropped_requests_total", "counter",
		  "Remote-write requests not delivered: buffer full, refused (4xx) or left at "
		  "exit.",
		  s.dropped_requests },
		{ "dropped_samples_total", "counter",
		  "Samples in the dropped remote-write requests.", s.dropped_samples },
		{ "parse_errors_total", "counter",
		  "Exposition lines that were not samples (not sent).", s.parse_errors },
		{ "duplicate_samples_total", "counter",
		  "Series met twice in one snapshot: the later sample was not sent.",
		  s.duplicate_samples },
		{ "buffered_requests", "gauge", "Remote-write requests waiting to be delivered.",
		  s.buffered_requests },
		{ "buffered_bytes", "gauge",
		  "Bytes (compressed) of the requests waiting to be delivered.", s.buffered_bytes },
		{ "buffer_limit_bytes", "gauge", "The bound of the remote-write buffer.", rw->cap },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		char name[128];

		snprintf(name, sizeof(name), "%s_remote_write_%s", prefix, f[i].name);
		promfmt_family(o, name, f[i].type, f[i].help);
		promfmt_sample_u64(o, name, NULL, 0, f[i].v);
	}
	return bufout_result(o) < 0 ? -ENOSPC : 0;
}

void remotewrite_stop(struct remotewrite *rw, uint64_t flush_ns)
{
	uint64_t left_req = 0, left_samples = 0;

	if (!rw)
		return;
	pthread_mutex_lock(&rw->lock);
	__atomic_store_n(&rw->flush_deadline_ns, now_ns() + flush_ns, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&rw->wake); /* a backoff wait shortens to the deadline */
	while ((rw->inflight || rw->head) && now_ns() < rw->flush_deadline_ns) {
		struct timespec ts = { (time_t)(rw->flush_deadline_ns / 1000000000ull),
				       (long)(rw->flush_deadline_ns % 1000000000ull) };

		pthread_cond_timedwait(&rw->idle, &rw->lock, &ts);
	}
	__atomic_store_n(&rw->stop, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&rw->wake);
	pthread_mutex_unlock(&rw->lock);
	if (rw->started)
		pthread_join(rw->thread, NULL);
	if (rw->inflight) {
		left_req++;
		left_samples += rw->inflight->samples;
		drop_req(rw, rw->inflight);
		rw->inflight = NULL;
	}
	while (rw->head) {
		struct rwreq *r = rw->head;

		rw->head = r->next;
		left_req++;
		left_samples += r->samples;
		drop_req(rw, r);
	}
	if (left_req)
		log_warn("remote write to %s: %" PRIu64 " requests (%" PRIu64
			 " samples) not delivered at exit (counted as dropped)",
			 rw->url, left_req, left_samples);
	log_info("remote write to %s: %" PRIu64 " requests (%" PRIu64
		 " samples) delivered, %" PRIu64 " retries, %" PRIu64 " requests (%" PRIu64
		 " samples) dropped",
		 rw->url, rw->st.requests_sent, rw->st.samples_sent, rw->st.retries,
		 rw->st.dropped_requests, rw->st.dropped_samples);
	rw_free(rw);
}
