/* SPDX-License-Identifier: MIT */
/*
 * fib.c - the worst case for a function tracer: tiny recursive calls.
 *
 * Usage: fib N.  fib(N) makes 2*F(N+1) - 1 calls of fib, plus main.
 */
#include <stdio.h>
#include <stdlib.h>

/* noipa: the calls stay real calls at -O2 (no inlining or cloning). */
__attribute__((noipa)) static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;

	printf("%ld\n", fib(n));
	return 0;
}
