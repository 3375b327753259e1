/* SPDX-License-Identifier: MIT */
/*
 * node_send_bench: what the reporting rank pays per interval under `vnoise-guest mpi --collector`:
 * node_send_report() (records from the pipeline slot, seal with HMAC-SHA256, send()) over a real loopback UDP
 * socket to a receiving socket this program drains, for 2, 8 and 64 ranks, counters only and in detail,
 * next to the JSON line of the other outputs (pipeline_json() + write() to /dev/null). On loopback the
 * receiver's kernel path runs inside send(), so the figure includes it. Median of repeats; figures only.
 *   build/bench/node_send_bench [REPORTS [REPEATS]]
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "lib/benchutil.h"
#include "mpi/pipeline.h"
#include "cluster/node_send.h"

static struct vn_pipe P;

/* Interval n with k ranks, noise in three classes and a thread cause, closed and filtered. */
static void make_interval(uint64_t n, unsigned k)
{
	for (unsigned i = 0; i < k; i++) {
		struct vn_pipe_iv *r = &pipeline_slot(&P, n)->r[i];

		memset(r, 0, sizeof(*r));
		r->interval = n + 1;
		r->start_ns = 1000000 * n;
		r->end_ns = r->start_ns + 900000 + 1000 * i;
		r->noise_ns[VN_CLASS_IRQ] = 1000 + i;
		r->noise_ns[VN_CLASS_SOFTIRQ] = 2000;
		r->noise_ns[VN_CLASS_THREAD] = 5000 * (i == 1);
		r->cause_ns = r->noise_ns[VN_CLASS_THREAD];
		r->cause_cls = i == 1 ? VN_CLASS_THREAD : VN_CLASS_NONE;
		r->cause_id = 4242;
		strcpy(r->cause_comm, "kworker/1:1");
		r->instructions = VN_PIPE_NO_INSTR;
	}
	for (unsigned i = 0; i < k; i++)
		(void)pipeline_arrive(&P, n);
	(void)pipeline_filter(&P, n);
	(void)pipeline_take_report(&P, n);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const unsigned ranks[] = { 2, 8, 64 };
	uint64_t reports = 20000, repeats = 7;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int rx, tx, null;
	char buf[65536];
	uint64_t next_n = 0, errors = 0;

	if ((argc > 1 && parse_count(argv[1], &reports)) ||
	    (argc > 2 && (parse_count(argv[2], &repeats) || repeats > 51))) {
		fprintf(stderr, "usage: %s [REPORTS [REPEATS (<= 51)]]\n", argv[0]);
		return 2;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rx = socket(AF_INET, SOCK_DGRAM, 0);
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	null = open("/dev/null", O_WRONLY);
	if (rx < 0 || tx < 0 || null < 0 || bind(rx, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(rx, (struct sockaddr *)&a, &al) ||
	    connect(tx, (struct sockaddr *)&a, sizeof(a))) {
		perror("node_send_bench: socket");
		return 1;
	}
	pipeline_init(&P, "bench", 10, 0, 0x7e, VN_PIPE_F_ALL);
	P.h.out = VN_PIPE_OUT_REPORT;
	P.h.node_id = 1;
	P.h.session_id = 1;
	P.h.job_id = 2;
	P.h.key_id = 1;
	P.h.key_len = 32;
	memset(P.h.key, 0x5a, 32);
	printf("node_send_bench: per report, median of %llu x %llu reports (reproduce: "
	       "build/bench/node_send_bench %llu %llu)\n",
	       (unsigned long long)repeats, (unsigned long long)reports,
	       (unsigned long long)reports, (unsigned long long)repeats);
	printf("%6s %14s %14s %14s %10s\n", "ranks", "counters (ns)", "detail (ns)",
	       "json+write (ns)", "datagrams");
	for (size_t ri = 0; ri < sizeof(ranks) / sizeof(ranks[0]); ri++) {
		double t[3][51];
		uint64_t d0 = 0;

		for (int mode = 0; mode < 3; mode++)
			for (uint64_t rep = 0; rep < repeats; rep++) {
				double s, e = 0;

				P.h.sample_from_ns = 0;
				P.h.sample_until_ns = mode == 1 ? UINT64_MAX : 0;
				if (mode < 2)
					d0 = P.h.dgrams;
				for (uint64_t i = 0; i < reports; i++) {
					uint64_t n = next_n++;

					make_interval(n, ranks[ri]);
					s = now_s();
					if (mode < 2) {
						if (node_send_report(&P, n, tx))
							errors++;
					} else {
						int len = pipeline_json(&P, n, buf, sizeof(buf));

						if (len > 0 && write(null, buf, (size_t)len) < 0)
							return 1;
					}
					e += now_s() - s;
					while (recv(rx, buf, sizeof(buf), MSG_DONTWAIT) > 0)
						;
				}
				t[mode][rep] = e / (double)reports * 1e9;
			}
		for (int mode = 0; mode < 3; mode++)
			qsort(t[mode], repeats, sizeof(double), cmp);
		printf("%6u %14.0f %14.0f %14.0f %10.2f\n", ranks[ri], t[0][repeats / 2],
		       t[1][repeats / 2], t[2][repeats / 2],
		       (double)(P.h.dgrams - d0) / (double)reports);
	}
	if (errors)
		printf("# %llu reports not sent whole\n", (unsigned long long)errors);
	return 0;
}
