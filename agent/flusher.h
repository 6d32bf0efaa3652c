/* SPDX-License-Identifier: MIT */
/*
 * flusher.h - the flusher: the thread that drains the rings into the dump
 * (flusher.c), and the drains others ask of it or do themselves
 * (flusher_drain.c).
 */
#ifndef TA_FLUSHER_H
#define TA_FLUSHER_H

#include <stdint.h>

#include "compiler.h"
#include "format.h"

struct ta_thread;
struct ta_stack;
struct ta_jmptab;

/*
 * The flusher's calls up, for the files above it: it knows none of them,
 * only this table, which the conductor (agent.c) defines (statically, as
 * the ring's: ring.h).
 */
struct ta_flusher_up {
	/* Before each EVENTS chunk: what its events name (the API's sites),
	 * so that a view can name them as the dump goes by. */
	void (*before_events)(void);
	/* First in each pass: a held signal is ending the process (crash.c)
	 * and its thread waits for this one to write what was recorded;
	 * nonzero when it was so (the flusher then stops). */
	int (*death)(void);
	/* Once the run has lasted a while (the control thread): 0 when
	 * done, negative to be tried again next pass. */
	int (*late_start)(void);
	/* Each pass, after the drain (an injected agent's look for the
	 * modules dlopen'ed since: attach.c). */
	void (*pass)(void);
};
extern const struct ta_flusher_up ta_flusher_up TA_HIDDEN;

/* Starts the flusher thread; its first pass at once when first_pass (an
 * attach: the program ran before, what it loaded since must be looked
 * for), else with a producer's kick or a while into the run.  0 or a
 * negative errno. */
int ta_flusher_start(int first_pass) TA_HIDDEN;
/* Stops and joins the flusher thread; returns when it is gone. */
void ta_flusher_stop(void) TA_HIDDEN;
/* At the process's exit: an idle flusher is told never to run again and
 * is not waited for (exit ends it); a busy one is stopped as by
 * ta_flusher_stop.  Either way it writes nothing more. */
void ta_flusher_stop_at_exit(void) TA_HIDDEN;
/* Wakes the flusher early (blocks are piling up). */
void ta_flusher_kick(void) TA_HIDDEN;
/* Runs fn where a fork cannot come in the middle (a thread's creation
 * copied half done hangs the child under qemu-user): under the drain lock,
 * which fork's prepare handler takes, held here already or tried; -1 when
 * another thread holds it. */
int ta_flusher_forksafe(int (*fn)(void)) TA_HIDDEN;
/* Flight mode: asks the flusher to write what the rings hold (async-signal
 * safe). */
void ta_flusher_request_dump(void) TA_HIDDEN;

/* Opens libunwind now (lazylib.h), under the lock a fork takes first, so
 * that a child never inherits a load half done. */
void ta_flusher_open_unwind(void) TA_HIDDEN;

/* Whether the flusher runs and may open it for the calling thread (a
 * crash handler's), which is not the flusher: async-signal-safe. */
int ta_flusher_can_open_unwind(void) TA_HIDDEN;
/* Drains every ring once (the flusher, or the final flush when the
 * flusher is stopped); at_end also closes live threads. */
void ta_flusher_drain(int at_end) TA_HIDDEN;
/* A producer drains its own ring when the backlog is high, if the flusher
 * is not draining it right now; returns 1 if it did. */
int ta_flusher_help(struct ta_thread *t) TA_HIDDEN;
/* A THREAD_START for each thread the dump has one for and no THREAD_END
 * yet, with its name now: for a control-socket stream's reader, who
 * starts in the middle (tap.c, which takes the chunks for the reader
 * alone). */
void ta_flusher_describe_threads(void) TA_HIDDEN;
/* Totals for the END chunk. */
void ta_flusher_totals(uint64_t *events, uint64_t *lost, uint64_t *threads) TA_HIDDEN;
/* The lost events of ta_flusher_totals by cause (format.h's TA_LOST_*). */
void ta_flusher_lost_by(uint64_t by[TA_LOST_NCAUSES]) TA_HIDDEN;
/* 1 once the flusher could not write something for want of memory (its
 * events counted lost, TA_LOST_NO_MEMORY): the dump is incomplete. */
int ta_flusher_out_of_memory(void) TA_HIDDEN;
/* In a forked child: the flusher thread does not exist there. */
void ta_flusher_forget(void) TA_HIDDEN;
/* An attach window ended (flusher stopped, rings drained): the per-thread
 * encoders' memory is freed and the totals reset for the next dump. */
void ta_flusher_release(void) TA_HIDDEN;
/* Around fork: hold the drain lock so the child's copy of the encoders is
 * consistent. */
void ta_flusher_fork_prepare(void) TA_HIDDEN;
void ta_flusher_fork_parent(void) TA_HIDDEN;
/* The shadow stack the flusher's encoder has for t, or NULL. */
const struct ta_stack *ta_flusher_stack(struct ta_thread *t) TA_HIDDEN;
/* The setjmp points the flusher's encoder knows for t, or NULL. */
const struct ta_jmptab *ta_flusher_jmptab(struct ta_thread *t) TA_HIDDEN;
/* From a crash handler: stops the flusher and drains what can be had. */
void ta_flusher_crash_drain(void) TA_HIDDEN;

/* For the agent-ring test only: hold(b) runs inside a drain after each
 * read of block b's shared state (its head, its next), as if the draining
 * thread were held up there while b's producer went on (NULL: none). */
struct ta_block;
void ta_flusher_test_hold(void (*hold)(const struct ta_block *b)) TA_HIDDEN;
/* Tests only: while on, the flusher has no memory for a thread's flush
 * state (its first drain's allocation fails). */
void ta_flusher_test_no_state(int on) TA_HIDDEN;

#endif
