/* SPDX-License-Identifier: MIT */
/*
 * storm: event storms for measuring the kernel helper's cost per event (bench/bpf_cost.sh).
 *   storm pipe CPU SECONDS         two processes pinned to CPU ping-pong a byte over pipes: sched_switch storm
 *   storm pipe-cross CPU SECONDS   the partner sits on another CPU: wake-ups and reschedule IPIs on CPU
 *   storm udp CPU SECONDS          UDP datagrams over loopback sent and received on CPU: NET_RX/NET_TX softirqs
 * Prints what it did (round trips or datagrams per second). Figures only; never pass/fail.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "util/parse.h"
#include "lib/benchutil.h"

static int pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static int storm_pipe(int cpu, int partner_cpu, double secs)
{
	int a[2], b[2];
	unsigned long n = 0;
	double t0, t;
	pid_t child;
	char c = 0;

	if (pipe(a) || pipe(b))
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(a[1]);
		close(b[0]);
		pin(partner_cpu);
		while (read(a[0], &c, 1) == 1)
			if (write(b[1], &c, 1) != 1)
				break;
		_exit(0);
	}
	close(a[0]);
	close(b[1]);
	pin(cpu);
	t0 = now_s();
	do {
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			break;
		n++;
		t = (n & 1023) ? 0 : now_s();
	} while (!t || t - t0 < secs);
	t = now_s();
	close(a[1]);
	waitpid(child, NULL, 0);
	printf("storm: pipe ping-pong CPU %d <-> CPU %d: %lu round trips in %.2f s (%.0f/s)\n", cpu,
	       partner_cpu, n, t - t0, n / (t - t0));
	return 0;
}

static int storm_udp(int cpu, double secs)
{
	struct sockaddr_in addr = { .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(addr);
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	char buf[64] = { 0 };
	unsigned long n = 0;
	double t0, t;

	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&addr, sizeof(addr)) ||
	    getsockname(rx, (struct sockaddr *)&addr, &al))
		return 1;
	pin(cpu);
	t0 = now_s();
	do {
		if (sendto(tx, buf, sizeof(buf), 0, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
		    recv(rx, buf, sizeof(buf), 0) < 0)
			break;
		n++;
		t = (n & 1023) ? 0 : now_s();
	} while (!t || t - t0 < secs);
	t = now_s();
	printf("storm: UDP loopback on CPU %d: %lu datagrams in %.2f s (%.0f/s)\n", cpu, n, t - t0,
	       n / (t - t0));
	close(rx);
	close(tx);
	return 0;
}

int main(int argc, char **argv)
{
	int cpu;
	double secs;

	if (argc != 4 || parse_int(argv[2], 0, 4095, &cpu) || parse_double(argv[3], &secs) ||
	    secs <= 0) {
		fprintf(stderr, "usage: storm {pipe|pipe-cross|udp} CPU SECONDS\n");
		return 2;
	}
	if (!strcmp(argv[1], "pipe"))
		return storm_pipe(cpu, cpu, secs);
	if (!strcmp(argv[1], "pipe-cross"))
		return storm_pipe(cpu, cpu ? 0 : 1, secs);
	if (!strcmp(argv[1], "udp"))
		return storm_udp(cpu, secs);
	fprintf(stderr, "usage: storm {pipe|pipe-cross|udp} CPU SECONDS\n");
	return 2;
}
