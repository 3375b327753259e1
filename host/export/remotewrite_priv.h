/* SPDX-License-Identifier: MIT */
/*
 * remotewrite internals for the unit suite and the benchmark: the backoff bounds, and a start that takes
 * another POST function in place of the HTTP client (a fake receiver: the queue's bound and the drop
 * accounting are tested without a network).
 */
#ifndef VNOISE_HOST_EXPORT_REMOTEWRITE_PRIV_H
#define VNOISE_HOST_EXPORT_REMOTEWRITE_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include "export/remotewrite.h"

#define REMOTEWRITE_BACKOFF_MIN_NS 100000000ull /* first retry after 100 ms, doubling */
#define REMOTEWRITE_BACKOFF_MAX_NS 5000000000ull /* ... up to 5 s */
#define REMOTEWRITE_CONNECT_TIMEOUT_MS 2000L
#define REMOTEWRITE_REQUEST_TIMEOUT_MS 10000L

/*
 * POST one request body (snappy-compressed WriteRequest, len bytes): the HTTP status, or -errno when no
 * status came back (a connection error: retried). Called from the sender thread only. why (whylen bytes)
 * may be filled with a one-line reason for a failure.
 */
typedef int remotewrite_post_fn(void *ctx, const uint8_t *body, size_t len, char *why,
				size_t whylen);

/* remotewrite_start with post in place of the HTTP client (cfg->url is still checked). */
struct remotewrite *remotewrite_start_with(const struct remotewrite_cfg *cfg,
					   remotewrite_post_fn *post, void *ctx, char *err,
					   size_t errlen) __attribute__((warn_unused_result));

#endif
