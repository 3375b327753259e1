/* SPDX-License-Identifier: MIT */
/* datagram internals that the unit suite needs: the name of a parse result. */
#ifndef VNOISE_SHARED_FORMAT_DATAGRAM_PRIV_H
#define VNOISE_SHARED_FORMAT_DATAGRAM_PRIV_H

#include "format/datagram.h"

/*
 * Short stable name of a datagram_parse() result, for counters and metric labels: "ok", "not-report",
 * "version", "malformed", "unknown-key", "bad-mac", "other".
 */
const char *datagram_err_name(int err);

#endif
