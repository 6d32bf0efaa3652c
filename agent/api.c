/* SPDX-License-Identifier: MIT */
/*
 * api.c - what include/traceagent.h's macros call: zones, frame marks,
 * counters, messages, instants, and channels switched at run time; the
 * entries' own addresses for an attach (ta_api_got_syms).
 *
 * A macro's call site has a static descriptor (struct ta_site_) in the
 * program.  Its first use registers it here: the agent copies its name,
 * file and line into memory of its own (a library unloaded later takes its
 * descriptors with it), queues it for the next SITES chunk, and points the
 * descriptor's gate at its channel's on/off word, which the macros read
 * before they call.  Events carry the descriptor's address: a zone is an
 * enter and an exit of it, as a function call is, so every view that shows
 * functions shows zones; the rest are EXT events naming it.
 *
 * Channels: `functions` (the hooks, through ta_fn_gate), `user`, the
 * library-call classes (through ta_lc_on), and the program's own.  A switch
 * is recorded as an EXT event on the thread that made it, in its order with
 * that thread's events.
 *
 * The entries are the hot path of the API (agent/HOTPATH.md's rules hold):
 * this file keeps them and the gate they inline, and nothing else.  What
 * a site's first use registers is api_registry.c's, the switching of
 * channels api_chan.c's; the state they share is api_int.h's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "agent.h"
#include "api.h"
#include "api_int.h"
#include "api_site.h"
#include "apifmt.h"
#include "clock.h"
#include "dump.h"
#include "filter.h"
#include "format.h"
#include "got.h"
#include "keep.h"
#include "ring.h"
#include "settings.h"

#define TA_PUBLIC __attribute__((visibility("default"), no_instrument_function))

_Static_assert(TA_KIND_ZONE_ == TA_SITE_ZONE && TA_KIND_FRAME_ == TA_SITE_FRAME &&
		   TA_KIND_COUNTER_ == TA_SITE_COUNTER && TA_KIND_MESSAGE_ == TA_SITE_MESSAGE &&
		   TA_KIND_INSTANT_ == TA_SITE_INSTANT && TA_KIND_ZONE_END_ == TA_SITE_ZONE_END &&
		   TA_KIND_TEXT_ == TA_SITE_TEXT,
	       "the public header's site kinds are the format's");

/* ---- a site's gate ------------------------------------------------------------- */

/* 0 once no attach holds the API's words; -1 when the caller's thread is
 * the holder's (a handler that interrupted it) or the hold outlasted the
 * wait: the event is counted lost. */
static int hold_wait(void)
{
	/* Acquire: pairs with the release in ta_api_hold, after the words. */
	uint32_t h = __atomic_load_n(&ta_api_hold_tid, __ATOMIC_ACQUIRE);
	struct timespec nap = {0, HOLD_NAP_NS};
	int saved = errno;

	if (!h)
		return 0;
	if (h == (uint32_t)syscall(SYS_gettid))
		return -1;
	for (int i = 0; i < HOLD_WAIT_NAPS && h; i++) {
		nanosleep(&nap, NULL);
		h = __atomic_load_n(&ta_api_hold_tid, __ATOMIC_ACQUIRE);
	}
	errno = saved;
	return h ? -1 : 0;
}

/* ta_api_site_on's way out (api_int.h): s registered, the agent's start waited for; whether
 * its events are recorded, -1 when the calling thread is inside its own
 * start (neither can be done there). */
__attribute__((noinline, cold)) int ta_api_site_slow(struct ta_site_ *s)
{
	int ok;

	if (__atomic_load_n(&s->gate, __ATOMIC_ACQUIRE) == &s->first && ta_api_site_register(s) < 0)
		return -1;
	if (__atomic_load_n(s->gate, __ATOMIC_RELAXED) == CHAN_STARTING) {
		TA_GUARD_ENTER();
		ok = ta_ring_start();
		TA_GUARD_LEAVE();
		/* Running, with the word still so: an attach's hold. */
		if (ok < 0 || hold_wait() < 0)
			return -1;
	}
	/* Started (ta_agent_ensure_started's acquire of the state pairs with
	 * its release, after ta_api_start set the words), held and let go, or
	 * not tracing (ta_api_stop zeroed them). */
	return __atomic_load_n(s->gate, __ATOMIC_RELAXED) == 1;
}

/* ---- zones ------------------------------------------------------------------- */

/* TA_ZONE_BEGIN's zones open on this thread: each site's address, bit 0
 * set when the zone was recorded (its channel was on). */
#define ZSTACK_MAX 256
/* Mapped at the thread's first TA_ZONE_BEGIN, not a TLS array: the agent's
 * whole TLS must fit in the static TLS glibc keeps for a library dlopen'ed
 * later (about 512 bytes; `traceagent attach`).  mmap, not malloc: a
 * signal handler may open the thread's first zone.  Unmapped when the
 * thread exits (ta_api_thread_exit). */
static __thread uint64_t *zstack __attribute__((tls_model("initial-exec")));
static __thread uint32_t zdepth __attribute__((tls_model("initial-exec")));
#define ZSTACK_BYTES (ZSTACK_MAX * sizeof(uint64_t))

/* The thread's zone stack; NULL if it cannot be mapped.  A handler that
 * maps it between this thread's mmap and its exchange wins; the loser
 * unmaps its own (relaxed: only this thread and its handlers use it). */
static uint64_t *zstack_get(void)
{
	uint64_t *z = __atomic_load_n(&zstack, __ATOMIC_RELAXED), *none = NULL;
	void *p;

	if (TA_LIKELY(z != NULL))
		return z;
	p = mmap(NULL, ZSTACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (!__atomic_compare_exchange_n(&zstack, &none, (uint64_t *)p, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		munmap(p, ZSTACK_BYTES);
		return none;
	}
	return p;
}

void ta_api_thread_exit(void)
{
	uint64_t *z = __atomic_exchange_n(&zstack, NULL, __ATOMIC_RELAXED);

	if (z)
		munmap(z, ZSTACK_BYTES);
	zdepth = 0;
}

TA_PUBLIC struct ta_site_ *ta_zone_enter_(struct ta_site_ *s)
{
	/* Filters: a zone is recorded where a callee would be. */
	if (!ta_api_site_on(s) || !ta_filter_lets())
		return NULL;
	ta_record((uint64_t)(uintptr_t)s);
	return s;
}

TA_PUBLIC void ta_zone_exit_(struct ta_site_ *s)
{
	ta_record((uint64_t)(uintptr_t)s | TA_REC_EXIT);
}

TA_PUBLIC void ta_zone_begin_(struct ta_site_ *s)
{
	ta_api_zone_push(s, ta_api_site_on(s) && ta_filter_lets());
}

void ta_api_zone_push(struct ta_site_ *s, int on)
{
	/* Taken before it is filled: a handler's zones go above it. */
	uint32_t d = zdepth++;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t *zs = zstack_get();

	if (d >= ZSTACK_MAX || !zs) {
		if (on)
			ta_lost_here(TA_LOST_ZONE_DEPTH);
		return;
	}
	zs[d] = (uint64_t)(uintptr_t)s | (uint64_t)on;
	if (on)
		ta_record((uint64_t)(uintptr_t)s);
}

TA_PUBLIC void ta_zone_end_(struct ta_site_ *s)
{
	uint32_t d = zdepth;
	uint64_t z;

	if (TA_UNLIKELY(d == 0)) {
		/* An END without a BEGIN: where it was. */
		uint64_t v = (uint64_t)(uintptr_t)s;

		(void)ta_api_site_slow(s); /* registered: the dump says where it is */
		ta_record_ext(TA_EXT_ZONE_UNMATCHED, &v, 1);
		return;
	}
	z = d <= ZSTACK_MAX && zstack ? zstack[d - 1] : 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	zdepth = d - 1;
	if (z & 1)
		ta_record((z & ~1ull) | TA_REC_EXIT);
}

/* ---- texts, values, marks, counters, instants ----------------------------------- */

static void record_text(uint32_t kind, struct ta_site_ *s, const char *text, uint32_t len,
			uint32_t flags)
{
	uint64_t v[TA_EXT_MAX_VALUES];
	uint32_t n = ta_text_pack(v, (uint64_t)(uintptr_t)s, text, len, flags);

	ta_record_ext(kind, v, n);
}

TA_PUBLIC void ta_zone_text_(struct ta_site_ *s, const char *text)
{
	size_t len;

	if (!ta_api_site_on(s))
		return;
	if (!text)
		text = "(null)";
	len = strnlen(text, TA_TEXT_MAX + 1);
	record_text(TA_EXT_ZONE_TEXT, s, text, len > TA_TEXT_MAX ? TA_TEXT_MAX : (uint32_t)len,
		    len > TA_TEXT_MAX ? TA_TEXT_F_CUT : 0);
}

TA_PUBLIC void ta_zone_value_(struct ta_site_ *s, uint64_t value)
{
	if (ta_api_site_on(s))
		ta_record_ext4(TA_EXT_ZONE_VALUE, value, 0, 0, 0, 1);
}

void ta_api_record_site(uint32_t kind, struct ta_site_ *s)
{
	if (ta_api_site_on(s))
		ta_record_ext4(kind, (uint64_t)(uintptr_t)s, 0, 0, 0, 1);
}

TA_PUBLIC void ta_frame_mark_(struct ta_site_ *s)
{
	uint64_t pre;

	if (TA_LIKELY(!__atomic_load_n(&ta_keep_on, __ATOMIC_RELAXED))) {
		ta_api_record_site(TA_EXT_FRAME, s);
		return;
	}
	/* Keep mode judges the frame on the counter around the mark's own
	 * event, so a kept window [pre, post) holds the marks that bound it:
	 * pre past every earlier record of this thread, post past the
	 * mark's event, every later record at post or after (a coarse
	 * counter would tie them, ta_ticks_after). */
	pre = ta_ticks_after(ta_ticks());
	ta_api_record_site(TA_EXT_FRAME, s);
	if (ta_api_site_on(s))
		ta_keep_mark(TA_KEEP_MARK, s->name, pre, ta_ticks_after(ta_ticks()));
}

TA_PUBLIC void ta_instant_(struct ta_site_ *s)
{
	ta_api_record_site(TA_EXT_INSTANT, s);
}

TA_PUBLIC void ta_counter_(struct ta_site_ *s, int64_t value)
{
	if (ta_api_site_on(s))
		ta_record_ext4(TA_EXT_COUNTER, (uint64_t)(uintptr_t)s, TA_COUNTER_INT,
			       (uint64_t)value, 0, 3);
}

TA_PUBLIC void ta_counter_f_(struct ta_site_ *s, double value)
{
	uint64_t bits;

	memcpy(&bits, &value, sizeof(value));
	if (ta_api_site_on(s))
		ta_record_ext4(TA_EXT_COUNTER, (uint64_t)(uintptr_t)s, TA_COUNTER_DOUBLE, bits, 0,
			       3);
}

/* ---- messages -------------------------------------------------------------------- */

void ta_api_vtext(uint32_t kind, struct ta_site_ *s, const char *fmt, va_list ap)
{
	char text[TA_TEXT_MAX];
	int cut;
	size_t len;

	if (!fmt)
		fmt = "(null)";
	/* The formatting calls snprintf: nothing it does is recorded. */
	TA_GUARD_ENTER();
	len = ta_api_format(text, sizeof(text), &cut, fmt, ap);
	TA_GUARD_LEAVE();
	record_text(kind, s, text, (uint32_t)len, cut ? TA_TEXT_F_CUT : 0);
}

TA_PUBLIC void ta_message_(struct ta_site_ *s, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!ta_api_site_on(s))
		return;
	va_start(ap, fmt);
	ta_api_vtext(TA_EXT_MESSAGE, s, fmt, ap);
	va_end(ap);
	errno = saved;
}

/* ---- switching channels ----------------------------------------------------------- */

TA_PUBLIC int ta_channel_set_(const char *name, int on)
{
	uint32_t id;
	sigset_t old;
	int saved = errno;

	if (!name)
		return -1;
	TA_GUARD_ENTER();
	/* The settings give a new channel its state, and a switch is recorded
	 * once the agent runs: start it, or wait for its start.  Inside the
	 * thread's own start (a handler's call) neither can be: the switch is
	 * not made, and counted lost as such an event is. */
	if (ta_api_not_started() && ta_ring_start() < 0) {
		TA_GUARD_LEAVE();
		ta_lost_here(TA_LOST_STARTING);
		errno = saved;
		return -1;
	}
	ta_api_lock(&old);
	id = ta_chan_find(name);
	ta_api_unlock(&old);
	TA_GUARD_LEAVE();
	if (id == TA_CHANNELS_MAX) {
		errno = saved;
		return -1;
	}
	/* Running: the settings' states are in place (ta_api_start). */
	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING)
		ta_chan_switch(id, on != 0, 1);
	errno = saved;
	return 0;
}

/* ---- the functions under hidden names (`traceagent attach`) ------------------------ */

/* Their own addresses, reached PC-relative: the name would be looked up
 * in the global scope first, where a dlopen'ed agent is not. */
#define API_FUNCS(X)                                                                               \
	X(ta_zone_exit_)                                                                           \
	X(ta_zone_enter_)                                                                          \
	X(ta_zone_begin_)                                                                          \
	X(ta_zone_end_)                                                                            \
	X(ta_zone_text_)                                                                           \
	X(ta_zone_value_)                                                                          \
	X(ta_frame_mark_)                                                                          \
	X(ta_counter_)                                                                             \
	X(ta_counter_f_)                                                                           \
	X(ta_message_)                                                                             \
	X(ta_instant_)                                                                             \
	X(ta_channel_set_)

#define API_ALIAS(name)                                                                            \
	extern __typeof__(name) api_at_##name __attribute__((alias(#name), visibility("hidden")));
API_FUNCS(API_ALIAS)
#undef API_ALIAS
/* apizone.c's, aliased there. */
#define API_EXTERN(name)                                                                           \
	extern __typeof__(name) api_at_##name __attribute__((visibility("hidden")));
APIZONE_FUNCS(API_EXTERN)
#undef API_EXTERN

const struct ta_got_sym *ta_api_got_syms(size_t *n)
{
	static const struct ta_got_sym syms[] = {
#define API_SYM(name) {#name, (uintptr_t)&api_at_##name, 0, 1},
	    API_FUNCS(API_SYM) APIZONE_FUNCS(API_SYM) API_MEM_FUNCS(API_SYM)
#undef API_SYM
	};

	*n = sizeof(syms) / sizeof(syms[0]);
	return syms;
}
