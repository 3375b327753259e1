/* SPDX-License-Identifier: MIT */
/*
 * matchview: the combined guest + host views of vnoise-host --guest over one hostagg engine, as view ops
 * shown by hostview_show: the text table (top --guest and the end-of-run summary, report --guest) and the
 * JSON document "vnoise.match/1" (README.md documents the schema). The views never change the engine. The
 * text view fits HOSTVIEW_WIDTH columns unless --wide; vnoise's own threads are labelled "(vnoise)".
 */
#ifndef VNOISE_HOST_MATCH_MATCHVIEW_H
#define VNOISE_HOST_MATCH_MATCHVIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "engine/hostagg.h"
#include "views/hostview.h"

/* The combined views as view ops (hostview.h): the text table and vnoise.match/1. */
extern const struct hostview_ops matchview_text_ops, matchview_json_ops;

/*
 * "host_preempt:vnhog[123]", "thread:inj[45]", "host_wait:S", "vmexit:HLT", "host_irq:50:nvme0q1",
 * "host_irq:NET_RX", "host_irq:local_timer"... of source s of vCPU v into buf: host IRQs named from a (NULL:
 * by number), VM exits by the ISA of v's exit aggregates. Returns buf.
 */
const char *matchview_source_name(const struct hostagg *a, const struct hostagg_vcpu *v,
				  const struct hostagg_msrc *s, char *buf, size_t len);

/* Is s one of vnoise's own threads: vnoise-host's (in->self_tids) or the guest's vnoise-* threads? */
bool matchview_is_vnoise(const struct hostinfo *in, const struct hostagg_msrc *s);

/* A clock offset in readable units into buf ("-12.345 ms", "+2 d 03:04:05.678"); returns buf. */
const char *matchview_offset_text(int64_t ns, char *buf, size_t len);

#endif
