/* SPDX-License-Identifier: MIT */
/*
 * flusher.c - the consumer side of the rings: a background thread that
 * drains every thread's blocks and appends the chunks to the dump; its
 * start, its passes, its stop at the exit, across fork and at a crash.
 *
 * The drain itself (encoding a ring into chunks) is flusher_drain.c's,
 * below this file: producers, the exiting thread and a crash drain too.
 *
 * It sleeps for the flush interval, or less when producers kick it because
 * full blocks are piling up, so its backlog is bounded by the memory cap in
 * the worst case and by ~4 blocks per kick in the common case.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "clock.h"
#include "dump.h"
#include "ctl.h"
#include "flusher.h"
#include "flusher_int.h"
#include "lazylib.h"
#include "format.h"
#include "keep.h"
#include "mindur.h"
#include "nextsym.h"
#include "placement.h"
#include "ring.h"
#include "settings.h"
#include "symstore.h"

static pthread_t flusher_thread;
static int flusher_running;
/*
 * Whether the flusher thread is doing anything (BUSY) or not (IDLE: asleep,
 * or created and not yet run).  At the process's exit an IDLE flusher is
 * made GONE, never to do anything again, and is not waited for: the exiting
 * thread drains what is left itself, and the flusher, woken, ends on its
 * own meanwhile.  A short run's exit then never waits for it to be
 * scheduled, which on a loaded machine takes milliseconds.  A BUSY one is
 * stopped and joined.
 */
enum { FL_IDLE, FL_BUSY, FL_GONE };
static uint32_t flusher_phase;	/* atomic */
static uint32_t flusher_stop;	/* atomic */
static uint32_t kick_word;	/* futex: 1 once kicked, reset by the flusher */
static uint32_t dump_requested; /* flight mode: write the rings now (atomic) */

void ta_flusher_kick(void)
{
	/* Acq_rel exchange: only the first kick after the flusher reset the
	 * word pays for the system call. */
	if (__atomic_exchange_n(&kick_word, 1, __ATOMIC_ACQ_REL) == 0)
		syscall(SYS_futex, &kick_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void ta_flusher_request_dump(void)
{
	/* Only an atomic store and a system call: safe in a handler. */
	__atomic_store_n(&dump_requested, 1, __ATOMIC_RELEASE);
	ta_flusher_kick();
}

int ta_flusher_can_open_unwind(void)
{
	/* Relaxed: written before the program's threads could crash
	 * (start, fork child), or at the exit, when a crash waits in vain
	 * only the bounded time. */
	return __atomic_load_n(&flusher_running, __ATOMIC_RELAXED) && !ta_in_flusher;
}

void ta_flusher_open_unwind(void)
{
	if (ta_lazy_unw_settled())
		return;
	pthread_mutex_lock(&ta_drain_lock);
	ta_lazy_open();
	pthread_mutex_unlock(&ta_drain_lock);
}

int ta_flusher_forksafe(int (*fn)(void))
{
	int r;

	if (ta_drain_held)
		return fn();
	/* Tried, never waited for: the caller may hold the dump's lock,
	 * which a drain takes under this one. */
	if (pthread_mutex_trylock(&ta_drain_lock) != 0)
		return -1;
	ta_drain_held = 1;
	r = fn();
	ta_drain_give();
	return r;
}

void ta_flusher_crash_drain(void)
{
	int have;

	__atomic_store_n(&flusher_stop, 1, __ATOMIC_RELEASE);
	ta_flusher_kick();
	/* The flusher may be in the middle of a pass: it finishes it. */
	have = ta_lock_bounded(&ta_drain_lock) == 0;
	for (struct ta_thread *t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t;
	     t = t->all_next) {
		int got = 0;
		for (int i = 0; i < 500 && !(got = ta_consume_trylock(t)); i++) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
		if (!got)
			continue; /* its holder is the crashed code, or stuck */
		ta_flusher_drain_thread(t, 1, 0, 1);
		ta_consume_unlock(t);
	}
	if (have)
		pthread_mutex_unlock(&ta_drain_lock);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* How long a run lasts before the flusher opens libunwind (a fraction of a
 * millisecond of its CPU, with liblzma) and starts the control thread (ctl.h): a traced
 * process that exits sooner (most of a build's) never pays for them. */
#define LATE_START_MS 20u

/* The flusher's first pass comes at once (an attach's: it looks for the
 * modules dlopen'ed since, attach.c), else later.  Set before the thread
 * is created, which publishes it. */
static int first_pass_now;

/* Only a BUSY flusher touches anything; 0 once the exit made it GONE. */
static int busy_begin(void)
{
	uint32_t s = FL_IDLE;

	/* Acquire: pairs with the release in ta_flusher_start (the state it
	 * set up for the thread). */
	return __atomic_compare_exchange_n(&flusher_phase, &s, FL_BUSY, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

static void busy_end(void)
{
	/* Release: pairs with the acquire of the exit's exchange in
	 * ta_flusher_stop_at_exit, which then sees all this pass did. */
	__atomic_store_n(&flusher_phase, FL_IDLE, __ATOMIC_RELEASE);
}

static void *flusher_main(void *arg)
{
	uint64_t last_clock = mono_ms(), last_full = last_clock, started = last_clock;
	/* Calibration pairs 10 ms and 100 ms after the start, then every
	 * second: a run killed early still has two pairs to convert with. */
	uint64_t clock_gap = 10;

	/* Until the control thread and libunwind are started. */
	int late_pending = 1;

	(void)arg;
	/* Everything this thread does is the agent's. */
	TA_GUARD_ENTER();
	ta_in_flusher = 1;
	if (!busy_begin())
		goto gone;
	syscall(SYS_prctl, 15 /* PR_SET_NAME */, "traceagent", 0, 0, 0);
	/* A flight recorder's rings are written at the exit, a crash or its
	 * signal, on a thread that may not dlopen (a handler's) and with no
	 * block ever handed over before: liblz4 now, in the background. */
	if (ta_cfg.mode == TA_MODE_FLIGHT)
		ta_lazy_open_lz4();
	if (ta_cfg.min_duration_ns && !ta_flusher_mindur_known()) {
		/* The counter's rate for the threshold, before the first
		 * pass needs it (ta_flusher_mindur_ticks). */
		struct timespec ms2 = {0, 2000000};

		nanosleep(&ms2, NULL);
		(void)ta_flusher_mindur_ticks();
	}
	if (!first_pass_now) {
		/* No pass at once: nothing is recorded yet.  The first comes
		 * with a producer's kick, or at LATE_START_MS: the exit of a
		 * shorter run finds this thread asleep and never wakes it. */
		uint32_t ms = ta_cfg.flush_ms < LATE_START_MS ? ta_cfg.flush_ms : LATE_START_MS;
		struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

		busy_end();
		syscall(SYS_futex, &kick_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (!busy_begin())
			goto gone;
	}
	while (!__atomic_load_n(&flusher_stop, __ATOMIC_ACQUIRE)) {
		uint32_t wait_ms = ta_cfg.flush_ms;
		struct timespec ts;
		uint64_t now;

		/* A held signal is ending the process (crash.c): its thread
		 * waits for this one to write what was recorded. */
		if (ta_flusher_up.death())
			break;

		/* Reset before draining, so a kick during the drain makes
		 * the wait below return at once rather than be missed. */
		__atomic_store_n(&kick_word, 0, __ATOMIC_RELEASE);
		/* libunwind once the run has lasted a while, or at once for a
		 * crash waiting for it (lazylib.h): a short run never loads
		 * it, nor makes its exit wait for this thread to. */
		if (!ta_lazy_unw_settled() &&
		    (ta_lazy_unw_wanted() || mono_ms() - started >= LATE_START_MS))
			ta_flusher_open_unwind();
		/* Under the drain lock, so that a fork never copies a thread's
		 * creation half done (it tries the control lock, never waits). */
		if (late_pending && mono_ms() - started >= LATE_START_MS) {
			pthread_mutex_lock(&ta_drain_lock);
			late_pending = ta_flusher_up.late_start() < 0;
			pthread_mutex_unlock(&ta_drain_lock);
		}
		/* The modules found since, before the events that name them;
		 * under the drain lock, as the flusher's other work: a fork
		 * waits for it, and its child never holds a copy of it half
		 * done. */
		ta_drain_take();
		ta_symstore_flush(1);
		ta_drain_give();
		if (ta_cfg.mode == TA_MODE_FLIGHT) {
			/* A flight recorder writes on demand only. */
			if (__atomic_exchange_n(&dump_requested, 0, __ATOMIC_ACQ_REL)) {
				ta_flusher_drain(0);
				ta_dump_clock();
			}
		} else {
			/* A pass a producer's kick asked for (every 4 blocks)
			 * leaves small chunks open: written every pass, they
			 * would be a few blocks each, which LZ4 packs worse
			 * than chunks of hundreds of KiB (docs/bench.md), for
			 * one write each.  Every flush interval the pass writes
			 * everything, so the dump on disk is never more than
			 * that behind. */
			uint64_t t = mono_ms();
			int full = t - last_full >= ta_cfg.flush_ms;
			int busy;

			ta_place_flusher();
			busy = ta_slack_judge();
			if (busy >= 0) {
				__atomic_store_n(&ta_store_raw, (uint32_t)busy, __ATOMIC_RELAXED);
				__atomic_store_n(&ta_kick_blocks, busy ? 16u : 4u,
						 __ATOMIC_RELAXED);
			}
			ta_flusher_drain_all(0, !full, 0);
			if (full)
				last_full = t;
		}
		/* An injected agent learns of dlopen'ed modules here (it has
		 * no dlopen interposer: attach.c). */
		ta_flusher_up.pass();
		now = mono_ms();
		if (ta_cfg.mode != TA_MODE_FLIGHT && now - last_clock >= clock_gap) {
			ta_dump_clock();
			last_clock = now;
			clock_gap = clock_gap < 1000 ? clock_gap * 10 : 1000;
		}
		if (__atomic_load_n(&ta_pending_blocks, __ATOMIC_RELAXED) >= 8)
			continue;
		/* Awake again at LATE_START_MS for what starts then. */
		if (late_pending && now - started < LATE_START_MS &&
		    LATE_START_MS - (now - started) < wait_ms)
			wait_ms = (uint32_t)(LATE_START_MS - (now - started));
		ts.tv_sec = (time_t)(wait_ms / 1000);
		ts.tv_nsec = (long)(wait_ms % 1000) * 1000000L;
		busy_end();
		syscall(SYS_futex, &kick_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
		if (!busy_begin())
			goto gone;
	}
	/* Stopping: the exit's last drain (on the exiting thread, which may
	 * be a signal handler's) writes what is left, compressed when a
	 * full block or more of it was handed over since the last pass. */
	if (__atomic_load_n(&ta_pending_blocks, __ATOMIC_RELAXED))
		ta_lazy_open_lz4();
gone:
	/* Still in the guard: the thread's exit (its frees) is the agent's. */
	return NULL;
}

int ta_flusher_start(int first_pass)
{
	sigset_t all, old;
	int err;

	/* The flusher must never run the program's signal handlers: it is
	 * created with every signal blocked. */
	sigfillset(&all);
	if (ta_cfg.min_duration_ns)
		ta_flusher_mindur_mark();
	/* Keep mode's judging starts with the recording (a forked child's
	 * too: its frames are its own). */
	ta_keep_start();
	pthread_sigmask(SIG_SETMASK, &all, &old);
	__atomic_store_n(&flusher_stop, 0, __ATOMIC_RELAXED);
	/* A forked child's or a new attach's process clock starts anew:
	 * compressed until the first look says otherwise. */
	ta_slack_reset();
	__atomic_store_n(&ta_store_raw, 0, __ATOMIC_RELAXED);
	first_pass_now = first_pass;
	/* Release: pairs with the acquire in busy_begin. */
	__atomic_store_n(&flusher_phase, FL_IDLE, __ATOMIC_RELEASE);
	err = ta_real_pthread_create(&flusher_thread, NULL, flusher_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	flusher_running = 1;
	return 0;
}

void ta_flusher_stop(void)
{
	if (!flusher_running)
		return;
	__atomic_store_n(&flusher_stop, 1, __ATOMIC_RELEASE);
	ta_flusher_kick();
	if (!pthread_equal(pthread_self(), flusher_thread))
		pthread_join(flusher_thread, NULL);
	flusher_running = 0;
}

void ta_flusher_stop_at_exit(void)
{
	uint32_t s = FL_IDLE;

	if (!flusher_running)
		return;
	/* Blocks handed over since its last pass, or a flight recorder's
	 * rings before it opened liblz4: it opens liblz4 for the last drain
	 * (flusher_main), so it is stopped as usual.  Acquire: pairs with the
	 * release in busy_end. */
	if (!__atomic_load_n(&ta_pending_blocks, __ATOMIC_RELAXED) &&
	    (ta_cfg.mode != TA_MODE_FLIGHT || ta_lazy_lz4_settled()) &&
	    __atomic_compare_exchange_n(&flusher_phase, &s, FL_GONE, 0, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED)) {
		/* Relaxed: as in ta_flusher_can_open_unwind; a crash from
		 * here on does not wait for it. */
		__atomic_store_n(&flusher_running, 0, __ATOMIC_RELAXED);
		/* Woken, it finds itself GONE and ends; never joined, so its
		 * resources go back as it ends (and ThreadSanitizer sees no
		 * leaked thread). */
		pthread_detach(flusher_thread);
		ta_flusher_kick();
		return;
	}
	ta_flusher_stop();
}

void ta_flusher_fork_prepare(void)
{
	struct ta_thread *me;

	pthread_mutex_lock(&ta_drain_lock);
	/* The child starts inside the forking thread's open frames, which
	 * the parent records: the calls the minimum-duration filter holds
	 * back among them are written, and the child's first snapshot, the
	 * encoder's stack, has them all (ring.c's ta_ring_fork_child). */
	if (ta_cfg.min_duration_ns && (me = ta_thread_self()) != NULL && ta_consume_trylock(me)) {
		ta_flusher_drain_thread(me, 0, 1, 1);
		ta_consume_unlock(me);
	}
}

void ta_flusher_fork_parent(void)
{
	pthread_mutex_unlock(&ta_drain_lock);
}

void ta_flusher_forget(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	flusher_running = 0;
	kick_word = 0;
	__atomic_store_n(&flusher_stop, 0, __ATOMIC_RELAXED);
	/* Held by the forking thread (prepare), in this copy too. */
	memcpy(&ta_drain_lock, &fresh, sizeof(fresh));
	ta_flusher_drain_forget();
}

void ta_flusher_release(void)
{
	ta_flusher_drain_release();
	kick_word = 0;
	__atomic_store_n(&dump_requested, 0, __ATOMIC_RELAXED);
}
