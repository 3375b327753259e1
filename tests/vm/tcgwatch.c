/* SPDX-License-Identifier: MIT */
/*
 * tcgwatch: frees a test VM's vCPUs that QEMU 7.2's TCG left re-executing a stale int3 (tests/vm/README.md,
 * "TCG's stale int3").
 *   tcgwatch HMP_SOCKET GDB_SOCKET SYMS [--interval MS] [--log FILE] [--step-once]
 * HMP_SOCKET: the domain's extra human monitor (vm.bash adds -monitor unix:...,server=on,wait=off).
 * SYMS: /proc/kallsyms lines of the guest kernel naming asm_exc_int3 and the int3 handlers (any boot: only
 * their offsets from asm_exc_int3 are used; each sample reads asm_exc_int3 from the IDT, so a reboot with a
 * new KASLR base is followed).
 *
 * Every MS (default 1000) it reads every vCPU's RIP and CPL ("info registers -a"; TCG vCPUs are not paused
 * for it). A vCPU found in kernel mode, not halted, inside the int3 entry or handlers or at the address of
 * its previous sample, in 2 of its last 3 samples, is looked at closer (confirm()): it is stuck if it keeps
 * trapping and coming back to one address whose byte in memory is no int3 (a patch in progress has its int3
 * in memory). Then it attaches QEMU's gdbstub
 * (on GDB_SOCKET, started and stopped through the monitor), steps every vCPU TCGWATCH_STEPS instructions and
 * detaches. That re-translates the guest's code (the stale translation is not found again) and the guest runs
 * on; it has no other effect on a guest that runs correctly. Each such recovery is one line on stderr and in
 * FILE. Exits 0 when the monitor closes (the domain is gone) or on SIGTERM; 2 on bad arguments or when the
 * monitor cannot be reached at the start. --step-once: the recovery alone, now, then exit (0, or 1 when the
 * gdbstub session failed): the harness's test that it leaves a running guest running.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "vmutil.h"

#define TCGWATCH_MAX_CPUS 64
#define TCGWATCH_STEPS 20
#define TCGWATCH_IO_MS 5000
#define TCGWATCH_BUF (64 * 1024)
#define TCGWATCH_IDT3 "0xfffffe0000000030" /* cpu_entry_area's IDT, vector 3 (#BP) */

/* the int3 path, as offsets from asm_exc_int3 (IDT vector 3) and a generous length */
static const struct {
	const char *name;
	uint64_t len;
} int3_syms[] = { { "asm_exc_int3", 0x80 },
		  { "exc_int3", 0x100 },
		  { "poke_int3_handler", 0x200 },
		  { "kprobe_int3_handler", 0x300 } };
#define NSYMS (sizeof(int3_syms) / sizeof(int3_syms[0]))

static volatile sig_atomic_t stop;
static char buf[TCGWATCH_BUF];

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static int write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -EIO;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read into buf (len so far *n) until it ends with end, or the deadline: 0, -ETIMEDOUT or -EPIPE (closed). */
static int read_until(int fd, size_t *n, const char *end, uint64_t deadline)
{
	size_t el = strlen(end);

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_ms();
		ssize_t r;

		if (*n >= el && !memcmp(buf + *n - el, end, el))
			return 0;
		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		if (*n >= sizeof(buf) - 1) /* keep the tail: the prompt is all that is looked for */
			*n = 0;
		r = read(fd, buf + *n, sizeof(buf) - 1 - *n);
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return -EPIPE;
		if (r > 0)
			*n += (size_t)r;
		buf[*n] = 0;
	}
}

/* One monitor command; its output (with the echo) in buf. */
static int hmp(int fd, const char *cmd)
{
	size_t n = 0;
	int rc = write_all(fd, cmd, strlen(cmd));

	if (!rc)
		rc = write_all(fd, "\n", 1);
	if (!rc)
		rc = read_until(fd, &n, "(qemu) ", now_ms() + TCGWATCH_IO_MS);
	return rc;
}

/* ---- the gdbstub (remote serial protocol): just what stepping every vCPU needs ---- */

static int rsp_send(int fd, const char *body)
{
	char pkt[128];
	unsigned int sum = 0;
	const char *c;

	for (c = body; *c; c++)
		sum += (unsigned char)*c;
	snprintf(pkt, sizeof(pkt), "$%s#%02x", body, sum & 0xff);
	return write_all(fd, pkt, strlen(pkt));
}

/* The next packet's body (acks skipped; acked); 0, or -ETIMEDOUT / -EPIPE. */
static int rsp_recv(int fd, char *body, size_t cap, int timeout_ms)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;
	size_t n = 0;
	char *d, *h;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = now_ms();
		ssize_t r;

		d = memchr(buf, '$', n);
		h = d ? memchr(d, '#', n - (size_t)(d - buf)) : NULL;
		if (h && (size_t)(h - buf) + 3 <= n) {
			size_t bl = (size_t)(h - d - 1);

			snprintf(body, cap, "%.*s", (int)bl, d + 1);
			return write_all(fd, "+", 1);
		}
		if (now >= deadline)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)(deadline - now)) <= 0)
			continue;
		if (n >= sizeof(buf) - 1)
			return -EPIPE;
		r = read(fd, buf + n, sizeof(buf) - 1 - n);
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			return -EPIPE;
		if (r > 0)
			n += (size_t)r;
	}
}

static int rsp(int fd, const char *body, char *reply, size_t cap)
{
	int rc = rsp_send(fd, body);

	return rc ? rc : rsp_recv(fd, reply, cap, TCGWATCH_IO_MS);
}

/* Attach the gdbstub, step each of the ncpus vCPUs, detach: 0 or -errno. */
static int step_all(int mon, const char *gdb_path, int ncpus)
{
	char cmd[300], reply[512], sel[16];
	int fd = -ENOENT, rc = 0, cpu, i;

	unlink(gdb_path);
	snprintf(cmd, sizeof(cmd), "gdbserver unix:%s,server=on,wait=off", gdb_path);
	if ((rc = hmp(mon, cmd)))
		return rc;
	for (i = 0; i < 50 && fd < 0; i++) {
		fd = unix_connect(gdb_path);
		if (fd < 0)
			usleep(20000);
	}
	if (fd < 0) {
		rc = fd;
		goto out;
	}
	/* the stub stops the VM when a debugger connects; '?' says so, and a stop report may follow */
	if ((rc = rsp(fd, "?", reply, sizeof(reply))))
		goto out;
	(void)rsp_recv(fd, reply, sizeof(reply), 300);
	for (cpu = 1; cpu <= ncpus && !rc; cpu++) {
		snprintf(sel, sizeof(sel), "Hg%x", cpu);
		rc = rsp(fd, sel, reply, sizeof(reply));
		sel[1] = 'c';
		if (!rc)
			rc = rsp(fd, sel, reply, sizeof(reply));
		for (i = 0; i < TCGWATCH_STEPS && !rc; i++)
			rc = rsp(fd, "s", reply, sizeof(reply));
	}
	if (!rc)
		rc = rsp(fd, "D", reply, sizeof(reply)); /* detach: the VM runs on */
out:
	if (fd >= 0)
		close(fd);
	(void)hmp(mon, "gdbserver none");
	/* a session cut short leaves the VM stopped; on a running VM this is a no-op */
	(void)hmp(mon, "cont");
	unlink(gdb_path);
	return rc;
}

/* ---- sampling ---- */

/* asm_exc_int3's address, from vector 3 of the IDT ("x /4xw"); 0 when it cannot be read */
static uint64_t idt_int3(int mon)
{
	unsigned int w[4];
	const char *p;

	if (hmp(mon, "x /4xw " TCGWATCH_IDT3))
		return 0;
	p = strstr(buf, "fffffe0000000030:");
	if (!p || sscanf(p + 17, " %x %x %x %x", &w[0], &w[1], &w[2], &w[3]) != 4)
		return 0;
	return ((uint64_t)w[2] << 32) | (w[1] & 0xffff0000u) | (w[0] & 0xffffu);
}

/* RIP and CPL of each vCPU from "info registers -a" (CPL 4: halted): the number of vCPUs, or -1 */
static int sample(int mon, uint64_t *rip, int *cpl)
{
	const char *p = buf;
	int n = 0;

	if (hmp(mon, "info registers -a"))
		return -1;
	while ((p = strstr(p, "CPU#")) && n < TCGWATCH_MAX_CPUS) {
		const char *r = strstr(p, "RIP="), *c = strstr(p, "CPL="), *h = strstr(p, "HLT=");

		if (!r || !c)
			break;
		rip[n] = strtoull(r + 4, NULL, 16);
		cpl[n] = h && h[4] == '1' ? 4 : atoi(c + 4);
		n++;
		p = c;
	}
	return n;
}

/* offsets of int3_syms from asm_exc_int3, from kallsyms lines: 0 or -1 */
static int load_syms(const char *path, int64_t *off)
{
	uint64_t addr[NSYMS] = { 0 };
	char line[256], name[128];
	unsigned long long a;
	char type;
	FILE *f = fopen(path, "r");
	size_t i;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %c %127s", &a, &type, name) == 3)
			for (i = 0; i < NSYMS; i++)
				if (!strcmp(name, int3_syms[i].name))
					addr[i] = a;
	fclose(f);
	for (i = 0; i < NSYMS; i++) {
		if (!addr[i])
			return -1;
		off[i] = (int64_t)(addr[i] - addr[0]);
	}
	return 0;
}

static bool in_int3(uint64_t rip, uint64_t base, const int64_t *off)
{
	size_t i;

	for (i = 0; i < NSYMS; i++) {
		uint64_t s = base + (uint64_t)off[i];

		if (rip >= s && rip < s + int3_syms[i].len)
			return true;
	}
	return false;
}

/* the byte of guest memory at a kernel address ("x /1xb"): 0-255, or -1 */
static int guest_byte(int mon, uint64_t addr)
{
	char cmd[64];
	const char *p;

	snprintf(cmd, sizeof(cmd), "x /1xb 0x%016" PRIx64, addr);
	if (hmp(mon, cmd) || !(p = strstr(buf, ": 0x")))
		return -1;
	return (int)strtol(p + 2, NULL, 16);
}

/*
 * A candidate, sampled TCGWATCH_BURST times 50 ms apart: stuck if one vCPU was in the int3 handlers in at
 * least a fifth of them and came back to one address outside them at least 3 times whose byte in memory is
 * not an int3. A patch in progress has its int3 in memory; the stale one has not. The vCPU, or -1.
 */
#define TCGWATCH_BURST 20
static int confirm(int mon, const int64_t *off, uint64_t *site)
{
	static uint64_t at[TCGWATCH_MAX_CPUS][TCGWATCH_BURST];
	int hits[TCGWATCH_MAX_CPUS] = { 0 }, nat[TCGWATCH_MAX_CPUS] = { 0 };
	uint64_t rip[TCGWATCH_MAX_CPUS], base = 0;
	int cpl[TCGWATCH_MAX_CPUS], n = 0, k, i, j, m, same;

	for (k = 0; k < TCGWATCH_BURST && !stop; k++) {
		usleep(50000);
		base = idt_int3(mon);
		n = sample(mon, rip, cpl);
		if (n <= 0 || !base)
			return -1;
		for (i = 0; i < n; i++) {
			if (cpl[i])
				continue;
			if (in_int3(rip[i], base, off))
				hits[i]++;
			else
				at[i][nat[i]++] = rip[i];
		}
	}
	for (i = 0; i < n; i++) {
		if (hits[i] * 5 < TCGWATCH_BURST)
			continue;
		for (j = 0; j < nat[i]; j++) {
			int byte;

			for (m = 0; m < j && at[i][m] != at[i][j]; m++)
				;
			if (m < j)
				continue; /* this address was judged at its first sample */
			for (same = 0, m = j; m < nat[i]; m++)
				same += at[i][m] == at[i][j];
			if (same < 3)
				continue;
			byte = guest_byte(mon, at[i][j]); /* one monitor round trip per address */
			if (byte >= 0 && byte != 0xcc) {
				*site = at[i][j];
				return i;
			}
		}
	}
	return -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: tcgwatch HMP_SOCKET GDB_SOCKET SYMS [--interval MS] [--log FILE] "
			"[--step-once]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long interval = 1000, v;
	const char *logpath = NULL;
	uint64_t rip[TCGWATCH_MAX_CPUS], prev[TCGWATCH_MAX_CPUS] = { 0 }, base;
	unsigned int hist[TCGWATCH_MAX_CPUS] = { 0 };
	int cpl[TCGWATCH_MAX_CPUS], mon, n, i, rc;
	int64_t off[NSYMS];
	unsigned long recoveries = 0;
	bool step_once = false;
	size_t got = 0;

	if (argc < 4)
		usage();
	for (i = 4; i < argc; i++) {
		if (!strcmp(argv[i], "--step-once"))
			step_once = true;
		else if (i + 1 < argc && !strcmp(argv[i], "--interval") &&
			 !parse_uint(argv[i + 1], 60000, &v) && v >= 10) {
			interval = v;
			i++;
		} else if (i + 1 < argc && !strcmp(argv[i], "--log"))
			logpath = argv[++i];
		else
			usage();
	}
	if (load_syms(argv[3], off)) {
		fprintf(stderr, "tcgwatch: %s does not name %s and the int3 handlers\n", argv[3],
			int3_syms[0].name);
		return 2;
	}
	mon = -1;
	for (i = 0; i < 100 && mon < 0; i++) { /* QEMU may still be creating the socket */
		mon = unix_connect(argv[1]);
		if (mon < 0)
			usleep(50000);
	}
	if (mon < 0 || read_until(mon, &got, "(qemu) ", now_ms() + TCGWATCH_IO_MS)) {
		fprintf(stderr, "tcgwatch: cannot reach the monitor %s\n", argv[1]);
		return 2;
	}
	if (step_once) { /* the recovery alone, on whatever the guest runs (vm_harness.sh) */
		n = sample(mon, rip, cpl);
		rc = n > 0 ? step_all(mon, argv[2], n) : -EIO;
		printf("tcgwatch: stepped each of %d vCPUs %d instructions: %s\n", n,
		       TCGWATCH_STEPS, rc ? strerror(-rc) : "ok");
		return rc ? 1 : 0;
	}
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
	while (!stop) {
		usleep((useconds_t)(interval * 1000));
		base = idt_int3(mon);
		n = sample(mon, rip, cpl);
		if (n < 0)
			break; /* the monitor closed: the domain is gone */
		if (!base)
			continue; /* no IDT yet (booting) */
		bool candidate = false;
		uint64_t site = 0;
		int who;

		for (i = 0; i < n; i++) {
			/* in the handlers, or at the kernel address of the last sample (the stale site) */
			bool hit = cpl[i] == 0 && (in_int3(rip[i], base, off) || rip[i] == prev[i]);

			hist[i] = ((hist[i] << 1) | hit) & 7;
			candidate |= __builtin_popcount(hist[i]) >= 2;
			prev[i] = cpl[i] == 0 ? rip[i] : 0;
		}
		if (!candidate)
			continue;
		memset(hist, 0, sizeof(hist));
		who = confirm(mon, off, &site);
		if (who < 0)
			continue;
		rc = step_all(mon, argv[2], n);
		recoveries++;
		char line[320];

		snprintf(
		    line, sizeof(line),
		    "tcgwatch: vCPU %d keeps trapping in the int3 handlers and returning to "
		    "%016" PRIx64
		    ", which holds no int3: QEMU TCG's stale int3; stepped each of %d vCPUs %d "
		    "instructions: %s (%lu so far)\n",
		    who, site, n, TCGWATCH_STEPS, rc ? strerror(-rc) : "ok", recoveries);
		fputs(line, stderr);
		if (logpath) {
			FILE *f = fopen(logpath, "a");

			if (f) {
				fputs(line, f);
				fclose(f);
			}
		}
	}
	close(mon);
	return 0;
}
