/* SPDX-License-Identifier: MIT */
/* node_send: an interval of the pipeline as report datagrams (see node_send.h). */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "mpi/pipeline.h"
#include "cluster/node_send.h"
#include "format/keyfile.h"
#include "util/monotime.h"
#include "cluster/node.h"

int node_send_report(struct vn_pipe *p, uint64_t n, int fd)
{
	static struct vn_report_rec rec[VN_PIPE_RANKS * (VN_REPORT_CLS_MAX + 1)];
	/* one key: the pipeline's own bytes, not copied (their page is left out of core dumps) */
	struct keyfile kf;
	struct node nd;
	uint64_t start, end, from, until, mono, rt, parts;
	uint16_t klen = p->h.key_len;
	int nrec, detail, rc;

	if (klen < 16 || klen > sizeof(p->h.key))
		return -EINVAL;
	from = __atomic_load_n(&p->h.sample_from_ns, __ATOMIC_RELAXED);
	until = __atomic_load_n(&p->h.sample_until_ns, __ATOMIC_RELAXED);
	/* the records first: whether it was sampled depends on its end */
	nrec = pipeline_records(p, n, 1, rec, sizeof(rec) / sizeof(rec[0]), &start, &end);
	if (nrec < 0)
		return nrec;
	detail = end >= from && end < until;
	if (!detail) { /* counters only: drop the causes */
		int k = 0;

		for (int i = 0; i < nrec; i++)
			if (rec[i].src_kind == VN_REPORT_SRC_NONE)
				rec[k++] = rec[i];
		nrec = k;
	}
	memset(&kf, 0, sizeof(kf));
	kf.keys[0] = (struct datagram_key){ p->h.key_id, p->h.key, klen };
	kf.n = 1;
	kf.tab = (struct datagram_keytab){ kf.keys, 1 };
	memset(&nd, 0, sizeof(nd));
	nd.fd = fd;
	nd.cfg.node_id = p->h.node_id;
	nd.cfg.session_id = p->h.session_id;
	nd.cfg.job_id = p->h.job_id;
	nd.cfg.keys = &kf;
	parts = nrec ? ((uint64_t)nrec + VN_REPORT_MAX_RECS - 1) / VN_REPORT_MAX_RECS : 1;
	nd.seq = __atomic_fetch_add(&p->h.seq, parts, __ATOMIC_RELAXED);
	mono = now_ns();
	rt = now_rt_ns();
	rc = node_send(&nd, detail ? VN_REPORT_INTERVAL : VN_REPORT_COUNTERS, n,
		       rt - (mono - start), rt - (mono - end), rec, (size_t)nrec, rt);
	__atomic_fetch_add(&p->h.dgrams, nd.st.datagrams, __ATOMIC_RELAXED);
	if (rc || nd.st.send_errors)
		__atomic_fetch_add(&p->h.out_errors, 1, __ATOMIC_RELAXED);
	return rc;
}
