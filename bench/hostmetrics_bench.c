/* SPDX-License-Identifier: MIT */
/*
 * hostmetrics_bench: the cost of vnoise-host's Prometheus exporter (host/export/hostmetrics) beyond the host
 * view, at one period and one scrape per second with 4 domains x 2 vCPUs (<= 0.2% of
 * a core). Each iteration stands for one second: a synthetic period (per vCPU a period record, preemptor
 * runs of a few host tasks whose comms change over time, VM exits and host IRQs) is built into an engine
 * (not counted: that is the host view's work), added into the exporter with hostmetrics_period (counted:
 * adding and rendering, main thread) and scraped once over a real TCP connection to the exporter's
 * listener (counted: the server thread's CPU; the client's own work is not).
 *
 *   hostmetrics_bench [-n ITERATIONS] [-d DOMAINS] [-v VCPUS]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "export/hostmetrics.h"
#include "util/parse.h"

#define S 1000000000ULL
#define MS 1000000ULL

static uint64_t clk(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

/* One synthetic period [t, t + 1 s) of every domain's vCPUs into a (reset first). */
static void build_period(struct hostagg *a, uint32_t ndom, uint32_t nvcpu, uint64_t t, uint64_t it)
{
	static const char *const comms[] = { "kworker/0:1",	"ksoftirqd/0", "rcu_preempt",
					     "qemu-system-x86", "sshd",	       "systemd-journal" };

	hostagg_reset(a);
	for (uint32_t d = 0; d < ndom; d++) {
		for (uint32_t v = 0; v < nvcpu; v++) {
			struct vn_host_period p = { .start_ns = t,
						    .end_ns = t + S,
						    .dom = d,
						    .vcpu = v,
						    .cpu = v,
						    .steal_ns = 20 * MS,
						    .cpu_ns = 900 * MS,
						    .out_ns = 30 * MS,
						    .out_periods = 300,
						    .out_r_ns = 20 * MS,
						    .out_s_ns = 9 * MS,
						    .idle_ns = 5 * MS,
						    .wait_ns = 21 * MS,
						    .flags = 7 };

			(void)hostagg_period(a, &p);
			for (uint32_t k = 0; k < 8; k++) {
				struct vn_host_run r = { .start_ns = t + k * 100 * MS,
							 .end_ns = t + k * 100 * MS + (k + 1) * MS,
							 .out_start_ns = t + k * 100 * MS,
							 .dom = d,
							 .vcpu = v,
							 .pid = 100000 + k +
								(uint32_t)(it % 50) * 10 };

				/* comms change over time: new causes keep arriving (they go to other) */
				if (k < 6)
					snprintf(r.comm, sizeof(r.comm), "%s", comms[k]);
				else
					snprintf(r.comm, sizeof(r.comm), "job-%" PRIu64,
						 it % 40 + k);
				(void)hostagg_run(a, &r);
			}
			for (uint32_t k = 0; k < 6; k++) {
				struct vn_host_agg g = { .start_ns = t,
							 .end_ns = t + S,
							 .dom = d,
							 .vcpu = v,
							 .kind = k < 4 ? VN_HOST_AGG_EXIT
								       : VN_HOST_AGG_IRQ,
							 .isa = 1,
							 .id = k < 4 ? k * 10 + 1 : 30 + k,
							 .count = 1000,
							 .total_ns = MS,
							 .max_ns = 10000 };

				(void)hostagg_agg(a, &g);
			}
		}
	}
}

/* GET /metrics over a fresh connection; returns the body's size or -errno. */
static long scrape(uint16_t port)
{
	static char buf[1 << 20];
	const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t got = 0;
	ssize_t n;
	char *body;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		return -errno;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    write(fd, req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1) {
		close(fd);
		return -EIO;
	}
	while (got < sizeof(buf) - 1 && (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = 0;
	body = strstr(buf, "\r\n\r\n");
	if (strncmp(buf, "HTTP/1.1 200", 12) || !body)
		return -EPROTO;
	return (long)(got - (size_t)(body + 4 - buf));
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
	uint32_t iters = 300, ndom = 4, nvcpu = 2;
	uint64_t t_period = 0, main0, proc0, main_cpu, proc_cpu, t = 1000 * S;
	long bytes = 0;
	char err[256];
	struct hostagg *a;
	struct hostmetrics *m;
	int c;

	while ((c = getopt(argc, argv, "n:d:v:")) != -1) {
		if ((c == 'n' && opt_u32(optarg, 1, 1000000, &iters)) ||
		    (c == 'd' && opt_u32(optarg, 1, VN_HOST_MAX_DOMAINS, &ndom)) ||
		    (c == 'v' && opt_u32(optarg, 1, VN_HOST_MAX_VCPUS, &nvcpu)) || c == '?') {
			fprintf(stderr, "usage: hostmetrics_bench [-n ITERATIONS] [-d DOMAINS] "
					"[-v VCPUS]\n");
			return 2;
		}
	}
	a = hostagg_new();
	m = hostmetrics_start("127.0.0.1:0", err, sizeof(err));
	if (!a || !m) {
		fprintf(stderr, "hostmetrics_bench: %s\n", m ? "out of memory" : err);
		return 1;
	}
	for (uint32_t d = 0; d < ndom; d++) {
		char name[32], uuid[40];

		snprintf(name, sizeof(name), "bench-vm-%u", d);
		snprintf(uuid, sizeof(uuid), "00000000-0000-4000-8000-%012u", d);
		if (hostagg_domain(a, d, name, uuid, "kvm", 90000 + d, nvcpu, "started"))
			return 1;
		for (uint32_t v = 0; v < nvcpu; v++)
			if (hostagg_vcpu_tid(a, d, v, 91000 + d * 100 + v))
				return 1;
	}
	main0 = clk(CLOCK_THREAD_CPUTIME_ID);
	proc0 = clk(CLOCK_PROCESS_CPUTIME_ID);
	for (uint32_t i = 0; i < iters; i++, t += S) {
		struct hostinfo in = { .source = "live",
				       .start_ns = t,
				       .end_ns = t + S,
				       .period_ns = S,
				       .dispatch = "bpf",
				       .irqs = 1,
				       .kvm = 1,
				       .top_n = 5,
				       .self_cpu_ns = i * MS };
		uint64_t t0;

		build_period(a, ndom, nvcpu, t, i);
		t0 = clk(CLOCK_THREAD_CPUTIME_ID);
		hostmetrics_period(m, a, &in);
		t_period += clk(CLOCK_THREAD_CPUTIME_ID) - t0;
		bytes = scrape(hostmetrics_port(m));
		if (bytes < 0) {
			fprintf(stderr, "hostmetrics_bench: scrape failed: %s\n",
				strerror((int)-bytes));
			return 1;
		}
	}
	main_cpu = clk(CLOCK_THREAD_CPUTIME_ID) - main0;
	proc_cpu = clk(CLOCK_PROCESS_CPUTIME_ID) - proc0;
	hostmetrics_stop(m);
	hostagg_free(a);
	{
		double per_period_us = (double)t_period / iters / 1e3;
		double server_us =
		    (double)(proc_cpu > main_cpu ? proc_cpu - main_cpu : 0) / iters / 1e3;
		double pct = (per_period_us + server_us) / 1e6 * 100.0;

		printf(
		    "hostmetrics: %u domains x %u vCPUs, %u one-second periods each scraped once, "
		    "%ld bytes per scrape\n",
		    ndom, nvcpu, iters, bytes);
		printf(
		    "exporter: %.1f us per period (adding + rendering), %.1f us per scrape (server "
		    "thread)\n",
		    per_period_us, server_us);
		printf(
		    "exporter cost at a 1 s period and a 1 s scrape: %.4f%% of a core (target <= "
		    "0.2%%)\n",
		    pct);
		printf("reproduce: build/bench/hostmetrics_bench -n %u -d %u -v %u\n", iters, ndom,
		       nvcpu);
	}
	return 0;
}
