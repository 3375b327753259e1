/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what vnoise reads from peers it does not trust, outside the guest channel.
 * The first input byte picks the mode:
 *   0  a UDP report datagram as received (shared/datagram): datagram_parse() under a known key must never
 *      crash or overread;
 *   1  the same bytes sealed with the key first (the MAC is right, so the field checks are reached): an
 *      accepted datagram must have only records datagram_rec_ok() accepts and hdr.nrec within bounds;
 *   2  an interval pipeline (struct vn_pipe) whose bytes the ranks of a job could have written: the filter,
 *      the report decision and the JSON line of every slot must never crash, and a line that is produced
 *      must fit and end in a newline (vnoise-guest mpi, root, flushes what ranks left), and the records
 *      made for the collector (pipeline_records()) must all pass the collector's record checks.
 * Build and run: make build-fuzz/fuzz_datagram && build-fuzz/fuzz_datagram -max_total_time=60
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/pipeline.h"
#include "util/sha256.h"
#include "format/datagram.h"

static const uint8_t key[32] = "vnoise fuzz key, 32 bytes long!";

static const void *one_key(void *ctx, uint16_t id, size_t *len)
{
	(void)ctx;
	*len = id == 7 ? sizeof(key) : 0;
	return id == 7 ? key : NULL;
}

static void datagram(const uint8_t *d, size_t n, int seal)
{
	static struct datagram_view v;
	uint8_t buf[VN_REPORT_MAX_LEN + 64];
	int rc;

	if (n > sizeof(buf))
		n = sizeof(buf);
	memcpy(buf, d, n);
	if (seal && n >= sizeof(struct vn_report_hdr) + VN_REPORT_MAC_LEN) {
		/* a valid MAC over whatever header and records the input holds */
		uint8_t mac[VN_REPORT_MAC_LEN];

		sha256_hmac(key, sizeof(key), buf, n - VN_REPORT_MAC_LEN, mac);
		memcpy(buf + n - VN_REPORT_MAC_LEN, mac, sizeof(mac));
	}
	rc = datagram_parse(buf, n, one_key, NULL, &v);
	if (rc)
		return;
	if (v.hdr.nrec > VN_REPORT_MAX_RECS)
		abort();
	for (unsigned i = 0; i < v.hdr.nrec; i++)
		if (!datagram_rec_ok(&v.rec[i]))
			abort();
}

static void pipeline(const uint8_t *d, size_t n)
{
	static struct vn_pipe p;
	static char line[65536];
	static struct vn_report_rec recs[VN_PIPE_RANKS * (VN_CLASS_MAX + 1)];
	uint64_t a, b;

	memset(&p, 0, sizeof(p));
	memcpy(&p, d, n < sizeof(p) ? n : sizeof(p));
	for (unsigned k = 0; k < VN_PIPE_SLOTS; k++) {
		uint64_t id = (p.slot[k].ticket >> 16);
		int len;

		if (!id)
			continue;
		pipeline_filter(&p, id - 1);
		pipeline_take_report(&p, id - 1);
		len = pipeline_json(&p, id - 1, line, sizeof(line));
		if (len > 0 && ((size_t)len >= sizeof(line) || line[len - 1] != '\n'))
			abort();
		/* the records a reporter would send: all of them must pass the receiver's checks */
		len = pipeline_records(&p, id - 1, 1, recs, sizeof(recs) / sizeof(recs[0]), &a, &b);
		for (int r = 0; r < len; r++)
			if (!datagram_rec_ok(&recs[r]))
				abort();
	}
	(void)pipeline_json(&p, 0, line, 64); /* small buffers too */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	switch (data[0] % 3) {
	case 0:
		datagram(data + 1, size - 1, 0);
		break;
	case 1:
		datagram(data + 1, size - 1, 1);
		break;
	default:
		pipeline(data + 1, size - 1);
	}
	return 0;
}
