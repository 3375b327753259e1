/* SPDX-License-Identifier: MIT */
/* log: prefixed one-line diagnostics on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include "util/log.h"

static const char *log_prog = "vnoise";
static int log_level;
static log_sink_fn *log_sink;
static void *log_sink_ctx;

void log_set_sink(log_sink_fn *fn, void *ctx)
{
	log_sink = fn;
	log_sink_ctx = ctx;
}

void log_set_prog(const char *prog)
{
	log_prog = prog;
}

void log_set_verbosity(int v)
{
	log_level = v;
}

int log_verbosity(void)
{
	return log_level;
}

static void log_emit(const char *tag, const char *fmt, va_list ap)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "%s: %s", log_prog, tag);

	if (n < 0 || (size_t)n >= sizeof(buf))
		n = 0;
	vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	if (log_sink && log_sink(log_sink_ctx, buf))
		return;
	fprintf(stderr, "%s\n", buf);
}

void log_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_emit("error: ", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	log_emit("warning: ", fmt, ap);
	va_end(ap);
}

void log_info(const char *fmt, ...)
{
	va_list ap;
	if (log_level < 0)
		return;
	va_start(ap, fmt);
	log_emit("", fmt, ap);
	va_end(ap);
}

void log_debug(const char *fmt, ...)
{
	va_list ap;
	if (log_level < 1)
		return;
	va_start(ap, fmt);
	log_emit("debug: ", fmt, ap);
	va_end(ap);
}

void log_reason(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}
