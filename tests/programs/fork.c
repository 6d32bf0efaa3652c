/* SPDX-License-Identifier: MIT */
/*
 * fork.c - the parent calls parent_work() 3 times, forks, and the child
 * calls child_work() 5 times; both processes write to one dump.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noipa)) static void parent_work(void)
{
	sink++;
}

__attribute__((noipa)) static void child_work(void)
{
	sink--;
}

int main(void)
{
	int status;
	pid_t pid;

	for (int i = 0; i < 3; i++)
		parent_work();
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (pid == 0) {
		for (int i = 0; i < 5; i++)
			child_work();
		printf("fork: child done\n");
		return 0;
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "fork: child failed\n");
		return 1;
	}
	printf("fork: parent done\n");
	return 0;
}
