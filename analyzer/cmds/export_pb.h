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
	uint64_t ticks;	 /* the same on its process's counter */
	uint32_t thread; /* ta_sess_thread.index */
	int step;	 /* a BEGIN or ENTER +1, an END or LEAVE -1, a mark 0 */
};

/* What a set holds: frame marks, frames with gaps (TA_FRAME_BEGIN/END),
 * or a section's occurrences (TA_SECTION_ENTER/LEAVE). */
enum ta_xfkind { TA_XF_MARKS, TA_XF_GAPS, TA_XF_SECTION };

struct ta_xfset {
	uint32_t pid;
	char *name;
	struct ta_xmark *marks;
	size_t n, cap;
	enum ta_xfkind kind;
};

/* A frame or a section's stretch, in ns from the dump's start. */
struct ta_xspan {
	int64_t start, end;
};

struct ta_xframes {
	struct ta_xfset *sets; /* in the order of their first mark read */
	size_t n, cap;
};

/* Adds the mark a (a TA_EXT_FRAME, FRAME_BEGIN, FRAME_END, SECTION_ENTER
 * or SECTION_LEAVE); its set's index, or -1 without memory. */
long ta_xframes_add(struct ta_xframes *x, const struct ta_tlapi *a);
/* The frames of set k after the run: sorts its marks and gives the n + 1
 * bounds of its n frames, in ns from the dump's start (frame i is
 * [bounds[i], bounds[i + 1])), malloc'd into *bounds; -1 without memory. */
int ta_xframes_bounds(struct ta_xframes *x, size_t k, const struct ta_timeline *tl,
		      int64_t **bounds);
/* The frames of set k after the run, whatever its kind, malloc'd into
 * *spans (*n of them): the marks' as ta_xframes_bounds gives them; with
 * gaps, each BEGIN to the next END (a BEGIN while one is open ends it,
 * an END without one is left out); a section's, each stretch from an
 * ENTER to the LEAVE that closes every ENTER (occurrences that overlap
 * are one), the last one open to the set's last mark.  A keep dump's
 * frames (its process's KEEP chunk), of either kind, are those inside
 * one of its windows, as `traceagent frames` counts them: the time
 * between two windows was let go, and a span across it would be a frame
 * that never was.  -1 without memory. */
int ta_xframes_spans(struct ta_xframes *x, size_t k, const struct ta_timeline *tl,
		     struct ta_xspan **spans, size_t *n);
/* "frames: SET" or "section: NAME": the name of set's track. */
void ta_xframes_track(const struct ta_xfset *set, char *buf, size_t n);
void ta_xframes_free(struct ta_xframes *x);

/* What the Chrome export says of the run as a whole ("otherData"): the
 * lines of TA_APP_INFO in their order, each counter's TA_COUNTER_CONFIG
 * unit (export_meta.c). */
struct ta_xunit {
	char *counter;
	uint32_t unit; /* TA_UNIT_*_ */
};

struct ta_xmeta {
	char **info;
	size_t ninfo, info_cap;
	struct ta_xunit *units;
	size_t nunits, units_cap;
};

/* 0, or -1 without memory. */
int ta_xmeta_info(struct ta_xmeta *m, const char *text);
int ta_xmeta_unit(struct ta_xmeta *m, const char *counter, uint32_t unit);
/* "number", "bytes" or "percent". */
const char *ta_unit_name(uint32_t unit);
/* `"otherData": {...},` and a newline, when there is any. */
void ta_xmeta_chrome(const struct ta_xmeta *m, FILE *f);
void ta_xmeta_free(struct ta_xmeta *m);

/* The category of a function in the Chrome and Perfetto exports:
 * "function,MODULE", "libcall" or "zone" (static or the caller's buf). */
const char *ta_export_category(const char *module, char *buf, size_t n);

#endif
