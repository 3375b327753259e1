/* SPDX-License-Identifier: MIT */
/*
 * nodesim: a simulated cluster node for the collector's tests and benchmark. It uses the real node
 * module (shared/node): registers, sends one report per interval over UDP, takes the collector's SAMPLE
 * commands. Each interval it does a fixed amount of CPU work and reports the CPU time it took as the
 * compute time of its ranks (CPU time, so that sharing the CPU with the other simulated nodes does not
 * change it), plus noise of known size by class (a seeded generator). While sampled it reports in detail
 * (sources) and, with --slow-pct, does that much more work: a node that suffers from being sampled.
 * On exit it prints its own totals as one JSON line, to compare with the collector's.
 *
 *   nodesim -c ADDR:PORT -k KEYFILE -n NODE_ID -j JOB [-i INTERVALS] [-t PERIOD] [-w WORK_US] [-r RANKS]
 *           [--slow-pct P] [--drop-every K] [--forge N] [--seed S] [--session N] [--record FILE]
 *   nodesim --flood N ...   send N sealed datagrams as fast as possible, no work (the collector bench)
 *   nodesim --replay FILE -c ADDR:PORT -k KEYFILE -n NODE_ID -j JOB
 *                           send the datagrams --record kept, as they are, 1 ms apart (a replay attack)
 * --session N sets the session id (default: the start time), e.g. one far ahead, as a forger would.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "format/keyfile.h"
#include "util/parse.h"
#include "cluster/node.h"

static uint64_t clk(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_state;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

struct dropper {
	int fd;
	uint64_t every, n, dropped;
	FILE *rec; /* --record: each datagram sent, as a 2-byte length (host order) and its bytes */
};

static ssize_t drop_xmit(void *ctx, const void *buf, size_t len)
{
	struct dropper *d = ctx;
	ssize_t w;

	if (d->every && ++d->n % d->every == 0) {
		d->dropped++;
		return -ECANCELED; /* lost on purpose: the collector must count it lost */
	}
	w = send(d->fd, buf, len, MSG_NOSIGNAL);
	if (w == (ssize_t)len && d->rec) {
		uint16_t l = (uint16_t)len;

		if (fwrite(&l, sizeof(l), 1, d->rec) != 1 || fwrite(buf, len, 1, d->rec) != 1)
			fprintf(stderr, "nodesim: --record: write failed\n");
	}
	return w < 0 ? -errno : w;
}

/* --replay: the datagrams of a --record file, sent as they are; how many went out, or -1. */
static long replay(int fd, const char *path)
{
	static uint8_t buf[65536];
	FILE *f = fopen(path, "rb");
	uint16_t l;
	long sent = 0;

	if (!f) {
		fprintf(stderr, "nodesim: %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fread(&l, sizeof(l), 1, f) == 1 && fread(buf, l, 1, f) == 1) {
		if (send(fd, buf, l, MSG_NOSIGNAL) == (ssize_t)l)
			sent++;
		usleep(1000);
	}
	fclose(f);
	return sent;
}

static volatile sig_atomic_t stop;
static void on_sig(int s)
{
	stop = s;
}

static void usage(void)
{
	fprintf(stderr, "usage: nodesim -c ADDR:PORT -k KEYFILE -n NODE_ID -j JOB [-i INTERVALS] "
			"[-t PERIOD] [-w WORK_US] [-r RANKS] [--slow-pct P] [--drop-every K] "
			"[--forge N] [--seed S] [--flood N] [--session N] [--record FILE] "
			"[--replay FILE]\n");
	exit(2);
}

/* What the command line asks for. */
struct sim_opts {
	const char *keypath, *job;
	uint64_t node_id, intervals, period, work_us, drop_every, forge, seed, flood, session;
	const char *record, *replay;
	int ranks;
	double slow; /* extra work while sampled, percent */
};

/* Parse the command line into *o and the collector's address into cfg; exits through usage() on error. */
static void parse_args(int argc, char **argv, struct sim_opts *o, struct node_cfg *cfg)
{
	static const struct option opts[] = {
		{ "collector", required_argument, 0, 'c' },
		{ "key-file", required_argument, 0, 'k' },
		{ "node-id", required_argument, 0, 'n' },
		{ "job", required_argument, 0, 'j' },
		{ "intervals", required_argument, 0, 'i' },
		{ "period", required_argument, 0, 't' },
		{ "work-us", required_argument, 0, 'w' },
		{ "ranks", required_argument, 0, 'r' },
		{ "slow-pct", required_argument, 0, 'S' },
		{ "drop-every", required_argument, 0, 'D' },
		{ "forge", required_argument, 0, 'F' },
		{ "seed", required_argument, 0, 's' },
		{ "flood", required_argument, 0, 'L' },
		{ "session", required_argument, 0, 'e' },
		{ "record", required_argument, 0, 'R' },
		{ "replay", required_argument, 0, 'P' },
		{ 0, 0, 0, 0 },
	};
	const char *addr = NULL;
	int c;

	*o = (struct sim_opts){
		.intervals = 100, .period = 10000000, .work_us = 500, .seed = 1, .ranks = 4
	};
	while ((c = getopt_long(argc, argv, "c:k:n:j:i:t:w:r:", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			addr = optarg;
			break;
		case 'k':
			o->keypath = optarg;
			break;
		case 'n':
			if (parse_u64(optarg, &o->node_id))
				usage();
			break;
		case 'j':
			o->job = optarg;
			break;
		case 'i':
			if (parse_u64(optarg, &o->intervals))
				usage();
			break;
		case 't':
			if (parse_duration(optarg, 1000000, &o->period) || !o->period)
				usage();
			break;
		case 'w':
			if (parse_u64(optarg, &o->work_us))
				usage();
			break;
		case 'r':
			if (parse_int(optarg, 1, 64, &o->ranks))
				usage();
			break;
		case 'S':
			if (parse_double(optarg, &o->slow))
				usage();
			break;
		case 'D':
			if (parse_u64(optarg, &o->drop_every))
				usage();
			break;
		case 'F':
			if (parse_u64(optarg, &o->forge))
				usage();
			break;
		case 's':
			if (parse_u64(optarg, &o->seed))
				usage();
			break;
		case 'L':
			if (parse_u64(optarg, &o->flood))
				usage();
			break;
		case 'e':
			if (parse_u64(optarg, &o->session) || !o->session)
				usage();
			break;
		case 'R':
			o->record = optarg;
			break;
		case 'P':
			o->replay = optarg;
			break;
		default:
			usage();
		}
	}
	if (!addr || !o->keypath || !o->job ||
	    parse_sockaddr(addr, 1, &cfg->collector, &cfg->collector_len))
		usage();
}

/* Send forge reports in the right format, MAC made with a key the collector does not have. */
static void send_forged(const struct node *n, const struct keyfile *kf, uint64_t forge)
{
	struct vn_report_rec rec;

	for (uint64_t f = 0; f < forge; f++) {
		struct keyfile bad = *kf;
		struct node fake = *n;
		uint8_t key[KEYFILE_KEY_MAX];

		memcpy(key, kf->keys[0].key, kf->keys[0].len);
		key[0] ^= 0x5a;
		bad.keys[0].key = key; /* the copy's keys still point at kf's bytes */
		fake.cfg.keys = &bad;
		fake.xmit = NULL;
		memset(&rec, 0, sizeof(rec));
		rec.kind = VN_REPORT_REC_RANK;
		rec.noise_ns = 1000000000;
		if (node_send(&fake, VN_REPORT_COUNTERS, 0, 0, 0, &rec, 1, clk(CLOCK_REALTIME)))
			fprintf(stderr, "nodesim: forged datagram not sent\n");
	}
}

/* The detail record of class record x (rank r): where the noise came from. */
static void fill_source(struct vn_report_rec *y, const struct vn_report_rec *x, int r)
{
	*y = *x;
	if (x->cls == VN_CLASS_IRQ) {
		y->src_kind = VN_REPORT_SRC_IRQ;
		y->src_id = 11;
		snprintf(y->name, sizeof(y->name), "virtio0-input");
	} else if (x->cls == VN_CLASS_SOFTIRQ) {
		y->src_kind = VN_REPORT_SRC_SOFTIRQ;
		y->src_id = 3; /* NET_RX */
		snprintf(y->name, sizeof(y->name), "NET_RX");
	} else {
		y->src_kind = VN_REPORT_SRC_THREAD;
		y->src_id = 1000 + (uint32_t)r;
		snprintf(y->name, sizeof(y->name), "kworker/%d:1", r % 64);
	}
}

/*
 * One interval's records into rec (room for ranks * 7): per rank a summary with compute time spent (+ r us)
 * and noise of three classes drawn from the seeded generator, and when sampled each class's source.
 * Returns the number of records.
 */
static size_t build_report(struct vn_report_rec *rec, int ranks, uint64_t spent, int sampled)
{
	static const uint8_t cls[3] = { VN_CLASS_IRQ, VN_CLASS_SOFTIRQ, VN_CLASS_THREAD };
	size_t nr = 0;

	for (int r = 0; r < ranks; r++) {
		struct vn_report_rec *sum = &rec[nr++];
		uint64_t cls_ns[3] = { rng() % 20000, rng() % 30000, rng() % 50000 };

		memset(sum, 0, sizeof(*sum));
		sum->kind = VN_REPORT_REC_RANK;
		sum->id = (uint32_t)r;
		sum->compute_ns = spent + (uint64_t)r * 1000;
		for (int k = 0; k < 3; k++) {
			struct vn_report_rec *x = &rec[nr++];

			memset(x, 0, sizeof(*x));
			x->kind = VN_REPORT_REC_RANK;
			x->id = (uint32_t)r;
			x->cls = cls[k];
			x->noise_ns = cls_ns[k];
			x->count = 1 + (uint32_t)(rng() % 5);
			sum->noise_ns += cls_ns[k];
			sum->count += x->count;
			if (sampled) /* detail: the source of the class */
				fill_source(&rec[nr++], x, r);
		}
	}
	return nr;
}

/* Sleep until t_next (CLOCK_MONOTONIC), taking the collector's commands at least every 2 ms. */
static void wait_until(struct node *n, uint64_t t_next)
{
	uint64_t now = clk(CLOCK_MONOTONIC);

	while (now < t_next && !stop) {
		uint64_t left = t_next - now;
		struct timespec ts = { (time_t)(left / 1000000000ull),
				       (long)(left % 1000000000ull) };

		if (left > 2000000) /* take commands while waiting */
			ts = (struct timespec){ 0, 2000000 };
		nanosleep(&ts, NULL);
		now = clk(CLOCK_MONOTONIC);
		node_poll(n, now);
	}
}

/* The intervals (or the flood): work, report, wait; a HELLO every second. */
static void run(struct node *n, const struct sim_opts *o, const struct dropper *d)
{
	struct vn_report_rec rec[64 * 7];
	uint64_t t_next = clk(CLOCK_MONOTONIC), last_hello = t_next;

	for (uint64_t iv = 0; iv < (o->flood ? o->flood : o->intervals) && !stop; iv++) {
		uint64_t now = clk(CLOCK_MONOTONIC), start_rt = clk(CLOCK_REALTIME), c0, spent,
			 work;
		size_t nr;
		int sampled;

		node_poll(n, now);
		sampled = node_sampled(n, now);
		if (now - last_hello > 1000000000ull) {
			last_hello = now;
			if (node_hello(n, start_rt))
				fprintf(stderr, "nodesim %" PRIu64 ": hello not sent\n",
					o->node_id);
		}
		work = o->flood
			   ? 0
			   : o->work_us * 1000 * (sampled && o->slow > 0 ? 1 + o->slow / 100 : 1);
		c0 = clk(CLOCK_THREAD_CPUTIME_ID);
		while ((spent = clk(CLOCK_THREAD_CPUTIME_ID) - c0) < work)
			;
		nr = build_report(rec, o->ranks, spent, sampled);
		if (node_send(n, sampled ? VN_REPORT_INTERVAL : VN_REPORT_COUNTERS, iv, start_rt,
			      clk(CLOCK_REALTIME), rec, nr, clk(CLOCK_REALTIME)) &&
		    !d->every)
			fprintf(stderr,
				"nodesim %" PRIu64 ": interval %" PRIu64 " not sent whole\n",
				o->node_id, iv);
		if (o->flood)
			continue;
		t_next += o->period;
		wait_until(n, t_next);
	}
}

/* This node's totals as one JSON line on stdout, to compare with the collector's. */
static void print_totals(const struct node *n, const struct sim_opts *o, const struct dropper *d)
{
	printf("{\"node\":%" PRIu64 ",\"session\":%" PRIu64 ",\"datagrams\":%" PRIu64
	       ",\"send_errors\":%" PRIu64 ",\"dropped\":%" PRIu64 ",\"forged\":%" PRIu64
	       ",\"intervals\":{\"sampled\":%" PRIu64 ",\"counters\":%" PRIu64
	       "},\"noise_ns\":%" PRIu64 ",\"compute_ns\":%" PRIu64 ",\"records\":%" PRIu64
	       ",\"class_ns\":{\"irq\":%" PRIu64 ",\"softirq\":%" PRIu64 ",\"thread\":%" PRIu64
	       "},\"commands\":%" PRIu64 ",\"leases\":%" PRIu64 ",\"commands_bad\":%" PRIu64
	       ",\"commands_foreign\":%" PRIu64 ",\"commands_replayed\":%" PRIu64 "}\n",
	       o->node_id, n->cfg.session_id, n->st.datagrams, n->st.send_errors, d->dropped,
	       o->forge, n->st.intervals_sampled, n->st.intervals_counters, n->st.noise_ns,
	       n->st.compute_ns, n->st.records, n->st.class_ns[VN_CLASS_IRQ],
	       n->st.class_ns[VN_CLASS_SOFTIRQ], n->st.class_ns[VN_CLASS_THREAD], n->st.cmds,
	       n->st.leases, n->st.cmds_bad, n->st.cmds_foreign, n->st.cmds_replayed);
}

int main(int argc, char **argv)
{
	struct sim_opts o;
	struct keyfile kf;
	struct node_cfg cfg = { 0 };
	struct node n;
	struct dropper d = { 0 };
	char err[256];

	parse_args(argc, argv, &o, &cfg);
	if (keyfile_load(o.keypath, &kf, err, sizeof(err))) {
		fprintf(stderr, "nodesim: %s\n", err);
		return 2;
	}
	rng_state = o.seed * 0x9e3779b97f4a7c15ull + o.node_id + 1;
	cfg.node_id = o.node_id;
	cfg.job_id = datagram_job_id(o.job);
	cfg.keys = &kf;
	cfg.session_id = o.session;
	if (node_open(&n, &cfg, err, sizeof(err))) {
		fprintf(stderr, "nodesim: %s\n", err);
		return 1;
	}
	if (o.replay) {
		long sent = replay(n.fd, o.replay);

		printf("{\"node\":%" PRIu64 ",\"replayed\":%ld}\n", o.node_id, sent);
		node_close(&n);
		return sent < 0 ? 1 : 0;
	}
	d.fd = n.fd;
	if (o.record && !(d.rec = fopen(o.record, "wb"))) {
		fprintf(stderr, "nodesim: %s: %s\n", o.record, strerror(errno));
		return 1;
	}
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	if (node_hello(&n, clk(CLOCK_REALTIME)))
		fprintf(stderr, "nodesim %" PRIu64 ": hello not sent\n", o.node_id);
	d.every = o.drop_every;
	n.xmit = drop_xmit;
	n.xmit_ctx = &d;
	send_forged(&n, &kf, o.forge);
	run(&n, &o, &d);
	n.xmit = NULL; /* a last HELLO, never dropped, shows the collector any loss at the tail */
	if (node_hello(&n, clk(CLOCK_REALTIME)))
		fprintf(stderr, "nodesim %" PRIu64 ": last hello not sent\n", o.node_id);
	print_totals(&n, &o, &d);
	if (d.rec && fclose(d.rec))
		fprintf(stderr, "nodesim: --record: write failed\n");
	node_close(&n);
	keyfile_clear(&kf);
	return 0;
}
