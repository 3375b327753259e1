/* SPDX-License-Identifier: MIT */
/*
 * livecmd: which sinks each live command adds to the engine (see livecmd.h). The order is the order in which
 * the engine calls them: the file first, the exporter before the screen (a listener that cannot start stops
 * the run before the screen takes the terminal), the screen last (closed first).
 */
#include <errno.h>
#include <string.h>
#include "cli/exitcode.h"
#include "cmd/livecmd.h"
#include "engine/live.h"
#include "export/hostexport.h"
#include "util/log.h"
#include "views/hostlist.h"
#include "views/hostrec.h"
#include "views/hosttui.h"
#include "views/hostview.h"

/* The sinks of p's command into lv. Returns 0, -errno, or an exit code once a sink said why it failed. */
static int add_sinks(struct live *lv, const struct host_params *p)
{
	int rc = 0;

	if (p->output)
		rc = hostrec_sink_add(lv, p->output);
	if (!rc && (p->metrics || p->remote_write))
		rc = hostexport_sink_add(lv, p);
	if (rc)
		return rc;
	switch (p->cmd) {
	case HCMD_TOP:
		return hosttui_wanted(p) ? hosttui_sink_add(lv, p)
					 : hostview_sink_add(lv, p, HOSTVIEW_SINK_PERIODS);
	case HCMD_SERVE:
		return p->json ? hostview_sink_add(lv, p, HOSTVIEW_SINK_PERIODS) : 0;
	case HCMD_RECORD:
		return hostview_sink_add(lv, p, HOSTVIEW_SINK_SUMMARY);
	case HCMD_LIST:
		return hostlist_sink_add(lv, p);
	case HCMD_REPORT:
		break;
	}
	return -EINVAL;
}

int livecmd_run(const struct host_params *p)
{
	struct live *lv = live_new(p);
	int ret = EXIT_FAIL, rc;

	if (!lv) {
		log_err("out of memory");
		goto out;
	}
	rc = add_sinks(lv, p);
	if (rc > 0) { /* an exit code: the output said why */
		ret = rc;
		goto out;
	}
	if (rc) {
		log_err("cannot set up the outputs: %s", strerror(-rc));
		goto out;
	}
	ret = live_run(lv);
out:
	live_free(lv);
	return ret;
}
