/* SPDX-License-Identifier: MIT */
/*
 * Unit tests for host/export/remotewrite with a fake receiver in place of the HTTP client
 * (remotewrite_start_with): the body is the snappy block of prompb's WriteRequest (snappy_uncompress
 * round-trip), 2xx delivers, connection errors / 5xx / 429 are retried in order, other 4xx are dropped and
 * counted, the buffer's bound drops the oldest waiting requests first (then the one being retried), a
 * request bigger than the buffer is dropped, stop gives up after its flush budget and counts what is left,
 * the counters' families, and the URL check. The real HTTP path is tests/integration/remote_write.sh.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/monotime.h"
#include "export/promfmt.h"
#include "export/promfmt_priv.h"
#include "export/prompb.h"
#include "export/remotewrite_priv.h"

#define TEXT "# TYPE a_total counter\na_total{node=\"1\"} 5\na_total{node=\"2\"} 6\nbad\n"
#define NSAMPLES 2

/* The fake receiver: answers from a script (the last entry repeats), blocks while the gate is closed. */
struct fake {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const int *script;
	size_t nscript, entered, calls; /* attempts begun, and answered */
	int gate_closed;
	int64_t delivered_ts[64];
	size_t ndelivered;
	char body[4096];
	size_t body_len;
};

static struct fake fk;

static void fake_reset(const int *script, size_t n, int gate_closed)
{
	pthread_mutex_lock(&fk.lock);
	fk.script = script;
	fk.nscript = n;
	fk.entered = 0;
	fk.calls = 0;
	fk.gate_closed = gate_closed;
	fk.ndelivered = 0;
	pthread_mutex_unlock(&fk.lock);
}

static void fake_open_gate(void)
{
	pthread_mutex_lock(&fk.lock);
	fk.gate_closed = 0;
	pthread_cond_broadcast(&fk.cond);
	pthread_mutex_unlock(&fk.lock);
}

/* The timestamp of the last sample: the body's last varint (one byte: ts < 128). */
static int fake_post(void *ctx, const uint8_t *body, size_t len, char *why, size_t whylen)
{
	size_t n = 0;
	int code;

	(void)ctx;
	snprintf(why, whylen, "fake");
	pthread_mutex_lock(&fk.lock);
	fk.entered++;
	while (fk.gate_closed)
		pthread_cond_wait(&fk.cond, &fk.lock);
	code = fk.script[fk.calls < fk.nscript ? fk.calls : fk.nscript - 1];
	ck_assert_int_eq(snappy_uncompressed_length((const char *)body, len, &n), SNAPPY_OK);
	ck_assert_uint_le(n, sizeof(fk.body));
	fk.body_len = n;
	ck_assert_int_eq(snappy_uncompress((const char *)body, len, fk.body, &fk.body_len),
			 SNAPPY_OK);
	if (code >= 200 && code < 300 && fk.ndelivered < 64)
		fk.delivered_ts[fk.ndelivered++] = fk.body[fk.body_len - 1];
	fk.calls++;
	pthread_mutex_unlock(&fk.lock);
	return code;
}

static struct remotewrite *start(size_t buffer)
{
	struct remotewrite_cfg cfg = { .url = "http://127.0.0.1:9/api/v1/write",
				       .buffer_bytes = buffer };
	char err[128];
	struct remotewrite *rw = remotewrite_start_with(&cfg, fake_post, NULL, err, sizeof(err));

	ck_assert_msg(rw != NULL, "start: %s", err);
	return rw;
}

static void push(struct remotewrite *rw, int64_t ts)
{
	ck_assert_int_eq(remotewrite_push(rw, TEXT, strlen(TEXT), ts), 0);
}

/* Wait (at most 5 s) until the fake has answered (or, begun) calls attempts. */
static void wait_for(const size_t *counter, size_t calls)
{
	uint64_t end = now_ns() + 5000000000ull;

	for (;;) {
		size_t c;

		pthread_mutex_lock(&fk.lock);
		c = *counter;
		pthread_mutex_unlock(&fk.lock);
		if (c >= calls)
			return;
		ck_assert_msg(now_ns() < end, "the sender made %zu attempts, want %zu", c, calls);
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
}

static void wait_calls(size_t calls)
{
	wait_for(&fk.calls, calls);
}

static void wait_entered(size_t calls)
{
	wait_for(&fk.entered, calls);
}

START_TEST(test_deliver_and_bytes)
{
	static const int ok[] = { 204 };
	struct remotewrite *rw;
	struct remotewrite_stats st;
	struct prompb_buf want = { 0 };
	struct prompb_counts c;

	fake_reset(ok, 1, 0);
	rw = start(0);
	push(rw, 1);
	push(rw, 2);
	push(rw, 3);
	wait_calls(3);
	remotewrite_stats(rw, &st);
	ck_assert_uint_eq(st.pushes, 3);
	ck_assert_uint_eq(st.parse_errors, 3); /* "bad" once per push */
	ck_assert_uint_eq(st.requests_sent, 3);
	ck_assert_uint_eq(st.samples_sent, 3 * NSAMPLES);
	ck_assert_uint_eq(
	    st.buffered_requests + st.buffered_bytes + st.dropped_requests + st.retries, 0);
	/* the body is the snappy block of prompb's bytes */
	ck_assert_int_eq(prompb_write_request(&want, TEXT, strlen(TEXT), 3, &c), 0);
	ck_assert_uint_eq(fk.body_len, want.len);
	ck_assert_mem_eq(fk.body, want.p, want.len);
	ck_assert_int_eq(fk.delivered_ts[0] * 100 + fk.delivered_ts[1] * 10 + fk.delivered_ts[2],
			 123);
	prompb_buf_free(&want);
	remotewrite_stop(rw, 1000000000ull);
}
END_TEST

START_TEST(test_retry_in_order)
{
	static const int script[] = { -ECONNREFUSED, 503, 429, 200 };
	struct remotewrite *rw;
	struct remotewrite_stats st;
	uint64_t t0 = now_ns();

	fake_reset(script, 4, 0);
	rw = start(0);
	push(rw, 1);
	push(rw, 2);
	wait_calls(5);
	remotewrite_stop(rw, 2000000000ull); /* both delivered by now: stop returns at once */
	ck_assert_uint_eq(fk.ndelivered, 2);
	ck_assert_int_eq(fk.delivered_ts[0], 1);
	ck_assert_int_eq(fk.delivered_ts[1], 2);
	/* backoff 100 + 200 + 400 ms before the 4th attempt */
	ck_assert_uint_ge(now_ns() - t0, 700000000ull);
	(void)st;
}
END_TEST

START_TEST(test_refused_dropped)
{
	static const int script[] = { 400, 200 };
	struct remotewrite *rw;
	struct remotewrite_stats st;

	fake_reset(script, 2, 0);
	rw = start(0);
	push(rw, 1);
	push(rw, 2);
	wait_calls(2);
	remotewrite_stop(rw, 1000000000ull);
	ck_assert_uint_eq(fk.ndelivered, 1);
	ck_assert_int_eq(fk.delivered_ts[0], 2);
	(void)st;
}
END_TEST

/* Every counter, read just before stop. */
static void stats_after(size_t calls, struct remotewrite *rw, struct remotewrite_stats *st)
{
	wait_calls(calls);
	remotewrite_stats(rw, st);
}

START_TEST(test_refused_counted)
{
	static const int script[] = { 404 };
	struct remotewrite *rw;
	struct remotewrite_stats st;

	fake_reset(script, 1, 0);
	rw = start(0);
	push(rw, 1);
	stats_after(1, rw, &st);
	for (int i = 0; i < 500 && st.dropped_requests == 0; i++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
		remotewrite_stats(rw, &st);
	}
	ck_assert_uint_eq(st.dropped_requests, 1);
	ck_assert_uint_eq(st.dropped_samples, NSAMPLES);
	ck_assert_uint_eq(st.retries, 0);
	ck_assert_uint_eq(st.buffered_requests, 0);
	remotewrite_stop(rw, 1000000000ull);
}
END_TEST

/* The bound: 3.5 requests' room; the sender is stuck on the first; 10 pushes keep the first and the last 2. */
START_TEST(test_bound)
{
	static const int script[] = { 200 };
	struct remotewrite *rw;
	struct remotewrite_stats st;
	struct prompb_buf pb = { 0 };
	struct prompb_counts c;
	size_t l, max;

	/* the size of one request, as push makes it */
	ck_assert_int_eq(prompb_write_request(&pb, TEXT, strlen(TEXT), 1, &c), 0);
	max = snappy_max_compressed_length(pb.len);
	{
		char *z = malloc(max);

		l = max;
		ck_assert_int_eq(snappy_compress((char *)pb.p, pb.len, z, &l), SNAPPY_OK);
		free(z);
	}
	prompb_buf_free(&pb);
	fake_reset(script, 1, 1);
	rw = start(3 * l + l / 2);
	for (int ts = 1; ts <= 10; ts++) {
		push(rw, ts);
		if (ts == 1)
			wait_entered(1); /* the sender holds request 1 */
	}
	remotewrite_stats(rw, &st);
	ck_assert_uint_eq(st.buffered_requests, 3);
	ck_assert_uint_eq(st.buffered_bytes, 3 * l);
	ck_assert_uint_eq(st.dropped_requests, 7);
	ck_assert_uint_eq(st.dropped_samples, 7 * NSAMPLES);
	fake_open_gate();
	wait_calls(3);
	remotewrite_stop(rw, 2000000000ull);
	ck_assert_uint_eq(fk.ndelivered, 3);
	ck_assert_int_eq(fk.delivered_ts[0], 1);
	ck_assert_int_eq(fk.delivered_ts[1], 9);
	ck_assert_int_eq(fk.delivered_ts[2], 10);

	/* room for 1.5: the request being retried goes when a newer one would not fit */
	{
		static const int fail_then_ok[] = { 503, 200 };

		fake_reset(fail_then_ok, 2, 1);
		rw = start(l + l / 2);
		push(rw, 1);
		wait_entered(1);
		push(rw, 2); /* request 1 is in flight: marked, dropped after this attempt fails */
		fake_open_gate();
		wait_calls(2);
		remotewrite_stats(rw, &st);
		remotewrite_stop(rw, 2000000000ull);
		ck_assert_uint_eq(st.dropped_requests, 1);
		ck_assert_uint_eq(fk.ndelivered, 1);
		ck_assert_int_eq(fk.delivered_ts[0], 2);
	}
	/* bigger than the whole buffer: dropped at once */
	fake_reset(script, 1, 0);
	rw = start(8);
	push(rw, 1);
	remotewrite_stats(rw, &st);
	ck_assert_uint_eq(st.dropped_requests, 1);
	ck_assert_uint_eq(st.buffered_requests, 0);
	remotewrite_stop(rw, 0);
}
END_TEST

START_TEST(test_stop_budget)
{
	static const int down[] = { -ECONNREFUSED };
	struct remotewrite *rw;
	uint64_t t0;

	fake_reset(down, 1, 0);
	rw = start(0);
	push(rw, 1);
	push(rw, 2);
	wait_calls(1);
	t0 = now_ns();
	remotewrite_stop(rw, 300000000ull); /* counts both as dropped, says so, frees */
	ck_assert_uint_lt(now_ns() - t0, 1000000000ull);
	ck_assert_uint_ge(now_ns() - t0, 250000000ull);
	ck_assert_uint_eq(fk.ndelivered, 0);
	remotewrite_stop(NULL, 0);
}
END_TEST

START_TEST(test_render)
{
	static const int script[] = { 400 };
	static char buf[8192];
	struct bufout o = { buf, sizeof(buf), 0, 0 };
	struct remotewrite *rw;
	struct remotewrite_stats st;
	char *line;
	int n = 0;

	fake_reset(script, 1, 0);
	rw = start(0);
	push(rw, 1);
	stats_after(1, rw, &st);
	for (int i = 0; i < 500 && !st.dropped_requests; i++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
		remotewrite_stats(rw, &st);
	}
	ck_assert_int_eq(remotewrite_render_prom(rw, "vnoise_collect", &o), 0);
	ck_assert_ptr_nonnull(
	    strstr(buf, "\nvnoise_collect_remote_write_dropped_samples_total 2\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nvnoise_collect_remote_write_pushes_total 1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\nvnoise_collect_remote_write_parse_errors_total 1\n"));
	ck_assert_ptr_nonnull(
	    strstr(buf, "# TYPE vnoise_collect_remote_write_buffered_bytes gauge\n"));
	for (line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char name[128];

		if (line[0] == '#')
			continue;
		ck_assert_int_eq(sscanf(line, "%127s", name), 1);
		ck_assert_msg(promfmt_name_ok(name), "bad name %s", name);
		n++;
	}
	ck_assert_int_eq(n, 11);
	/* a full buffer says so; NULL writes nothing */
	o = (struct bufout){ buf, 64, 0, 0 };
	ck_assert_int_eq(remotewrite_render_prom(rw, "vnoise_collect", &o), -ENOSPC);
	o = (struct bufout){ buf, sizeof(buf), 0, 0 };
	ck_assert_int_eq(remotewrite_render_prom(NULL, "x", &o), 0);
	ck_assert_uint_eq(o.off, 0);
	remotewrite_stop(rw, 0);
}
END_TEST

START_TEST(test_url)
{
	static const char *const good[] = { "http://127.0.0.1:9090/api/v1/write", "http://host/x",
					    "http://[::1]:9/x", "http://h", "http://h:65535" };
	static const char *const bad[] = { "https://x/",
					   "http://",
					   "http://:80/",
					   "http://h:0/",
					   "http://h:99999",
					   "http://h:12x/",
					   "http://a b/",
					   "http://[::1/x",
					   "http://h?x",
					   "ftp://h/",
					   "" };
	struct remotewrite_cfg cfg = { .url = "http://h:0/" };
	char err[128];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(remotewrite_url_check(good[i], err, sizeof(err)) == 0, "%s: %s",
			      good[i], err);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(remotewrite_url_check(bad[i], err, sizeof(err)) == -EINVAL,
			      "%s taken", bad[i]);
		ck_assert_msg(err[0] && !strchr(err, '\n'), "%s: no one-line reason", bad[i]);
	}
	errno = 0;
	ck_assert_ptr_null(remotewrite_start(&cfg, err, sizeof(err)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "port"));
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("remotewrite");
	TCase *t = tcase_create("send");

	tcase_set_timeout(t, 20);
	tcase_add_test(t, test_deliver_and_bytes);
	tcase_add_test(t, test_retry_in_order);
	tcase_add_test(t, test_refused_dropped);
	tcase_add_test(t, test_refused_counted);
	tcase_add_test(t, test_stop_budget);
	suite_add_tcase(s, t);
	t = tcase_create("buffer");
	tcase_set_timeout(t, 20);
	tcase_add_test(t, test_bound);
	suite_add_tcase(s, t);
	t = tcase_create("api");
	tcase_add_test(t, test_render);
	tcase_add_test(t, test_url);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	pthread_mutex_init(&fk.lock, NULL);
	pthread_cond_init(&fk.cond, NULL);
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
