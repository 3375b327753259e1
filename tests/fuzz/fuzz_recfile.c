/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the offline path of `vnoise-guest report` on hostile input. The input is written to a
 * file, read chunk by chunk with the record reader (resynchronising after damage), and every SAMPLES/EVENTS
 * payload is fed to the merge engine as `report` does, with horizons from the data itself. Nothing may crash,
 * overread or leak; sanitizers tell. Build and run: make fuzz (tests/integration/fuzz.sh runs it briefly).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attrib/merge.h"
#include "format/recreader.h"
#include "record.h"

static void gap_cb(void *ctx, int cpu, uint64_t dur, const uint64_t parts[VN_CLASS_MAX])
{
	uint64_t sum = 0;
	int c;

	(void)ctx;
	(void)cpu;
	for (c = 0; c < VN_CLASS_MAX; c++)
		sum += parts[c];
	if (sum != dur)
		abort(); /* the engine's contract: a gap's parts add up to it */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[] = "/tmp/vnoise-fuzz-XXXXXX";
	int fd = mkstemp(path), n, guard = 0;
	struct recfile_reader *r;
	struct recfile_chunk c;
	struct merge *m;
	size_t k;

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		unlink(path);
		return 0;
	}
	close(fd);
	r = recreader_open(path);
	m = merge_new(gap_cb, NULL);
	while (r && m && guard++ < 10000) {
		n = recreader_next(r, &c);
		if (n == 0 || (n < 0 && !recreader_recoverable(n)))
			break;
		if (n < 0)
			continue;
		if (c.type == VN_CHUNK_SAMPLES)
			for (k = 0; k + sizeof(struct vn_sample) <= c.len;
			     k += sizeof(struct vn_sample))
				(void)!merge_add_sample(
				    m, (const struct vn_sample *)((const char *)c.payload + k));
		else if (c.type == VN_CHUNK_EVENTS)
			for (k = 0; k + sizeof(struct vn_event) <= c.len;
			     k += sizeof(struct vn_event))
				(void)!merge_add_event(
				    m, (const struct vn_event *)((const char *)c.payload + k));
		(void)!merge_process(m, c.seq * 1000000ULL);
	}
	if (m)
		(void)!merge_process(m, UINT64_MAX);
	merge_free(m);
	recreader_close(r);
	unlink(path);
	return 0;
}
