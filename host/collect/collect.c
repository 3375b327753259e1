/* SPDX-License-Identifier: MIT */
/* collect: `vnoise-host collect`, the cluster collector's daemon around clusteragg (see collect.h). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "collect/collect.h"
#include "collect/clusteragg.h"
#include "cli/exitcode.h"
#include "export/httpd.h"
#include "format/keyfile.h"
#include "util/log.h"
#include "util/monotime.h"
#include "util/parse.h"
#include "collect/pcapio.h"
#include "export/promfmt.h"

#define BATCH 64 /* datagrams per recvmmsg() */
#define TICK_NS 5000000ull /* the rotation is driven at least this often */

static const char usage[] =
    "usage: vnoise-host collect [options]\n"
    "Receive the nodes' UDP reports, keep them, rank the nodes, rotate detailed sampling.\n"
    "  -k, --key-file FILE     shared report keys: lines 'ID HEX' (required; mode 600)\n"
    "  -l, --listen ADDR:PORT  where to receive (default " COLLECT_DEFAULT_LISTEN
    "; port 0: any free port)\n"
    "  -m, --metrics ADDR:PORT serve Prometheus /metrics there (off by default)\n"
    "  -s, --store FILE        keep accepted reports in FILE, reloaded at start (default "
    "./" COLLECT_DEFAULT_STORE ")\n"
    "      --no-store          keep nothing on disk\n"
    "  -w, --pcap-out FILE     write every datagram received to FILE (pcap)\n"
    "  -r, --pcap-in FILE      replay a capture instead of listening, print the report, exit\n"
    "      --slot DUR          round-robin slot (default 1s; 0: no rotation, counters only)\n"
    "      --sample-nodes N    nodes sampled per slot and job (default 1)\n"
    "      --wait-nodes N      start a job's rotation once N of its nodes registered (default 1)\n"
    "      --slots N           stop rotating after N slots per job (default: never)\n"
    "      --exclude-pct P     take out a node whose compute time rises more than P%% while "
    "sampled (default 20)\n"
    "      --exclude-min N     intervals needed sampled and unsampled before judging (default "
    "5)\n"
    "      --max-nodes N       nodes kept at most (default 65536)\n"
    "      --job NAME          show NAME for that job's id (the nodes' --job; repeatable, 16 at "
    "most)\n"
    "  -d, --duration DUR      stop after DUR (default: at SIGINT/SIGTERM)\n"
    "  -p, --period DUR        every DUR: a status line on stderr and, without --json, the "
    "report's\n"
    "                          tables on stdout (a dashboard)\n"
    "  -j, --json              the final report as one vnoise.collect/1 JSON object\n"
    "  -q, --quiet / -v, --verbose\n"
    "exit: 0 done, 1 failure, 2 usage, 5 a damaged capture or store\n";

const char *collect_usage(void)
{
	return usage;
}

enum {
	O_NO_STORE = 256,
	O_SLOT,
	O_SAMPLE_NODES,
	O_WAIT_NODES,
	O_SLOTS,
	O_EXCL_PCT,
	O_EXCL_MIN,
	O_MAX_NODES,
	O_JOB,
};

int collect_parse(int argc, char **argv, struct collect_opts *o, char *err, size_t errlen)
{
	static const struct option opts[] = {
		{ "key-file", required_argument, 0, 'k' },
		{ "listen", required_argument, 0, 'l' },
		{ "metrics", required_argument, 0, 'm' },
		{ "store", required_argument, 0, 's' },
		{ "no-store", no_argument, 0, O_NO_STORE },
		{ "pcap-out", required_argument, 0, 'w' },
		{ "pcap-in", required_argument, 0, 'r' },
		{ "slot", required_argument, 0, O_SLOT },
		{ "sample-nodes", required_argument, 0, O_SAMPLE_NODES },
		{ "wait-nodes", required_argument, 0, O_WAIT_NODES },
		{ "slots", required_argument, 0, O_SLOTS },
		{ "exclude-pct", required_argument, 0, O_EXCL_PCT },
		{ "exclude-min", required_argument, 0, O_EXCL_MIN },
		{ "max-nodes", required_argument, 0, O_MAX_NODES },
		{ "job", required_argument, 0, O_JOB },
		{ "duration", required_argument, 0, 'd' },
		{ "period", required_argument, 0, 'p' },
		{ "json", no_argument, 0, 'j' },
		{ "quiet", no_argument, 0, 'q' },
		{ "verbose", no_argument, 0, 'v' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct sockaddr_storage ss;
	socklen_t sl;
	int c, v, no_store = 0;

	memset(o, 0, sizeof(*o));
	o->listen = COLLECT_DEFAULT_LISTEN;
	o->store = COLLECT_DEFAULT_STORE;
	o->slot_ns = 1000000000ull;
	o->sample_nodes = 1;
	o->wait_nodes = 1;
	o->exclude_pct = 20;
	o->exclude_min = 5;
	o->max_nodes = 65536;
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:k:l:m:s:w:r:d:p:jqvh", opts, NULL)) != -1) {
		const char *name = optind > 1 && optind <= argc ? argv[optind - 1] : "?";

		switch (c) {
		case 'k':
			o->key_file = optarg;
			break;
		case 'l':
			if (parse_sockaddr(optarg, 0, &ss, &sl)) {
				snprintf(err, errlen, "--listen: '%s' is not a numeric ADDR:PORT",
					 optarg);
				return -EINVAL;
			}
			o->listen = optarg;
			break;
		case 'm':
			if (parse_sockaddr(optarg, 0, &ss, &sl)) {
				snprintf(err, errlen, "--metrics: '%s' is not a numeric ADDR:PORT",
					 optarg);
				return -EINVAL;
			}
			o->metrics = optarg;
			break;
		case 's':
			o->store = optarg;
			break;
		case O_NO_STORE:
			no_store = 1;
			break;
		case 'w':
			o->pcap_out = optarg;
			break;
		case 'r':
			o->pcap_in = optarg;
			break;
		case O_SLOT:
			if (parse_duration(optarg, 1000000000ull, &o->slot_ns) ||
			    (o->slot_ns && o->slot_ns < 1000000ull)) {
				snprintf(err, errlen, "--slot: '%s' is not 0 or a duration >= 1ms",
					 optarg);
				return -EINVAL;
			}
			break;
		case O_SAMPLE_NODES:
		case O_WAIT_NODES:
		case O_EXCL_MIN:
		case O_MAX_NODES:
			if (parse_int(optarg, 1, c == O_MAX_NODES ? 1 << 24 : 1 << 20, &v)) {
				snprintf(err, errlen, "%s: '%s' is not a positive number", name,
					 optarg);
				return -EINVAL;
			}
			if (c == O_SAMPLE_NODES)
				o->sample_nodes = (unsigned)v;
			else if (c == O_WAIT_NODES)
				o->wait_nodes = (unsigned)v;
			else if (c == O_EXCL_MIN)
				o->exclude_min = (unsigned)v;
			else
				o->max_nodes = (unsigned)v;
			break;
		case O_JOB:
			if (!*optarg || strlen(optarg) > 31 || o->njobs == 16) {
				snprintf(
				    err, errlen,
				    "--job: '%.40s' is not a name of 1 to 31 bytes (16 at most)",
				    optarg);
				return -EINVAL;
			}
			o->jobs[o->njobs++] = optarg;
			break;
		case O_SLOTS:
			if (parse_u64(optarg, &o->max_slots) || !o->max_slots) {
				snprintf(err, errlen, "--slots: '%s' is not a positive number",
					 optarg);
				return -EINVAL;
			}
			break;
		case O_EXCL_PCT:
			if (parse_double(optarg, &o->exclude_pct) || o->exclude_pct > 1e6) {
				snprintf(err, errlen,
					 "--exclude-pct: '%s' is not a percentage >= 0", optarg);
				return -EINVAL;
			}
			break;
		case 'd':
		case 'p':
			if (parse_duration(optarg, 1000000000ull,
					   c == 'd' ? &o->duration_ns : &o->period_ns) ||
			    (c == 'p' && o->period_ns < 1000000ull)) {
				snprintf(err, errlen, "%s: '%s' is not a duration%s", name, optarg,
					 c == 'p' ? " >= 1ms" : "");
				return -EINVAL;
			}
			break;
		case 'j':
			o->json = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			return 1;
		case ':':
			snprintf(err, errlen, "%s needs a value", name);
			return -EINVAL;
		default:
			snprintf(err, errlen, "unknown option '%s'", name);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (!o->key_file) {
		snprintf(err, errlen, "--key-file is required (the key shared with the nodes)");
		return -EINVAL;
	}
	if (no_store || o->pcap_in)
		o->store = NULL;
	if (o->pcap_in && (o->pcap_out || o->metrics)) {
		snprintf(err, errlen,
			 "--pcap-in replays and exits: no --pcap-out or --metrics with it");
		return -EINVAL;
	}
	if (o->store && o->pcap_out && !strcmp(o->store, o->pcap_out)) {
		snprintf(err, errlen, "--store and --pcap-out are the same file");
		return -EINVAL;
	}
	return 0;
}

/* ---- the daemon ---- */

struct collector {
	struct collect_opts o;
	struct keyfile keys;
	struct clusteragg *cs;
	pthread_mutex_t lock; /* cs: the receive loop and the /metrics thread */
	int fd;
	struct sockaddr_storage me;
	socklen_t melen;
	struct pcapio_w *out, *store;
	uint64_t out_errors, store_errors, sock_drops, cmd_send_errors;
	struct httpd *http;
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

static int render(void *ctx, struct bufout *o)
{
	struct collector *c = ctx;
	int rc;

	pthread_mutex_lock(&c->lock);
	rc = clusteragg_render_prom(c->cs, o);
	if (!rc) {
		promfmt_family(o, "vnoise_collect_socket_drops_total", "counter",
			       "Datagrams the kernel dropped because the receive buffer was full");
		promfmt_sample_u64(o, "vnoise_collect_socket_drops_total", NULL, 0, c->sock_drops);
		promfmt_family(o, "vnoise_collect_store_errors_total", "counter",
			       "Accepted datagrams that could not be written to the store");
		promfmt_sample_u64(o, "vnoise_collect_store_errors_total", NULL, 0,
				   c->store_errors);
		promfmt_family(o, "vnoise_collect_pcap_errors_total", "counter",
			       "Datagrams that could not be written to --pcap-out");
		promfmt_sample_u64(o, "vnoise_collect_pcap_errors_total", NULL, 0, c->out_errors);
		rc = bufout_result(o) < 0 ? -ENOSPC : 0;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* One datagram from src to dst at t: pcap-out, engine, store. Called under c->lock. */
static void take(struct collector *c, const void *buf, size_t len, const struct sockaddr *src,
		 socklen_t srclen, const struct sockaddr *dst, uint64_t t)
{
	if (c->out && pcapio_write(c->out, t, src, dst, buf, len))
		c->out_errors++;
	if (clusteragg_ingest(c->cs, buf, len, src, srclen, t) == CS_OK && c->store &&
	    pcapio_write(c->store, t, src, dst, buf, len))
		c->store_errors++;
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

	pthread_mutex_lock(&c->lock);
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
	pthread_mutex_unlock(&c->lock);
	return n;
}

static void status(struct collector *c)
{
	char line[256];

	pthread_mutex_lock(&c->lock);
	clusteragg_status(c->cs, line, sizeof(line));
	pthread_mutex_unlock(&c->lock);
	fprintf(stderr, "%s socket-drops %" PRIu64 "\n", line, c->sock_drops);
}

/*
 * The store: its datagrams are replayed into the engine and written again, as they are accepted, to a new
 * file that then replaces it. A store whose tail is damaged (the collector died while writing) is so
 * repaired, the damaged file kept beside it as FILE.damaged; a file that is not a capture is left alone.
 */
static int open_store(struct collector *c)
{
	char err[256], tmp[PATH_MAX], bad[PATH_MAX + 16];
	struct pcapio_stats st = { 0 };
	const char *path = c->o.store;
	int rc;

	if (access(path, F_OK)) {
		c->store = pcapio_create(path, err, sizeof(err));
		if (!c->store) {
			log_err("store %s", err);
			return -EIO;
		}
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	snprintf(bad, sizeof(bad), "%s.damaged", path);
	c->store = pcapio_create(tmp, err, sizeof(err));
	if (!c->store) {
		log_err("store %s", err);
		return -EIO;
	}
	rc = pcapio_replay(path, 0, replay_one, c, &st, err, sizeof(err));
	if (rc && (rc != -EBADMSG || !st.packets)) {
		log_err("store %s", err);
		unlink(tmp);
		return rc == -EBADMSG || rc == -ENOTSUP ? -EBADMSG : rc;
	}
	if (rc) {
		log_warn("store %s; the %" PRIu64
			 " datagrams before the damage are kept, the file is "
			 "moved to %s",
			 err, st.udp, bad);
		if (rename(path, bad))
			log_warn("store: cannot keep %s: %s", bad, strerror(errno));
	}
	if (pcapio_flush(c->store) || rename(tmp, path)) {
		log_err("store %s: %s", path, strerror(errno));
		unlink(tmp);
		return -EIO;
	}
	log_info("store %s: %" PRIu64 " datagrams reloaded, %" PRIu64 " packets skipped", path,
		 st.udp, st.packets - st.udp);
	return 0;
}

int collect_main(int argc, char **argv)
{
	struct collector c = { .fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER };
	struct clusteragg_cfg cfg = { 0 };
	struct sigaction sa = { 0 };
	char err[256];
	uint64_t start, next_status;
	int rc, ret = EXIT_FAIL;

	rc = collect_parse(argc, argv, &c.o, err, sizeof(err));
	if (rc == 1) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-host collect --help')", err);
		return EXIT_USAGE;
	}
	log_set_verbosity(c.o.quiet ? -1 : c.o.verbose);
	if (keyfile_load(c.o.key_file, &c.keys, err, sizeof(err))) {
		log_err("%s", err);
		return EXIT_USAGE;
	}
	cfg.keys = &c.keys;
	cfg.slot_ns = c.o.pcap_in ? 0 : c.o.slot_ns;
	cfg.sample_nodes = c.o.sample_nodes;
	cfg.wait_nodes = c.o.wait_nodes;
	cfg.max_slots = c.o.max_slots;
	cfg.exclude_ratio = c.o.exclude_pct / 100;
	cfg.exclude_min = c.o.exclude_min;
	cfg.max_nodes = c.o.max_nodes;
	cfg.send = send_cmd;
	cfg.send_ctx = &c;
	cfg.event = on_event;
	cfg.job_names = c.o.jobs;
	cfg.njob_names = c.o.njobs;
	c.cs = clusteragg_new(&cfg);
	if (!c.cs) {
		log_err("collector: %s", strerror(errno));
		goto out;
	}
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	if (c.o.pcap_in) {
		rc = replay(&c, c.o.pcap_in, "capture");
		if (rc) {
			ret = rc == -EBADMSG ? EXIT_DAMAGED
			      : rc == -EINTR ? 128 + g_stop
					     : EXIT_FAIL;
			goto out;
		}
		goto report;
	}
	if (c.o.store) {
		rc = open_store(&c);
		if (rc) {
			ret = rc == -EBADMSG ? EXIT_DAMAGED : EXIT_FAIL;
			goto out;
		}
	}
	if (open_socket(&c))
		goto out;
	if (c.o.pcap_out) {
		c.out = pcapio_create(c.o.pcap_out, err, sizeof(err));
		if (!c.out) {
			log_err("--pcap-out %s: %s", c.o.pcap_out, err);
			goto out;
		}
	}
	if (c.o.metrics) {
		c.http = httpd_start(c.o.metrics, render, &c, err, sizeof(err));
		if (!c.http) {
			log_err("--metrics %s: %s", c.o.metrics, err);
			goto out;
		}
		log_info("serving /metrics on port %u", httpd_port(c.http));
	}
	start = now_ns();
	next_status = start + c.o.period_ns;
	while (!g_stop) {
		struct pollfd pfd = { c.fd, POLLIN, 0 };
		uint64_t t = now_ns();

		if (c.o.duration_ns && t - start >= c.o.duration_ns)
			break;
		if (c.o.period_ns && t >= next_status) {
			status(&c);
			if (!c.o.json) { /* the dashboard: the tables every period (JSON: at the end only) */
				pthread_mutex_lock(&c.lock);
				fprintf(stdout, "\n--- %.1f s\n", (double)(t - start) / 1e9);
				clusteragg_report(c.cs, stdout, 0);
				pthread_mutex_unlock(&c.lock);
				fflush(stdout);
			}
			next_status += c.o.period_ns;
		}
		pthread_mutex_lock(&c.lock);
		clusteragg_tick(c.cs, now_rt_ns());
		pthread_mutex_unlock(&c.lock);
		if (poll(&pfd, 1, (int)(TICK_NS / 1000000)) > 0)
			/* drain the queue before sleeping again: one wake-up per burst, not per few datagrams */
			for (int k = 0; k < 64 && receive(&c) == BATCH; k++)
				;
	}
report:
	pthread_mutex_lock(&c.lock);
	clusteragg_close_all(c.cs);
	pthread_mutex_unlock(&c.lock);
	if (c.o.period_ns)
		status(&c);
	if (c.o.period_ns && !c.o.json)
		fputs("\n--- end\n", stdout);
	clusteragg_report(c.cs, stdout, c.o.json);
	fflush(stdout);
	ret = EXIT_OK;
out:
	httpd_stop(c.http);
	if (c.out && pcapio_flush(c.out))
		log_warn("--pcap-out %s: write error; the capture is incomplete", c.o.pcap_out);
	pcapio_close(c.out);
	if (c.store && pcapio_flush(c.store))
		log_warn("store %s: write error; the store is incomplete", c.o.store);
	pcapio_close(c.store);
	if (c.out_errors || c.store_errors)
		log_warn("%" PRIu64 " datagrams not written to --pcap-out, %" PRIu64
			 " not written to the store",
			 c.out_errors, c.store_errors);
	if (c.sock_drops)
		log_warn("the kernel dropped %" PRIu64 " datagrams (receive buffer full)",
			 c.sock_drops);
	if (c.fd >= 0)
		close(c.fd);
	clusteragg_free(c.cs);
	keyfile_clear(&c.keys);
	return ret;
}
