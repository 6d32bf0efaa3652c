/* SPDX-License-Identifier: MIT */
/*
 * args.c - recording a function's arguments and return value (argregs.h).
 * No spec is parsed yet: every function keeps the plain stub.
 */
#include "argregs.h"

const struct ta_argspec *ta_args_find(uint64_t fn, const char *name)
{
	(void)fn;
	(void)name;
	return 0;
}

void ta_args_entry(const struct ta_argspec *spec, const struct ta_argregs *r)
{
	(void)spec;
	(void)r;
}

void ta_args_return(const struct ta_argspec *spec, uint64_t gp, uint64_t fp)
{
	(void)spec;
	(void)gp;
	(void)fp;
}
