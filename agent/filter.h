/* SPDX-License-Identifier: MIT */
/*
 * filter.h - recording less (filter.c): TRACEAGENT_FILTER, _EXCLUDE and
 * _DEPTH applied at run time by filtering hooks that the modules' GOT
 * entries point at in place of the plain ones (the plain hooks, and so an
 * unfiltered run, are left exactly as they were), and the FILTER chunk.
 */
#ifndef TA_FILTER_H
#define TA_FILTER_H

#include <stdint.h>

#include "compiler.h"

/* 1 while filters are in force (FILTER, EXCLUDE or DEPTH set and set up):
 * the filtering hooks are in place, zones and library calls ask
 * ta_filter_lets.  Set once, before any filtering hook can run (release;
 * read relaxed: a reader that misses it records as before filters). */
extern uint32_t ta_filter_on TA_HIDDEN;

/* The filtering hooks (what the GOT entries point at). */
void ta_filter_hook_enter(void *fn, void *call_site) TA_HIDDEN;
void ta_filter_hook_exit(void *fn, void *call_site) TA_HIDDEN;

/* Whether a call made here and now (a zone, a library call) is recorded:
 * the calling thread is inside a FILTER match (if any), outside a `!`
 * exclusion and less than DEPTH recorded frames deep. */
int ta_filter_allows_here(void) TA_HIDDEN;
static inline __attribute__((always_inline)) int ta_filter_lets(void)
{
	return TA_LIKELY(!__atomic_load_n(&ta_filter_on, __ATOMIC_RELAXED)) ||
	       ta_filter_allows_here();
}

/* At the agent's start (after the settings and the module map; under
 * `traceagent attach` too, where the filters are set up from the attach's
 * settings and attach.c points the entries): says which patterns name no
 * function (one line each) and writes the FILTER chunk.  ta_filter_dump
 * writes the chunk alone (a forked child's restart, a new attach window). */
void ta_filter_start(void) TA_HIDDEN;
void ta_filter_dump(void) TA_HIDDEN;
/* At the end: says which patterns naming a module never loaded named no
 * function (those of modules loaded at the start were said then). */
void ta_filter_report_end(void) TA_HIDDEN;
/* After a dlopen: the new modules' functions looked up and their entries
 * pointed at the filtering hooks; after a dlclose: the unloaded modules'
 * functions forgotten. */
void ta_filter_after_dlopen(void) TA_HIDDEN;
void ta_filter_after_dlclose(void) TA_HIDDEN;
/* attach's detach: the hook calls rewritten into no-ops put back (the
 * code as it was) and the filters forgotten: the next window sets its
 * own up from its settings (and rewrites its excluded functions again). */
void ta_filter_unpatch(void) TA_HIDDEN;
/* The exiting thread's filter stack is unmapped (ring.c's ta_thread_exit). */
void ta_filter_thread_exit(void) TA_HIDDEN;

#endif
