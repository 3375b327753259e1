/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: `vnoise-host report FILE` on hostile record files. The input makes a file in one of two
 * ways, then hostrec_report (host/views/hostrec.c), the code the command runs, replays it once per view: the
 * text summary and --json, each without and with --guest (the combined view), --gaps and --html (the page to
 * /dev/null). The views print to stdout, sent to /dev/null; the log's lines are swallowed.
 *   raw     an input that begins with the file magic ("VNOISREC") is the file itself: the reader's CRCs
 *           reject most changes, so this mode tests the reader and its resynchronisation;
 *   sealed  any other input is a program of chunks, each written through the record writer (valid CRCs)
 *           after a HOST_META chunk: a type byte (picking a host chunk type, a guest one, or any), then for a
 *           record array a count byte and that many records, for a text chunk a length (u16) and the text;
 *           so that hostile but intact chunks reach the engine (hostagg, hostbind) and every view.
 * Nothing may crash, overread, leak or return an exit code `report` does not document (0, 1, 4, 5).
 *
 * Seeds: with VNOISE_FUZZ_SEEDS=DIR the target writes small host record files into DIR, each also as a sealed
 * program, and exits: making a real one needs root, eBPF and libvirt domains (tests/fuzz/make_corpus.sh runs
 * it). Build and run:
 *   make build-fuzz/fuzz_hostrec && build-fuzz/fuzz_hostrec -max_total_time=60 -max_len=65536 CORPUS
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz_input.h"
#include "cli/exitcode.h"
#include "cmd/hostparams.h"
#include "engine/live.h"
#include "format/recwriter.h"
#include "host.h"
#include "record.h"
#include "util/log.h"
#include "views/hostrec.h"

#define S 1000000000ULL
#define MAGIC "VNOISREC"

/* The sealed mode's chunk types: record arrays (size), text chunks (0). */
static const struct {
	uint16_t type;
	uint16_t size;
} types[] = {
	{ VN_CHUNK_HOST_META, 0 },
	{ VN_CHUNK_HOST_DOMAIN, 0 },
	{ VN_CHUNK_STATS, 0 },
	{ VN_CHUNK_END, 0 },
	{ VN_CHUNK_META, 0 },
	{ VN_CHUNK_HOST_PERIOD, sizeof(struct vn_host_period) },
	{ VN_CHUNK_HOST_OUT, sizeof(struct vn_host_out) },
	{ VN_CHUNK_HOST_RUN, sizeof(struct vn_host_run) },
	{ VN_CHUNK_HOST_AGG, sizeof(struct vn_host_agg) },
	{ VN_CHUNK_HOST_MATCH, sizeof(struct vn_host_match) },
	{ VN_CHUNK_HOST_MSRC, sizeof(struct vn_host_msrc) },
	{ VN_CHUNK_HOST_CHAN, sizeof(struct vn_host_chan) },
	{ VN_CHUNK_HOST_FLOW, sizeof(struct vn_host_flow) },
	{ VN_CHUNK_HOST_TAP, sizeof(struct vn_host_tap) },
	{ VN_CHUNK_HOST_MGAP, sizeof(struct vn_host_mgap) },
	{ VN_CHUNK_HOST_WORST, sizeof(struct vn_host_worst) },
	{ VN_CHUNK_SAMPLES, sizeof(struct vn_sample) },
	{ VN_CHUNK_EVENTS, sizeof(struct vn_event) },
};
#define NTYPES (sizeof(types) / sizeof(types[0]))
#define ANY_TYPE NTYPES /* the program's type byte: then a u16 type and a text-like payload */
#define PROG_MAX (1u << 20)

/* The seeds' programs: what put() wrote, in the sealed mode's encoding. */
static uint8_t prog[PROG_MAX];
static size_t nprog;

static void prog_add(const void *p, size_t n)
{
	if (nprog + n > sizeof(prog))
		exit(1);
	memcpy(prog + nprog, p, n);
	nprog += n;
}

/* hostrec.c's writer adds itself to the live engine, which a replay never runs (nor links: libvirt, eBPF). */
int live_add_sink(struct live *lv, const struct live_sink_ops *ops, void *ctx)
{
	(void)lv;
	(void)ops;
	(void)ctx;
	abort();
}

static bool swallow(void *ctx, const char *line)
{
	(void)ctx;
	(void)line;
	return true;
}

/* A seed's chunk, in the file and in its program (the HOST_META chunk the program's writer adds first is
 * not repeated there). */
static void put(struct recfile_writer *w, uint16_t type, const void *pl, size_t len)
{
	uint8_t k;

	if (recwriter_chunk(w, type, pl, (uint32_t)len))
		exit(1);
	for (k = 0; k < NTYPES && types[k].type != type; k++)
		;
	if (k == NTYPES || type == VN_CHUNK_HOST_META)
		return;
	prog_add(&k, 1);
	if (types[k].size) {
		uint8_t n = (uint8_t)(len / types[k].size);

		prog_add(&n, 1);
	} else {
		uint16_t n = (uint16_t)len;

		prog_add(&n, 2);
	}
	prog_add(pl, len);
}

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f || fwrite(p, 1, n, f) != n || fclose(f))
		exit(1);
}

/* One seed: a domain of two vCPUs over two periods, with (guest) the combined view's records. */
static void seed(const char *dir, const char *name, bool guest)
{
	static const char meta[] = "period_ns=1000000000\ndispatch=bpf\nirqs=1\nkvm=1\n"
				   "start_ns=1000000000\nself_pid=4242\nirq.24=eth0-rx\n";
	static const char dom[] =
	    "dom=0\nevent=started\nname=tenant-a\nuuid=0f0e0d0c-0b0a-0908-0706-"
	    "050403020100\nvirt=kvm\nqemu_pid=777\nnvcpus=2\nvcpu.0.tid=801\n"
	    "vcpu.1.tid=802\n";
	static const char stats[] = "end_ns=3000000000\ndispatch_dropped=1\ndispatch_anomalies=0\n"
				    "events_dropped=0\nreconnects=0\nrounds=400\nbpf_events=1234\n"
				    "bpf_run_ns=56789\nself_tids=4242,4243\n"
				    "dtl.0=on task 100 0 tenant-a\nbell.0=heard 5 6 tenant-a\n";
	char path[4096];
	struct recfile_writer *w;
	uint64_t t;

	snprintf(path, sizeof(path), "%s/%s.vnr", dir, name);
	nprog = 0;
	w = recwriter_open(path);
	if (!w)
		exit(1);
	put(w, VN_CHUNK_HOST_META, meta, sizeof(meta) - 1);
	put(w, VN_CHUNK_HOST_DOMAIN, dom, sizeof(dom) - 1);
	for (t = 1 * S; t < 3 * S; t += S) {
		struct vn_host_period p[2];
		struct vn_host_out o = {
			.start_ns = t + 1000, .end_ns = t + 90000, .vcpu = 1, .cpu = 3, .state = 'R'
		};
		struct vn_host_run r = { .start_ns = t + 2000,
					 .end_ns = t + 80000,
					 .out_start_ns = t + 1000,
					 .vcpu = 1,
					 .pid = 99,
					 .cpu = 3,
					 .comm = "kworker/3:1" };
		struct vn_host_agg ag[2] = {
			{ .start_ns = t,
			  .end_ns = t + S,
			  .kind = VN_HOST_AGG_EXIT,
			  .isa = 1,
			  .id = 30,
			  .count = 50,
			  .total_ns = 400000,
			  .max_ns = 20000 },
			{ .start_ns = t,
			  .end_ns = t + S,
			  .vcpu = 1,
			  .kind = VN_HOST_AGG_IRQ,
			  .id = 24,
			  .count = 3,
			  .total_ns = 9000,
			  .max_ns = 4000 },
		};

		for (uint32_t v = 0; v < 2; v++)
			p[v] = (struct vn_host_period){ .start_ns = t,
							.end_ns = t + S,
							.vcpu = v,
							.tid = 801 + v,
							.cpu = v,
							.steal_ns = 5000,
							.cpu_ns = 900000000,
							.exec_ns = 910000000,
							.run_delay_ns = 7000,
							.pcount = 100,
							.out_ns = 89000 * v,
							.out_periods = v,
							.out_r_ns = 89000 * v,
							.wait_ns = 3000 };
		put(w, VN_CHUNK_HOST_PERIOD, p, sizeof(p));
		put(w, VN_CHUNK_HOST_OUT, &o, sizeof(o));
		put(w, VN_CHUNK_HOST_RUN, &r, sizeof(r));
		put(w, VN_CHUNK_HOST_AGG, ag, sizeof(ag));
		if (guest) {
			struct vn_host_match m = { .start_ns = t,
						   .end_ns = t + S,
						   .vcpu = 1,
						   .gaps = 2,
						   .gap_ns = 150000,
						   .max_gap_ns = 100000,
						   .runtime_ns = 990000000,
						   .residual_ns = 10000,
						   .big_gaps = 0,
						   .latency_max_ns = 3000000,
						   .latency_sum_ns = 5000000,
						   .latency_gaps = 2,
						   .uncertainty_max_ns = 2000,
						   .gonly_gaps = 2,
						   .gonly_gap_ns = 150000 };
			struct vn_host_msrc ms[2] = {
				{ .start_ns = t,
				  .vcpu = 1,
				  .kind = VN_HOST_MSRC_HOST,
				  .cls = VN_HCLASS_HOST_PREEMPT,
				  .id = 99,
				  .comm = "kworker/3:1",
				  .count = 1,
				  .total_ns = 78000,
				  .max_ns = 78000 },
				{ .start_ns = t,
				  .vcpu = 1,
				  .kind = VN_HOST_MSRC_GUEST,
				  .cls = VN_CLASS_IRQ,
				  .id = 0x10000,
				  .count = 2,
				  .total_ns = 40000,
				  .max_ns = 30000 },
			};
			struct vn_host_chan ch = { 0 };
			struct vn_host_mgap g = { .start_ns = t + 7 * S,
						  .host_start_ns = t,
						  .duration_ns = 100000,
						  .uncertainty_ns = 2000,
						  .vcpu = 1,
						  .residual_ns = 10000 };

			m.guest_ns[VN_CLASS_IRQ] = 40000;
			m.host_ns[VN_HCLASS_HOST_PREEMPT] = 78000;
			m.host_ns[VN_HCLASS_HOST_WAIT] = 22000;
			m.gonly_ns[VN_CLASS_IRQ] = 40000;
			m.gonly_ns[VN_CLASS_UNEXPLAINED] = 110000;
			g.guest_ns[VN_CLASS_IRQ] = 12000;
			g.host_ns[VN_HCLASS_HOST_PREEMPT] = 78000;
			ch.start_ns = t;
			ch.end_ns = t + S;
			ch.state = VN_HOST_CHAN_OK;
			ch.records = 12;
			put(w, VN_CHUNK_HOST_MATCH, &m, sizeof(m));
			put(w, VN_CHUNK_HOST_MSRC, ms, sizeof(ms));
			put(w, VN_CHUNK_HOST_CHAN, &ch, sizeof(ch));
			put(w, VN_CHUNK_HOST_MGAP, &g, sizeof(g));
		}
		put(w, VN_CHUNK_STATS, stats, sizeof(stats) - 1);
	}
	if (recwriter_close(w, stats))
		exit(1);
	snprintf(path, sizeof(path), "%s/%s.prog", dir, name);
	write_file(path, prog, nprog);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dir = getenv("VNOISE_FUZZ_SEEDS");

	(void)argc;
	(void)argv;
	if (dir) {
		seed(dir, "host", false);
		seed(dir, "guest", true);
		exit(0);
	}
	if (!freopen("/dev/null", "w", stdout))
		exit(1);
	log_set_sink(swallow, NULL);
	return 0;
}

static void report(const char *path, int guest, int json, int gaps, const char *html)
{
	struct host_params p = { .cmd = HCMD_REPORT,
				 .input = path,
				 .top_n = 5,
				 .flows_top = 10,
				 .guest = guest,
				 .json = json,
				 .gaps = gaps,
				 .html = html };
	int rc = hostrec_report(&p);

	if (rc != EXIT_OK && rc != EXIT_FAIL && rc != EXIT_CANNOT && rc != EXIT_DAMAGED)
		abort(); /* report's documented exit codes */
	fflush(stdout);
}

/* The sealed mode: the program's chunks through the record writer, after a HOST_META chunk. */
static int write_sealed(const char *path, const uint8_t *data, size_t size)
{
	static const char meta[] = "period_ns=1000000000\ndispatch=bpf\nstart_ns=1000000000\n";
	static uint8_t pl[255 * sizeof(struct vn_host_match) + 65536];
	struct fuzz_in in = { data, size };
	struct recfile_writer *w = recwriter_open(path);
	int err;

	if (!w)
		return -1;
	err = recwriter_chunk(w, VN_CHUNK_HOST_META, meta, sizeof(meta) - 1);
	while (!err && in.n) {
		uint8_t k = fuzz_u8(&in) % (NTYPES + 1);
		uint16_t type = k < NTYPES ? types[k].type : 0;
		size_t len;

		if (k == ANY_TYPE)
			fuzz_bytes(&in, &type, sizeof(type));
		if (k < NTYPES && types[k].size) {
			len = (size_t)fuzz_u8(&in) * types[k].size;
		} else {
			uint16_t n;

			fuzz_bytes(&in, &n, sizeof(n));
			len = n;
		}
		fuzz_bytes(&in, pl, len);
		err = recwriter_chunk(w, type, pl, (uint32_t)len);
	}
	if (err) {
		recwriter_abort(w);
		return -1;
	}
	return recwriter_close(w, "end_ns=3000000000\n") ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/vnoise-fuzz-hostrec-XXXXXX";
	int fd = mkstemp(path), ok;

	if (fd < 0)
		return 0;
	if (size >= sizeof(MAGIC) - 1 && !memcmp(data, MAGIC, sizeof(MAGIC) - 1))
		ok = write(fd, data, size) == (ssize_t)size;
	else
		ok = write_sealed(path, data, size) == 0;
	close(fd);
	if (ok) {
		report(path, 0, 0, 0, NULL);
		report(path, 0, 1, 0, NULL);
		report(path, 1, 0, 0, NULL);
		report(path, 1, 1, 0, NULL);
		report(path, 1, 0, 1, NULL);
		report(path, 1, 0, 0, "/dev/null");
	}
	unlink(path);
	return 0;
}
