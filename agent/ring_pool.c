/* SPDX-License-Identifier: MIT */
/*
 * ring_pool.c - the ring's memory: the block pool, its emergency reserve,
 * the blocks pinned across attach windows, and a producer's wait for
 * blocks (at the memory cap, or above the backlog's high-water mark).
 *
 * Apart from the slow path (ring.c) and the thread registry
 * (ring_thread.c), which take blocks from it: it knows neither.
 *
 * Memory: the pool reserves the whole memory cap as address space once
 * (MAP_NORESERVE) and hands out fixed-size blocks from it, so the resident
 * size grows only with the blocks actually in flight.  Recycled blocks go on
 * a LIFO free list so the warm ones are reused first.  Beyond the cap, in
 * the same mapping, a reserve for the one taker that may not wait (a signal
 * handler inside its thread's own drain; reserve_nblocks).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "compiler.h"
#include "keep.h"
#include "lazylib.h"
#include "ring.h"
#include "ring_int.h"
#include "settings.h"

static uint8_t *pool_base;
static uint32_t pool_block_bytes, pool_events, pool_nblocks;
static uint32_t pool_next;   /* blocks never used start here (atomic) */
static uint64_t pool_free;   /* free list head: tag << 32 | (index + 1) */
static uint32_t pool_in_use; /* atomic, for the peak statistic */
static uint32_t pool_peak;
/*
 * The emergency reserve: RESERVE_BYTES of blocks beyond the memory cap,
 * mapped with the pool (address space only until written), for a signal
 * handler that interrupted its thread's own drain (ta_ring_self_draining,
 * in ta_ring_throttle) and finds the pool empty at the cap.  It must not
 * wait:
 * the code it interrupted holds its ring, which neither it nor the flusher
 * can drain before it returns, and when that ring holds the pool the wait
 * would never end.  Blocks [pool_nblocks, pool_nblocks + reserve_nblocks)
 * of pool_base, with a free list of their own, so the cap stays the cap for
 * everything else; each taking is counted (END's reserve_blocks, 1.7).
 * Beyond it the handler's events are counted lost as nested ones are.
 */
#define RESERVE_BYTES (16u << 20)
static uint32_t reserve_nblocks;
static uint32_t reserve_next;	 /* reserve blocks never used start here (atomic) */
static uint64_t reserve_free;	 /* its free list, as pool_free */
static uint64_t reserve_taken;	 /* blocks taken from it (atomic) */
static uint32_t pool_high_water; /* blocks in use above which producers help */
uint32_t ta_ring_live_threads;
/* A window ended with a thread that stayed in its slow path: it may link
 * any block later, so none used so far is handed out again. */
static int no_reuse;

static inline struct ta_block *block_at(uint32_t idx)
{
	return (struct ta_block *)(pool_base + (size_t)idx * pool_block_bytes);
}

static inline uint32_t block_index(const struct ta_block *b)
{
	return (uint32_t)(((const uint8_t *)b - pool_base) / pool_block_bytes);
}

uint32_t ta_block_events(void)
{
	return pool_events;
}

uint64_t ta_pool_used_bytes(void)
{
	return (uint64_t)__atomic_load_n(&pool_in_use, __ATOMIC_RELAXED) * pool_block_bytes;
}

uint64_t ta_pool_peak_bytes(void)
{
	return (uint64_t)__atomic_load_n(&pool_peak, __ATOMIC_RELAXED) * pool_block_bytes;
}

int ta_ring_mode;
uint32_t ta_ring_flight_blocks;

int ta_ring_pool_init(uint32_t block_bytes, uint64_t memory_cap, int mode, uint64_t flight_bytes)
{
	void *p;

	ta_ring_mode = mode;
	ta_ring_flight_blocks = (uint32_t)(flight_bytes / block_bytes);
	if (ta_ring_flight_blocks < 2)
		ta_ring_flight_blocks = 2;
	pool_block_bytes = block_bytes;
	pool_events = (block_bytes - TA_BLOCK_HEADER) / sizeof(struct ta_rec);
	pool_nblocks = (uint32_t)(memory_cap / block_bytes);
	/* A small backlog: 16 blocks, plus two per live thread (each holds
	 * its current one).  With more producers than cores the flusher gets
	 * a small share of the CPU; a backlog allowed to grow to the cap
	 * would cost the resident size and, worse, the cache: blocks recycled
	 * while still warm are much cheaper to refill (docs/bench.md). */
	pool_high_water = 16;
	reserve_nblocks = RESERVE_BYTES / block_bytes;
	if (reserve_nblocks < 4)
		reserve_nblocks = 4;
	p = mmap(NULL, (size_t)(pool_nblocks + reserve_nblocks) * block_bytes,
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	pool_base = p;
	return 0;
}

void ta_ring_pool_unmap(void)
{
	munmap(pool_base, (size_t)(pool_nblocks + reserve_nblocks) * pool_block_bytes);
}

/* Pops a block off a free list (pool_free or reserve_free); NULL if empty. */
static struct ta_block *stack_pop(uint64_t *head)
{
	/* Acquire: pairs with the release in stack_push, so free_next of
	 * the block on top is the value written before it was pushed. */
	uint64_t old = __atomic_load_n(head, __ATOMIC_ACQUIRE);

	while ((uint32_t)old) {
		struct ta_block *top = block_at((uint32_t)old - 1);
		/* A stale read here is harmless: the tag makes the CAS fail if
		 * the top changed (blocks are never unmapped). */
		uint32_t nxt = __atomic_load_n(&top->free_next, __ATOMIC_RELAXED);
		uint64_t new = (((old >> 32) + 1) << 32) | nxt;
		if (__atomic_compare_exchange_n(head, &old, new, 1, __ATOMIC_ACQUIRE,
						__ATOMIC_ACQUIRE))
			return top;
	}
	return NULL;
}

static void stack_push(uint64_t *head, struct ta_block *b)
{
	uint32_t idx = block_index(b);
	uint64_t old = __atomic_load_n(head, __ATOMIC_RELAXED);
	uint64_t new;

	do {
		__atomic_store_n(&b->free_next, (uint32_t)old, __ATOMIC_RELAXED);
		new = (((old >> 32) + 1) << 32) | (idx + 1);
		/* Release: pairs with the acquire in stack_pop. */
	} while (
	    !__atomic_compare_exchange_n(head, &old, new, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED));
}

/* A never-used block of [base, base + n), counted by *next; NULL if none. */
static struct ta_block *fresh_block(uint32_t *next, uint32_t base, uint32_t n)
{
	uint32_t idx = __atomic_load_n(next, __ATOMIC_RELAXED);

	do {
		if (idx >= n)
			return NULL;
	} while (!__atomic_compare_exchange_n(next, &idx, idx + 1, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	return block_at(base + idx);
}

static void block_reset(struct ta_block *b)
{
	b->head = 0;
	b->limit = pool_events;
	b->next = NULL;
	b->consumed = 0;
}

static inline int in_reserve(const struct ta_block *b)
{
	return block_index(b) >= pool_nblocks;
}

/* Pops a recycled block, else takes a never-used one; NULL at the cap. */
struct ta_block *ta_ring_pool_get(void)
{
	struct ta_block *b = stack_pop(&pool_free);
	uint32_t in_use, peak;

	if (!b && !(b = fresh_block(&pool_next, 0, pool_nblocks)))
		return NULL;
	block_reset(b);
	in_use = __atomic_add_fetch(&pool_in_use, 1, __ATOMIC_RELAXED);
	peak = __atomic_load_n(&pool_peak, __ATOMIC_RELAXED);
	while (in_use > peak && !__atomic_compare_exchange_n(&pool_peak, &peak, in_use, 1,
							     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return b;
}

/* A block of the emergency reserve (above), counted; NULL if it is used up. */
static struct ta_block *reserve_get(void)
{
	struct ta_block *b = stack_pop(&reserve_free);

	if (!b && !(b = fresh_block(&reserve_next, pool_nblocks, reserve_nblocks)))
		return NULL;
	block_reset(b);
	__atomic_add_fetch(&reserve_taken, 1, __ATOMIC_RELAXED);
	return b;
}

uint64_t ta_ring_reserve_taken(void)
{
	return __atomic_load_n(&reserve_taken, __ATOMIC_RELAXED);
}

void ta_block_put(struct ta_block *b)
{
	if (in_reserve(b)) {
		stack_push(&reserve_free, b);
		return;
	}
	__atomic_sub_fetch(&pool_in_use, 1, __ATOMIC_RELAXED);
	stack_push(&pool_free, b);
}

/*
 * Attach windows (attach.c).  When a window ends the threads keep running
 * with ta_cur pointing at their current block and ta_ring_self at their record:
 * TLS that only its thread can change, and a thread may not call a hook
 * for a long time (or ever again).  Such a block must not be handed to
 * another thread in a later window: the silent thread's next hook would
 * claim and fill it.  So each such block is pinned until its thread comes
 * back (its record reads TA_T_DETACHED: the slow path frees both) or
 * exits.  A pinned block reads head 0, limit 0 (its pages were given back),
 * so its thread's next hook, in any window, takes the slow path.  The pool
 * is never unmapped: a thread that was inside a hook when the GOT was
 * restored may still store into its block, and a late store only brings
 * one zero page back.
 * pinned[i]: 0 free to reuse, 1 pinned, 2 its thread exited meanwhile
 * (freed by the next ta_ring_reattach).  Byte atomics: whoever exchanges
 * a non-zero value for 0 puts the block back, once.
 */
static uint8_t *pinned;

/* On the free list without counting it in use (it was not, in this
 * window). */
static void free_push(struct ta_block *b)
{
	b->limit = 0;
	stack_push(in_reserve(b) ? &reserve_free : &pool_free, b);
}

int ta_ring_in_pool(const struct ta_block *b)
{
	return pool_base && (const uint8_t *)b >= pool_base &&
	       (const uint8_t *)b <
		   pool_base + (size_t)(pool_nblocks + reserve_nblocks) * pool_block_bytes;
}

void ta_ring_unpin(struct ta_block *b, int running)
{
	if (ta_ring_in_pool(b) && pinned) {
		uint8_t *p = &pinned[block_index(b)];

		if (running) {
			if (__atomic_exchange_n(p, 0, __ATOMIC_ACQ_REL))
				free_push(b);
		} else {
			uint8_t one = 1;
			__atomic_compare_exchange_n(p, &one, 2, 0, __ATOMIC_ACQ_REL,
						    __ATOMIC_RELAXED);
		}
	}
}

void ta_ring_keep_used(void)
{
	no_reuse = 1;
}

void ta_ring_detach(void)
{
	uint32_t used;

	if (!pinned) {
		void *p = mmap(NULL, pool_nblocks + reserve_nblocks, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		pinned = p == MAP_FAILED ? NULL : p;
	}
	for (struct ta_thread *t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t;
	     t = t->all_next) {
		uint32_t s = TA_T_LIVE;
		struct ta_block *b;

		if (!__atomic_compare_exchange_n(&t->state, &s, TA_T_DETACHED, 0, __ATOMIC_ACQ_REL,
						 __ATOMIC_RELAXED))
			continue;
		/* Its current block: the end of its chain. */
		for (b = t->drain ? t->drain : t->first; b && b->next; b = b->next)
			;
		if (b && pinned)
			__atomic_store_n(&pinned[block_index(b)], 1, __ATOMIC_RELAXED);
		t->drain = NULL;
		t->first = NULL;
	}
	used = __atomic_load_n(&pool_next, __ATOMIC_RELAXED);
	/* The memory back: the pages read as zeros from here on. */
	madvise(pool_base, (size_t)used * pool_block_bytes, MADV_DONTNEED);
	madvise(block_at(pool_nblocks),
		(size_t)__atomic_load_n(&reserve_next, __ATOMIC_RELAXED) * pool_block_bytes,
		MADV_DONTNEED);
	__atomic_store_n(&pool_free, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&reserve_free, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&pool_in_use, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&pool_peak, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ta_ring_live_threads, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ta_pending_blocks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&ta_lost_unowned, 0, __ATOMIC_RELAXED);
	memset(ta_lost_unowned_by, 0, sizeof(ta_lost_unowned_by));
	/* Without pinned (out of memory) nothing says which blocks are
	 * pointed at: none of those used so far is used again (safe; the
	 * pool is smaller; ta_ring_reattach). */
}

void ta_ring_reattach(int mode, uint64_t flight_bytes)
{
	uint32_t used = __atomic_load_n(&pool_next, __ATOMIC_RELAXED);

	ta_ring_mode = mode;
	ta_ring_flight_blocks = (uint32_t)(flight_bytes / pool_block_bytes);
	if (ta_ring_flight_blocks < 2)
		ta_ring_flight_blocks = 2;
	if (!pinned || no_reuse)
		return;
	/* From the top down, so the lowest (the warmest before) come first;
	 * the reserve's used blocks, then the pool's. */
	for (uint32_t i = pool_nblocks + __atomic_load_n(&reserve_next, __ATOMIC_RELAXED);
	     i-- > 0;) {
		uint8_t *p = &pinned[i];

		if (i >= used && i < pool_nblocks)
			continue; /* never used */
		/* 1: its thread has not come back.  2: it exited meanwhile. */
		if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == 1)
			continue;
		__atomic_store_n(p, 0, __ATOMIC_RELAXED);
		free_push(block_at(i));
	}
}

/* The time since t0 was a wait: in the thread's total (THREAD_END), and
 * pending until append() puts it in the stream (a TA_EXT_WAIT record).
 * Two waits of one slow path with no event between them make one record,
 * from the first one's start, as long as both: the totals stay equal. */
static void add_wait(struct ta_thread *t, uint64_t t0)
{
	uint64_t len = ta_ticks() - t0;

	__atomic_store_n(&t->wait_ticks, __atomic_load_n(&t->wait_ticks, __ATOMIC_RELAXED) + len,
			 __ATOMIC_RELAXED);
	if (!t->wait_pending)
		t->wait_start = t0;
	t->wait_pending += len;
}

/* Above the high-water mark a thread that hands over a block drains its
 * own ring (encoding and writing it as the flusher would): with more
 * threads than cores the flusher alone gets too small a share of the CPU,
 * and a producer that only waited would leave a core idle.  If the flusher
 * is draining this ring right now, the thread gives it the CPU instead, for
 * at most ~2 ms a block.  The time either way is the thread's wait time. */
__thread int ta_ring_self_draining __attribute__((tls_model("initial-exec")));

void ta_ring_test_self_draining(int on)
{
	ta_ring_self_draining = on;
}

void ta_ring_throttle(struct ta_thread *t)
{
	uint64_t t0;
	int helped;

	uint32_t live = __atomic_load_n(&ta_ring_live_threads, __ATOMIC_RELAXED);
	uint32_t mark = pool_high_water + 2 * live;

	/* Keep mode's rings hold their window of frames on purpose (keep.h):
	 * those blocks are no backlog of the flusher's. */
	if (__atomic_load_n(&ta_keep_on, __ATOMIC_RELAXED))
		mark += live * ta_ring_flight_blocks;
	if (TA_LIKELY(__atomic_load_n(&pool_in_use, __ATOMIC_RELAXED) <= mark))
		return;
	/* A signal handler that interrupted this thread's own drain (below):
	 * the code it interrupted holds the ring, so neither the handler nor
	 * the flusher can drain it before the handler returns.  Waiting would
	 * only delay that; with handlers back to back (a timer faster than
	 * they run), for ever. */
	if (ta_ring_self_draining)
		return;
	t0 = ta_ticks();
	/* Plain TLS: a handler sees this thread's stores in program order.
	 * Before the flusher has tried to open liblz4 (its first pass after
	 * a block was handed over), what a thread drained itself would be
	 * written uncompressed, and the thread may not open it (it may be a
	 * signal handler): it waits for the flusher instead, as when the
	 * flusher holds its ring. */
	ta_ring_self_draining = 1;
	helped = ta_lazy_lz4_settled() && ta_ring_up.help(t);
	ta_ring_self_draining = 0;
	if (!helped) {
		ta_ring_up.kick();
		for (int i = 0; i < 40; i++) {
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
			if (__atomic_load_n(&pool_in_use, __ATOMIC_RELAXED) <= mark ||
			    __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING)
				break;
		}
	}
	add_wait(t, t0);
}

/* Lossless mode at the memory cap: wait for the flusher to free blocks, and
 * account the time waited.  NULL if the agent stops meanwhile, or, for a
 * signal handler that interrupted its thread's own drain, when the
 * emergency reserve is used up too (it never waits: see reserve_nblocks). */
struct ta_block *ta_ring_block_wait(struct ta_thread *t)
{
	struct ta_block *b = ta_ring_pool_get();
	uint64_t t0;

	if (TA_LIKELY(b != NULL))
		return b;
	if (ta_ring_self_draining)
		return reserve_get();
	t0 = ta_ticks();
	while (!(b = ta_ring_pool_get())) {
		struct timespec ts = {0, 50000};
		if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING)
			break;
		ta_ring_up.kick();
		nanosleep(&ts, NULL);
	}
	add_wait(t, t0);
	return b;
}

void ta_ring_pool_fork(void)
{
	pool_next = 0;
	pool_free = 0;
	reserve_next = 0;
	reserve_free = 0;
	reserve_taken = 0;
	pool_in_use = 0;
	pool_peak = 0;
}
