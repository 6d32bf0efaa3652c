/* SPDX-License-Identifier: MIT */
/*
 * session_int.h - what the pieces of the session share and nothing else
 * uses: session.c (lifetime, reading, errors, finishing), session_procs.c
 * (processes, threads, metadata chunks) and session_walk.c (the call-stack
 * walk and the profile visitor).  The model itself is in session.h.
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

/* session_procs.c: the thread and process tables. */
struct ta_thread *ta_sess_thread_get(struct ta_session *s, uint32_t pid, uint64_t tid);
void ta_sess_thread_free(struct ta_thread *t);
void ta_sess_process_free(struct ta_process *p);

/* session_walk.c: an EVENTS chunk replayed on its thread's stack (0, or
 * -TA_E_NOMEM); what is still open on t closed at its last known time. */
int ta_sess_events_chunk(struct ta_session *s, const struct ta_chunk *c, struct ta_process *p);
void ta_sess_thread_close(struct ta_session *s, struct ta_thread *t);

#endif
