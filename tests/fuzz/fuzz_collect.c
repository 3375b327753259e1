/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the collector's engine (host/collect/clusteragg, with its rotation clusterrot and its
 * outputs clusterout) fed by nodes it does not trust. The input is a program of operations, each starting
 * with an opcode byte:
 *   0 LEN DATA      a datagram as received (LEN one byte, up to 255 bytes): must be counted, never crash;
 *   1 H[40] N R[48N] an *authentic* datagram: header fields from H (kind, flags, small node and job ids,
 *                   session, interval, seq, part, times), N records from R (N <= 30, so over-long ones too),
 *                   lengths made consistent and sealed with the key: a malicious node with the key;
 *   2 T[2]          clusterrot_tick() T ms later (the rotation sends commands: a stub takes them);
 *   3               render /metrics and both reports, clusterout (the output must stay within its buffer);
 *   4               clusteragg_close_all().
 * Invariants (abort otherwise): every datagram is counted under exactly one result; the exposition renders.
 * Build and run: make build-fuzz/fuzz_collect && build-fuzz/fuzz_collect -max_total_time=60
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "collect/clusteragg.h"
#include "collect/clusterout.h"
#include "collect/clusterrot.h"
#include "format/keyfile.h"
#include "util/sha256.h"
#include "format/datagram.h"

static struct keyfile kf;

static int stub_send(void *ctx, const struct sockaddr *to, socklen_t tolen, const void *buf,
		     size_t len)
{
	(void)ctx;
	(void)to;
	(void)tolen;
	(void)buf;
	return len > VN_REPORT_MAX_LEN ? -EMSGSIZE : 0;
}

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void authentic(struct clusteragg *cs, const uint8_t *h, const uint8_t *recs, unsigned n,
		      struct sockaddr_in *src, uint64_t now)
{
	static uint8_t buf[sizeof(struct vn_report_hdr) + 30 * sizeof(struct vn_report_rec) + 32];
	struct vn_report_hdr *hd = (struct vn_report_hdr *)buf;
	size_t body = sizeof(*hd) + (size_t)n * sizeof(struct vn_report_rec);
	const struct datagram_key *k = &kf.keys[0];
	uint8_t mac[32];

	memset(hd, 0, sizeof(*hd));
	hd->magic = VN_REPORT_MAGIC;
	hd->version = VN_REPORT_VERSION;
	hd->kind = (uint16_t)(h[0] % 6);
	hd->hdr_len = sizeof(*hd);
	hd->rec_len = sizeof(struct vn_report_rec);
	hd->nrec = (uint16_t)n;
	hd->total_len = (uint16_t)(body + 32);
	hd->key_id = k->id;
	hd->part = (uint16_t)rd(h + 1, 2);
	hd->flags = h[3] & 3;
	hd->node_id = h[4] % 8;
	hd->session_id = rd(h + 5, 2);
	hd->job_id = h[7] % 3;
	hd->interval_id = rd(h + 8, 4);
	hd->seq = rd(h + 12, 4);
	hd->send_realtime_ns = rd(h + 16, 8);
	hd->start_realtime_ns = rd(h + 24, 8);
	hd->end_realtime_ns = hd->start_realtime_ns + rd(h + 32, 8) % 1000000000000ull;
	memcpy(buf + sizeof(*hd), recs, (size_t)n * sizeof(struct vn_report_rec));
	sha256_hmac(k->key, k->len, buf, body, mac);
	memcpy(buf + body, mac, 32);
	clusteragg_ingest(cs, buf, body + 32, (struct sockaddr *)src, sizeof(*src), now);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static char out[1 << 20];
	struct clusteragg_cfg cfg = { .keys = &kf,
				      .slot_ns = 5000000,
				      .sample_nodes = 2,
				      .wait_nodes = 2,
				      .max_slots = 50,
				      .exclude_ratio = 0.1,
				      .exclude_min = 1,
				      .max_nodes = 6,
				      .send = stub_send };
	struct sockaddr_in src = { .sin_family = AF_INET, .sin_port = 4000 };
	struct clusteragg_stats st;
	struct clusteragg *cs;
	uint64_t now = 1000000000ull, fed = 0, sum = 0;
	size_t i = 0;

	if (!kf.n) {
		char err[64];

		if (keyfile_parse(
			"9 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", &kf,
			err, sizeof(err)))
			abort();
	}
	cs = clusteragg_new(&cfg);
	if (!cs)
		return 0;
	while (i < n) {
		uint8_t op = d[i++] % 5;

		if (op == 0 && i < n) {
			size_t len = d[i++];

			if (len > n - i)
				len = n - i;
			clusteragg_ingest(cs, d + i, len, (struct sockaddr *)&src, sizeof(src),
					  now);
			fed++;
			i += len;
		} else if (op == 1 && n - i >= 41) {
			unsigned nr = d[i + 40] % 31;
			size_t need = 41 + (size_t)nr * sizeof(struct vn_report_rec);

			if (need > n - i)
				nr = (unsigned)((n - i - 41) / sizeof(struct vn_report_rec));
			src.sin_port = (uint16_t)(4000 + d[i + 4] % 8);
			authentic(cs, d + i, d + i + 41, nr, &src, now);
			fed++;
			i += 41 + (size_t)nr * sizeof(struct vn_report_rec);
		} else if (op == 2 && n - i >= 2) {
			now += rd(d + i, 2) * 1000000ull;
			clusterrot_tick(cs, now);
			i += 2;
		} else if (op == 3) {
			struct bufout o = { out, sizeof(out), 0, 0 };
			FILE *f = fmemopen(out, sizeof(out), "w");

			if (clusterout_prom(cs, &o))
				abort();
			if (f) {
				clusterout_report(cs, f, 0, 0);
				clusterout_report(cs, f, 0, 1);
				clusterout_report(cs, f, 1, 0);
				fclose(f);
			}
		} else if (op == 4) {
			clusteragg_close_all(cs);
		} else {
			break;
		}
	}
	clusteragg_stats(cs, &st);
	for (int r = 0; r < CS_RES_MAX; r++)
		sum += st.dgrams[r];
	if (st.received != fed || sum != fed)
		abort();
	clusteragg_free(cs);
	return 0;
}
