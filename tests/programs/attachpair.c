/* SPDX-License-Identifier: MIT */
/*
 * attachpair - for `traceagent attach`: two threads loop, without a pause,
 * on { step(); TA_INSTANT("pair"); }, step() being instrumented, so that
 * calls are made through the entries while an attach points them at the
 * agent and while a detach puts them back.  Lines on stdin: "count" prints
 * "rounds N" (both threads' rounds so far), "quit" stops the threads,
 * prints "done" and exits 0.
 * Usage: attachpair
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "traceagent.h"

static unsigned long rounds;
static int quit;

__attribute__((noinline)) static void step(void)
{
	__atomic_add_fetch(&rounds, 1, __ATOMIC_RELAXED);
}

__attribute__((no_instrument_function)) static void *loop(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&quit, __ATOMIC_RELAXED)) {
		step();
		TA_INSTANT("pair");
	}
	return NULL;
}

__attribute__((no_instrument_function)) int main(void)
{
	pthread_t t[2];
	char line[64];

	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, loop, NULL)) {
			printf("FAIL pthread_create\n");
			return 1;
		}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "count\n")) {
			printf("rounds %lu\n", __atomic_load_n(&rounds, __ATOMIC_RELAXED));
			fflush(stdout);
		} else if (!strcmp(line, "quit\n")) {
			break;
		}
	}
	__atomic_store_n(&quit, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
