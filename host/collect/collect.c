/* SPDX-License-Identifier: MIT */
/* collect: `vnoise-host collect`, the cluster collector's daemon around clusteragg (see collect.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "collect/collect.h"
#include "collect/clusteragg.h"
#include "collect/clusterout.h"
#include "collect/clusterrot.h"
#include "collect/clusterstate.h"
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "export/httpd.h"
#include "export/promtext.h"
#include "format/keyfile.h"
#include "util/log.h"
#include "util/outfile.h"
#include "util/monotime.h"
#include "util/parse.h"
#include "collect/pcapio.h"
#include "collect/store.h"
#include "export/promfmt.h"
#include "export/remotewrite.h"

#define BATCH 64 /* datagrams per recvmmsg() */
#define TICK_NS 5000000ull /* the rotation is driven at least this often */
#define PUBLISH_NS 1000000000ull /* /metrics: the text is made again this often... */
#define PUBLISH_SHARE 20 /* ...or when the receive loop spent 1/20 of its time on it since */
#define SNAPSHOT_NS 1000000000ull /* the store's node accounting is written this often */
#define STATE_NS \
	30000000000ull /* the engine's state snapshot (a start replays at most this much) */
#define RETAIN_ROWS 1000 /* rows deleted per table and step of the retention (a few ms at most) */
#define STATE_NAME "clusteragg" /* the snapshot's row in the store's state table */

enum {
	O_LISTEN = CLIOPT_OWN,
	O_METRICS,
	O_STORE,
	O_NO_STORE,
	O_PCAP_OUT,
	O_PCAP_IN,
	O_SLOT,
	O_SAMPLE_NODES,
	O_WAIT_NODES,
	O_SLOTS,
	O_EXCL_PCT,
	O_EXCL_MIN,
	O_MAX_NODES,
	O_MAX_JOBS,
	O_FORWARD,
	O_REMOTE_WRITE,
	O_RW_PERIOD,
	O_RETAIN,
	O_WIDE,
};

static const struct cliopt collect_opts_table[] = {
	{ .id = CLIOPT_KEY_FILE,
	  .help = "shared report keys: lines 'ID HEX' (required; mode 600)" },
	{ .id = O_LISTEN,
	  .name = "listen",
	  .has_arg = 1,
	  .arg = "ADDR:PORT",
	  .help = "where to receive (default " COLLECT_DEFAULT_LISTEN "; port 0: any free port)" },
	{ .id = O_METRICS,
	  .name = "metrics",
	  .has_arg = 1,
	  .arg = "ADDR:PORT",
	  .help = "serve Prometheus /metrics there (off by default)" },
	{ .id = O_STORE,
	  .name = "store",
	  .has_arg = 1,
	  .arg = "FILE",
	  .help = "keep accepted reports in the SQLite database FILE (reloaded at\n"
		  "                         start; default ./" COLLECT_DEFAULT_STORE
		  "; a capture, the\n"
		  "                         old format, is imported into FILE.db; see 'query')" },
	{ .id = O_NO_STORE, .name = "no-store", .help = "keep nothing on disk" },
	{ .id = O_RETAIN,
	  .name = "retain",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "delete stored rows older than TIME, e.g. 30d, 12h, 90m (default 30d;\n"
		  "                         0 or forever: keep everything)" },
	{ .id = O_PCAP_OUT,
	  .name = "pcap-out",
	  .has_arg = 1,
	  .arg = "FILE",
	  .help = "write every datagram received to FILE (pcap)" },
	{ .id = O_PCAP_IN,
	  .name = "pcap-in",
	  .has_arg = 1,
	  .arg = "FILE",
	  .help = "replay a capture instead of listening, print the report, exit" },
	{ .id = O_SLOT,
	  .name = "slot",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "round-robin slot, >= 1ms (default 1s; 0: no rotation, counters only)",
	  .bare_unit = "s" },
	{ .id = O_SAMPLE_NODES,
	  .name = "sample-nodes",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "nodes sampled per slot and job (default 1)" },
	{ .id = O_WAIT_NODES,
	  .name = "wait-nodes",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "start a job's rotation once N of its nodes registered (default 1)" },
	{ .id = O_SLOTS,
	  .name = "slots",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "stop rotating after N slots per job (default: never)" },
	{ .id = O_EXCL_PCT,
	  .name = "exclude-pct",
	  .has_arg = 1,
	  .arg = "P",
	  .help = "take out a node whose compute time rises more than P% while sampled\n"
		  "                         (default 20)" },
	{ .id = O_EXCL_MIN,
	  .name = "exclude-min",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "intervals needed sampled and unsampled before judging (default 5)" },
	{ .id = O_MAX_NODES,
	  .name = "max-nodes",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "nodes kept at most (default 65536)" },
	{ .id = O_MAX_JOBS,
	  .name = "max-jobs",
	  .has_arg = 1,
	  .arg = "N",
	  .help = "jobs kept at most (default 1024): a new job's datagrams beyond are refused" },
	{ .id = O_FORWARD,
	  .name = "forward",
	  .has_arg = 1,
	  .arg = "ADDR:PORT",
	  .help =
	      "send every accepted report on to a parent collector (a tree of\n"
	      "                         collectors: the parent takes them with the same keys)" },
	{ .id = O_REMOTE_WRITE,
	  .name = "remote-write",
	  .has_arg = 1,
	  .arg = "URL",
	  .help = "push the /metrics series with Prometheus remote-write to URL\n"
		  "                         (http://ADDR:PORT/api/v1/write)" },
	{ .id = O_RW_PERIOD,
	  .name = "remote-write-period",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "how often (default 10s, >= 100ms)" },
	{ .id = CLIOPT_JOB,
	  .help = "a job the nodes run with --job ID: shown by that name (repeatable, 16\n"
		  "                         at most)" },
	{ .id = CLIOPT_DURATION, .help = "stop after TIME (default: at SIGINT/SIGTERM)" },
	{ .id = CLIOPT_PERIOD,
	  .help = "every TIME (>= 1ms): a status line on stderr and, without --json, the\n"
		  "                         report's tables on stdout (a dashboard)",
	  .bare_unit = "s" },
	{ .id = CLIOPT_JSON, .help = "the final report as one vnoise.collect/1 JSON object" },
	{ .id = O_WIDE,
	  .name = "wide",
	  .help = "the report's tables with every figure (over 80 columns)" },
	{ .id = CLIOPT_QUIET },
	{ .id = CLIOPT_VERBOSE },
	{ .id = CLIOPT_HELP },
	/* the old letters, kept one release: none of them has a common meaning in collect */
	{ .letter = 'l', .alias_of = O_LISTEN },
	{ .letter = 'm', .alias_of = O_METRICS },
	{ .letter = 's', .alias_of = O_STORE },
	{ .letter = 'w', .alias_of = O_PCAP_OUT },
	{ .letter = 'r', .alias_of = O_PCAP_IN },
	{ 0 },
};

static const char usage_head[] =
    "usage: vnoise-host collect -k FILE [options]\n"
    "Receive the nodes' UDP reports, keep them, rank the nodes, rotate detailed\n"
    "sampling.\n";
static const char usage_tail[] = CLIOPT_TIME_LINE;

size_t collect_usage(char *buf, size_t len)
{
	size_t n = strlen(usage_head);
	int w;

	snprintf(buf, len, "%s", usage_head);
	n += cliopt_help(collect_opts_table, n < len ? buf + n : NULL, n < len ? len - n : 0);
	w = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, "%s", usage_tail);
	n += w > 0 ? (size_t)w : 0;
	return cliopt_exit_help(buf, len, n,
				CLIOPT_EXITS_COMMON | CLIOPT_EXIT(EXIT_DAMAGED) |
				    CLIOPT_EXIT(EXIT_SYMLINK));
}

static void set_defaults(struct collect_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->listen = COLLECT_DEFAULT_LISTEN;
	o->store = COLLECT_DEFAULT_STORE;
	o->slot_ns = 1000000000ull;
	o->sample_nodes = 1;
	o->wait_nodes = 1;
	o->exclude_pct = 20;
	o->exclude_min = 5;
	o->max_nodes = 65536;
	o->max_jobs = CS_MAX_JOBS_DEFAULT;
	o->rw_period_ns = COLLECT_DEFAULT_RW_PERIOD_NS;
	o->retain_ns = COLLECT_DEFAULT_RETAIN_NS;
}

/* --retain TIME: a unit is required (a bare 30 is no retention anyone means); 0 or forever: none. */
static int take_retain(struct cliopt_parser *ps, struct collect_opts *o)
{
	double v;

	if (!strcmp(ps->arg, "forever") || !strcmp(ps->arg, "0")) {
		o->retain_ns = 0;
		return 0;
	}
	if (!parse_double(ps->arg, &v))
		return cliopt_fail(
		    ps, "--retain: '%s' needs a unit (30d, 12h, 90m), or is 0 or forever", ps->arg);
	if (cliopt_time(ps, &o->retain_ns))
		return -EINVAL;
	if (o->retain_ns < 1000000000ull)
		return cliopt_fail(ps, "--retain: '%s' is not 0, forever or a time >= 1s", ps->arg);
	return 0;
}

/* An address option: checked here, bound or served only by the daemon. */
static int take_sockaddr(struct cliopt_parser *ps, const char **out)
{
	struct sockaddr_storage ss;
	socklen_t sl;

	if (parse_sockaddr(ps->arg, 0, &ss, &sl))
		return cliopt_fail(ps, "invalid %s '%s': " PARSE_SOCKADDR_WANT, cliopt_name(ps),
				   ps->arg);
	*out = ps->arg;
	return 0;
}

/* The options with a number: the engine's settings, the times. */
static int take_number(struct cliopt_parser *ps, int c, struct collect_opts *o)
{
	int v = 0, rc;

	switch (c) {
	case O_SLOT:
		if (cliopt_time(ps, &o->slot_ns))
			return -EINVAL;
		if (o->slot_ns && o->slot_ns < 1000000ull)
			return cliopt_fail(ps, "--slot: '%s' is not 0 or a time >= 1ms", ps->arg);
		return 0;
	case CLIOPT_PERIOD:
		if (cliopt_time(ps, &o->period_ns))
			return -EINVAL;
		if (o->period_ns < 1000000ull)
			return cliopt_fail(ps, "--period: '%s' is not a time >= 1ms", ps->arg);
		return 0;
	case CLIOPT_DURATION:
		return cliopt_time(ps, &o->duration_ns);
	case O_RETAIN:
		return take_retain(ps, o);
	case O_RW_PERIOD:
		if (cliopt_time(ps, &o->rw_period_ns))
			return -EINVAL;
		if (o->rw_period_ns < 100000000ull)
			return cliopt_fail(ps, "--remote-write-period: '%s' is not a time >= 100ms",
					   ps->arg);
		return 0;
	case O_SLOTS:
		if (parse_u64(ps->arg, &o->max_slots) || !o->max_slots)
			return cliopt_fail(ps, "--slots: '%s' is not a positive number", ps->arg);
		return 0;
	case O_EXCL_PCT:
		if (parse_double(ps->arg, &o->exclude_pct) || o->exclude_pct > 1e6)
			return cliopt_fail(ps, "--exclude-pct: '%s' is not a percentage >= 0",
					   ps->arg);
		return 0;
	}
	rc = cliopt_int(ps, 1, c == O_MAX_NODES ? 1 << 24 : 1 << 20, &v);
	if (c == O_SAMPLE_NODES)
		o->sample_nodes = (unsigned)v;
	else if (c == O_WAIT_NODES)
		o->wait_nodes = (unsigned)v;
	else if (c == O_EXCL_MIN)
		o->exclude_min = (unsigned)v;
	else if (c == O_MAX_JOBS)
		o->max_jobs = (unsigned)v;
	else
		o->max_nodes = (unsigned)v;
	return rc;
}

/* One option: 0, 1 for --help, or -EINVAL with the message in err. */
static int take_option(struct cliopt_parser *ps, int c, struct collect_opts *o, int *no_store)
{
	const struct cliopt_flags flags = { &o->json, &o->quiet, &o->verbose };

	if (cliopt_flag(c, &flags))
		return 0;
	switch (c) {
	case CLIOPT_KEY_FILE:
		o->key_file = ps->arg;
		return 0;
	case O_LISTEN:
		return take_sockaddr(ps, &o->listen);
	case O_METRICS:
		return take_sockaddr(ps, &o->metrics);
	case O_FORWARD:
		return take_sockaddr(ps, &o->forward);
	case O_REMOTE_WRITE: {
		char why[128];

		if (remotewrite_url_check(ps->arg, why, sizeof(why)))
			return cliopt_fail(ps, "--remote-write: '%s': %s", ps->arg, why);
		o->remote_write = ps->arg;
		return 0;
	}
	case O_STORE:
		o->store = ps->arg;
		return 0;
	case O_NO_STORE:
		*no_store = 1;
		return 0;
	case O_PCAP_OUT:
		o->pcap_out = ps->arg;
		return 0;
	case O_PCAP_IN:
		o->pcap_in = ps->arg;
		return 0;
	case CLIOPT_JOB:
		if (!*ps->arg || strlen(ps->arg) > 31 || o->njobs == 16)
			return cliopt_fail(
			    ps, "--job: '%.40s' is not a name of 1 to 31 bytes (16 at most)",
			    ps->arg);
		o->jobs[o->njobs++] = ps->arg;
		return 0;
	case O_WIDE:
		o->wide = 1;
		return 0;
	case CLIOPT_HELP:
		return 1;
	}
	return take_number(ps, c, o);
}

/* What the options mean together. */
static int check_rules(struct cliopt_parser *ps, struct collect_opts *o, int no_store)
{
	if (!o->key_file)
		return cliopt_fail(ps, "--key-file is required (the key shared with the nodes)");
	if (no_store || o->pcap_in)
		o->store = NULL;
	if (o->pcap_in && (o->pcap_out || o->metrics || o->forward || o->remote_write))
		return cliopt_fail(ps, "--pcap-in replays and exits: no --pcap-out, --metrics, "
				       "--forward or --remote-write with it");
	if (o->store && o->pcap_out && !strcmp(o->store, o->pcap_out))
		return cliopt_fail(ps, "--store and --pcap-out are the same file");
	return 0;
}

int collect_parse(int argc, char **argv, struct collect_opts *o, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	int c, rc, no_store = 0;

	set_defaults(o);
	rc = cliopt_init(&ps, collect_opts_table, argc, argv, err, errlen);
	if (rc)
		return rc;
	while ((c = cliopt_next(&ps)) > 0) {
		rc = take_option(&ps, c, o, &no_store);
		if (rc)
			return rc;
	}
	if (c < 0)
		return c;
	if (optind < argc)
		return cliopt_fail(&ps, "unexpected argument '%s'", argv[optind]);
	return check_rules(&ps, o, no_store);
}

/* ---- the daemon ---- */

struct collector {
	struct collect_opts o;
	struct keyfile keys;
	struct clusteragg *cs;
	struct promtext
	    text; /* /metrics and remote-write: published by the receive loop (promtext) */
	uint64_t next_publish_ns, publish_cost_ns;
	int fd;
	struct sockaddr_storage me;
	socklen_t melen;
	struct pcapio_w *out;
	struct store *db; /* --store */
	int store_failing; /* the last store write failed (said once until storing goes on) */
	uint64_t store_stored_at; /* datagrams stored when it began to fail */
	int store_rc; /* the exit code the store's failures call for (0: none) */
	int replaying; /* the store's datagrams are going back into the engine: not stored again */
	uint64_t replayed; /* datagrams of the store replayed at start */
	int retain_more; /* the last retention step was full: the next one runs at the next tick */
	const void *cur_buf; /* the datagram being ingested, for the accepted callback */
	size_t cur_len;
	const struct sockaddr *cur_src;
	socklen_t cur_srclen;
	uint64_t out_errors, store_errors, sock_drops, cmd_send_errors;
	uint64_t store_deleted; /* rows the retention deleted (the store's count, for /metrics) */
	struct httpd *http;
	/* --forward: the parent and what could not be sent to it */
	int fwd_fd;
	struct sockaddr_storage fwd;
	socklen_t fwdlen;
	uint64_t fwd_sent, fwd_errors;
	struct remotewrite *rw; /* --remote-write */
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	g_stop = sig;
}

static int send_cmd(void *ctx, const struct sockaddr *to, socklen_t tolen, const void *buf,
		    size_t len)
{
	struct collector *c = ctx;
	ssize_t w;

	if (c->fd < 0)
		return -ENOTCONN; /* replaying: nothing is sent */
	w = sendto(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL, to, tolen);
	return w < 0 ? -errno : 0; /* --pcap-out keeps what was received, not what was sent */
}

static void on_event(void *ctx, const char *line)
{
	(void)ctx;
	log_info("%s", line);
}

/* The exposition text of now (run by the receive loop: see publish). */
static int render(void *ctx, struct bufout *o)
{
	struct collector *c = ctx;
	int rc;

	rc = clusterout_prom(c->cs, o);
	if (!rc) {
		promfmt_family(o, "vnoise_collect_socket_drops_total", "counter",
			       "Datagrams the kernel dropped because the receive buffer was full");
		promfmt_sample_u64(o, "vnoise_collect_socket_drops_total", NULL, 0, c->sock_drops);
		promfmt_family(o, "vnoise_collect_store_errors_total", "counter",
			       "Accepted datagrams that could not be written to the store");
		promfmt_sample_u64(o, "vnoise_collect_store_errors_total", NULL, 0,
				   __atomic_load_n(&c->store_errors, __ATOMIC_RELAXED));
		promfmt_family(o, "vnoise_collect_store_deleted_total", "counter",
			       "Rows the retention (--retain) deleted from the store");
		promfmt_sample_u64(o, "vnoise_collect_store_deleted_total", NULL, 0,
				   __atomic_load_n(&c->store_deleted, __ATOMIC_RELAXED));
		promfmt_family(o, "vnoise_collect_pcap_errors_total", "counter",
			       "Datagrams that could not be written to --pcap-out");
		promfmt_sample_u64(o, "vnoise_collect_pcap_errors_total", NULL, 0, c->out_errors);
		if (c->o.forward) {
			promfmt_family(o, "vnoise_collect_forwarded_total", "counter",
				       "Accepted datagrams sent on to the parent collector");
			promfmt_sample_u64(o, "vnoise_collect_forwarded_total", NULL, 0,
					   c->fwd_sent);
			promfmt_family(o, "vnoise_collect_forward_errors_total", "counter",
				       "Accepted datagrams that could not be sent to the parent");
			promfmt_sample_u64(o, "vnoise_collect_forward_errors_total", NULL, 0,
					   c->fwd_errors);
		}
		if (c->rw)
			remotewrite_render_prom(c->rw, "vnoise_collect", o);
		rc = bufout_result(o) < 0 ? -ENOSPC : 0;
	}
	return rc;
}

/*
 * Publish the text of now for the scrapes (which only copy it: the receive loop never waits on a scrape) and
 * remote-write. With --metrics it runs every PUBLISH_NS, or less often when rendering takes more than
 * 1/PUBLISH_SHARE of the time: a large cluster's text does not slow the receive loop down.
 */
static void publish(struct collector *c, uint64_t t)
{
	uint64_t t0 = now_ns(), gap;

	(void)promtext_publish(&c->text, render, c); /* on failure the previous text stays */
	c->publish_cost_ns = now_ns() - t0;
	gap = c->publish_cost_ns * PUBLISH_SHARE;
	c->next_publish_ns = t + (gap > PUBLISH_NS ? gap : PUBLISH_NS);
}

/* The /metrics thread: a copy of the published text. */
static int serve(void *ctx, struct bufout *o)
{
	struct collector *c = ctx;

	return promtext_copy(&c->text, o);
}

/*
 * After a store write that returned rc: store_errors is the store's count of datagrams not stored; a failure
 * is said once (the ranking and /metrics go on in memory, the store is retried with every write), and once
 * more when a batch is committed again.
 */
static void store_note(struct collector *c, int rc)
{
	struct store_stats st;

	store_get_stats(c->db, &st);
	__atomic_store_n(&c->store_errors, st.failed, __ATOMIC_RELAXED);
	__atomic_store_n(&c->store_deleted, st.deleted, __ATOMIC_RELAXED);
	if (rc && !c->store_failing) {
		c->store_failing = 1;
		c->store_stored_at = st.stored;
		log_warn("store %s: %s: accepted reports are not stored until it can write again "
			 "(%" PRIu64 " so far); the ranking and /metrics go on in memory",
			 c->o.store, store_error(c->db), st.failed);
	} else if (!rc && c->store_failing && st.stored > c->store_stored_at) {
		c->store_failing = 0;
		log_info("store %s: storing again; %" PRIu64
			 " accepted reports could not be stored",
			 c->o.store, st.failed);
	}
}

/* The engine accepted the datagram take() is ingesting: into the store (unless it came from there). */
static void on_accepted(void *ctx, const struct datagram_view *v, uint64_t now_ns)
{
	struct collector *c = ctx;

	if (c->db && !c->replaying)
		store_note(c, store_add(c->db, now_ns, c->cur_src, c->cur_srclen, c->cur_buf,
					c->cur_len, v));
}

/* One datagram from src to dst at t: pcap-out, engine, store. */
static void take(struct collector *c, const void *buf, size_t len, const struct sockaddr *src,
		 socklen_t srclen, const struct sockaddr *dst, uint64_t t)
{
	if (c->out && pcapio_write(c->out, t, src, dst, buf, len))
		c->out_errors++;
	c->cur_buf = buf;
	c->cur_len = len;
	c->cur_src = src;
	c->cur_srclen = srclen;
	if (clusteragg_ingest(c->cs, buf, len, src, srclen, t) != CS_OK)
		return;
	if (c->fwd_fd >= 0) { /* verbatim: the node's own MAC authenticates it to the parent */
		if (sendto(c->fwd_fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL,
			   (struct sockaddr *)&c->fwd, c->fwdlen) < 0)
			c->fwd_errors++;
		else
			c->fwd_sent++;
	}
}

static socklen_t sa_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

static int replay_one(void *ctx, uint64_t t, const struct sockaddr *src, const struct sockaddr *dst,
		      const void *payload, size_t len)
{
	struct collector *c = ctx;

	take(c, payload, len, src, sa_len(src), dst, t);
	return g_stop ? -EINTR : 0;
}

static int replay(struct collector *c, const char *path, const char *what)
{
	struct pcapio_stats st = { 0 };
	char err[256];
	int rc;

	rc = pcapio_replay(path, 0, replay_one, c, &st, err, sizeof(err));
	if (rc == -EINTR)
		return rc;
	if (rc) {
		log_err("%s %s", what, err); /* err names the file */
		return rc == -EBADMSG || rc == -ENOTSUP ? -EBADMSG : rc;
	}
	log_info("%s %s: %" PRIu64 " datagrams replayed, %" PRIu64 " packets skipped", what, path,
		 st.udp, st.packets - st.udp);
	return 0;
}

static int open_socket(struct collector *c)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int one = 1, rcvbuf = 8 << 20;
	char a[64];

	if (parse_sockaddr(c->o.listen, 0, &ss, &sl))
		return -EINVAL;
	c->fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		goto fail;
	setsockopt(c->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (setsockopt(c->fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)))
		log_warn("SO_RXQ_OVFL: %s: the kernel's drops will not be counted",
			 strerror(errno));
	if (bind(c->fd, (struct sockaddr *)&ss, sl))
		goto fail;
	c->melen = sizeof(c->me);
	if (getsockname(c->fd, (struct sockaddr *)&c->me, &c->melen))
		goto fail;
	log_info("listening on %s (UDP)",
		 parse_sockaddr_fmt((struct sockaddr *)&c->me, a, sizeof(a)));
	return 0;
fail:
	log_err("--listen %s: %s", c->o.listen, strerror(errno));
	return -errno;
}

/* One recvmmsg() batch into the engine; returns how many datagrams it took. */
static int receive(struct collector *c)
{
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_storage from[BATCH];
	static uint8_t bufs[BATCH][VN_REPORT_MAX_LEN + 64];
	union {
		char b[CMSG_SPACE(sizeof(uint32_t))];
		struct cmsghdr align;
	} ctl[BATCH];
	int n;

	for (int i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
		mm[i].msg_hdr = (struct msghdr){ &from[i], sizeof(from[i]),  &iov[i], 1,
						 ctl[i].b, sizeof(ctl[i].b), 0 };
	}
	n = recvmmsg(c->fd, mm, BATCH, MSG_DONTWAIT, NULL);
	if (n <= 0)
		return 0;
	uint64_t t = now_rt_ns();

	for (int i = 0; i < n; i++) {
		struct cmsghdr *cm;
		size_t len = mm[i].msg_len;

		for (cm = CMSG_FIRSTHDR(&mm[i].msg_hdr); cm; cm = CMSG_NXTHDR(&mm[i].msg_hdr, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL) {
				uint32_t d;

				memcpy(&d, CMSG_DATA(cm), sizeof(d));
				c->sock_drops = d; /* the kernel's running count for this socket */
			}
		if (mm[i].msg_hdr.msg_flags & MSG_TRUNC)
			len = sizeof(bufs[i]) + 1; /* longer than any report: counted malformed */
		take(c, bufs[i], len > sizeof(bufs[i]) ? sizeof(bufs[i]) : len,
		     (struct sockaddr *)&from[i], mm[i].msg_hdr.msg_namelen,
		     (struct sockaddr *)&c->me, t);
	}
	return n;
}

static void status(struct collector *c)
{
	char line[256];

	clusterout_status(c->cs, line, sizeof(line));
	if (c->db)
		fprintf(stderr,
			"%s socket-drops %" PRIu64 " store-failed %" PRIu64
			" store-deleted %" PRIu64 "\n",
			line, c->sock_drops, __atomic_load_n(&c->store_errors, __ATOMIC_RELAXED),
			__atomic_load_n(&c->store_deleted, __ATOMIC_RELAXED));
	else
		fprintf(stderr, "%s socket-drops %" PRIu64 "\n", line, c->sock_drops);
}

/* A datagram of the store back into the engine (not stored again). */
static int reload_one(void *ctx, uint64_t t, const struct sockaddr *src, socklen_t srclen,
		      const void *buf, size_t len)
{
	struct collector *c = ctx;

	c->replaying = 1;
	clusteragg_ingest(c->cs, buf, len, src, srclen, t);
	c->replaying = 0;
	c->replayed++;
	return g_stop ? -EINTR : 0;
}

/* Where a capture store of the old format is imported: FILE.pcap -> FILE.db, else FILE.db. */
static void import_path(const char *path, char *out, size_t len)
{
	size_t n = strlen(path);

	if (n > 5 && !strcmp(path + n - 5, ".pcap"))
		snprintf(out, len, "%.*s.db", (int)(n - 5), path);
	else
		snprintf(out, len, "%s.db", path);
}

/* Open (or create) the database at path; the exit status on failure (reported in one line). */
static int open_db(struct collector *c, const char *path)
{
	char err[512];
	int e;

	c->db = store_open(path, 0, err, sizeof(err));
	if (c->db)
		return EXIT_OK;
	e = errno;
	log_err("store %s", err); /* err names the file */
	return e == EBADMSG || e == EPROTO ? EXIT_DAMAGED : outfile_exit_code(-e);
}

/*
 * The old format: the capture is replayed through the engine into a new database at dbpath (each datagram
 * stored as it is accepted); the capture is kept. A capture whose tail is damaged gives what came before.
 */
static int import_capture(struct collector *c, const char *path, const char *dbpath)
{
	char err[256];
	struct pcapio_stats st = { 0 };
	int rc = open_db(c, dbpath);

	if (rc)
		return rc;
	rc = pcapio_replay(path, 0, replay_one, c, &st, err, sizeof(err));
	if (rc && (rc != -EBADMSG || !st.packets)) {
		log_err("store %s", err);
		store_close(c->db);
		c->db = NULL;
		unlink(dbpath);
		return rc == -EBADMSG || rc == -ENOTSUP ? EXIT_DAMAGED : EXIT_FAIL;
	}
	if (rc)
		log_warn("store %s; the %" PRIu64 " datagrams before the damage are imported", err,
			 st.udp);
	if (store_commit(c->db)) {
		log_err("store %s: cannot write the imported datagrams", dbpath);
		return EXIT_FAIL;
	}
	log_info("store %s: a capture (the store's old format): %" PRIu64
		 " datagrams imported into %s, which is the store from now on; %s is kept",
		 path, st.udp, dbpath, path);
	return EXIT_OK;
}

/*
 * The engine's state snapshot of the store, if there is one of this build: into the engine. The id of the
 * last datagram it covers (0: none loaded, the whole history is to be replayed).
 */
static int64_t load_state(struct collector *c, const char *path)
{
	void *blob = NULL;
	size_t len = 0;
	int64_t last = 0;
	uint64_t saved = 0;
	struct clusteragg_stats st;
	int rc = store_get_state(c->db, STATE_NAME, &blob, &len, &last, &saved);

	if (!rc)
		rc = clusterstate_load(c->cs, blob, len);
	free(blob);
	if (rc == -ENOENT)
		return 0;
	if (rc == -ESTALE)
		log_info("store %s: the state snapshot is of another vnoise build: the history is "
			 "replayed instead",
			 path);
	else if (rc)
		log_warn(
		    "store %s: the state snapshot cannot be used (%s): the history is replayed "
		    "instead",
		    path, strerror(-rc));
	if (rc)
		return 0;
	clusteragg_stats(c->cs, &st);
	log_info("store %s: state snapshot of %.1f s ago loaded (%" PRIu64 " nodes)", path,
		 (double)(now_rt_ns() - saved) / 1e9, st.nodes);
	return last;
}

/*
 * The store into the engine: its state snapshot, then the datagrams after it (all of them without one), so
 * that the totals go on. A damaged store is reported, never touched: EXIT_DAMAGED.
 */
static int load_store(struct collector *c, const char *path)
{
	uint64_t t0 = now_ns();
	int64_t after = load_state(c, path);
	int rc = store_replay(c->db, after, reload_one, c);

	if (rc == -EINTR)
		return EXIT_FAIL;
	if (rc) {
		log_err("store %s: %scannot read it back", path,
			rc == -EBADMSG ? "damaged database: " : "");
		return EXIT_DAMAGED;
	}
	log_info("store %s: %" PRIu64 " datagrams%s replayed in %.3f s (WAL, synchronous=FULL)",
		 path, c->replayed, after ? " after the snapshot" : "",
		 (double)(now_ns() - t0) / 1e9);
	return EXIT_OK;
}

/*
 * --store: an SQLite database (created when absent), loaded into the engine (load_store); a capture (the
 * old format) is imported first. A damaged file is reported, never touched: EXIT_DAMAGED.
 */
static int open_store(struct collector *c)
{
	char dbpath[PATH_MAX];
	const char *path = c->o.store;
	int kind = store_probe(path), rc;

	if (kind == STORE_ABSENT && !strcmp(path, COLLECT_DEFAULT_STORE) &&
	    store_probe(COLLECT_OLD_STORE) == STORE_PCAP)
		return import_capture(c, COLLECT_OLD_STORE, path);
	if (kind == STORE_PCAP) {
		import_path(path, dbpath, sizeof(dbpath));
		if (store_probe(dbpath) == STORE_ABSENT)
			return import_capture(c, path, dbpath);
		log_info("store %s: a capture imported before into %s: using %s", path, dbpath,
			 dbpath);
		path = dbpath;
	}
	rc = open_db(c, path);
	if (rc)
		return rc;
	return load_store(c, path);
}

/* The engine's state snapshot into the store, committed with the datagrams it covers. Main thread. */
static void save_state(struct collector *c)
{
	void *blob = NULL;
	size_t len = 0;
	int rc;

	if (!c->db)
		return;
	rc = clusterstate_save(c->cs, &blob, &len);
	if (rc) {
		log_warn("store %s: no memory for the state snapshot: a start will replay more",
			 c->o.store);
		return;
	}
	rc = store_put_state(c->db, STATE_NAME, blob, len);
	free(blob);
	if (!rc)
		rc = store_commit(c->db);
	store_note(c, rc);
}

/* --retain: one bounded step of deletion (RETAIN_ROWS per table); another at the next tick if it was full. */
static void retain(struct collector *c)
{
	int64_t n;

	if (!c->db || !c->o.retain_ns)
		return;
	n = store_retain(c->db, now_rt_ns() - c->o.retain_ns, RETAIN_ROWS);
	c->retain_more = n >= RETAIN_ROWS;
	store_note(c, n < 0 ? (int)n : 0);
}

/* The engine's accounting (nodes, jobs, counters) into the store, then commit. Main thread. */
static void snapshot(struct collector *c)
{
	struct clusteragg_stats st;
	int err = 0;

	if (!c->db)
		return;
	clusteragg_stats(c->cs, &st);
	for (uint32_t i = 0; i < st.nodes; i++) {
		struct clusteragg_node_info ni;
		char addr[64] = "";

		if (clusteragg_node_info(c->cs, i, &ni))
			break;
		if (ni.addrlen)
			parse_sockaddr_fmt((struct sockaddr *)&ni.addr, addr, sizeof(addr));
		struct store_node sn = { ni.node_id,
					 ni.job_id,
					 ni.session_id,
					 ni.datagrams,
					 ni.records,
					 ni.lost,
					 ni.late,
					 ni.dup,
					 ni.stale,
					 ni.restarts,
					 ni.intervals_sampled,
					 ni.intervals_counters,
					 ni.noise_ns,
					 ni.compute_ns,
					 ni.last_seen_ns,
					 ni.registered,
					 ni.excluded,
					 addr };
		err |= store_put_node(c->db, &sn);
	}
	for (uint32_t j = 0; j < st.jobs; j++) {
		struct clusteragg_job_info ji;

		if (!clusteragg_job_info(c->cs, j, &ji))
			err |= store_put_job(c->db, ji.job_id, ji.name, ji.nodes);
	}
	for (int r = 0; r < CS_RES_MAX; r++)
		err |= store_put_counter(c->db, clusteragg_res_name(r), st.dgrams[r]);
	err |= store_put_counter(c->db, "received", st.received);
	err |= store_put_counter(c->db, "lost", st.lost);
	err |= store_put_counter(c->db, "commands", st.cmds_sent);
	err |= store_commit(c->db);
	store_note(c, err);
}

/* The command line: -1 to go on, else the exit status (the help printed, or the usage error). */
static int parse_args(int argc, char **argv, struct collect_opts *o)
{
	char err[256], help[4096];
	int rc = collect_parse(argc, argv, o, err, sizeof(err));

	if (rc == 1) {
		collect_usage(help, sizeof(help));
		fputs(help, stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-host collect --help')", err);
		return EXIT_USAGE;
	}
	return -1;
}

/* The engine on the options (a replay does not rotate); NULL and errno on failure. */
static struct clusteragg *engine_new(struct collector *c)
{
	struct clusteragg_cfg cfg = { 0 };

	cfg.keys = &c->keys;
	cfg.slot_ns = c->o.pcap_in ? 0 : c->o.slot_ns;
	cfg.sample_nodes = c->o.sample_nodes;
	cfg.wait_nodes = c->o.wait_nodes;
	cfg.max_slots = c->o.max_slots;
	cfg.exclude_ratio = c->o.exclude_pct / 100;
	cfg.exclude_min = c->o.exclude_min;
	cfg.max_nodes = c->o.max_nodes;
	cfg.max_jobs = c->o.max_jobs;
	cfg.send = send_cmd;
	cfg.send_ctx = c;
	cfg.event = on_event;
	cfg.accepted = on_accepted;
	cfg.accepted_ctx = c;
	cfg.job_names = c->o.jobs;
	cfg.njob_names = c->o.njobs;
	return clusteragg_new(&cfg);
}

static void catch_signals(void)
{
	struct sigaction sa = { 0 };

	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* --pcap-in: the capture through the engine; the exit status (EXIT_OK: the report is due). */
static int run_replay(struct collector *c)
{
	int rc = replay(c, c->o.pcap_in, "capture");

	if (rc == -EBADMSG)
		return EXIT_DAMAGED;
	if (rc == -EINTR)
		return 128 + g_stop; /* as a shell reports a process ended by that signal */
	return rc ? EXIT_FAIL : EXIT_OK;
}

/* --forward: a socket of the parent's family, not bound (replies never come back this way). */
static int open_forward(struct collector *c)
{
	char a[64];

	if (parse_sockaddr(c->o.forward, 1, &c->fwd, &c->fwdlen)) {
		log_err("invalid --forward '%s': " PARSE_SOCKADDR_WANT " (a port > 0)",
			c->o.forward);
		return -EINVAL;
	}
	c->fwd_fd = socket(c->fwd.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fwd_fd < 0) {
		log_err("--forward %s: %s", c->o.forward, strerror(errno));
		return -errno;
	}
	log_info("forwarding accepted reports to %s",
		 parse_sockaddr_fmt((struct sockaddr *)&c->fwd, a, sizeof(a)));
	return 0;
}

/* --remote-write: the text of now, published (for the scrapes too) and pushed. */
static void push_remote(struct collector *c)
{
	const char *text;
	size_t len;

	publish(c, now_ns());
	text = promtext_current(&c->text, &len);
	if (!text) {
		log_warn("--remote-write: out of memory: one snapshot not sent");
		return;
	}
	remotewrite_push(c->rw, text, len, (int64_t)(now_rt_ns() / 1000000ull));
}

/* The store, the socket, --pcap-out and /metrics: EXIT_OK or the exit status (reported). */
static int start_live(struct collector *c)
{
	char err[256];
	int rc;

	if (c->o.store) {
		rc = open_store(c);
		if (rc)
			return rc;
	}
	if (open_socket(c))
		return EXIT_FAIL;
	if (c->o.pcap_out) {
		c->out = pcapio_create(c->o.pcap_out, err, sizeof(err));
		if (!c->out) {
			int e = errno;

			log_err("--pcap-out %s: %s", c->o.pcap_out, err);
			return outfile_exit_code(-e);
		}
	}
	if (c->o.forward && open_forward(c))
		return EXIT_FAIL;
	if (c->o.remote_write) {
		struct remotewrite_cfg rc_cfg = { .url = c->o.remote_write };

		c->rw = remotewrite_start(&rc_cfg, err, sizeof(err));
		if (!c->rw) {
			log_err("--remote-write %s: %s", c->o.remote_write, err);
			return errno == EINVAL ? EXIT_USAGE : EXIT_FAIL;
		}
	}
	if (c->o.metrics) {
		publish(c,
			now_ns()); /* a scrape before the first tick gets the state of the start */
		c->http = httpd_start(c->o.metrics, serve, c, err, sizeof(err));
		if (!c->http) {
			log_err("--metrics %s: %s", c->o.metrics, err);
			return EXIT_FAIL;
		}
		log_info("serving /metrics on port %u", httpd_port(c->http));
	}
	return EXIT_OK;
}

/* --period: the status line and, without --json, the report's tables (the dashboard). */
static void show_period(struct collector *c, uint64_t t, uint64_t start)
{
	status(c);
	if (c->o.json) /* JSON: the report at the end only */
		return;
	fprintf(stdout, "\n--- %.1f s\n", (double)(t - start) / 1e9);
	clusterout_report(c->cs, stdout, 0, c->o.wide);
	fflush(stdout);
}

/* Receive and rotate until --duration or a signal. */
static void run_loop(struct collector *c)
{
	uint64_t start = now_ns(), next_status = start + c->o.period_ns;
	uint64_t next_push = start + c->o.rw_period_ns, next_snap = start + SNAPSHOT_NS;
	uint64_t next_state = start + STATE_NS;

	while (!g_stop) {
		struct pollfd pfd = { c->fd, POLLIN, 0 };
		uint64_t t = now_ns();

		if (c->o.duration_ns && t - start >= c->o.duration_ns)
			break;
		if (c->rw && t >= next_push) {
			push_remote(c);
			while (next_push <= t)
				next_push += c->o.rw_period_ns;
		}
		if (c->db && (t >= next_snap || c->retain_more))
			retain(
			    c); /* into the batch the accounting's commit (or the next tick's) ends */
		if (c->db && t >= next_state) {
			save_state(c);
			next_state = t + STATE_NS;
		}
		if (c->db && t >= next_snap) {
			snapshot(c);
			next_snap = t + SNAPSHOT_NS;
		} else if (c->db) {
			store_note(c, store_tick(c->db, t));
		}
		if (c->http && t >= c->next_publish_ns)
			publish(c, t);
		if (c->o.period_ns && t >= next_status) {
			show_period(c, t, start);
			next_status += c->o.period_ns;
		}
		clusterrot_tick(c->cs, now_rt_ns());
		if (poll(&pfd, 1, (int)(TICK_NS / 1000000)) > 0)
			/* drain the queue before sleeping again: one wake-up per burst, not per few datagrams */
			for (int k = 0; k < 64 && receive(c) == BATCH; k++)
				;
	}
}

/* The intervals still open are closed, then the report (the last status line first with --period). */
static void final_report(struct collector *c)
{
	clusteragg_close_all(c->cs);
	if (c->o.period_ns)
		status(c);
	if (c->o.period_ns && !c->o.json)
		fputs("\n--- end\n", stdout);
	clusterout_report(c->cs, stdout, c->o.json, c->o.wide);
	fflush(stdout);
}

/* Stop serving, flush and close the files (what could not be written is said), free the engine. */
static void teardown(struct collector *c)
{
	if (c->rw) {
		push_remote(c); /* the final totals */
		remotewrite_stop(c->rw, 5000000000ull);
	}
	httpd_stop(c->http);
	promtext_free(&c->text); /* the server thread is gone */
	if (c->fwd_errors)
		log_warn("%" PRIu64 " accepted datagrams could not be sent to --forward %s",
			 c->fwd_errors, c->o.forward);
	if (c->fwd_fd >= 0)
		close(c->fwd_fd);
	if (c->out && pcapio_flush(c->out))
		log_warn("--pcap-out %s: write error; the capture is incomplete", c->o.pcap_out);
	pcapio_close(c->out);
	snapshot(c);
	if (c->db && (c->store_errors || c->store_failing)) {
		struct store_stats st;

		store_get_stats(c->db, &st);
		c->store_rc =
		    st.last_err == -ENOSPC || st.last_err == -EDQUOT || st.last_err == -EFBIG
			? EXIT_CANNOT
			: EXIT_FAIL;
		if (c->store_failing)
			log_warn("store %s: the last accounting could not be written: %s",
				 c->o.store, store_error(c->db));
	}
	if (c->db) {
		struct store_stats st;

		store_get_stats(c->db, &st);
		if (st.deleted)
			log_info("store %s: %" PRIu64 " rows older than --retain deleted",
				 c->o.store, st.deleted);
	}
	if (store_close(c->db))
		log_warn("store %s: write error; the store is incomplete", c->o.store);
	if (c->out_errors || c->store_errors)
		log_warn("%" PRIu64 " datagrams not written to --pcap-out, %" PRIu64
			 " not written to the store",
			 c->out_errors, c->store_errors);
	if (c->sock_drops)
		log_warn("the kernel dropped %" PRIu64 " datagrams (receive buffer full)",
			 c->sock_drops);
	if (c->fd >= 0)
		close(c->fd);
	clusteragg_free(c->cs);
	keyfile_clear(&c->keys);
}

int collect_main(int argc, char **argv)
{
	struct collector c = { .fd = -1, .fwd_fd = -1 };
	char err[256];
	int ret = parse_args(argc, argv, &c.o);

	if (ret >= 0)
		return ret;
	log_set_verbosity(c.o.quiet ? -1 : c.o.verbose);
	if (keyfile_load(c.o.key_file, &c.keys, err, sizeof(err))) {
		log_err("%s", err);
		return EXIT_USAGE;
	}
	promtext_init(&c.text);
	c.cs = engine_new(&c);
	if (!c.cs) {
		log_err("collector: %s", strerror(errno));
		ret = EXIT_FAIL;
	} else if (c.o.pcap_in) {
		catch_signals();
		ret = run_replay(&c);
	} else {
		catch_signals();
		ret = start_live(&c);
		if (ret == EXIT_OK) {
			run_loop(&c);
			save_state(&c); /* before final_report closes the open intervals */
		}
	}
	if (ret == EXIT_OK)
		final_report(&c);
	teardown(&c);
	return ret == EXIT_OK && c.store_rc ? c.store_rc : ret;
}
