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
 * a perfetto.protos.Trace, streaming: memory grows with threads, distinct
 * names and frame marks (16 bytes each), never with calls.  Prints the dump's errors and
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

/*
 * The frame marks of an export, by set (the marks of one name in one
 * process), gathered from the timeline's API events and given out after
 * the run as `traceagent frames` counts the frames: frame i runs from mark
 * i - 1 to mark i in time order, frame 0 from the first event of the
 * thread that made the first mark.
 */
struct ta_xmark {
	int64_t ns;	 /* from the dump's start */
	uint32_t thread; /* ta_sess_thread.index */
};

struct ta_xfset {
	uint32_t pid;
	char *name;
	struct ta_xmark *marks;
	size_t n, cap;
};

struct ta_xframes {
	struct ta_xfset *sets; /* in the order of their first mark read */
	size_t n, cap;
};

/* Adds the mark a (a TA_EXT_FRAME); its set's index, or -1 without memory. */
long ta_xframes_add(struct ta_xframes *x, const struct ta_tlapi *a);
/* The frames of set k after the run: sorts its marks and gives the n + 1
 * bounds of its n frames, in ns from the dump's start (frame i is
 * [bounds[i], bounds[i + 1])), malloc'd into *bounds; -1 without memory. */
int ta_xframes_bounds(struct ta_xframes *x, size_t k, const struct ta_timeline *tl,
		      int64_t **bounds);
void ta_xframes_free(struct ta_xframes *x);

/* The category of a function in the Chrome and Perfetto exports:
 * "function,MODULE", "libcall" or "zone" (static or the caller's buf). */
const char *ta_export_category(const char *module, char *buf, size_t n);

#endif
