/* SPDX-License-Identifier: MIT */
/* check_main: the main of a Check suite (run it, exit non-zero when a test failed). */
#ifndef VNOISE_TESTS_UNIT_CHECK_MAIN_H
#define VNOISE_TESTS_UNIT_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int check_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
