/* SPDX-License-Identifier: MIT */
/*
 * attachme - a long-running program for `traceagent attach`: N busy threads
 * call leaf() and mid() and count their calls; other threads block in
 * nanosleep, a futex (a condition variable) and epoll_wait, the main thread
 * in read on stdin; a SIGALRM timer ticks with a handler.  Every return
 * value is checked: an EINTR is a failure.  A thread named "opener" is
 * nearly always inside outer(), which sleeps 100 ms a call: a call open
 * when an attach comes.  Lines on stdin: "count" prints the counters,
 * "load LIB N" dlopens LIB (libsample) and calls its sample_square N times,
 * "time N" calls mid() N times on the main thread and prints the ns per
 * instrumented call (three a mid: scripts/bench's attach part), "hold"
 * enters held(), which reads the lines that follow until "release" (a call
 * open across attach windows), "quit" ends with the final line.
 * With WAIT (nanosleep, futex or epoll) the main thread, the one `attach`
 * injects the agent through, waits there instead (a nanosleep of an hour,
 * a condition variable, an epoll_wait of an hour; any return but the
 * expected is a failure) and a thread "reader" reads stdin, takes the
 * SIGALRM and ends the program (exit) at "quit".
 * With NTHREADS 0, mid() and leaf() run only at "time N": counts known
 * exactly.
 * Usage: attachme NTHREADS [WAIT]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static unsigned long n_leaf, n_mid, n_alarm;
static int quit;

static void bad(const char *what, int err)
{
	printf("FAIL %s: %s\n", what, strerror(err));
	fflush(stdout);
	_exit(3);
}

void leaf(void);
void mid(void);

__attribute__((noinline)) void leaf(void)
{
	__atomic_fetch_add(&n_leaf, 1, __ATOMIC_RELAXED);
}

__attribute__((noinline)) void mid(void)
{
	__atomic_fetch_add(&n_mid, 1, __ATOMIC_RELAXED);
	leaf();
	leaf();
}

static void *busy(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) {
		struct timespec ts = {0, 100000};
		for (int i = 0; i < 100; i++)
			mid();
		if (nanosleep(&ts, NULL) < 0)
			bad("nanosleep (busy)", errno);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) {
		struct timespec ts = {0, 300 * 1000 * 1000};
		if (nanosleep(&ts, NULL) < 0)
			bad("nanosleep", errno);
	}
	return NULL;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static void *waiter(void *arg)
{
	int err;

	(void)arg;
	pthread_mutex_lock(&mu);
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
		if ((err = pthread_cond_wait(&cv, &mu)) != 0)
			bad("pthread_cond_wait", err);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static int ep;

void outer(void);

__attribute__((noinline)) void outer(void)
{
	for (int i = 0; i < 20 && !__atomic_load_n(&quit, __ATOMIC_ACQUIRE); i++) {
		struct timespec ts = {0, 5 * 1000 * 1000};
		if (nanosleep(&ts, NULL) < 0)
			bad("nanosleep (outer)", errno);
	}
}

static void *opener(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
		outer();
	return NULL;
}

static void load(const char *path, int n)
{
	void *lib = dlopen(path, RTLD_NOW);
	int (*square)(int);
	long sum = 0;

	if (!lib) {
		printf("load: %s\n", dlerror());
		fflush(stdout);
		return;
	}
	*(void **)&square = dlsym(lib, "sample_square");
	for (int i = 0; square && i < n; i++)
		sum += square(i);
	/* Kept loaded: a later window finds it there. */
	printf("square %d sum %ld\n", n, sum);
	fflush(stdout);
}

static void *poller(void *arg)
{
	struct epoll_event ev;

	(void)arg;
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE))
		if (epoll_wait(ep, &ev, 1, 200) < 0)
			bad("epoll_wait", errno);
	return NULL;
}

static void on_alarm(int sig)
{
	(void)sig;
	__atomic_fetch_add(&n_alarm, 1, __ATOMIC_RELAXED);
}

static int nthreads;
static pthread_t t[64 + 4];

static void finish(void);

/* The main thread's wait (WAIT): until the reader ends the program. */
static void main_waits(const char *how)
{
	if (!strcmp(how, "nanosleep")) {
		for (;;) {
			struct timespec ts = {3600, 0};
			if (nanosleep(&ts, NULL) < 0)
				bad("nanosleep (main)", errno);
		}
	} else if (!strcmp(how, "futex")) {
		static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
		int err;

		pthread_mutex_lock(&mu);
		for (;;)
			if ((err = pthread_cond_wait(&never, &mu)) != 0)
				bad("pthread_cond_wait (main)", err);
	} else if (!strcmp(how, "epoll")) {
		struct epoll_event ev;
		int e = epoll_create1(0);

		if (e < 0)
			bad("epoll_create1", errno);
		for (;;)
			if (epoll_wait(e, &ev, 1, 3600 * 1000) < 0)
				bad("epoll_wait (main)", errno);
	}
	printf("FAIL unknown WAIT %s\n", how);
	fflush(stdout);
	_exit(2);
}

static void *commands(void *arg);

/* "hold": the main thread reads the next lines inside this call, until
 * "release": a call open across attach windows. */
static __attribute__((noinline)) void held(void)
{
	printf("holding\n");
	fflush(stdout);
	commands(NULL);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	const char *wait = argc > 2 ? argv[2] : "read";
	struct sigaction sa;
	struct itimerval it = {{0, 10000}, {0, 10000}};
	sigset_t set;

	if (n < 0 || n > 64)
		n = 4;
	nthreads = n;
	ep = epoll_create1(0);
	if (ep < 0)
		bad("epoll_create1", errno);
	/* Only the main thread takes SIGALRM (its read is restarted:
	 * SA_RESTART); the other threads block it. */
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, busy, NULL);
	pthread_create(&t[n], NULL, sleeper, NULL);
	pthread_create(&t[n + 1], NULL, waiter, NULL);
	pthread_create(&t[n + 2], NULL, poller, NULL);
	pthread_create(&t[n + 3], NULL, opener, NULL);
	pthread_setname_np(t[n + 3], "opener");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	if (strcmp(wait, "read")) {
		/* The reader takes the SIGALRM (and its read is restarted);
		 * the main thread keeps it blocked. */
		static int reader = 1;
		pthread_t r;

		setitimer(ITIMER_REAL, &it, NULL);
		printf("ready\n");
		fflush(stdout);
		pthread_create(&r, NULL, commands, &reader);
		pthread_setname_np(r, "reader");
		main_waits(wait);
	}
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	printf("ready\n");
	fflush(stdout);
	commands(NULL);
	finish();
	return 0;
}

/* The lines on stdin, until "quit" or its end; on the reader thread
 * (arg not NULL), the program ends there. */
static void *commands(void *arg)
{
	char line[600];

	if (arg) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	for (;;) {
		if (!fgets(line, sizeof(line), stdin)) {
			if (ferror(stdin))
				bad("read", errno);
			break;
		}
		if (!strncmp(line, "count", 5)) {
			printf("mid %lu leaf %lu\n", __atomic_load_n(&n_mid, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_leaf, __ATOMIC_RELAXED));
			fflush(stdout);
		} else if (!strncmp(line, "load ", 5)) {
			char path[512];
			int k;

			if (sscanf(line + 5, "%511s %d", path, &k) == 2)
				load(path, k);
		} else if (!strncmp(line, "time ", 5)) {
			long k = atol(line + 5);
			struct timespec a, b;

			clock_gettime(CLOCK_MONOTONIC, &a);
			for (long i = 0; i < k; i++)
				mid();
			clock_gettime(CLOCK_MONOTONIC, &b);
			printf("ns %.3f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 +
					     (double)(b.tv_nsec - a.tv_nsec)) /
						(3.0 * (double)(k > 0 ? k : 1)));
			fflush(stdout);
		} else if (!strncmp(line, "hold", 4)) {
			held();
			printf("released\n");
			fflush(stdout);
		} else if (!strncmp(line, "release", 7)) {
			break;
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	if (arg) {
		finish();
		exit(0);
	}
	return NULL;
}

static void finish(void)
{
	setitimer(ITIMER_REAL, &(struct itimerval){{0, 0}, {0, 0}}, NULL);
	__atomic_store_n(&quit, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&mu);
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < nthreads + 4; i++)
		pthread_join(t[i], NULL);
	printf("done: leaf = 2 * mid: %s, alarms: %s\n", n_leaf == 2 * n_mid ? "yes" : "no",
	       n_alarm > 0 ? "yes" : "no");
	fflush(stdout);
}
