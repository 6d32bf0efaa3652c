/* SPDX-License-Identifier: MIT */
/*
 * api_site.h - whether a site's events are recorded: the manual API's
 * entries (api.c, apizone.c, api_mem.c) test it inline, first thing, on
 * their hot path; its way out is api.c's.
 */
#ifndef TA_API_SITE_H
#define TA_API_SITE_H

#include <stdint.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "api_int.h"
#include "compiler.h"
#include "format.h"
#include "ring.h"

/* ta_api_site_on's way out (api.c): s registered, the agent's start waited
 * for; whether its events are recorded, -1 when the calling thread is inside
 * its own start (neither can be done there). */
int ta_api_site_slow(struct ta_site_ *s) __attribute__((noinline, cold));

/* Whether an event of s is recorded: the entries' hot path, inline in
 * each.  One the agent cannot judge (made inside its thread's own start)
 * is counted lost. */
static inline __attribute__((always_inline)) int ta_api_site_on(struct ta_site_ *s)
{
	const volatile uint32_t *g = __atomic_load_n(&s->gate, __ATOMIC_ACQUIRE);
	uint32_t v;
	int on;

	if (TA_LIKELY(g != &s->first) &&
	    TA_LIKELY((v = __atomic_load_n(g, __ATOMIC_RELAXED)) != CHAN_STARTING))
		return v != 0;
	on = ta_api_site_slow(s);
	if (TA_UNLIKELY(on < 0)) {
		ta_lost_here(TA_LOST_STARTING);
		return 0;
	}
	return on;
}

#endif
