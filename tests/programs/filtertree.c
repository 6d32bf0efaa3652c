/* SPDX-License-Identifier: MIT */
/*
 * filtertree.c - a known call tree for the filters (TRACEAGENT_FILTER,
 * _EXCLUDE, _DEPTH: test_filter.py), the same at -O0 and -O2.
 *
 *   main
 *     work(3)          hash x3 (leaf each), deep1 -> deep2 -> deep3 x2 (leaf each)
 *     noise            leaf, hash (leaf), usleep (a library call)
 *     skipme           leaf, noise (as above)
 *
 * argv[1]: "plain" (the above), "threads" (two threads each run work(3)
 * and skipme, after main's), "fork" (a child runs work(2) and noise after
 * main's calls; the parent waits).
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* noipa: every call exists at every optimisation level. */
__attribute__((noipa)) static void leaf(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noipa)) static void hash(int n)
{
	(void)n;
	leaf();
}

__attribute__((noipa)) static void deep3(void)
{
	leaf();
}

__attribute__((noipa)) static void deep2(void)
{
	deep3();
	deep3();
}

__attribute__((noipa)) static void deep1(void)
{
	deep2();
}

__attribute__((noipa)) static void work(int n)
{
	for (int i = 0; i < n; i++)
		hash(i);
	deep1();
}

__attribute__((noipa)) static void noise(void)
{
	leaf();
	hash(0);
	usleep(100);
}

__attribute__((noipa)) static void skipme(void)
{
	leaf();
	noise();
}

static void *worker(void *arg)
{
	(void)arg;
	work(3);
	skipme();
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";

	work(3);
	noise();
	skipme();
	if (!strcmp(mode, "threads")) {
		pthread_t t[2];

		for (int i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, worker, NULL);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
	} else if (!strcmp(mode, "fork")) {
		pid_t pid;
		int st;

		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			work(2);
			noise();
			_exit(0);
		}
		waitpid(pid, &st, 0);
	}
	printf("done %s\n", mode);
	return 0;
}
