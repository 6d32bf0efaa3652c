/* SPDX-License-Identifier: MIT */
/*
 * crash.c - calls work() 7 times, then crashes inside deeper() > fault()
 * the way argv[1] says: segv, abort, fpe, ill or bus; or overflow: fault()
 * calls recurse(), which calls itself until the stack is exhausted.
 * With altstack it does not crash: it says what sigaltstack shows before
 * and after it sets its own alternate stack, and where a SA_ONSTACK
 * handler then runs.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noipa)) static void work(void)
{
	sink++;
}

/* A page of locals a call: the overflow faults in this function's own
 * prologue (its stack probe, or its call's push), not in a callee.  The
 * recursion is meant to be endless. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winfinite-recursion"
__attribute__((noipa)) static unsigned long recurse(unsigned long n)
{
	volatile char pad[4096];

	pad[n % sizeof(pad)] = (char)n;
	return recurse(n + 1) + pad[(n * 7) % sizeof(pad)];
}
#pragma GCC diagnostic pop

__attribute__((noipa)) static void fault(const char *how)
{
	if (!strcmp(how, "overflow")) {
		sink = (int)recurse(0);
	} else if (!strcmp(how, "segv")) {
		volatile uintptr_t bad = 16;
		*(volatile int *)bad = 1;
	} else if (!strcmp(how, "abort")) {
		abort();
	} else if (!strcmp(how, "fpe")) {
		volatile int zero = 0;
		sink = 10 / zero;
	} else if (!strcmp(how, "ill")) {
#if defined(__aarch64__)
		/* __builtin_trap is brk there: SIGTRAP.  udf is undefined. */
		__asm__ volatile("udf #0");
#else
		__builtin_trap();
#endif
	} else if (!strcmp(how, "bus")) {
		/* A mapping past the end of its file. */
		FILE *f = tmpfile();
		volatile char *p =
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
		p[0] = 1;
	}
}

__attribute__((noipa)) static void deeper(const char *how)
{
	work();
	fault(how);
}

static char own_stack[64 << 10];
static volatile int handler_on_own;

static void on_usr1(int sig)
{
	char here;

	(void)sig;
	handler_on_own = &here >= own_stack && &here < own_stack + sizeof(own_stack);
}

static int altstack(void)
{
	stack_t old, ss, cur;
	struct sigaction sa;

	if (sigaltstack(NULL, &old) < 0)
		return 1;
	printf("before: %s\n", old.ss_flags & SS_DISABLE ? "disabled" : "enabled");
	ss.ss_sp = own_stack;
	ss.ss_size = sizeof(own_stack);
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) < 0 || sigaltstack(NULL, &cur) < 0)
		return 1;
	printf("after: %s\n",
	       cur.ss_sp == own_stack && !(cur.ss_flags & SS_DISABLE) ? "own" : "other");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	printf("handler: %s\n", handler_on_own ? "on own" : "elsewhere");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "altstack"))
		return altstack();
	for (int i = 0; i < 7; i++)
		work();
	fflush(stdout);
	deeper(argc > 1 ? argv[1] : "segv");
	return 0;
}
