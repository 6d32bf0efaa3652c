/* SPDX-License-Identifier: MIT */
/*
 * waitleaf.c - a leaf of a few instructions called N times through outer,
 * and nothing else: with a small memory cap and a collector that does not
 * read, the agent's waits for its flusher are all the thread ever sleeps
 * (e2e-wait).  Prints the sum, so nothing is optimised away.
 *
 * usage: waitleaf [N]
 */
#include <stdio.h>
#include <stdlib.h>

/* noipa: the calls exist at every optimisation level. */
__attribute__((noipa)) static long leaf(long x)
{
	return x * 3 + 1;
}

__attribute__((noipa)) static long outer(long x)
{
	return leaf(x) ^ x;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000, sum = 0;

	for (long i = 0; i < n; i++)
		sum += outer(i);
	printf("%ld\n", sum);
	return 0;
}
