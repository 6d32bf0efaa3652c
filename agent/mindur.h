/* SPDX-License-Identifier: MIT */
/*
 * mindur.h - the minimum-duration filter (TRACEAGENT_MIN_DURATION): a
 * stage between a thread's ring records and the event encoder that leaves
 * out the calls shorter than a threshold, and counts them per function.
 *
 * It keeps the entries of the calls not yet known to be long enough (the
 * pending stack, a suffix of the thread's open frames).  At an exit of the
 * call on top of it: a call at least the threshold long is written, with
 * the pending entries below it first (its ancestors: they are at least as
 * long); a shorter one is left out, entry and exit, and counted.  Any other
 * record (an EXT event, a gap, an exit that is not of the top pending call)
 * needs the frames it happens under: every pending entry is written before
 * it.  Everything written before the oldest pending entry is older than it,
 * so written entries keep the stream in time order.  The counts go into
 * the stream as TA_EXT_SHORT events (format.h).  Not thread-safe: one per
 * thread, used by whoever drains that thread's ring.
 */
#ifndef TA_MINDUR_H
#define TA_MINDUR_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "slots.h"

/* Pending entries kept per thread: beyond, the oldest are written (a
 * deep recursion of short calls is then recorded, not lost). */
#define TA_MINDUR_PENDING_MAX 4096u
/* Functions with dropped calls counted between two ta_mindur_counts: more
 * and the counts go out at once. */
#define TA_MINDUR_COUNTS_MAX 4096u

struct ta_mindur {
	uint64_t min_ticks;  /* the threshold, in ticks (0: every call kept) */
	struct ta_raw *pend; /* pending entries, oldest first */
	uint32_t npend;
	uint64_t *cnt_addr, *cnt_n; /* open-addressing table of dropped calls */
	uint32_t ncnt, cnt_last;    /* entries used; the slot counted last */
	uint64_t dropped;	    /* calls left out so far (all functions) */
	uint64_t last_ticks;	    /* the newest record's ticks seen */
	struct ta_raw *out;	    /* records to encode (ta_mindur_filter) */
	size_t out_len, out_cap;
	int oom; /* a table could not be allocated: every call kept */
};

void ta_mindur_init(struct ta_mindur *m, uint64_t min_ticks);
void ta_mindur_free(struct ta_mindur *m);
/*
 * Filters n ring records (EXT groups whole, as ta_encoder_raw takes them)
 * into m->out[0..m->out_len): the records to encode, in order.  The
 * dropped calls' counts stay in m until ta_mindur_counts.  0, or
 * -TA_E_NOMEM (m->out then holds the input unfiltered or nothing).
 */
int ta_mindur_filter(struct ta_mindur *m, const struct ta_raw *in, size_t n);
/* Appends to m->out the entries still pending (calls open at the end of a
 * thread, before a fork or an exec: their length is not known, they are
 * kept). */
int ta_mindur_flush(struct ta_mindur *m);
/* Appends to m->out the counts of the calls dropped since the last time,
 * as TA_EXT_SHORT groups of at most TA_EXT_MAX_VALUES / 2 pairs, at a time
 * no later than anything written after them. */
int ta_mindur_counts(struct ta_mindur *m);
/* Forgets the pending entries (flight mode threw their frames away). */
void ta_mindur_forget(struct ta_mindur *m);

#endif
