/* SPDX-License-Identifier: MIT */
/*
 * version: the version of vnoise, from one place — the VERSION file at the top of the tree, and the git
 * revision when built from a git checkout (the Makefile writes both into $(BUILD)/vnoise_version.h). Every
 * binary's --version, every JSON document ("version") and every record file (META "version=") take it here.
 */
#ifndef VNOISE_UTIL_VERSION_H
#define VNOISE_UTIL_VERSION_H

#include <stdio.h>

/* "0.9.0": the release, from VERSION. */
const char *version_number(void);

/* "0.9.0 (git 120ade1)", or "0.9.0" when not built from git. Static storage. */
const char *version_string(void);

/* Print "PROG VERSION_STRING\n" to f (what --version prints on stdout). */
void version_print(FILE *f, const char *prog);

#endif
