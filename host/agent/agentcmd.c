/* SPDX-License-Identifier: MIT */
/*
 * agentcmd: `vnoise-host agent` (see agentcmd.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <libvirt/virterror.h>
#include "agent/agentcmd.h"
#include "cli/cliopt.h"
#include "cli/exitcode.h"
#include "libvirt/session.h"
#include "libvirt/virtxml.h"
#include "util/json.h"
#include "util/log.h"
#include "util/termsafe.h"
#include "util/monotime.h"

#define LINE_MAX_REQ 4096 /* a request line we send */
#define SYNC_RESEND_NS 1000000000ULL /* a sync not answered this long is sent again */

struct agentcmd_conn {
	int fd;
	uint64_t timeout_ns;
	int64_t next_id;
	uint64_t bad; /* replies that were not valid, since the last sync/exec began */
	size_t pos, len; /* unconsumed bytes in in[] */
	char in[4096];
	struct qga_framer fr;
	struct jsonr_doc *doc;
};

struct agentcmd_conn *agentcmd_conn_new(int fd, uint64_t timeout_ns)
{
	struct agentcmd_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->doc = jsonr_doc_new(QGA_MSG_MAX, QGA_MAX_NODES);
	if (!c->doc) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	c->fd = fd;
	c->timeout_ns = timeout_ns;
	c->next_id = (int64_t)(now_ns() % 1000000000ULL) + 1; /* unlike a stale reply's id */
	qga_framer_init(&c->fr);
	return c;
}

void agentcmd_conn_free(struct agentcmd_conn *c)
{
	if (!c)
		return;
	jsonr_doc_free(c->doc);
	free(c);
}

static int poll_until(int fd, short ev, uint64_t deadline)
{
	uint64_t t = now_ns();
	struct pollfd pfd = { .fd = fd, .events = ev };
	int n;

	if (t >= deadline)
		return -ETIMEDOUT;
	n = poll(&pfd, 1, (int)((deadline - t) / 1000000ULL) + 1);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return now_ns() >= deadline ? -ETIMEDOUT : 0;
	return 0;
}

static int send_all(struct agentcmd_conn *c, const char *buf, size_t len, uint64_t deadline)
{
	while (len) {
		ssize_t n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		int rc;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return errno == EPIPE ? -ECONNRESET : -errno;
		rc = poll_until(c->fd, POLLOUT, deadline);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * The next valid reply before deadline. Invalid texts (garbage, oversize, bad shape) are counted and
 * skipped; at the deadline the result is -EPROTO if any were seen, else -ETIMEDOUT.
 */
static int next_reply(struct agentcmd_conn *c, uint64_t deadline, struct qga_reply *r)
{
	for (;;) {
		const char *in = c->in + c->pos, *msg;
		size_t in_len = c->len - c->pos, msg_len;
		enum qga_frame_event ev = QGA_FRAME_NEED;
		ssize_t n;
		int rc;

		if (in_len) {
			ev = qga_framer_next(&c->fr, &in, &in_len, &msg, &msg_len);
			c->pos = (size_t)(in - c->in);
		}
		if (ev == QGA_FRAME_MSG) {
			if (qga_reply_parse(c->doc, msg, msg_len, r) == 0)
				return 0;
			c->bad++;
			continue;
		}
		if (ev == QGA_FRAME_OVERSIZE)
			c->bad++;
		if (ev != QGA_FRAME_NEED)
			continue;
		rc = poll_until(c->fd, POLLIN, deadline);
		if (rc)
			return rc == -ETIMEDOUT && c->bad ? -EPROTO : rc;
		n = recv(c->fd, c->in, sizeof(c->in), MSG_DONTWAIT);
		if (n == 0)
			return -ECONNRESET;
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		c->pos = 0;
		c->len = n > 0 ? (size_t)n : 0;
	}
}

/*
 * The sync is sent again every SYNC_RESEND_NS with a new id, and an answer to any of them is taken: the guest
 * agent drops a reply it cannot write (the host end of its port not yet connected on its side: the port's
 * control message comes late on a busy vCPU), so one sync would cost the whole timeout.
 */
int agentcmd_sync(struct agentcmd_conn *c)
{
	uint64_t deadline = now_ns() + c->timeout_ns, resend = 0;
	int64_t first = c->next_id, last = first - 1;
	struct qga_reply r;
	char line[256];
	int rc = 0;

	c->bad = 0;
	while (!rc) {
		if (now_ns() >= resend) {
			ssize_t n = qga_request_sync(line, sizeof(line), true, c->next_id);

			if (n < 0)
				return (int)n;
			last = c->next_id++;
			resend = now_ns() + SYNC_RESEND_NS;
			rc = send_all(c, line, (size_t)n, deadline);
			if (rc)
				break;
		}
		rc = next_reply(c, resend < deadline ? resend : deadline, &r);
		if ((rc == -ETIMEDOUT || rc == -EPROTO) && now_ns() < deadline) {
			rc = 0; /* this sync's slice is over: send another */
			continue;
		}
		if (rc)
			break;
		/* anything but an answer to our syncs is a reply left from an earlier client: skip it */
		for (int64_t id = first; id <= last; id++)
			if (qga_reply_sync_check(&r, id) == 0)
				return 0;
	}
	return rc;
}

int agentcmd_exec(struct agentcmd_conn *c, const char *name, const char *args_json,
		  struct qga_reply *r)
{
	uint64_t deadline = now_ns() + c->timeout_ns;
	int64_t id = c->next_id++;
	char line[LINE_MAX_REQ];
	ssize_t n = qga_request(line, sizeof(line), name, args_json, id);
	int rc;

	if (n < 0)
		return (int)n;
	c->bad = 0;
	rc = send_all(c, line, (size_t)n, deadline);
	while (!rc) {
		rc = next_reply(c, deadline, r);
		if (!rc && qga_reply_id_is(r, id))
			return 0;
	}
	return rc;
}

/* ---- the command ---- */

enum { OPT_TIMEOUT = CLIOPT_OWN, OPT_HELPER, OPT_NO_HCALL };

static const struct cliopt agent_opts[] = {
	{ .id = CLIOPT_DOMAIN, .help = "the domain (required)" },
	{ .id = CLIOPT_CONNECT, .help = "libvirt URI (default qemu:///system)" },
	{ .id = CLIOPT_JSON, .help = "status: the agent's reply as JSON" },
	{ .id = OPT_TIMEOUT,
	  .name = "timeout",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "wait at most TIME for each answer (default 10s)" },
	{ .id = CLIOPT_CPUS, .help = "start: measure these CPUs (default: all)" },
	{ .id = CLIOPT_PERIOD, .help = "start: measurement period" },
	{ .id = CLIOPT_RUNTIME, .help = "start: sampling runtime per period" },
	{ .id = CLIOPT_THRESHOLD, .help = "start: smallest gap recorded" },
	{ .id = CLIOPT_PRIORITY, .help = "start: sampler scheduling policy:priority" },
	{ .id = OPT_HELPER,
	  .name = "helper",
	  .has_arg = 1,
	  .arg = "MODE",
	  .help = "start: kernel helper auto, bpf or proc" },
	{ .id = OPT_NO_HCALL, .name = "no-hypercall", .help = "start: no hypercall probe" },
	{ .id = CLIOPT_QUIET },
	{ .id = CLIOPT_VERBOSE },
	{ .id = CLIOPT_HELP },
	{ 0 },
};

static const char agent_usage[] =
    "usage: vnoise-host agent -D DOM [--connect URI] [--timeout TIME] status [-j]\n"
    "       vnoise-host agent -D DOM start [measure options]\n"
    "       vnoise-host agent -D DOM stop\n"
    "Talks to vnoise-guest's agent in DOM through the host socket of the domain's\n"
    "org.vnoise.0 channel (vnoise-host enable -D DOM adds it), beside any qemu-ga.\n"
    "start without options restarts the last measurement; with options it\n"
    "restarts measuring with them.\n";

struct agent_args {
	const char *domain, *uri, *action;
	uint64_t timeout_ns;
	int json, quiet, verbose;
	/* start: measure options, as JSON members (key, value) */
	const char *keys[8];
	char vals[8][64];
	int nkv;
	int no_hcall;
};

static int add_kv(struct cliopt_parser *ps, struct agent_args *a, const char *key, const char *v)
{
	if (a->nkv >= 8 || strlen(v) >= sizeof(a->vals[0]))
		return cliopt_fail(ps, "invalid %s '%s'", cliopt_name(ps), v);
	a->keys[a->nkv] = key;
	snprintf(a->vals[a->nkv++], sizeof(a->vals[0]), "%s", v);
	return 0;
}

/* A TIME option for start: checked here, sent as nanoseconds. */
static int add_time(struct cliopt_parser *ps, struct agent_args *a, const char *key)
{
	char v[32];
	uint64_t ns;

	if (cliopt_time(ps, &ns))
		return -EINVAL;
	snprintf(v, sizeof(v), "%" PRIu64 "ns", ns);
	return add_kv(ps, a, key, v);
}

static int parse_opt(struct cliopt_parser *ps, int c, struct agent_args *a)
{
	const struct cliopt_flags flags = { &a->json, &a->quiet, &a->verbose };

	if (cliopt_flag(c, &flags))
		return 0;
	switch (c) {
	case CLIOPT_DOMAIN:
		a->domain = ps->arg;
		return 0;
	case CLIOPT_CONNECT:
		a->uri = ps->arg;
		return 0;
	case OPT_TIMEOUT:
		if (cliopt_time(ps, &a->timeout_ns))
			return -EINVAL;
		if (!a->timeout_ns)
			return cliopt_fail(ps, "invalid --timeout: want > 0");
		return 0;
	case CLIOPT_CPUS:
		return add_kv(ps, a, "cpus", ps->arg);
	case CLIOPT_PERIOD:
		return add_time(ps, a, "period");
	case CLIOPT_RUNTIME:
		return add_time(ps, a, "runtime");
	case CLIOPT_THRESHOLD:
		return add_time(ps, a, "threshold");
	case CLIOPT_PRIORITY:
		return add_kv(ps, a, "priority", ps->arg);
	case OPT_HELPER:
		return add_kv(ps, a, "helper", ps->arg);
	case OPT_NO_HCALL:
		a->no_hcall = 1;
		return 0;
	}
	return cliopt_fail(ps, "unexpected option %s", cliopt_name(ps));
}

/* 0, 1 (--help printed), or EXIT_USAGE after the error line. */
static int parse_args(int argc, char **argv, struct agent_args *a)
{
	struct cliopt_parser ps;
	char err[256], help[4096];
	int c;

	*a = (struct agent_args){ .timeout_ns = AGENTCMD_TIMEOUT_NS };
	if (cliopt_init(&ps, agent_opts, argc, argv, err, sizeof(err)))
		goto bad;
	for (;;) {
		c = cliopt_next(&ps);
		if (c < 0)
			goto bad;
		if (c == CLIOPT_HELP) {
			fputs(agent_usage, stdout);
			cliopt_help(agent_opts, help, sizeof(help));
			fputs(help, stdout);
			cliopt_exit_print(stdout, CLIOPT_EXITS_COMMON |
						      CLIOPT_EXIT(EXIT_UNREACHABLE) |
						      CLIOPT_EXIT(EXIT_NODOMAIN));
			return 1;
		}
		if (c > 0) {
			if (parse_opt(&ps, c, a))
				goto bad;
			continue;
		}
		if (optind >= argc)
			break;
		if (a->action) {
			snprintf(err, sizeof(err), "unexpected argument '%s'", argv[optind]);
			goto bad;
		}
		a->action = argv[optind++];
	}
	if (!a->domain)
		snprintf(err, sizeof(err), "-D/--domain is required");
	else if (!a->action)
		snprintf(err, sizeof(err), "an action is required: status, start or stop");
	else if (strcmp(a->action, "status") && strcmp(a->action, "start") &&
		 strcmp(a->action, "stop"))
		snprintf(err, sizeof(err), "unknown action '%s': want status, start or stop",
			 a->action);
	else if (strcmp(a->action, "start") && (a->nkv || a->no_hcall))
		snprintf(err, sizeof(err), "measure options apply to start only");
	else
		return 0;
bad:
	log_err("agent: %s (see 'vnoise-host agent --help')", err);
	return EXIT_USAGE;
}

/* The socket of DOM's org.vnoise.0 channel from its live XML into path. An exit code (error logged). */
static int find_socket(const struct agent_args *a, char *path, size_t cap)
{
	const char *uri = a->uri ? a->uri : "qemu:///system";
	enum session_fail why;
	char msg[512];
	struct sess *s = session_open(a->uri, &why, msg, sizeof(msg));
	virDomainPtr dom;
	char *xml = NULL;
	int rc = EXIT_OK;

	if (!s) {
		log_err("%s at %s: %s",
			why == SESSION_DENIED	     ? "no permission to use libvirt"
			: why == SESSION_UNREACHABLE ? "libvirt unreachable"
						     : "cannot connect to libvirt",
			uri, msg);
		return why == SESSION_DENIED	    ? EXIT_CANNOT
		       : why == SESSION_UNREACHABLE ? EXIT_UNREACHABLE
						    : EXIT_FAIL;
	}
	dom = virDomainLookupByName(session_conn(s), a->domain);
	if (!dom) {
		virErrorPtr e = virGetLastError();

		rc = e && e->code == VIR_ERR_NO_DOMAIN ? EXIT_NODOMAIN : EXIT_FAIL;
		if (rc == EXIT_NODOMAIN)
			log_err("domain '%s' not found at %s", a->domain, uri);
		else
			log_err("domain '%s': %s", a->domain, session_last_error());
	} else if (!(xml = virDomainGetXMLDesc(dom, 0))) {
		log_err("domain '%s': cannot read its XML: %s", a->domain, session_last_error());
		rc = EXIT_FAIL;
	} else if (virtxml_channel_path(xml, AGENTCMD_CHANNEL, path, cap) &&
		   !(virDomainIsActive(dom) != 1 && virtxml_has_channel(xml, AGENTCMD_CHANNEL))) {
		log_err("domain %s has no %s channel (vnoise-host enable -D %s)", a->domain,
			AGENTCMD_CHANNEL, a->domain);
		rc = EXIT_CANNOT;
	} else if (virDomainIsActive(dom) !=
		   1) { /* an inactive one's socket path may come at start */
		log_err("domain '%s' is not running", a->domain);
		rc = EXIT_CANNOT;
	}
	free(xml);
	if (dom)
		virDomainFree(dom);
	session_close(s);
	return rc;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* The start arguments as a JSON object text (malloc'd), or NULL without any. */
static char *start_args(const struct agent_args *a)
{
	struct json_writer w;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int i;

	if (!a->nkv && !a->no_hcall)
		return NULL;
	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	json_init(&w, f, 0);
	json_obj_begin(&w);
	for (i = 0; i < a->nkv; i++)
		json_kv_str(&w, a->keys[i], a->vals[i]);
	if (a->no_hcall)
		json_kv_bool(&w, "no-hypercall", true);
	json_obj_end(&w);
	if (json_finish(&w)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

/* A string of the guest's reply on f, escaped for the terminal (util/termsafe), any length. */
static void put_safe(FILE *f, const char *s)
{
	char buf[TERMSAFE_LEN(64)];
	size_t n = s ? strlen(s) : 0;

	for (size_t o = 0; o < n; o += 64)
		fputs(termsafe(buf, sizeof(buf), s + o, n - o < 64 ? n - o : 64), f);
}

/* One member of the status as text: scalars as they are, objects in arrays as "k=v" pairs. */
static void print_value(FILE *f, const struct jsonr_value *v)
{
	const struct jsonr_value *m;

	switch (v->kind) {
	case JSONR_NULL:
		fputs("-", f);
		break;
	case JSONR_BOOL:
		fputs(v->b ? "yes" : "no", f);
		break;
	case JSONR_INT:
		fprintf(f, "%s%" PRIu64, v->neg ? "-" : "", v->mag);
		break;
	case JSONR_DOUBLE:
		fprintf(f, "%g", v->d);
		break;
	case JSONR_STR:
		put_safe(f, v->str);
		break;
	default:
		for (m = v->child; m; m = m->next) {
			if (m->key) {
				put_safe(f, m->key);
				fputc('=', f);
			}
			print_value(f, m);
			if (m->next)
				fputs(v->kind == JSONR_ARR ? ", " : " ", f);
		}
	}
}

void agentcmd_print_text(FILE *f, const struct jsonr_value *ret)
{
	const struct jsonr_value *m;

	if (ret->kind != JSONR_OBJ) {
		print_value(f, ret);
		fputc('\n', f);
		return;
	}
	for (m = ret->child; m; m = m->next) {
		put_safe(f, m->key);
		fputs(": ", f);
		print_value(f, m);
		fputc('\n', f);
	}
}

static void print_reply(const struct agent_args *a, const struct jsonr_value *ret)
{
	struct json_writer w;

	if (a->json) {
		json_init(&w, stdout, 0);
		jsonr_write_value(&w, ret);
		if (json_finish(&w))
			log_err("cannot write the reply: %s", strerror(-w.err));
		return;
	}
	agentcmd_print_text(stdout, ret);
}

/* Sync, run the action, print its result. An exit code (error logged). */
static int run_action(const struct agent_args *a, struct agentcmd_conn *c, const char *path)
{
	static const char *const cmd_of[][2] = { { "status", "__com.vnoise_status" },
						 { "start", "__com.vnoise_start" },
						 { "stop", "__com.vnoise_stop" } };
	const char *cmd = cmd_of[0][1];
	char *args = strcmp(a->action, "start") ? NULL : start_args(a);
	struct qga_reply r;
	size_t i;
	int rc = agentcmd_sync(c);

	for (i = 0; i < sizeof(cmd_of) / sizeof(cmd_of[0]); i++)
		if (!strcmp(a->action, cmd_of[i][0]))
			cmd = cmd_of[i][1];
	if (!rc)
		rc = agentcmd_exec(c, cmd, args, &r);
	free(args);
	if (rc == -ETIMEDOUT) {
		log_err("agent of %s not answering on %s (%s) within %.3g s: is vnoise-guest agent "
			"running in the guest?",
			a->domain, AGENTCMD_CHANNEL, path, (double)a->timeout_ns / 1e9);
		return EXIT_FAIL;
	}
	if (rc == -EPROTO) {
		log_err("agent of %s: its replies are not valid QGA replies", a->domain);
		return EXIT_FAIL;
	}
	if (rc) {
		log_err("agent of %s on %s: %s", a->domain, path, strerror(-rc));
		return EXIT_FAIL;
	}
	if (r.is_error) {
		log_err("agent of %s: %s: %s", a->domain, a->action, r.err_desc);
		return EXIT_FAIL;
	}
	print_reply(a, r.ret);
	return EXIT_OK;
}

int agentcmd_main(int argc, char **argv)
{
	struct agent_args a;
	struct agentcmd_conn *c;
	char path[4096];
	int rc = parse_args(argc, argv, &a), fd;

	if (rc)
		return rc == 1 ? EXIT_OK : rc;
	log_set_verbosity(a.quiet ? -1 : a.verbose);
	rc = find_socket(&a, path, sizeof(path));
	if (rc)
		return rc;
	fd = connect_unix(path);
	if (fd < 0) {
		log_err("cannot connect to the %s socket of %s (%s): %s", AGENTCMD_CHANNEL,
			a.domain, path, strerror(-fd));
		return EXIT_FAIL;
	}
	c = agentcmd_conn_new(fd, a.timeout_ns);
	if (!c) {
		log_err("out of memory");
		close(fd);
		return EXIT_FAIL;
	}
	rc = run_action(&a, c, path);
	agentcmd_conn_free(c);
	close(fd);
	return rc;
}
