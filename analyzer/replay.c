/* SPDX-License-Identifier: MIT */
/* replay.c: being written. */
#include <stdio.h>
#include "commands.h"
int ta_cmd_replay(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "traceagent replay: not written yet\n");
	return 2;
}
