/* SPDX-License-Identifier: MIT */
/* graph.c: being written. */
#include <stdio.h>
#include "commands.h"
int ta_cmd_graph(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "traceagent graph: not written yet\n");
	return 2;
}
