/* SPDX-License-Identifier: MIT */
/*
 * apifiber.c - a fiber switched out inside a call and resumed on another
 * thread (tests/e2e/test_apimem.py): the fiber "worker" (a ucontext of its
 * own) runs part(1) on the main thread, yields inside fiber_yield (LEAVE,
 * then a switch back to the main thread's scheduler), and is resumed by a
 * second thread, where it returns from fiber_yield (ENTER again) and runs
 * part(2).  Each part makes one zone "part".
 */
#include <pthread.h>
#include <stdlib.h>
#include <ucontext.h>

#include <traceagent.h>

static ucontext_t fib;
static ucontext_t *back; /* the context that resumed the fiber */
volatile int sink;

__attribute__((noinline)) static void part(int i)
{
	TA_ZONE("part");
	sink += i;
}

__attribute__((noinline)) static void fiber_yield(void)
{
	TA_FIBER_LEAVE();
	swapcontext(&fib, back);
	TA_FIBER_ENTER("worker");
}

__attribute__((noinline)) static void fiber_main(void)
{
	TA_FIBER_ENTER("worker");
	part(1);
	fiber_yield();
	part(2);
	TA_FIBER_LEAVE();
	swapcontext(&fib, back);
}

/* Runs the fiber until it switches back. */
__attribute__((noinline)) static void resume(void)
{
	ucontext_t here;

	back = &here;
	swapcontext(&here, &fib);
}

static void *second(void *arg)
{
	(void)arg;
	resume();
	return NULL;
}

int main(void)
{
	static char stack[1 << 18];
	pthread_t th;

	if (getcontext(&fib) != 0)
		return 1;
	fib.uc_stack.ss_sp = stack;
	fib.uc_stack.ss_size = sizeof(stack);
	fib.uc_link = NULL;
	makecontext(&fib, fiber_main, 0);
	resume();
	if (pthread_create(&th, NULL, second, NULL) != 0 || pthread_join(th, NULL) != 0)
		return 1;
	return sink == 3 ? 0 : 1;
}
