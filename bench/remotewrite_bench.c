/* SPDX-License-Identifier: MIT */
/*
 * remotewrite_bench: the cost of Prometheus remote-write (remote-write series/s).
 * A collector-like exposition text (per node: datagram, interval, noise, class, source, compute and rank
 * families, labels job and node, written with promfmt) is
 *   1. encoded on one core: parse + protobuf (prompb_write_request) and snappy block compression, timed
 *      apart (thread CPU time), as series/s;
 *   2. sent end to end: remotewrite_start to an HTTP/1.1 sink on loopback (a thread that reads each POST
 *      and answers 204), E snapshots pushed, timed until the sender has had all of them accepted (wall
 *      time and the process's CPU time, sink included).
 *
 *   remotewrite_bench [-n NODES] [-i ENCODE_ITERATIONS] [-e PUSHES]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "export/promfmt.h"
#include "export/prompb.h"
#include "export/remotewrite.h"
#include "util/parse.h"

#define S 1000000000ULL

static uint64_t clk(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

/* One node's families (as many series as clusteragg writes for a node with 8 sources). */
static void node_text(struct bufout *o, uint32_t n)
{
	static const char *const cls[] = { "irq", "softirq", "thread", "hypervisor", "nmi" };
	static const char *const comms[] = { "kworker/0:1",	"ksoftirqd/0",	  "rcu_preempt",
					     "migration/0",	"irq/24-nvme0q1", "sshd",
					     "systemd-journal", "other" };
	static const char *const plain[] = { "vnoise_node_datagrams_total",
					     "vnoise_node_lost_datagrams_total",
					     "vnoise_node_noise_seconds_total",
					     "vnoise_node_hypervisor_seconds_total",
					     "vnoise_node_compute_seconds_total",
					     "vnoise_node_temporal_cv",
					     "vnoise_node_mean_delay_seconds",
					     "vnoise_node_slowest_total",
					     "vnoise_node_slow_rank",
					     "vnoise_node_sampled_slots_total",
					     "vnoise_node_sampled",
					     "vnoise_node_excluded" };
	char node[16];
	struct promfmt_label l[4] = { { "job", "884e494e943ba46d", SIZE_MAX },
				      { "node", node, SIZE_MAX } };

	snprintf(node, sizeof(node), "%" PRIu32, n);
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		promfmt_sample(o, plain[i], l, 2, n * 1.000001 + (double)i / 7);
	l[2].name = "kind";
	l[2].value = "sampled";
	promfmt_sample_u64(o, "vnoise_node_intervals_total", l, 3, 1000 + n);
	l[2].value = "counters";
	promfmt_sample_u64(o, "vnoise_node_intervals_total", l, 3, 9000 + n);
	l[2].name = "class";
	for (size_t c = 0; c < 5; c++) {
		l[2].value = cls[c];
		promfmt_sample(o, "vnoise_node_class_noise_seconds_total", l, 3,
			       0.001 * (double)(n + c));
	}
	l[2].value = "thread";
	l[3].name = "source";
	for (size_t c = 0; c < 8; c++) {
		l[3].value = comms[c];
		promfmt_sample(o, "vnoise_node_source_noise_seconds_total", l, 4,
			       0.0001 * (double)(n * c));
	}
}

static char *make_text(uint32_t nodes, size_t *len)
{
	size_t cap = 4096 + (size_t)nodes * 8192;
	char *buf = malloc(cap);
	struct bufout o = { buf, cap, 0, 0 };

	if (!buf)
		return NULL;
	promfmt_family(&o, "vnoise_node_datagrams_total", "counter", "Datagrams used, per node");
	for (uint32_t n = 1; n <= nodes; n++)
		node_text(&o, n);
	if (bufout_result(&o) < 0) {
		free(buf);
		return NULL;
	}
	*len = o.off;
	return buf;
}

/* ---- 1: encode on one core ---- */

static int bench_encode(const char *text, size_t len, uint32_t iters)
{
	struct prompb_buf pb = { 0 };
	struct prompb_counts c = { 0 };
	uint64_t t_pb = 0, t_z = 0;
	size_t zmax, zlen = 0;
	char *z = NULL;

	for (uint32_t i = 0; i < iters; i++) {
		uint64_t t0 = clk(CLOCK_THREAD_CPUTIME_ID), t1, t2;

		pb.len = 0;
		if (prompb_write_request(&pb, text, len, 1700000000000LL + i, &c))
			return -ENOMEM;
		t1 = clk(CLOCK_THREAD_CPUTIME_ID);
		zmax = snappy_max_compressed_length(pb.len);
		if (!z)
			z = malloc(zmax + 1024);
		zlen = zmax;
		if (!z || snappy_compress((char *)pb.p, pb.len, z, &zlen) != SNAPPY_OK)
			return -ENOMEM;
		t2 = clk(CLOCK_THREAD_CPUTIME_ID);
		t_pb += t1 - t0;
		t_z += t2 - t1;
	}
	printf("snapshot: %" PRIu64
	       " series, %zu bytes of text -> %zu bytes protobuf -> %zu bytes snappy"
	       " (%.1f x)\n",
	       c.samples, len, pb.len, zlen, (double)pb.len / (double)zlen);
	printf("encode, one core: parse+protobuf %.0f ns/series, snappy %.0f ns/series: %.2f M "
	       "series/s"
	       " (%.2f ms per snapshot)\n",
	       (double)t_pb / (double)(c.samples * iters),
	       (double)t_z / (double)(c.samples * iters),
	       (double)(c.samples * iters) / ((double)(t_pb + t_z) / 1e9) / 1e6,
	       (double)(t_pb + t_z) / iters / 1e6);
	free(z);
	prompb_buf_free(&pb);
	return 0;
}

/* ---- 2: end to end to an HTTP sink ---- */

struct sink {
	int lfd;
	uint16_t port;
	uint64_t requests, bytes;
};

/* Read one request (headers, Content-Length body) from fd: 0, or -1 at EOF/error. */
static int sink_one(int fd, struct sink *s)
{
	static char buf[1 << 16];
	size_t got = 0, body, need;
	char *end = NULL, *cl;
	ssize_t n;

	while (!end) {
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (!end && got >= sizeof(buf) - 1)
			return -1;
	}
	cl = strcasestr(buf, "\r\nContent-Length:");
	need = cl ? strtoul(cl + 17, NULL, 10) : 0;
	body = got - (size_t)(end + 4 - buf);
	while (body < need) {
		n = read(fd, buf, sizeof(buf) < need - body ? sizeof(buf) : need - body);
		if (n <= 0)
			return -1;
		body += (size_t)n;
	}
	s->requests++;
	s->bytes += need;
	static const char ok[] = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
	return write(fd, ok, sizeof(ok) - 1) == (ssize_t)sizeof(ok) - 1 ? 0 : -1;
}

static void *sink_run(void *arg)
{
	struct sink *s = arg;

	for (;;) {
		int fd = accept(s->lfd, NULL, NULL);

		if (fd < 0)
			return NULL;
		while (!sink_one(fd, s))
			;
		close(fd);
	}
}

static int sink_start(struct sink *s, pthread_t *th)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(s->lfd, 4) ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl))
		return -errno;
	s->port = ntohs(sa.sin_port);
	return -pthread_create(th, NULL, sink_run, s);
}

static int bench_e2e(const char *text, size_t len, uint32_t pushes)
{
	struct sink s = { 0 };
	pthread_t th;
	char url[64], err[256];
	struct remotewrite_cfg cfg = { .url = url };
	struct remotewrite *rw;
	struct remotewrite_stats st;
	uint64_t w0, c0, w1, c1;

	if (sink_start(&s, &th))
		return -1;
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/api/v1/write", s.port);
	rw = remotewrite_start(&cfg, err, sizeof(err));
	if (!rw) {
		fprintf(stderr, "remotewrite_start: %s\n", err);
		return -1;
	}
	w0 = clk(CLOCK_MONOTONIC);
	c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
	for (uint32_t i = 0; i < pushes; i++)
		if (remotewrite_push(rw, text, len, 1700000000000LL + i))
			return -1;
	do {
		struct timespec ts = { 0, 100000 };

		nanosleep(&ts, NULL);
		remotewrite_stats(rw, &st);
	} while (st.requests_sent + st.dropped_requests < pushes);
	w1 = clk(CLOCK_MONOTONIC);
	c1 = clk(CLOCK_PROCESS_CPUTIME_ID);
	printf(
	    "end to end (push, encode, snappy, libcurl POST, loopback sink answering 204): %" PRIu64
	    " requests, %" PRIu64 " samples accepted, %" PRIu64 " dropped, %" PRIu64
	    " bytes posted\n",
	    st.requests_sent, st.samples_sent, st.dropped_samples, s.bytes);
	printf("  %.2f M series/s wall, %.2f M series/s per CPU second (process, sink included);"
	       " %.2f ms CPU per snapshot\n",
	       (double)st.samples_sent / ((double)(w1 - w0) / 1e9) / 1e6,
	       (double)st.samples_sent / ((double)(c1 - c0) / 1e9) / 1e6,
	       (double)(c1 - c0) / pushes / 1e6);
	remotewrite_stop(rw, S);
	shutdown(s.lfd, SHUT_RDWR);
	close(s.lfd);
	pthread_join(th, NULL);
	return 0;
}

static int opt_u32(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	uint64_t v;

	if (parse_u64(s, &v) || v < lo || v > hi)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t nodes = 1000, iters = 50, pushes = 50;
	size_t len = 0;
	char *text;
	int c;

	while ((c = getopt(argc, argv, "n:i:e:")) != -1) {
		if ((c == 'n' && opt_u32(optarg, 1, 100000, &nodes)) ||
		    (c == 'i' && opt_u32(optarg, 1, 1000000, &iters)) ||
		    (c == 'e' && opt_u32(optarg, 1, 100000, &pushes)) || c == '?') {
			fprintf(stderr, "usage: %s [-n NODES] [-i ENCODE_ITERATIONS] [-e PUSHES]\n",
				argv[0]);
			return 2;
		}
	}
	printf("# remotewrite_bench -n %" PRIu32 " -i %" PRIu32 " -e %" PRIu32 "\n", nodes, iters,
	       pushes);
	text = make_text(nodes, &len);
	if (!text) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	if (bench_encode(text, len, iters) || bench_e2e(text, len, pushes)) {
		fprintf(stderr, "remotewrite_bench failed\n");
		free(text);
		return 1;
	}
	free(text);
	return 0;
}
