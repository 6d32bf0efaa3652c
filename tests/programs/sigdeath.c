/* SPDX-License-Identifier: MIT */
/*
 * sigdeath.c - a program that dies of a signal's default action, or keeps
 * its own handler: sigdeath MODE SIG N [THREADS].
 *
 *   raise    N calls of work(), then raise(SIG)
 *   wait     THREADS threads (default 0) and main make N calls of work()
 *            each, then main prints "ready" and waits for SIG to come
 *   pipe     N calls of work(), then lines written to stdout by emit()
 *            until a write fails (SIGPIPE when the reader is gone)
 *   own      says what sigaction shows for SIG, installs a handler of its
 *            own, raises SIG: the handler prints and the program exits 3
 *   reraise  a handler of its own that sets SIG_DFL and raises SIG again
 *            (the cleanup-then-die idiom): the program dies of SIG
 *   ignore   signal(SIG, SIG_IGN), then raise(SIG): the program goes on
 *            and exits 0
 *   nap      nap() sleeps 100 us; its length as the program measured it
 *            around the call (ns) is printed; then N calls of work() and
 *            raise(SIG) (SIGKILL: a short program killed early)
 *   doze     N calls of doze(), each a usleep of 1.5 ms; then hold()
 *            prints "ready" and sleeps (one usleep of an hour) until SIG
 *            comes: main, hold and that usleep are open at the death
 *
 * SIG is a number.  Exit 2 on a usage error.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static pthread_barrier_t ready;

__attribute__((noipa)) static void work(void)
{
	sink++;
}

__attribute__((noipa)) static void emit(unsigned long i)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "line %lu\n", i);

	if (write(1, line, (size_t)n) < 0)
		exit(4); /* no SIGPIPE: its action was not the default */
}

__attribute__((noipa)) static void nap(void)
{
	usleep(100);
}

__attribute__((noipa)) static void doze(void)
{
	usleep(1500);
}

__attribute__((noipa)) static void hold(void)
{
	printf("ready\n");
	fflush(stdout);
	/* glibc's usleep takes more than a second (POSIX need not). */
	for (;;)
		usleep(3600u * 1000000u);
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void calls(long n)
{
	for (long i = 0; i < n; i++)
		work();
}

static long n_calls;

static void *thread_main(void *arg)
{
	(void)arg;
	calls(n_calls);
	pthread_barrier_wait(&ready);
	for (;;)
		pause();
	return NULL;
}

static void own_handler(int sig)
{
	static const char msg[] = "own handler\n";

	(void)sig;
	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(5);
	_exit(3);
}

static void reraise_handler(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

static const char *action(int sig)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, &sa) < 0)
		return "error";
	if (sa.sa_handler == SIG_DFL)
		return "default";
	if (sa.sa_handler == SIG_IGN)
		return "ignored";
	return sa.sa_handler == own_handler ? "own" : "other";
}

int main(int argc, char **argv)
{
	const char *mode;
	int sig, nthreads = 0;

	if (argc < 4)
		return 2;
	mode = argv[1];
	sig = atoi(argv[2]);
	n_calls = atol(argv[3]);
	if (argc > 4)
		nthreads = atoi(argv[4]);
	if (!strcmp(mode, "raise")) {
		calls(n_calls);
		raise(sig);
		return 0;
	}
	if (!strcmp(mode, "wait")) {
		pthread_t t;

		pthread_barrier_init(&ready, NULL, (unsigned)nthreads + 1);
		for (int i = 0; i < nthreads; i++)
			if (pthread_create(&t, NULL, thread_main, NULL))
				return 2;
		calls(n_calls);
		pthread_barrier_wait(&ready);
		printf("ready\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	if (!strcmp(mode, "pipe")) {
		calls(n_calls);
		for (unsigned long i = 0;; i++)
			emit(i);
	}
	if (!strcmp(mode, "own")) {
		printf("before: %s\n", action(sig));
		if (signal(sig, own_handler) != SIG_DFL)
			printf("signal did not return SIG_DFL\n");
		printf("after: %s\n", action(sig));
		fflush(stdout);
		calls(n_calls);
		raise(sig);
		return 0;
	}
	if (!strcmp(mode, "reraise")) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = reraise_handler;
		sigemptyset(&sa.sa_mask);
		sigaction(sig, &sa, NULL);
		calls(n_calls);
		raise(sig);
		return 0;
	}
	if (!strcmp(mode, "nap")) {
		long long t0 = now_ns(), t1;

		nap();
		t1 = now_ns();
		printf("%lld\n", t1 - t0);
		fflush(stdout);
		calls(n_calls);
		raise(sig);
		return 0;
	}
	if (!strcmp(mode, "doze")) {
		for (long i = 0; i < n_calls; i++)
			doze();
		hold();
	}
	if (!strcmp(mode, "ignore")) {
		signal(sig, SIG_IGN);
		calls(n_calls);
		raise(sig);
		printf("after: %s\n", action(sig));
		return 0;
	}
	return 2;
}
