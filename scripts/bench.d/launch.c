/* SPDX-License-Identifier: MIT */
/*
 * launch.c - runs a command and writes down what it cost, for scripts/bench.
 *
 * Usage: launch RESULT [NAME=VALUE...] -- PROG [ARG...]
 * Sets the NAME=VALUE pairs in the command's environment only (LD_PRELOAD
 * must not reach the launcher itself), runs it, then writes
 * "WALL_NS UTIME_NS STIME_NS MAXRSS_KIB STATUS\n" to RESULT and exits with
 * the command's exit status (128 + signal number if it was killed).
 *
 * Why not Python's own wait4: subprocess may vfork from the interpreter, and
 * a child's peak RSS (ru_maxrss) then starts at the interpreter's size, which
 * hides the small programs' own.  Forked from this small process it starts
 * at this one's, below any program's.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long ns_of(struct timeval tv)
{
	return (long long)tv.tv_sec * 1000000000LL + (long long)tv.tv_usec * 1000LL;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	pid_t pid;
	FILE *f;

	int cmd = 2;

	while (cmd < argc && strcmp(argv[cmd], "--") != 0)
		cmd++;
	if (argc < 3 || cmd + 1 >= argc) {
		fprintf(stderr, "usage: launch RESULT [NAME=VALUE...] -- PROG [ARG...]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		perror("launch: fork");
		return 2;
	}
	if (pid == 0) {
		for (int i = 2; i < cmd; i++)
			putenv(argv[i]);
		execvp(argv[cmd + 1], argv + cmd + 1);
		perror(argv[cmd + 1]);
		_exit(127);
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("launch: wait4");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	fprintf(f, "%lld %lld %lld %ld %d\n",
		(long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec),
		ns_of(ru.ru_utime), ns_of(ru.ru_stime), ru.ru_maxrss, status);
	if (fclose(f) != 0) {
		perror(argv[1]);
		return 2;
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
