/* SPDX-License-Identifier: MIT */
/*
 * vmshd: the exec daemon of the test VMs. Static; started by the initramfs' init (tests/vm/build-guest.sh)
 * on the virtio-serial port named org.vnoise.test.0 (or -n NAME, or the device -p /dev/vportNpM). The host
 * side is tests/vm/vmexec.c, connected to the unix socket QEMU binds for that channel.
 *
 * Protocol: one host client at a time, requests served one after another, ASCII header lines ending in '\n'.
 *   host  -> guest  "PING <id>\n"
 *   guest -> host   "PONG <id>\n"
 *   host  -> guest  "EXEC <id> <timeout_s> <len>\n" followed by <len> bytes: a shell command
 *   guest -> host   "OUT <id> <rc> <len>\n" followed by <len> bytes: the command's stdout and stderr
 * <id> is 1-64 printable characters without spaces, echoed back so the host can tell a stale reply (of a
 * client that went away) from its own. A client should send one 0xFF byte before its request: 0xFF never
 * occurs in UTF-8, so never in a command, and wherever it comes it drops a partly received request so that
 * parsing starts afresh. That covers a client that died mid-request when the next one connected before the
 * port saw the hang-up.
 * The command runs as `/bin/sh -c CMD` in a new session (its own process group), cwd /, stdin /dev/null,
 * stdout and stderr into one unlinked file in /tmp, which is read once the shell itself has exited:
 * background children (`cmd >log 2>&1 &`) are not waited for. <len> of a command is at most 1 MiB.
 * <timeout_s> 0 means none; at the timeout the whole process group gets SIGKILL, rc is 124 and a
 * "[vmshd: timed out ...]" line is appended. rc is the exit status, 128+N when the shell died of signal N,
 * 125 with a message when vmshd could not run it. Output past 4 MiB is dropped (and its memory released
 * while the command runs) and a "[vmshd: output truncated ...]" line is appended.
 * Lines that do not parse are discarded. When the host disconnects (poll gives POLLHUP, read returns 0), a
 * partly received request is dropped and the port is polled again every 100 ms (sooner on SIGIO, which the
 * port raises when the host connects). A reply the host is no longer there to read is dropped.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "vmutil.h"

#define VMSHD_DEFAULT_NAME "org.vnoise.test.0"
#define VMSHD_LINE_MAX 256 /* longest header line */
#define VMSHD_CMD_MAX (1U << 20) /* longest command, bytes */
#define VMSHD_OUT_CAP (4U << 20) /* output kept, bytes */
#define VMSHD_TIMEOUT_MAX 86400 /* s */
#define VMSHD_IDLE_MS 100 /* poll period while the host is away */
#define VMSHD_WAIT_MS 50 /* child status and output size checks */
#define VMSHD_WRITE_MS 30000 /* give up a reply the host does not read */
#define VMSHD_HUP_GRACE_MS 5000 /* host end not connected this long: it went away */
#define VMSHD_ID_MAX 64
/* never in UTF-8: precedes a request, drops what a vanished client left */
#define VMSHD_SYNC '\xff'

/* A request being received: a header line, then for EXEC its command bytes. */
struct vmshd_req {
	char *buf; /* received bytes not yet consumed */
	size_t len; /* bytes in buf */
	size_t size; /* allocated */
	int discarding; /* dropping an overlong line up to its '\n' */
	int want_body; /* EXEC header seen, waiting for body_len bytes */
	char id[VMSHD_ID_MAX + 1];
	unsigned int timeout_s;
	size_t body_len;
};

static const char *vmshd_prog = "vmshd";

static void vmshd_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void vmshd_log(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s: ", vmshd_prog);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
	va_end(ap);
	strcat(line, "\n");
	if (write(STDERR_FILENO, line, strlen(line)) < 0)
		return;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int id_valid(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > VMSHD_ID_MAX)
		return 0;
	for (; *id; id++)
		if (!isgraph((unsigned char)*id))
			return 0;
	return 1;
}

/*
 * Finds the /dev node of the virtio port called name through /sys/class/virtio-ports/<dev>/name (no udev in
 * the guest). Returns 0 and the path, or -ENOENT while the port is not (yet) there.
 */
static int port_find(const char *name, char *path, size_t size)
{
	char file[PATH_MAX], got[128];
	struct dirent *de;
	int err = -ENOENT;
	DIR *d = opendir("/sys/class/virtio-ports");
	FILE *f;

	if (!d)
		return -ENOENT;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/sys/class/virtio-ports/%s/name", de->d_name);
		f = fopen(file, "re");
		if (!f)
			continue;
		if (!fgets(got, sizeof(got), f))
			got[0] = '\0';
		fclose(f);
		got[strcspn(got, "\n")] = '\0';
		if (strcmp(got, name))
			continue;
		snprintf(path, size, "/dev/%s", de->d_name);
		err = 0;
		break;
	}
	closedir(d);
	return err;
}

/* Opens the port nonblocking, with SIGIO to us on host (dis)connects and input. Returns an fd or -errno. */
static int port_open(const char *path)
{
	int fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd < 0)
		return -errno;
	if (fcntl(fd, F_SETOWN, getpid()) < 0 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_ASYNC | O_NONBLOCK) < 0)
		vmshd_log("warning: no SIGIO on %s: %s", path, strerror(errno));
	return fd;
}

/* Waits up to ms for SIGIO (blocked in the daemon, so it only queues). */
static void wait_sigio(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	sigtimedwait(&set, NULL, &ts);
}

/*
 * Writes all of buf to the port, waiting for room at most VMSHD_WRITE_MS in all. Returns 0, -ENOTCONN when
 * the host went away, -ETIMEDOUT, or another -errno.
 */
static int port_write_all(int fd, const char *buf, size_t len, uint64_t deadline_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	uint64_t now, hup_since = 0;
	ssize_t n;
	int r;

	while (len) {
		n = write(fd, buf, len);
		if (n > 0) {
			buf += n;
			len -= n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		now = now_ms();
		if (now >= deadline_ms)
			return -ETIMEDOUT;
		r = poll(&p, 1, (int)(deadline_ms - now));
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r > 0 && !(p.revents & POLLOUT) && (p.revents & (POLLHUP | POLLERR))) {
			/*
			 * The host end is not connected. A request can arrive before the port's "host
			 * connected" control message (the data and control queues are separate and the
			 * driver handles control in a work item, late on a busy TCG vCPU): a PING answered
			 * at once saw this and its PONG was dropped. Wait for the connection a while (its
			 * SIGIO, as the main loop does).
			 */
			if (!hup_since)
				hup_since = now;
			if (now - hup_since >= VMSHD_HUP_GRACE_MS)
				return -ENOTCONN;
			wait_sigio(VMSHD_IDLE_MS);
			continue;
		}
		hup_since = 0;
	}
	return 0;
}

static void req_reset(struct vmshd_req *rq)
{
	rq->len = 0;
	rq->discarding = 0;
	rq->want_body = 0;
}

static int req_append(struct vmshd_req *rq, const char *data, size_t n)
{
	size_t need = rq->len + n;
	char *nb;

	if (need > rq->size) {
		size_t size = rq->size ? rq->size : 4096;

		while (size < need)
			size *= 2;
		nb = realloc(rq->buf, size);
		if (!nb)
			return -ENOMEM;
		rq->buf = nb;
		rq->size = size;
	}
	memcpy(rq->buf + rq->len, data, n);
	rq->len = need;
	return 0;
}

static void req_consume(struct vmshd_req *rq, size_t n)
{
	memmove(rq->buf, rq->buf + n, rq->len - n);
	rq->len -= n;
}

/* Appends a formatted note to the output buffer (room was reserved by the caller). */
static void out_note(char *out, size_t *len, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void out_note(char *out, size_t *len, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*len && out[*len - 1] != '\n' && *len + 1 < size)
		out[(*len)++] = '\n';
	va_start(ap, fmt);
	n = vsnprintf(out + *len, size - *len, fmt, ap);
	va_end(ap);
	if (n > 0)
		*len += (size_t)n < size - *len ? (size_t)n : size - *len - 1;
}

static void child_exec(const char *cmd, int out_fd)
{
	sigset_t none;
	int null_fd;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	setsid();
	null_fd = open("/dev/null", O_RDONLY);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
	    dup2(out_fd, STDERR_FILENO) < 0)
		_exit(126);
	if (chdir("/") < 0)
		_exit(126);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(127);
}

/*
 * Wait for pid (the shell) to exit, with pidfd when there is one; while waiting, keep out_fd's memory
 * bounded and kill the process group at deadline (ms, 0: none), setting *timed_out. Returns 0 with *status,
 * or -errno (pid is still to be reaped).
 */
static int cmd_wait(pid_t pid, int pidfd, int out_fd, uint64_t deadline, int *status,
		    int *timed_out)
{
	struct stat st;

	for (;;) {
		unsigned int ms = VMSHD_WAIT_MS;
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return -errno;
		/* keep memory bounded: release what lies past the cap while the command still writes */
		if (!fstat(out_fd, &st) && st.st_size > (off_t)VMSHD_OUT_CAP + 65536)
			fallocate(out_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, VMSHD_OUT_CAP,
				  st.st_size - VMSHD_OUT_CAP);
		if (deadline && !*timed_out) {
			uint64_t now = now_ms();

			if (now >= deadline) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				*timed_out = 1;
			} else if (deadline - now < ms) {
				ms = (unsigned int)(deadline - now);
			}
		}
		if (pidfd >= 0) {
			struct pollfd p = { .fd = pidfd, .events = POLLIN };

			poll(&p, 1, (int)ms);
		} else {
			sleep_ms(ms);
		}
	}
}

/*
 * Read the finished command's output from out_fd (at most VMSHD_OUT_CAP bytes, with a note when truncated or
 * timed out) and its exit code from status (124 timed out, 128 + signal). Returns 0 with *rc and a malloc'ed
 * *out of *out_len bytes (caller frees), or -errno.
 */
static int cmd_collect(int out_fd, unsigned int timeout_s, int status, int timed_out, int *rc,
		       char **out, size_t *out_len)
{
	static const size_t note_room = 256;
	size_t keep, len = 0;
	struct stat st;
	char *buf;
	ssize_t n;

	if (fstat(out_fd, &st) < 0)
		return -errno;
	keep = (size_t)st.st_size < VMSHD_OUT_CAP ? (size_t)st.st_size : VMSHD_OUT_CAP;
	buf = malloc(keep + note_room);
	if (!buf)
		return -ENOMEM;
	while (len < keep) {
		n = pread(out_fd, buf + len, keep - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if ((size_t)st.st_size > VMSHD_OUT_CAP)
		out_note(buf, &len, keep + note_room,
			 "[vmshd: output truncated at %u of %lld bytes]\n", VMSHD_OUT_CAP,
			 (long long)st.st_size);
	if (timed_out) {
		out_note(buf, &len, keep + note_room,
			 "[vmshd: timed out after %u s, process group killed]\n", timeout_s);
		*rc = 124;
	} else if (WIFSIGNALED(status)) {
		*rc = 128 + WTERMSIG(status);
	} else {
		*rc = WEXITSTATUS(status);
	}
	*out = buf;
	*out_len = len;
	return 0;
}

/*
 * Runs cmd under /bin/sh -c, waits for the shell (not its background children) at most timeout_s (0: no
 * limit). On success returns 0 with *rc and a malloc'ed *out of *out_len bytes (caller frees).
 */
static int cmd_run(const char *cmd, unsigned int timeout_s, int *rc, char **out, size_t *out_len)
{
	char tmpl[] = "/tmp/vmshd.XXXXXX";
	uint64_t deadline = timeout_s ? now_ms() + (uint64_t)timeout_s * 1000 : 0;
	int out_fd = -1, pidfd = -1, status = 0, timed_out = 0, err;
	pid_t pid = -1;

	out_fd = mkostemp(tmpl, O_CLOEXEC);
	if (out_fd < 0) {
		err = -errno;
		goto out;
	}
	unlink(tmpl);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		goto out;
	}
	if (pid == 0)
		child_exec(cmd, out_fd);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	err = cmd_wait(pid, pidfd, out_fd, deadline, &status, &timed_out);
	if (err)
		goto out;
	pid = -1;
	err = cmd_collect(out_fd, timeout_s, status, timed_out, rc, out, out_len);
out:
	if (pid > 0) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	if (pidfd >= 0)
		close(pidfd);
	if (out_fd >= 0)
		close(out_fd);
	return err;
}

/* Sends a header line and an optional body. Returns 0 or -errno (the reply is then dropped). */
static int reply_send(int fd, const char *hdr, const char *body, size_t len)
{
	uint64_t deadline = now_ms() + VMSHD_WRITE_MS;
	int err;

	err = port_write_all(fd, hdr, strlen(hdr), deadline);
	if (!err && len)
		err = port_write_all(fd, body, len, deadline);
	return err;
}

static int req_exec(int fd, struct vmshd_req *rq)
{
	char hdr[VMSHD_LINE_MAX], *cmd = NULL, *out = NULL;
	size_t out_len = 0;
	int rc = 0, err;

	cmd = malloc(rq->body_len + 1);
	if (!cmd) {
		err = -ENOMEM;
		goto out;
	}
	memcpy(cmd, rq->buf, rq->body_len);
	cmd[rq->body_len] = '\0';
	req_consume(rq, rq->body_len);
	rq->want_body = 0;
	err = cmd_run(cmd, rq->timeout_s, &rc, &out, &out_len);
	if (err) {
		char msg[128];

		snprintf(msg, sizeof(msg), "vmshd: cannot run the command: %s\n", strerror(-err));
		snprintf(hdr, sizeof(hdr), "OUT %s 125 %zu\n", rq->id, strlen(msg));
		err = reply_send(fd, hdr, msg, strlen(msg));
		goto out;
	}
	snprintf(hdr, sizeof(hdr), "OUT %s %d %zu\n", rq->id, rc, out_len);
	err = reply_send(fd, hdr, out, out_len);
out:
	if (err)
		vmshd_log("reply %s dropped: %s", rq->id, strerror(-err));
	free(out);
	free(cmd);
	return err;
}

/* Handles one header line (without its '\n'). Unknown or malformed lines are ignored. */
static void req_line(int fd, struct vmshd_req *rq, char *line)
{
	char *argv[5], *save = NULL, *tok;
	unsigned long long timeout_s, len;
	char hdr[VMSHD_LINE_MAX];
	int argc = 0;

	for (tok = strtok_r(line, " \r", &save); tok && argc < 5;
	     tok = strtok_r(NULL, " \r", &save))
		argv[argc++] = tok;
	if (argc == 2 && !strcmp(argv[0], "PING") && id_valid(argv[1])) {
		snprintf(hdr, sizeof(hdr), "PONG %s\n", argv[1]);
		if (reply_send(fd, hdr, NULL, 0))
			vmshd_log("PONG %s dropped", argv[1]);
		return;
	}
	if (argc == 4 && !strcmp(argv[0], "EXEC") && id_valid(argv[1]) &&
	    !parse_uint(argv[2], VMSHD_TIMEOUT_MAX, &timeout_s) &&
	    !parse_uint(argv[3], VMSHD_CMD_MAX, &len)) {
		snprintf(rq->id, sizeof(rq->id), "%s", argv[1]);
		rq->timeout_s = (unsigned int)timeout_s;
		rq->body_len = (size_t)len;
		rq->want_body = 1;
		return;
	}
	if (argc)
		vmshd_log("discarding a malformed line (%s ...)", argv[0]);
}

/* Consumes every complete line and request in the buffer. */
static void req_process(int fd, struct vmshd_req *rq)
{
	char line[VMSHD_LINE_MAX + 1];
	char *nl;
	size_t n;

	for (;;) {
		if (rq->want_body) {
			if (rq->len < rq->body_len)
				return;
			req_exec(fd, rq);
			continue;
		}
		nl = memchr(rq->buf, '\n', rq->len);
		if (!nl) {
			if (rq->len > VMSHD_LINE_MAX) {
				rq->discarding = 1;
				rq->len = 0;
			}
			return;
		}
		n = (size_t)(nl - rq->buf);
		if (rq->discarding || n > VMSHD_LINE_MAX) {
			rq->discarding = 0;
			req_consume(rq, n + 1);
			continue;
		}
		memcpy(line, rq->buf, n);
		line[n] = '\0';
		req_consume(rq, n + 1);
		req_line(fd, rq, line);
	}
}

/*
 * Feeds received bytes: each VMSHD_SYNC byte drops whatever was pending (a client that vanished without
 * the port noticing, because the next one connected at once), then the bytes after it are parsed afresh.
 */
static void req_feed(int fd, struct vmshd_req *rq, const char *data, size_t n)
{
	const char *sync;
	size_t seg;

	while (n) {
		sync = memchr(data, VMSHD_SYNC, n);
		seg = sync ? (size_t)(sync - data) : n;
		if (seg && !(rq->discarding && !memchr(data, '\n', seg))) {
			if (req_append(rq, data, seg) < 0) {
				vmshd_log("out of memory; dropping the request");
				req_reset(rq);
			} else {
				req_process(fd, rq);
			}
		}
		if (!sync)
			break;
		req_reset(rq);
		data += seg + 1;
		n -= seg + 1;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-n PORT_NAME | -p DEVICE]\n"
		"  serves EXEC/PING requests on a virtio-serial port (default name %s)\n",
		vmshd_prog, VMSHD_DEFAULT_NAME);
}

int main(int argc, char **argv)
{
	const char *name = VMSHD_DEFAULT_NAME, *dev = NULL;
	struct vmshd_req rq = { 0 };
	char path[PATH_MAX], data[65536];
	int fd = -1, waited = 0, opt;
	sigset_t set;
	ssize_t n;

	while ((opt = getopt(argc, argv, "n:p:h")) != -1) {
		switch (opt) {
		case 'n':
			name = optarg;
			break;
		case 'p':
			dev = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGIO);
	sigprocmask(SIG_BLOCK, &set, NULL);

	for (;;) {
		struct pollfd p;

		if (fd < 0) {
			int err = 0;

			if (dev)
				snprintf(path, sizeof(path), "%s", dev);
			else
				err = port_find(name, path, sizeof(path));
			if (!err)
				fd = port_open(path);
			if (err || fd < 0) {
				if (!waited++)
					vmshd_log("waiting for port %s", dev ? dev : name);
				sleep_ms(err ? 50 : 500);
				continue;
			}
			vmshd_log("serving %s (%s)", path, dev ? "device" : name);
			req_reset(&rq);
		}
		p = (struct pollfd){ .fd = fd, .events = POLLIN };
		if (poll(&p, 1, -1) < 0) {
			if (errno != EINTR)
				sleep_ms(VMSHD_IDLE_MS);
			continue;
		}
		n = (p.revents & POLLIN) ? read(fd, data, sizeof(data)) : 0;
		if (n > 0) {
			req_feed(fd, &rq, data, (size_t)n);
			continue;
		}
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0 && errno != EAGAIN) {
			/* port gone (unplugged): reopen it */
			vmshd_log("read %s: %s; reopening", path, strerror(errno));
			close(fd);
			fd = -1;
			sleep_ms(VMSHD_IDLE_MS);
			continue;
		}
		/* host not connected: drop a partial request, wait for it to come (back) */
		req_reset(&rq);
		wait_sigio(VMSHD_IDLE_MS);
	}
}
