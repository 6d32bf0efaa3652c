/* SPDX-License-Identifier: MIT */
/*
 * coldpart.c - a function whose hook calls the rewrite refuses, for
 * TRACEAGENT_EXCLUDE's run-time fallback (e2e-filter): checked() calls a
 * cold function on a branch never taken, and GCC moves that branch, at
 * -O2, into a part of checked() placed elsewhere (checked.cold), where the
 * rewrite (agent/hookpatch.c) would not see hook calls: it refuses the
 * function, which is filtered at run time.  At -O0 there is no such part:
 * the calls are rewritten.  main calls checked() N times, each of which
 * calls step() twice.
 * Usage: coldpart N
 */
#include <stdio.h>
#include <stdlib.h>

static volatile long total;

void step(long x);
int checked(long x);

__attribute__((cold, noinline)) static void complain(long x)
{
	fprintf(stderr, "coldpart: %ld is negative\n", x);
}

__attribute__((noinline)) void step(long x)
{
	total += x;
}

__attribute__((noinline)) int checked(long x)
{
	if (x < 0) {
		complain(x);
		x = -x;
		total -= 7;
	}
	step(x);
	step(x + 1);
	return (int)(x & 1);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10;
	int odd = 0;

	for (long i = 0; i < n; i++)
		odd += checked(i);
	printf("coldpart: %ld calls, %d odd, total %ld\n", n, odd, total);
	return 0;
}
