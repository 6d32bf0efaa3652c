/* SPDX-License-Identifier: MIT */
/*
 * sigdeep.c - signal handlers that record far more events than the agent's
 * small buffer for nested events holds: a timer signal every
 * 2 ms lands in the middle of the main loop's hooks or in their slow path
 * (run with tiny blocks, the slow path comes every few hundred events), and
 * its handler makes a deep recursion and raises a second signal whose
 * handler, run inside the first, recurses again.  Every one of those events
 * is put aside until the interrupted hook ends.  The program counts its own
 * calls and prints them: the trace must hold exactly these, none lost.
 *
 * Usage: sigdeep [CALLS [DEPTH]]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t alarms, usr1s;
static volatile long deep_calls;
static volatile int sink;
static int depth = 200;

__attribute__((noipa)) static void deep(int n)
{
	deep_calls++;
	if (n > 1)
		deep(n - 1);
	sink++;
}

__attribute__((noipa)) static void on_usr1(int sig)
{
	(void)sig;
	deep(depth);
	usr1s++;
}

__attribute__((noipa)) static void on_alarm(int sig)
{
	(void)sig;
	deep(depth);
	/* Delivered before raise returns: a handler inside the handler. */
	raise(SIGUSR1);
	alarms++;
}

__attribute__((noipa)) static void work(void)
{
	sink--;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 1000000;
	static char altstack[1 << 16];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
	struct itimerval it = {{0, 2000}, {0, 2000}};
	struct sigaction sa;
	sigset_t block;

	if (argc > 2)
		depth = atoi(argv[2]);
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < calls; i++)
		work();
	/* No more signals: the counts printed are final. */
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, NULL);
	printf("work %ld on_alarm %d on_usr1 %d deep %ld\n", calls, (int)alarms, (int)usr1s,
	       deep_calls);
	return 0;
}
