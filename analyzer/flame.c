/* SPDX-License-Identifier: MIT */
/* flame.c: being written. */
#include <stdio.h>
#include "commands.h"
int ta_cmd_flame(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "traceagent flame: not written yet\n");
	return 2;
}
