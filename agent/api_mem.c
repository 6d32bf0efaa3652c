/* SPDX-License-Identifier: MIT */
/*
 * api_mem.c - what include/traceagent.h's memory, lock-name and fiber
 * macros call: TA_ALLOC/TA_FREE (and their named pools), TA_LOCK_NAME,
 * TA_FIBER_ENTER/TA_FIBER_LEAVE.
 *
 * Each is one EXT event on the calling thread (format.h's TA_EXT_POOL_ALLOC
 * ... TA_EXT_FIBER_LEAVE), gated by its site's channel as api.c's entries
 * are: the hot path of the API (agent/HOTPATH.md's rules hold).  A pool is
 * its site's name, a literal kept by the registry; a lock's or a fiber's
 * name is the program's string, copied into the event (at most TA_NAME_MAX
 * bytes: a hostile string is cut, a NULL one is "(null)").
 *
 * Fibers are the analyzer's: the agent records where a fiber entered and
 * left a thread, and the thread's events in between are the fiber's.  The
 * thread remembers whether its ENTER was recorded, so that its LEAVE is
 * recorded exactly then, whatever the channel did in between.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "api.h"
#include "api_int.h"
#include "api_site.h"
#include "format.h"
#include "ring.h"

#define TA_PUBLIC __attribute__((visibility("default"), no_instrument_function))

_Static_assert(TA_KIND_ALLOC_ == TA_SITE_ALLOC && TA_KIND_FREE_ == TA_SITE_FREE &&
		   TA_KIND_LOCK_NAME_ == TA_SITE_LOCK_NAME && TA_KIND_FIBER_ == TA_SITE_FIBER,
	       "the public header's site kinds are the format's");
_Static_assert(TA_TEXT_VALUES(TA_NAME_MAX) <= TA_EXT_MAX_VALUES, "a name fits an event");

/* Whether the thread's last TA_FIBER_ENTER was recorded and no LEAVE
 * followed it (only this thread and its handlers use it). */
static __thread uint32_t fiber_in __attribute__((tls_model("initial-exec")));

TA_PUBLIC void ta_alloc_(struct ta_site_ *s, const volatile void *ptr, uint64_t size)
{
	if (ta_api_site_on(s))
		ta_record_ext4(TA_EXT_POOL_ALLOC, (uint64_t)(uintptr_t)s, (uint64_t)(uintptr_t)ptr,
			       size, 0, 3);
}

TA_PUBLIC void ta_free_(struct ta_site_ *s, const volatile void *ptr)
{
	if (ta_api_site_on(s))
		ta_record_ext4(TA_EXT_POOL_FREE, (uint64_t)(uintptr_t)s, (uint64_t)(uintptr_t)ptr,
			       0, 0, 2);
}

/* An event of kind whose first value is first, then name as a text. */
static void record_name(uint32_t kind, uint64_t first, const char *name)
{
	uint64_t v[TA_TEXT_VALUES(TA_NAME_MAX)];
	size_t len;
	uint32_t n;

	if (!name)
		name = "(null)";
	len = strnlen(name, TA_NAME_MAX + 1);
	n = ta_text_pack(v, first, name, len > TA_NAME_MAX ? TA_NAME_MAX : (uint32_t)len,
			 len > TA_NAME_MAX ? TA_TEXT_F_CUT : 0);
	ta_record_ext(kind, v, n);
}

TA_PUBLIC void ta_lock_name_(struct ta_site_ *s, const volatile void *lock, const char *name)
{
	if (ta_api_site_on(s))
		record_name(TA_EXT_LOCK_NAME, (uint64_t)(uintptr_t)lock, name);
}

TA_PUBLIC void ta_fiber_enter_(struct ta_site_ *s, const char *name)
{
	if (!ta_api_site_on(s))
		return;
	record_name(TA_EXT_FIBER_ENTER, (uint64_t)(uintptr_t)s, name);
	fiber_in = 1;
}

TA_PUBLIC void ta_fiber_leave_(struct ta_site_ *s)
{
	if (!fiber_in)
		return;
	fiber_in = 0;
	ta_record_ext4(TA_EXT_FIBER_LEAVE, (uint64_t)(uintptr_t)s, 0, 0, 0, 1);
}

/* Their own addresses for an attach (api.c's ta_api_got_syms). */
#define API_MEM_ALIAS(name)                                                                        \
	extern __typeof__(name) api_at_##name __attribute__((alias(#name), visibility("hidden")));
API_MEM_FUNCS(API_MEM_ALIAS)
#undef API_MEM_ALIAS
