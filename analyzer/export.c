/* SPDX-License-Identifier: MIT */
/* export.c: being written. */
#include <stdio.h>
#include "commands.h"
int ta_cmd_export(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "traceagent export: not written yet\n");
	return 2;
}
