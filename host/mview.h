/* SPDX-License-Identifier: MIT */
/*
 * mview: the combined guest + host views of vnoise-host --guest over one hostagg engine: the text table
 * (top --guest and the end-of-run summary, report --guest) and the JSON document "vnoise.match/1"
 * (README.md documents the schema). Data goes to the given stream; the views never change the engine.
 */
#ifndef VNOISE_HOST_MVIEW_H
#define VNOISE_HOST_MVIEW_H

#include <stdio.h>
#include "hostagg.h"
#include "hview.h"

void mview_text(FILE *f, const struct hostagg *a, const struct hview_info *in);
int mview_json(FILE *f, const struct hostagg *a, const struct hview_info *in)
    __attribute__((warn_unused_result));

/* "host_preempt:vnhog[123]", "thread:inj[45]", "host_wait:S"... of one source into buf. */
const char *mview_source_name(const struct hostagg_msrc *s, char *buf, size_t len);

#endif
