/* SPDX-License-Identifier: MIT */
/* diff.c: being written. */
#include <stdio.h>
#include "commands.h"
int ta_cmd_diff(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "traceagent diff: not written yet\n");
	return 2;
}
