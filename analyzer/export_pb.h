/* SPDX-License-Identifier: MIT */
/*
 * export_pb.h - the exports in protocol buffers: Perfetto's trace format
 * (perfetto.c) and pprof's profile (pprof.c), for `traceagent export`.
 */
#ifndef TA_EXPORT_PB_H
#define TA_EXPORT_PB_H

#include <stdio.h>

#include "timeline.h"

/*
 * Writes the calls of the dump at path that pass the filters of o to f as
 * a perfetto.protos.Trace, streaming: memory grows with threads and
 * distinct names, never with events.  Prints the dump's errors and
 * warnings; returns the exit status (0, 1 for a damaged dump or no memory,
 * 2 for a dump that cannot be read).
 */
int ta_export_perfetto(FILE *f, const char *path, const struct ta_tlopts *o);

/*
 * Writes the call tree of the dump at path (threads in tids, empty: all)
 * to f as a gzip'd perftools.profiles.Profile: one sample per call path.
 * srcline: look up each function's source file and line.  Returns the exit
 * status, as above.
 */
int ta_export_pprof(FILE *f, const char *path, const struct ta_tidset *tids, int srcline);

/* The category of a function in the Chrome and Perfetto exports:
 * "function,MODULE", "libcall" or "zone" (static or the caller's buf). */
const char *ta_export_category(const char *module, char *buf, size_t n);

#endif
