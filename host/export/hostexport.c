/* SPDX-License-Identifier: MIT */
/*
 * hostexport: serve's /metrics and remote-write as one live sink (see hostexport.h).
 */
#include <errno.h>
#include <stdlib.h>
#include "cli/exitcode.h"
#include "engine/live.h"
#include "export/hostexport.h"
#include "export/hostmetrics.h"
#include "export/remotewrite.h"
#include "util/log.h"

struct exportsink {
	const struct host_params *p;
	struct hostmetrics *metrics; /* --metrics or --remote-write */
	struct remotewrite *rw; /* --remote-write */
};

/* The listener and the sender, before libvirt is reached: a busy port stops the run with nothing attached. */
static int export_open(struct exportsink *x)
{
	const struct host_params *p = x->p;
	char err[256];

	x->metrics = hostmetrics_start(p->metrics, err, sizeof(err));
	if (!x->metrics) {
		log_err("--metrics: %s", err);
		return EXIT_CANNOT;
	}
	if (p->metrics)
		log_info("serving /metrics on port %u", hostmetrics_port(x->metrics));
	if (p->remote_write) {
		struct remotewrite_cfg cfg = { .url = p->remote_write };

		x->rw = remotewrite_start(&cfg, err, sizeof(err));
		if (!x->rw) {
			int bad_url = errno == EINVAL;

			log_err("--remote-write %s: %s", p->remote_write, err);
			return bad_url ? EXIT_USAGE : EXIT_FAIL;
		}
		hostmetrics_set_remotewrite(x->metrics, x->rw);
	}
	return EXIT_OK;
}

static void export_period(void *ctx, const struct hostagg *cur, const struct hostinfo *in)
{
	struct exportsink *x = ctx;

	if (x->metrics)
		hostmetrics_period(x->metrics, cur, in);
}

static void export_close(void *ctx)
{
	struct exportsink *x = ctx;

	hostmetrics_stop(x->metrics); /* before the sender it pushes to */
	remotewrite_stop(x->rw, HOSTEXPORT_FLUSH_NS);
	free(x);
}

static const struct live_sink_ops export_sink_ops = {
	.name = "export",
	.period = export_period,
	.close = export_close,
};

int hostexport_sink_add(struct live *lv, const struct host_params *p)
{
	struct exportsink *x = calloc(1, sizeof(*x));

	int rc;

	if (!x)
		return -ENOMEM;
	x->p = p;
	rc = export_open(x);
	if (rc) {
		export_close(x);
		return rc;
	}
	return live_add_sink(lv, &export_sink_ops, x); /* closes x when it fails */
}
