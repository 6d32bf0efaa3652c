/* SPDX-License-Identifier: MIT */
/*
 * xfib.c - the cost of an excluded function (issue 21, "Excluded code
 * costs nothing"): pfib.c's fib, built once without -finstrument-functions
 * and once with it; the instrumented build, given --nop, first rewrites
 * its fib's hook calls into no-ops with the agent's ta_hookpatch_nop
 * (agent/hookpatch.c, linked from the release build's agent core) before
 * timing.  Prints the CPU time the timed loop took, in nanoseconds (the
 * thread's: time the machine gave to other work is not counted), then the
 * wall time.
 *
 * Built with -DXFIB_PLAIN, there is no --nop and no agent core: the
 * instrumented build run with the agent preloaded and TRACEAGENT_EXCLUDE=fib,
 * where the agent's own start-up (filter.c) rewrites fib's hook calls.
 *
 * Usage: xfib [--nop] N REPS.  Each rep makes 2*F(N+1) - 1 calls of fib.
 * Link with -rdynamic: the range of fib comes from its dynamic symbol.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef XFIB_PLAIN
#include "hookpatch.h"
#endif

long fib(int n);

/* noipa keeps the calls real; the barrier keeps GCC from turning the
 * second recursion into a loop at -O2 (as in pfib.c). */
__attribute__((noipa)) long fib(int n)
{
	long a, b;

	if (n < 2)
		return n;
	a = fib(n - 1);
	b = fib(n - 2);
	__asm__ volatile("" : "+r"(a), "+r"(b));
	return a + b;
}

#ifdef XFIB_PLAIN
/* One hooked call before the timing: it starts the agent (a run whose
 * only hooked function was rewritten would never start it, and write no
 * dump saying fib was patched out). */
void xfib_start(void);
__attribute__((noipa)) void xfib_start(void)
{
}
#endif

__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
	int nop = argc > 1 && strcmp(argv[1], "--nop") == 0;
	int n = argc > 1 + nop ? atoi(argv[1 + nop]) : 30;
	int reps = argc > 2 + nop ? atoi(argv[2 + nop]) : 1;
	struct timespec t0, t1, c0, c1;
	long sum = 0;

#ifdef XFIB_PLAIN
	if (nop) {
		fprintf(stderr, "xfib: built without --nop\n");
		return 2;
	}
	xfib_start();
#else
	if (nop) {
		Dl_info di;
		void *symp = NULL;
		const ElfW(Sym) * sym;
		int err;

		if (!dladdr1((void *)fib, &di, &symp, RTLD_DL_SYMENT) || !symp) {
			fprintf(stderr, "xfib: no dynamic symbol for fib (link with -rdynamic)\n");
			return 2;
		}
		sym = symp;
		err = ta_hookpatch_nop((uintptr_t)fib, (uintptr_t)fib + sym->st_size);
		if (err) {
			fprintf(stderr, "xfib: ta_hookpatch_nop(fib): %s\n", strerror(-err));
			return 2;
		}
	}
#endif
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (int i = 0; i < reps; i++)
		sum += fib(n);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%lld %lld %ld\n",
	       (long long)(c1.tv_sec - c0.tv_sec) * 1000000000ll + (c1.tv_nsec - c0.tv_nsec),
	       (long long)(t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec), sum);
	return 0;
}
