/* SPDX-License-Identifier: MIT */
/* promtext: the published exposition text (see promtext.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "export/httpd.h"
#include "export/promtext.h"
#include "util/log.h"

void promtext_init(struct promtext *p)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
}

void promtext_free(struct promtext *p)
{
	free(p->text);
	free(p->spare);
	pthread_mutex_destroy(&p->lock);
	p->text = p->spare = NULL;
}

int promtext_publish(struct promtext *p, promtext_render_fn *fn, void *ctx)
{
	size_t cap = p->spare_cap > HTTPD_BODY_MIN ? p->spare_cap : HTTPD_BODY_MIN, len;
	char *t;
	int rc;

	for (;;) {
		struct bufout o;

		if (cap > p->spare_cap) {
			char *nb = realloc(p->spare, cap);

			if (!nb)
				return -ENOMEM; /* keep serving the previous text */
			p->spare = nb;
			p->spare_cap = cap;
		}
		o = (struct bufout){ .buf = p->spare, .len = p->spare_cap };
		rc = fn(ctx, &o);
		if (!rc) {
			len = o.off;
			break;
		}
		if (rc != -ENOSPC)
			return rc;
		if (cap >= HTTPD_BODY_MAX) {
			if (!p->too_big)
				log_warn("metrics text larger than %u bytes: not updated",
					 HTTPD_BODY_MAX);
			p->too_big = true;
			return -EFBIG;
		}
		cap *= 2;
	}
	pthread_mutex_lock(&p->lock);
	t = p->text;
	p->text = p->spare;
	p->text_len = len;
	p->spare = t;
	len = p->text_cap;
	p->text_cap = p->spare_cap;
	p->spare_cap = len;
	pthread_mutex_unlock(&p->lock);
	return 0;
}

const char *promtext_current(const struct promtext *p, size_t *len)
{
	*len = p->text_len;
	return p->text;
}

int promtext_copy(struct promtext *p, struct bufout *o)
{
	int rc = 0;

	pthread_mutex_lock(&p->lock);
	if (o->off + p->text_len + 1 > o->len) {
		o->full = 1;
		rc = -ENOSPC;
	} else {
		if (p->text_len)
			memcpy(o->buf + o->off, p->text, p->text_len);
		o->off += p->text_len;
		o->buf[o->off] = 0;
	}
	pthread_mutex_unlock(&p->lock);
	return rc;
}
