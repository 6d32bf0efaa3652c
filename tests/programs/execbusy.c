/* SPDX-License-Identifier: MIT */
/*
 * execbusy.c - a thread calls work() without end while main, once it has
 * seen 1000 of those calls, replaces itself with the program named on the
 * command line: the other thread records up to the moment the exec ends
 * it, after the exec wrapper has written the image's END.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile unsigned long calls;

__attribute__((noipa)) static void work(void)
{
	calls++;
}

static void *busy(void *arg)
{
	for (;;)
		work();
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2) {
		fprintf(stderr, "usage: execbusy PROGRAM [ARGS...]\n");
		return 2;
	}
	if (pthread_create(&t, NULL, busy, NULL) != 0) {
		fprintf(stderr, "execbusy: pthread_create failed\n");
		return 1;
	}
	while (calls < 1000)
		usleep(1000);
	execv(argv[1], argv + 1);
	perror("execbusy: execv");
	return 1;
}
