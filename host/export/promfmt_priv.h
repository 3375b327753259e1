/* SPDX-License-Identifier: MIT */
/* promfmt internals that the unit suites need: the checks of the callers' metric and label names, and
 * a bare escaped label value. */
#ifndef VNOISE_HOST_EXPORT_PROMFMT_PRIV_H
#define VNOISE_HOST_EXPORT_PROMFMT_PRIV_H

#include "export/promfmt.h"

/* Only the escaped text of a label value (no quotes); for tests and callers with their own layout. */
void promfmt_label_value(struct bufout *o, const char *value, size_t max);
/* A metric name: [a-zA-Z_:][a-zA-Z0-9_:]*. */
bool promfmt_name_ok(const char *name);
/* A label name: [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__" (reserved to Prometheus). */
bool promfmt_label_name_ok(const char *name);

#endif
