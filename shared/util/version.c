/* SPDX-License-Identifier: MIT */
/* version: see version.h. */
#include "util/version.h"

#if defined(__has_include)
#if __has_include("vnoise_version.h")
#include "vnoise_version.h"
#endif
#endif
#ifndef VNOISE_VERSION
#define VNOISE_VERSION "unknown" /* built outside the Makefile (fuzz targets) */
#endif
#ifndef VNOISE_GITREV
#define VNOISE_GITREV ""
#endif

const char *version_number(void)
{
	return VNOISE_VERSION;
}

const char *version_string(void)
{
	return VNOISE_GITREV[0] ? VNOISE_VERSION " (git " VNOISE_GITREV ")" : VNOISE_VERSION;
}

void version_print(FILE *f, const char *prog)
{
	fprintf(f, "%s %s\n", prog, version_string());
}
