/* SPDX-License-Identifier: MIT */
/*
 * collect: `vnoise-host collect`, the cluster collector. It receives the nodes' UDP reports on a
 * loopback address unless told otherwise, feeds them to the engine (clusteragg.h), keeps every accepted datagram
 * and the interval summaries in a local SQLite store (store.h) with a retention, saves the engine's state in it
 * (clusterstate.h) every STATE_NS and at exit and starts from that snapshot and the datagrams after it, runs round-robin sampling over the nodes of each
 * job, optionally serves Prometheus /metrics and writes what it received as a capture (--pcap-out); or it
 * replays a capture (--pcap-in) through the same engine and prints the same report.
 */
#ifndef VNOISE_HOST_COLLECT_COLLECT_H
#define VNOISE_HOST_COLLECT_COLLECT_H

#include <stddef.h>
#include <stdint.h>

#define COLLECT_DEFAULT_LISTEN "127.0.0.1:7361"
#define COLLECT_DEFAULT_STORE "vnoise-collect.db"
#define COLLECT_OLD_STORE "vnoise-collect.pcap" /* the store's old format, a capture: imported */
#define COLLECT_DEFAULT_RW_PERIOD_NS 10000000000ull /* --remote-write-period */
#define COLLECT_DEFAULT_RETAIN_NS (30ull * 86400 * 1000000000ull) /* --retain: 30 days */

struct collect_opts {
	const char *listen; /* ADDR:PORT, port 0 picks a free one */
	const char *key_file; /* required */
	const char *metrics; /* ADDR:PORT of /metrics, NULL: off */
	const char *store; /* NULL: no store */
	const char *pcap_out, *pcap_in;
	uint64_t slot_ns; /* 0: no rotation */
	unsigned sample_nodes, wait_nodes, exclude_min, max_nodes, max_jobs;
	uint64_t max_slots;
	double exclude_pct;
	uint64_t duration_ns, period_ns; /* 0: until a signal / no status lines */
	int json, verbose, quiet;
	int wide; /* --wide: the tables with every figure */
	const char *jobs[16]; /* --job ID: names shown for these jobs' ids */
	unsigned njobs;
	const char
	    *forward; /* --forward ADDR:PORT: every accepted datagram to a parent collector */
	const char *remote_write; /* --remote-write URL (NULL: none) */
	uint64_t rw_period_ns; /* --remote-write-period, default COLLECT_DEFAULT_RW_PERIOD_NS */
	uint64_t retain_ns; /* --retain: stored rows older are deleted; 0: kept forever */
};

/*
 * Parse the options after "collect" (argv[0] is "collect") on the common option table (shared/cli/cliopt.h;
 * the old letters -l -m -s -w -r are deprecated aliases that warn). 0, 1 for --help, or -EINVAL with a
 * one-line reason in err. Pure but for that warning line: no file is opened.
 */
int collect_parse(int argc, char **argv, struct collect_opts *o, char *err, size_t errlen)
    __attribute__((warn_unused_result));
/* The help of `vnoise-host collect` into buf; returns the length it needed, as snprintf. */
size_t collect_usage(char *buf, size_t len);
/* Run the collector; returns the exit status (shared/cli/exitcode.h). */
int collect_main(int argc, char **argv);

#endif
