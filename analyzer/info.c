/* SPDX-License-Identifier: MIT */
/* info.c: being written. */
#include <stdio.h>
#include "commands.h"
int ta_cmd_info(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "traceagent info: not written yet\n");
	return 2;
}
