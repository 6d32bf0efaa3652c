/* SPDX-License-Identifier: MIT */
/*
 * fib.c - naive recursive Fibonacci: fib(n) is called 2*F(n+1) - 1 times,
 * which the end-to-end tests check exactly at -O0 and -O2.
 */
#include <stdio.h>
#include <stdlib.h>

/* noipa: no inlining, cloning or other interprocedural rewriting, so the
 * calls the test counts exist at every optimisation level. */
__attribute__((noipa)) static long fib(int n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;

	printf("fib(%d) = %ld\n", n, fib(n));
	return 0;
}
