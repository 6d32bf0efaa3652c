/* SPDX-License-Identifier: MIT */
/*
 * sysroot.c - built without instrumentation: a parent that never traces
 * and runs each command line given with system(), then the last one with
 * popen() (its output copied to stdout), as a test runner written in C
 * would.
 *
 * usage: sysroot COMMAND... POPEN-COMMAND
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	char line[256];
	FILE *f;

	if (argc < 3)
		return 2;
	for (int i = 1; i < argc - 1; i++) {
		fflush(stdout);
		if (system(argv[i]) != 0)
			return 1;
	}
	fflush(stdout);
	f = popen(argv[argc - 1], "r");
	if (!f)
		return 1;
	while (fgets(line, sizeof(line), f))
		fputs(line, stdout);
	return pclose(f) == 0 ? 0 : 1;
}
