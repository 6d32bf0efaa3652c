/* SPDX-License-Identifier: MIT */
/*
 * launch.h - starting a program with the agent preloaded (program.c):
 * finding the agent and the program, checking that the agent can be
 * preloaded into it, the environment.  Used by the commands that start a
 * program, `record` and `top -- PROG` (analyzer/cmds/); it prints its own
 * messages and knows nothing of the analyzer.
 */
#ifndef TA_LAUNCH_H
#define TA_LAUNCH_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* Exit statuses of the loader itself, as a shell's. */
#define EXIT_USAGE	2
#define EXIT_LOADER	125
#define EXIT_CANNOT_RUN 126
#define EXIT_NOT_FOUND	127

/* prog as execvp finds it (a path, or a name looked up in PATH), in out:
 * 0, or an exit status after printing why. */
int ta_rec_resolve_program(const char *prog, char *out, size_t size);
/* Whether the agent can be preloaded into path (prog as given): a
 * dynamically linked program of the loader's class and machine, or a
 * script; 0, or an exit status after printing why. */
int ta_rec_check_program(const char *prog, const char *path);
int ta_rec_set_env(const char *name, const char *value);

/* The agent library's absolute path in out (PATH_MAX bytes), or -1 after
 * printing why; and LD_PRELOAD with the agent put first, or -1 after
 * printing why. */
int ta_record_find_agent(char out[PATH_MAX]);
int ta_record_set_preload(const char *agent);

#endif
