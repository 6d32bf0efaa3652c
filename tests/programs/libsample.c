/* SPDX-License-Identifier: MIT */
/*
 * libsample.c - an instrumented shared library: sample_square() calls the
 * file-local sample_twice() once, so a trace shows a named exported
 * function and a named static one (found through .symtab) in libsample.so.
 */
#include "libsample.h"

__attribute__((noipa)) static int sample_twice(int x)
{
	return 2 * x;
}

int sample_square(int x)
{
	return sample_twice(x * x) / 2;
}
