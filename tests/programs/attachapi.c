/* SPDX-License-Identifier: MIT */
/*
 * attachapi - a long-running program for `traceagent attach` that uses the
 * manual API (include/traceagent.h) and makes library calls, counting both
 * itself.  Thread "ticker" calls tick() in a loop: zone "tick", counter
 * "ticks", a frame mark, and every 10th tick the message "tick N"; then
 * sleeps 200 us (clock_nanosleep).  Thread "looper" never leaves one loop,
 * which samples counter "loop" and sleeps 1 ms (clock_nanosleep): the loop
 * began before any attach, and must see the agent come.
 * Thread "io" loops: nanosleep 1 ms, write 1 byte to a pipe, read it back,
 * malloc and free 64 bytes, lock and unlock a mutex.  tick() is not inlined
 * and its macros are in no loop, so each call reads the API's GOT entries
 * afresh (a loop's own may be read once before it).  Every return is
 * checked: a failure prints "FAIL".  Lines on stdin: "count" prints the
 * counters ("ticks T messages M io I loop L"), "user on" and "user off" switch
 * the user channel (ta_channel_set) and print what it returned ("channel
 * R": -1 without the agent), "load LIB N" dlopens LIB (attachapilib),
 * waits 300 ms (the agent looks at the modules every 50) and calls its
 * attachapilib_work(N) (N zones "lib zone", each around a nanosleep),
 * then prints "loaded", "quit" prints the final line and exits 0.
 * Usage: attachapi
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "traceagent.h"

static unsigned long n_tick, n_msg, n_io, n_loop;
static int quit;
static int pfd[2];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;

static void bad(const char *what, int err)
{
	printf("FAIL %s: %s\n", what, strerror(err));
	fflush(stdout);
	_exit(3);
}

__attribute__((noinline)) void tick(void);
__attribute__((noinline)) void tick(void)
{
	unsigned long n;

	TA_ZONE("tick");
	n = __atomic_add_fetch(&n_tick, 1, __ATOMIC_RELAXED);
	TA_COUNTER("ticks", n);
	if (n % 10 == 0) {
		__atomic_fetch_add(&n_msg, 1, __ATOMIC_RELAXED);
		TA_MESSAGE("tick %lu", n);
	}
	TA_FRAME_MARK();
}

__attribute__((no_instrument_function)) static void *ticker(void *arg)
{
	struct timespec ts = {0, 200 * 1000};
	int err;

	(void)arg;
	pthread_setname_np(pthread_self(), "ticker");
	while (!__atomic_load_n(&quit, __ATOMIC_RELAXED)) {
		tick();
		err = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		if (err)
			bad("clock_nanosleep", err);
	}
	return NULL;
}

__attribute__((no_instrument_function)) static void *looper(void *arg)
{
	struct timespec ts = {0, 1000 * 1000};
	unsigned long n;
	int err;

	(void)arg;
	pthread_setname_np(pthread_self(), "looper");
	/* Shaped so that GCC and Clang at -O2 read the GOT entry of
	 * ta_counter_ once, before the loop, with a header that lets them. */
	for (n = 1; n < (1ul << 62); n++) {
		TA_COUNTER("loop", n);
		__atomic_store_n(&n_loop, n, __ATOMIC_RELAXED);
		if (__atomic_load_n(&quit, __ATOMIC_RELAXED))
			break;
		err = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		if (err)
			bad("clock_nanosleep", err);
	}
	return NULL;
}

__attribute__((no_instrument_function)) static void *io(void *arg)
{
	struct timespec ts = {0, 1000 * 1000};
	char c = 'x';
	void *p;

	(void)arg;
	pthread_setname_np(pthread_self(), "io");
	while (!__atomic_load_n(&quit, __ATOMIC_RELAXED)) {
		if (nanosleep(&ts, NULL) < 0)
			bad("nanosleep", errno);
		if (write(pfd[1], &c, 1) != 1)
			bad("write", errno);
		if (read(pfd[0], &c, 1) != 1)
			bad("read", errno);
		p = malloc(64);
		if (!p)
			bad("malloc", ENOMEM);
		memset(p, 1, 64);
		free(p);
		pthread_mutex_lock(&m);
		/* Counted last: every call above made in a counted round. */
		__atomic_fetch_add(&n_io, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&m);
	}
	return NULL;
}

__attribute__((no_instrument_function)) int main(void)
{
	pthread_t t[3];
	char line[1024];

	if (pipe(pfd) < 0)
		bad("pipe", errno);
	if (pthread_create(&t[0], NULL, ticker, NULL) || pthread_create(&t[1], NULL, io, NULL) ||
	    pthread_create(&t[2], NULL, looper, NULL))
		bad("pthread_create", EAGAIN);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "count\n")) {
			printf("ticks %lu messages %lu io %lu loop %lu\n",
			       __atomic_load_n(&n_tick, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_msg, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_io, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_loop, __ATOMIC_RELAXED));
			fflush(stdout);
		} else if (!strcmp(line, "user on\n") || !strcmp(line, "user off\n")) {
			printf("channel %d\n", ta_channel_set("user", line[6] == 'n'));
			fflush(stdout);
		} else if (!strncmp(line, "load ", 5)) {
			char lib[512];
			int n;
			void *h;
			void (*work)(int);
			struct timespec wait = {0, 300 * 1000 * 1000};

			if (sscanf(line + 5, "%511s %d", lib, &n) != 2 ||
			    !(h = dlopen(lib, RTLD_NOW)) ||
			    !(work = (void (*)(int))dlsym(h, "attachapilib_work")))
				bad("load", ENOENT);
			clock_nanosleep(CLOCK_MONOTONIC, 0, &wait, NULL);
			work(n);
			printf("loaded\n");
			fflush(stdout);
		} else if (!strcmp(line, "quit\n")) {
			break;
		}
	}
	__atomic_store_n(&quit, 1, __ATOMIC_RELAXED);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	pthread_join(t[2], NULL);
	printf("done: ticks %s\n", n_tick > 0 && n_io > 0 ? "yes" : "no");
	return 0;
}
