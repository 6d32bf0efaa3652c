/* SPDX-License-Identifier: MIT */
/*
 * keep.h - keeping only the slow frames (TRACEAGENT_KEEP=slow-frames:...):
 * the threads record as in lossless mode, and the flusher, instead of
 * writing every event, holds each thread's ring as a window of the last
 * frames and writes only what falls in a kept window: a frame of the
 * judged set longer than the budget, and the K frames before it.
 *
 * Two sides.  The frame marks (api.c's ta_frame_mark_, apizone.c's
 * ta_frame_begin_ and ta_frame_end_, any thread) judge the frames: each
 * mark of the set ends a frame (a TA_FRAME_BEGIN/END set's frame is its
 * BEGIN to its END, the gaps between frames in none), and a frame over the
 * budget appends a window [start of frame i - K, end of frame i) to a
 * queue the flusher reads (the gaps between those frames inside it), and
 * moves the horizon (the start of the oldest frame a later slow frame
 * could still keep).  The flusher, for
 * each thread's records in time order: a record inside a window is
 * written; one before the horizon and in no window is let go; one after
 * it waits in the ring for the marks to come.  The calls open across a
 * window's start are written first, with their own entries (the stack of
 * entries let go, per thread, in struct ta_keepf); a call whose entry was
 * written gets its exit written wherever it falls, so every written
 * stream nests.  A thread whose ring holds more than the window
 * (TRACEAGENT_FLIGHT_SIZE) has its oldest records let go before they are
 * judged, counted: a later window reaching back there is kept in part.
 */
#ifndef TA_KEEP_H
#define TA_KEEP_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "slots.h"

/* The most K may be (before=K). */
#define TA_KEEP_BEFORE_MAX 64u
/* The default K: the frame before a slow one shows what led to it. */
#define TA_KEEP_BEFORE_DEFAULT 1u
/* Windows a KEEP chunk lists at most (20 bytes each at the most, well
 * inside a chunk); more are counted lost. */
#define TA_KEEP_WINDOWS_MAX (1u << 19)
/* Calls open at once that a thread's filter remembers; deeper ones are
 * counted and neither written nor remembered. */
#define TA_KEEP_STACK_MAX 4096u

struct ta_keep_cfg {
	int on;		    /* TRACEAGENT_KEEP set and valid */
	uint64_t budget_ns; /* a frame longer than this is kept */
	uint32_t before;    /* K: frames kept before each slow one */
	char set[128];	    /* the judged set ("" = the first marked) */
};
extern struct ta_keep_cfg ta_keep_cfg TA_HIDDEN;
/* 1 while keep mode records (relaxed: set before the first thread
 * records, read by the frame marks). */
extern int ta_keep_on TA_HIDDEN;

/* Parses TRACEAGENT_KEEP's value into c; -1 with why (a static text)
 * when it is not slow-frames:BUDGET[,before=K][,set=NAME]. */
int ta_keep_parse(const char *v, struct ta_keep_cfg *c, const char **why) TA_HIDDEN;

/* The process starts recording in keep mode (agent start, a forked
 * child): the judging starts afresh. */
void ta_keep_start(void) TA_HIDDEN;

/* What made a mark: TA_FRAME_MARK (each mark ends a frame and starts the
 * next), TA_FRAME_BEGIN or TA_FRAME_END (a frame with gaps: BEGIN to END,
 * a BEGIN while one is open ends it there, an END without one is not a
 * frame, as `traceagent frames` counts them). */
enum ta_keep_kind { TA_KEEP_MARK, TA_KEEP_BEGIN, TA_KEEP_END };

/* A mark of kind kind of the site named name: pre, the counter before
 * its event was recorded and past every earlier record of the thread,
 * post past the event and before every later record (api.c, apizone.c).  The set judged
 * is one name and one kind (the first marked, or set=NAME's first mark):
 * the other kind's marks of the same name are another set, as the views
 * take them.  Never blocks: a mark made while another is being judged (a
 * handler's, or a second thread's at the same moment) is counted and not
 * judged. */
void ta_keep_mark(enum ta_keep_kind kind, const char *name, uint64_t pre, uint64_t post) TA_HIDDEN;

/* The flusher's view of the windows, taken under the drain lock before a
 * pass (ta_keep_pass): the windows so far, sorted and merged, and the
 * horizon. */
struct ta_keep_win {
	uint64_t lo, hi;
};
void ta_keep_pass(void) TA_HIDDEN;

/* One thread's filter (in the flusher's per-thread state). */
struct ta_keepf {
	struct ta_raw *stack; /* entries of the open calls, oldest first */
	uint8_t *written;     /* per stack entry: its entry was written */
	uint32_t depth, over; /* entries held; deeper ones not held */
	size_t cursor;	      /* the window the last record was judged against */
	struct ta_raw *out;   /* records to encode (ta_keep_filter) */
	size_t out_len, out_cap;
	uint64_t first_ticks; /* the oldest record let go unjudged (0: none) */
};
void ta_keepf_free(struct ta_keepf *k) TA_HIDDEN;
/*
 * Filters the records in[0..n) (EXT groups whole) into k->out: those to
 * encode.  Stops at the first record that must wait for the marks to
 * come (after the horizon, in no window) unless force (the thread or the
 * process ends, the window is over full: every record is judged now,
 * and those in no window let go).  Returns how many records were taken,
 * or -1 for want of memory (nothing taken).
 */
long ta_keep_filter(struct ta_keepf *k, const struct ta_raw *in, size_t n, int force) TA_HIDDEN;
/* The calls whose entries were written, nothing else kept (a thread's
 * filter starts afresh: a fork, a new thread in the record). */
void ta_keepf_reset(struct ta_keepf *k) TA_HIDDEN;

/* The KEEP chunk (format.h), written before the END. */
void ta_keep_write_summary(void) TA_HIDDEN;

/* What the chunk counts (FORMAT.md's KEEP), for tests. */
struct ta_keep_counts {
	uint64_t frames_seen, frames_slow, frames_kept;
	uint64_t let_go, let_go_early, windows_partial, windows_lost, marks_unjudged;
	size_t nwin;
};
void ta_keep_counts(struct ta_keep_counts *c) TA_HIDDEN;
/* For tests: the budget in ticks, in place of the measured one. */
void ta_keep_test_budget(uint64_t ticks) TA_HIDDEN;

/* TRACEAGENT_KEEP into ta_keep_cfg, and the settings it overrides in s
 * (the mode, the minimum duration), each said in one line; called right
 * after ta_settings_load. */
struct ta_settings;
void ta_keep_setting(struct ta_settings *s) TA_HIDDEN;

#endif /* TA_KEEP_H */
