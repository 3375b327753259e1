/* SPDX-License-Identifier: MIT */
/*
 * recfile: chunk header CRC, payload length rules and key=value text payloads (see recfile.h).
 */
#include <string.h>
#include "util/crc32.h"
#include "format/recfile.h"

uint32_t recfile_chunk_crc(const struct vn_rec_chunk *h)
{
	struct vn_rec_chunk tmp = *h;

	tmp.header_crc32 = 0;
	return crc32_update(0, &tmp, sizeof(tmp));
}

bool recfile_chunk_len_ok(uint16_t type, uint32_t len)
{
	if (type == VN_CHUNK_SAMPLES)
		return len % sizeof(struct vn_sample) == 0;
	if (type == VN_CHUNK_EVENTS)
		return len % sizeof(struct vn_event) == 0;
	if (type == VN_CHUNK_DTL_SPANS)
		return len % sizeof(struct vn_rec_dtl_span) == 0;
	if (type == VN_CHUNK_DTL_GAPS)
		return len % sizeof(struct vn_rec_dtl_gap) == 0;
	return true;
}

int recfile_kv_next(const char **pos, const char *end, struct recfile_kv *kv)
{
	const char *p = *pos;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *line = p;
		const char *eq;

		p = nl ? nl + 1 : end;
		if (eol > line && eol[-1] == '\r')
			eol--;
		eq = memchr(line, '=', (size_t)(eol - line));
		if (!eq)
			continue;
		kv->key = line;
		kv->key_len = (size_t)(eq - line);
		kv->val = eq + 1;
		kv->val_len = (size_t)(eol - eq - 1);
		*pos = p;
		return 1;
	}
	*pos = end;
	return 0;
}

bool recfile_kv_get(const void *payload, size_t len, const char *key, const char **val,
		    size_t *val_len)
{
	const char *pos = payload;
	const char *end = pos + len;
	size_t klen = strlen(key);
	struct recfile_kv kv;

	if (!payload)
		return false;
	while (recfile_kv_next(&pos, end, &kv)) {
		if (kv.key_len == klen && memcmp(kv.key, key, klen) == 0) {
			*val = kv.val;
			*val_len = kv.val_len;
			return true;
		}
	}
	return false;
}
