/* SPDX-License-Identifier: MIT */
/* remotewrite: PLACEHOLDER until the sender lands (issue 18). */
#include <errno.h>
#include "util/log.h"
#include "export/remotewrite.h"

struct remotewrite *remotewrite_start(const struct remotewrite_cfg *cfg, char *err, size_t errlen)
{
	(void)cfg;
	log_reason(err, errlen, "not built");
	errno = ENOSYS;
	return NULL;
}

int remotewrite_push(struct remotewrite *rw, const char *text, size_t len, int64_t ts_ms)
{
	(void)rw, (void)text, (void)len, (void)ts_ms;
	return -ENOSYS;
}

void remotewrite_stats(const struct remotewrite *rw, struct remotewrite_stats *st)
{
	(void)rw;
	*st = (struct remotewrite_stats){ 0 };
}

int remotewrite_render_prom(const struct remotewrite *rw, const char *prefix, struct bufout *o)
{
	(void)rw, (void)prefix, (void)o;
	return 0;
}

void remotewrite_stop(struct remotewrite *rw, uint64_t flush_ns)
{
	(void)rw, (void)flush_ns;
}
