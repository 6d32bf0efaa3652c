/* SPDX-License-Identifier: MIT */
/*
 * sigstorm.c - a timer signal every 50 us runs instrumented code in its
 * handler, on an alternate signal stack, while the main loop makes tiny
 * calls: many signals land in the middle of a hook.  The program counts
 * its own calls and prints them: the trace must hold exactly these.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile sig_atomic_t handled;
static volatile int sink;

__attribute__((noipa)) static void in_handler(void)
{
	sink++;
}

__attribute__((noipa)) static void on_alarm(int sig)
{
	(void)sig;
	in_handler();
	handled++;
}

__attribute__((noipa)) static void work(void)
{
	sink--;
}

int main(int argc, char **argv)
{
	long calls = argc > 1 ? atol(argv[1]) : 2000000;
	static char altstack[1 << 16];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};
	struct sigaction sa;
	struct itimerval it = {{0, 50}, {0, 50}};
	sigset_t block;

	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < calls; i++)
		work();
	/* No more signals: the counts printed are final. */
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	sigprocmask(SIG_BLOCK, &block, NULL);
	printf("work %ld on_alarm %d in_handler %d\n", calls, (int)handled, (int)handled);
	return 0;
}
