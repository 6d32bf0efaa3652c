/* SPDX-License-Identifier: MIT */
/*
 * session_int.h - what the pieces of the session share and nothing else
 * uses (session.c lists them, each using only those after it).  The
 * model itself is in session.h.
 */
#ifndef TA_SESSION_INT_H
#define TA_SESSION_INT_H

#include <stdint.h>

#include "session.h"

/* Widens the process's known span of ticks to include ticks. */
static inline void ta_sess_note_ticks(struct ta_process *p, uint64_t ticks)
{
	if (!p->have_ticks) {
		p->min_ticks = p->max_ticks = ticks;
		p->have_ticks = 1;
		return;
	}
	if (ticks < p->min_ticks)
		p->min_ticks = ticks;
	if (ticks > p->max_ticks)
		p->max_ticks = ticks;
}

/* Ticks from enter to exit, the process's pauses taken out. */
static inline uint64_t ta_sess_span(const struct ta_process *p, uint64_t enter, uint64_t exit)
{
	uint64_t d = exit > enter ? exit - enter : 0;

	if (__builtin_expect(p != NULL && p->npauses != 0, 0) && d) {
		uint64_t g = ta_process_paused(p, enter, exit);
		d = g < d ? d - g : 0;
	}
	return d;
}

/* session_base.c: a string of the payload at r, malloc'd (a NUL in it
 * shown as '?'): 0, -TA_E_PAYLOAD or -TA_E_NOMEM.  (ta_session_error and
 * the ticks' conversions, session.h's, are defined there too.) */
int ta_sess_get_str(struct ta_reader *r, char **out);

/* session_procs.c: the thread and process tables. */
struct ta_sess_thread *ta_sess_thread_get(struct ta_session *s, uint32_t pid, uint64_t tid);
/* The thread of pid and tid in the hash, or NULL. */
struct ta_sess_thread *ta_sess_thread_find(const struct ta_session *s, uint32_t pid, uint64_t tid);
/* A new thread instance, put in the hash in place of any of the same ids
 * (the old one stays in s->threads); NULL without memory. */
struct ta_sess_thread *ta_sess_thread_new(struct ta_session *s, uint32_t pid, uint64_t tid);
/* Takes t out of the hash (its image is over); it stays in s->threads. */
void ta_sess_thread_unhash(struct ta_session *s, struct ta_sess_thread *t);
void ta_sess_thread_free(struct ta_sess_thread *t);
/* The process chunk c belongs to, made if need be; NULL without memory. */
struct ta_process *ta_sess_process_get(struct ta_session *s, const struct ta_chunk *c);
void ta_sess_process_free(struct ta_process *p);
/* The API's SITES and CHANNELS chunks, and MARK (pauses); 0 or -TA_E_*. */
int ta_sess_sites_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_channels_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_mark_chunk(struct ta_process *p, struct ta_reader *r);
/* Ends the pause open at ticks, if any. */
void ta_sess_pause_close(struct ta_process *p, uint64_t ticks);

/* session_meta.c: the metadata chunks' decoders, each 0 or -TA_E_*. */
int ta_sess_process_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_clock_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_module_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_module_unload_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_libcalls_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_patch_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_filter_chunk(struct ta_process *p, const void *payload, size_t len);
int ta_sess_keep_chunk(struct ta_process *p, struct ta_reader *r);
int ta_sess_crash_chunk(struct ta_process *p, struct ta_reader *r);
/* Marks m unloaded at ticks: its ranges join the process's unloaded ones. */
int ta_sess_module_gone(struct ta_process *p, struct ta_sess_module *m, uint64_t ticks);
void ta_sess_patch_free(struct ta_patch *pt);

/* session_walk.c: an EVENTS chunk replayed on its thread's stack (0, or
 * -TA_E_NOMEM); what is still open on t closed at its last known time. */
int ta_sess_events_chunk(struct ta_session *s, const struct ta_chunk *c, struct ta_process *p);
void ta_sess_thread_close(struct ta_session *s, struct ta_sess_thread *t);

/* ---- the parallel reader (session_par.c) and its per-chunk profiles ---- */

/* The sums of one function address in one EVENTS chunk, made by a worker
 * (calls completed in the chunk; those that began before it are left to
 * the merge).  Names come later, from the merged profile (ta_fn). */
struct ta_part_sum {
	uint64_t addr;
	uint64_t calls, unwound, total, self, min, max, sum;
	uint64_t shorts;	  /* of calls: left out by the agent's minimum duration */
	uint64_t partial;	  /* of calls: exits whose entry the dump does not have */
	uint32_t active0, active; /* on the stack at the chunk's start, now */
	struct ta_hist hist;
};

/* A frame of the worker's stack: below nph, one the chunk's snapshot
 * says was open at its start (its enter and child time are the merge's). */
struct ta_part_frame {
	uint64_t addr, enter, child;
	uint32_t fn; /* index in fns + 1, or 0 */
};

/*
 * What a worker makes of one EVENTS chunk for the profile visitor, on the
 * assumption that the thread's stack at its start is its snapshot; the
 * merge checks that (else the chunk is walked again in order).
 */
struct ta_chunk_part {
	int ok;	  /* usable: decoded whole, no overflow, no deeper than allowed */
	int hist; /* the histograms were filled */
	struct ta_decoder dec;
	struct ta_part_sum *fns;
	size_t nfns, fns_cap;
	struct ta_htab by_addr; /* fns by addr */
	struct ta_part_frame *stack;
	uint32_t depth, cap, nph, used;
	struct ta_part_edge *edges;
	size_t nedges, edges_cap;
	uint64_t events, unmatched, lost, last_ticks;
	uint64_t shorts; /* calls the agent left out (TA_EXT_SHORT) */
	int have_ticks;
};

void ta_sess_part_init(struct ta_chunk_part *cp);
void ta_sess_part_free(struct ta_chunk_part *cp);
/* 0: the session's visitor is not the profile; 1: it is; 2: with histograms. */
int ta_sess_part_mode(const struct ta_session *s);
/* The worker's side: sums the chunk's payload (sets cp->ok). */
void ta_sess_part_build(struct ta_chunk_part *cp, const uint8_t *payload, size_t len, int hist);
/* The merge's side (ta_sess_events_chunk, for s->part): 1 when the sums
 * were taken, 0 when the chunk must be walked, or -TA_E_NOMEM. */
int ta_sess_part_apply(struct ta_session *s, const struct ta_chunk *c, struct ta_process *p,
		       struct ta_chunk_part *cp);
/* session_par.c: ta_session_read's loop with jobs workers. */
int ta_sess_read_par(struct ta_session *s, struct ta_dumpfile *d, unsigned jobs,
		     uint64_t *err_offset);

#endif
