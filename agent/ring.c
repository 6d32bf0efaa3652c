/* SPDX-License-Identifier: MIT */
/*
 * ring.c - the hot path's slow side: a thread's first event, a full
 * block, a hook nested in another (the events put aside), the attach
 * window a thread comes back from, and the thread's last event.
 *
 * The rest of the ring is below it, in files of their own: the memory
 * (ring_pool.c: the pool, its reserve, the waits for blocks) and the
 * thread registry (ring_thread.c).  What they share is ring_int.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "compiler.h"
#include "format.h"
#include "lazylib.h"
#include "ring.h"
#include "ring_int.h"
#include "settings.h"

/* Blocks with no room (limit 0): every hook that finds one in ta_cur takes
 * the slow path.  Hooks only read them, but the slow path tells them apart
 * by address, so each thread has its own two, in initial-exec TLS like
 * ta_hot:
 * - idle_block: no ring yet, or the agent not running;
 * - busy_block: what the thread points at while its slow path works: a
 *   nested hook (a signal handler) finds it there and puts its event aside.
 * A TLS address is no constant initializer, so ta_cur starts at first_block,
 * shared by the threads that have not recorded yet. */
static struct ta_block first_block;
/* A line of their own, where the loader can give a library dlopen'ed into
 * a running process (traceagent attach) static TLS so aligned (16 bytes
 * only on aarch64: "cannot allocate memory in static TLS block"); the
 * thread's other TLS is written by the thread itself only. */
#define TLS_BLOCK_ALIGN TA_ARCH_DLOPEN_TLS_ALIGN
static __thread struct ta_block idle_block
    __attribute__((tls_model("initial-exec"), aligned(TLS_BLOCK_ALIGN)));
static __thread struct ta_block busy_block
    __attribute__((tls_model("initial-exec"), aligned(TLS_BLOCK_ALIGN)));

__thread struct ta_hot ta_hot __attribute__((tls_model("initial-exec"))) = {.cur = &first_block};

/* The placeholders where a thread goes to the slow path for want of a
 * ring or of a running agent (not nested in anything). */
static inline int is_idle(const struct ta_block *b)
{
	return b == &idle_block || b == &first_block;
}

uint64_t ta_lost_unowned;
uint64_t ta_lost_unowned_by[TA_LOST_NCAUSES];
uint32_t ta_pending_blocks;
uint32_t ta_kick_blocks = 4;

/* Threads inside record_slow (seq_cst: ta_ring_quiesce's Dekker pair). */
static uint32_t slow_inflight;

static void thread_key_destructor(void *arg)
{
	(void)arg;
	ta_thread_exit();
	ta_ring_up.thread_gone();
}

int ta_ring_init(uint32_t block_bytes, uint64_t memory_cap, int mode, uint64_t flight_bytes)
{
	int err = ta_ring_pool_init(block_bytes, memory_cap, mode, flight_bytes);

	if (err)
		return err;
	if (ta_ring_threads_init(thread_key_destructor) != 0) {
		ta_ring_pool_unmap();
		return -EAGAIN;
	}
	return 0;
}

static void nest_forget(void);

/* The calling thread's record is of an ended window: b, its block, is
 * unpinned (back in the pool when running, else left for the next
 * reattach), the record freed, the thread's TLS made as new.  Returns the
 * idle placeholder: the caller registers it afresh if the agent runs. */
static struct ta_block *forget_window(struct ta_thread *t, struct ta_block *b, int running)
{
	ta_ring_unpin(b, running);
	nest_forget();
	ta_ring_self = NULL;
	/* Release: a new thread claiming the record sees it clean. */
	__atomic_store_n(&t->state, TA_T_FREE, __ATOMIC_RELEASE);
	return &idle_block;
}

int ta_ring_quiesce(void)
{
	struct timespec nap = {0, 1000 * 1000};

	/* Seq_cst: the state's store (the caller's exchange) before this
	 * load, as record_slow's increment before its load of the state:
	 * either we see the thread inside, or it sees the state changed. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (int ms = 0; ms < 2000; ms++) {
		if (__atomic_load_n(&slow_inflight, __ATOMIC_SEQ_CST) == 0)
			return 0;
		nanosleep(&nap, NULL);
	}
	ta_ring_keep_used();
	return -1;
}

/* One event lost, for a cause the dump names (THREAD_END and END).  The
 * owner's counters are written only by the thread (its handlers included:
 * a handler runs to its end before the code it interrupted goes on, so a
 * load then a store is not torn by one) and read by the flusher: relaxed
 * atomics, as the flusher takes them once the thread has ended, after the
 * acquire load of its state.  The unowned ones are shared: atomic adds. */
static void count_lost(struct ta_thread *t, enum ta_lost_cause cause)
{
	if (t) {
		__atomic_store_n(&t->lost_by[cause],
				 __atomic_load_n(&t->lost_by[cause], __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
		__atomic_store_n(&t->lost, __atomic_load_n(&t->lost, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&ta_lost_unowned_by[cause], 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&ta_lost_unowned, 1, __ATOMIC_RELAXED);
	}
}

/* The same for an event a hook nested in a fast path could not put aside
 * (nest_push): that push runs with signals open, so a handler nested in it
 * may count too, between a load and a store: atomic adds. */
static void count_lost_nested(struct ta_thread *t)
{
	if (t) {
		__atomic_add_fetch(&t->lost_by[TA_LOST_NESTED], 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&t->lost, 1, __ATOMIC_RELAXED);
	} else {
		count_lost(NULL, TA_LOST_NESTED);
	}
}

int ta_ring_start(void)
{
	/* As record_slow does: the thread points at busy_block while the
	 * agent starts, so that a handler's hook on this thread puts its
	 * event aside instead of waiting for a start it interrupted. */
	struct ta_block *b = __atomic_exchange_n(&ta_cur, &busy_block, __ATOMIC_RELAXED);
	int ok;

	if (b == &busy_block)
		return -1; /* nested in this thread's slow path or start */
	TA_GUARD_ENTER();
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ok = ta_ring_up.ensure_started();
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ta_cur = b;
	TA_GUARD_LEAVE();
	return ok;
}

void ta_ring_longjmp(uintptr_t jump_sp)
{
	uintptr_t c = __atomic_load_n(&ta_hot.claim, __ATOMIC_RELAXED);

	/* The stack grows down: a jump to a frame above the hook's leaves it
	 * (a handler on an alternate stack jumping back to the program's does
	 * too, as long as the hook ran on the program's stack).  A target not
	 * known is taken as leaving, the usual case. */
	if (c && (!jump_sp || jump_sp > c))
		__atomic_store_n(&ta_hot.claim, 0, __ATOMIC_RELAXED);
}

void ta_lost_here(unsigned cause)
{
	count_lost(ta_ring_self, (enum ta_lost_cause)cause);
}

int ta_consume_trylock(struct ta_thread *t)
{
	uint32_t free_ = 0;

	/* Acquire: pairs with the release in consume_unlock, so the new
	 * holder sees the drain position and encoder the last one left. */
	return __atomic_compare_exchange_n(&t->consume_lock, &free_, 1, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

void ta_consume_unlock(struct ta_thread *t)
{
	__atomic_store_n(&t->consume_lock, 0, __ATOMIC_RELEASE);
}

/*
 * Flight mode: when the thread holds its quota (or the pool is dry), its
 * oldest block becomes its newest and the events in it are gone; the
 * flusher's encoder is told its stack no longer describes the stream.
 * Under the ring's consume lock, so never while that ring is being
 * written out; NULL when it cannot be had now (then the thread takes a
 * block from the pool, or waits for one).
 */
static struct ta_block *flight_recycle(struct ta_thread *t, int want)
{
	struct ta_block *old, **head;

	if (!want || __atomic_load_n(&t->chain_blocks, __ATOMIC_RELAXED) < 2 ||
	    !ta_consume_trylock(t))
		return NULL;
	head = t->drain ? &t->drain : &t->first;
	old = *head;
	*head = old->next;
	t->cut = 1;
	__atomic_sub_fetch(&t->chain_blocks, 1, __ATOMIC_RELAXED);
	ta_consume_unlock(t);
	old->head = 0;
	old->next = NULL;
	old->consumed = 0;
	return old;
}

static __thread int need_throttle __attribute__((tls_model("initial-exec")));

/*
 * A fresh block after the full block b: from the thread's own oldest
 * (flight), from the pool, or waiting for one (lossless); in drop mode,
 * NULL when there is none, the event then being dropped and counted.  NULL
 * also when the agent stopped while the thread waited, and (*counted set)
 * for a handler inside its thread's own drain when no block is left.
 */
static struct ta_block *next_block(struct ta_thread *t, struct ta_block *b, uint64_t ticks,
				   int *counted)
{
	struct ta_block *nb;

	if (ta_ring_mode == TA_MODE_FLIGHT &&
	    (nb = flight_recycle(t, __atomic_load_n(&t->chain_blocks, __ATOMIC_RELAXED) >=
					ta_ring_flight_blocks)) != NULL) {
		/* Its own oldest block, now its newest. */
	} else if (ta_ring_mode == TA_MODE_DROP) {
		nb = ta_ring_pool_get();
		if (!nb) {
			/* At the cap: dropped, counted; the next event tries
			 * again. */
			if (!t->drop_count++)
				t->drop_ticks = ticks;
			count_lost(t, TA_LOST_DROPPED);
			ta_ring_up.kick();
			return NULL;
		}
	} else if (ta_ring_mode == TA_MODE_FLIGHT) {
		/* Below its quota and the pool empty (a memory cap smaller than
		 * the threads' quotas): its own oldest block all the same, as
		 * at the quota.  Nothing frees pool blocks in flight mode but a
		 * thread's end, so a wait here could last for ever.
		 * The recycle fails only while the flusher writes this ring
		 * (a flight signal): a moment. */
		while (!(nb = ta_ring_pool_get()) && !(nb = flight_recycle(t, 1))) {
			if (__atomic_load_n(&t->chain_blocks, __ATOMIC_RELAXED) < 2) {
				nb = ta_ring_block_wait(t); /* one block: nothing to recycle */
				break;
			}
			if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING)
				break;
			sched_yield();
		}
		if (!nb)
			return NULL;
	} else {
		nb = ta_ring_block_wait(t);
		if (!nb && ta_ring_self_draining &&
		    __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING) {
			/* A handler inside its thread's own drain, the pool and
			 * the reserve used up: lost, as events put aside
			 * beyond their reserve are (the next event tries
			 * again). */
			count_lost(t, TA_LOST_NESTED);
			*counted = 1;
			return NULL;
		}
		if (!nb)
			return NULL;
	}
	/* Release: pairs with the flusher's acquire load of next; it reads
	 * the full block's last head before following. */
	__atomic_store_n(&b->next, nb, __ATOMIC_RELEASE);
	__atomic_add_fetch(&t->chain_blocks, 1, __ATOMIC_RELAXED);
	if (ta_ring_mode == TA_MODE_FLIGHT)
		return nb; /* nothing to kick: the flusher writes on demand */
	/* Where this producer runs, for the flusher to keep off that CPU
	 * (sched_getcpu reads the rseq area: no system call).  Relaxed: a
	 * hint the flusher takes with a relaxed exchange (ta_place_flusher). */
	__atomic_store_n(&t->cpu_seen, (uint32_t)(sched_getcpu() + 1), __ATOMIC_RELAXED);
	/* Every 4 blocks (256 KiB at the default size): the blocks the
	 * flusher frees come back while the producer's cache still holds
	 * some of their lines; kicked less often, the refills cost more than
	 * the wake-ups saved (docs/bench.md).  Every
	 * 16 while the program keeps every CPU busy (ta_kick_blocks): each
	 * wake-up then preempts a producer, and its lines are gone anyway.
	 * Relaxed: a hint, set by the flusher, paired with nothing. */
	if (__atomic_add_fetch(&ta_pending_blocks, 1, __ATOMIC_RELAXED) >=
	    __atomic_load_n(&ta_kick_blocks, __ATOMIC_RELAXED))
		ta_ring_up.kick();
	if (ta_ring_mode == TA_MODE_DROP) {
		if (t->drop_count) {
			/* The gap goes into the stream where it was. */
			nb->ev[0].ticks = t->drop_ticks;
			nb->ev[0].addr = TA_RAW_LOST | t->drop_count;
			__atomic_store_n(&nb->head, 1, __ATOMIC_RELEASE);
			t->drop_count = 0;
		}
	} else {
		/* After the slow path, with the block in place: handlers that
		 * run while the thread helps the flusher then record directly
		 * rather than into the small nest buffer. */
		need_throttle = 1;
	}
	return nb;
}

/*
 * Drop mode: a thread registered without a ring (ta_ring_thread_register found the
 * pool dry) takes its first block as soon as one is free.  Until then each
 * event is its own loss (TA_LOST_NO_RING), counted in its THREAD_END like
 * a dropped one, and the gap goes into the stream before its first event.
 * NULL while there is no block.
 */
static struct ta_block *ringless_get(struct ta_thread *t, uint64_t ticks)
{
	struct ta_block *b = ta_ring_pool_get();

	if (!b) {
		if (!t->drop_count++)
			t->drop_ticks = ticks;
		count_lost(t, TA_LOST_NO_RING);
		ta_ring_up.kick();
		return NULL;
	}
	if (t->drop_count) {
		b->ev[0].ticks = t->drop_ticks;
		b->ev[0].addr = TA_RAW_LOST | t->drop_count;
		/* Relaxed: the flusher reaches the block only through the
		 * release store of first below. */
		__atomic_store_n(&b->head, 1, __ATOMIC_RELAXED);
		t->drop_count = 0;
	}
	/* Relaxed: a count that only bounds work (as in next_block). */
	__atomic_store_n(&t->chain_blocks, 1, __ATOMIC_RELAXED);
	/* Release: pairs with the flusher's acquire load of first, after
	 * which it reads the block (and its head) as any other. */
	__atomic_store_n(&t->first, b, __ATOMIC_RELEASE);
	return b;
}

/* Slots a record takes: one, or an EXT group's header and values. */
static inline uint32_t group_slots(const struct ta_rec *r)
{
	return ta_raw_is_ext(r->addr) ? 1 + TA_RAW_EXT_SLOTS(ta_raw_ext_n(r->addr)) : 1;
}

/* The slots of a TA_EXT_WAIT record: its header and its two values. */
#define WAIT_SLOTS (1u + TA_RAW_EXT_SLOTS(2))

/* Writes the thread's pending waits at slots h, h + 1 of b as one
 * TA_EXT_WAIT record, at the time the first one began (its place in the
 * stream is that time's: before an entry stamped after it, after any
 * record stamped before it). */
static void put_wait(struct ta_thread *t, struct ta_block *b, uint32_t h)
{
	b->ev[h].ticks = t->wait_start;
	b->ev[h].addr = TA_RAW_EXT | (uint64_t)TA_EXT_WAIT << 8 | 2u;
	b->ev[h + 1].ticks = t->wait_start;
	b->ev[h + 1].addr = t->wait_pending;
	t->wait_pending = 0;
}

/* Appends one record (cnt = 1) or an EXT group (its cnt slots, kept in one
 * block: the flusher reads a block's published slots as whole groups) from
 * the slow path, moving to a fresh block when b has no room; returns the
 * thread's current block (b itself when the record had to be dropped), or
 * NULL if the agent stopped.  Waits pending (the thread's registration,
 * the fresh block's) go in with it. */
static struct ta_block *append(struct ta_thread *t, struct ta_block *b, const struct ta_rec *r,
			       uint32_t cnt, int restamp)
{
	uint32_t h = b->head, limit = __atomic_load_n(&b->limit, __ATOMIC_RELAXED);
	uint64_t ticks = r[0].ticks;
	/* Work in the slow path (starting the agent, registering the thread,
	 * taking or waiting for a block) is the agent's, not the program's:
	 * an entry is stamped after it, so it falls in the caller's time, not
	 * the entered function's; an exit keeps the time it had, so the
	 * function that returned is not charged either. */
	int entry = restamp && cnt == 1 && !(r[0].addr & TA_REC_EXIT);

	if (h + cnt + (t->wait_pending ? WAIT_SLOTS : 0) > limit) {
		struct ta_block *nb;
		int counted = 0;

		if (h < limit) {
			/* A group that does not fit: pad the rest of the
			 * block (subtype 0, no values: skipped). */
			for (uint32_t i = h; i < limit; i++) {
				b->ev[i].ticks = ticks;
				b->ev[i].addr = TA_RAW_EXT;
			}
			__atomic_store_n(&b->head, limit,
					 __ATOMIC_RELEASE); /* pairs with the flusher */
		}
		nb = next_block(t, b, ticks, &counted);
		if (!nb)
			return ta_ring_mode == TA_MODE_DROP || counted ? b : NULL;
		b = nb;
		h = b->head; /* 0, or 1 after a drop record */
		limit = __atomic_load_n(&b->limit, __ATOMIC_RELAXED);
		/* The backlog is high: an entry waits (or helps) before it is
		 * stamped, in its caller's time as the wait for the block;
		 * anything else after it (record_slow). */
		if (entry && need_throttle) {
			need_throttle = 0;
			ta_ring_throttle(t);
		}
	}
	/* A fresh block holds a record and a wait record whole; were there
	 * no room, the wait would go in with the next record. */
	if (entry && t->wait_pending && h + WAIT_SLOTS + cnt <= limit) {
		put_wait(t, b, h);
		h += WAIT_SLOTS;
	}
	for (uint32_t i = 0; i < cnt; i++)
		b->ev[h + i] = r[i];
	if (entry)
		b->ev[h].ticks = ta_ticks();
	h += cnt;
	if (t->wait_pending && h + WAIT_SLOTS <= limit) {
		put_wait(t, b, h);
		h += WAIT_SLOTS;
	}
	__atomic_store_n(&b->head, h, __ATOMIC_RELEASE); /* pairs with the flusher */
	return b;
}

/* Appends the thread's pending waits (a throttle's, after the record that
 * handed a block over) as a record of their own; as append. */
static struct ta_block *append_wait(struct ta_thread *t, struct ta_block *b)
{
	struct ta_rec g[WAIT_SLOTS];

	g[0].ticks = g[1].ticks = t->wait_start;
	g[0].addr = TA_RAW_EXT | (uint64_t)TA_EXT_WAIT << 8 | 2u;
	g[1].addr = t->wait_pending;
	t->wait_pending = 0;
	return append(t, b, g, WAIT_SLOTS, 0);
}

/*
 * A hook that runs while another hook of this thread is half done (a
 * signal handler running instrumented code interrupted it between (A) and
 * (C), or in its slow path) must not touch the slot or block being
 * written.  It puts its event aside, in order, and makes the interrupted
 * thread's next event take the slow path, which appends the events put
 * aside after the interrupted one: the stream stays in time order.
 */
/* 8, not more: the agent's whole TLS must fit in the static TLS that glibc
 * keeps for a library dlopen'ed later (about 512 bytes), which is how
 * `traceagent attach` loads it; the reserve below takes the rest. */
#define NEST_MAX 8
static __thread struct ta_rec nest_buf[NEST_MAX] __attribute__((tls_model("initial-exec")));
/*
 * The reserve beyond nest_buf: a storm of handlers inside one
 * slow path (a thread waiting at the memory cap, or starved by handlers
 * that run back to back, as under qemu-user) puts aside far more than any
 * buffer in TLS could hold, and in lossless mode none may be dropped.  A handler cannot
 * malloc, but mmap is a system call, safe in a handler: the first push past
 * nest_buf maps NEST_RESERVE slots of address space (MAP_NORESERVE: only
 * the pages written become resident), slots NEST_MAX on; it stays mapped,
 * for the thread's next storm, until the thread exits.  Beyond it events
 * are counted lost (TA_LOST_NESTED).
 */
#define NEST_RESERVE (1u << 20) /* slots: 16 MiB of address space */
static __thread struct ta_rec *nest_more __attribute__((tls_model("initial-exec")));
static __thread uint32_t nest_n __attribute__((tls_model("initial-exec")));
static __thread struct ta_block *nest_block __attribute__((tls_model("initial-exec")));
static __thread uint32_t nest_limit __attribute__((tls_model("initial-exec")));

/* Slot i of the events put aside: nest_buf, then the reserve. */
static inline struct ta_rec *nest_slot(uint32_t i)
{
	return i < NEST_MAX ? &nest_buf[i] : &nest_more[i - NEST_MAX];
}

/* The slots that exist: a push that a handler jumped out of (record_slow
 * puts single records aside with signals open) may leave nest_n past
 * them. */
static inline uint32_t nest_room(void)
{
	return NEST_MAX + (__atomic_load_n(&nest_more, __ATOMIC_RELAXED) ? NEST_RESERVE : 0);
}

/* The first n slots emptied (addr 0: never written, nest_drain), nest_n 0.
 * Only where no handler can push (async signals blocked, or the thread
 * is done with its ring). */
static void nest_clear(uint32_t n)
{
	uint32_t room = nest_room();

	for (uint32_t i = 0; i < n && i < room; i++)
		nest_slot(i)->addr = 0;
	__atomic_store_n(&nest_n, 0, __ATOMIC_RELAXED);
}

/* A window ended (forget_window): what handlers put aside then is lost
 * with it, and the block whose room they took is no longer this thread's. */
static void nest_forget(void)
{
	nest_block = NULL;
	nest_clear(__atomic_load_n(&nest_n, __ATOMIC_RELAXED));
}

/* The reserve, mapped on first use; NULL if it cannot be.  Only this thread
 * and its handlers install it: a handler that maps it while the code it
 * interrupted is between its mmap and its exchange wins, and the loser
 * unmaps its own.  Relaxed: nothing but this thread reads the pointer, and
 * its handlers see its stores in program order. */
static struct ta_rec *nest_reserve(void)
{
	struct ta_rec *m = __atomic_load_n(&nest_more, __ATOMIC_RELAXED);
	struct ta_rec *none = NULL;
	void *p;

	if (m)
		return m;
	p = mmap(NULL, (size_t)NEST_RESERVE * sizeof(struct ta_rec), PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (!__atomic_compare_exchange_n(&nest_more, &none, (struct ta_rec *)p, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED)) {
		munmap(p, (size_t)NEST_RESERVE * sizeof(struct ta_rec));
		return none;
	}
	return p;
}

static void nest_push(struct ta_thread *t, struct ta_block *b, const struct ta_rec *r, uint32_t cnt)
{
	/* An atomic add: a handler nested in this one takes the next slots. */
	uint32_t i = __atomic_fetch_add(&nest_n, cnt, __ATOMIC_RELAXED);

	if (i + cnt > NEST_MAX && (i + cnt > NEST_MAX + NEST_RESERVE || !nest_reserve())) {
		/* Handlers nested in this one that came to this point have
		 * given their slots back already (they ran to their end), so
		 * ours are the last: nest_n is as before the add. */
		__atomic_fetch_sub(&nest_n, cnt, __ATOMIC_RELAXED);
		count_lost_nested(t);
		return;
	}
	/* The values first, the group's header (its first slot's address,
	 * never 0) last: a slot whose address is still 0 was never written
	 * (a push abandoned by a handler that jumped out of it; nest_drain
	 * skips it).  Groups are pushed with signals blocked (record_slow),
	 * so never left half written. */
	for (uint32_t k = cnt; k-- > 0;) {
		nest_slot(i + k)->ticks = r[k].ticks;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		nest_slot(i + k)->addr = r[k].addr;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (b != &busy_block) {
		/* Read before nest_block: a handler nested in this push that
		 * sets both in between is then seen below, and this push
		 * never takes the 0 it stored for the block's room. */
		uint32_t limit = __atomic_load_n(&b->limit, __ATOMIC_RELAXED);

		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		if (!nest_block) {
			/* The interrupted hook is in its fast path on b: send
			 * its thread's next event to the slow path.  (In the
			 * slow path, the interrupted code appends these itself
			 * before it ends.) */
			nest_limit = limit;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			nest_block = b;
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
			__atomic_store_n(&b->limit, 0, __ATOMIC_RELAXED);
		}
	}
}

/* Appends the events put aside by nested hooks; returns the current block.
 * Handlers have finished by the time this runs, so every slot they took
 * is written, but for those of a push that a handler jumped out of: their
 * address is 0, and each is counted lost (cause nested), as are the slots
 * such a push took beyond the room there is.  Each slot is emptied once
 * read, for the next pushes. */
static struct ta_block *nest_drain(struct ta_thread *t, struct ta_block *b)
{
	uint32_t done = 0, n, room = nest_room();

	for (;;) {
		while (done < (n = __atomic_load_n(&nest_n, __ATOMIC_RELAXED))) {
			/* A group may straddle nest_buf's end: gathered here. */
			struct ta_rec g[1 + TA_RAW_EXT_SLOTS(TA_EXT_MAX_VALUES)];
			uint32_t cnt;

			if (done >= room || !nest_slot(done)->addr) {
				count_lost(t, TA_LOST_NESTED);
				if (done < room)
					nest_slot(done)->addr = 0;
				done++;
				continue;
			}
			cnt = group_slots(nest_slot(done));
			if (cnt > n - done)
				cnt = n - done; /* cannot happen: groups go in whole */
			if (cnt > room - done)
				cnt = room - done; /* nor this */
			if (cnt > sizeof(g) / sizeof(g[0]))
				cnt = sizeof(g) / sizeof(g[0]); /* nor this */
			for (uint32_t k = 0; k < cnt; k++) {
				g[k] = *nest_slot(done + k);
				nest_slot(done + k)->addr = 0;
			}
			if (b && !is_idle(b))
				b = append(t, b, g, cnt, 0);
			else
				/* No ring to append them to: the thread has
				 * none yet, or the agent stopped meanwhile. */
				count_lost(t, t && t->first ? TA_LOST_STOPPED : TA_LOST_NO_RING);
			done += cnt;
		}
		/* Reset, unless a handler added one meanwhile. */
		if (__atomic_compare_exchange_n(&nest_n, &n, 0, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return b;
	}
}

/*
 * The slow path holds what a signal handler that never returns (one that
 * siglongjmps out, as programs with a timeout do) would leave held for
 * good: the placeholder in ta_cur, the recursion guard, its thread's
 * consume lock while it drains, a block taken but not yet linked.  So it
 * runs with the asynchronous signals blocked, and they are delivered, as
 * sent, when it ends (a system call pair once a block: a small fraction of
 * a nanosecond an event, docs/bench.md).  Faults stay unblocked: one in the agent
 * is the crash handler's.  glibc's own signals (cancellation, setxid) are
 * never blocked by pthread_sigmask.
 */
static void async_signals_block(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &all, old);
}

/* The slow path for one record or one EXT group r[0..cnt). */
static void record_slow(const struct ta_rec *r, uint32_t cnt)
{
	struct ta_thread *t = ta_ring_self;
	int saved_errno = errno;
	/* One exchange, not a load then a store: a handler between the two
	 * could move this thread to a new block, and we would then link a
	 * second one after the same full block and lose the handler's. */
	struct ta_block *b;
	int ringless = 0;
	sigset_t old_mask;
	/* An agent that has ended records nothing more: its hooks come here
	 * at every call, which the mask's two system calls would slow down
	 * for nothing. */
	uint32_t state = __atomic_load_n(&ta_state, __ATOMIC_RELAXED);
	int masked = state != TA_S_STOPPED && state != TA_S_DETACHED;

	/*
	 * A hook nested in another's fast path (a signal handler that
	 * interrupted it between its claim and its publication): the event
	 * is only put aside, which holds nothing and takes nothing, so it
	 * needs neither the signal mask nor the placeholder in ta_cur.  With
	 * the mask's two system calls an event, a handler of a few hundred
	 * events can take longer than a fast timer's period (a slow CPU, an
	 * emulator): each handler then finds the next signal pending as it
	 * returns, the interrupted hook never reaches its publication, and
	 * every later handler is nested in it again, for ever (e2e-signals'
	 * sigdeep).
	 * Only single records: an EXT group's slots are written in more than
	 * one step, which a handler that jumped out of it would leave half
	 * done for nest_drain to misread, so groups are put aside below.
	 */
	if (cnt == 1 && masked && __atomic_load_n(&ta_hot.claim, __ATOMIC_RELAXED)) {
		nest_push(t, __atomic_load_n(&ta_cur, __ATOMIC_RELAXED), r, 1);
		errno = saved_errno;
		return;
	}
	/* Before anything is held. */
	if (masked)
		async_signals_block(&old_mask);
	/* Before the state is read below (ta_ring_quiesce pairs with it). */
	__atomic_fetch_add(&slow_inflight, 1, __ATOMIC_SEQ_CST);
	b = __atomic_exchange_n(&ta_cur, &busy_block, __ATOMIC_RELAXED);

	/* What follows is the agent's work (starting, registering, waiting
	 * for a block, helping the flusher): its library calls are its own. */
	TA_GUARD_ENTER();
	if (b == &busy_block || __atomic_load_n(&ta_hot.claim, __ATOMIC_RELAXED)) {
		/* Nested in a slow path (b is the placeholder) or in a fast
		 * path between its claim (A) and its publication (C), which
		 * holds b or has yet to read it: either way the block it will
		 * read is b, as only slow paths move ta_cur. */
		nest_push(t, b, r, cnt);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		ta_cur = b;
		goto out;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	/* A record of an attach window that ended: this thread starts
	 * afresh in the new one (before nest_block, a block of that window,
	 * is written).  The record is never unmapped; relaxed is enough for
	 * its own state, which only this thread changes from DETACHED. */
	if (TA_UNLIKELY(t && __atomic_load_n(&t->state, __ATOMIC_RELAXED) == TA_T_DETACHED) &&
	    __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING) {
		b = forget_window(t, b, 1);
		t = NULL;
	}
	if (nest_block) {
		/* Events put aside by handlers: the block's room comes back. */
		__atomic_store_n(&nest_block->limit, nest_limit, __ATOMIC_RELAXED);
		nest_block = NULL;
	}

	if (TA_UNLIKELY(__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING) &&
	    !ta_ring_up.ensure_started()) {
		/* Not tracing: nothing to record or lose.  A thread of an
		 * ended attach window keeps its pinned block (limit 0: every
		 * hook comes here all the same), to give it back later. */
		if (!(t && __atomic_load_n(&t->state, __ATOMIC_RELAXED) == TA_T_DETACHED &&
		      ta_ring_in_pool(b)))
			b = &idle_block;
		nest_clear(nest_n);
		goto done;
	}
	if (!t) {
		t = ta_ring_self = ta_ring_thread_register(r[0].ticks);
		if (!t) {
			count_lost(NULL, TA_LOST_NO_RING);
			b = &idle_block;
			/* Events handlers put aside, now or before, have no
			 * ring either: they are counted below. */
			ringless = 1;
			goto done;
		}
		b = t->first;
	} else if (is_idle(b) && t->first) {
		goto done; /* registered, but the agent stopped meanwhile */
	}
	if (TA_UNLIKELY(!b || is_idle(b))) {
		/* Registered without a ring (drop mode at the cap): this
		 * event, and those handlers put aside, are its own losses
		 * while no block is free. */
		b = ringless_get(t, r[0].ticks);
		if (!b) {
			b = &idle_block;
			ringless = 1;
			goto done;
		}
	}
	if (TA_UNLIKELY(nest_n))
		b = nest_drain(t, b);
	if (b) {
		b = append(t, b, r, cnt, 1);
		if (!b) /* the agent stopped while it waited for a block */
			count_lost(t, TA_LOST_STOPPED);
	}
	if (b && TA_UNLIKELY(nest_n)) /* handlers that ran during the append */
		b = nest_drain(t, b);
	/* A block handed over with the backlog high: the thread waits (or
	 * helps) here, after its records, in the slow path, so that the wait
	 * goes in the stream where it was (append_wait), and handlers that
	 * run meanwhile put their events aside (the asynchronous signals are
	 * blocked anyway). */
	if (b && TA_UNLIKELY(need_throttle)) {
		need_throttle = 0;
		ta_ring_throttle(t);
	}
	if (b && TA_UNLIKELY(t->wait_pending))
		b = append_wait(t, b); /* NULL: the agent stopped meanwhile */
	if (b && TA_UNLIKELY(nest_n))
		b = nest_drain(t, b);
	if (!b)
		b = &idle_block; /* the agent stopped while we waited */
done:
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ta_cur = b;
	/* A handler that ran while the placeholder was in place put its
	 * events aside; once ours is back, new handlers write directly, so
	 * one look after it is enough.  A thread that could not get a ring
	 * has nowhere to append them: nest_drain counts them as lost (its
	 * own, or in no thread's count when it has no record either), or
	 * they would be lost silently. */
	while (TA_UNLIKELY(__atomic_load_n(&nest_n, __ATOMIC_RELAXED)) &&
	       ((t && !is_idle(b)) || ringless)) {
		b = __atomic_exchange_n(&ta_cur, &busy_block, __ATOMIC_RELAXED);
		if (!t)
			t = ta_ring_self; /* a handler may have registered it meanwhile */
		b = nest_drain(t, b);
		if (!b)
			b = &idle_block;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		ta_cur = b;
	}
out:
	TA_GUARD_LEAVE();
	/* Release: what this slow path linked and wrote is seen by the
	 * detach that waits for the count to fall. */
	__atomic_fetch_sub(&slow_inflight, 1, __ATOMIC_RELEASE);
	if (masked)
		pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	errno = saved_errno;
}

void ta_record_slow(uint64_t addr, uint64_t ticks)
{
	struct ta_rec r = {.ticks = ticks, .addr = addr};

	record_slow(&r, 1);
}

void ta_record_ext(uint32_t subtype, const uint64_t *v, uint32_t n)
{
	struct ta_rec r[1 + TA_RAW_EXT_SLOTS(TA_EXT_MAX_VALUES)], *s;
	uint64_t t = ta_ticks();
	struct ta_block *b = NULL;
	uint32_t slots;

	if (n > TA_EXT_MAX_VALUES)
		n = TA_EXT_MAX_VALUES;
	slots = TA_RAW_EXT_SLOTS(n);
	/* The group in the current block when it has room, as ta_record
	 * writes one slot (a handler that jumps out before the publication
	 * leaves slots nobody reads); the slow path's signal mask, two system
	 * calls, is for a new block.  No loop of memcpy's shape: the hooks
	 * call no libc. */
	s = ta_group_claim(1 + slots, &b);
	if (TA_UNLIKELY(!s))
		s = r;
	s[0].ticks = t;
	s[0].addr = TA_RAW_EXT | (uint64_t)(subtype & 0xffffu) << 8 | n;
	for (uint32_t i = 0; i < slots; i++) {
		s[1 + i].ticks = v[2 * i];
		s[1 + i].addr = 2 * i + 1 < n ? v[2 * i + 1] : 0;
	}
	if (TA_LIKELY(s != r))
		ta_group_publish(b, s, 1 + slots);
	else
		record_slow(r, 1 + slots);
}

void ta_record_ext4_slow(uint32_t subtype, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
			 uint32_t n)
{
	const uint64_t v[4] = {a, b, c, d};

	ta_record_ext(subtype, v, n);
}

void ta_record_ext_exit_slow(uint64_t addr, uint32_t subtype, uint64_t a, uint64_t b, uint64_t c,
			     uint64_t d, uint32_t n)
{
	const uint64_t v[4] = {a, b, c, d};

	ta_record_ext(subtype, v, n);
	ta_record(addr | TA_REC_EXIT);
}

void ta_cur_stop(void)
{
	ta_cur = &busy_block;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

void ta_thread_exit(void)
{
	struct ta_thread *t = ta_ring_self;
	struct ta_block *b;

	ta_ring_up.thread_exit();
	if (!t)
		return;
	if (__atomic_load_n(&t->state, __ATOMIC_RELAXED) == TA_T_DETACHED) {
		/* Recorded in a window that ended: nothing of it is drained
		 * any more; its block goes back to the pool. */
		TA_GUARD_ENTER();
		b = __atomic_exchange_n(&ta_cur, &idle_block, __ATOMIC_RELAXED);
		(void)forget_window(t, b,
				    __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING);
		return;
	}
	/* For good: the library calls of a thread that is going (the TLS
	 * destructors after this one, libc's own teardown) are not recorded,
	 * which would register it again. */
	TA_GUARD_ENTER();
	/* No hook of ours may write from here on (nested ones put their
	 * events aside, and these are the last). */
	b = __atomic_exchange_n(&ta_cur, &busy_block, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (nest_block) {
		__atomic_store_n(&nest_block->limit, nest_limit, __ATOMIC_RELAXED);
		nest_block = NULL;
	}
	/* Without a ring (drop mode), what handlers put aside is counted. */
	if (__atomic_load_n(&nest_n, __ATOMIC_RELAXED) && b != &busy_block &&
	    (!is_idle(b) || !t->first))
		(void)nest_drain(t, b);
	__atomic_store_n(&t->end_ticks, ta_ticks(), __ATOMIC_RELAXED);
	__atomic_sub_fetch(&ta_ring_live_threads, 1, __ATOMIC_RELAXED);
	ta_ring_self = NULL;
	/* Release: pairs with the flusher's acquire load of state; it drains
	 * the chain up to the final head, then frees the record. */
	__atomic_store_n(&t->state, TA_T_EXITED, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ta_cur = &idle_block;
	/* Its last block waits for the flusher as a full one does, and every
	 * 64 of them wake it: else a program that starts and ends threads by
	 * the thousand holds every exited thread's block and record until the
	 * next timed pass (e2e-exits; docs/bench.md).  Waking it every 4, as
	 * for full blocks, costs a pass per few threads for no less memory. */
	if (__atomic_add_fetch(&ta_pending_blocks, 1, __ATOMIC_RELAXED) >= 64)
		ta_ring_up.kick();
	/* Handlers no longer put events aside (the idle placeholder sends
	 * them to a slow path that is not nested): the reserve can go. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (nest_more && !__atomic_load_n(&nest_n, __ATOMIC_RELAXED)) {
		munmap(nest_more, (size_t)NEST_RESERVE * sizeof(struct ta_rec));
		nest_more = NULL;
	}
}

void ta_ring_fork_child(void)
{
	/* The parent's other threads, in their slow paths at the fork, are
	 * not in the child. */
	__atomic_store_n(&slow_inflight, 0, __ATOMIC_RELAXED);
	ta_ring_inherit(ta_ring_self);
	/* A fresh pool: the blocks are this process's copies. */
	ta_ring_pool_fork();
	ta_pending_blocks = 0;
	ta_ring_live_threads = 0;
	/* The parent's count: the child reports only its own losses. */
	ta_lost_unowned = 0;
	memset(ta_lost_unowned_by, 0, sizeof(ta_lost_unowned_by));
	ta_ring_threads_fork();
	ta_cur = &idle_block;
}
