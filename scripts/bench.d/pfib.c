/* SPDX-License-Identifier: MIT */
/*
 * pfib.c - fib.c built WITHOUT -finstrument-functions, for the patched
 * tracers (traceagent's TRACEAGENT_PATCH, `uftrace record -P`).
 *
 * Usage: pfib N.  fib(N) makes 2*F(N+1) - 1 calls of fib.  Prints the
 * result, and on stderr the CPU time fib(N) took in this thread ("pfib:
 * fib thread cpu ns N"): the bench's measure robust to other work on the
 * machine, for this program patched and, built with
 * -finstrument-functions, with the floor's hooks.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
	struct timespec c0, c1;
	long r;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	r = fib(n);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	printf("%ld\n", r);
	fprintf(stderr, "pfib: fib thread cpu ns %lld\n",
		(long long)(c1.tv_sec - c0.tv_sec) * 1000000000 + (c1.tv_nsec - c0.tv_nsec));
	return 0;
}
