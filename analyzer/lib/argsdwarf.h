/* SPDX-License-Identifier: MIT */
/*
 * argsdwarf.h - the arguments and return values of a program's functions
 * from its DWARF (argsdwarf.c), for `record --auto-args`.
 */
#ifndef TA_ARGSDWARF_H
#define TA_ARGSDWARF_H

#include <stdint.h>

/*
 * The functions of the ELF file at path whose names match one of the
 * comma-separated globs in patterns: their TRACEAGENT_ARGS entries in
 * *args and TRACEAGENT_RETVAL entries in *ret (malloc'd, NULL when none).
 * Returns how many functions matched, or -1 (the message was printed).
 */
int ta_autoargs(const char *path, const char *patterns, char **args, char **ret);

/*
 * The names of enum values from the DWARF of the modules, for the views:
 * the name of value for the enum-typed parameter in integer register reg
 * (0: the return value) of the function whose symbol value is offset in
 * the module at path; NULL when it has none.  Each module's DWARF is
 * opened once, each function's parameters read once.
 */
struct ta_enumcache;
const char *ta_enum_name(struct ta_enumcache **c, const char *path, uint64_t offset, unsigned reg,
			 int64_t value);
void ta_enumcache_free(struct ta_enumcache *c);

#endif
