/* SPDX-License-Identifier: MIT */
/*
 * plainio - a program built WITHOUT -finstrument-functions, as most
 * programs a newcomer first records are: `plainio N STATUS` writes N lines
 * to standard output, each with one write(), and exits with STATUS.  Its
 * only traceable events are those library calls (--libcalls).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;

	for (int i = 0; i < n; i++) {
		char line[32];
		int len = snprintf(line, sizeof(line), "line %d\n", i);

		if (write(STDOUT_FILENO, line, (size_t)len) != len)
			return 100;
	}
	return argc > 2 ? atoi(argv[2]) : 0;
}
