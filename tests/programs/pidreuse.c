/* SPDX-License-Identifier: MIT */
/*
 * pidreuse.c - forks children one after the other (each calls one
 * instrumented function and exits) until the kernel gives a child a pid an
 * earlier child had: a traced run with two processes of one pid, for
 * `traceagent info` to show apart (PROCESS's boot_start).  Forks at most
 * MAX children (default 100000).  Not run by meson test: it takes as many
 * forks as pid_max, minus what the rest of the machine uses meanwhile.
 *
 * usage: pidreuse [MAX]
 * Prints "children N pid P" (P: the pid given twice; 0 if none was).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))

static volatile int sink;

__attribute__((noipa)) static void child_work(void)
{
	sink++;
}

NOINST int main(int argc, char **argv)
{
	long max = argc > 1 ? atol(argv[1]) : 100000, n;
	static uint8_t seen[(1u << 22) / 8]; /* pids are below 2^22 */
	pid_t again = 0;

	/* The agent starts here, so the children append to its dump. */
	child_work();
	for (n = 0; n < max && !again; n++) {
		int status;
		pid_t pid = fork();

		if (pid < 0) {
			perror("pidreuse: fork");
			return 1;
		}
		if (pid == 0) {
			child_work();
			exit(0);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "pidreuse: child %ld failed\n", (long)pid);
			return 1;
		}
		if (seen[pid / 8] & (1u << (pid % 8)))
			again = pid;
		seen[pid / 8] |= (uint8_t)(1u << (pid % 8));
	}
	printf("children %ld pid %ld\n", n, (long)again);
	return 0;
}
