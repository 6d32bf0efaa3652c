/* SPDX-License-Identifier: MIT */
/*
 * argsdwarf.h - the arguments and return values of a program's functions
 * from its DWARF (argsdwarf.c), for `record --auto-args`.
 */
#ifndef TA_ARGSDWARF_H
#define TA_ARGSDWARF_H

/*
 * The functions of the ELF file at path whose names match one of the
 * comma-separated globs in patterns: their TRACEAGENT_ARGS entries in
 * *args and TRACEAGENT_RETVAL entries in *ret (malloc'd, NULL when none).
 * Returns how many functions matched, or -1 (the message was printed).
 */
int ta_autoargs(const char *path, const char *patterns, char **args, char **ret);

#endif
