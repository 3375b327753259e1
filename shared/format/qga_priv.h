/* SPDX-License-Identifier: MIT */
/* qga internals that the unit suite and the fuzz target need: the agent's framer and the
 * argument readers that only tests call. */
#ifndef VNOISE_SHARED_FORMAT_QGA_PRIV_H
#define VNOISE_SHARED_FORMAT_QGA_PRIV_H

#include "format/qga.h"

/* The agent's framer, for its counters. */
const struct qga_framer *qga_agent_framer(const struct qga_agent *a);
int qga_arg_u64(const struct jsonr_value *args, const char *key, bool required, uint64_t *out,
		char *err, size_t err_cap) __attribute__((warn_unused_result));
int qga_arg_str(const struct jsonr_value *args, const char *key, bool required, const char **out,
		char *err, size_t err_cap) __attribute__((warn_unused_result));
int qga_arg_bool(const struct jsonr_value *args, const char *key, bool required, bool *out,
		 char *err, size_t err_cap) __attribute__((warn_unused_result));

#endif
