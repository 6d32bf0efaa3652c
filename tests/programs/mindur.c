/* SPDX-License-Identifier: MIT */
/*
 * mindur.c - calls of known lengths for TRACEAGENT_MIN_DURATION's test
 * (tests/e2e/test_minduration.py): long calls spin 3 ms on the clock,
 * short ones do next to nothing.  A long call holds short ones; short
 * calls hold a message, a zone, or the fork; a helper thread does the
 * same; the process ends inside an open short call (exit from a
 * callee).  argv[1] "fork": the fork part too.  Prints what it did.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "traceagent.h"

static volatile unsigned sink;

static __attribute__((no_instrument_function)) double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* noinline: a function (and a row) of its own at every level. */
static __attribute__((noinline)) void tiny(void)
{
	sink++;
}

static __attribute__((noinline)) void quick(void)
{
	tiny();
	sink++;
}

/* 3 ms at least, spent here. */
static __attribute__((noinline)) void slow(void)
{
	double end = now_ms() + 3.0;

	tiny();
	while (now_ms() < end)
		sink++;
	tiny();
}

/* Short, but holds a slow call: kept as its parent. */
static __attribute__((noinline)) void outer(void)
{
	slow();
}

/* Short calls with recorded events inside (a message; a zone's text,
 * which its zone and the zone's caller need): forced out. */
static __attribute__((noinline)) void says(void)
{
	TA_MESSAGE("hello");
}

static __attribute__((noinline)) void zoned(void)
{
	TA_ZONE("z");
	TA_ZONE_TEXT("t");
}

static void *helper(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2; i++)
		slow();
	for (int i = 0; i < 50; i++)
		quick();
	return NULL;
}

/* The fork after 20 ms: the flusher has taken this call's entry from the
 * ring by then (the test's flush interval is 1 ms) and holds it back, not
 * yet knowing its length; the child starts inside it all the same. */
static __attribute__((noinline)) pid_t forks(void)
{
	double end = now_ms() + 20.0;

	while (now_ms() < end)
		sink++;
	return fork();
}

static __attribute__((noinline)) void child_part(void)
{
	slow();
	for (int i = 0; i < 20; i++)
		quick();
}

/* Short, and never left: the process ends in it. */
static __attribute__((noinline)) void finish(void)
{
	fflush(stdout);
	exit(0);
}

int main(int argc, char **argv)
{
	pthread_t th;
	pid_t pid;

	for (int i = 0; i < 10; i++)
		slow();
	for (int i = 0; i < 100; i++)
		quick();
	for (int i = 0; i < 3; i++)
		outer();
	for (int i = 0; i < 4; i++)
		says();
	for (int i = 0; i < 5; i++)
		zoned();
	if (pthread_create(&th, NULL, helper, NULL) != 0 || pthread_join(th, NULL) != 0)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		fflush(stdout);
		pid = forks();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			child_part();
			_exit(0);
		}
		waitpid(pid, NULL, 0);
	}
	printf("mindur: done\n");
	finish();
	return 1;
}
