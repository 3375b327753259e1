/* SPDX-License-Identifier: MIT */
/*
 * hosttui: the interactive screen of `vnoise-host top` (ncurses) when stdin and stdout are terminals and
 * neither --batch nor --json is given: one row per domain, expandable to its vCPUs, sortable columns, a
 * filter, a sparkline of the last HOSTTUI_HISTORY periods per row, a header with the host's CPU, vnoise's
 * own cost and drops, and a detail pane for the selected vCPU. Keys are listed by `h` (docs/CLI.md).
 *
 * The screen is a sink of the live engine (hosttui_sink_add), which owns the loop: the sink opens the screen
 * once the domains are mapped, shows each period's aggregate (hosttui_period) and waits in the engine's place
 * (hosttui_wait), so keys and resizes are handled between ticks. The terminal is restored by hosttui_close,
 * which the sink calls when the loop ends and on every exit path (q, SIGINT, SIGTERM, errors); hosttui_open
 * also registers it with atexit for the paths that exit() directly.
 */
#ifndef VNOISE_HOST_VIEWS_HOSTTUI_H
#define VNOISE_HOST_VIEWS_HOSTTUI_H

#include <stdbool.h>
#include <stddef.h>
#include <poll.h>
#include <stdint.h>
#include "engine/hostagg.h"
#include "cmd/hostparams.h"
#include "views/hostview.h"

struct live;

#define HOSTTUI_MAX_EXTRA ((int)VN_HOST_MAX_DOMAINS) /* fds hosttui_wait also waits on */

#define HOSTTUI_HISTORY 60 /* periods in each row's sparkline */

struct hosttui;

/* Should top run interactively: top, not --batch, not --json, stdin and stdout are terminals. */
bool hosttui_wanted(const struct host_params *p);

/* Enter the screen (alternate screen, raw keys). NULL with a one-line reason in err when the terminal
 * cannot (TERM unknown...): the engine then falls back to the line output. */
struct hosttui *hosttui_open(const struct host_params *p, char *err, size_t errlen);

/* A period ended: cur is that period's aggregate (reset by the engine afterwards), in the run's facts
 * (in->start_ns..end_ns is the period). Keeps what the history and the detail pane need, and redraws. */
void hosttui_period(struct hosttui *t, const struct hostagg *cur, const struct hostinfo *in);

/* Wait until wake (CLOCK_MONOTONIC ns), handling keys and SIGWINCH meanwhile (redraws at once), or until one
 * of the n fds of extra is ready (their revents set; the engine's bells). Returns 1 when the user quit (q),
 * 0 at wake, when an extra fd is ready or when a signal interrupted the wait. */
int hosttui_wait(struct hosttui *t, uint64_t wake, struct pollfd *extra, int n);

/* The period the user chose with the keys (ns; the --period given until then). The engine applies it from
 * the next period. */
uint64_t hosttui_period_ns(const struct hosttui *t);

/* Add top's screen (for hosttui_wanted(p)) to live engine lv; a terminal that curses cannot use gets the line
 * output of hostview_sink_ops instead (said once). Returns 0 or -ENOMEM, -ENOSPC. */
int hosttui_sink_add(struct live *lv, const struct host_params *p)
    __attribute__((warn_unused_result));

/* Leave the screen: the terminal back as it was (normal screen, cooked mode, cursor). Accepts NULL; safe
 * to call twice. */
void hosttui_close(struct hosttui *t);

#endif
