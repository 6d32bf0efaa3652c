/* SPDX-License-Identifier: MIT */
/*
 * uselib.c - calls sample_square() from libsample.so N times (argv[1],
 * default 7), so the library's functions have exactly N calls each.
 */
#include <stdio.h>
#include <stdlib.h>

#include "libsample.h"

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 7;
	long sum = 0;

	for (int i = 0; i < n; i++)
		sum += sample_square(i);
	printf("uselib: %d calls, sum %ld\n", n, sum);
	return 0;
}
