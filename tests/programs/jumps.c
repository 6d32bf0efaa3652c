/* SPDX-License-Identifier: MIT */
/*
 * jumps.c - frames left by longjmp and siglongjmp, each scenario followed by
 * a pause in the function that called setjmp, so a reader that closed the
 * abandoned frames late would charge them the pause:
 *  - deep(): setjmp, then f1 -> f2 -> f3 -> f4 -> f5, which longjmps back:
 *    five frames left; then a pause and after_deep();
 *  - rec(5): rec(3) calls setjmp, rec(0) longjmps back to it: rec(2),
 *    rec(1), rec(0) left, rec(3..5) return normally; a pause in rec(3),
 *    then after_rec();
 *  - sig_outer(): sigsetjmp, then sig_mid -> sig_inner -> raise(SIGUSR1);
 *    the handler on_signal -> handler_helper siglongjmps out: four frames
 *    left; then a pause and after_sig().
 * Built at -O2 with _FORTIFY_SOURCE, longjmp is __longjmp_chk.
 * argv[1]: the pause in ms (default 200).
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static jmp_buf env, renv;
static sigjmp_buf senv;
static volatile int sink;
static long pause_ms = 200;

/* The pause: a call of its own, so its time is not the caller's self time. */
__attribute__((noipa)) static void pause_here(void)
{
	struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((noipa)) static void f5(void)
{
	longjmp(env, 1);
}

__attribute__((noipa)) static void f4(void)
{
	f5();
	sink++;
}

__attribute__((noipa)) static void f3(void)
{
	f4();
	sink++;
}

__attribute__((noipa)) static void f2(void)
{
	f3();
	sink++;
}

__attribute__((noipa)) static void f1(void)
{
	f2();
	sink++;
}

__attribute__((noipa)) static void after_deep(void)
{
	sink++;
}

__attribute__((noipa)) static void deep(void)
{
	if (setjmp(env) == 0)
		f1();
	pause_here();
	after_deep();
}

__attribute__((noipa)) static int after_rec(void)
{
	return ++sink;
}

__attribute__((noipa)) static int rec(int n)
{
	if (n == 3 && setjmp(renv) != 0) {
		pause_here();
		return after_rec();
	}
	if (n == 0)
		longjmp(renv, 1);
	return rec(n - 1) + 1;
}

__attribute__((noipa)) static void handler_helper(void)
{
	siglongjmp(senv, 1);
}

__attribute__((noipa)) static void on_signal(int sig)
{
	(void)sig;
	handler_helper();
}

__attribute__((noipa)) static void sig_inner(void)
{
	raise(SIGUSR1);
	sink++;
}

__attribute__((noipa)) static void sig_mid(void)
{
	sig_inner();
	sink++;
}

__attribute__((noipa)) static void after_sig(void)
{
	sink++;
}

__attribute__((noipa)) static void sig_outer(void)
{
	if (sigsetjmp(senv, 1) == 0)
		sig_mid();
	pause_here();
	after_sig();
}

int main(int argc, char **argv)
{
	struct sigaction sa = {0};

	if (argc > 1)
		pause_ms = atol(argv[1]);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	deep();
	rec(5);
	sig_outer();
	printf("jumps: %d\n", sink);
	return 0;
}
