/* SPDX-License-Identifier: MIT */
/*
 * promtext: an exposition text published by one thread and served by another (double-buffered). The owner
 * thread renders the whole text into a spare buffer with no lock held, then swaps it in under the lock; the
 * HTTP server thread (host/export/httpd) only copies the current text under that lock. So a scrape costs
 * the owner no time and never waits on its work, and the owner never waits on a scrape longer than a copy.
 * promtext_publish and promtext_current belong to the owner thread; promtext_copy to any thread.
 */
#ifndef VNOISE_HOST_EXPORT_PROMTEXT_H
#define VNOISE_HOST_EXPORT_PROMTEXT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include "util/bufout.h"

struct promtext {
	pthread_mutex_t lock; /* guards text, text_len, text_cap */
	char *text,
	    *spare; /* the current exposition and the buffer the next one is rendered into */
	size_t text_len, text_cap, spare_cap;
	bool too_big; /* warned once: the text outgrew HTTPD_BODY_MAX */
};

/* Render the whole text into o: 0, or -ENOSPC when o is too small (called again with a bigger one). */
typedef int promtext_render_fn(void *ctx, struct bufout *o);

void promtext_init(struct promtext *p);
void promtext_free(struct promtext *p);

/*
 * Render with fn into the spare buffer (from scratch, in a buffer twice as big each time it does not fit, up
 * to HTTPD_BODY_MAX) and swap it in. 0, or with the previous text kept -ENOMEM, -EFBIG (said once per run)
 * or fn's own error.
 */
int promtext_publish(struct promtext *p, promtext_render_fn *fn, void *ctx);

/* The owner thread's view of the current text (it alone swaps it: no lock); NULL before the first publish. */
const char *promtext_current(const struct promtext *p, size_t *len);

/* Append the current text to o, NUL-terminated. 0, or -ENOSPC with o->full set. */
int promtext_copy(struct promtext *p, struct bufout *o) __attribute__((warn_unused_result));

#endif
