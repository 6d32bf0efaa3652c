/* SPDX-License-Identifier: MIT */
/*
 * values.h - the values of settings as both sides read them: the agent
 * from TRACEAGENT_* (agent/settings.c), `traceagent record` from its
 * options, which it checks before the program starts (loader/record.c).
 * One parser, so that what record lets through the agent takes.
 */
#ifndef TA_VALUES_H
#define TA_VALUES_H

#include <stdint.h>

/* A size: "4096", "64K", "1M", "2G" (k, m, g too; an i and a B after the
 * unit allowed: "256MiB"); 0 with *out, or -1. */
int ta_parse_size(const char *s, uint64_t *out);
/* A duration: "250ns", "10us", "2ms", "1s", or a bare number of
 * nanoseconds; 0 with *ns, or -1. */
int ta_parse_duration(const char *s, uint64_t *ns);

#endif
