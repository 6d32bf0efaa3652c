/* SPDX-License-Identifier: MIT */
/*
 * sigjump.c - a timer signal every 200 us whose handler siglongjmps out,
 * as programs with a timeout do, while the main loop makes tiny calls: many
 * signals land in the middle of a hook or of the agent's slow path, which
 * the jump then abandons.  The program counts its own calls and prints
 * them with the jumps it took.  argv[2], if there, is the timer's period in
 * microseconds.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static sigjmp_buf again;
static volatile sig_atomic_t jumps;
static volatile long leaves;

__attribute__((noipa)) static void leaf(void)
{
	leaves++;
}

__attribute__((noipa)) static void on_alarm(int sig)
{
	(void)sig;
	jumps++;
	siglongjmp(again, 1);
}

int main(int argc, char **argv)
{
	long want = argc > 1 ? atol(argv[1]) : 1000000;
	long us = argc > 2 ? atol(argv[2]) : 200;
	struct itimerval it = {{us / 1000000, us % 1000000}, {us / 1000000, us % 1000000}};
	struct sigaction sa = {0};

	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	/* The timer after the jump buffer is filled: a signal before it
	 * would jump nowhere (under qemu-user with the agent the first
	 * calls take longer than the period). */
	if (!sigsetjmp(again, 1))
		setitimer(ITIMER_REAL, &it, NULL);
	while (leaves < want)
		leaf();
	it.it_value.tv_usec = it.it_interval.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	printf("leaf %ld on_alarm %d\n", leaves, (int)jumps);
	return 0;
}
