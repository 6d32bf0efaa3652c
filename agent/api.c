/* SPDX-License-Identifier: MIT */
/*
 * api.c - what include/traceagent.h's macros call: zones, frame marks,
 * counters, messages, instants, and channels switched at run time.
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
#include "apifmt.h"
#include "clock.h"
#include "dump.h"
#include "filter.h"
#include "format.h"
#include "got.h"
#include "ring.h"
#include "settings.h"

#define TA_PUBLIC __attribute__((visibility("default"), no_instrument_function))

_Static_assert(TA_KIND_ZONE_ == TA_SITE_ZONE && TA_KIND_FRAME_ == TA_SITE_FRAME &&
		   TA_KIND_COUNTER_ == TA_SITE_COUNTER && TA_KIND_MESSAGE_ == TA_SITE_MESSAGE &&
		   TA_KIND_INSTANT_ == TA_SITE_INSTANT && TA_KIND_ZONE_END_ == TA_SITE_ZONE_END &&
		   TA_KIND_TEXT_ == TA_SITE_TEXT,
	       "the public header's site kinds are the format's");

uint32_t ta_lc_on TA_STARTUP_DATA;
uint32_t ta_lc_asked TA_STARTUP_DATA;

uint32_t ta_fn_gate = 2;

/* ---- channels ------------------------------------------------------------------ */

/* Each channel's on/off word, which sites' gates point at (relaxed
 * atomics: see ta_fn_gate): what the channel wants (chan_want) unless the
 * recording is paused, then 0.  Before the agent has started, CHAN_STARTING
 * ("not known yet", as ta_fn_gate's 2): the macros read it as on and call
 * in, and the agent waits for the start (site_slow), as the hooks do,
 * rather than drop an event the settings may well want.  Names are written
 * before nchan is raised (release) and never change. */
#define CHAN_STARTING 2u
static uint32_t chan_on[TA_CHANNELS_MAX] = {[0 ... TA_CHANNELS_MAX - 1] = CHAN_STARTING};
static uint32_t chan_want[TA_CHANNELS_MAX];
/* `traceagent ctl PID pause` (control.c): every gate reads off; changed
 * under the registry's lock, with chan_on. */
static uint32_t paused;
/* While an attach points the API's GOT entries at the agent (ta_api_hold):
 * the holder's thread id, else 0.  The words read CHAN_STARTING
 * meanwhile, so a macro whose entry is pointed already calls in and waits
 * for the hold's end (hold_wait), as one made during the start does. */
static uint32_t hold_tid;
#define HOLD_NAP_NS   100000L /* 0.1 ms */
#define HOLD_WAIT_NAPS 100000 /* 10 s, as a fork waits for a start */
static char chan_name[TA_CHANNELS_MAX][TA_CHANNEL_NAME_MAX + 1] = {
    "functions", "user", "alloc", "lock", "io", "sleep"};
static uint32_t nchan = TA_CHANNEL_FIRST_OWN;
/* Channels created since the last CHANNELS chunk, and their state then. */
static uint32_t chan_written;
static uint32_t chan_first_on[TA_CHANNELS_MAX];
/* A word that reads off for good: the gate of a site the agent refuses. */
static const uint32_t never_on;
/* Which of the two settings is in force: 0 TRACEAGENT_CHANNELS, 1 _ALT. */
static uint32_t spec_alt;

static const char *spec_now(void)
{
	return __atomic_load_n(&spec_alt, __ATOMIC_RELAXED) ? ta_cfg.channels_alt
							    : ta_cfg.channels;
}

/* On only when on for sure: not "not known yet" (before the start, or an
 * attach's hold). */
uint32_t ta_api_lc_mask(void)
{
	uint32_t m = 0;

	if (__atomic_load_n(&chan_on[TA_CHANNEL_ALLOC], __ATOMIC_RELAXED) == 1)
		m |= TA_LC_ALLOC;
	if (__atomic_load_n(&chan_on[TA_CHANNEL_LOCK], __ATOMIC_RELAXED) == 1)
		m |= TA_LC_LOCK;
	if (__atomic_load_n(&chan_on[TA_CHANNEL_IO], __ATOMIC_RELAXED) == 1)
		m |= TA_LC_IO;
	if (__atomic_load_n(&chan_on[TA_CHANNEL_SLEEP], __ATOMIC_RELAXED) == 1)
		m |= TA_LC_SLEEP;
	return m;
}

/* The words other parts of the agent read for a built-in channel. */
static void chan_effect(uint32_t id, uint32_t on)
{
	if (id == TA_CHANNEL_FUNCTIONS)
		__atomic_store_n(&ta_fn_gate, on, __ATOMIC_RELAXED);
	else if (id >= TA_CHANNEL_ALLOC && id <= TA_CHANNEL_SLEEP &&
		 __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING)
		ta_libcalls_enable(1);
}

static void lock(sigset_t *old);
static void unlock(const sigset_t *old);

/* chan_switch's change, under the lock; whether it took effect (not
 * paused). */
static int chan_set_locked(uint32_t id, uint32_t on)
{
	int live;

	__atomic_store_n(&chan_want[id], on, __ATOMIC_RELAXED);
	live = !__atomic_load_n(&paused, __ATOMIC_RELAXED);
	if (live) {
		__atomic_store_n(&chan_on[id], on, __ATOMIC_RELAXED);
		chan_effect(id, on);
	}
	return live;
}

/* Switches channel id; recorded (when record is set) so that the channel's
 * events of this thread fall strictly between its on and its off.  While
 * paused, only what resume restores changes (nothing is recorded).  The
 * lock orders the switch with pause and resume; the events are recorded
 * outside it (a lossless ring may wait for the flusher, which takes it). */
static void chan_switch(uint32_t id, uint32_t on, int record)
{
	uint64_t v[2] = {id, on};
	sigset_t old;
	int live;

	if (__atomic_load_n(&chan_want[id], __ATOMIC_RELAXED) == on)
		return;
	if (on && record && !__atomic_load_n(&paused, __ATOMIC_RELAXED))
		ta_record_ext(TA_EXT_CHANNEL, v, 2);
	lock(&old);
	live = chan_set_locked(id, on);
	unlock(&old);
	if (!on && record && live)
		ta_record_ext(TA_EXT_CHANNEL, v, 2);
}

/* ---- the registry's lock ------------------------------------------------------- */

/* Registration and channel creation happen once per site or channel, from
 * any thread or signal handler: a spin lock taken with signals blocked,
 * so no handler of the holder's thread can spin on it. */
static uint32_t api_lock;
/* Set (release) when a site or channel is added, cleared by the writer:
 * ta_api_write's check without the lock, once per EVENTS chunk. */
static uint32_t api_pending = 1; /* the built-in channels */

/* Takes the lock, giving up after max_tries yields (0: never); 0 when
 * taken, -1 (signals as they were) when not. */
static int lock_tries(sigset_t *old, int max_tries)
{
	sigset_t all;
	int tries = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	while (__atomic_exchange_n(&api_lock, 1, __ATOMIC_ACQUIRE)) {
		if (max_tries && ++tries > max_tries) {
			pthread_sigmask(SIG_SETMASK, old, NULL);
			return -1;
		}
		sched_yield();
	}
	return 0;
}

static void lock(sigset_t *old)
{
	(void)lock_tries(old, 0);
}

static void unlock(const sigset_t *old)
{
	__atomic_store_n(&api_lock, 0, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* The channel named name (NULL: user), created with the state the settings
 * give it; TA_CHANNELS_MAX when there is no room.  Under the lock. */
static uint32_t chan_find(const char *name)
{
	uint32_t n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	size_t len;

	if (!name)
		return TA_CHANNEL_USER;
	len = strnlen(name, TA_CHANNEL_NAME_MAX + 1);
	if (len > TA_CHANNEL_NAME_MAX)
		len = TA_CHANNEL_NAME_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (!strncmp(chan_name[i], name, len) && !chan_name[i][len])
			return i;
	if (n == TA_CHANNELS_MAX)
		return TA_CHANNELS_MAX;
	memcpy(chan_name[n], name, len);
	chan_name[n][len] = 0;
	chan_want[n] = chan_first_on[n] = (uint32_t)ta_channel_list_has(spec_now(), chan_name[n]);
	chan_on[n] = __atomic_load_n(&paused, __ATOMIC_RELAXED) ? 0 : chan_want[n];
	/* Release: the name before the count (switch_all reads without the
	 * lock). */
	__atomic_store_n(&nchan, n + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&api_pending, 1, __ATOMIC_RELEASE);
	return n;
}

/* ---- sites --------------------------------------------------------------------- */

struct site_rec {
	uint64_t addr;
	uint32_t line;
	uint16_t kind, chan;
	struct site_rec *next;
	uint16_t name_len, file_len;
	char text[]; /* name, then file */
};

/* The records, in order of registration, in mmap'd memory (a handler may
 * register: no malloc). */
static struct site_rec *sites_head, *sites_tail, *sites_unwritten;
static char *arena;
static size_t arena_left;

static struct site_rec *site_alloc(size_t text)
{
	size_t need = (sizeof(struct site_rec) + text + 7) & ~(size_t)7;
	struct site_rec *r;

	if (need > arena_left) {
		void *p = mmap(NULL, 1u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			       -1, 0);
		if (p == MAP_FAILED)
			return NULL;
		arena = p;
		arena_left = 1u << 20;
	}
	r = (struct site_rec *)(void *)arena;
	arena += need;
	arena_left -= need;
	return r;
}

static size_t bounded_len(const char *s)
{
	return s ? strnlen(s, TA_SITE_NAME_MAX) : 0;
}

/* Whether the agent is to be started, or its start (or a forked child's
 * restart) waited for, before an API event is judged. */
static int not_started(void)
{
	uint32_t st = __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE);

	return st == TA_S_UNINIT || st == TA_S_STARTING || st == TA_S_FORKED;
}

/* Registers s if nobody has: its record and its gate.  -1 (s left
 * unregistered) when the calling thread is inside its own start (a signal
 * handler's call), where the settings that decide the channel's state may
 * not be read yet and the start cannot be waited for; 0 otherwise. */
static int site_register(struct ta_site_ *s)
{
	const uint32_t *gate = &never_on;
	sigset_t old;

	TA_GUARD_ENTER();
	/* The settings decide the channel's state: start the agent first, or
	 * wait for the thread that is starting it. */
	if (not_started() && ta_ring_start() < 0) {
		TA_GUARD_LEAVE();
		return -1;
	}
	lock(&old);
	if (s->gate != &s->first)
		goto out; /* another thread did it meanwhile */
	if (s->abi >= 1 && s->kind >= TA_SITE_ZONE && s->kind <= TA_SITE_TEXT) {
		uint32_t ch = chan_find(s->channel);
		size_t nl = bounded_len(s->name), fl = bounded_len(s->file);
		struct site_rec *r = ch < TA_CHANNELS_MAX ? site_alloc(nl + fl) : NULL;

		if (r) {
			r->addr = (uint64_t)(uintptr_t)s;
			r->line = s->line;
			r->kind = s->kind;
			r->chan = (uint16_t)ch;
			r->next = NULL;
			r->name_len = (uint16_t)nl;
			r->file_len = (uint16_t)fl;
			if (nl)
				memcpy(r->text, s->name, nl);
			if (fl)
				memcpy(r->text + nl, s->file, fl);
			if (sites_tail)
				sites_tail->next = r;
			else
				sites_head = r;
			sites_tail = r;
			if (!sites_unwritten)
				sites_unwritten = r;
			__atomic_store_n(&api_pending, 1, __ATOMIC_RELEASE);
			gate = &chan_on[ch];
		} else if (ch == TA_CHANNELS_MAX) {
			ta_warn("%s:%u: channel '%.31s' is one more than the %u channels there can be; "
				"its events are not recorded",
				s->file ? s->file : "?", s->line, s->channel, TA_CHANNELS_MAX);
		}
	}
	/* Release: the record before the gate that lets events name it. */
	__atomic_store_n(&s->gate, (const volatile uint32_t *)gate, __ATOMIC_RELEASE);
out:
	unlock(&old);
	TA_GUARD_LEAVE();
	return 0;
}

/* 0 once no attach holds the API's words; -1 when the caller's thread is
 * the holder's (a handler that interrupted it) or the hold outlasted the
 * wait: the event is counted lost. */
static int hold_wait(void)
{
	/* Acquire: pairs with the release in ta_api_hold, after the words. */
	uint32_t h = __atomic_load_n(&hold_tid, __ATOMIC_ACQUIRE);
	struct timespec nap = {0, HOLD_NAP_NS};
	int saved = errno;

	if (!h)
		return 0;
	if (h == (uint32_t)syscall(SYS_gettid))
		return -1;
	for (int i = 0; i < HOLD_WAIT_NAPS && h; i++) {
		nanosleep(&nap, NULL);
		h = __atomic_load_n(&hold_tid, __ATOMIC_ACQUIRE);
	}
	errno = saved;
	return h ? -1 : 0;
}

/* site_on's way out: s registered, the agent's start waited for; whether
 * its events are recorded, -1 when the calling thread is inside its own
 * start (neither can be done there). */
static __attribute__((noinline, cold)) int site_slow(struct ta_site_ *s)
{
	int ok;

	if (__atomic_load_n(&s->gate, __ATOMIC_ACQUIRE) == &s->first && site_register(s) < 0)
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

/* Whether an event of s is recorded.  One the agent cannot judge (made
 * inside its thread's own start) is counted lost. */
static inline __attribute__((always_inline)) int site_on(struct ta_site_ *s)
{
	const volatile uint32_t *g = __atomic_load_n(&s->gate, __ATOMIC_ACQUIRE);
	uint32_t v;
	int on;

	if (TA_LIKELY(g != &s->first) &&
	    TA_LIKELY((v = __atomic_load_n(g, __ATOMIC_RELAXED)) != CHAN_STARTING))
		return v != 0;
	on = site_slow(s);
	if (TA_UNLIKELY(on < 0)) {
		ta_lost_here(TA_LOST_STARTING);
		return 0;
	}
	return on;
}

/* ---- the SITES and CHANNELS chunks --------------------------------------------- */

/* Encoded here, not in a malloc'd buffer: the crash handler writes them. */
static uint8_t wbuf[64u << 10];
static size_t wlen;

static void wput_u(uint64_t v)
{
	wlen = (size_t)(ta_varint_put(wbuf + wlen, v) - wbuf);
}

static void wput_str(const char *s, size_t len)
{
	wput_u(len);
	memcpy(wbuf + wlen, s, len);
	wlen += len;
}

static void wflush(unsigned type, uint64_t count)
{
	/* The count goes first: the records were encoded after room for it. */
	size_t clen = (size_t)(ta_varint_put(wbuf, count) - wbuf);

	memmove(wbuf + clen, wbuf + TA_VARINT_MAX, wlen - TA_VARINT_MAX);
	wlen -= TA_VARINT_MAX - clen;
	(void)ta_dump_chunk(type, wbuf, wlen);
	wlen = 0;
}

/* all: every site and channel; keep: for a control-socket stream's reader
 * alone (tap.c), leaving what the dump is still owed as it is. */
static void api_write(int all, int keep)
{
	struct site_rec *r, *last;
	uint32_t n, from;
	uint64_t count = 0;
	sigset_t old;

	/* Acquire: pairs with the release of a registration, whose events the
	 * caller is about to write. */
	if (!all && !__atomic_load_n(&api_pending, __ATOMIC_ACQUIRE))
		return;
	/* Bounded: the crash handler writes too, and the crashed code may
	 * hold the lock. */
	if (lock_tries(&old, 10000) < 0)
		return;
	last = sites_tail;
	r = all ? sites_head : sites_unwritten;
	n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	from = all ? 0 : chan_written;
	if (!keep) {
		__atomic_store_n(&api_pending, 0, __ATOMIC_RELAXED);
		sites_unwritten = NULL;
		chan_written = n;
	}
	/* The lock stays held: wbuf is one for all writers. */

	if (from < n) {
		wlen = TA_VARINT_MAX;
		for (uint32_t i = from; i < n; i++) {
			wput_u(i);
			wput_str(chan_name[i], strlen(chan_name[i]));
			wput_u(all ? __atomic_load_n(&chan_want[i], __ATOMIC_RELAXED)
				   : chan_first_on[i]);
		}
		wflush(TA_CHUNK_CHANNELS, n - from);
	}
	if (!r) {
		unlock(&old);
		return;
	}
	wlen = TA_VARINT_MAX;
	for (; r; r = r == last ? NULL : r->next) {
		if (wlen + 4 * TA_VARINT_MAX + 2 * TA_SITE_NAME_MAX + 8 > sizeof(wbuf)) {
			wflush(TA_CHUNK_SITES, count);
			wlen = TA_VARINT_MAX;
			count = 0;
		}
		wput_u(r->addr);
		wput_u(r->kind);
		wput_u(r->chan);
		wput_str(r->text, r->name_len);
		wput_str(r->text + r->name_len, r->file_len);
		wput_u(r->line);
		count++;
	}
	if (count)
		wflush(TA_CHUNK_SITES, count);
	unlock(&old);
}

void ta_api_write(int all)
{
	api_write(all, 0);
	/* A forked child of a paused process starts paused: its part of the
	 * dump says so. */
	if (all && __atomic_load_n(&paused, __ATOMIC_RELAXED))
		ta_api_mark(TA_MARK_PAUSE, ta_ticks(), NULL, 0);
}

void ta_api_write_tap(void)
{
	api_write(1, 1);
}

void ta_api_mark(uint32_t kind, uint64_t ticks, const uint64_t *v, uint32_t n)
{
	struct ta_buf b = {0};

	ta_buf_u(&b, ticks);
	ta_buf_u(&b, kind);
	for (uint32_t i = 0; i < n; i++)
		ta_buf_u(&b, v[i]);
	if (!b.oom)
		(void)ta_dump_chunk(TA_CHUNK_MARK, b.p, b.len);
	ta_buf_free(&b);
}

/* ---- pause and resume (the control socket) ----------------------------------------- */

static uint64_t pause_ticks;

int ta_api_pause(int on)
{
	sigset_t old;
	uint32_t n;
	uint64_t now;

	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING)
		return -1;
	if (__atomic_load_n(&paused, __ATOMIC_RELAXED) == (uint32_t)!!on)
		return 0;
	if (!on) {
		/* The mark before any gate opens: the resumed events are in
		 * chunks after it. */
		uint64_t v = pause_ticks;

		ta_api_mark(TA_MARK_RESUME, ta_ticks(), &v, 1);
	}
	lock(&old);
	__atomic_store_n(&paused, (uint32_t)!!on, __ATOMIC_RELAXED);
	n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		__atomic_store_n(&chan_on[i], on ? 0 : __atomic_load_n(&chan_want[i], __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	__atomic_store_n(&ta_fn_gate,
			 on ? 0 : __atomic_load_n(&chan_want[TA_CHANNEL_FUNCTIONS], __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	ta_libcalls_enable(1); /* the mask reads chan_on: 0 while paused */
	unlock(&old);
	if (on) {
		/* After every gate reads off: what a hook records later is a
		 * thread that read its gate just before (documented). */
		now = ta_ticks();
		pause_ticks = now;
		ta_api_mark(TA_MARK_PAUSE, now, NULL, 0);
	}
	return 0;
}

uint64_t ta_api_pause_ticks(void)
{
	return pause_ticks;
}

int ta_api_paused(void)
{
	return (int)__atomic_load_n(&paused, __ATOMIC_RELAXED);
}

/* The signals of the forking thread while it holds the lock over a fork. */
static sigset_t fork_old;

void ta_api_fork_prepare(void)
{
	lock(&fork_old);
}

void ta_api_fork_release(void)
{
	unlock(&fork_old);
}

void ta_api_fork_child(void)
{
	/* One thread here: nothing reads the gate concurrently. */
	__atomic_store_n(&ta_fn_gate, 2, __ATOMIC_RELAXED);
}

void ta_api_restarted(void)
{
	/* Inside the restart (agent state STARTING): the pause and the
	 * channels are the parent's at the fork.  A child forked paused is
	 * paused from its start, in its own dump too. */
	if (__atomic_load_n(&paused, __ATOMIC_RELAXED)) {
		pause_ticks = ta_ticks();
		ta_api_mark(TA_MARK_PAUSE, pause_ticks, NULL, 0);
	}
	__atomic_store_n(&ta_fn_gate,
			 __atomic_load_n(&paused, __ATOMIC_RELAXED)
				 ? 0
				 : __atomic_load_n(&chan_want[TA_CHANNEL_FUNCTIONS], __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
}

int ta_api_channels_set(const char *spec)
{
	uint32_t n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t on = (uint32_t)ta_channel_list_has(spec, chan_name[i]);
		uint64_t v[2] = {i, on};

		if (__atomic_load_n(&chan_want[i], __ATOMIC_RELAXED) == on)
			continue;
		/* On: the mark before the first event; off: after the last. */
		if (on)
			ta_api_mark(TA_MARK_CHANNEL, ta_ticks(), v, 2);
		chan_switch(i, on, 0);
		if (!on)
			ta_api_mark(TA_MARK_CHANNEL, ta_ticks(), v, 2);
	}
	return 0;
}

size_t ta_api_channels_text(char *out, size_t size)
{
	uint32_t n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	size_t len = 0;

	if (size)
		out[0] = 0;
	for (uint32_t i = 0; i < n && size; i++) {
		int k = snprintf(out + len, size - len, "%s%s=%s", i ? "," : "", chan_name[i],
				 __atomic_load_n(&chan_want[i], __ATOMIC_RELAXED) ? "on" : "off");
		if (k < 0 || (size_t)k >= size - len) {
			out[len] = 0;
			break;
		}
		len += (size_t)k;
	}
	return len;
}

/* ---- the switching signal ------------------------------------------------------- */

/* Every channel's word to what it wants, or 0 while paused. */
static void chan_words_set(void)
{
	sigset_t old;
	uint32_t n;

	lock(&old);
	n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		__atomic_store_n(&chan_on[i],
				 __atomic_load_n(&paused, __ATOMIC_RELAXED)
				     ? 0
				     : __atomic_load_n(&chan_want[i], __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	unlock(&old);
}

static void switch_all(int record)
{
	uint32_t n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	const char *spec = spec_now();
	sigset_t old;

	if (record) {
		for (uint32_t i = 0; i < n; i++)
			chan_switch(i, (uint32_t)ta_channel_list_has(spec, chan_name[i]), 1);
		return;
	}
	/* Nothing recorded: the lock taken once (two sigprocmask calls),
	 * not once per channel. */
	lock(&old);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t on = (uint32_t)ta_channel_list_has(spec, chan_name[i]);

		if (__atomic_load_n(&chan_want[i], __ATOMIC_RELAXED) != on)
			(void)chan_set_locked(i, on);
	}
	unlock(&old);
}

static void channel_signal_handler(int sig)
{
	int saved = errno;

	(void)sig;
	__atomic_store_n(&spec_alt, !__atomic_load_n(&spec_alt, __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	switch_all(1);
	errno = saved;
}

void ta_api_start(void)
{
	int sig = ta_cfg.channel_signal;
	uint32_t n;

	/* TRACEAGENT_START=paused: every gate reads off from the start, and
	 * `traceagent ctl PID resume` opens them. */
	if (ta_cfg.start_paused)
		__atomic_store_n(&paused, 1, __ATOMIC_RELAXED);
	/* The first states, before anything is recorded: no switch events. */
	switch_all(0);
	/* Every word, including those of the channels whose wish was already
	 * what the settings ask (not switched above), which still read
	 * CHAN_STARTING. */
	chan_words_set();
	/* The hooks' gate in every case: a channel whose word already reads
	 * what the settings ask is not switched, and the gate still reads
	 * "not started" (2), which would send every hook out of line. */
	__atomic_store_n(&ta_fn_gate,
			 ta_cfg.start_paused
				 ? 0
				 : __atomic_load_n(&chan_want[TA_CHANNEL_FUNCTIONS], __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	/* What the first CHANNELS chunk says: the built-in channels were
	 * made before the settings were read, by the initialiser. */
	n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		chan_first_on[i] = __atomic_load_n(&chan_want[i], __ATOMIC_RELAXED);
	if (sig) {
		struct sigaction old, sa;

		if (ta_cfg.mode == TA_MODE_FLIGHT && sig == ta_cfg.flight_signal) {
			ta_warn("TRACEAGENT_CHANNEL_SIGNAL is the flight recorder's signal %d; "
				"channels are not switched by signal",
				sig);
		} else if (sigaction(sig, NULL, &old) < 0 || (old.sa_flags & SA_SIGINFO) ||
			   old.sa_handler != SIG_DFL) {
			ta_warn("signal %d has a handler already; channels are not switched by signal",
				sig);
		} else {
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = channel_signal_handler;
			sigemptyset(&sa.sa_mask);
			sa.sa_flags = SA_RESTART;
			sigaction(sig, &sa, NULL);
		}
	}
	ta_api_write(0);
	if (ta_cfg.start_paused) {
		pause_ticks = ta_ticks();
		ta_api_mark(TA_MARK_PAUSE, pause_ticks, NULL, 0);
	}
}

void ta_api_stop(void)
{
	for (uint32_t i = 0; i < TA_CHANNELS_MAX; i++)
		__atomic_store_n(&chan_on[i], 0, __ATOMIC_RELAXED);
}

int ta_fn_gate_start(void)
{
	if (__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED) == 2) {
		int ok = ta_ring_start();

		if (ok < 0)
			return 1; /* a handler in this thread's start: put aside */
		if (!ok)
			/* Not tracing: the hooks find that out in their slow
			 * path, as before there were channels. */
			__atomic_store_n(&ta_fn_gate, 1, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED) == 1;
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
	if (!site_on(s) || !ta_filter_lets())
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
	int on = site_on(s) && ta_filter_lets();
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

		(void)site_slow(s); /* registered: the dump says where it is */
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

	if (!site_on(s))
		return;
	if (!text)
		text = "(null)";
	len = strnlen(text, TA_TEXT_MAX + 1);
	record_text(TA_EXT_ZONE_TEXT, s, text, len > TA_TEXT_MAX ? TA_TEXT_MAX : (uint32_t)len,
		    len > TA_TEXT_MAX ? TA_TEXT_F_CUT : 0);
}

TA_PUBLIC void ta_zone_value_(struct ta_site_ *s, uint64_t value)
{
	if (site_on(s))
		ta_record_ext(TA_EXT_ZONE_VALUE, &value, 1);
}

static void record_site(uint32_t kind, struct ta_site_ *s)
{
	uint64_t v = (uint64_t)(uintptr_t)s;

	if (site_on(s))
		ta_record_ext(kind, &v, 1);
}

TA_PUBLIC void ta_frame_mark_(struct ta_site_ *s)
{
	record_site(TA_EXT_FRAME, s);
}

TA_PUBLIC void ta_instant_(struct ta_site_ *s)
{
	record_site(TA_EXT_INSTANT, s);
}

TA_PUBLIC void ta_counter_(struct ta_site_ *s, int64_t value)
{
	uint64_t v[3] = {(uint64_t)(uintptr_t)s, TA_COUNTER_INT, (uint64_t)value};

	if (site_on(s))
		ta_record_ext(TA_EXT_COUNTER, v, 3);
}

TA_PUBLIC void ta_counter_f_(struct ta_site_ *s, double value)
{
	uint64_t v[3] = {(uint64_t)(uintptr_t)s, TA_COUNTER_DOUBLE, 0};

	memcpy(&v[2], &value, sizeof(value));
	if (site_on(s))
		ta_record_ext(TA_EXT_COUNTER, v, 3);
}

/* ---- messages -------------------------------------------------------------------- */

TA_PUBLIC void ta_message_(struct ta_site_ *s, const char *fmt, ...)
{
	char text[TA_TEXT_MAX];
	int saved = errno, cut;
	size_t len;
	va_list ap;

	if (!site_on(s))
		return;
	if (!fmt)
		fmt = "(null)";
	va_start(ap, fmt);
	/* The formatting calls snprintf: nothing it does is recorded. */
	TA_GUARD_ENTER();
	len = ta_api_format(text, sizeof(text), &cut, fmt, ap);
	TA_GUARD_LEAVE();
	va_end(ap);
	record_text(TA_EXT_MESSAGE, s, text, (uint32_t)len, cut ? TA_TEXT_F_CUT : 0);
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
	if (not_started() && ta_ring_start() < 0) {
		TA_GUARD_LEAVE();
		ta_lost_here(TA_LOST_STARTING);
		errno = saved;
		return -1;
	}
	lock(&old);
	id = chan_find(name);
	unlock(&old);
	TA_GUARD_LEAVE();
	if (id == TA_CHANNELS_MAX) {
		errno = saved;
		return -1;
	}
	/* Running: the settings' states are in place (ta_api_start). */
	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING)
		chan_switch(id, on != 0, 1);
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

const struct ta_got_sym *ta_api_got_syms(size_t *n)
{
	static const struct ta_got_sym syms[] = {
#define API_SYM(name) {#name, (uintptr_t)&api_at_##name, 0, 1},
	    API_FUNCS(API_SYM)
#undef API_SYM
	};

	*n = sizeof(syms) / sizeof(syms[0]);
	return syms;
}

void ta_api_hold(int on)
{
	sigset_t old;
	uint32_t n;

	lock(&old);
	if (on)
		__atomic_store_n(&hold_tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
	n = __atomic_load_n(&nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = TA_CHANNEL_USER; i < n; i++)
		__atomic_store_n(&chan_on[i],
				 on ? CHAN_STARTING
				 : __atomic_load_n(&paused, __ATOMIC_RELAXED)
				     ? 0
				     : __atomic_load_n(&chan_want[i], __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	/* Release: the words before the end of the hold (pairs with the
	 * acquire in hold_wait). */
	if (!on)
		__atomic_store_n(&hold_tid, 0, __ATOMIC_RELEASE);
	unlock(&old);
}

void ta_api_rewind(void)
{
	sigset_t old;

	lock(&old);
	/* Everything is described again in the new dump. */
	sites_unwritten = sites_head;
	chan_written = 0;
	__atomic_store_n(&api_pending, 1, __ATOMIC_RELEASE);
	unlock(&old);
	/* ta_api_stop zeroed the words: ta_api_start sets them again. */
}

void ta_libcalls_enable(int on)
{
	/* Relaxed: an interposer that sees the classes late or early only
	 * records a call more or less; the ring's own state check (acquire,
	 * in its slow path) decides whether anything is written. */
	__atomic_store_n(&ta_lc_on, on ? ta_cfg.libcalls & ta_api_lc_mask() : 0, __ATOMIC_RELAXED);
}
