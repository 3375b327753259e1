/* SPDX-License-Identifier: MIT */
/*
 * query: `vnoise-host query`, questions to the collector's SQLite store (store.h) as text or JSON
 * (vnoise.query/1): the slow-node ranking over a time range (the collector report's ranking, same
 * definition), a node's noise timeline, the top causes of a job. Opens the store read-only: it may run while
 * the collector writes.
 */
#ifndef VNOISE_HOST_COLLECT_QUERY_H
#define VNOISE_HOST_COLLECT_QUERY_H

#include <stddef.h>
#include <stdint.h>

enum query_what {
	QUERY_RANKING = 1, /* [JOB] */
	QUERY_TIMELINE = 2, /* NODE */
	QUERY_CAUSES = 3, /* JOB */
};

struct query_opts {
	const char *store; /* --store FILE (default COLLECT_DEFAULT_STORE) */
	uint64_t from_ns, to_ns; /* CLOCK_REALTIME; interval start in [from, to); to 0: no bound */
	int what; /* enum query_what */
	const char *job; /* a name (as given to --job) or a 16-hex-digit id; NULL: every job */
	uint64_t node_id; /* timeline */
	uint64_t cause_node; /* causes --node N */
	int have_cause_node;
	int top; /* -n: causes shown (default 10) */
	int json, quiet, verbose;
};

/*
 * A TIME of --from/--to at now_ns (CLOCK_REALTIME): "now", "-DURATION" before now (-1h, -30m),
 * "@SECONDS" since the epoch, or "YYYY-MM-DD[THH:MM[:SS]]" in UTC. 0 or -EINVAL.
 */
int query_parse_when(const char *s, uint64_t now_ns, uint64_t *out_ns)
    __attribute__((warn_unused_result));

/* Parse the options after "query" (argv[0] is "query") at now_ns. 0, 1 for --help, or -EINVAL + err. */
int query_parse(int argc, char **argv, uint64_t now_ns, struct query_opts *o, char *err,
		size_t errlen) __attribute__((warn_unused_result));
/* The help into buf; the length it needed, as snprintf. */
size_t query_usage(char *buf, size_t len);

/* The job id of a --job-style argument: 16 hex digits as they are, else datagram_job_id(name). */
uint64_t query_job_id(const char *job);

/*
 * The ranking's SQL (one statement; ?1 from_ns, ?2 to_ns, ?3 job_id or NULL), for tests and the README:
 * rows job_id, node_id, mean_delay_ns, slowest, intervals, noise_ns, hypervisor_ns.
 */
extern const char query_ranking_sql[];

/* Run the command; the exit status (shared/cli/exitcode.h). */
int query_main(int argc, char **argv);

#endif
