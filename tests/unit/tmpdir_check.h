/* SPDX-License-Identifier: MIT */
/* tmpdir_check: a fresh directory for a suite's test (/tmp/NAME.XXXXXX) and its removal, whole. */
#ifndef VNOISE_TESTS_UNIT_TMPDIR_CHECK_H
#define VNOISE_TESTS_UNIT_TMPDIR_CHECK_H

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static inline void tmpdir_make(char *dir, size_t len, const char *name)
{
	snprintf(dir, len, "/tmp/%s.XXXXXX", name);
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static inline void tmpdir_remove(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

#endif
