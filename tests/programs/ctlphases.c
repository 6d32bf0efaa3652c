/* SPDX-License-Identifier: MIT */
/*
 * ctlphases.c - a program driven by lines on standard input, for
 * `traceagent ctl` (tests/e2e/test_ctl.py): each line runs one phase and
 * answers, so the test knows where the program is when it pauses, resumes,
 * flushes or asks for the status.
 *   N       calls work() N times (in phase()), prints "done N"
 *   hold    enters hold(), prints "holding", and returns from it at the
 *           next line, printing "held"
 *   (end)   prints "bye" and exits 0
 * It prints "ready" once main is entered (the agent is running then, and
 * listening on its control socket).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

__attribute__((noinline)) void work(int i);
__attribute__((noinline)) void phase(int n);
__attribute__((noinline)) void hold(void);

void work(int i)
{
	sink += i;
}

void phase(int n)
{
	for (int i = 0; i < n; i++)
		work(i);
}

void hold(void)
{
	char line[64];

	printf("holding\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return;
}

int main(void)
{
	char line[64];

	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "hold\n")) {
			hold();
			printf("held\n");
		} else {
			int n = atoi(line);
			phase(n);
			printf("done %d\n", n);
		}
		fflush(stdout);
	}
	printf("bye\n");
	return 0;
}
