/* SPDX-License-Identifier: MIT */
/*
 * status.c - ways a program can end, for the loader's tests:
 *   status exit N     prints a line, exits with N
 *   status signal N   prints a line, kills itself with signal N
 *   status wait       prints "ready", waits for SIGUSR1, SIGUSR2, SIGHUP or
 *                     SIGINT, prints "got N" and exits with N (other signals
 *                     keep their default action)
 *   status cat        copies stdin to stdout
 *   status _exit N    prints a line, leaves with _exit(N) from leave(), so
 *                     neither main nor leave returns and no destructor runs
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	got = sig;
}

__attribute__((noipa)) static int wait_for_signal(void)
{
	static const int sigs[] = {SIGUSR1, SIGUSR2, SIGHUP, SIGINT};
	struct sigaction act;
	sigset_t block, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = on_signal;
	sigemptyset(&block);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaction(sigs[i], &act, NULL);
		sigaddset(&block, sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &block, &old);
	printf("ready\n");
	fflush(stdout);
	while (!got)
		sigsuspend(&old);
	printf("got %d\n", (int)got);
	return got;
}

__attribute__((noipa)) static void copy(void)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(0, buf, sizeof(buf))) > 0)
		if (write(1, buf, (size_t)n) != n)
			exit(1);
}

__attribute__((noipa)) static void leave(int status)
{
	fflush(stdout);
	_exit(status);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "exit")) {
		printf("exiting with %d\n", atoi(argv[2]));
		return atoi(argv[2]);
	}
	if (argc == 3 && !strcmp(argv[1], "signal")) {
		printf("raising %d\n", atoi(argv[2]));
		fflush(stdout);
		signal(atoi(argv[2]), SIG_DFL);
		raise(atoi(argv[2]));
		return 1;
	}
	if (argc == 2 && !strcmp(argv[1], "wait"))
		return wait_for_signal();
	if (argc == 2 && !strcmp(argv[1], "cat")) {
		copy();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "_exit")) {
		printf("leaving with %d\n", atoi(argv[2]));
		leave(atoi(argv[2]));
	}
	fprintf(stderr, "usage: status exit N | signal N | wait | cat | _exit N\n");
	return 2;
}
