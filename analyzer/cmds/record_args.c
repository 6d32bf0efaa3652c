/* SPDX-License-Identifier: MIT */
/*
 * record_args.c - `record --args`, `--retval` and `--auto-args`: the
 * agent's TRACEAGENT_ARGS and TRACEAGENT_RETVAL, the DWARF's entries after
 * the ones given (the first entry naming a function is the one taken).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argsdwarf.h"
#include "commands.h"
#include "launch.h"

/* a;b, either may be NULL or empty (malloc'd; NULL for none or no
 * memory: *oom says). */
static char *join(const char *a, const char *b, int *oom)
{
	size_t la = a ? strlen(a) : 0, lb = b ? strlen(b) : 0;
	char *s;

	if (!la && !lb)
		return NULL;
	s = malloc(la + lb + 2);
	if (!s) {
		*oom = 1;
		return NULL;
	}
	snprintf(s, la + lb + 2, "%s%s%s", la ? a : "", la && lb ? ";" : "", lb ? b : "");
	return s;
}

int ta_record_args_env(const char *prog, const char *args, const char *retval, const char *autos)
{
	char *aa = NULL, *ar = NULL, *ja, *jr;
	int oom = 0, rc = 0;

	if (!args)
		args = getenv("TRACEAGENT_ARGS");
	if (!retval)
		retval = getenv("TRACEAGENT_RETVAL");
	if (!autos)
		autos = getenv("TRACEAGENT_AUTO_ARGS");
	if (autos && *autos) {
		int n = ta_autoargs(prog, autos, &aa, &ar);

		if (n < 0)
			return EXIT_USAGE;
		if (n == 0)
			fprintf(stderr,
				"traceagent record: --auto-args=%s: no function of %s with DWARF "
				"matches\n",
				autos, prog);
	}
	ja = join(args, aa, &oom);
	jr = join(retval, ar, &oom);
	if (oom) {
		fprintf(stderr, "traceagent record: out of memory\n");
		rc = EXIT_LOADER;
	} else if ((ja && ta_rec_set_env("TRACEAGENT_ARGS", ja) < 0) ||
		   (jr && ta_rec_set_env("TRACEAGENT_RETVAL", jr) < 0)) {
		rc = EXIT_LOADER;
	}
	free(aa);
	free(ar);
	free(ja);
	free(jr);
	return rc;
}
