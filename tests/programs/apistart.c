/* SPDX-License-Identifier: MIT */
/*
 * apistart.c - the manual API from the first instant: two worker threads
 * each run JOBS zones "job" (each with a counter sample "done") before
 * anything else in the process calls the API or an instrumented function,
 * so that their events are made while the agent starts: the first one's
 * first zone starts it, and the second begins DELAY_NS after the first is
 * about to (it waits for the first's word), so that it may well find the
 * agent starting (that depends on timing: a test runs it several times).
 * Then the main thread makes its first API call, a zone "main".  So: job
 * JOBS * 2, main 1, done JOBS * 2 samples.
 *
 * With the argument "fork", the process then forks and the child does the
 * same (its two workers from its first instant, while its agent restarts;
 * then its own "main"), so each process has exactly those counts.
 *
 * With "forkstart", one worker runs its JOBS zones (the first starting the
 * agent) while the main thread forks as soon as the dump
 * ($TRACEAGENT_OUTPUT) exists, which the start creates long before it
 * ends: a fork while another thread starts the agent.  The child does as
 * with "fork"; the parent then makes its "main" zone.  So the parent has
 * job JOBS, done JOBS, main 1; the child job JOBS * 2, done JOBS * 2, main
 * 1.  A child that does not end within 60 s is killed, and the parent
 * exits 1.
 *
 * Nothing here is instrumented (no_instrument_function): only the API's
 * events are recorded.  It prints one line per process that does not
 * depend on timing and exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "traceagent.h"

#define JOBS	 300
#define DELAY_NS 20000
#define NI	 __attribute__((no_instrument_function))

static int first_going;
static volatile unsigned long sink;

NI static void *worker(void *arg)
{
	/* The second waits for the first's word (acquire, pairs with the
	 * release below: only an order, no data), then a moment more: past
	 * the first's claim of the start, into it if the start is slow. */
	if (arg) {
		struct timespec t0, t;

		while (!__atomic_load_n(&first_going, __ATOMIC_ACQUIRE))
			sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < DELAY_NS);
	} else
		__atomic_store_n(&first_going, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < JOBS; i++) {
		TA_ZONE("job");
		TA_COUNTER("done", i);
		sink += (unsigned long)i;
	}
	return NULL;
}

/* Two workers at once, then the calling thread's first API call. */
NI static int run(const char *who)
{
	pthread_t t[2];

	__atomic_store_n(&first_going, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, i ? &t[0] : NULL) != 0) {
			fprintf(stderr, "apistart: pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	{
		TA_ZONE("main");
		sink++;
	}
	printf("apistart: %s done\n", who);
	fflush(stdout);
	return 0;
}

/* Waits (60 s at most: emulated, on a busy machine) for child pid to exit
 * 0; kills it if it has not. */
NI static int child_ok(pid_t pid)
{
	int status;

	for (int i = 0; i < 60000; i++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			return WIFEXITED(status) && WEXITSTATUS(status) == 0;
		if (r < 0)
			return 0;
		nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fprintf(stderr, "apistart: the child hung\n");
	return 0;
}

/* "forkstart": a fork while the agent starts. */
NI static int fork_while_starting(void)
{
	const char *dump = getenv("TRACEAGENT_OUTPUT");
	struct timespec t0, now;
	struct stat st;
	pthread_t t;
	pid_t pid;

	__atomic_store_n(&first_going, 0, __ATOMIC_RELAXED);
	if (pthread_create(&t, NULL, worker, NULL) != 0) {
		fprintf(stderr, "apistart: pthread_create failed\n");
		return 1;
	}
	/* Acquire: pairs with the worker's release (an order only). */
	while (!__atomic_load_n(&first_going, __ATOMIC_ACQUIRE))
		sched_yield();
	/* As soon as it appears; 10 s at most: a dump that is no file (a
	 * stream) never does. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (dump && stat(dump, &st) < 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec > 10)
			break;
		sched_yield();
	}
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		_exit(run("child"));
	pthread_join(t, NULL);
	{
		TA_ZONE("main");
		sink++;
	}
	printf("apistart: parent done\n");
	return child_ok(pid) ? 0 : 1;
}

NI int main(int argc, char **argv)
{
	int status;
	pid_t pid;

	if (argc > 1 && !strcmp(argv[1], "forkstart"))
		return fork_while_starting();

	if (run(argc > 1 && !strcmp(argv[1], "fork") ? "parent" : "process"))
		return 1;
	if (argc < 2 || strcmp(argv[1], "fork"))
		return 0;
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0)
		return run("child");
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "apistart: the child failed\n");
		return 1;
	}
	return 0;
}
