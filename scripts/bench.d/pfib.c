/* SPDX-License-Identifier: MIT */
/*
 * pfib.c - fib.c built WITHOUT -finstrument-functions, for the patched
 * tracers (traceagent's TRACEAGENT_PATCH, `uftrace record -P`).
 *
 * Usage: pfib N.  fib(N) makes 2*F(N+1) - 1 calls of fib.
 */
#include <stdio.h>
#include <stdlib.h>

/* noipa keeps the calls real; the barrier keeps GCC from turning the
 * second recursion into a loop at -O2, so the calls are those of fib.c. */
__attribute__((noipa)) static long fib(int n)
{
	long a, b;

	if (n < 2)
		return n;
	a = fib(n - 1);
	b = fib(n - 2);
	__asm__ volatile("" : "+r"(a), "+r"(b));
	return a + b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30;

	printf("%ld\n", fib(n));
	return 0;
}
