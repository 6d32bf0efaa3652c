/* SPDX-License-Identifier: MIT */
/*
 * record_int.h - what record.c (the command: options, the child, the
 * dumps' outcome) and program.c (finding the agent and the program,
 * checking the program, the environment) share.
 */
#ifndef TA_RECORD_INT_H
#define TA_RECORD_INT_H

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

#endif
