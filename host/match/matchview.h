/* SPDX-License-Identifier: MIT */
/*
 * matchview: the combined guest + host views of vnoise-host --guest over one hostagg engine, as view ops
 * shown by hostview_show: the text table (top --guest and the end-of-run summary, report --guest) and the
 * JSON document "vnoise.match/1" (README.md documents the schema). The views never change the engine.
 */
#ifndef VNOISE_HOST_MATCH_MATCHVIEW_H
#define VNOISE_HOST_MATCH_MATCHVIEW_H

#include <stdio.h>
#include "engine/hostagg.h"
#include "views/hostview.h"

/* The combined views as view ops (hostview.h): the text table and vnoise.match/1. */
extern const struct hostview_ops matchview_text_ops, matchview_json_ops;

/* "host_preempt:vnhog[123]", "thread:inj[45]", "host_wait:S"... of one source into buf. */
const char *matchview_source_name(const struct hostagg_msrc *s, char *buf, size_t len);

#endif
