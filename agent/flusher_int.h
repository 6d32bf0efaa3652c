/* SPDX-License-Identifier: MIT */
/*
 * flusher_int.h - what the flusher thread (flusher.c) and the drain
 * (flusher_drain.c) share, and nothing outside them includes.  The calls
 * go one way: the thread calls the drain, the drain knows nothing of the
 * thread's schedule.
 */
#ifndef TA_FLUSHER_INT_H
#define TA_FLUSHER_INT_H

#include <pthread.h>
#include <stdint.h>

struct ta_thread;

/* Set on the flusher thread: only there may a drain open liblz4 (a
 * producer that drains its own ring may be a signal handler), and a
 * crash there may not open libunwind (ta_flusher_can_open_unwind). */
extern __thread int ta_in_flusher __attribute__((tls_model("initial-exec")));
/* Held by a pass over every ring (ta_flusher_drain_all), and around fork
 * and the freeing of the drains' state. */
extern pthread_mutex_t ta_drain_lock;
/* This thread holds ta_drain_lock, taken by ta_drain_take (the passes
 * that write: a stalled collector's send may start a thread under it). */
extern __thread int ta_drain_held __attribute__((tls_model("initial-exec")));

static inline void ta_drain_take(void)
{
	pthread_mutex_lock(&ta_drain_lock);
	ta_drain_held = 1;
}

static inline void ta_drain_give(void)
{
	ta_drain_held = 0;
	pthread_mutex_unlock(&ta_drain_lock);
}
/* 1: EVENTS chunks are stored uncompressed (the flusher thread's hint;
 * flusher_drain.c says how it is read). */
extern uint32_t ta_store_raw;

/* Drains t's ring, its consume lock held: at_end, all of it and the
 * thread's end; partial, small chunks stay open for the next pass; whole,
 * the calls the minimum-duration filter holds back go too. */
void ta_flusher_drain_thread(struct ta_thread *t, int at_end, int partial, int whole);
/* One pass over every ring, under ta_drain_lock. */
void ta_flusher_drain_all(int at_end, int partial, int whole);

/* TRACEAGENT_MIN_DURATION in ticks (measured at the first call that
 * needs it), whether it is known yet, and the clock pair its measure
 * starts from (the flusher's start). */
uint64_t ta_flusher_mindur_ticks(void);
uint64_t ta_flusher_mindur_known(void);
void ta_flusher_mindur_mark(void);

/* The totals and the out-of-memory mark set back (a forked child); and
 * with them every thread's drain state freed (an attach window's end). */
void ta_flusher_drain_forget(void);
void ta_flusher_drain_release(void);

#endif
