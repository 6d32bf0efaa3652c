/* SPDX-License-Identifier: MIT */
/*
 * check_run.h - the main() of every Check test: runs a suite in fork mode
 * (one crash does not hide the other tests) and turns failures into the
 * exit status meson reads.
 */
#ifndef TA_CHECK_RUN_H
#define TA_CHECK_RUN_H

#include <check.h>
#include <stdlib.h>

static inline int ta_check_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
