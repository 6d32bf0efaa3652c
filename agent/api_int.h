/* SPDX-License-Identifier: MIT */
/*
 * api_int.h - what the manual API's three files share, and nothing
 * outside them includes: the registry's state (api_registry.c), which the
 * switching of channels (api_chan.c) changes and the entries (api.c) read.
 * The calls go down: api.c to both, api_chan.c to the registry.
 */
#ifndef TA_API_INT_H
#define TA_API_INT_H

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "compiler.h"
#include "format.h"
#include "ring.h"

/* A channel word's "not known yet" (before the start, during an attach's
 * hold): the macros call in and the agent waits, as ta_fn_gate's 2. */
#define CHAN_STARTING 2u
/* How an event waits for an attach's hold to end. */
#define HOLD_NAP_NS    100000L /* 0.1 ms */
#define HOLD_WAIT_NAPS 100000  /* 10 s, as a fork waits for a start */

/* ---- the registry (api_registry.c) ---- */

/* Each channel's on/off word, which sites' gates point at (relaxed
 * atomics): what it wants (ta_chan_want) unless paused, then 0. */
extern uint32_t ta_chan_on[TA_CHANNELS_MAX];
extern uint32_t ta_chan_want[TA_CHANNELS_MAX];
/* The channels' names, written before ta_nchan is raised (release). */
extern char ta_chan_name[TA_CHANNELS_MAX][TA_CHANNEL_NAME_MAX + 1];
extern uint32_t ta_nchan;
/* What the first CHANNELS chunk says of each channel. */
extern uint32_t ta_chan_first_on[TA_CHANNELS_MAX];
/* `traceagent ctl PID pause`: every gate reads off; changed under the
 * lock, with ta_chan_on. */
extern uint32_t ta_api_pause_on;
/* The thread id of an attach holding the words (ta_api_hold), else 0. */
extern uint32_t ta_api_hold_tid;
/* Which setting is in force: 0 TRACEAGENT_CHANNELS, 1 _ALT. */
extern uint32_t ta_api_spec_alt;

/* The setting in force's text. */
const char *ta_api_spec_now(void);
/* The registry's spin lock, taken with every signal blocked (old: the
 * mask to restore). */
void ta_api_lock(sigset_t *old);
void ta_api_unlock(const sigset_t *old);
/* The channel named name (NULL: user), created as the settings say;
 * TA_CHANNELS_MAX when there is no room.  Under the lock. */
uint32_t ta_chan_find(const char *name);
/* Whether the agent is to be started, or its start (or a forked child's
 * restart) waited for, before an API event is judged. */
int ta_api_not_started(void);
/* Registers s if nobody has (its record, its gate); -1 when the calling
 * thread is inside its own start, 0 otherwise. */
int ta_api_site_register(struct ta_site_ *s);
/* The same for a caller that holds the lock and knows the agent runs. */
void ta_api_site_register_locked(struct ta_site_ *s);

/* ---- the channels switched (api_chan.c) ---- */

/* Switches channel id, recorded when record is set. */
void ta_chan_switch(uint32_t id, uint32_t on, int record);

/* ---- for the entries of the API's other files (api_mem.c) ---- */

/* A printf-formatted text of site s recorded as an EXT event of kind
 * (TA_MESSAGE, TA_APP_INFO): cut at TA_TEXT_MAX, NULL fmt "(null)". */
void ta_api_vtext(uint32_t kind, struct ta_site_ *s, const char *fmt, va_list ap);

/* An EXT event of kind whose one value is s, when s is on (site_on). */
void ta_api_record_site(uint32_t kind, struct ta_site_ *s);

/* The entries of api_mem.c, with their own addresses under api_at_NAME
 * (aliases defined there) for ta_api_got_syms. */
#define API_MEM_FUNCS(X)                                                                           \
	X(ta_alloc_)                                                                               \
	X(ta_free_)                                                                                \
	X(ta_lock_name_)                                                                           \
	X(ta_fiber_leave_)                                                                         \
	X(ta_fiber_enter_)
#define API_MEM_DECL(name)                                                                         \
	extern __typeof__(name) api_at_##name __attribute__((visibility("hidden")));
API_MEM_FUNCS(API_MEM_DECL)
#undef API_MEM_DECL

/* ---- the entries (api.c) ---- */

/* TA_ZONE_BEGIN's push of s on the thread's zone stack, recorded when on
 * (an enter of s). */
void ta_api_zone_push(struct ta_site_ *s, int on);

/* ---- run-time names, frames with gaps, units, app info, sections (apizone.c) ---- */

/* Their entries, which `traceagent attach` points the program at too
 * (api.c's ta_api_got_syms); apizone.c defines each's api_at_ alias. */
#define APIZONE_FUNCS(X)                                                                           \
	X(ta_zone_enter_dyn_)                                                                      \
	X(ta_zone_begin_dyn_)                                                                      \
	X(ta_frame_begin_)                                                                         \
	X(ta_frame_end_)                                                                           \
	X(ta_counter_config_)                                                                      \
	X(ta_app_info_)                                                                            \
	X(ta_section_enter_)                                                                       \
	X(ta_section_leave_)
/* Whether kind is one of the site kinds of apizone.c's macros. */
static inline int ta_apizone_kind(uint32_t kind)
{
	return kind >= TA_SITE_ZONE_DYN && kind <= TA_SITE_COUNTER_CONFIG;
}

#endif
