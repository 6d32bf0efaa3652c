/* SPDX-License-Identifier: MIT */
/*
 * patchme.c - a program built WITHOUT -finstrument-functions, traced by
 * patching its function entries (TRACEAGENT_PATCH).  It counts its own
 * calls, so the tests compare the trace with an independent count:
 *
 *   patchme fib N       fib(N), which calls fib 2*F(N+1)-1 times
 *   patchme threads     8 threads: thread i calls work() i+1 times, each
 *                       work() calls step() 10 times (worker 8, work 36,
 *                       step 360)
 *   patchme refuse      calls the crafted functions of patch_asm.S that
 *                       the patcher must refuse, and a few it must not
 *   patchme longjmp N   N times: jumper() recurses 3 deep and longjmps
 *                       back; then fib(10)
 *   patchme deep N      a recursion N deep (past the return stack's 1024)
 *   patchme deepind N   the same by ta_deep_ind, which has an indirect jump
 *   patchme tail        tail calls (ta_tail 3 times, ta_ctail twice with a
 *                       tail call and once without: ta_leaf 5 times), a
 *                       jump table (ta_table 4 times) and ta_selfaddr,
 *                       which returns its own address (self=1)
 *   patchme signal N    N raise(SIGUSR1)s whose handler calls fib(5)
 *   patchme crash       crasher() recurses 3 deep and writes through NULL
 *   patchme smallstack  a thread with the smallest stack allowed
 *                       (PTHREAD_STACK_MIN) calls work() once
 *   patchme stdin       runs until "quit" on stdin, a thread calling
 *                       work() all the while; "fib N" prints fib(N) and
 *                       the fib calls it made (traceagent attach --patch);
 *                       "load LIB" dlopens LIB, "square N" calls its
 *                       plib_square N times and prints the sum, "call
 *                       NAME N" calls its int NAME(int) and prints the
 *                       result
 *   patchme dlopen LIB N  twice: dlopens LIB (libpatchlib.so), calls its
 *                       plib_square N times (plib_twice as often), dlcloses
 *                       it
 *
 * Each prints its results and "calls NAME=COUNT" for its own counters.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The counters; atomics where threads share them.  The increment is the
 * first thing most functions do: an instruction with a RIP-relative
 * operand in the bytes the patcher moves. */
static unsigned long n_fib, n_jumper, n_deep, n_vsum;
static unsigned long n_work, n_step, n_worker;

/* Extern, so that -fcf-protection=full gives them an endbr64 (it leaves
 * static functions whose address is not taken without). */
long fib(int n);
double vsum(int n, ...);
unsigned long step(unsigned long x);
unsigned long work(unsigned long x);

/* The barrier keeps both calls real calls: without it GCC turns the second
 * recursion into a loop at -O2. */
__attribute__((noipa)) long fib(int n)
{
	long a, b;

	__atomic_add_fetch(&n_fib, 1, __ATOMIC_RELAXED);
	if (n < 2)
		return n;
	a = fib(n - 1);
	b = fib(n - 2);
	__asm__ volatile("" : "+r"(a), "+r"(b));
	return a + b;
}

/* Varargs and floating-point arguments go through the stub intact. */
__attribute__((noipa)) double vsum(int n, ...)
{
	va_list ap;
	double s = 0;

	n_vsum++;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, double);
	va_end(ap);
	return s;
}

__attribute__((noipa)) unsigned long step(unsigned long x)
{
	__atomic_add_fetch(&n_step, 1, __ATOMIC_RELAXED);
	return x * 2654435761u + 1;
}

__attribute__((noipa)) unsigned long work(unsigned long x)
{
	__atomic_add_fetch(&n_work, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < 10; i++)
		x = step(x);
	return x;
}

static pthread_barrier_t start;

__attribute__((noipa)) static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned long x = (unsigned long)id;

	__atomic_add_fetch(&n_worker, 1, __ATOMIC_RELAXED);
	pthread_barrier_wait(&start);
	for (long i = 0; i <= id; i++)
		x = work(x);
	return (void *)x;
}

static jmp_buf env;

__attribute__((noipa)) static void jumper(int depth)
{
	n_jumper++;
	if (depth > 100)
		return;
	if (depth == 0)
		longjmp(env, 1);
	jumper(depth - 1);
	__asm__ volatile("");
}

__attribute__((noipa)) static void crasher(int depth)
{
	if (depth > 0)
		crasher(depth - 1);
	else
		*(volatile int *)(uintptr_t)depth = 1;
	__asm__ volatile("");
}

__attribute__((noipa)) static long deep(int n)
{
	long r;

	n_deep++;
	if (n == 0)
		return 0;
	r = deep(n - 1) + 1;
	__asm__ volatile("" : "+r"(r));
	return r;
}

/* patch_asm.S */
void ta_short(void);
int ta_jump_in(int n);
int ta_jrcxz(long n);
int ta_ripload(void);
int ta_keeper(void);
long ta_retn_caller(void);
void *ta_whereami(void);
int ta_hot(int x);
int ta_sse(void);
int ta_tail(int x);
int ta_ctail(int x);
int ta_table(int k);
void *ta_selfaddr(void);
int ta_deep_ind(int n);
extern unsigned long ta_tail_count, ta_deep_count;

static void on_usr1(int sig)
{
	(void)sig;
	fib(5);
}

static int stdin_quit;

__attribute__((noipa)) static void *spinner(void *arg)
{
	unsigned long x = 1;

	(void)arg;
	while (!__atomic_load_n(&stdin_quit, __ATOMIC_ACQUIRE))
		x = work(x);
	return (void *)x;
}

/* `patchme stdin`: patched while it runs. */
static int from_stdin(void)
{
	char line[PATH_MAX];
	pthread_t t;

	if (pthread_create(&t, NULL, spinner, NULL) != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	void *lib = NULL;

	while (fgets(line, sizeof(line), stdin) && strncmp(line, "quit", 4)) {
		line[strcspn(line, "\n")] = 0;
		if (!strncmp(line, "load ", 5)) {
			/* A module dlopen'ed while an attach's window is open. */
			lib = dlopen(line + 5, RTLD_NOW);
			printf("%s\n", lib ? "loaded" : dlerror());
			fflush(stdout);
		} else if (!strncmp(line, "square ", 7) && lib) {
			int (*square)(int);
			long sum = 0;

			*(void **)&square = dlsym(lib, "plib_square");
			for (int i = 0; i < atoi(line + 7); i++)
				sum += square(i);
			printf("sum = %ld\n", sum);
			fflush(stdout);
		} else if (!strncmp(line, "call ", 5) && lib) {
			/* "call NAME N": the loaded library's int NAME(int). */
			char name[64];
			int (*f)(int);
			int k;

			if (sscanf(line + 5, "%63s %d", name, &k) == 2 &&
			    (*(void **)&f = dlsym(lib, name)) != NULL)
				printf("%s(%d) = %d\n", name, k, f(k));
			else
				printf("no %s\n", line + 5);
			fflush(stdout);
		} else if (!strncmp(line, "fib ", 4)) {
			unsigned long before = __atomic_load_n(&n_fib, __ATOMIC_RELAXED);
			int k = atoi(line + 4);
			long r = fib(k);

			printf("fib(%d) = %ld calls %lu\n", k, r,
			       __atomic_load_n(&n_fib, __ATOMIC_RELAXED) - before);
			fflush(stdout);
		}
	}
	__atomic_store_n(&stdin_quit, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	printf("done\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "fib";
	int n = argc > 2 ? atoi(argv[2]) : 20;

	if (strcmp(what, "stdin") == 0)
		return from_stdin();
	if (strcmp(what, "fib") == 0) {
		printf("fib(%d) = %ld\n", n, fib(n));
		printf("vsum = %g\n", vsum(3, 1.5, 2.25, 4.0));
		printf("calls fib=%lu vsum=%lu\n", n_fib, n_vsum);
	} else if (strcmp(what, "threads") == 0) {
		pthread_t t[8];
		unsigned long sum = 0;
		pthread_barrier_init(&start, NULL, 8);
		for (long i = 0; i < 8; i++)
			if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
				return 1;
		for (int i = 0; i < 8; i++) {
			void *r;
			pthread_join(t[i], &r);
			sum += (unsigned long)r;
		}
		printf("sum = %lu\n", sum);
		printf("calls worker=%lu work=%lu step=%lu\n", n_worker, n_work, n_step);
	} else if (strcmp(what, "refuse") == 0) {
		ta_short();
		printf("jump_in=%d jrcxz=%d,%d ripload=%d keeper=%d\n", ta_jump_in(7), ta_jrcxz(0),
		       ta_jrcxz(5), ta_ripload(), ta_keeper());
		printf("retn=%ld whereami=%d hot=%d,%d sse=%d\n", ta_retn_caller(),
		       ta_whereami() != NULL, ta_hot(0), ta_hot(1), ta_sse());
	} else if (strcmp(what, "longjmp") == 0) {
		for (int i = 0; i < n; i++)
			if (setjmp(env) == 0)
				jumper(3);
		printf("fib(10) = %ld\n", fib(10));
		printf("calls jumper=%lu fib=%lu\n", n_jumper, n_fib);
	} else if (strcmp(what, "deep") == 0) {
		printf("deep(%d) = %ld\n", n, deep(n));
		printf("calls deep=%lu\n", n_deep);
	} else if (strcmp(what, "deepind") == 0) {
		printf("ta_deep_ind(%d) = %d\n", n, ta_deep_ind(n));
		printf("calls ta_deep_ind=%lu\n", ta_deep_count);
	} else if (strcmp(what, "tail") == 0) {
		int sum = 0;
		for (int i = 0; i < 3; i++)
			sum += ta_tail(i);
		sum += ta_ctail(1) + ta_ctail(2) + ta_ctail(0);
		for (int k = 0; k < 4; k++)
			sum += ta_table(k);
		/* 3 x 7 + 7 + 7 + 3 + 10 + 11 + 12 + 13 */
		printf("sum = %d\nself=%d\n", sum, ta_selfaddr() == (void *)ta_selfaddr);
		printf("calls tail+table=%lu\n", ta_tail_count);
	} else if (strcmp(what, "signal") == 0) {
		signal(SIGUSR1, on_usr1);
		for (int i = 0; i < n; i++)
			raise(SIGUSR1);
		printf("calls fib=%lu\n", n_fib);
	} else if (strcmp(what, "crash") == 0) {
		crasher(3);
	} else if (strcmp(what, "smallstack") == 0) {
		pthread_attr_t a;
		pthread_t t;
		void *r;
		int err;
		pthread_barrier_init(&start, NULL, 1);
		pthread_attr_init(&a);
		pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN);
		err = pthread_create(&t, &a, worker, (void *)0);
		if (err) {
			fprintf(stderr, "patchme: pthread_create: %s\n", strerror(err));
			return 1;
		}
		pthread_join(t, &r);
		printf("calls worker=%lu work=%lu step=%lu\n", n_worker, n_work, n_step);
	} else if (strcmp(what, "dlopen") == 0 && argc > 3) {
		int count = atoi(argv[3]);
		long sum = 0;
		for (int round = 0; round < 2; round++) {
			void *h = dlopen(argv[2], RTLD_NOW);
			int (*square)(int);
			if (!h) {
				fprintf(stderr, "patchme: %s\n", dlerror());
				return 1;
			}
			*(void **)&square = dlsym(h, "plib_square");
			for (int i = 0; i < count; i++)
				sum += square(i);
			dlclose(h);
		}
		printf("sum = %ld\ncalls plib_square=%d\n", sum, 2 * count);
	} else {
		fprintf(stderr, "patchme: unknown test %s\n", what);
		return 2;
	}
	return 0;
}
