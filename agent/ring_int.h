/* SPDX-License-Identifier: MIT */
/*
 * ring_int.h - what the ring's three files share, and nothing outside them
 * includes: the slow path (ring.c) takes blocks from the pool
 * (ring_pool.c) and registers threads with the registry (ring_thread.c),
 * which takes its first block from the pool too.  The calls go one way,
 * down: the pool knows neither of the others, the registry not the slow
 * path (the thread-exit destructor is the slow path's, handed down).
 */
#ifndef TA_RING_INT_H
#define TA_RING_INT_H

#include <stdint.h>

#include "ring.h"

/* ---- the pool (ring_pool.c) ---- */

/* enum ta_mode of settings.h, and in flight mode the blocks a thread keeps
 * (at least 2); set at the start and at each attach window. */
extern int ta_ring_mode;
extern uint32_t ta_ring_flight_blocks;
/* Threads registered and not exited (atomic): the backlog's high-water
 * mark grows with them. */
extern uint32_t ta_ring_live_threads;
/* Set while the thread drains its own ring (ta_ring_throttle): a signal
 * handler that interrupted that drain may not wait for a block. */
extern __thread int ta_ring_self_draining __attribute__((tls_model("initial-exec")));

/* Maps the pool and its reserve; 0 or -errno.  Unmapped again only when
 * the rest of the ring's set-up fails. */
int ta_ring_pool_init(uint32_t block_bytes, uint64_t memory_cap, int mode, uint64_t flight_bytes);
void ta_ring_pool_unmap(void);
/* A recycled block, else a never-used one, reset; NULL at the cap. */
struct ta_block *ta_ring_pool_get(void);
/* Lossless mode at the memory cap: a block, waited for (the time is t's
 * wait); NULL if the agent stops meanwhile, or, for a handler inside its
 * thread's own drain, when the emergency reserve is used up too. */
struct ta_block *ta_ring_block_wait(struct ta_thread *t);
/* Above the backlog's high-water mark: t drains its own ring, or waits for
 * the flusher (at most ~2 ms), the time being its wait. */
void ta_ring_throttle(struct ta_thread *t);
/* Whether b is one of the pool's blocks (not a placeholder). */
int ta_ring_in_pool(const struct ta_block *b);
/* The block of a thread whose record is of an ended attach window is no
 * longer pinned: back in the pool when running, else left for the next
 * reattach. */
void ta_ring_unpin(struct ta_block *b, int running);
/* A thread stayed in its slow path when a window ended (ta_ring_quiesce):
 * no block used so far is handed out again. */
void ta_ring_keep_used(void);
/* After fork in the child: a fresh pool, nothing in use. */
void ta_ring_pool_fork(void);

/* ---- the registry (ring_thread.c) ---- */

/* The key whose destructor, on_exit, ends a thread's registration. */
int ta_ring_threads_init(void (*on_exit)(void *));
/* A record for the calling thread, live, with its first block (none in
 * drop mode at the cap); NULL if there is no record or the agent stopped
 * while it waited for its block. */
struct ta_thread *ta_ring_thread_register(uint64_t ticks);
/* After fork in the child: the frames `me` (the forking thread's record,
 * or NULL) has open, for the child's thread to inherit at its first
 * event; then the parent's records forgotten. */
void ta_ring_inherit(struct ta_thread *me);
void ta_ring_threads_fork(void);

#endif
