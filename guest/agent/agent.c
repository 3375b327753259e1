/* SPDX-License-Identifier: MIT */
/*
 * agent: `vnoise-guest agent` — answers the QEMU guest agent wire protocol (shared/format/qga) on vnoise's own
 * virtio-serial port org.vnoise.0 (vnoise-host connects to its host socket; guest-sync-delimited with 0xFF is
 * safe there). It never takes org.qemu.guest_agent.0 from qemu-ga: only with --qga-port does it also answer
 * there (libvirt's port: plain guest-sync), and only if the port is free at start (EBUSY: one warning, then
 * org.vnoise.0 only). Survives the host side going away: while no host client is connected the port reports
 * POLLHUP and reads return 0, so the agent drops any partial request and polls again every 100 ms. A port
 * that fails (read/write error, ENODEV, hot-unplug: its sysfs name is gone) is closed and looked for again
 * every PORT_RETRY_NS; one that appears later (hot-plug) is opened then. `agent --probe` prints the
 * channel's devices.
 *
 * Shared memory (protocol/shm.h): the agent maps the ivshmem BAR2, lays out a new epoch (one ring per possible
 * CPU), and a worker thread runs the measure engine (guest/measure/measure.c) with a sink that publishes every sample
 * and kernel-helper event into its CPU's ring within AGENT_DRAIN_NS. A clock thread answers the host's clock
 * exchanges through the mailbox of the host area (protocol/dtl.h, guest/dtl/clockresp: it holds
 * VN_DTL_RESPONDER_LOCK, retried every second while another vnoise-guest process answers) and beats the
 * status. __com.vnoise_start / __com.vnoise_stop start and stop the measurement; on exit the status says
 * "stopped" and the next agent starts a new epoch.
 *
 * `agent --passive`: no sampler, no eBPF, ever (__com.vnoise_start is refused): org.vnoise.0 and its status,
 * the guest area's status and the clock responder only, which then sleeps between polls instead of spinning
 * (production cost: the responder of guest/dtl's views).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>
#include "cli/exitcode.h"
#include "agent/agent.h"
#include "agent/guestdev.h"
#include "cli/cliopt.h"
#include "util/log.h"
#include "util/version.h"
#include "measure/measure.h"
#include "measure/params.h"
#include "util/parse.h"
#include "format/qga.h"
#include "channel/shmregion.h"
#include "channel/shmwriter.h"
#include "dtl.h"
#include "util/monotime.h"
#include "dtl/clockresp.h"

#define WRITE_WAIT_MS 1000 /* host end connected, no room: give a reply up after this */
#define HUP_GRACE_MS 3000 /* host end not connected this long: give a reply up */
#define HUP_WAIT_MS 5
#define PORT_RETRY_NS 1000000000ULL /* closed or absent ports: look again this often */
#define QGA_PORT "org.qemu.guest_agent.0"
#define VNOISE_PORT "org.vnoise.0"
#define CLOCK_POLL_NS 5000000ULL /* clock thread: mailbox poll interval outside the spin windows */
#define HEARTBEAT_NS 100000000ULL /* status heartbeat */
#define AGENT_DRAIN_NS 2000000ULL /* measurement drain -> shared memory (latency budget 10 ms) */
#define HORIZON_MARGIN_NS 200000ULL
/*
 * While the measurement attaches or detaches its eBPF programs (live patching of kernel text with int3), the
 * clock thread sleeps in QUIET_POLL_NS steps instead of waking every millisecond: under QEMU TCG a vCPU that
 * keeps running the patched code paths (timer interrupt, context switch) can loop on the int3 while the
 * patching vCPU waits for it in the sync IPI, and the guest locks up (seen: soft lockup at agent start).
 */
#define QUIET_POLL_NS 20000000L

static const char usage[] =
    "usage: vnoise-guest agent [--idle] [--qga-port] [-d TIME] [-o FILE] [OPTIONS]\n"
    "       vnoise-guest agent --passive [--qga-port] [-d TIME]\n"
    "       vnoise-guest agent --probe\n"
    "The guest end of the host channel: answers the guest agent protocol on\n"
    "org.vnoise.0, measures noise and publishes it into the ivshmem region for\n"
    "vnoise-host (ring N = CPU N) and answers its clock exchanges.\n"
    "  -c, --cpus LIST        measure these CPUs from the start (without it the agent\n"
    "                         waits for __com.vnoise_start, then measures every CPU)\n"
    "      --idle             do not measure until __com.vnoise_start (the ports and\n"
    "                         the clock are served anyway)\n"
    "      --passive          never measure (no sampler, no eBPF; __com.vnoise_start\n"
    "                         is refused): serve org.vnoise.0 and its status and\n"
    "                         answer the host's clock exchanges at a production cost,\n"
    "                         so the dispatch trace log of vnoise-host is usable by\n"
    "                         the passive views (monitor, mpi)\n"
    "      --qga-port         also answer on org.qemu.guest_agent.0 (libvirt's\n"
    "                         agent port) if it is free; by default it is left to\n"
    "                         qemu-ga\n"
    "  -d, --duration TIME    stop after TIME, e.g. 10s (default: until SIGINT or\n"
    "                         SIGTERM)\n"
    "  -o, --output FILE      also record each measuring run into FILE, with the\n"
    "                         guest's own split of its gaps by the host's dispatch\n"
    "                         trace log, as record -o does (a later run replaces\n"
    "                         it; see 'vnoise-guest report FILE --gaps')\n"
    "      --probe            print the channel's devices (ivshmem BAR2,\n"
    "                         virtio-serial ports) and exit\n"
    "  OPTIONS (measure's): -p/--period, -r/--runtime, -T/--threshold, -P/--priority,\n"
    "                   --helper, --no-hypercall, -q, -v\n"
    "                   (see 'vnoise-guest measure --help')\n"
    "  -h, --help             this help\n"
    "  -V, --version          print the version and exit\n" CLIOPT_TIME_LINE;

struct port {
	const char *name;
	char path[256];
	int fd;
	bool hup; /* no host client at the last poll */
	bool wanted; /* serve this port (org.qemu.guest_agent.0: only with --qga-port) */
	bool lost; /* it was open and failed or went away: reopen it when it is back */
	struct qga_agent *qa;
	uint64_t replies, write_drops;
};

struct agent {
	struct port ports[2];
	uint64_t start_ns;
	uint64_t requests;
	uint64_t next_retry_ns; /* next look for closed ports */
	/* shared memory */
	char shm_path[512];
	void *shm;
	size_t shm_size;
	struct shm_writer *w;
	uint32_t nrings;
	uint64_t epoch;
	uint64_t unplaced; /* records for a CPU without a ring */
	/* measurement (worker thread), started and stopped by the main thread only */
	struct measure_params mp;
	struct measure_sink sink;
	pthread_t worker;
	bool worker_on;
	int worker_stop; /* atomic */
	int worker_rc; /* atomic: measure_run's exit code, -1 while running */
	uint32_t state; /* atomic: enum vn_shm_agent_state */
	uint64_t runs;
	/* clock thread: owns status and mailbox */
	pthread_t clock;
	bool clock_on;
	int clock_stop; /* atomic */
	int clock_quiet; /* atomic: the kernel helper is being attached or detached: keep this vCPU quiet */
	uint64_t exchanges; /* atomic */
	int clock_holds; /* atomic: the clock thread holds the responder lock */
	struct clockresp *cr; /* the clock exchange (host area), driven by the clock thread */
	bool passive; /* --passive: never measure; the responder sleeps instead of spinning */
	/* the bell (protocol/dtl.h struct vn_dtl_bell): the worker thread's only, closed by tear_down */
	int bell_fd; /* -1: not open */
	uint64_t bell_retry_ns; /* next look for the port while it is closed */
	bool bell_owed; /* a gap published since the last ring, or no ring yet in this host epoch */
	uint64_t bell_epoch, bell_arm; /* the host epoch and arm_seq of the last ring */
	uint64_t bell_rings; /* atomic */
	uint8_t boot_id[16];
	uint32_t ncpus;
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void print_port(const char *name)
{
	char path[256];

	if (guestdev_find_port(NULL, NULL, name, path, sizeof(path)))
		printf("port %s: absent\n", name);
	else
		printf("port %s: %s\n", name, path);
}

static int probe(void)
{
	char path[512];
	uint64_t size = 0;

	print_port("org.qemu.guest_agent.0");
	print_port("org.vnoise.0");
	print_port(VN_DTL_BELL_PORT);
	if (guestdev_find_ivshmem(NULL, path, sizeof(path), &size)) {
		printf("ivshmem: absent\n");
		log_err("no ivshmem-plain device (PCI 1af4:1110) in this guest");
		return EXIT_CANNOT;
	}
	printf("ivshmem: %s %" PRIu64 "\n", path, size);
	return EXIT_OK;
}

/* ---- shared memory: the region, the measurement sink, the clock thread ---- */

static void read_boot_id(uint8_t out[16])
{
	char buf[64];
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
	int i = 0;
	const char *c;

	memset(out, 0, 16);
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f))
		for (c = buf; *c && i < 32; c++) {
			int v = *c >= '0' && *c <= '9'	 ? *c - '0'
				: *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
							 : -1;

			if (v < 0)
				continue;
			out[i / 2] = (uint8_t)(out[i / 2] | (i % 2 ? v : v << 4));
			i++;
		}
	fclose(f);
}

static uint32_t possible_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n < 1 ? 1 : n > (long)VN_SHM_MAX_RINGS ? VN_SHM_MAX_RINGS : (uint32_t)n;
}

/* Map BAR2 and lay out a new epoch: one ring per possible CPU, as many slots as fit. */
static int shm_open_region(struct agent *ag)
{
	struct timespec rt;
	uint64_t size = 0;
	uint32_t slots;
	int fd, rc;

	rc = guestdev_find_ivshmem(NULL, ag->shm_path, sizeof(ag->shm_path), &size);
	if (rc)
		return rc;
	if (!size || size & (size - 1) || size > (1ULL << 34))
		return -EINVAL;
	fd = open(ag->shm_path, O_RDWR | O_SYNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ag->shm = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (ag->shm == MAP_FAILED) {
		ag->shm = NULL;
		return -errno;
	}
	ag->shm_size = (size_t)size;
	ag->nrings = possible_cpus();
	slots = shmwriter_fit_slots(ag->shm_size, ag->nrings);
	if (!slots)
		return -ENOSPC;
	clock_gettime(CLOCK_REALTIME, &rt);
	ag->epoch = shmwriter_next_epoch(
	    ag->shm, ag->shm_size, (uint64_t)rt.tv_sec * 1000000000ULL + (uint64_t)rt.tv_nsec);
	ag->w = shmwriter_init(ag->shm, ag->shm_size, ag->nrings, slots, ag->epoch);
	if (!ag->w)
		return -errno;
	log_info("agent: shared memory %s: %zu bytes, %u rings of %u records, epoch %" PRIu64,
		 ag->shm_path, ag->shm_size, ag->nrings, slots, ag->epoch);
	return 0;
}

static void put_status(struct agent *ag, uint64_t t)
{
	struct vn_shm_status st = { 0 };

	st.agent_state = __atomic_load_n(&ag->state, __ATOMIC_ACQUIRE);
	st.guest_ncpus = ag->ncpus;
	memcpy(st.boot_id, ag->boot_id, sizeof(st.boot_id));
	st.agent_start_ns = ag->start_ns;
	st.heartbeat_ns = t;
	shmwriter_set_status(ag->w, &st);
}

/* Run the clock thread on one CPU the samplers leave alone (the highest), so the host knows which vCPU
 * answers; with every CPU measured it stays unpinned. */
static void pin_clock_thread(struct agent *ag)
{
	cpu_set_t set;
	bool measured[VN_SHM_MAX_RINGS] = { false };
	int i;

	if (ag->mp.cpus_all || !ag->mp.ncpus)
		return;
	for (i = 0; i < ag->mp.ncpus; i++)
		if (ag->mp.cpus[i] >= 0 && ag->mp.cpus[i] < (int)VN_SHM_MAX_RINGS)
			measured[ag->mp.cpus[i]] = true;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (i = (int)ag->nrings - 1; i >= 0; i--)
		if (CPU_ISSET(i, &set) && !measured[i]) {
			CPU_ZERO(&set);
			CPU_SET(i, &set);
			(void)sched_setaffinity(0, sizeof(set), &set);
			return;
		}
}

/*
 * Clock thread: answers the host's clock exchanges as soon as it sees them (the guest stamp must fall between
 * the host's send and receive, so the answer's delay is the exchange's error bound) and beats the status.
 * Waking from a sleep is slow and irregular under TCG (0.2-0.5 ms late on average, up to 4 ms), so while
 * measuring the thread spins in a window around the next request's predicted arrival (guest/dtl/clockresp:
 * the host sends on the VN_SHM_CLOCK_GRID_NS grid) and polls every CLOCK_POLL_NS otherwise; under TCG that
 * spin costs a few percent of one vCPU. With --passive it sleeps between polls instead (the production
 * setting of clockresp, CLOCKRESP_CHEAP_*).
 */
static void *clock_main(void *arg)
{
	struct agent *ag = arg;
	struct clockresp_stats cs;
	uint64_t next_beat = 0, t, wait;

	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* wake on time (no 50 us slack) */
	pin_clock_thread(ag);
	while (!__atomic_load_n(&ag->clock_stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_load_n(&ag->clock_quiet, __ATOMIC_ACQUIRE)) {
			struct timespec q = { 0, QUIET_POLL_NS };

			nanosleep(&q, NULL);
			continue;
		}
		wait = clockresp_round(ag->cr, &t);
		if (!wait || !__atomic_load_n(&ag->clock_holds, __ATOMIC_RELAXED)) {
			clockresp_stats(ag->cr, &cs);
			__atomic_store_n(&ag->exchanges, cs.replies, __ATOMIC_RELAXED);
			__atomic_store_n(&ag->clock_holds, cs.holds_lock, __ATOMIC_RELAXED);
		}
		if (t >= next_beat) {
			put_status(ag, t);
			next_beat = t + HEARTBEAT_NS;
		}
		if (wait) {
			struct timespec ts;

			/* the beat rides on the responder's own wake-ups */
			if (wait > HEARTBEAT_NS)
				wait = HEARTBEAT_NS;
			ts.tv_sec = (time_t)(wait / 1000000000ULL);
			ts.tv_nsec = (long)(wait % 1000000000ULL);
			nanosleep(&ts, NULL);
		}
	}
	put_status(ag, now_ns());
	clockresp_stats(ag->cr, &cs);
	log_debug("agent: clock: %llu answers (%s the responder lock), %llu while polling a "
		  "window; window "
		  "wake-ups late by %.1f us on average, %.1f us at most",
		  (unsigned long long)cs.replies, cs.holds_lock ? "holding" : "never held",
		  (unsigned long long)cs.in_window,
		  cs.wakes ? (double)cs.late_sum_ns / 1e3 / (double)cs.wakes : 0.0,
		  (double)cs.late_max_ns / 1e3);
	return NULL;
}

static void sink_sample(void *ctx, const struct vn_sample *s)
{
	struct agent *ag = ctx;

	if (s->cpu >= ag->nrings || shmwriter_put_sample(ag->w, s->cpu, s))
		ag->unplaced++;
	else if (s->kind == VN_SAMPLE_GAP)
		ag->bell_owed = true;
}

static void sink_event(void *ctx, const struct vn_event *e)
{
	struct agent *ag = ctx;

	if (e->cpu >= ag->nrings || shmwriter_put_event(ag->w, e->cpu, e))
		ag->unplaced++;
}

/* Open the bell's port (write-only, non-blocking): 0 or -errno; absent is quiet, other failures said once. */
static int bell_open(struct agent *ag)
{
	static int said;
	char path[256];
	int fd;

	if (guestdev_find_port(NULL, NULL, VN_DTL_BELL_PORT, path, sizeof(path)))
		return -ENOENT;
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		if (!said++)
			log_warn("agent: cannot open the bell %s (%s): %s; the host reads the "
				 "channel on its own round",
				 VN_DTL_BELL_PORT, path, strerror(err));
		return -err;
	}
	ag->bell_fd = fd;
	ag->bell_epoch = ag->bell_arm = 0;
	log_info("agent: bell %s open (%s)", VN_DTL_BELL_PORT, path);
	return 0;
}

/*
 * After a drain that published: ring the bell once per arming of the host (struct vn_dtl_bell) if a gap
 * was published since the last ring, or once per host epoch to say this agent rings. A port whose host end
 * is not connected says EAGAIN: the ring stays owed. Cheap when there is nothing to say: two loads.
 */
static void bell_ring(struct agent *ag, uint64_t now)
{
	const struct vn_dtl_header *h;
	uint64_t ep, arm;

	if (ag->bell_fd < 0) {
		if (now < ag->bell_retry_ns)
			return;
		ag->bell_retry_ns = now + PORT_RETRY_NS;
		if (bell_open(ag))
			return;
	}
	h = (const void *)((const char *)ag->shm + vn_dtl_area_offset(ag->shm_size));
	ep = SHM_LOAD_ACQ(&h->host_epoch);
	if (!ep)
		return;
	if (ep != ag->bell_epoch) { /* a new publisher: say once that this agent rings */
		ag->bell_epoch = ep;
		ag->bell_arm = 0;
		ag->bell_owed = true;
	}
	arm = SHM_LOAD_ACQ(&h->bell.arm_seq);
	if (!arm || arm == ag->bell_arm || !ag->bell_owed)
		return;
	if (write(ag->bell_fd, "\a", 1) == 1) {
		ag->bell_arm = arm;
		ag->bell_owed = false;
		__atomic_add_fetch(&ag->bell_rings, 1, __ATOMIC_RELAXED);
		return;
	}
	if (errno == EAGAIN || errno == EINTR)
		return; /* no host end, or its buffer is full: owed still */
	log_warn("agent: the bell %s failed (%s): closed, looked for again in %llu s",
		 VN_DTL_BELL_PORT, strerror(errno),
		 (unsigned long long)(PORT_RETRY_NS / 1000000000ULL));
	close(ag->bell_fd);
	ag->bell_fd = -1;
}

/* After a drain: records that ended before drained_ns are all published (200 us for a sampler caught
 * between reading the clock and pushing its record); then the bell, if a gap is among them. */
static void sink_tick(void *ctx, uint64_t drained_ns)
{
	struct agent *ag = ctx;
	uint32_t r;

	__atomic_store_n(&ag->clock_quiet, 0, __ATOMIC_RELEASE); /* attached, samplers running */
	if (drained_ns <= HORIZON_MARGIN_NS)
		return;
	for (r = 0; r < ag->nrings; r++)
		shmwriter_set_horizon(ag->w, r, drained_ns - HORIZON_MARGIN_NS);
	bell_ring(ag, drained_ns);
}

/* Lost before publishing: a sampler ring (that CPU's ring) or the BPF ring buffer (counted on ring 0). */
static void sink_lost(void *ctx, int cpu, uint64_t n)
{
	struct agent *ag = ctx;

	shmwriter_add_dropped(ag->w, cpu >= 0 && (uint32_t)cpu < ag->nrings ? (uint32_t)cpu : 0, n);
}

static void *worker_main(void *arg)
{
	struct agent *ag = arg;
	int rc = measure_run(&ag->mp);

	if (rc != EXIT_OK)
		log_err("agent: measuring stopped (exit code %d)", rc);
	__atomic_store_n(&ag->worker_rc, rc, __ATOMIC_RELEASE);
	__atomic_store_n(&ag->state, VN_SHM_AGENT_PAUSED, __ATOMIC_RELEASE);
	__atomic_store_n(&ag->clock_quiet, 0, __ATOMIC_RELEASE); /* detached */
	return NULL;
}

static int worker_start(struct agent *ag)
{
	int rc;

	if (ag->worker_on && __atomic_load_n(&ag->worker_rc, __ATOMIC_ACQUIRE) < 0)
		return 0; /* running */
	if (ag->worker_on) {
		pthread_join(ag->worker, NULL);
		ag->worker_on = false;
	}
	__atomic_store_n(&ag->worker_stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&ag->worker_rc, -1, __ATOMIC_RELEASE);
	__atomic_store_n(&ag->clock_quiet, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ag->state, VN_SHM_AGENT_RUNNING, __ATOMIC_RELEASE);
	rc = pthread_create(&ag->worker, NULL, worker_main, ag);
	if (rc) {
		__atomic_store_n(&ag->state, VN_SHM_AGENT_PAUSED, __ATOMIC_RELEASE);
		__atomic_store_n(&ag->clock_quiet, 0, __ATOMIC_RELEASE);
		return -rc;
	}
	ag->worker_on = true;
	ag->runs++;
	return 0;
}

static void worker_stop(struct agent *ag)
{
	if (!ag->worker_on)
		return;
	__atomic_store_n(&ag->clock_quiet, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ag->worker_stop, 1, __ATOMIC_RELEASE);
	pthread_join(ag->worker, NULL);
	__atomic_store_n(&ag->clock_quiet, 0, __ATOMIC_RELEASE);
	ag->worker_on = false;
	__atomic_store_n(&ag->state, VN_SHM_AGENT_PAUSED, __ATOMIC_RELEASE);
}

static const char *state_name(uint32_t st)
{
	static const char *const n[] = { "init", "running", "paused", "stopped" };

	return st < VN_SHM_AGENT_MAX ? n[st] : "?";
}

static void json_channel(struct agent *ag, struct json_writer *w)
{
	uint32_t st = __atomic_load_n(&ag->state, __ATOMIC_ACQUIRE);
	uint32_t r;
	uint64_t pub = 0;

	json_kv_str(w, "state", state_name(st));
	if (!ag->w) {
		json_key(w, "epoch");
		json_null(w);
		return;
	}
	for (r = 0; r < ag->nrings; r++)
		pub += shmwriter_head(ag->w, r);
	json_kv_u64(w, "epoch", ag->epoch);
	json_kv_u64(w, "rings", ag->nrings);
	json_kv_u64(w, "published", pub);
	json_kv_u64(w, "clock_exchanges", __atomic_load_n(&ag->exchanges, __ATOMIC_RELAXED));
	json_kv_u64(w, "bell_rings", __atomic_load_n(&ag->bell_rings, __ATOMIC_RELAXED));
	json_kv_bool(w, "passive", ag->passive);
	json_kv_bool(w, "clock_responder", __atomic_load_n(&ag->clock_holds, __ATOMIC_RELAXED));
	json_kv_u64(w, "measure_runs", ag->runs);
	if (ag->worker_on && __atomic_load_n(&ag->worker_rc, __ATOMIC_ACQUIRE) > 0)
		json_kv_u64(w, "measure_exit_code",
			    (uint64_t)__atomic_load_n(&ag->worker_rc, __ATOMIC_ACQUIRE));
}

/* __com.vnoise_start arguments: each a measure option, its value a string ("1ms", "0-1") or an integer. */
static const char *const start_keys[] = { "cpus",     "period", "runtime",	"threshold",
					  "priority", "helper", "no-hypercall", NULL };

/*
 * The measure parameters of a __com.vnoise_start with arguments: argv "measure --KEY VALUE..." through
 * params_parse, so the agent accepts exactly what `vnoise-guest measure` does. 0 or -EINVAL with err set.
 */
static int start_params(struct agent *ag, const struct jsonr_value *args, struct measure_params *mp,
			char *err)
{
	char vals[8][64], opts[8][32], perr[256];
	char *argv[2 * 8 + 2];
	const struct jsonr_value *v;
	int argc = 0, i;

	if (qga_args_only(args, start_keys, err, QGA_DESC_MAX))
		return -EINVAL;
	argv[argc++] = "measure";
	for (i = 0; start_keys[i]; i++) {
		v = jsonr_obj_get(args, start_keys[i]);
		if (!v)
			continue;
		snprintf(opts[i], sizeof(opts[i]), "--%s", start_keys[i]);
		argv[argc++] = opts[i];
		if (!strcmp(start_keys[i], "no-hypercall")) {
			if (v->kind != JSONR_BOOL) {
				snprintf(
				    err, QGA_DESC_MAX,
				    "Invalid parameter type for 'no-hypercall', expected: boolean");
				return -EINVAL;
			}
			if (!v->b)
				argc--;
			continue;
		}
		if (v->kind == JSONR_STR && v->len < sizeof(vals[i]))
			snprintf(vals[i], sizeof(vals[i]), "%s", v->str);
		else if (v->kind == JSONR_INT && !v->neg)
			snprintf(vals[i], sizeof(vals[i]), "%" PRIu64, v->mag);
		else {
			snprintf(err, QGA_DESC_MAX,
				 "Invalid parameter type for '%s', expected: string",
				 start_keys[i]);
			return -EINVAL;
		}
		argv[argc++] = vals[i];
	}
	argv[argc] = NULL;
	if (params_parse(argc, argv, mp, perr, sizeof(perr))) {
		snprintf(err, QGA_DESC_MAX, "%s", perr);
		return -EINVAL;
	}
	mp->quiet = 1;
	mp->verbose = ag->mp.verbose;
	mp->sink = &ag->sink;
	return 0;
}

/*
 * __com.vnoise_start: (re)start measuring and publishing. With arguments (measure options) a running
 * measurement is stopped and started again with them; without, the last parameters are used.
 */
static int cmd_start(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	struct agent *ag = ctx;
	struct measure_params mp;
	int rc;

	if (ag->passive) {
		snprintf(err, QGA_DESC_MAX, "this agent is passive (--passive): it never measures");
		return -EPERM;
	}
	if (!ag->w) {
		snprintf(err, QGA_DESC_MAX, "no shared-memory channel in this guest");
		return -ENODEV;
	}
	if (args && args->len) {
		rc = start_params(ag, args, &mp, err);
		if (rc)
			return rc;
		worker_stop(ag);
		ag->mp = mp;
	}
	rc = worker_start(ag);
	if (rc)
		return rc;
	json_obj_begin(w);
	json_channel(ag, w);
	json_obj_end(w);
	return 0;
}

/* __com.vnoise_stop: stop measuring (the samplers and the kernel helper go away); the channel stays. */
static int cmd_stop(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	struct agent *ag = ctx;

	(void)args;
	(void)err;
	worker_stop(ag);
	json_obj_begin(w);
	json_channel(ag, w);
	json_obj_end(w);
	return 0;
}

/*
 * Write a whole reply to a non-blocking port, waiting up to WRITE_WAIT_MS for room; else drop it (counted).
 * While the host end is not connected (a request can come before the port's "host connected" control message,
 * which the driver handles late on a busy vCPU) poll() reports POLLHUP at once: wait for it in HUP_WAIT_MS
 * sleeps, up to HUP_GRACE_MS, instead of spinning. The host client resends its sync meanwhile.
 */
static int emit(void *ctx, const char *reply, size_t len)
{
	struct port *p = ctx;
	uint64_t deadline = now_ns() + WRITE_WAIT_MS * 1000000ULL, hup_since = 0;

	while (len) {
		ssize_t n = write(p->fd, reply, len);
		uint64_t now;

		if (n > 0) {
			reply += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN) {
			p->write_drops++;
			return -errno;
		}
		struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };

		if (poll(&pfd, 1, 50) > 0 && !(pfd.revents & POLLOUT) &&
		    (pfd.revents & (POLLHUP | POLLERR))) {
			now = now_ns();
			if (!hup_since)
				hup_since = now;
			if (now - hup_since >= HUP_GRACE_MS * 1000000ULL) {
				p->write_drops++;
				return -ENOTCONN;
			}
			struct timespec ts = { 0, HUP_WAIT_MS * 1000000L };

			nanosleep(&ts, NULL);
			continue;
		}
		hup_since = 0;
		if (now_ns() > deadline) {
			p->write_drops++;
			return -ETIMEDOUT;
		}
	}
	p->replies++;
	return 0;
}

/* __com.vnoise_status: who is answering and since when. */
static int cmd_status(void *ctx, const struct jsonr_value *args, struct json_writer *w, char *err)
{
	struct agent *ag = ctx;
	char path[512];
	uint64_t size = 0;
	int i;

	(void)args;
	(void)err;
	json_obj_begin(w);
	json_kv_str(w, "version", version_string());
	json_kv_u64(w, "uptime_ns", now_ns() - ag->start_ns);
	json_kv_u64(w, "requests", ag->requests);
	if (guestdev_find_ivshmem(NULL, path, sizeof(path), &size) == 0) {
		json_kv_str(w, "ivshmem", path);
		json_kv_u64(w, "ivshmem_bytes", size);
	} else {
		json_key(w, "ivshmem");
		json_null(w);
	}
	json_channel(ag, w);
	json_key(w, "ports");
	json_arr_begin(w);
	for (i = 0; i < 2; i++) {
		const struct port *p = &ag->ports[i];

		json_obj_begin(w);
		json_kv_str(w, "name", p->name);
		json_kv_bool(w, "open", p->fd >= 0);
		json_kv_u64(w, "replies", p->replies);
		json_kv_u64(w, "write_drops", p->write_drops);
		json_obj_end(w);
	}
	json_arr_end(w);
	json_obj_end(w);
	return 0;
}

/* The port's QGA dispatcher, made once (it outlives closes and reopens of the port). */
static int port_agent(struct agent *ag, struct port *p)
{
	const struct qga_command cmds[] = { { "__com.vnoise_status", cmd_status, ag },
					    { "__com.vnoise_start", cmd_start, ag },
					    { "__com.vnoise_stop", cmd_stop, ag } };

	if (p->qa)
		return 0;
	p->qa = qga_agent_new(version_string());
	if (!p->qa)
		return -ENOMEM;
	if (qga_agent_register(p->qa, cmds, sizeof(cmds) / sizeof(cmds[0]))) {
		qga_agent_free(p->qa);
		p->qa = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Open a port: 0, -ENOENT (no such port now), -EBUSY (another process holds it), other -errno. */
static int port_open(struct agent *ag, struct port *p)
{
	int rc = port_agent(ag, p);

	p->fd = -1;
	if (rc)
		return rc;
	if (guestdev_find_port(NULL, NULL, p->name, p->path, sizeof(p->path)))
		return -ENOENT;
	p->fd = open(p->path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (p->fd < 0)
		return -errno;
	p->hup = false;
	qga_agent_reset(p->qa);
	return 0;
}

/* A port failed or went away: close it; the retry tick opens it again when it is back. */
static void port_close(struct port *p, const char *why)
{
	if (p->fd < 0)
		return;
	log_warn("agent: %s (%s) %s: closed, looking for it again every %llu s", p->name, p->path,
		 why, (unsigned long long)(PORT_RETRY_NS / 1000000000ULL));
	close(p->fd);
	p->fd = -1;
	p->hup = false;
	p->lost = true;
	qga_agent_reset(p->qa);
}

/* Read what a port has and answer it; a hang-up (no host client) drops any half-read request. */
static void port_service(struct agent *ag, struct port *p, short revents)
{
	char buf[4096];
	ssize_t r;
	int rc;

	if (revents & POLLNVAL) {
		port_close(p, "is no longer valid");
		return;
	}
	if (revents & POLLIN) {
		r = read(p->fd, buf, sizeof(buf));
		if (r > 0) {
			p->hup = false;
			ag->requests++;
			rc = qga_agent_feed(p->qa, buf, (size_t)r, emit, p);
			if (rc == -ENODEV || rc == -EIO || rc == -EBADF)
				port_close(p, strerror(-rc));
			else if (rc)
				log_debug("agent: %s: reply dropped", p->name);
			return;
		}
		if (r < 0 && errno != EAGAIN && errno != EINTR) {
			port_close(p, strerror(errno));
			return;
		}
		if (r == 0) /* no host client: read returns 0 (REFERENCE.md §3) */
			revents |= POLLHUP;
	}
	if (revents & (POLLHUP | POLLERR)) {
		if (!p->hup)
			qga_agent_reset(p->qa);
		p->hup = true;
	}
}

/*
 * Every PORT_RETRY_NS: close an open port whose sysfs name is gone or moved (hot-unplug: a hung-up port
 * never reports it otherwise), open a wanted port that is closed (hot-plug, or back after an error). A busy
 * port is not retried: qemu-ga holds it, and the agent never takes it from a restarting qemu-ga.
 */
static void ports_retry(struct agent *ag)
{
	char path[256];
	int i, rc;

	if (now_ns() < ag->next_retry_ns)
		return;
	ag->next_retry_ns = now_ns() + PORT_RETRY_NS;
	for (i = 0; i < 2; i++) {
		struct port *p = &ag->ports[i];

		if (!p->wanted)
			continue;
		if (p->fd >= 0) {
			if (guestdev_find_port(NULL, NULL, p->name, path, sizeof(path)) ||
			    strcmp(path, p->path))
				port_close(p, "went away");
			continue;
		}
		rc = port_open(ag, p);
		if (rc == 0) {
			log_info("agent: serving %s on %s%s", p->name, p->path,
				 p->lost ? " again" : "");
			p->lost = false;
		} else if (rc == -EBUSY && !strcmp(p->name, QGA_PORT)) {
			log_warn("agent: %s is busy (qemu-ga holds it?): not taking it, serving "
				 "%s only",
				 p->name, VNOISE_PORT);
			p->wanted = false;
		}
	}
}

/*
 * One round: wait up to 100 ms on the ports that have a host client; a hung-up port reports POLLHUP at once,
 * so those are only checked without waiting, once per round.
 */
static void serve_once(struct agent *ag)
{
	struct pollfd pfd[2];
	struct port *map[2];
	int n = 0, i;

	ports_retry(ag);
	for (i = 0; i < 2; i++) {
		if (ag->ports[i].fd < 0 || ag->ports[i].hup)
			continue;
		pfd[n].fd = ag->ports[i].fd;
		pfd[n].events = POLLIN;
		pfd[n].revents = 0;
		map[n++] = &ag->ports[i];
	}
	if (poll(n ? pfd : NULL, (nfds_t)n, 100) > 0)
		for (i = 0; i < n; i++)
			port_service(ag, map[i], pfd[i].revents);
	for (i = 0; i < 2; i++) {
		struct pollfd one = { .fd = ag->ports[i].fd, .events = POLLIN };

		if (ag->ports[i].fd < 0 || !ag->ports[i].hup)
			continue;
		if (poll(&one, 1, 0) > 0)
			port_service(ag, &ag->ports[i], one.revents);
	}
}

static bool cpus_given(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-c") || !strncmp(argv[i], "--cpus", 6) ||
		    (!strncmp(argv[i], "-c", 2) && argv[i][2]))
			return true;
	return false;
}

/*
 * -d/--duration TIME of the agent itself (argv[*i], its value in "--duration=X" or the next argument):
 * 0, advancing *i past the value, or EXIT_USAGE after the error line.
 */
static int parse_duration_opt(int argc, char **argv, int *i, uint64_t *duration_ns)
{
	const char *a = argv[*i], *v = NULL;
	char spelled[16], err[256] = "";

	snprintf(spelled, sizeof(spelled), "%s", a[1] == 'd' ? "-d" : "--duration");
	if (!strncmp(a, "--duration=", 11))
		v = a + 11;
	else if (a[1] == 'd' && a[2])
		v = a + 2;
	else if (*i + 1 < argc)
		v = argv[++*i];
	if (!v) {
		log_err("agent: option '%s' needs a value", a);
		return EXIT_USAGE;
	}
	if (cliopt_parse_time(spelled, v, "s", duration_ns, err, sizeof(err)) || !*duration_ns) {
		log_err("agent: %s (see 'vnoise-guest agent --help')",
			*err ? err : "--duration must be > 0");
		return EXIT_USAGE;
	}
	return 0;
}

/* -o FILE, --output FILE, --output=FILE: each measuring run recorded into FILE. 0 or EXIT_USAGE. */
static int parse_output_opt(int argc, char **argv, int *i, const char **out)
{
	const char *a = argv[*i], *v = !strncmp(a, "--output=", 9) ? a + 9 : NULL;

	if (!v) {
		if (*i + 1 >= argc) {
			log_err("agent: option '%s' needs a value", a);
			return EXIT_USAGE;
		}
		v = argv[++*i];
	}
	if (!*v) {
		log_err("agent: invalid %s '': want a file name (see 'vnoise-guest agent --help')",
			a);
		return EXIT_USAGE;
	}
	*out = v;
	return 0;
}

static bool is_duration_opt(const char *a)
{
	return !strcmp(a, "--duration") || !strncmp(a, "--duration=", 11) || !strncmp(a, "-d", 2);
}

/* Split argv into the agent's own options and measure options (parsed by params_parse as "measure"). */
static int parse_args(struct agent *ag, int argc, char **argv, uint64_t *duration_ns, bool *idle)
{
	char **mv = calloc((size_t)argc + 2, sizeof(*mv));
	char err[256];
	int i, mc = 0, rc = 0;

	if (!mv)
		return EXIT_FAIL;
	mv[mc++] = "measure";
	for (i = 1; i < argc && !rc; i++) {
		if (!strcmp(argv[i], "--idle")) {
			*idle = true;
		} else if (!strcmp(argv[i], "--passive")) {
			ag->passive = true;
		} else if (!strcmp(argv[i], "--qga-port")) {
			ag->ports[1].wanted = true;
		} else if (is_duration_opt(argv[i])) {
			rc = parse_duration_opt(argc, argv, &i, duration_ns);
		} else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output") ||
			   !strncmp(argv[i], "--output=", 9)) {
			rc = parse_output_opt(argc, argv, &i, &ag->mp.output);
		} else if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j") ||
			   !strncmp(argv[i], "--stop", 6) || !strcmp(argv[i], "--probe")) {
			log_err("agent: option '%s' does not apply here (see 'vnoise-guest agent "
				"--help')",
				argv[i]);
			rc = EXIT_USAGE;
		} else {
			mv[mc++] = argv[i];
		}
	}
	if (!rc) {
		const char *out = ag->mp.output; /* params_parse takes -o for record only */

		rc = params_parse(mc, mv, &ag->mp, err, sizeof(err));
		ag->mp.output = out;
	}
	free(mv);
	if (rc == 1) {
		fputs(usage, stdout);
		cliopt_exit_print(stdout, CLIOPT_EXITS_COMMON | CLIOPT_EXIT(EXIT_CONFLICT));
		return -1;
	}
	if (rc < 0) {
		log_err("agent: %s", err);
		return EXIT_USAGE;
	}
	return rc;
}

/*
 * Open the ports (org.vnoise.0; org.qemu.guest_agent.0 with --qga-port unless it is busy) and the shared
 * memory, start the clock and (unless idle) measuring. An exit code.
 */
static int set_up(struct agent *ag, bool idle)
{
	int i, rc, opened = 0;

	for (i = 0; i < 2; i++) {
		struct port *p = &ag->ports[i];

		if (!p->wanted)
			continue;
		rc = port_open(ag, p);
		if (rc == 0) {
			opened++;
			log_info("agent: serving %s on %s", p->name, p->path);
		} else if (rc == -EBUSY && i == 1) {
			log_warn("agent: %s is busy (qemu-ga holds it?): not taking it, serving %s "
				 "only",
				 p->name, VNOISE_PORT);
			p->wanted = false;
		} else if (rc != -ENOENT) {
			log_err("agent: cannot open %s (%s): %s", p->name, p->path, strerror(-rc));
			return EXIT_FAIL;
		}
	}
	ag->next_retry_ns = now_ns() + PORT_RETRY_NS;
	rc = shm_open_region(ag);
	if (rc == -ENOENT) {
		log_warn("agent: no ivshmem-plain device (PCI 1af4:1110): serving the ports only");
	} else if (rc) {
		log_err("agent: cannot use the shared memory %s: %s", ag->shm_path, strerror(-rc));
		return rc == -EACCES || rc == -EPERM ? EXIT_CANNOT : EXIT_FAIL;
	} else {
		struct clockresp_params cp = {
			.poll_ns = ag->passive ? CLOCKRESP_CHEAP_POLL_NS : CLOCK_POLL_NS,
			.step_ns = ag->passive ? CLOCKRESP_CHEAP_STEP_NS : 0
		};
		uint64_t half = vn_dtl_area_offset(ag->shm_size);

		put_status(ag, now_ns());
		ag->cr = clockresp_new((char *)ag->shm + half, ag->shm_size - half, &cp);
		if (!ag->cr || pthread_create(&ag->clock, NULL, clock_main, ag)) {
			log_err("agent: cannot start the clock thread");
			return EXIT_FAIL;
		}
		ag->clock_on = true;
		if (!idle && (rc = worker_start(ag))) {
			log_err("agent: cannot start measuring: %s", strerror(-rc));
			return EXIT_FAIL;
		}
	}
	if (!opened && !ag->w) {
		log_err("agent: no virtio-serial port %s%s and no ivshmem device here", VNOISE_PORT,
			ag->ports[1].wanted ? " or " QGA_PORT : "");
		return EXIT_CANNOT;
	}
	return EXIT_OK;
}

/* Stop measuring and the clock, release the shared memory and the ports, free ag. */
static void tear_down(struct agent *ag)
{
	int i;

	worker_stop(ag);
	if (ag->clock_on) {
		__atomic_store_n(&ag->state, VN_SHM_AGENT_STOPPED, __ATOMIC_RELEASE);
		__atomic_store_n(&ag->clock_stop, 1, __ATOMIC_RELEASE);
		pthread_join(ag->clock, NULL);
	}
	clockresp_free(ag->cr);
	if (ag->unplaced)
		log_warn("agent: %" PRIu64 " records had no ring and were not published",
			 ag->unplaced);
	shmwriter_free(ag->w);
	if (ag->bell_fd >= 0)
		close(ag->bell_fd);
	if (ag->shm)
		munmap(ag->shm, ag->shm_size);
	for (i = 0; i < 2; i++) {
		if (ag->ports[i].fd >= 0)
			close(ag->ports[i].fd);
		qga_agent_free(ag->ports[i].qa);
	}
	free(ag);
}

int agent_main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct agent *ag = calloc(1, sizeof(*ag));
	uint64_t duration_ns = 0, end_ns = 0;
	bool idle = false;
	int ret, rc;

	if (!ag) {
		log_err("out of memory");
		return EXIT_FAIL;
	}
	ag->ports[0] = (struct port){ .name = VNOISE_PORT, .fd = -1, .wanted = true };
	ag->bell_fd = -1;
	ag->ports[1] = (struct port){ .name = QGA_PORT, .fd = -1 };
	if (argc == 2 && !strcmp(argv[1], "--probe")) {
		free(ag);
		return probe();
	}
	rc = parse_args(ag, argc, argv, &duration_ns, &idle);
	if (rc) {
		free(ag);
		return rc < 0 ? EXIT_OK : rc;
	}
	if (ag->mp.verbose)
		log_set_verbosity(ag->mp.verbose);
	if (ag->passive && ag->mp.output) {
		log_err("agent: --passive never measures: no -o (see 'vnoise-guest agent --help')");
		free(ag);
		return EXIT_USAGE;
	}
	if (ag->passive && cpus_given(argc, argv)) {
		log_err(
		    "agent: --passive never measures: no --cpus (see 'vnoise-guest agent --help')");
		free(ag);
		return EXIT_USAGE;
	}
	if (ag->mp.cpus_all && !cpus_given(argc, argv))
		idle = true; /* a daemon does not take every CPU unless asked */
	if (ag->passive) {
		idle = true;
		ag->state = VN_SHM_AGENT_PAUSED;
	}
	ag->mp.quiet = 1;
	ag->sink = (struct measure_sink){ .sample = sink_sample,
					  .event = sink_event,
					  .lost = sink_lost,
					  .tick = sink_tick,
					  .ctx = ag,
					  .stop = &ag->worker_stop,
					  .poll_ns = AGENT_DRAIN_NS };
	ag->mp.sink = &ag->sink;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	ag->start_ns = now_ns();
	ag->ncpus = possible_cpus();
	read_boot_id(ag->boot_id);
	if (duration_ns)
		end_ns = ag->start_ns + duration_ns;
	ret = set_up(ag, idle);
	while (!ret && !g_stop && (!end_ns || now_ns() < end_ns))
		serve_once(ag);
	tear_down(ag);
	return ret;
}
