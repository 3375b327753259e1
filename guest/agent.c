/* SPDX-License-Identifier: MIT */
/*
 * agent: `vnoise-guest agent` — answers the QEMU guest agent wire protocol (shared/qga) on the virtio-serial
 * port org.qemu.guest_agent.0 (libvirt's: plain guest-sync) and on vnoise's own port org.vnoise.0
 * (guest-sync-delimited with 0xFF is safe there). Survives the host side going away: while no host client is
 * connected the port reports POLLHUP and reads return 0, so the agent drops any partial request and polls
 * again every 100 ms. `agent --probe` prints the channel's devices. Publishing measurements into the ivshmem
 * region comes next (issue 4).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "agent.h"
#include "guestdev.h"
#include "log.h"
#include "measure.h"
#include "parse.h"
#include "qga.h"

#define AGENT_VERSION "vnoise-guest 0.3"
#define WRITE_WAIT_MS 1000

static const char usage[] =
    "usage: vnoise-guest agent [--duration S] | agent --probe\n"
    "  answers the guest agent protocol on org.qemu.guest_agent.0 and org.vnoise.0\n"
    "  --duration S  stop after S seconds (default: until SIGINT/SIGTERM)\n"
    "  --probe       print the channel's devices (ivshmem BAR2, virtio-serial ports) and exit\n";

struct port {
	const char *name;
	char path[256];
	int fd;
	bool hup; /* no host client at the last poll */
	struct qga_agent *qa;
	uint64_t replies, write_drops;
};

struct agent {
	struct port ports[2];
	uint64_t start_ns;
	uint64_t requests;
};

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
	if (guestdev_find_ivshmem(NULL, path, sizeof(path), &size)) {
		printf("ivshmem: absent\n");
		log_err("no ivshmem-plain device (PCI 1af4:1110) in this guest");
		return EXIT_ENV;
	}
	printf("ivshmem: %s %" PRIu64 "\n", path, size);
	return EXIT_OK;
}

/* Write a whole reply to a non-blocking port, waiting up to WRITE_WAIT_MS for room; else drop it. */
static int emit(void *ctx, const char *reply, size_t len)
{
	struct port *p = ctx;
	uint64_t deadline = now_ns() + WRITE_WAIT_MS * 1000000ULL;

	while (len) {
		ssize_t n = write(p->fd, reply, len);

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
		if (now_ns() > deadline) {
			p->write_drops++;
			return -ETIMEDOUT;
		}
		struct pollfd pfd = { .fd = p->fd, .events = POLLOUT };

		(void)poll(&pfd, 1, 50);
	}
	p->replies++;
	return 0;
}

/* __com.vnoise_status: who is answering and since when. */
static int cmd_status(void *ctx, const struct qga_value *args, struct json_writer *w, char *err)
{
	struct agent *ag = ctx;
	char path[512];
	uint64_t size = 0;
	int i;

	(void)args;
	(void)err;
	json_obj_begin(w);
	json_kv_str(w, "version", AGENT_VERSION);
	json_kv_u64(w, "uptime_ns", now_ns() - ag->start_ns);
	json_kv_u64(w, "requests", ag->requests);
	if (guestdev_find_ivshmem(NULL, path, sizeof(path), &size) == 0) {
		json_kv_str(w, "ivshmem", path);
		json_kv_u64(w, "ivshmem_bytes", size);
	} else {
		json_key(w, "ivshmem");
		json_null(w);
	}
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

static int port_open(struct agent *ag, struct port *p)
{
	const struct qga_command cmds[] = { { "__com.vnoise_status", cmd_status, ag } };

	p->fd = -1;
	if (guestdev_find_port(NULL, NULL, p->name, p->path, sizeof(p->path)))
		return -ENOENT;
	p->fd = open(p->path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (p->fd < 0)
		return -errno;
	p->qa = qga_agent_new(AGENT_VERSION);
	if (!p->qa || qga_agent_register(p->qa, cmds, 1))
		return -ENOMEM;
	return 0;
}

/* Read what a port has and answer it; a hang-up (no host client) drops any half-read request. */
static void port_service(struct agent *ag, struct port *p, short revents)
{
	char buf[4096];
	ssize_t r;

	if (revents & POLLIN) {
		r = read(p->fd, buf, sizeof(buf));
		if (r > 0) {
			p->hup = false;
			ag->requests++;
			if (qga_agent_feed(p->qa, buf, (size_t)r, emit, p))
				log_debug("agent: %s: reply dropped", p->name);
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
 * One round: wait up to 100 ms on the ports that have a host client; a hung-up port reports POLLHUP at once,
 * so those are only checked without waiting, once per round.
 */
static void serve_once(struct agent *ag)
{
	struct pollfd pfd[2];
	struct port *map[2];
	int n = 0, i;

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

int agent_main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct agent ag = { .ports = { { .name = "org.qemu.guest_agent.0", .fd = -1 },
				       { .name = "org.vnoise.0", .fd = -1 } } };
	uint64_t duration_ns = 0, end_ns = 0;
	int i, opened = 0, ret = EXIT_FAIL;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "--probe"))
		return probe();
	if (argc == 3 && !strcmp(argv[1], "--duration")) {
		if (parse_duration(argv[2], 1000000000ULL, &duration_ns) || !duration_ns) {
			log_err("invalid --duration '%s' (see 'vnoise-guest agent --help')",
				argv[2]);
			return EXIT_USAGE;
		}
	} else if (argc != 1) {
		log_err("agent: unexpected arguments (see 'vnoise-guest agent --help')");
		return EXIT_USAGE;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	ag.start_ns = now_ns();
	if (duration_ns)
		end_ns = ag.start_ns + duration_ns;
	for (i = 0; i < 2; i++) {
		int rc = port_open(&ag, &ag.ports[i]);

		if (rc == 0) {
			opened++;
			log_info("agent: serving %s on %s", ag.ports[i].name, ag.ports[i].path);
		} else if (rc != -ENOENT) {
			log_err("agent: cannot open %s (%s): %s", ag.ports[i].name,
				ag.ports[i].path, strerror(-rc));
			goto out;
		}
	}
	if (!opened) {
		log_err("agent: no virtio-serial port org.qemu.guest_agent.0 or org.vnoise.0 here");
		ret = EXIT_ENV;
		goto out;
	}
	while (!g_stop && (!end_ns || now_ns() < end_ns))
		serve_once(&ag);
	ret = EXIT_OK;
out:
	for (i = 0; i < 2; i++) {
		if (ag.ports[i].fd >= 0)
			close(ag.ports[i].fd);
		qga_agent_free(ag.ports[i].qa);
	}
	return ret;
}
