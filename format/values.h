/* SPDX-License-Identifier: MIT */
/*
 * values.h - the values of settings as both sides read them: the agent
 * from TRACEAGENT_* (agent/settings.c), `traceagent record` from its
 * options, which it checks before the program starts, and the dump paths
 * it looks for afterwards (loader/record.c).  One parser, so that what
 * record lets through the agent takes, and one expansion of the output
 * pattern, so that record finds the files the agent wrote.
 */
#ifndef TA_VALUES_H
#define TA_VALUES_H

#include <stddef.h>
#include <stdint.h>

/* The dump's name when TRACEAGENT_OUTPUT (record's -o) gives none. */
#define TA_DEFAULT_OUTPUT "traceagent.%p.trace"

/* A size: "4096", "64K", "1M", "2G" (k, m, g too; an i and a B after the
 * unit allowed: "256MiB"); 0 with *out, or -1. */
int ta_parse_size(const char *s, uint64_t *out);
/* A duration: "250ns", "10us", "2ms", "1s", or a bare number of
 * nanoseconds; 0 with *ns, or -1. */
int ta_parse_duration(const char *s, uint64_t *ns);
/* The output pattern with %p as pid and %% as '%', in out; 0, or -1 if
 * it does not fit (or is empty). */
int ta_expand_output(const char *pattern, long pid, char *out, size_t size);
/* The dump path the agent of process pid uses for pattern: expanded, or
 * where that does not fit in size bytes TA_DEFAULT_OUTPUT's (then -1). */
int ta_output_path(const char *pattern, long pid, char *out, size_t size);

#endif
