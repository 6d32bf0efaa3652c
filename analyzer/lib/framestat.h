/* SPDX-License-Identifier: MIT */
/*
 * framestat.h - per-frame numbers of the functions and zones of a dump
 * (`traceagent frames`, `report --frames`).
 *
 * A frame set is the frame marks (TA_FRAME_MARK_NAMED) of one name in one
 * process, whatever thread marked them.  Frame i of a set runs from mark
 * i - 1 to mark i in time order; frame 0 from the first event of the
 * thread that made the first mark.  The dump is read twice: once for the
 * marks, once to split every call's self time and count every call over
 * the frames, clipped to each frame's interval.  Self time rather than
 * total, so an outer zone spanning the frame never hides what inside it
 * grew.  A frame's thread is the thread that made its closing mark; the
 * self time on it is also kept apart (own_ns): what one thread spent in
 * a frame never exceeds the frame, which all threads' sum can.
 */
#ifndef TA_FRAMESTAT_H
#define TA_FRAMESTAT_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* One function's numbers in one frame, in ns. */
struct ta_fs_val {
	uint32_t frame;
	uint64_t self_ns;
	uint64_t calls;	 /* activations entered in the frame */
	uint64_t own_ns; /* the part of self_ns on the frame's thread */
};

/* A function or zone (merged by name and module) over the frames of a set. */
struct ta_fs_row {
	struct ta_fn id;
	struct ta_fs_val *v; /* the frames it ran in, by frame; the others are 0 */
	size_t n;
	uint64_t calls;	      /* over all frames */
	uint64_t self_p50_ns; /* median over all frames, those without it as 0 */
	uint64_t self_p99_ns, self_max_ns, self_sum_ns;
	uint64_t own_p50_ns; /* median of own_ns over all frames */
	uint64_t calls_max;
};

struct ta_fset {
	uint32_t pid;
	char *name;
	size_t nframes;
	uint64_t *bounds; /* nframes + 1 ticks: frame i is [bounds[i], bounds[i + 1]) */
	/* A set of frames with gaps (TA_FRAME_BEGIN/END): frame i is
	 * [bounds[i], ends[i]), the time between frames in none, and
	 * bounds[nframes] the last frame's end; NULL for the marks' sets. */
	uint64_t *ends;
	uint64_t unmatched; /* with gaps: ENDs without a BEGIN, a frame never ended */
	uint64_t *tid;	    /* per frame: its thread, the one that made its closing mark */
	int64_t *start_ns;  /* per frame, from the dump's start */
	uint64_t *dur_ns;   /* per frame */
	/* A dump that kept only the slow frames (its process's KEEP chunk):
	 * the frames are those inside a kept window alone, in order, and
	 * bounds is of the frames as marked, gaps included (nmarked). */
	int keep;
	size_t nmarked;
	struct ta_fs_row *fns;
	size_t nfns;
	struct ta_fs_val *vals; /* what fns point into */
	/* While reading: (frame, address) -> ticks and calls. */
	struct ta_fs_cell *cells;
	size_t ncells, cells_cap;
	struct ta_htab by_cell;
};

struct ta_framestat {
	struct ta_fset *sets; /* by pid, then by name */
	size_t nsets, sets_cap;
	struct ta_fs_stack *stacks; /* per thread index while reading */
	size_t nstacks;
	int nomem;
};

/*
 * Reads the dump at path twice: for its marks (silently), then into v
 * (ta_view_open: its messages and status) to split the calls over the
 * frames of every set, or only of the sets named only (may be NULL).
 * Returns 0 with fs filled (no sets when the dump has no marks), or -1
 * when there is nothing to show (v->status says the exit code; the message
 * was printed).  Call ta_framestat_free and ta_view_close either way.
 */
int ta_framestat_read(struct ta_framestat *fs, struct ta_view *v, const char *path,
		      const char *only);
void ta_framestat_free(struct ta_framestat *fs);

/* The nearest-rank percentile q (0-100) of n values of which the first
 * nzero are zeros not in sorted (the others, ascending). */
uint64_t ta_fs_rank(const uint64_t *sorted, size_t nsorted, size_t nzero, unsigned q);

/* qsort's comparison of uint64_t, ascending. */
int ta_fs_u64_cmp(const void *a, const void *b);

/* The set to show by default: the first named "frame", else the first. */
const struct ta_fset *ta_framestat_default(const struct ta_framestat *fs);

#endif
