/* SPDX-License-Identifier: MIT */
/*
 * nextshim.c - a library that defines a libc function (usleep) ahead of
 * libc in test_nextsym's search order: RTLD_NEXT's answer is this one.
 */
#include <unistd.h>

int nextshim_calls;

int usleep(useconds_t us)
{
	(void)us;
	nextshim_calls++;
	return 0;
}
