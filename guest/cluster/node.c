/* SPDX-License-Identifier: MIT */
/* node: a node's report sender and SAMPLE command receiver (see node.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "util/monotime.h"
#include "cluster/node.h"

int node_open(struct node *n, const struct node_cfg *cfg, char *err, size_t errlen)
{
	int rc;

	memset(n, 0, sizeof(*n));
	n->cfg = *cfg;
	if (!n->cfg.session_id)
		n->cfg.session_id = now_rt_ns();
	if (!cfg->keys || !cfg->keys->n) {
		snprintf(err, errlen, "no key to seal reports with");
		n->fd = -1;
		return -EINVAL;
	}
	n->fd = socket(cfg->collector.ss_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return rc;
	}
	if (connect(n->fd, (const struct sockaddr *)&cfg->collector, cfg->collector_len)) {
		rc = -errno;
		snprintf(err, errlen, "connect to the collector: %s", strerror(errno));
		close(n->fd);
		n->fd = -1;
		return rc;
	}
	return 0;
}

static ssize_t xmit(struct node *n, const void *buf, size_t len)
{
	ssize_t w;

	if (n->xmit)
		return n->xmit(n->xmit_ctx, buf, len);
	w = send(n->fd, buf, len, MSG_NOSIGNAL);
	return w < 0 ? -errno : w;
}

static void meta_of(const struct node *n, struct datagram_meta *m, uint16_t kind, uint64_t now_rt)
{
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->key_id = n->cfg.keys->keys[0].id;
	m->node_id = n->cfg.node_id;
	m->session_id = n->cfg.session_id;
	m->job_id = n->cfg.job_id;
	m->seq = n->seq;
	m->send_realtime_ns = now_rt;
}

/* Seal and send b (its seq is n->seq); account for what was delivered. */
static int put(struct node *n, struct datagram_buf *b)
{
	const struct datagram_key *k = &n->cfg.keys->keys[0];
	int len = datagram_seal(b, k->key, k->len);
	ssize_t w;

	if (len < 0)
		return len;
	n->seq++;
	w = xmit(n, b->data, (size_t)len);
	if (w != len) {
		n->st.send_errors++;
		return w < 0 ? (int)w : -EMSGSIZE;
	}
	n->st.datagrams++;
	for (unsigned i = 0; i < b->hdr.nrec; i++) {
		const struct vn_report_rec *r =
		    (const struct vn_report_rec *)(b->data + sizeof(b->hdr)) + i;

		n->st.records++;
		if (r->cls == VN_CLASS_NONE) {
			n->st.noise_ns += r->noise_ns;
			n->st.compute_ns += r->compute_ns;
		} else if (r->src_kind == VN_REPORT_SRC_NONE) {
			n->st.class_ns[r->cls] += r->noise_ns;
		}
	}
	return 0;
}

int node_hello(struct node *n, uint64_t now_rt_ns)
{
	struct datagram_buf b;
	struct datagram_meta m;
	int rc;

	meta_of(n, &m, VN_REPORT_HELLO, now_rt_ns);
	m.flags = VN_REPORT_F_LAST;
	rc = datagram_init(&b, &m);
	return rc ? rc : put(n, &b);
}

int node_send(struct node *n, uint16_t kind, uint64_t interval_id, uint64_t start_rt_ns,
	      uint64_t end_rt_ns, const struct vn_report_rec *rec, size_t nrec, uint64_t now_rt_ns)
{
	struct datagram_buf b;
	struct datagram_meta m;
	int rc, last = 0, any = 0;
	size_t i = 0;

	if (kind != VN_REPORT_INTERVAL && kind != VN_REPORT_COUNTERS)
		return -EINVAL;
	meta_of(n, &m, kind, now_rt_ns);
	m.interval_id = interval_id;
	m.start_realtime_ns = start_rt_ns;
	m.end_realtime_ns = end_rt_ns;
	rc = datagram_init(&b, &m);
	if (rc)
		return rc;
	for (;;) {
		while (i < nrec) {
			rc = datagram_add(&b, &rec[i]);
			if (rc == -ENOSPC)
				break;
			if (rc)
				return rc;
			i++;
		}
		if (i == nrec)
			b.hdr.flags |= VN_REPORT_F_LAST;
		rc = put(n, &b);
		if (rc)
			last = rc;
		else
			any = 1;
		if (i == nrec)
			break;
		rc = datagram_next(&b);
		if (rc)
			return rc;
	}
	if (any) /* the collector counts an interval of which at least one datagram arrived */
		*(kind == VN_REPORT_INTERVAL ? &n->st.intervals_sampled
					     : &n->st.intervals_counters) += 1;
	return last;
}

int node_cmd(struct node *n, const void *buf, size_t len, uint64_t now_mono_ns)
{
	struct datagram_view v;
	uint64_t lease;
	int rc;

	rc = datagram_parse(buf, len, datagram_keytab_lookup, (void *)&n->cfg.keys->tab, &v);
	if (rc) {
		n->st.cmds_bad++;
		return rc;
	}
	if (v.hdr.kind != VN_REPORT_SAMPLE || v.hdr.node_id != n->cfg.node_id ||
	    v.hdr.session_id != n->cfg.session_id || v.hdr.job_id != n->cfg.job_id) {
		n->st.cmds_foreign++;
		return -ESRCH;
	}
	if (v.hdr.seq <= n->last_cmd_seq) {
		n->st.cmds_replayed++;
		return -EALREADY;
	}
	n->last_cmd_seq = v.hdr.seq;
	lease = v.hdr.end_realtime_ns - v.hdr.start_realtime_ns;
	if (lease > NODE_LEASE_MAX_NS)
		lease = NODE_LEASE_MAX_NS;
	if (lease && !node_sampled(n, now_mono_ns))
		n->st.leases++;
	n->lease_end_ns = now_mono_ns + lease;
	n->slot = v.hdr.interval_id;
	n->st.cmds++;
	return 0;
}

int node_poll(struct node *n, uint64_t now_mono_ns)
{
	uint8_t buf[VN_REPORT_MAX_LEN + 1];
	int ok = 0;

	for (;;) {
		ssize_t r = recv(n->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return ok; /* EAGAIN, or an ICMP error (ECONNREFUSED) the next send reports too */
		}
		if (!node_cmd(n, buf, (size_t)r, now_mono_ns))
			ok++;
	}
}

void node_close(struct node *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
}
