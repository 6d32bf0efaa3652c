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
 * SIGALRM and ends the program (exit) at "quit".  WAIT malloc: the main
 * thread calls churn() for ever, which mallocs and frees blocks of 16 B
 * to 64 KiB (inside malloc, holding its arena's lock, much of the time:
 * where an attach must not call dlopen).  WAIT libc: the main thread
 * memsets 4 MiB for ever (its pc inside libc nearly always).
 * Options after WAIT ("read" for the default):
 * - dl=LIB: a thread "dlloop" dlopens LIB (libsample), calls its
 *   sample_square and dlcloses it, again and again: the dynamic loader
 *   busy (r_debug not consistent) at times.
 * - signals: a thread "forker" forks a child that exits with status 7,
 *   one at a time, every 5 ms; the thread that takes SIGALRM takes
 *   SIGCHLD (SA_SIGINFO: si_code CLD_EXITED, si_status 7 and si_pid a
 *   child that waitpid reaps, or "FAIL") and a POSIX timer's SIGRTMIN+1
 *   every 3 ms (si_code SI_TIMER and its sigev_value, or "FAIL"); the
 *   counts in "count" and at the end ("signals: ...").
 * - lockheld: a thread "holder" sits in a dl_iterate_phdr callback for
 *   ever, memsetting (its pc inside libc, never at a safe point), with the
 *   loader's write lock held: a dlopen in any other thread waits for it
 *   (the attach's call timeout).
 * "fork N" forks a child that calls mid() for N ms, then exits with status
 * 0 if leaf = 2 * mid there (3 if not); the parent answers "child PID";
 * "wait" reaps it and answers "child PID status S".
 * With NTHREADS 0, mid() and leaf() run only at "time N": counts known
 * exactly.
 * Usage: attachme NTHREADS [WAIT [OPTION...]]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long n_leaf, n_mid, n_alarm, n_churn, n_dl, n_chld, n_timer;
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

void churn(void);

/* malloc and free of blocks of 16 B to 64 KiB, 16 live at a time. */
__attribute__((noinline)) void churn(void)
{
	static void *live[16];
	static unsigned x = 12345;
	unsigned k;
	size_t size;

	x = x * 1103515245u + 12345u;
	k = (x >> 8) % 16;
	size = (size_t)16 << ((x >> 16) % 13);
	size += (x >> 4) % size;
	free(live[k]);
	live[k] = malloc(size);
	if (!live[k])
		bad("malloc", ENOMEM);
	memset(live[k], (int)k, 1);
	__atomic_fetch_add(&n_churn, 1, __ATOMIC_RELAXED);
}

static const char *dl_lib;

static int hold_forever(struct dl_phdr_info *info, size_t size, void *arg)
{
	static char buf[1 << 20];

	(void)info;
	(void)size;
	(void)arg;
	for (unsigned i = 0;; i++)
		memset(buf, (int)i, sizeof(buf));
	return 0;
}

static void *holder(void *arg)
{
	(void)arg;
	dl_iterate_phdr(hold_forever, NULL);
	return NULL;
}

static void *dlloop(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) {
		void *lib = dlopen(dl_lib, RTLD_NOW);
		int (*square)(int);

		if (!lib) {
			printf("FAIL dlopen %s: %s\n", dl_lib, dlerror());
			fflush(stdout);
			_exit(3);
		}
		*(void **)&square = dlsym(lib, "sample_square");
		if (!square || square(7) != 49) {
			printf("FAIL sample_square\n");
			fflush(stdout);
			_exit(3);
		}
		if (dlclose(lib) != 0) {
			printf("FAIL dlclose: %s\n", dlerror());
			fflush(stdout);
			_exit(3);
		}
		__atomic_fetch_add(&n_dl, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

#define TIMER_SIG   (SIGRTMIN + 1)
#define TIMER_VALUE 0x5eed

/* "fork N"'s child (fork_child). */
static pid_t child;

static void fail_in_handler(const char *msg)
{
	/* write, not stdio: async-signal-safe. */
	if (write(1, msg, strlen(msg)) < 0) {
		/* _exit all the same */
	}
	_exit(3);
}

/* The child's end as the kernel tells it, its pid reaped here. */
static void on_chld(int sig, siginfo_t *si, void *uc)
{
	int saved = errno, st;
	pid_t got;

	(void)sig;
	(void)uc;
	/* The child of "fork N" is "wait"'s (it lives N ms: child is set). */
	if (si->si_pid == __atomic_load_n(&child, __ATOMIC_RELAXED))
		return;
	if (si->si_code != CLD_EXITED || si->si_status != 7)
		fail_in_handler("FAIL SIGCHLD: si_code or si_status is not the child's exit\n");
	do
		got = waitpid(si->si_pid, &st, WNOHANG);
	while (got < 0 && errno == EINTR);
	if (got != si->si_pid || !WIFEXITED(st) || WEXITSTATUS(st) != 7)
		fail_in_handler("FAIL SIGCHLD: si_pid is not an exited child\n");
	__atomic_fetch_add(&n_chld, 1, __ATOMIC_RELEASE);
	errno = saved;
}

static void on_timer(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != SI_TIMER || si->si_value.sival_int != TIMER_VALUE)
		fail_in_handler("FAIL timer signal: si_code or si_value is not the timer's\n");
	__atomic_fetch_add(&n_timer, 1, __ATOMIC_RELAXED);
}

/* One child at a time (its SIGCHLD cannot merge with another's). */
static void *forker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&quit, __ATOMIC_ACQUIRE)) {
		unsigned long before = __atomic_load_n(&n_chld, __ATOMIC_ACQUIRE);
		struct timespec ms = {0, 1000 * 1000}, gap = {0, 5 * 1000 * 1000};
		pid_t p = fork();

		if (p < 0)
			bad("fork", errno);
		if (p == 0)
			_exit(7);
		/* Reaped by the handler within 10 s, or the signal was lost. */
		for (int i = 0; __atomic_load_n(&n_chld, __ATOMIC_ACQUIRE) == before; i++) {
			if (i == 10000) {
				printf("FAIL SIGCHLD of child %d never came\n", (int)p);
				fflush(stdout);
				_exit(3);
			}
			if (nanosleep(&ms, NULL) < 0)
				bad("nanosleep (forker)", errno);
		}
		if (nanosleep(&gap, NULL) < 0)
			bad("nanosleep (forker)", errno);
	}
	return NULL;
}

static void signals_start(void)
{
	struct sigaction sa;
	struct sigevent ev;
	struct itimerspec its = {{0, 3 * 1000 * 1000}, {0, 3 * 1000 * 1000}};
	timer_t tm;
	pthread_t f;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_chld;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	if (sigaction(SIGCHLD, &sa, NULL) < 0)
		bad("sigaction SIGCHLD", errno);
	sa.sa_sigaction = on_timer;
	if (sigaction(TIMER_SIG, &sa, NULL) < 0)
		bad("sigaction timer", errno);
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = TIMER_SIG;
	ev.sigev_value.sival_int = TIMER_VALUE;
	if (timer_create(CLOCK_MONOTONIC, &ev, &tm) < 0)
		bad("timer_create", errno);
	if (timer_settime(tm, 0, &its, NULL) < 0)
		bad("timer_settime", errno);
	if (pthread_create(&f, NULL, forker, NULL) != 0)
		bad("pthread_create forker", EAGAIN);
	pthread_setname_np(f, "forker");
	pthread_detach(f);
}

/* "fork N": a child that calls mid() for N ms (past an attach window's
 * end) and says by its status whether its counts agree. */
static void fork_child(long ms)
{
	pid_t p = fork();

	if (p < 0)
		bad("fork", errno);
	if (p == 0) {
		struct timespec a, b, gap = {0, 100 * 1000};
		unsigned long m0 = n_mid, l0 = n_leaf;

		clock_gettime(CLOCK_MONOTONIC, &a);
		do {
			for (int i = 0; i < 100; i++)
				mid();
			if (nanosleep(&gap, NULL) < 0)
				_exit(4);
			clock_gettime(CLOCK_MONOTONIC, &b);
		} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
		/* Only this thread runs mid() here (the busy threads are the
		 * parent's): its own calls, two leaf() each. */
		_exit(n_leaf - l0 == 2 * (n_mid - m0) ? 0 : 3);
	}
	__atomic_store_n(&child, p, __ATOMIC_RELAXED);
	printf("child %d\n", (int)p);
	fflush(stdout);
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
	} else if (!strcmp(how, "malloc")) {
		for (;;)
			churn();
	} else if (!strcmp(how, "libc")) {
		/* memset of 4 MiB at a time: the pc inside libc nearly always,
		 * holding no lock (the attach must call through another
		 * thread). */
		static char big[4 << 20];

		for (unsigned i = 0;; i++)
			memset(big, (int)i, sizeof(big));
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

	int sigs = 0, lockheld = 0;

	if (n < 0 || n > 64)
		n = 4;
	nthreads = n;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "signals"))
			sigs = 1;
		else if (!strncmp(argv[i], "dl=", 3))
			dl_lib = argv[i] + 3;
		else if (!strcmp(argv[i], "lockheld"))
			lockheld = 1;
	}
	ep = epoll_create1(0);
	if (ep < 0)
		bad("epoll_create1", errno);
	/* Only the main thread takes SIGALRM (its read is restarted:
	 * SA_RESTART); the other threads block it. */
	sigemptyset(&set);
	sigaddset(&set, SIGALRM);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, TIMER_SIG);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, busy, NULL);
	pthread_create(&t[n], NULL, sleeper, NULL);
	pthread_create(&t[n + 1], NULL, waiter, NULL);
	pthread_create(&t[n + 2], NULL, poller, NULL);
	pthread_create(&t[n + 3], NULL, opener, NULL);
	pthread_setname_np(t[n + 3], "opener");
	if (dl_lib) {
		pthread_t d;

		pthread_create(&d, NULL, dlloop, NULL);
		pthread_setname_np(d, "dlloop");
		pthread_detach(d);
	}
	if (lockheld) {
		pthread_t h;

		pthread_create(&h, NULL, holder, NULL);
		pthread_setname_np(h, "holder");
		pthread_detach(h);
	}
	if (sigs)
		signals_start();
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
		sigaddset(&set, SIGCHLD);
		sigaddset(&set, TIMER_SIG);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	for (;;) {
		if (!fgets(line, sizeof(line), stdin)) {
			if (ferror(stdin))
				bad("read", errno);
			break;
		}
		if (!strncmp(line, "count", 5)) {
			printf("mid %lu leaf %lu churn %lu dl %lu chld %lu timer %lu\n",
			       __atomic_load_n(&n_mid, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_leaf, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_churn, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_dl, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_chld, __ATOMIC_RELAXED),
			       __atomic_load_n(&n_timer, __ATOMIC_RELAXED));
			fflush(stdout);
		} else if (!strncmp(line, "fork ", 5)) {
			fork_child(atol(line + 5));
		} else if (!strncmp(line, "wait", 4)) {
			int st;
			pid_t got;

			do
				got = waitpid(child, &st, 0);
			while (got < 0 && errno == EINTR);
			if (got != child)
				bad("waitpid", errno);
			printf("child %d status %d\n", (int)child,
			       WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
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
	/* A run shorter than the timer's period (a test that only asks for a
	 * refusal) waits for one tick, so that "alarms" says whether the
	 * handler ran, not how long the run was; a second at most. */
	for (int i = 0; i < 100 && !__atomic_load_n(&n_alarm, __ATOMIC_RELAXED); i++)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
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
