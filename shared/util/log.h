/* SPDX-License-Identifier: MIT */
/*
 * One small log module: diagnostics on stderr, data on stdout (STYLE.md 10). log_err/log_warn always print,
 * log_info unless quiet, log_debug only with verbosity >= 1. Messages are one line; a trailing newline is
 * added. Thread-safe (each message is a single fputs under stdio's lock).
 */
#ifndef VNOISE_UTIL_LOG_H
#define VNOISE_UTIL_LOG_H

#include <stdbool.h>
#include <stddef.h>

#define VN_FMT(a, b) __attribute__((format(printf, a, b)))

void log_set_prog(const char *prog);
/*
 * A sink that sees every line before it goes to stderr (the full line, prefix included, no newline): an
 * interactive screen shows it in its status line and returns true (not printed), a progress line erases
 * itself and returns false (printed). NULL: none. One sink at a time; not thread-safe against log calls.
 */
typedef bool log_sink_fn(void *ctx, const char *line);
void log_set_sink(log_sink_fn *fn, void *ctx);
void log_set_verbosity(int v); /* -1 quiet, 0 default, 1+ debug */
int log_verbosity(void);
void log_err(const char *fmt, ...) VN_FMT(1, 2);
void log_warn(const char *fmt, ...) VN_FMT(1, 2);
void log_info(const char *fmt, ...) VN_FMT(1, 2);
void log_debug(const char *fmt, ...) VN_FMT(1, 2);
/*
 * The one-line reason a fallible function hands its caller (the err, errlen pair of many APIs here):
 * printf into err; nothing when err is NULL or errlen 0.
 */
void log_reason(char *err, size_t errlen, const char *fmt, ...) VN_FMT(3, 4);

#endif
