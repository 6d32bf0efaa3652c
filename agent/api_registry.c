/* SPDX-License-Identifier: MIT */
/*
 * api_registry.c - the manual API's registry: the channels (names, what
 * each wants, the words sites' gates point at), the sites registered at
 * their first use, the lock both are changed under, and the CHANNELS,
 * SITES and MARK chunks that describe them in the dump.
 *
 * Apart from the entries the program calls (api.c) and the switching of
 * channels (api_chan.c), which both call it: it holds the state they
 * share (api_int.h) and calls neither.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "agent.h"
#include "api.h"
#include "api_int.h"
#include "dump.h"
#include "format.h"
#include "ring.h"
#include "settings.h"

/* ---- channels ------------------------------------------------------------------ */

/* Each channel's on/off word, which sites' gates point at (relaxed
 * atomics: see ta_fn_gate): what the channel wants (ta_chan_want) unless the
 * recording is paused, then 0.  Before the agent has started, CHAN_STARTING
 * ("not known yet", as ta_fn_gate's 2): the macros read it as on and call
 * in, and the agent waits for the start (site_slow), as the hooks do,
 * rather than drop an event the settings may well want.  Names are written
 * before ta_nchan is raised (release) and never change. */
uint32_t ta_chan_on[TA_CHANNELS_MAX] = {[0 ... TA_CHANNELS_MAX - 1] = CHAN_STARTING};
uint32_t ta_chan_want[TA_CHANNELS_MAX];
/* `traceagent ctl PID pause` (control.c): every gate reads off; changed
 * under the registry's lock, with ta_chan_on. */
uint32_t ta_api_pause_on;
/* While an attach points the API's GOT entries at the agent (ta_api_hold):
 * the holder's thread id, else 0.  The words read CHAN_STARTING
 * meanwhile, so a macro whose entry is pointed already calls in and waits
 * for the hold's end (hold_wait), as one made during the start does. */
uint32_t ta_api_hold_tid;
char ta_chan_name[TA_CHANNELS_MAX][TA_CHANNEL_NAME_MAX + 1] = {"functions", "user", "alloc",
							       "lock",	    "io",   "sleep"};
uint32_t ta_nchan = TA_CHANNEL_FIRST_OWN;
/* Channels created since the last CHANNELS chunk, and their state then. */
static uint32_t chan_written;
uint32_t ta_chan_first_on[TA_CHANNELS_MAX];
/* A word that reads off for good: the gate of a site the agent refuses. */
static const uint32_t never_on;
/* Which of the two settings is in force: 0 TRACEAGENT_CHANNELS, 1 _ALT. */
uint32_t ta_api_spec_alt;

const char *ta_api_spec_now(void)
{
	return __atomic_load_n(&ta_api_spec_alt, __ATOMIC_RELAXED) ? ta_cfg.channels_alt
								   : ta_cfg.channels;
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

void ta_api_lock(sigset_t *old)
{
	(void)lock_tries(old, 0);
}

void ta_api_unlock(const sigset_t *old)
{
	__atomic_store_n(&api_lock, 0, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* The channel named name (NULL: user), created with the state the settings
 * give it; TA_CHANNELS_MAX when there is no room.  Under the lock. */
uint32_t ta_chan_find(const char *name)
{
	uint32_t n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
	size_t len;

	if (!name)
		return TA_CHANNEL_USER;
	len = strnlen(name, TA_CHANNEL_NAME_MAX + 1);
	if (len > TA_CHANNEL_NAME_MAX)
		len = TA_CHANNEL_NAME_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (!strncmp(ta_chan_name[i], name, len) && !ta_chan_name[i][len])
			return i;
	if (n == TA_CHANNELS_MAX)
		return TA_CHANNELS_MAX;
	memcpy(ta_chan_name[n], name, len);
	ta_chan_name[n][len] = 0;
	ta_chan_want[n] = ta_chan_first_on[n] =
	    (uint32_t)ta_channel_list_has(ta_api_spec_now(), ta_chan_name[n]);
	ta_chan_on[n] = __atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED) ? 0 : ta_chan_want[n];
	/* Release: the name before the count (switch_all reads without the
	 * lock). */
	__atomic_store_n(&ta_nchan, n + 1, __ATOMIC_RELEASE);
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
int ta_api_not_started(void)
{
	uint32_t st = __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE);

	return st == TA_S_UNINIT || st == TA_S_STARTING || st == TA_S_FORKED;
}

/* Registers s if nobody has: its record and its gate.  -1 (s left
 * unregistered) when the calling thread is inside its own start (a signal
 * handler's call), where the settings that decide the channel's state may
 * not be read yet and the start cannot be waited for; 0 otherwise. */
int ta_api_site_register(struct ta_site_ *s)
{
	sigset_t old;

	TA_GUARD_ENTER();
	/* The settings decide the channel's state: start the agent first, or
	 * wait for the thread that is starting it. */
	if (ta_api_not_started() && ta_ring_start() < 0) {
		TA_GUARD_LEAVE();
		return -1;
	}
	ta_api_lock(&old);
	ta_api_site_register_locked(s);
	ta_api_unlock(&old);
	TA_GUARD_LEAVE();
	return 0;
}

void ta_api_site_register_locked(struct ta_site_ *s)
{
	const uint32_t *gate = &never_on;

	if (s->gate != &s->first)
		return; /* another thread did it meanwhile */
	if (s->abi >= 1 &&
	    ((s->kind >= TA_SITE_ZONE && s->kind <= TA_SITE_TEXT) || ta_apizone_kind(s->kind) ||
	     (s->kind >= TA_SITE_ALLOC && s->kind <= TA_SITE_FIBER))) {
		uint32_t ch = ta_chan_find(s->channel);
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
			gate = &ta_chan_on[ch];
		} else if (ch == TA_CHANNELS_MAX) {
			ta_warn(
			    "%s:%u: channel '%.31s' is one more than the %u channels there can be; "
			    "its events are not recorded",
			    s->file ? s->file : "?", s->line, s->channel, TA_CHANNELS_MAX);
		}
	}
	/* Release: the record before the gate that lets events name it. */
	__atomic_store_n(&s->gate, (const volatile uint32_t *)gate, __ATOMIC_RELEASE);
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
	n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
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
			wput_str(ta_chan_name[i], strlen(ta_chan_name[i]));
			wput_u(all ? __atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED)
				   : ta_chan_first_on[i]);
		}
		wflush(TA_CHUNK_CHANNELS, n - from);
	}
	if (!r) {
		ta_api_unlock(&old);
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
	ta_api_unlock(&old);
}

void ta_api_write(int all)
{
	api_write(all, 0);
	/* A forked child of a paused process starts paused: its part of the
	 * dump says so. */
	if (all && __atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED))
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

/* ---- a new dump (attach) -------------------------------------------------------- */

void ta_api_rewind(void)
{
	sigset_t old;

	ta_api_lock(&old);
	/* Everything is described again in the new dump. */
	sites_unwritten = sites_head;
	chan_written = 0;
	__atomic_store_n(&api_pending, 1, __ATOMIC_RELEASE);
	ta_api_unlock(&old);
	/* ta_api_stop zeroed the words: ta_api_start sets them again. */
}
