/* SPDX-License-Identifier: MIT */
/*
 * spawn.c - calls work() 3 times, starts the program named on the command
 * line with posix_spawn and then with vfork + execv (neither child runs
 * instrumented code), and calls work() once more.
 */
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile int sink;

__attribute__((noipa)) static void work(void)
{
	sink++;
}

int main(int argc, char **argv)
{
	pid_t pid;
	int st1 = -1, st2 = -1;

	if (argc < 2)
		return 2;
	for (int i = 0; i < 3; i++)
		work();
	if (posix_spawn(&pid, argv[1], NULL, NULL, argv + 1, environ) == 0)
		waitpid(pid, &st1, 0);
	pid = vfork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &st2, 0);
	work();
	printf("spawned %d %d\n", st1, st2);
	return 0;
}
