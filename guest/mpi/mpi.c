/* SPDX-License-Identifier: MIT */
/*
 * vnoise-guest mpi [options] -- mpirun ...: runs an MPI job with libvnoise-preload.so and the interval
 * pipeline. It loads the passive kernel helper, creates the node-local pipeline (a memfd holding a
 * struct vn_pipe, protocol/app.h) and a registration socket in a private directory, and starts the command
 * with LD_PRELOAD and VNOISE_SOCK set. Each rank registers after MPI_Init: it becomes a target of the helper
 * and receives the pipeline and its noise counters (SCM_RIGHTS). The ranks filter and report the intervals
 * themselves; when the job ends this process filters and reports the intervals still in the pipeline, prints
 * a summary on stderr and exits with the job's status. Signals are forwarded to the job; the socket and its
 * directory are removed on every exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli/exitcode.h"
#include "attrib/classes.h"
#include "cli/cliopt.h"
#include "mpi/pipeline.h"
#include "cluster/node_send.h"
#include "format/keyfile.h"
#include "util/log.h"
#include "util/termsafe.h"
#include "util/outfile.h"
#include "util/secmem.h"
#include "measure/measure.h"
#include "attrib/merge.h"
#include "util/monotime.h"
#include "monitor/monitor.h"
#include "mpi/mpi.h"
#include "util/parse.h"
#include "bpf/passive_loader.h"
#include "cluster/node.h"
#include "dtl/dtl.h"
#include "mpi/mpidtl.h"

#define MPI_MAX_CLIENTS (VN_PIPE_RANKS + 8)

struct mpi_client {
	int fd;
	int pid;
	int rank;
	int tgt; /* helper target index, -1: none */
	struct vn_tgt last; /* counters when the rank left */
	int left;
};

struct mpi_ctx {
	struct vn_pipe *p;
	int pipe_fd;
	struct passive *pv;
	struct mpi_client c[MPI_MAX_CLIENTS];
	int nc;
	int registered, refused;
	char dir[32], sock[64];
	uint32_t
	    out; /* enum vn_pipe_out: our own copy, the pipeline's can be rewritten by a rank */
	int out_fd; /* flush output */
	int job_out_to_err; /* the reports have stdout: the job's stdout is our stderr */
	int udp_fd;
	struct sockaddr_storage udp_addr;
	socklen_t udp_len;
	/* --collector: the node end of the cluster reports (HELLO, SAMPLE commands) */
	struct node node;
	struct keyfile keys;
	int collector;
	int detail; /* the kernel helper tracks causes now */
	uint64_t last_hello_ns;
	int not_started; /* the command could not be executed: no summary */
	/* DTL mode (VN_PIPE_F_DEFER): this process reports from the journal */
	struct dtl *dtl;
	struct vn_pipe
	    *priv; /* private pipe: the journal's intervals with their hypervisor figures */
	uint64_t dtl_wait_ns;
	uint64_t jnext; /* next interval to take from the journal */
	struct mpi_dtl_stats {
		uint64_t intervals; /* attributed and filtered */
		uint64_t waited; /* had to wait for the horizon at least once */
		uint64_t
		    forced; /* closed before the horizon passed them (bound, backlog, host gone) */
		uint64_t lost; /* overwritten in the journal, or never written */
		uint64_t hyp_noise; /* delayed ranks whose verdict names a hypervisor cause */
		uint64_t guest_noise; /* delayed ranks whose guest-only verdict is noise */
	} ds;
	uint64_t pending_since; /* CLOCK_MONOTONIC when jnext was first found waiting */
};

static int parse_classes(const char *s, uint32_t *mask)
{
	char buf[128], *save = NULL, *tok;

	if (strlen(s) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", s);
	*mask = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int c = classes_guest_find(tok);

		if (c < VN_CLASS_NMI || c > VN_CLASS_STEAL)
			return -1;
		*mask |= 1u << c;
	}
	return *mask ? 0 : -1;
}

/*
 * The preload library: $VNOISE_PRELOAD, else beside /proc/self/exe (the build tree), else in ../lib/vnoise
 * from it (make install puts vnoise-guest in sbin/ and the library in lib/vnoise/).
 */
static int find_preload(char *out, size_t len)
{
	static const char *const where[] = { "libvnoise-preload.so",
					     "../lib/vnoise/libvnoise-preload.so" };
	char exe[PATH_MAX];
	const char *env = getenv("VNOISE_PRELOAD");
	ssize_t n;
	size_t i;

	if (env && *env) {
		snprintf(out, len, "%s", env);
		return access(out, R_OK);
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = 0;
	dirname(exe);
	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		int w = snprintf(out, len, "%s/%s", exe, where[i]);

		if (w > 0 && (size_t)w < len && !access(out, R_OK))
			return 0;
	}
	return -1;
}

static void reply(int fd, int status, int tgt, const struct mpi_ctx *m)
{
	struct vn_reg_rep rep = { .magic = VN_REG_MAGIC, .status = status };
	char cbuf[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = { &rep, sizeof(rep) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[2];

	if (!status) {
		struct cmsghdr *cm;

		rep.nfds = tgt >= 0 ? 2 : 1;
		rep.tgt = tgt >= 0 ? (uint32_t)tgt : 0;
		rep.pipe_size = sizeof(struct vn_pipe);
		rep.tgt_size = tgt >= 0 ? passive_tgt_size(m->pv) : 0;
		fds[0] = m->pipe_fd;
		fds[1] = tgt >= 0 ? passive_tgt_fd(m->pv) : -1;
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(rep.nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(rep.nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, rep.nfds * sizeof(int));
	}
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(rep))
		log_debug("registration reply: %s", strerror(errno));
}

/* A rank connects: check what it says (it is not trusted), make it a target, hand out the descriptors. */
static void accept_rank(struct mpi_ctx *m, int lfd)
{
	struct timeval tv = { .tv_sec = 2 };
	struct vn_reg_req req;
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct mpi_client *c;
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), tgt = -1, i;
	ssize_t n;

	if (fd < 0)
		return;
	if (m->nc >= MPI_MAX_CLIENTS) {
		m->refused++;
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = recv(fd, &req, sizeof(req), MSG_WAITALL);
	if (n == (ssize_t)sizeof(req) && req.magic == VN_REG_MAGIC && req.size > VN_PIPE_RANKS) {
		if (!m->refused++)
			log_warn("the job has %d ranks: vnoise tracks at most %d per node, the "
				 "ranks run untracked",
				 req.size, VN_PIPE_RANKS);
		reply(fd, -E2BIG, -1, m);
		close(fd);
		return;
	}
	if (n != (ssize_t)sizeof(req) || req.magic != VN_REG_MAGIC ||
	    req.version != VN_REG_VERSION || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) ||
	    (int)req.pid != cr.pid || req.size < 1 || req.size > VN_PIPE_RANKS || req.rank < 0 ||
	    req.rank >= req.size || (m->p->h.nranks && (__u32)req.size != m->p->h.nranks)) {
		log_warn("refused a registration (pid %d): malformed or inconsistent request",
			 n == (ssize_t)sizeof(req) ? (int)req.pid : -1);
		reply(fd, -EINVAL, -1, m);
		m->refused++;
		close(fd);
		return;
	}
	for (i = 0; i < m->nc; i++) {
		if (!m->c[i].left && m->c[i].rank == req.rank) {
			log_warn("refused pid %d: rank %d is registered already", cr.pid, req.rank);
			reply(fd, -EEXIST, -1, m);
			m->refused++;
			close(fd);
			return;
		}
	}
	if (m->pv) {
		tgt = passive_add_pid(m->pv, cr.pid);
		if (tgt < 0)
			log_warn("rank %d (pid %d): no noise counters: %s", req.rank, cr.pid,
				 strerror(-tgt));
	}
	if (!m->p->h.nranks)
		__atomic_store_n(&m->p->h.nranks, (__u32)req.size, __ATOMIC_RELEASE);
	reply(fd, 0, tgt, m);
	c = &m->c[m->nc++];
	c->fd = fd;
	c->pid = cr.pid;
	c->rank = req.rank;
	c->tgt = tgt;
	m->registered++;
	log_debug("rank %d registered (pid %d, target %d)", req.rank, cr.pid, tgt);
}

static void rank_left(struct mpi_ctx *m, struct mpi_client *c)
{
	if (c->tgt >= 0) {
		c->last = *passive_tgt(m->pv, c->tgt);
		passive_del_pid(m->pv, c->pid);
	}
	close(c->fd);
	c->fd = -1;
	c->left = 1;
}

static void out_line(struct mpi_ctx *m, const char *buf, int n)
{
	ssize_t w;

	if (m->out == VN_PIPE_OUT_UDP)
		w = sendto(m->udp_fd, buf, (size_t)n - 1, 0, (struct sockaddr *)&m->udp_addr,
			   m->udp_len) == n - 1
			? n
			: -1;
	else
		w = write(m->out_fd, buf, (size_t)n);
	if (w == n)
		__atomic_add_fetch(&m->p->h.reported, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&m->p->h.out_errors, 1, __ATOMIC_RELAXED);
}

static int node_tick(struct mpi_ctx *m);

/* ---- DTL mode: the intervals from the journal, with the hypervisor's share, after the horizon ---- */

/* Report interval n of the private pipe through our output (collector, UDP, file or stdout). */
static void report_priv(struct mpi_ctx *m, uint64_t n)
{
	static char buf[65536];
	struct vn_pipe_hdr *ph = &m->priv->h, *sh = &m->p->h;
	uint64_t dg;
	int len;

	if (!pipeline_take_report(m->priv, n))
		return;
	if (m->out == VN_PIPE_OUT_REPORT) {
		/* one sequence space with our HELLOs: the ranks send nothing in DTL mode */
		ph->seq = sh->seq;
		ph->sample_from_ns = __atomic_load_n(&sh->sample_from_ns, __ATOMIC_RELAXED);
		ph->sample_until_ns = __atomic_load_n(&sh->sample_until_ns, __ATOMIC_RELAXED);
		dg = ph->dgrams;
		if (!node_send_report(m->priv, n, m->node.fd))
			__atomic_add_fetch(&sh->reported, 1, __ATOMIC_RELAXED);
		else
			__atomic_add_fetch(&sh->out_errors, 1, __ATOMIC_RELAXED);
		sh->seq = ph->seq;
		__atomic_add_fetch(&sh->dgrams, ph->dgrams - dg, __ATOMIC_RELAXED);
		if (sh->copy_pid) { /* -o beside --collector: the same interval as a JSON line */
			len = pipeline_json(m->priv, n, buf, sizeof(buf));
			if (len <= 0 || write(m->out_fd, buf, (size_t)len) != len)
				__atomic_add_fetch(&sh->out_errors, 1, __ATOMIC_RELAXED);
		}
		return;
	}
	len = pipeline_json(m->priv, n, buf, sizeof(buf));
	if (len > 0 && m->out != VN_PIPE_OUT_NONE)
		out_line(m, buf, len);
	else
		__atomic_add_fetch(&sh->out_errors, 1, __ATOMIC_RELAXED);
}

/*
 * Attribute, filter and report interval n, now in the private pipe's slot. early: judged before the DTL's
 * horizon passed it (its line says "late" instead of "ok": the host part may be short).
 */
static void judge_priv(struct mpi_ctx *m, uint64_t n, bool early)
{
	struct vn_pipe_slot *s = pipeline_slot(m->priv, n);

	m->priv->h.nranks = __atomic_load_n(&m->p->h.nranks, __ATOMIC_RELAXED);
	m->priv->h.dtl = mpidtl_state(m->dtl);
	if (early && m->priv->h.dtl == VN_PIPE_DTL_OK)
		m->priv->h.dtl = VN_PIPE_DTL_LATE;
	for (unsigned i = 0; i < VN_PIPE_RANKS; i++)
		if (s->r[i].interval == n + 1)
			mpidtl_attribute(m->dtl, &s->r[i]);
	if (pipeline_filter(m->priv, n) < 0)
		return;
	m->ds.intervals++;
	m->ds.hyp_noise += s->hdelayed;
	m->ds.guest_noise += s->gdelayed;
	report_priv(m, n);
}

/*
 * The next journal interval: 1 when it was judged or skipped (lost), 0 when it has to wait (not written yet,
 * or the host's horizon has not passed it and the bound allows waiting). final: wait for nothing.
 */
static int defer_next(struct mpi_ctx *m, uint64_t now, int final)
{
	uint64_t n = m->jnext, top = __atomic_load_n(&m->p->h.journal_top, __ATOMIC_ACQUIRE), end;
	enum dtl_state st = dtl_state(m->dtl);
	bool early = false;
	int rc;

	if (n >= top)
		return 0;
	rc = pipeline_journal_take(m->p, n, m->priv);
	if (rc == -EAGAIN && !final && top <= n + 2)
		return 0; /* being written, or its writer is behind */
	if (rc) {
		m->ds.lost++;
		m->jnext++;
		m->pending_since = 0;
		return 1;
	}
	end = mpidtl_end(pipeline_slot(m->priv, n)->r, VN_PIPE_RANKS, n);
	if (dtl_horizon(m->dtl) < end) {
		if (!m->pending_since) {
			m->pending_since = now;
			m->ds.waited++;
		}
		/* bounded: a late or stopped host, or a journal about to wrap, does not hold the report */
		if (!final && (st == DTL_OK || st == DTL_WAITING) &&
		    now - m->pending_since < m->dtl_wait_ns && top - n < VN_PIPE_JOURNAL / 2)
			return 0;
		m->ds.forced++;
		early = true;
	}
	judge_priv(m, n, early);
	m->jnext++;
	m->pending_since = 0;
	return 1;
}

/* Read the DTL and judge what the horizon allows. */
static void defer_tick(struct mpi_ctx *m, int final)
{
	uint64_t now;

	if (!m->priv)
		return;
	dtl_poll(m->dtl);
	now = now_ns();
	while (defer_next(m, now, final))
		;
}

/* After the job: wait (bounded) for the horizon to pass the last intervals, then judge them all. */
static void defer_drain(struct mpi_ctx *m)
{
	uint64_t until = now_ns() + m->dtl_wait_ns;
	struct timespec ts = { 0, 10000000 };

	while (m->jnext < __atomic_load_n(&m->p->h.journal_top, __ATOMIC_ACQUIRE) &&
	       now_ns() < until) {
		defer_tick(m, 0);
		nanosleep(&ts, NULL);
	}
	defer_tick(m, 1);
}

/*
 * The poll timeout of the run loop (ms). DTL mode looks at the journal every 100 ms (the host's horizon is
 * that late anyway, and this process shares the ranks' CPUs), every 5 ms while a quarter of it is waiting.
 */
static int loop_timeout(struct mpi_ctx *m)
{
	int t = node_tick(m), d;

	if (!m->priv)
		return t;
	d = __atomic_load_n(&m->p->h.journal_top, __ATOMIC_RELAXED) - m->jnext > VN_PIPE_JOURNAL / 4
		? 5
		: 100;
	return t < 0 || t > d ? d : t;
}

/*
 * The host's dispatch trace log, unless --no-dtl: with a host publishing (or about to), DTL mode: the ranks
 * journal their intervals instead of reporting them, this process reports. Without one, as before
 * ("dtl":"absent"). An exit code.
 */
static int open_dtl(struct mpi_ctx *m, const struct mpi_params *p)
{
	struct dtl_params dp = { .responder = true, .responder_cpu = -1 };
	char why[256] = "";
	int err;

	m->dtl_wait_ns = p->dtl_wait_ns;
	m->p->h.dtl = p->dtl ? VN_PIPE_DTL_ABSENT : VN_PIPE_DTL_OFF;
	if (!p->dtl)
		return EXIT_OK;
	err = dtl_open(&m->dtl, &dp, why, sizeof(why));
	if (err) {
		log_warn("dispatch trace log: %s (reporting without it)", why);
		m->dtl = NULL;
		return EXIT_OK;
	}
	dtl_poll(m->dtl);
	if (dtl_state(m->dtl) == DTL_ABSENT) {
		dtl_close(m->dtl);
		m->dtl = NULL;
		return EXIT_OK;
	}
	m->priv = calloc(1, sizeof(*m->priv));
	if (!m->priv) {
		log_err("DTL mode: %s", strerror(errno));
		return EXIT_FAIL;
	}
	/* the header holds the cluster key: its page stays out of a core dump */
	err = secmem_dontdump(&m->priv->h, sizeof(m->priv->h));
	if (err)
		log_warn("DTL mode: the key's page may show in a core dump: %s", strerror(-err));
	memcpy(&m->priv->h, &m->p->h, sizeof(m->priv->h));
	m->priv->h.flags = (m->p->h.flags & VN_PIPE_F_ALL) | VN_PIPE_F_HYP;
	m->priv->h.out = m->out;
	for (int k = 0; k < VN_PIPE_SLOTS; k++)
		m->priv->slot[k].fastest = m->priv->slot[k].second = m->priv->slot[k].slowest = -1;
	m->p->h.dtl = mpidtl_state(m->dtl);
	m->p->h.out = VN_PIPE_OUT_NONE; /* the ranks journal, we report */
	__atomic_or_fetch(&m->p->h.flags, VN_PIPE_F_DEFER, __ATOMIC_RELEASE);
	log_debug("dispatch trace log: %s, reporting after the host's horizon",
		  dtl_state_name(dtl_state(m->dtl)));
	return EXIT_OK;
}

/* After the job: filter and report what the ranks left in the pipeline, oldest first. */
static void flush(struct mpi_ctx *m)
{
	static char buf[65536];
	uint64_t ids[VN_PIPE_SLOTS];
	int k, n = 0;

	for (k = 0; k < VN_PIPE_SLOTS; k++) {
		uint64_t t = __atomic_load_n(&m->p->slot[k].ticket, __ATOMIC_ACQUIRE);

		if (t >> 16)
			ids[n++] = (t >> 16) - 1;
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && ids[j] < ids[j - 1]; j--) {
			uint64_t x = ids[j];

			ids[j] = ids[j - 1];
			ids[j - 1] = x;
		}
	for (k = 0; k < n; k++) {
		struct vn_pipe_slot *s = pipeline_slot(m->p, ids[k]);
		int len;

		if (s->state == VN_PIPE_TRACKED &&
		    (m->p->h.nranks == 0 || (s->ticket & 0xffff) >= m->p->h.nranks))
			pipeline_filter(m->p, ids[k]);
		if (m->priv) { /* DTL mode: what the ranks did not journal, then judge it all */
			if (s->state != VN_PIPE_TRACKED &&
			    m->p->journal[ids[k] % VN_PIPE_JOURNAL].interval != ids[k] + 1)
				(void)pipeline_journal(m->p, ids[k]);
			continue;
		}
		if (!pipeline_take_report(m->p, ids[k]))
			continue;
		if (m->out == VN_PIPE_OUT_REPORT) {
			if (!node_send_report(m->p, ids[k], m->node.fd))
				__atomic_add_fetch(&m->p->h.reported, 1, __ATOMIC_RELAXED);
			if (m->p->h.copy_pid) { /* -o beside --collector */
				len = pipeline_json(m->p, ids[k], buf, sizeof(buf));
				if (len <= 0 || write(m->out_fd, buf, (size_t)len) != len)
					__atomic_add_fetch(&m->p->h.out_errors, 1,
							   __ATOMIC_RELAXED);
			}
			continue;
		}
		len = pipeline_json(m->p, ids[k], buf, sizeof(buf));
		if (len > 0 && m->out != VN_PIPE_OUT_NONE)
			out_line(m, buf, len);
		else
			__atomic_add_fetch(&m->p->h.out_errors, 1, __ATOMIC_RELAXED);
	}
	if (m->priv)
		defer_drain(m);
}

/* The DTL's line of the summary: its state, how the intervals were judged, the responder's cost. */
static void summary_dtl(const struct mpi_ctx *m)
{
	struct dtl_stats st;

	if (!m->priv) {
		log_info("dispatch trace log: %s", pipeline_dtl_name(m->p->h.dtl));
		return;
	}
	dtl_stats(m->dtl, &st);
	log_info(
	    "dispatch trace log: %s (detail %s); intervals judged %llu, waited for the horizon "
	    "%llu, "
	    "judged before it %llu, lost %llu (journal %llu); delayed by a hypervisor cause %llu, "
	    "guest-only noise verdicts %llu; spans %llu, torn %llu, bad %llu; responder %s, %llu "
	    "replies, %.3f ms CPU",
	    dtl_state_name(st.state), st.detail == 2 ? "task" : "class",
	    (unsigned long long)m->ds.intervals, (unsigned long long)m->ds.waited,
	    (unsigned long long)m->ds.forced, (unsigned long long)m->ds.lost,
	    (unsigned long long)m->p->h.journal_lost, (unsigned long long)m->ds.hyp_noise,
	    (unsigned long long)m->ds.guest_noise, (unsigned long long)st.spans,
	    (unsigned long long)st.torn, (unsigned long long)st.bad, st.responder ? "yes" : "no",
	    (unsigned long long)st.replies, st.responder_cpu_ns / 1e6);
}

/* A cause of the per-rank tally, as the reports name it (a hypervisor cause by its DTL key). */
static const char *tally_cause_name(const struct vn_tgt_cause *c, char *buf, size_t len)
{
	char safe[64];

	if (c->cls == VN_PIPE_CAUSE_HYP) {
		termsafe(safe, sizeof(safe), c->comm, sizeof(c->comm));
		snprintf(buf, len, "host:%.40s", safe);
		return buf;
	}
	monitor_cause_name(c, safe, sizeof(safe));
	termsafe(buf, len, safe, sizeof(safe));
	return buf;
}

/* Rank r's worst interval: who waited on it and for what (its largest cause in that interval). */
static void worst_line(int r, const struct vn_pipe_rank *t)
{
	char nm[96];

	if (!t->worst_ns)
		return;
	if (t->worst_cause.cls == VN_CLASS_NONE)
		log_info(
		    "rank %d: worst interval %llu, %.3f ms behind rank %d (who waited on it): more "
		    "work, no noise",
		    r, (unsigned long long)t->worst_interval, t->worst_ns / 1e6, t->worst_fastest);
	else
		log_info(
		    "rank %d: worst interval %llu, %.3f ms behind rank %d (who waited on it): %s "
		    "%.3f ms",
		    r, (unsigned long long)t->worst_interval, t->worst_ns / 1e6, t->worst_fastest,
		    tally_cause_name(&t->worst_cause, nm, sizeof(nm)), t->worst_cause.ns / 1e6);
}

/*
 * The end table: per rank, the intervals it was delayed in (of those filtered), its largest cause in them
 * and that cause's share of their cause time, the delay in all. From the pipe that filtered (the private one
 * with the host's log).
 */
static void rank_table(struct mpi_ctx *m)
{
	const struct vn_pipe *fp = m->priv ? m->priv : m->p;
	uint64_t total = __atomic_load_n(&fp->h.intervals, __ATOMIC_RELAXED);
	char nm[96];

	if (!total)
		return;
	for (int i = 0; i < m->nc; i++) {
		const struct mpi_client *c = &m->c[i];
		const struct vn_pipe_rank *t;
		uint64_t sum, best = 0;
		int b = -1;

		if (c->rank < 0 || c->rank >= VN_PIPE_RANKS)
			continue;
		t = &fp->rank[c->rank];
		sum = t->other_ns;
		for (int k = 0; k < VN_PIPE_RANK_CAUSES; k++) {
			if (!t->key[k])
				continue;
			sum += t->cause[k].ns;
			if (b < 0 || t->cause[k].ns > best) {
				b = k;
				best = t->cause[k].ns;
			}
		}
		if (!t->delayed) {
			log_info("rank %d (pid %d): never delayed in %llu intervals", c->rank,
				 c->pid, (unsigned long long)total);
			continue;
		}
		if (b < 0) {
			log_info(
			    "rank %d (pid %d): delayed in %llu/%llu intervals, by more work than "
			    "the fastest (no noise), %.1f ms in all",
			    c->rank, c->pid, (unsigned long long)t->delayed,
			    (unsigned long long)total, t->delay_ns / 1e6);
			continue;
		}
		log_info(
		    "rank %d (pid %d): delayed in %llu/%llu intervals, mostly %s (%.0f%% of the "
		    "causes' time), %.1f ms in all",
		    c->rank, c->pid, (unsigned long long)t->delayed, (unsigned long long)total,
		    tally_cause_name(&t->cause[b], nm, sizeof(nm)),
		    sum ? 100.0 * (double)best / (double)sum : 0.0, t->delay_ns / 1e6);
		worst_line(c->rank, t);
	}
}

static void summary(struct mpi_ctx *m)
{
	const struct vn_pipe_hdr *h = &m->p->h;
	char nm[64];

	if (!m->registered && !m->refused && !h->intervals) {
		/* nothing to sum up: say why instead of a line of zeros */
		log_warn("job '%s': no rank registered (no MPI_Init, or the command dropped "
			 "LD_PRELOAD)",
			 h->job);
		return;
	}
	log_info(
	    "job '%s': %d rank%s registered, %d refused; intervals filtered %llu, reported %llu, "
	    "quiet %llu, overrun %llu, output errors %llu, calls of unregistered ranks %llu",
	    h->job, m->registered, m->registered == 1 ? "" : "s", m->refused,
	    (unsigned long long)h->intervals, (unsigned long long)h->reported,
	    (unsigned long long)h->quiet, (unsigned long long)h->overrun,
	    (unsigned long long)h->out_errors, (unsigned long long)h->unregistered);
	/* vnoise's own cost in the ranks: for -v */
	log_debug("job '%s': filter %.0f ns/interval, report %.0f ns/report", h->job,
		  h->intervals ? (double)h->filter_ns / (double)h->intervals : 0.0,
		  h->reported ? (double)h->report_ns / (double)h->reported : 0.0);
	if (m->collector)
		log_info("collector: %llu report datagrams sent, %llu HELLOs; %llu SAMPLE commands "
			 "taken "
			 "(%llu leases), %llu rejected (%llu forged, %llu for another node, %llu "
			 "replayed)",
			 (unsigned long long)h->dgrams, (unsigned long long)m->node.st.datagrams,
			 (unsigned long long)m->node.st.cmds, (unsigned long long)m->node.st.leases,
			 (unsigned long long)(m->node.st.cmds_bad + m->node.st.cmds_foreign +
					      m->node.st.cmds_replayed),
			 (unsigned long long)m->node.st.cmds_bad,
			 (unsigned long long)m->node.st.cmds_foreign,
			 (unsigned long long)m->node.st.cmds_replayed);
	summary_dtl(m);
	rank_table(m);
	for (int i = 0; i < m->nc; i++) {
		const struct mpi_client *c = &m->c[i];
		const struct vn_tgt *t = &c->last;
		int best = -1;

		if (c->tgt < 0)
			continue;
		if (!c->left)
			t = passive_tgt(m->pv, c->tgt);
		for (int k = 0; k < VN_TGT_CAUSES; k++)
			if (t->cause[k].cls != VN_CLASS_NONE &&
			    (best < 0 || t->cause[k].ns > t->cause[best].ns))
				best = k;
		log_info("rank %d (pid %d): run %.1f ms, noise %.1f ms%s (thread %.1f, irq %.1f, "
			 "softirq "
			 "%.1f, nmi %.1f, steal %.1f), largest cause %s",
			 c->rank, c->pid, t->run_ns / 1e6, monitor_noise_total(t) / 1e6,
			 monitor_noise_total(t) > t->run_ns
			     ? " (more than the run: summed over the rank's threads)"
			     : "",
			 t->ns[VN_CLASS_THREAD] / 1e6, t->ns[VN_CLASS_IRQ] / 1e6,
			 t->ns[VN_CLASS_SOFTIRQ] / 1e6, t->ns[VN_CLASS_NMI] / 1e6,
			 t->ns[VN_CLASS_STEAL] / 1e6,
			 best >= 0 ? monitor_cause_name(&t->cause[best], nm, sizeof(nm)) : "none");
	}
}

/*
 * --collector: take SAMPLE commands, publish the lease to the reporters, turn the helper's cause tracking
 * on while sampled, and say HELLO every second (registration and liveness). Returns the poll timeout (ms).
 */
static int node_tick(struct mpi_ctx *m)
{
	uint64_t now = now_ns(), until;
	int on;

	if (!m->collector)
		return -1;
	if (node_poll(&m->node, now) > 0) {
		if (__atomic_load_n(&m->p->h.sample_until_ns, __ATOMIC_RELAXED) <= now)
			__atomic_store_n(&m->p->h.sample_from_ns, now, __ATOMIC_RELAXED);
		__atomic_store_n(&m->p->h.sample_until_ns, m->node.lease_end_ns, __ATOMIC_RELAXED);
	}
	on = node_sampled(&m->node, now);
	if (on != m->detail && m->pv) {
		passive_set_detail(m->pv, on);
		log_debug("collector sampling %s", on ? "on" : "off");
	}
	m->detail = on;
	if (now - m->last_hello_ns >= 1000000000ull) {
		m->last_hello_ns = now;
		/* one sequence space with the ranks' reports: the collector sees every gap */
		m->node.seq = __atomic_fetch_add(&m->p->h.seq, 1, __ATOMIC_RELAXED);
		if (node_hello(&m->node, now_rt_ns()))
			log_debug("HELLO to the collector not sent");
	}
	until = on ? m->node.lease_end_ns - now : 1000000000ull;
	return (int)(until / 1000000 + 1 < 1000 ? until / 1000000 + 1 : 1000);
}

/*
 * Start cmd with the preload library and the registration socket in its environment (signals as in old).
 * A command that cannot be executed is found before anything else happens: the child reports execvp's
 * errno through a close-on-exec pipe. Returns the child's pid, or -1 with the exit code in *rc: 127 when
 * the command is not found, 126 when it cannot be executed (as a shell), EXIT_FAIL when fork fails.
 */
static pid_t start_job(struct mpi_ctx *m, char **cmd, const char *preload, const sigset_t *old,
		       int *rc)
{
	int ep[2], e = 0;
	pid_t child;

	if (pipe2(ep, O_CLOEXEC)) {
		log_err("pipe: %s", strerror(errno));
		*rc = EXIT_FAIL;
		return -1;
	}
	child = fork();
	if (child == 0) {
		const char *lp = getenv("LD_PRELOAD");
		char env[PATH_MAX * 2];

		close(ep[0]);
		sigprocmask(SIG_SETMASK, old, NULL);
		snprintf(env, sizeof(env), "%s%s%s", preload, lp && *lp ? " " : "", lp ? lp : "");
		setenv("LD_PRELOAD", env, 1);
		setenv("VNOISE_SOCK", m->sock, 1);
		if (!getenv("VNOISE_PRELOAD_OUT"))
			setenv("VNOISE_PRELOAD_STATS", "0", 1);
		if (m->job_out_to_err && dup2(2, 1) < 0)
			_exit(126);
		execvp(cmd[0], cmd);
		e = errno;
		if (write(ep[1], &e, sizeof(e)) != (ssize_t)sizeof(e))
			log_err("cannot run '%s': %s", cmd[0], strerror(e));
		_exit(127);
	}
	close(ep[1]);
	if (child < 0) {
		log_err("fork: %s", strerror(errno));
		close(ep[0]);
		*rc = EXIT_FAIL;
		return -1;
	}
	/* EOF: the exec succeeded (the pipe closed with it); an errno: it failed */
	while (read(ep[0], &e, sizeof(e)) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (!e)
		return child;
	waitpid(child, NULL, 0);
	if (e == ENOENT)
		log_err("cannot run '%s': command not found", cmd[0]);
	else
		log_err("cannot run '%s': %s", cmd[0], strerror(e));
	*rc = e == ENOENT ? 127 : 126;
	return -1;
}

static int run_job(struct mpi_ctx *m, char **cmd, const char *preload)
{
	struct pollfd pf[3 + MPI_MAX_CLIENTS];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigset_t set, old;
	int lfd, sfd, status = 0, done = 0;
	pid_t child;

	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", m->sock);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 64)) {
		log_err("registration socket %s: %s", m->sock, strerror(errno));
		if (lfd >= 0)
			close(lfd);
		return EXIT_FAIL;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	child = start_job(m, cmd, preload, &old, &status);
	if (child < 0) {
		close(lfd);
		close(sfd);
		sigprocmask(SIG_SETMASK, &old, NULL);
		m->not_started = 1;
		return status;
	}
	while (!done) {
		int np = 0;

		pf[np++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		pf[np++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (int i = 0; i < m->nc; i++)
			pf[np++] = (struct pollfd){ .fd = m->c[i].fd, .events = POLLIN };
		/* the collector's socket last: not counted among the clients below */
		pf[np] = (struct pollfd){ .fd = m->collector ? m->node.fd : -1, .events = POLLIN };
		if (poll(pf, (nfds_t)np + 1, loop_timeout(m)) < 0 && errno != EINTR)
			break;
		node_tick(m);
		defer_tick(m, 0);
		if (pf[0].revents & POLLIN) {
			struct signalfd_siginfo si;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD) {
					if (waitpid(child, &status, WNOHANG) == child)
						done = 1;
				} else {
					kill(child, (int)si.ssi_signo); /* the job decides */
				}
				if (done)
					break;
			}
		}
		if (pf[1].revents & POLLIN)
			accept_rank(m, lfd);
		/* only the clients polled this round: one accepted just now has no entry yet */
		for (int i = 0; i < np - 2; i++) {
			char b[64];
			ssize_t r;

			if (m->c[i].fd < 0 || !(pf[2 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			/* a rank says nothing after registering: EOF means it is gone, bytes are dropped */
			r = recv(m->c[i].fd, b, sizeof(b), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
				rank_left(m, &m->c[i]);
		}
	}
	for (int i = 0; i < m->nc; i++)
		if (!m->c[i].left)
			rank_left(m, &m->c[i]);
	close(lfd);
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_FAIL;
}

enum {
	OPT_DELAY_PCT = CLIOPT_OWN,
	OPT_MIN_NOISE,
	OPT_MIN_DELAY,
	OPT_CLASSES,
	OPT_ALL,
	OPT_UDP,
	OPT_STATS,
	OPT_NO_HELPER,
	OPT_PRELOAD,
	OPT_NO_DTL,
	OPT_DTL_WAIT,
};

static const struct cliopt opts[] = {
	{ .id = CLIOPT_JOB, .help = "job name in the reports (default: mpi)" },
	{ .id = OPT_DELAY_PCT,
	  .name = "delay-pct",
	  .has_arg = 1,
	  .arg = "X",
	  .help = "a rank is delayed when its compute time exceeds the\n"
		  "                         fastest rank's by more than X% (default 10)" },
	{ .id = OPT_MIN_NOISE,
	  .name = "min-noise",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "a class's noise in an interval below TIME is ignored\n"
		  "                         (default 0)" },
	{ .id = OPT_MIN_DELAY,
	  .name = "min-delay",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "a delay must also exceed TIME (default 10us, 4s max)" },
	{ .id = OPT_CLASSES,
	  .name = "classes",
	  .has_arg = 1,
	  .arg = "LIST",
	  .help = "classes that count as noise:\n"
		  "                         nmi,irq,softirq,thread,hypercall,steal (default all)" },
	{ .id = OPT_ALL,
	  .name = "all",
	  .help = "report every interval, not only those with a delayed\n"
		  "                         rank" },
	{ .id = CLIOPT_OUTPUT,
	  .help = "append the reports to FILE (default: stdout; with\n                         "
		  "--collector: a copy of what it is sent)" },
	{ .id = OPT_UDP,
	  .name = "udp",
	  .has_arg = 1,
	  .arg = "ADDR:PORT",
	  .help = "send each report as one UDP datagram (numeric address,\n"
		  "                         [v6]:port)" },
	{ .id = CLIOPT_COLLECTOR,
	  .help = "report every interval to a vnoise-host collector as\n"
		  "                         authenticated datagrams; its sampling turns cause\n"
		  "                         tracing on and off (needs --key-file)" },
	{ .id = CLIOPT_KEY_FILE,
	  .help = "the key shared with the collector (lines 'ID HEX',\n"
		  "                         mode 600)" },
	{ .id = CLIOPT_NODE_ID, .help = "this node's id in the reports (default: host name)" },
	{ .id = OPT_STATS,
	  .name = "stats",
	  .has_arg = 1,
	  .arg = "FILE",
	  .help =
	      "per-thread statistics of the MPI and pthread calls, one\n"
	      "                         JSON line per thread (vnoise.app/1; %p in FILE: the\n"
	      "                         pid); default: none unless $VNOISE_PRELOAD_OUT is set" },
	{ .id = OPT_NO_HELPER,
	  .name = "no-helper",
	  .help = "no kernel helper: no noise figures (imbalance only; no\n"
		  "                         root needed)" },
	{ .id = OPT_NO_DTL,
	  .name = "no-dtl",
	  .help = "ignore the host's dispatch trace log: the guest-only\n"
		  "                         view (hypervisor time stays steal/unexplained)" },
	{ .id = OPT_DTL_WAIT,
	  .name = "dtl-wait",
	  .has_arg = 1,
	  .arg = "TIME",
	  .help = "longest wait for the host's horizon before an\n"
		  "                         interval is judged without it (default 2s)" },
	{ .id = OPT_PRELOAD,
	  .name = "preload",
	  .has_arg = 1,
	  .arg = "PATH",
	  .help = "the preload library (default: libvnoise-preload.so\n"
		  "                         beside this program)" },
	{ .id = CLIOPT_VERBOSE, .help = "more detail (vnoise's own cost in the ranks)" },
	{ .id = CLIOPT_HELP },
	/* one release: the letters and the name this command had */
	{ .letter = 'j', .alias_of = CLIOPT_JOB },
	{ .letter = 'D', .alias_of = OPT_DELAY_PCT },
	{ .letter = 'm', .alias_of = OPT_MIN_NOISE },
	{ .letter = 'M', .alias_of = OPT_MIN_DELAY },
	{ .letter = 'C', .alias_of = OPT_CLASSES },
	{ .letter = 'a', .alias_of = OPT_ALL },
	{ .name = "out", .alias_of = CLIOPT_OUTPUT },
	{ .letter = 'u', .alias_of = OPT_UDP },
	{ .letter = 'c', .alias_of = CLIOPT_COLLECTOR },
	{ .letter = 's', .alias_of = OPT_STATS },
	{ 0 },
};

const char *mpi_usage(void)
{
	static char usage[8192];
	int n;

	if (!usage[0]) {
		n = snprintf(
		    usage, sizeof(usage), "%s",
		    "usage: vnoise-guest mpi [options] -- COMMAND [ARGS...]\n"
		    "       (e.g. vnoise-guest mpi -- mpirun -np 4 ./app)\n"
		    "Runs COMMAND with libvnoise-preload.so: the ranks time their MPI calls, and "
		    "the\n"
		    "time between two collectives (a computation interval) is compared across "
		    "ranks\n"
		    "with the noise that hit each rank (passive kernel helper, needs root). "
		    "Delayed\n"
		    "ranks are reported as noise (with the cause), imbalance or unexplained, one\n"
		    "JSON line (schema vnoise.interval/1) per interval that has "
		    "one.\n" CLIOPT_TIME_LINE);
		n += (int)cliopt_help(opts, usage + n, sizeof(usage) - (size_t)n);
		snprintf(
		    usage + n, sizeof(usage) - (size_t)n, "%s",
		    "exit: the job's status (128+N: killed by signal N); else 1 failed, 2 usage,\n"
		    "      4 cannot here, 9 output path is a symlink, 126 COMMAND cannot be\n"
		    "      executed, 127 COMMAND not found\n");
	}
	return usage;
}

static int parse_number_opt(struct cliopt_parser *ps, int c, struct mpi_params *p)
{
	switch (c) {
	case OPT_DELAY_PCT:
		if (parse_double(ps->arg, &p->delay_pct) || p->delay_pct > 10000)
			return cliopt_fail(ps, "--delay-pct: '%s' is not a percentage (0-10000)",
					   ps->arg);
		return 0;
	case OPT_MIN_NOISE:
		return cliopt_time(ps, &p->min_noise_ns);
	case OPT_DTL_WAIT:
		return cliopt_time(ps, &p->dtl_wait_ns);
	case OPT_MIN_DELAY:
		if (cliopt_time(ps, &p->min_delay_ns))
			return -EINVAL;
		if (p->min_delay_ns > UINT32_MAX)
			return cliopt_fail(ps, "--min-delay: '%s' is too long (at most 4s)",
					   ps->arg);
		return 0;
	case OPT_CLASSES:
		if (parse_classes(ps->arg, &p->classes))
			return cliopt_fail(
			    ps, "--classes: bad list '%s' (nmi,irq,softirq,thread,hypercall,steal)",
			    ps->arg);
		return 0;
	default: /* CLIOPT_NODE_ID */
		if (parse_u64(ps->arg, &p->node_id))
			return cliopt_fail(ps, "--node-id: '%s' is not a number", ps->arg);
		p->have_node_id = 1;
		return 0;
	}
}

static int parse_opt(struct cliopt_parser *ps, int c, struct mpi_params *p)
{
	switch (c) {
	case CLIOPT_JOB:
		p->job = ps->arg;
		return 0;
	case CLIOPT_OUTPUT:
		p->output = ps->arg;
		return 0;
	case OPT_UDP:
		p->udp = ps->arg;
		return 0;
	case CLIOPT_COLLECTOR:
		p->collector = ps->arg;
		return 0;
	case CLIOPT_KEY_FILE:
		p->key_file = ps->arg;
		return 0;
	case OPT_STATS:
		p->stats = ps->arg;
		return 0;
	case OPT_PRELOAD:
		p->preload = ps->arg;
		return 0;
	case OPT_ALL:
		p->flags |= VN_PIPE_F_ALL;
		return 0;
	case OPT_NO_HELPER:
		p->helper = 0;
		return 0;
	case OPT_NO_DTL:
		p->dtl = 0;
		return 0;
	case CLIOPT_VERBOSE:
		p->verbose++;
		return 0;
	case CLIOPT_HELP:
		return 1;
	default:
		return parse_number_opt(ps, c, p);
	}
}

/* The outputs exclude each other; a collector needs its key. */
static int check_params(struct cliopt_parser *ps, const struct mpi_params *p)
{
	if (!p->cmd[0])
		return cliopt_fail(ps, "no command: vnoise-guest mpi [options] -- mpirun ...");
	if (p->output && p->udp)
		return cliopt_fail(ps, "--output and --udp exclude each other");
	if (p->collector && p->udp)
		return cliopt_fail(ps, "--collector excludes --udp");
	if (!p->collector != !p->key_file)
		return cliopt_fail(ps, p->collector ? "--collector needs --key-file"
						    : "--key-file goes with --collector");
	return 0;
}

int mpi_parse(int argc, char **argv, struct mpi_params *p, char *err, size_t errlen)
{
	struct cliopt_parser ps;
	int c, rc;

	memset(p, 0, sizeof(*p));
	p->job = "mpi";
	p->delay_pct = 10.0;
	p->min_delay_ns = 10000;
	p->helper = 1;
	p->dtl = 1;
	p->dtl_wait_ns = 2000000000ull;
	rc = cliopt_init(&ps, opts, argc, argv, err, errlen);
	while (!rc && (c = cliopt_next(&ps)) != 0)
		rc = c < 0 ? c : parse_opt(&ps, c, p);
	if (rc)
		return rc;
	p->cmd = argv + optind;
	if (!p->classes)
		for (c = VN_CLASS_NMI; c <= VN_CLASS_STEAL; c++)
			p->classes |= 1u << c;
	return check_params(&ps, p);
}

/* Everything mpi_ctx holds, released; accepts what open_* left half done. */
static void ctx_free(struct mpi_ctx *m)
{
	if (!m)
		return;
	if (m->p) {
		explicit_bzero(m->p->h.key, sizeof(m->p->h.key));
		munmap(m->p, sizeof(struct vn_pipe));
	}
	if (m->pipe_fd >= 0)
		close(m->pipe_fd);
	passive_close(m->pv);
	if (m->out_fd > 2)
		close(m->out_fd);
	if (m->udp_fd >= 0)
		close(m->udp_fd);
	node_close(&m->node);
	keyfile_clear(&m->keys);
	dtl_close(m->dtl);
	if (m->priv)
		explicit_bzero(m->priv->h.key, sizeof(m->priv->h.key));
	free(m->priv);
	free(m);
}

/* --collector: the key and the node end of the cluster reports. An exit code. */
static int open_collector(struct mpi_ctx *m, const struct mpi_params *p)
{
	struct node_cfg nc = { 0 };
	char host[256] = "", kerr[256];

	if (parse_sockaddr(p->collector, 1, &nc.collector, &nc.collector_len)) {
		log_err("invalid --collector '%s': " PARSE_SOCKADDR_WANT, p->collector);
		return EXIT_USAGE;
	}
	if (keyfile_load(p->key_file, &m->keys, kerr, sizeof(kerr))) {
		log_err("%s", kerr);
		return EXIT_USAGE;
	}
	nc.node_id = p->node_id;
	if (!p->have_node_id) {
		gethostname(host, sizeof(host) - 1);
		nc.node_id = datagram_job_id(host); /* a stable hash of the host name */
	}
	nc.job_id = datagram_job_id(p->job);
	nc.keys = &m->keys;
	if (node_open(&m->node, &nc, kerr, sizeof(kerr))) {
		log_err("--collector %s: %s", p->collector, kerr);
		return EXIT_FAIL;
	}
	m->collector = 1;
	return EXIT_OK;
}

/* Where the reports go (collector, UDP, file or stdout). An exit code. */
static int open_outputs(struct mpi_ctx *m, const struct mpi_params *p)
{
	int rc;

	if (p->collector) {
		rc = open_collector(m, p);
		if (rc)
			return rc;
	}
	if (p->udp) {
		if (parse_sockaddr(p->udp, 1, &m->udp_addr, &m->udp_len)) {
			log_err("invalid --udp '%s': " PARSE_SOCKADDR_WANT, p->udp);
			return EXIT_USAGE;
		}
		m->udp_fd = socket(m->udp_addr.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	}
	if (p->output) {
		m->out_fd = outfile_open(p->output, O_APPEND, OUTFILE_MODE);
		if (m->out_fd < 0) {
			int err = m->out_fd;

			log_err("--output: cannot open '%s': %s", p->output, outfile_strerror(err));
			m->out_fd = -1;
			return err == -ELOOP ? EXIT_SYMLINK : EXIT_USAGE;
		}
	}
	m->out = p->collector ? VN_PIPE_OUT_REPORT
		 : p->udp     ? VN_PIPE_OUT_UDP
		 : p->output  ? VN_PIPE_OUT_FILE
			      : VN_PIPE_OUT_STDOUT;
	/* stdout is the reports' (| jq): the job prints on our stderr, never among them */
	m->job_out_to_err = m->out == VN_PIPE_OUT_STDOUT;
	if (m->job_out_to_err)
		log_info("the reports go to stdout, the job's own output to stderr (-o FILE keeps "
			 "the job's stdout)");
	return EXIT_OK;
}

/* The passive helper (unless --no-helper) and the shared interval pipeline. An exit code. */
static int open_pipeline(struct mpi_ctx *m, const struct mpi_params *p)
{
	const char *why;
	void *map;
	int err;

	if (p->helper) {
		struct passive_opts po = { 0 };

		err = passive_open(&m->pv, &po, &why);
		if (err) {
			log_err("passive kernel helper: %s (or run with --no-helper)", why);
			return err == -EPERM ? EXIT_CANNOT : EXIT_FAIL;
		}
		m->detail = 1;
	}
	m->pipe_fd = memfd_create("vnoise-pipe", MFD_CLOEXEC);
	map = MAP_FAILED;
	if (m->pipe_fd >= 0 && !ftruncate(m->pipe_fd, sizeof(struct vn_pipe)))
		map = mmap(NULL, sizeof(struct vn_pipe), PROT_READ | PROT_WRITE, MAP_SHARED,
			   m->pipe_fd, 0);
	if (map == MAP_FAILED) {
		log_err("interval pipeline: %s", strerror(errno));
		return EXIT_FAIL;
	}
	m->p = map;
	/* the header holds the cluster key (--collector): its page is in no core dump, ours or a rank's */
	err = secmem_dontdump(&m->p->h, sizeof(m->p->h));
	if (err)
		log_warn("interval pipeline: the key's page may show in a core dump: %s",
			 strerror(-err));
	/* the collector gets every interval */
	pipeline_init(m->p, p->job, p->delay_pct, p->min_noise_ns, p->classes,
		      p->flags | (p->collector ? VN_PIPE_F_ALL : 0));
	m->p->h.min_delay_ns = (uint32_t)p->min_delay_ns;
	m->p->h.out = m->out;
	if (m->out ==
	    VN_PIPE_OUT_STDOUT) /* the ranks' way to our stdout (they run on this machine) */
		snprintf(m->p->h.out_path, sizeof(m->p->h.out_path), "/proc/%d/fd/1",
			 (int)getpid());
	else
		snprintf(m->p->h.out_path, sizeof(m->p->h.out_path), "%s",
			 p->collector ? p->collector
			 : p->udp     ? p->udp
			 : p->output  ? p->output
				      : "");
	if (p->collector && p->output) { /* -o too: the ranks reach our file */
		m->p->h.copy_pid = (uint32_t)getpid();
		m->p->h.copy_fd = (uint32_t)m->out_fd;
	}
	if (m->collector) {
		const struct datagram_key *k = &m->keys.keys[0];

		m->p->h.node_id = m->node.cfg.node_id;
		m->p->h.session_id = m->node.cfg.session_id;
		m->p->h.job_id = m->node.cfg.job_id;
		m->p->h.key_id = k->id;
		m->p->h.key_len = (uint16_t)k->len;
		memcpy(m->p->h.key, k->key, k->len);
		node_tick(m); /* first HELLO; cause tracking off until the collector samples us */
	}
	return EXIT_OK;
}

/* Run the job in a private directory (its registration socket), then report what is left. */
static int run(struct mpi_ctx *m, const struct mpi_params *p, const char *preload)
{
	int rc;

	snprintf(m->dir, sizeof(m->dir), "/tmp/vnoise-mpi.XXXXXX");
	if (!mkdtemp(m->dir)) {
		log_err("cannot create a private directory: %s", strerror(errno));
		return EXIT_FAIL;
	}
	snprintf(m->sock, sizeof(m->sock), "%s/reg.sock", m->dir);
	rc = run_job(m, p->cmd, preload);
	if (!m->not_started) {
		flush(m);
		summary(m);
	}
	unlink(m->sock);
	rmdir(m->dir);
	return rc;
}

/* Whether path is a file this process may execute: 0 or -errno (-EACCES for a directory). */
static int executable(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode) || access(path, X_OK))
		return -EACCES;
	return 0;
}

/*
 * The job's command as execvp will look for it (a name with a slash as it is, else along $PATH), before
 * anything is set up: one line and 127 when it is not found, 126 when it cannot be executed (a shell's
 * codes), else EXIT_OK. start_job catches what this cannot see (a file that is not a program).
 */
static int check_command(const char *cmd)
{
	const char *path = getenv("PATH"), *d, *e;
	char full[PATH_MAX];
	int r = -ENOENT, x, len;

	if (strchr(cmd, '/')) {
		r = executable(cmd);
	} else {
		for (d = path && *path ? path : "/bin:/usr/bin"; r && d; d = e ? e + 1 : NULL) {
			e = strchr(d, ':');
			len = (int)(e ? e - d : (long)strlen(d));
			/* an empty element is the current directory */
			snprintf(full, sizeof(full), "%.*s/%s", len ? len : 1, len ? d : ".", cmd);
			x = executable(full);
			if (!x || x == -EACCES)
				r = x;
		}
	}
	if (!r)
		return EXIT_OK;
	if (r == -ENOENT) {
		log_err("cannot run '%s': command not found", cmd);
		return 127;
	}
	log_err("cannot run '%s': %s", cmd, strerror(-r));
	return 126;
}

/*
 * Our stdout, when it is a file, appended to: the ranks append their reports to it through their own opening
 * of it (/proc/PID/fd/1, O_APPEND), and our own lines (DTL mode) must not overwrite theirs from an offset
 * of our own.
 */
static void stdout_append(void)
{
	struct stat st;
	int fl = fcntl(1, F_GETFL);

	if (fl >= 0 && !(fl & O_APPEND) && !fstat(1, &st) && S_ISREG(st.st_mode) &&
	    fcntl(1, F_SETFL, fl | O_APPEND))
		log_warn("cannot append to stdout: %s (the ranks' reports may be overwritten)",
			 strerror(errno));
}

/* The preload library: --preload, $VNOISE_PRELOAD or beside this program. An exit code. */
static int locate_preload(const struct mpi_params *p, char *preload, size_t len)
{
	if (p->preload) {
		snprintf(preload, len, "%s", p->preload);
		if (access(preload, R_OK)) {
			log_err("--preload: cannot read '%s'", preload);
			return EXIT_USAGE;
		}
	} else if (find_preload(preload, len)) {
		log_err("libvnoise-preload.so not found beside vnoise-guest or in ../lib/vnoise "
			"(give --preload PATH)");
		return EXIT_CANNOT;
	}
	return EXIT_OK;
}

int mpi_main(int argc, char **argv)
{
	struct mpi_params p;
	struct mpi_ctx *m;
	char err[256], preload[PATH_MAX];
	int rc = mpi_parse(argc, argv, &p, err, sizeof(err));

	if (rc == 1) {
		fputs(mpi_usage(), stdout);
		return EXIT_OK;
	}
	if (rc) {
		log_err("%s (see 'vnoise-guest mpi --help')", err);
		return EXIT_USAGE;
	}
	if (p.verbose)
		log_set_verbosity(p.verbose);
	rc = check_command(p.cmd[0]);
	if (rc)
		return rc;
	if (p.stats) /* inherited by the job only: we load no preload */
		setenv("VNOISE_PRELOAD_OUT", p.stats, 1);
	rc = locate_preload(&p, preload, sizeof(preload));
	if (rc)
		return rc;
	m = calloc(1, sizeof(*m));
	if (!m)
		return EXIT_FAIL;
	m->out_fd = 1;
	stdout_append();
	m->udp_fd = -1;
	m->pipe_fd = -1;
	m->node.fd = -1;
	rc = open_outputs(m, &p);
	if (!rc)
		rc = open_pipeline(m, &p);
	if (!rc)
		rc = open_dtl(m, &p);
	if (!rc)
		rc = run(m, &p, preload);
	ctx_free(m);
	return rc;
}
