/* SPDX-License-Identifier: MIT */
/*
 * api.h - the manual instrumentation API's agent side: call sites (api.c,
 * api_registry.c), channels and their switches (api_chan.c), and the SITES
 * and CHANNELS chunks (api_registry.c).
 */
#ifndef TA_API_H
#define TA_API_H

#include <stddef.h>
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
/* The same for a control-socket stream's reader alone (tap.c): every site
 * and channel, what the dump is owed left as it is. */
void ta_api_write_tap(void) TA_HIDDEN;
/* A MARK chunk (format.h's TA_MARK_*): kind at ticks, n values. */
void ta_api_mark(uint32_t kind, uint64_t ticks, const uint64_t *v, uint32_t n) TA_HIDDEN;
/*
 * `traceagent ctl PID pause` / `resume` (control.c): on, every gate reads
 * off (ta_fn_gate 0, every channel word 0, ta_lc_on 0) while the channels
 * keep what they want; off, they are restored.  Marked in the dump.
 * 0, or -1 when the agent is not running.
 */
int ta_api_pause(int on) TA_HIDDEN;
int ta_api_paused(void) TA_HIDDEN;
/* When the pause in force began (ticks). */
uint64_t ta_api_pause_ticks(void) TA_HIDDEN;
/* Around a fork (agent.c's handlers): the registry's lock taken, so that
 * no other thread holds it when the process is copied (the child's copy
 * would stay held for ever), then let go in the parent and in the child. */
void ta_api_fork_prepare(void) TA_HIDDEN;
void ta_api_fork_release(void) TA_HIDDEN;
/* A forked child: the hooks' gate reads "not started" (2), whatever the
 * parent's pause or channels made it, so that the child's first hook
 * restarts the agent; ta_api_restarted then sets it as they want. */
void ta_api_fork_child(void) TA_HIDDEN;
void ta_api_restarted(void) TA_HIDDEN;
/* The exiting thread's zone stack is unmapped (ring.c's ta_thread_exit). */
void ta_api_thread_exit(void) TA_HIDDEN;
/* `ctl PID channels LIST`: every channel as the list says (the syntax of
 * TRACEAGENT_CHANNELS), each switch marked; while paused, what resume
 * restores.  0, or -1 when the agent is not running. */
int ta_api_channels_set(const char *spec) TA_HIDDEN;
/* "name=on,name=off,..." (what each channel wants) into out; its length. */
size_t ta_api_channels_text(char *out, size_t size) TA_HIDDEN;
/* The agent stopped: every channel reads off, so the macros cost their
 * load and branch only. */
void ta_api_stop(void) TA_HIDDEN;

/*
 * The API's functions (include/traceagent.h's weak references) with their
 * own addresses, for `traceagent attach` to point the program's GOT
 * entries at (got.h; ta_zone_exit_ first: a zone entered through a new
 * entry must find its exit's entry pointed already).  *n is set.
 */
struct ta_got_sym;
const struct ta_got_sym *ta_api_got_syms(size_t *n) TA_HIDDEN;
/* on: every channel but `functions` reads "not known yet", what they want
 * kept, and a call that comes in waits for the hold's end (at most 10 s;
 * one made on the holding thread, or that waited in vain, is counted lost,
 * cause `starting`); off: each reads what it wants again (off while
 * paused).  `traceagent attach` holds them while it points the API's GOT
 * entries, then the hooks', so that a macro's events start together, and
 * no later than the functions'. */
void ta_api_hold(int on) TA_HIDDEN;
/* A new dump of an attached agent (agent.c's ta_agent_reattach), before
 * ta_api_start: every site and channel written to it again, and each
 * channel's word back, by ta_api_start, to what the channel wants
 * (ta_api_stop zeroed them at the detach). */
void ta_api_rewind(void) TA_HIDDEN;

/* ---- library calls (the interposers: libcalls.c) ------------------------------- */

/* The TA_LC_* classes the interposers record right now: the settings'
 * classes while the agent runs, else 0 (relaxed atomic; the interposers
 * read it once a call). */
extern uint32_t ta_lc_on TA_HIDDEN;
/* The classes TRACEAGENT_LIBCALLS names explicitly (libcalls.c sets it
 * in its constructor): before the agent runs, ta_lc_on holds them, so
 * that the first such call starts the agent as a hook would. */
extern uint32_t ta_lc_asked TA_HIDDEN;
/* Turns recording on for the settings' classes (the agent is running)
 * or off. */
void ta_libcalls_enable(int on) TA_HIDDEN;

#endif
