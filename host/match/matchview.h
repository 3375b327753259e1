/* SPDX-License-Identifier: MIT */
/*
 * matchview: the combined guest + host views of vnoise-host --guest over one hostagg engine: the text table
 * (top --guest and the end-of-run summary, report --guest) and the JSON document "vnoise.match/1"
 * (README.md documents the schema). Data goes to the given stream; the views never change the engine.
 */
#ifndef VNOISE_HOST_MATCH_MATCHVIEW_H
#define VNOISE_HOST_MATCH_MATCHVIEW_H

#include <stdio.h>
#include "engine/hostagg.h"
#include "views/hostview.h"

void matchview_text(FILE *f, const struct hostagg *a, const struct hostview_info *in);
int matchview_json(FILE *f, const struct hostagg *a, const struct hostview_info *in)
    __attribute__((warn_unused_result));

/* "host_preempt:vnhog[123]", "thread:inj[45]", "host_wait:S"... of one source into buf. */
const char *matchview_source_name(const struct hostagg_msrc *s, char *buf, size_t len);

#endif
