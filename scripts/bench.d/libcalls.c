/* SPDX-License-Identifier: MIT */
/*
 * libcalls.c - the library-call workload of scripts/bench: N rounds of
 * malloc + free of small sizes ("alloc") or of pthread_mutex_lock +
 * unlock ("lock"), two interposed calls a round, in one instrumented
 * function.  Prints the loop's own time in ns, so start-up and the final
 * flush are not counted.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile uintptr_t sink;

static void alloc_loop(long n)
{
	for (long i = 0; i < n; i++) {
		char *p = malloc((size_t)(16 + (i & 7) * 16));
		sink += (uintptr_t)p;
		free(p);
	}
}

static void lock_loop(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&m);
		sink += (uintptr_t)i;
		pthread_mutex_unlock(&m);
	}
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 1000000;
	int lock = argc > 1 && !strcmp(argv[1], "lock");
	uint64_t t0 = now_ns();

	if (lock)
		lock_loop(n);
	else
		alloc_loop(n);
	printf("%llu\n", (unsigned long long)(now_ns() - t0));
	return 0;
}
