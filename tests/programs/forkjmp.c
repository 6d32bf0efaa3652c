/* SPDX-License-Identifier: MIT */
/*
 * forkjmp.c - a longjmp in a forked child to a setjmp its parent made:
 * outer() calls setjmp, then mid() -> low(), which forks; the child jumps
 * back into outer(), leaving low() and mid() (entered by the parent), and
 * calls child_after() from outer(); the parent returns normally and calls
 * parent_after().  The child knows where the jmp_buf was set only from
 * what the parent's agent knew at the fork: its events still in the ring
 * (argv[1] = 0), or already encoded by the flusher (argv[1] = a pause in ms
 * before the fork, several flush periods).
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static jmp_buf env;
static volatile int sink;
static long pause_ms;

__attribute__((noipa)) static void low(void)
{
	struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
	pid_t pid;

	while (nanosleep(&ts, &ts) != 0)
		;
	pid = fork();

	if (pid == 0)
		longjmp(env, 1);
	waitpid(pid, NULL, 0);
	sink++;
}

__attribute__((noipa)) static void mid(void)
{
	low();
	sink++;
}

__attribute__((noipa)) static void child_after(void)
{
	sink++;
}

__attribute__((noipa)) static void parent_after(void)
{
	sink++;
}

__attribute__((noipa)) static int outer(void)
{
	if (setjmp(env) != 0) {
		child_after();
		return 1;
	}
	mid();
	parent_after();
	return 0;
}

int main(int argc, char **argv)
{
	int child;

	if (argc > 1)
		pause_ms = atol(argv[1]);
	child = outer();

	printf("forkjmp: %s\n", child ? "child" : "parent");
	fflush(stdout);
	return 0;
}
