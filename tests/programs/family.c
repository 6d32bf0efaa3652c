/* SPDX-License-Identifier: MIT */
/*
 * family.c - a process tree started every way a program starts another:
 * calls work() once, then runs itself as "child K" (which calls work() K
 * times) by posix_spawn (K = 2), vfork + execv (3), system() (4), fork +
 * execv with no instrumented call before the exec (5), and fork, one
 * work() call, then execv (6: a process of two images, 7 calls).  Each
 * child prints "child K pid PID ppid PPID"; the parent then "parent PID".
 *
 * usage: family             the tree
 *        family child K     one child
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))

extern char **environ;
static volatile int sink;
static char name[] = "family", role[] = "child", k2[] = "2", k3[] = "3", k5[] = "5", k6[] = "6";

__attribute__((noipa)) static void work(void)
{
	sink++;
}

/* The child's status, 0 when it exited 0. */
NOINST static int waited(pid_t pid)
{
	int st;

	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

NOINST static int run_fork(const char *self, int work_first, char *k)
{
	char *args[] = {name, role, k, NULL};
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		if (work_first)
			work();
		execv(self, args);
		_exit(127);
	}
	return waited(pid);
}

int main(int argc, char **argv)
{
	char self[4096], cmd[4200];
	char *a2[] = {name, role, k2, NULL};
	char *a3[] = {name, role, k3, NULL};
	ssize_t n;
	pid_t pid;
	int st[5];

	if (argc == 3) {
		for (int i = atoi(argv[2]); i > 0; i--)
			work();
		printf("child %s pid %d ppid %d\n", argv[2], (int)getpid(), (int)getppid());
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 2;
	self[n] = 0;
	work();
	fflush(stdout);
	st[0] = posix_spawn(&pid, self, NULL, NULL, a2, environ) ? -1 : waited(pid);
	pid = vfork();
	if (pid == 0) {
		execv(self, a3);
		_exit(127);
	}
	st[1] = waited(pid);
	snprintf(cmd, sizeof(cmd), "'%s' child 4", self);
	st[2] = system(cmd);
	st[3] = run_fork(self, 0, k5);
	st[4] = run_fork(self, 1, k6);
	for (int i = 0; i < 5; i++)
		if (st[i]) {
			fprintf(stderr, "family: child %d failed: %d\n", i + 2, st[i]);
			return 1;
		}
	printf("parent %d\n", (int)getpid());
	return 0;
}
