/* SPDX-License-Identifier: MIT */
/*
 * exec.c - calls work() 4 times, then replaces itself with the program
 * named on the command line (an untraced one, e.g. /bin/true): the calls
 * made before the exec must all be in the dump, though the flusher had no
 * time to write them.
 */
#include <stdio.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noipa)) static void work(void)
{
	sink++;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: exec PROGRAM [ARGS...]\n");
		return 2;
	}
	for (int i = 0; i < 4; i++)
		work();
	execv(argv[1], argv + 1);
	perror("exec: execv");
	return 1;
}
