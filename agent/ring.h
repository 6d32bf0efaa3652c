/* SPDX-License-Identifier: MIT */
/*
 * ring.h - per-thread event rings and the hot path that appends to them.
 *
 * Each thread writes its events into a chain of fixed-size blocks: it is
 * the only producer, the flusher the only consumer.  A block's `head` counts
 * the events written; when a block is full the thread takes a fresh one from
 * a shared pool and links it as `next`, and the flusher follows the chain,
 * returning drained blocks to the pool.  The pool grows up to a memory cap;
 * at the cap the thread waits for the flusher (lossless mode).
 *
 * Signal safety: a signal handler may run instrumented code between any two
 * instructions of a hook.  The hook claims its thread (its stack pointer
 * in TLS, set as if in one signal-atomic step) before it even reads which
 * block is current, and keeps the claim while it writes a slot, so a
 * nested hook finds the claim, takes the slow path and puts its event
 * aside; the interrupted thread's next event appends those after its own
 * (ring.c).  A handler that runs before the claim may fill the current
 * block, and the block may be freed and handed to another thread before
 * the hook resumes: the hook reads the block only after its claim, so it
 * never holds a stale one.
 */
#ifndef TA_RING_H
#define TA_RING_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "base.h"
#include "clock.h"
#include "compiler.h"
#include "format.h"
#include "slots.h"

/* Bit 63 of a recorded address marks an exit (the format's raw events). */
#define TA_REC_EXIT TA_RAW_EXIT

/* A slot: struct ta_raw of slots.h (the agent-to-encoder slot layout), so
 * the flusher encodes straight from the block. */
#define ta_rec ta_raw
/* The hooks, the ring and the flusher write and read slots as laid out in
 * this version. */
_Static_assert(TA_SLOTS_VERSION == 1, "slots.h changed: check the ring's writers and readers");

#define TA_BLOCK_HEADER 64

struct ta_block {
	/* Written by the producer; read by the flusher with acquire. */
	uint32_t head; /* events written */
	/* Capacity in events; 0 in the placeholder blocks (so every hook on
	 * them takes the slow path), and for a moment while a handler's
	 * events are put aside (ring.c's nest_push): the flusher takes a
	 * block as done by its next, never by this. */
	uint32_t limit;
	struct ta_block *next; /* set by the producer when it moves on */
	/* Owned by the flusher. */
	uint32_t consumed;
	/* Owned by the pool. */
	uint32_t free_next; /* index + 1 of the next free block, 0 = none */
	char pad[TA_BLOCK_HEADER - 24];
	struct ta_rec ev[];
};

_Static_assert(sizeof(struct ta_block) == TA_BLOCK_HEADER, "block header is one cache line");

/*
 * What a hook reads first, in initial-exec TLS: the agent is preloaded, so
 * its TLS lives in the static block and a hook reaches it with %fs-relative
 * accesses, no __tls_get_addr; one struct, so one GOT load finds both.
 * - cur: the thread's current block.  It starts at a placeholder whose limit
 *   is 0 (ring.c's first_block, shared, only read by hooks), so a thread's
 *   first event takes the slow path, which registers the thread or, with
 *   no ring for it, moves it to a placeholder of its own.
 * - claim: while a hook's fast path runs between its claim (A) and its
 *   publication (C), the hook's stack pointer, 0 otherwise.  Only this
 *   thread and its signal handlers touch it, and a handler that returns
 *   leaves it as it found it.  A handler that siglongjmps out of the hook
 *   does not return: the longjmp wrapper (ctlflow.c) compares the jump's
 *   stack pointer with this one to tell, and drops the claim of a hook it
 *   abandons.
 */
struct ta_hot {
	struct ta_block *cur;
	uintptr_t claim;
};
extern __thread struct ta_hot ta_hot __attribute__((tls_model("initial-exec"))) TA_HIDDEN;
#define ta_cur (ta_hot.cur)

/* The out-of-line path: first event of a thread, full block, nested hook,
 * agent not (or no longer) running. */
void ta_record_slow(uint64_t addr, uint64_t ticks) TA_HIDDEN __attribute__((noinline, cold));

/* Records an EXT event (format.h: a subtype other than TA_EXT_LOST with
 * n <= TA_EXT_MAX_VALUES values) on the calling thread at the current time:
 * the manual API's texts, arguments, control-flow markers.  Into the
 * current block as ta_record writes when it has room, else the slow path.
 * Signal-safe like the hooks; errno preserved.  The caller makes sure the
 * agent is not re-entered (it is called from the agent's own wrappers). */
void ta_record_ext(uint32_t subtype, const uint64_t *v, uint32_t n) TA_HIDDEN;

/*
 * The ring's calls up, to the agent's start, to the per-thread state of the
 * files above it and to the flusher: the ring knows none of them, only this
 * table, which the conductor (agent.c) defines.  Initialised statically,
 * not at the start: the first call through it is the start itself, which a
 * hook may ask for before any constructor has run.  Slow paths only: the
 * hooks' fast path (ring.h's inline functions) never calls through it.
 */
struct ta_thread;
struct ta_stack;
struct ta_jmptab;
struct ta_ring_up {
	/* Starts the agent if nobody has; 1 when it is running. */
	int (*ensure_started)(void);
	/* A thread is registered (before it gets a ring or not). */
	void (*thread_start)(void);
	/* A thread's registration ends (ta_thread_exit), before its ring. */
	void (*thread_exit)(void);
	/* A thread's TLS is destroyed, after ta_thread_exit. */
	void (*thread_gone)(void);
	/* Wakes the flusher early (blocks are piling up). */
	void (*kick)(void);
	/* A producer drains its own ring; 1 if it did (ta_flusher_help). */
	int (*help)(struct ta_thread *t);
	/* The shadow stack and setjmp points the flusher's encoder has for
	 * t, or NULL (a forked child's record of the forking thread). */
	const struct ta_stack *(*stack)(struct ta_thread *t);
	const struct ta_jmptab *(*jmptab)(struct ta_thread *t);
};
extern const struct ta_ring_up ta_ring_up TA_HIDDEN;

/* Flight mode: the consume lock of a thread's ring, which the flusher
 * holds while it writes the ring out; 1 if taken. */
int ta_consume_trylock(struct ta_thread *t) TA_HIDDEN;
void ta_consume_unlock(struct ta_thread *t) TA_HIDDEN;

/* Starts the agent from outside a hook's path (the API, the functions
 * gate): 1 running, 0 not tracing, -1 when the calling thread is inside
 * its own slow path or start (a signal handler's), where it cannot wait:
 * its events are then put aside by ta_record. */
int ta_ring_start(void) TA_HIDDEN;

/* A longjmp to env (its saved stack pointer jump_sp, 0 if unknown) is
 * about to leave whatever it leaves: a hook's claim that it abandons (a
 * signal handler that interrupted a hook jumps out of it) is dropped, or
 * the thread would take every later event for a nested one. */
void ta_ring_longjmp(uintptr_t jump_sp) TA_HIDDEN;

/* Counts one event of the calling thread lost for cause (TA_LOST_*). */
void ta_lost_here(unsigned cause) TA_HIDDEN;

/* ta_record_ext_exit's out-of-line path: the EXT event through
 * ta_record_ext, then the exit through ta_record (ring.c). */
void ta_record_ext_exit_slow(uint64_t addr, uint32_t subtype, uint64_t a, uint64_t b, uint64_t c,
			     uint64_t d, uint32_t n) TA_HIDDEN __attribute__((noinline, cold));

/* ---- threads ------------------------------------------------------------ */

enum ta_thread_state {
	TA_T_FREE = 0, /* unused, may be claimed by a new thread */
	TA_T_CLAIMED,  /* being set up by its thread */
	TA_T_LIVE,     /* recording */
	TA_T_EXITED,   /* the thread is gone; the flusher drains what is left */
	TA_T_DETACHED, /* recorded in an attach window that ended: its thread still
			* points at it (and at a pinned block) until its next slow path
			* in a later window, or its exit, frees it (ring.c) */
};

struct ta_flush_state; /* the flusher's per-thread encoder, flusher_drain.c */

struct ta_thread {
	struct ta_thread *all_next; /* registry list, never unlinked */
	uint32_t state;		    /* enum ta_thread_state, atomic */

	/* Set by the thread before it publishes TA_T_LIVE (release). */
	uint64_t tid, ptid;
	uint64_t start_ticks;
	unsigned long pthread; /* pthread_self(), to find it by handle */
	struct ta_block *first;

	/* Written by the thread (or a thread naming it), read by the
	 * flusher: a sequence count, odd while the name is being written. */
	uint32_t name_seq;
	uint32_t name_lock;
	char name[16];

	/* Written by the thread, read by the flusher (relaxed atomics). */
	uint64_t lost; /* events it could not record */
	/* The same by cause (format.h's TA_LOST_*), summing to lost. */
	uint64_t lost_by[TA_LOST_NCAUSES];
	uint64_t wait_ticks; /* time spent waiting at the memory cap */
	/* Owner only: waits not in its stream yet (ring_pool.c's add_wait), the
	 * first one's start and their length; a TA_EXT_WAIT record then
	 * puts them where they happened, so that the views charge them to
	 * the agent, not to the function the thread was in. */
	uint64_t wait_start, wait_pending;
	uint64_t end_ticks; /* when it exited (before TA_T_EXITED) */

	/* Drop mode, owner only: events dropped since the last recorded one,
	 * and when the first of them happened (a LOST record goes in when
	 * a block is had again). */
	uint64_t drop_count, drop_ticks;
	/* The CPU (+ 1) it was on when it last handed a block over, 0 once
	 * the flusher has looked (relaxed atomics: a hint for where the
	 * flusher runs, placement.c's ta_place_flusher). */
	uint32_t cpu_seen;
	/* Blocks in its chain: added by the owner, taken off by whoever
	 * drains (relaxed atomics; flight mode's quota). */
	uint32_t chain_blocks;
	/* Flight mode, under consume_lock: the oldest events were discarded,
	 * so the encoder's stack no longer describes the stream. */
	uint32_t cut;

	/* Whoever drains the ring (the flusher, or the thread itself when
	 * the backlog is high) holds this: 0 free, 1 held (trylock). */
	uint32_t consume_lock;
	/* Owned by the holder of consume_lock. */
	struct ta_block *drain;
	struct ta_flush_state *fs;

	/* A forked child's first thread: the frames that were open in the
	 * parent when it forked (malloc'd; the flusher takes them over). */
	uint64_t *inherit;
	uint32_t inherit_depth;
	/* And the setjmp points the parent's encoder knew for it, so a
	 * longjmp in the child to a setjmp of the parent pops the same
	 * frames (static storage in ring_thread.c; the flusher copies it). */
	const struct ta_jmptab *inherit_jmp;
};

/* The calling thread's record, NULL before its first event (ring_thread.c). */
extern __thread struct ta_thread *ta_ring_self __attribute__((tls_model("initial-exec"))) TA_HIDDEN;

/*
 * Claims the calling thread against its own signal handlers; returns
 * whether it was claimed already (a hook we interrupted).  A load, a test
 * and a store of the stack pointer: a handler that runs between the test
 * and the store finds 0 and leaves 0 (or never returns), so the three are
 * as good as one signal-atomic step.  Everything the hook reads or writes
 * afterwards (ta_cur, the block) comes after it: the memory clobber, and a
 * signal fence, keep the compiler from hoisting it.  No barrier: only this
 * thread reads the claim, and a thread sees its own accesses in order.
 */
static inline __attribute__((always_inline)) int ta_claim(void)
{
#if TA_ARCH_HAS_CLAIM_ASM
	TA_ARCH_CLAIM(ta_hot.claim, claimed);
	return 0;
claimed:
	return 1;
#else
	uintptr_t sp;

	if (__atomic_load_n(&ta_hot.claim, __ATOMIC_RELAXED))
		return 1;
	TA_ARCH_READ_SP(sp);
	__atomic_store_n(&ta_hot.claim, sp, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return 0;
#endif
}

/* Drops the claim, after the stores it covered (a handler that comes after
 * this finds the slot published and records directly). */
static inline __attribute__((always_inline)) void ta_unclaim(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&ta_hot.claim, 0, __ATOMIC_RELAXED);
}

/* A file may route the slow path through a wrapper of its own: patch.c's
 * keeps the vector registers, which the callers of patched functions may
 * count on. */
#ifndef TA_RECORD_SLOW
#define TA_RECORD_SLOW ta_record_slow
#endif

/*
 * Each hook asks for write ownership of the slot 8 ahead (128 bytes, two
 * cache lines, further on).  A block's lines were last read by the flusher on
 * another core; without the prefetch the slot stores wait for those lines
 * to come back, which costs about a nanosecond an event (docs/bench.md; a
 * block that was never read by anyone, as in flight mode, costs nothing
 * over the floor).  A prefetch never faults, so past the
 * block's end is harmless.  prefetchw is a NOP on x86 CPUs without it.
 */
#define TA_PREFETCH_AHEAD 8
#if TA_ARCH_HAS_PREFETCHW
/* b + 16 h is in a register for the slot's stores already: on x86-64 the
 * prefetch is one instruction, from it and a constant. */
#define ta_prefetch_slot(b, h)                                                                     \
	TA_ARCH_PREFETCHW(b, (uint64_t)(h) * sizeof((b)->ev[0]),                                   \
			  offsetof(struct ta_block, ev) + sizeof((b)->ev[0]) * TA_PREFETCH_AHEAD)
#else
#define ta_prefetch_slot(b, h) __builtin_prefetch(&(b)->ev[(h) + TA_PREFETCH_AHEAD], 1, 3)
#endif

static inline __attribute__((always_inline)) void ta_record(uint64_t addr)
{
	uint64_t t = ta_ticks();
	struct ta_block *b;
	uint32_t h;

	/* (A) Claim the thread against its own signal handlers.  A claim
	 * already there is a hook we interrupted. */
	if (TA_UNLIKELY(ta_claim())) {
		TA_RECORD_SLOW(addr, t);
		return;
	}
	b = ta_cur;
	h = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
	/* Full, a placeholder (limit 0), or a handler set limit to 0 to have
	 * its events appended (ring.c's nest_push): give the claim back and
	 * take the slow path. */
	if (TA_UNLIKELY(h >= __atomic_load_n(&b->limit, __ATOMIC_RELAXED))) {
		ta_unclaim();
		TA_RECORD_SLOW(addr, t);
		return;
	}
	/* (B) Fill the slot. */
	ta_prefetch_slot(b, h);
	b->ev[h].ticks = t;
	b->ev[h].addr = addr;
	/* (C) Publish it: pairs with the flusher's acquire load of head. */
	__atomic_store_n(&b->head, h + 1, __ATOMIC_RELEASE);
	ta_unclaim();
}

/* A group of n slots written as ta_record writes one: the thread claimed
 * (A), room found in its current block (read after the claim), and the
 * first slot returned with the block in *blk; NULL, nothing held, when the
 * slow path must take the group (nested in a hook, or no room). */
static inline __attribute__((always_inline)) struct ta_rec *ta_group_claim(uint32_t n,
									   struct ta_block **blk)
{
	struct ta_thread *t;
	struct ta_block *b;
	uint32_t h;

	if (TA_UNLIKELY(ta_claim()))
		return NULL;
	/* A record of an attach window that ended: the slow path starts
	 * the thread afresh in the new window, as its hooks' next block does
	 * (a pinned block reads limit 0); a thread whose block still has room
	 * would otherwise write the API's events where no drain reads them. */
	t = ta_ring_self;
	if (TA_UNLIKELY(t && __atomic_load_n(&t->state, __ATOMIC_RELAXED) == TA_T_DETACHED)) {
		ta_unclaim();
		return NULL;
	}
	b = ta_cur;
	h = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
	if (TA_UNLIKELY(h + n > __atomic_load_n(&b->limit, __ATOMIC_RELAXED))) {
		ta_unclaim();
		return NULL;
	}
	ta_prefetch_slot(b, h);
	*blk = b;
	return &b->ev[h];
}

/* Publishes the n slots filled at s (C): one store of head, which pairs
 * with the flusher's acquire load of it, then the claim given back. */
static inline __attribute__((always_inline)) void ta_group_publish(struct ta_block *b,
								   struct ta_rec *s, uint32_t n)
{
	__atomic_store_n(&b->head, (uint32_t)(s - b->ev) + n, __ATOMIC_RELEASE);
	ta_unclaim();
}

/* The slots of an EXT group of 1 <= n <= 4 values (a..d, the unused ones
 * 0) at s, at time t: one base pointer and constant offsets (n is a
 * constant in every caller), the values from registers to the slots, no
 * array on the stack and no index arithmetic per slot. */
static inline __attribute__((always_inline)) void ta_ext_fill(struct ta_rec *s, uint64_t t,
							      uint32_t subtype, uint64_t a,
							      uint64_t b, uint64_t c, uint64_t d,
							      uint32_t n)
{
	s[0].ticks = t;
	s[0].addr = TA_RAW_EXT | (uint64_t)subtype << 8 | n;
	s[1].ticks = a;
	s[1].addr = n > 1 ? b : 0;
	if (TA_RAW_EXT_SLOTS(n) > 1) {
		s[2].ticks = c;
		s[2].addr = n > 3 ? d : 0;
	}
}

/* ta_record_ext4's out-of-line path: through ta_record_ext (ring.c). */
void ta_record_ext4_slow(uint32_t subtype, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
			 uint32_t n) TA_HIDDEN __attribute__((noinline, cold));

/*
 * An EXT event of 1 <= n <= 4 values (a..d, the unused ones 0) on the
 * calling thread now: the manual API's counters, instants, frames,
 * allocations.  Written like one ta_record when the block has room (one
 * counter read, one claim, one store of head publishing the group whole);
 * otherwise ta_record_ext's way.  errno is left alone.
 */
static inline __attribute__((always_inline)) void
ta_record_ext4(uint32_t subtype, uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint32_t n)
{
	uint64_t t = ta_ticks();
	uint32_t slots = 1 + TA_RAW_EXT_SLOTS(n);
	struct ta_block *blk;
	struct ta_rec *s = ta_group_claim(slots, &blk);

	if (TA_UNLIKELY(!s)) {
		ta_record_ext4_slow(subtype, a, b, c, d, n);
		return;
	}
	ta_ext_fill(s, t, subtype, a, b, c, d, n);
	ta_group_publish(blk, s, slots);
}

/*
 * The end of a library call's zone: its EXT event (1 <= n <= 4 values,
 * a..d, the unused ones 0) and the exit of addr, at one time, written
 * together like one ta_record when the block has room for both (one counter
 * read, one claim, one prefetch as in ta_record);
 * otherwise the two go through the slow path.  The EXT group stays whole in
 * one block, as the flusher requires.  errno is left alone.
 */
static inline __attribute__((always_inline)) void ta_record_ext_exit(uint64_t addr,
								     uint32_t subtype, uint64_t a,
								     uint64_t b, uint64_t c,
								     uint64_t d, uint32_t n)
{
	uint64_t t = ta_ticks();
	uint32_t slots = TA_RAW_EXT_SLOTS(n);
	struct ta_block *blk;
	struct ta_rec *s = ta_group_claim(slots + 2, &blk);

	if (TA_UNLIKELY(!s))
		goto slow;
	ta_ext_fill(s, t, subtype, a, b, c, d, n);
	s[1 + slots].ticks = t;
	s[1 + slots].addr = addr | TA_REC_EXIT;
	ta_group_publish(blk, s, slots + 2);
	return;
slow:
	ta_record_ext_exit_slow(addr, subtype, a, b, c, d, n);
}

/* The registry: every ta_thread ever allocated (pushed, never removed). */
extern struct ta_thread *ta_threads TA_HIDDEN;

/* Pool and registry set-up; 0 or -errno. */
/* mode: enum ta_mode of settings.h. */
int ta_ring_init(uint32_t block_bytes, uint64_t memory_cap, int mode,
		 uint64_t flight_bytes) TA_HIDDEN;
/* Returns a block to the pool (flusher only). */
void ta_block_put(struct ta_block *b) TA_HIDDEN;
uint32_t ta_block_events(void) TA_HIDDEN;
/* Blocks handed over since the flusher last looked; the flusher resets it. */
extern uint32_t ta_pending_blocks TA_HIDDEN;
/* How many handed-over blocks make a producer kick the flusher (4, or 16
 * while the program keeps every CPU busy: placement.c's ta_slack_judge). */
extern uint32_t ta_kick_blocks TA_HIDDEN;
/* Bytes of pool blocks in use now (the control socket's status). */
uint64_t ta_pool_used_bytes(void) TA_HIDDEN;
/* Peak number of pool blocks in use (for the END statistics). */
uint64_t ta_pool_peak_bytes(void) TA_HIDDEN;
/* Blocks taken from the emergency reserve beyond the memory cap by signal
 * handlers that interrupted their thread's own drain (ring_pool.c; END, 1.7). */
uint64_t ta_ring_reserve_taken(void) TA_HIDDEN;
/* For the agent-ring test only: the calling thread acts as a signal
 * handler that interrupted its thread's own drain (ta_ring_throttle's). */
void ta_ring_test_self_draining(int on) TA_HIDDEN;

/* The calling thread records nothing from now on (a crash handler). */
void ta_cur_stop(void) TA_HIDDEN;
/* The calling thread's registration ends (thread exit). */
void ta_thread_exit(void) TA_HIDDEN;
/* The thread's own record, or NULL before its first event. */
struct ta_thread *ta_thread_self(void) TA_HIDDEN;
/* Whether the calling thread records events: it has a record, or it is a
 * forked child's thread whose parent thread had one (it gets its record
 * at its next event). */
int ta_thread_traced(void) TA_HIDDEN;
/* Sets the name of the thread whose pthread_self() is `handle`. */
void ta_thread_set_name(unsigned long handle, const char *name) TA_HIDDEN;
/* Parent tid to record for the calling thread (pthread_create wrapper). */
void ta_thread_set_parent(uint64_t ptid) TA_HIDDEN;
/* Events lost by threads that could not get a ring (in no thread's count),
 * in all and by cause (format.h's TA_LOST_*). */
extern uint64_t ta_lost_unowned TA_HIDDEN;
extern uint64_t ta_lost_unowned_by[TA_LOST_NCAUSES] TA_HIDDEN;

/* After fork in the child: works out the forking thread's open frames
 * (for its record in the child), then forgets the parent's threads and
 * blocks; the child records into a fresh pool. */
void ta_ring_fork_child(void) TA_HIDDEN;
/* An attached agent's window ends: waits (up to 2 s) until no thread is in
 * a slow path, where one that read the state before the detach could still
 * link a block; 0, or -1 when one stayed (the blocks used so far are then
 * never handed out again). */
int ta_ring_quiesce(void) TA_HIDDEN;
/* An attached agent's window ends (attach.c, agent.c's ta_agent_detach),
 * after the final drain with the flusher stopped: the threads' records and
 * their current blocks are set aside (a thread keeps pointing at them until
 * it runs the slow path again), the pool's pages are given back
 * (MADV_DONTNEED) and its counts reset. */
void ta_ring_detach(void) TA_HIDDEN;
/* A new window (ta_agent_reattach): the pool's blocks back on the free
 * list but those still pointed at; the mode of the new settings. */
void ta_ring_reattach(int mode, uint64_t flight_bytes) TA_HIDDEN;

#endif
