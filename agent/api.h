/* SPDX-License-Identifier: MIT */
/*
 * api.h - the manual instrumentation API's agent side (api.c): call sites,
 * channels and their switches, and the SITES and CHANNELS chunks.
 */
#ifndef TA_API_H
#define TA_API_H

#include <stdint.h>

#include "compiler.h"

/*
 * Whether function hooks record: 1 yes, 0 no (the `functions` channel is
 * off), 2 not known yet (the agent has not started: the hook starts it,
 * ta_fn_gate_start).  Relaxed loads: a hook that sees a switch late records
 * one event more or less, as a hook that ran a moment earlier would.
 */
extern uint32_t ta_fn_gate TA_HIDDEN;

/* The hooks' way out when ta_fn_gate is not 1: starts the agent if it is
 * 2; returns whether the function event is to be recorded. */
int ta_fn_gate_start(void) TA_HIDDEN __attribute__((noinline, cold));

static inline __attribute__((always_inline)) int ta_fn_on(void)
{
	uint32_t g = __atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED);

	return TA_LIKELY(g == 1) || (g == 2 && ta_fn_gate_start());
}

/* At the agent's start, after the settings: the channels' first states
 * (TRACEAGENT_CHANNELS), the switching signal, the CHANNELS chunk. */
void ta_api_start(void) TA_HIDDEN;
/* The library-call classes (TA_LC_*) whose channels are on. */
uint32_t ta_api_lc_mask(void) TA_HIDDEN;
/*
 * Writes the sites registered and the channels created since the last
 * call (all of them when all is set: a forked child's first write, the
 * child being a process of its own in the dump).  From the flusher, the
 * exec and exit paths, the crash handler: no malloc.
 */
void ta_api_write(int all) TA_HIDDEN;
/* The agent stopped: every channel reads off, so the macros cost their
 * load and branch only. */
void ta_api_stop(void) TA_HIDDEN;

#endif
