/* SPDX-License-Identifier: MIT */
/*
 * live: vnoise-host's live engine behind `top`, `record`, `list` and `serve`. It connects to libvirt, maps
 * the selected domains (all running ones by default), follows their lifecycle (a domain that stops and
 * starts again is re-mapped under the same index), survives libvirtd restarts (reconnect with backoff while
 * the dispatch log and schedstat keep going), and every period turns libvirt counters, schedstat, the
 * dispatch log, the guest channels and the tap captures into protocol/host.h records and two aggregates (the
 * period's and the run's).
 *
 * The engine does not know its outputs (rtla's top/hist ops over one tool): a command adds the sinks it
 * wants (live_add_sink: the record file, the views, the interactive screen, the exporter, the list) and the
 * engine hands each of them what it produced, through the ops below, in the order they were added. Every op
 * is optional (NULL: not called); all run on the engine's one thread.
 */
#ifndef VNOISE_HOST_ENGINE_LIVE_H
#define VNOISE_HOST_ENGINE_LIVE_H

#include <stddef.h>
#include <stdint.h>
#include "cmd/hostparams.h"
#include "engine/hostagg.h"
#include "engine/hostinfo.h"
#include "libvirt/vmap.h"

#define LIVE_MAX_SINKS 8

struct pollfd;

struct live_sink_ops {
	const char *name;
	/* The run starts, before any domain is mapped; meta is the run's META text (key=value lines, the first
	 * chunk of a record file). Returns 0 (EXIT_OK) or the exit code of a failure, logged: the run stops. */
	int (*open)(void *ctx, const char *meta, size_t len);
	/* Every wanted running domain is mapped (doms[0..n-1]); the loop starts next (`list`: the run ends
	 * after it). Returns 0 or the exit code of a failure, logged: the run stops. */
	int (*start)(void *ctx, const struct vmap_dom *const *doms, int n);
	/* A record chunk, in file order: HOST_DOMAIN bindings, HOST_META (IRQ names), the period's record
	 * arrays, STATS; the last one is VN_CHUNK_END, whose payload is the END text (NUL-terminated). */
	void (*chunk)(void *ctx, uint16_t type, const void *payload, size_t len);
	/* A period ended: cur is the aggregate since the last call (reset afterwards), in the run's facts
	 * (in->start_ns..end_ns its span). */
	void (*period)(void *ctx, const struct hostagg *cur, const struct hostinfo *in);
	/* Wait until wake (CLOCK_MONOTONIC ns) in place of the engine (a screen handles keys meanwhile), or
	 * until one of the n fds of extra is ready (revents set). Returns 1 when the user quit, 0 at wake, when
	 * an fd is ready or on a signal, -ENOTTY when the sink has nothing to wait for (the engine waits). */
	int (*wait)(void *ctx, uint64_t wake, struct pollfd *extra, int n);
	/* The period the sink asks for from the next period on (ns; 0: as it is). */
	uint64_t (*period_ns)(void *ctx);
	/* The loop ended, before the last (partial) period: a screen gives the terminal back here. */
	void (*stop)(void *ctx);
	/* The run is over (after the END chunk): total is the whole run's aggregate, in its facts. Returns 0
	 * or the exit code the run ends with (the first sink's non-zero one). */
	int (*end)(void *ctx, const struct hostagg *total, const struct hostinfo *in);
	/* Release ctx (once, from live_free, in the reverse order of adding; whether or not the run ran). */
	void (*close)(void *ctx);
};

struct live;

/* A live engine for command line p (not copied: p outlives it), nothing started. NULL if out of memory. */
struct live *live_new(const struct host_params *p) __attribute__((warn_unused_result));

/* Add a sink: ops over ctx, owned by the engine from now on (ops->close releases it at live_free, also when
 * the adding fails). Returns 0 or -ENOSPC (more than LIVE_MAX_SINKS). */
int live_add_sink(struct live *lv, const struct live_sink_ops *ops, void *ctx)
    __attribute__((warn_unused_result));

/* Run the command until the duration ends, a signal or a sink's quit (`list`: until the domains are
 * mapped). Returns the exit code. Once per engine. */
int live_run(struct live *lv);

/* Stop everything the run started, close the sinks, free lv. Accepts NULL. */
void live_free(struct live *lv);

#endif
