/* SPDX-License-Identifier: MIT */
/*
 * mindur.c - calls of known lengths for TRACEAGENT_MIN_DURATION's test
 * (tests/e2e/test_minduration.py): long calls spin 3 ms on the clock,
 * short ones do next to nothing.  A long call holds short ones; short
 * calls hold a message, a zone, or the fork; a helper thread does the
 * same; the process ends inside an open short call (exit from a
 * callee).  argv[1] "fork": the fork part too; "flush": main asks its
 * agent to write what it holds after each of its first 10 long calls
 * (the control socket in $XDG_RUNTIME_DIR, as `traceagent ctl PID flush`
 * would), so that the dump has at least 10 chunks of events whatever the
 * flusher's timing.  Prints what it did.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
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

/* "flush" to this process's agent, its answer awaited: the agent answers
 * once what its rings held is in the dump.  Raw system calls: libc's
 * would be recorded library calls.  Exits 1, saying why, on failure; the
 * socket may not be there yet (the agent makes it as it starts): tried
 * again for up to 10 s. */
static __attribute__((no_instrument_function)) void flush_agent(void)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	char answer[64];
	long n = 0, fd = -1;

	if (!xdg || xdg[0] != '/' ||
	    (size_t)snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/traceagent/%ld.sock", xdg,
			     (long)getpid()) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "mindur: flush needs XDG_RUNTIME_DIR, an absolute path\n");
		exit(1);
	}
	for (int i = 0; i < 1000; i++) {
		struct timespec ts = {0, 10000000};

		fd = syscall(SYS_socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && syscall(SYS_connect, fd, &sun, sizeof(sun)) == 0)
			break;
		if (fd >= 0)
			syscall(SYS_close, fd);
		fd = -1;
		syscall(SYS_nanosleep, &ts, NULL);
	}
	if (fd < 0 || syscall(SYS_write, fd, "flush\n", 6) != 6 ||
	    (n = syscall(SYS_read, fd, answer, sizeof(answer) - 1)) <= 0) {
		fprintf(stderr, "mindur: no answer to flush from %s\n", sun.sun_path);
		exit(1);
	}
	answer[n] = 0;
	if (strcmp(answer, "ok\n")) {
		fprintf(stderr, "mindur: flush answered %s", answer);
		exit(1);
	}
	syscall(SYS_close, fd);
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
	int flush = argc > 1 && !strcmp(argv[1], "flush");

	for (int i = 0; i < 10; i++) {
		slow();
		if (flush)
			flush_agent();
	}
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
