/* SPDX-License-Identifier: MIT */
/*
 * ring_thread.c - the ring's thread registry: a thread's record (taken at
 * its first event, reused after it ended), its name, its parent, and the
 * frames a forked child's thread inherits from the thread that forked.
 *
 * Apart from the slow path (ring.c), which registers a thread at its first
 * event: the registry takes its first block from the pool (ring_pool.c)
 * and calls nothing of the slow path.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "format.h"
#include "ring.h"
#include "ring_int.h"
#include "settings.h"

__thread struct ta_thread *ta_ring_self __attribute__((tls_model("initial-exec")));
static __thread uint64_t parent_tid __attribute__((tls_model("initial-exec")));

struct ta_thread *ta_threads;

static pthread_key_t exit_key;

int ta_ring_threads_init(void (*on_exit)(void *))
{
	return pthread_key_create(&exit_key, on_exit);
}

/* Frames open in the parent when it forked, for the child's first thread
 * (set in the child before it registers). */
static uint64_t *inherit_addr;
static uint32_t inherit_depth;
static uint64_t inherit_tid;
static struct ta_jmptab inherit_jmp;

/* The first record is static: most traced processes have one thread,
 * which then costs no mmap (records are never freed, only reused). */
static struct ta_thread first_rec;
static uint32_t first_rec_taken; /* atomic */

static struct ta_thread *thread_alloc(void)
{
	struct ta_thread *t;

	/* Reuse the record of a thread that exited and was drained. */
	for (t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t; t = t->all_next) {
		uint32_t s = TA_T_FREE;
		if (__atomic_compare_exchange_n(&t->state, &s, TA_T_CLAIMED, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return t;
	}
	/* Relaxed: only who takes it is decided here; the record is
	 * published by the release below, as an mmap'd one is. */
	if (!__atomic_exchange_n(&first_rec_taken, 1, __ATOMIC_RELAXED)) {
		t = &first_rec;
	} else {
		t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0);
		if (t == MAP_FAILED)
			return NULL;
	}
	t->state = TA_T_CLAIMED;
	t->all_next = __atomic_load_n(&ta_threads, __ATOMIC_RELAXED);
	/* Release: the flusher walking the list sees an initialised record. */
	while (!__atomic_compare_exchange_n(&ta_threads, &t->all_next, t, 1, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return t;
}

struct ta_thread *ta_ring_thread_register(uint64_t ticks)
{
	struct ta_thread *t;
	char name[17] = {0};

	/* Whether or not it gets a ring, its crash is recorded. */
	ta_ring_up.thread_start();
	t = thread_alloc();
	if (!t)
		return NULL;
	/* Before the first block, which it may wait for: that wait is its. */
	t->wait_ticks = 0;
	t->wait_pending = 0;
	t->first = ta_ring_pool_get();
	/* At the cap already: wait like any full block would.  Dropping, it
	 * is registered all the same, without a ring (first NULL): what it
	 * cannot record until a block is free is counted as its own loss
	 * (ringless_get), in its THREAD_END, of its process. */
	if (!t->first && ta_ring_mode != TA_MODE_DROP) {
		t->first = ta_ring_block_wait(t);
		if (!t->first) {
			__atomic_store_n(&t->state, TA_T_FREE, __ATOMIC_RELEASE);
			return NULL;
		}
	}
	t->tid = (uint64_t)syscall(SYS_gettid);
	t->ptid = parent_tid;
	t->start_ticks = ticks;
	t->pthread = (unsigned long)pthread_self();
	/* The name it has now (inherited, or set before its first event).
	 * A raw syscall: prctl itself is interposed. */
	syscall(SYS_prctl, PR_GET_NAME, name, 0, 0, 0);
	memcpy(t->name, name, sizeof(t->name));
	t->name_seq = 0;
	t->name_lock = 0;
	t->lost = 0;
	memset(t->lost_by, 0, sizeof(t->lost_by));
	t->drop_count = 0;
	t->chain_blocks = t->first ? 1 : 0;
	t->cut = 0;
	t->end_ticks = 0;
	t->drain = NULL;
	t->inherit = NULL;
	t->inherit_depth = 0;
	t->inherit_jmp = NULL;
	if (inherit_tid && t->tid == inherit_tid) {
		t->inherit = inherit_addr;
		t->inherit_depth = inherit_depth;
		t->inherit_jmp = &inherit_jmp;
		inherit_addr = NULL;
		inherit_tid = 0;
	}
	/* fs is the flusher's and survives reuse of the record. */
	pthread_setspecific(exit_key, t);
	__atomic_add_fetch(&ta_ring_live_threads, 1, __ATOMIC_RELAXED);
	/* Release: pairs with the flusher's acquire load of state, which then
	 * reads every field above. */
	__atomic_store_n(&t->state, TA_T_LIVE, __ATOMIC_RELEASE);
	return t;
}

struct ta_thread *ta_thread_self(void)
{
	return ta_ring_self;
}

int ta_thread_traced(void)
{
	return ta_ring_self || (inherit_tid && inherit_tid == (uint64_t)syscall(SYS_gettid));
}

void ta_thread_set_parent(uint64_t ptid)
{
	parent_tid = ptid;
}

void ta_thread_set_name(unsigned long handle, const char *name)
{
	struct ta_thread *t = ta_ring_self;
	uint32_t unlocked = 0;
	size_t n = strnlen(name, 15);

	if (!t || t->pthread != handle) {
		for (t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t; t = t->all_next)
			if (__atomic_load_n(&t->state, __ATOMIC_ACQUIRE) == TA_T_LIVE &&
			    t->pthread == handle)
				break;
		if (!t)
			return; /* not registered yet: it reads its name when it is */
	}
	while (!__atomic_compare_exchange_n(&t->name_lock, &unlocked, 1, 0, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED))
		unlocked = 0;
	/* Seqlock writer: odd while writing.  The fences order the count
	 * against the bytes for the flusher's reader in flusher.c. */
	__atomic_store_n(&t->name_seq, t->name_seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (size_t i = 0; i < sizeof(t->name); i++)
		__atomic_store_n(&t->name[i], i < n ? name[i] : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&t->name_seq, t->name_seq + 1, __ATOMIC_RELEASE);
	__atomic_store_n(&t->name_lock, 0, __ATOMIC_RELEASE);
}

/* Applies a block's events from `from` on to a shadow stack and setjmp
 * table (the rules of format.c, as the encoder will apply them), following
 * the chain: where the thread stands now. */
static void replay_chain(struct ta_stack *st, struct ta_jmptab *jmp, struct ta_block *b,
			 uint32_t from)
{
	while (b) {
		uint32_t h = __atomic_load_n(&b->head, __ATOMIC_RELAXED);
		int top;

		for (uint32_t i = from; i < h; i++) {
			uint64_t a = b->ev[i].addr;
			if (ta_raw_is_ext(a)) {
				uint32_t n = ta_raw_ext_n(a);

				/* A group is whole in its block; its first
				 * value is the next slot's ticks. */
				if (n >= 1 && i + 1 < h && ta_ext_is_ctl(ta_raw_ext_kind(a)))
					(void)ta_ctl_apply(jmp, st, ta_raw_ext_kind(a),
							   b->ev[i + 1].ticks,
							   n >= 2 ? b->ev[i + 1].addr : 0);
				i += TA_RAW_EXT_SLOTS(n); /* and its values */
			} else if ((a >> 62) == 1)
				continue; /* a gap, not a frame */
			else if (a & TA_REC_EXIT)
				(void)ta_stack_exit(st, a & ~TA_REC_EXIT, &top);
			else
				(void)ta_stack_push(st, a);
		}
		if (h < b->limit)
			break;
		b = b->next;
		from = 0;
	}
}

void ta_ring_inherit(struct ta_thread *me)
{
	/* The parent records and writes everything its rings hold, this
	 * thread's frames included; the child only needs to know which of
	 * them are open, so that it neither records them twice nor sees
	 * their exits as exits of functions never entered.  The flusher's
	 * state is consistent here: the fork happened under its drain lock. */
	inherit_addr = NULL;
	inherit_depth = 0;
	inherit_tid = 0;
	if (me) {
		struct ta_stack st;
		const struct ta_stack *enc = ta_ring_up.stack(me);
		const struct ta_jmptab *jmp = ta_ring_up.jmptab(me);

		ta_stack_init(&st);
		for (uint32_t i = 0; enc && i < enc->depth; i++)
			(void)ta_stack_push(&st, enc->addr[i]);
		memset(&inherit_jmp, 0, sizeof(inherit_jmp));
		if (jmp)
			inherit_jmp = *jmp;
		if (me->drain)
			replay_chain(&st, &inherit_jmp, me->drain, me->drain->consumed);
		else
			replay_chain(&st, &inherit_jmp, me->first, 0);
		inherit_addr = st.addr;
		inherit_depth = st.depth;
		inherit_tid = (uint64_t)syscall(SYS_gettid);
		parent_tid = me->tid;
	}
}

void ta_ring_threads_fork(void)
{
	for (struct ta_thread *t = ta_threads; t; t = t->all_next) {
		t->drain = NULL;
		t->consume_lock = 0;
		t->state = TA_T_FREE;
	}
	ta_ring_self = NULL;
}
