/* SPDX-License-Identifier: MIT */
/* httpd internals that the unit suite needs: the server's counters. */
#ifndef VNOISE_HOST_EXPORT_HTTPD_PRIV_H
#define VNOISE_HOST_EXPORT_HTTPD_PRIV_H

#include "export/httpd.h"

void httpd_stats(const struct httpd *h, struct httpd_stats *st);

#endif
