/* SPDX-License-Identifier: MIT */
/*
 * api_chan.c - the manual API's channels switched: by the program
 * (ta_channel_set_), by the settings at the start, by the switching
 * signal, by `traceagent ctl` (pause, resume, channels), around an
 * attach's hold and a fork; and the words other parts of the agent read
 * for the built-in channels (the hooks' gate, the library-call classes).
 *
 * Above the registry (api_registry.c), whose state and lock it changes,
 * and below the entries (api.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "agent.h"
#include "api.h"
#include "api_int.h"
#include "clock.h"
#include "format.h"
#include "libcalls.h"
#include "ring.h"
#include "settings.h"

uint32_t ta_lc_on TA_STARTUP_DATA;
uint32_t ta_lc_asked TA_STARTUP_DATA;

uint32_t ta_fn_gate = 2;

/* On only when on for sure: not "not known yet" (before the start, or an
 * attach's hold). */
uint32_t ta_api_lc_mask(void)
{
	uint32_t m = 0;

	if (__atomic_load_n(&ta_chan_on[TA_CHANNEL_ALLOC], __ATOMIC_RELAXED) == 1)
		m |= TA_LC_ALLOC;
	if (__atomic_load_n(&ta_chan_on[TA_CHANNEL_LOCK], __ATOMIC_RELAXED) == 1)
		m |= TA_LC_LOCK;
	if (__atomic_load_n(&ta_chan_on[TA_CHANNEL_IO], __ATOMIC_RELAXED) == 1)
		m |= TA_LC_IO;
	if (__atomic_load_n(&ta_chan_on[TA_CHANNEL_SLEEP], __ATOMIC_RELAXED) == 1)
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

/* ta_chan_switch's change, under the lock; whether it took effect (not
 * paused). */
static int chan_set_locked(uint32_t id, uint32_t on)
{
	int live;

	__atomic_store_n(&ta_chan_want[id], on, __ATOMIC_RELAXED);
	live = !__atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED);
	if (live) {
		__atomic_store_n(&ta_chan_on[id], on, __ATOMIC_RELAXED);
		chan_effect(id, on);
	}
	return live;
}

/* Switches channel id; recorded (when record is set) so that the channel's
 * events of this thread fall strictly between its on and its off.  While
 * paused, only what resume restores changes (nothing is recorded).  The
 * lock orders the switch with pause and resume; the events are recorded
 * outside it (a lossless ring may wait for the flusher, which takes it). */
void ta_chan_switch(uint32_t id, uint32_t on, int record)
{
	uint64_t v[2] = {id, on};
	sigset_t old;
	int live;

	if (__atomic_load_n(&ta_chan_want[id], __ATOMIC_RELAXED) == on)
		return;
	if (on && record && !__atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED))
		ta_record_ext(TA_EXT_CHANNEL, v, 2);
	ta_api_lock(&old);
	live = chan_set_locked(id, on);
	ta_api_unlock(&old);
	if (!on && record && live)
		ta_record_ext(TA_EXT_CHANNEL, v, 2);
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
	if (__atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED) == (uint32_t) !!on)
		return 0;
	if (!on) {
		/* The mark before any gate opens: the resumed events are in
		 * chunks after it. */
		uint64_t v = pause_ticks;

		ta_api_mark(TA_MARK_RESUME, ta_ticks(), &v, 1);
	}
	ta_api_lock(&old);
	__atomic_store_n(&ta_api_pause_on, (uint32_t) !!on, __ATOMIC_RELAXED);
	n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		__atomic_store_n(&ta_chan_on[i],
				 on ? 0 : __atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	__atomic_store_n(
	    &ta_fn_gate,
	    on ? 0 : __atomic_load_n(&ta_chan_want[TA_CHANNEL_FUNCTIONS], __ATOMIC_RELAXED),
	    __ATOMIC_RELAXED);
	ta_libcalls_enable(1); /* the mask reads ta_chan_on: 0 while paused */
	ta_api_unlock(&old);
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
	return (int)__atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED);
}

/* The signals of the forking thread while it holds the lock over a fork. */
static sigset_t fork_old;

void ta_api_fork_prepare(void)
{
	ta_api_lock(&fork_old);
}

void ta_api_fork_release(void)
{
	ta_api_unlock(&fork_old);
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
	if (__atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED)) {
		pause_ticks = ta_ticks();
		ta_api_mark(TA_MARK_PAUSE, pause_ticks, NULL, 0);
	}
	__atomic_store_n(
	    &ta_fn_gate,
	    __atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED)
		? 0
		: __atomic_load_n(&ta_chan_want[TA_CHANNEL_FUNCTIONS], __ATOMIC_RELAXED),
	    __ATOMIC_RELAXED);
}

int ta_api_channels_set(const char *spec)
{
	uint32_t n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t on = (uint32_t)ta_channel_list_has(spec, ta_chan_name[i]);
		uint64_t v[2] = {i, on};

		if (__atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED) == on)
			continue;
		/* On: the mark before the first event; off: after the last. */
		if (on)
			ta_api_mark(TA_MARK_CHANNEL, ta_ticks(), v, 2);
		ta_chan_switch(i, on, 0);
		if (!on)
			ta_api_mark(TA_MARK_CHANNEL, ta_ticks(), v, 2);
	}
	return 0;
}

size_t ta_api_channels_text(char *out, size_t size)
{
	uint32_t n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
	size_t len = 0;

	if (size)
		out[0] = 0;
	for (uint32_t i = 0; i < n && size; i++) {
		int k =
		    snprintf(out + len, size - len, "%s%s=%s", i ? "," : "", ta_chan_name[i],
			     __atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED) ? "on" : "off");
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

	ta_api_lock(&old);
	n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		__atomic_store_n(&ta_chan_on[i],
				 __atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED)
				     ? 0
				     : __atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	ta_api_unlock(&old);
}

static void switch_all(int record)
{
	uint32_t n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
	const char *spec = ta_api_spec_now();
	sigset_t old;

	if (record) {
		for (uint32_t i = 0; i < n; i++)
			ta_chan_switch(i, (uint32_t)ta_channel_list_has(spec, ta_chan_name[i]), 1);
		return;
	}
	/* Nothing recorded: the lock taken once (two sigprocmask calls),
	 * not once per channel. */
	ta_api_lock(&old);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t on = (uint32_t)ta_channel_list_has(spec, ta_chan_name[i]);

		if (__atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED) != on)
			(void)chan_set_locked(i, on);
	}
	ta_api_unlock(&old);
}

static void channel_signal_handler(int sig)
{
	int saved = errno;

	(void)sig;
	__atomic_store_n(&ta_api_spec_alt, !__atomic_load_n(&ta_api_spec_alt, __ATOMIC_RELAXED),
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
		__atomic_store_n(&ta_api_pause_on, 1, __ATOMIC_RELAXED);
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
			 ta_cfg.start_paused ? 0
					     : __atomic_load_n(&ta_chan_want[TA_CHANNEL_FUNCTIONS],
							       __ATOMIC_RELAXED),
			 __ATOMIC_RELAXED);
	/* What the first CHANNELS chunk says: the built-in channels were
	 * made before the settings were read, by the initialiser. */
	n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < n; i++)
		ta_chan_first_on[i] = __atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED);
	if (sig) {
		struct sigaction old, sa;

		if (ta_cfg.mode == TA_MODE_FLIGHT && sig == ta_cfg.flight_signal) {
			ta_warn("TRACEAGENT_CHANNEL_SIGNAL is the flight recorder's signal %d; "
				"channels are not switched by signal",
				sig);
		} else if (sigaction(sig, NULL, &old) < 0 || (old.sa_flags & SA_SIGINFO) ||
			   old.sa_handler != SIG_DFL) {
			ta_warn(
			    "signal %d has a handler already; channels are not switched by signal",
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
		__atomic_store_n(&ta_chan_on[i], 0, __ATOMIC_RELAXED);
}

int ta_fn_gate_start(void)
{
	if (__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED) == 2) {
		int ok = ta_ring_start();

		if (ok < 0)
			return 1; /* a handler in this thread's start: put aside */
		if (!ok)
			/* Not tracing: the hooks find that out in their slow
			 * path, as they do with the gate open. */
			__atomic_store_n(&ta_fn_gate, 1, __ATOMIC_RELAXED);
	}
	return __atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED) == 1;
}

void ta_api_hold(int on)
{
	sigset_t old;
	uint32_t n;

	ta_api_lock(&old);
	if (on)
		__atomic_store_n(&ta_api_hold_tid, (uint32_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
	n = __atomic_load_n(&ta_nchan, __ATOMIC_ACQUIRE);
	for (uint32_t i = TA_CHANNEL_USER; i < n; i++)
		__atomic_store_n(&ta_chan_on[i],
				 on ? CHAN_STARTING
				 : __atomic_load_n(&ta_api_pause_on, __ATOMIC_RELAXED)
				     ? 0
				     : __atomic_load_n(&ta_chan_want[i], __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	/* Release: the words before the end of the hold (pairs with the
	 * acquire in hold_wait). */
	if (!on)
		__atomic_store_n(&ta_api_hold_tid, 0, __ATOMIC_RELEASE);
	ta_api_unlock(&old);
}

void ta_libcalls_enable(int on)
{
	/* Relaxed: an interposer that sees the classes late or early only
	 * records a call more or less; the ring's own state check (acquire,
	 * in its slow path) decides whether anything is written. */
	__atomic_store_n(&ta_lc_on, on ? ta_cfg.libcalls & ta_api_lc_mask() : 0, __ATOMIC_RELAXED);
}
