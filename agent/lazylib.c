/* SPDX-License-Identifier: MIT */
/*
 * lazylib.c - liblz4 and libunwind, opened with dlopen by the flusher
 * when first needed (lazylib.h says why and when), and the gate that keeps
 * the agent's dlopen away from the program's walks of the loaded objects.
 * The sonames are those of the headers we were built with: the functions'
 * signatures are theirs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "base.h"
#include "lazylib.h"
#include "walk.h"

struct ta_lazy ta_lazy;

#define LZ_STR_(x) #x
#define LZ_STR(x)  LZ_STR_(x)

/* Held while one of the two is opened; a try the gate refused leaves its
 * library to be tried again (its done flag unset). */
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t lz4_on;	  /* atomic: ta_lazy_lz4_on */
static uint32_t lz4_done; /* atomic: ta_lazy_lz4_settled */
static uint32_t unw_on;	  /* atomic: ta_lazy_unw_on */
static uint32_t unw_done; /* atomic: ta_lazy_unw_settled */
static uint32_t unw_want; /* atomic: ta_lazy_unw_request */

/* ---- the gate ---------------------------------------------------------------
 *
 * glibc's dlopen takes the loader's lock, then the lock dl_iterate_phdr
 * holds across its callbacks.  A callback that calls dlsym, dladdr or
 * dlopen takes them the other way round: legal in a program where no
 * other thread loads anything at that moment, a deadlock beside the
 * flusher's dlopen of liblz4 or libunwind.  So the agent's own dlopen
 * waits until no program thread is inside dl_iterate_phdr (interpose.c
 * counts them), and a program's walk that begins meanwhile waits for the
 * load to end.  Seq_cst on both sides: each side adds itself, then looks
 * at the other (a Dekker pair), so one of the two always sees the other. */

#define GATE_NAP_NS 100000L /* 0.1 ms */
#define GATE_NAPS   1000    /* 100 ms, then the flusher tries at a later pass */

static uint32_t walkers; /* program threads inside dl_iterate_phdr */
static uint32_t openers; /* the agent's dlopens waiting or under way */
static __thread uint32_t walk_depth __attribute__((tls_model("initial-exec")));

/* The agent's own walks and loads against a fork.  glibc's child resets
 * the loader's lock but not the list lock dl_iterate_phdr holds: a fork
 * while an agent thread (the flusher, the control thread) or an agent
 * path of another program thread walked the objects left the child's
 * first walk (its agent's restart) waiting for ever.  So a fork waits
 * until none is under way, and none begins until the fork is done: the
 * same Dekker pair, seq_cst on both sides. */
#define FORK_WAIT_NAPS 10000   /* 1 s, then the fork goes on as without */
static uint32_t agent_walkers; /* the agent's walks and loads under way */
static uint32_t forking;       /* a fork waits for them, or is under way */

static void nap(void)
{
	struct timespec ts = {0, GATE_NAP_NS};
	int saved = errno;

	nanosleep(&ts, NULL);
	errno = saved;
}

/* Counts the caller in *mine once *theirs is 0: the side of a Dekker pair
 * that yields (seq_cst, as the other side's store and load). */
static void enter_unless(uint32_t *mine, const uint32_t *theirs)
{
	for (;;) {
		__atomic_add_fetch(mine, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(theirs, __ATOMIC_SEQ_CST))
			return;
		__atomic_sub_fetch(mine, 1, __ATOMIC_SEQ_CST);
		/* Relaxed: only a hint of when to try again. */
		while (__atomic_load_n(theirs, __ATOMIC_RELAXED))
			nap();
	}
}

/* The agent's walks and loads this thread is inside: nested ones (a walk
 * of ta_walk_objects reaching the interposer, a dlopen's walks) count
 * once, so that an inner one never waits for a fork the outer one holds
 * up. */
static __thread uint32_t own_depth __attribute__((tls_model("initial-exec")));

void ta_lazy_own_enter(void)
{
	if (own_depth++)
		return;
	enter_unless(&agent_walkers, &forking);
}

void ta_lazy_own_leave(void)
{
	/* Release: the walk's reads before the fork that waits for it
	 * (pairs with the seq_cst load in ta_lazy_fork_prepare). */
	if (--own_depth == 0)
		__atomic_sub_fetch(&agent_walkers, 1, __ATOMIC_RELEASE);
}

int ta_walk_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data)
{
	int rc;

	/* Counted here, not by the interposer alone: an injected agent's
	 * own calls bind to libc's dl_iterate_phdr, which the program's
	 * calls reach too, and a fork during such a walk left the child's
	 * agent waiting for ever at its restart (the list lock copied held). */
	ta_lazy_own_enter();
	rc = dl_iterate_phdr(cb, data);
	ta_lazy_own_leave();
	return rc;
}

void ta_lazy_fork_prepare(void)
{
	__atomic_store_n(&forking, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < FORK_WAIT_NAPS && __atomic_load_n(&agent_walkers, __ATOMIC_SEQ_CST);
	     i++)
		nap();
}

void ta_lazy_fork_parent(void)
{
	/* Release: pairs with the seq_cst load in ta_lazy_own_enter. */
	__atomic_store_n(&forking, 0, __ATOMIC_RELEASE);
}

void ta_lazy_walk_enter(void)
{
	if (walk_depth++)
		return; /* counted already: a nested walk never waits */
	enter_unless(&walkers, &openers);
}

void ta_lazy_walk_leave(void)
{
	/* Release: the walk's reads of the loader's lists before the count
	 * that lets a dlopen begin (pairs with the seq_cst load below). */
	if (--walk_depth == 0)
		__atomic_sub_fetch(&walkers, 1, __ATOMIC_RELEASE);
}

void *ta_lazy_dlopen(const char *name, int mode, int *later)
{
	void *h;

	if (later)
		*later = 0;
	/* This thread walks: no other agent dlopen runs (it would have
	 * waited for this walk), and the locks this one takes are mostly
	 * this thread's already. */
	if (walk_depth)
		return dlopen(name, mode);
	__atomic_add_fetch(&openers, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; __atomic_load_n(&walkers, __ATOMIC_SEQ_CST); i++) {
		if (i == GATE_NAPS) {
			if (!later)
				break; /* a program thread's load: as without the gate */
			__atomic_sub_fetch(&openers, 1, __ATOMIC_RELEASE);
			*later = 1;
			return NULL;
		}
		nap();
	}
	ta_lazy_own_enter();
	h = dlopen(name, mode);
	ta_lazy_own_leave();
	/* Release: the load done before a waiting walk begins (pairs with
	 * the seq_cst load in ta_lazy_walk_enter). */
	__atomic_sub_fetch(&openers, 1, __ATOMIC_RELEASE);
	return h;
}

void ta_lazy_fork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	/* The one thread here: inside a walk or not.  No flusher loads. */
	__atomic_store_n(&walkers, walk_depth ? 1 : 0, __ATOMIC_RELAXED);
	__atomic_store_n(&openers, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&agent_walkers, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&forking, 0, __ATOMIC_RELAXED);
	memcpy(&open_lock, &fresh, sizeof(fresh));
}

/* ---- the libraries ------------------------------------------------------------ */

/* name's address in h, into *slot (which stays NULL if it is not there). */
static int sym(void *h, const char *name, void *slot)
{
	void *f = dlsym(h, name);

	memcpy(slot, &f, sizeof(f));
	return f ? 0 : -1;
}

/* 0 once tried (opened or not), -EAGAIN when the gate said later. */
static int open_lz4(void)
{
	int later;
	void *h = ta_lazy_dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL, &later);
	int bad = !h;

	if (later)
		return -EAGAIN;

	if (h)
		bad = sym(h, "LZ4_compressBound", &ta_lazy.lz4_bound) |
		      sym(h, "LZ4_compress_default", &ta_lazy.lz4_compress);
	if (bad) {
		ta_lazy.lz4_bound = NULL;
		ta_lazy.lz4_compress = NULL;
		ta_warn("cannot open liblz4.so.1 (%s): the dump's chunks are stored uncompressed",
			h ? "a function is missing" : dlerror());
		return 0;
	}
	/* Release: the pointers above before the flag (pairs with the
	 * acquire in ta_lazy_lz4_on). */
	__atomic_store_n(&lz4_on, 1, __ATOMIC_RELEASE);
	return 0;
}

int ta_lazy_lz4_on(void)
{
	return __atomic_load_n(&lz4_on, __ATOMIC_ACQUIRE);
}

int ta_lazy_lz4_settled(void)
{
	return __atomic_load_n(&lz4_done, __ATOMIC_ACQUIRE);
}

/* Tries open (under open_lock) until it says tried, then sets *done.
 * Release: after the library's own "on" flag, which a thread that reads
 * *done set then sees (pairs with the acquires in ta_lazy_lz4_settled and
 * ta_lazy_unw_settled, which a crash handler reads before unw_on). */
static void open_until_tried(uint32_t *done, int (*open)(void))
{
	if (__atomic_load_n(done, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&open_lock);
	if (!__atomic_load_n(done, __ATOMIC_RELAXED) && open() == 0)
		__atomic_store_n(done, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&open_lock);
}

void ta_lazy_open_lz4(void)
{
	open_until_tried(&lz4_done, open_lz4);
}

/* 0 once tried (opened or not), -EAGAIN when the gate said later. */
static int open_unwind(void)
{
	void *h;
	int bad, later;

	h = ta_lazy_dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL, &later);
	if (later)
		return -EAGAIN;
	bad = !h;
	/* The names the header's macros give (_ULx86_64_step, ...). */
	if (h)
		bad = sym(h, LZ_STR(unw_init_local), &ta_lazy.u_init_local) |
		      sym(h, LZ_STR(unw_init_local2), &ta_lazy.u_init_local2) |
		      sym(h, LZ_STR(unw_get_reg), &ta_lazy.u_get_reg) |
		      sym(h, LZ_STR(unw_set_reg), &ta_lazy.u_set_reg) |
		      sym(h, LZ_STR(unw_step), &ta_lazy.u_step) |
#if TA_ARCH_UNW_GETCONTEXT_CALL
		      sym(h, LZ_STR(unw_tdep_getcontext), &ta_lazy.u_getcontext) |
#endif
		      sym(h, LZ_STR(unw_backtrace), &ta_lazy.u_backtrace);
	if (bad) {
		ta_lazy.u_init_local = NULL;
		ta_lazy.u_init_local2 = NULL;
		ta_lazy.u_get_reg = NULL;
		ta_lazy.u_set_reg = NULL;
		ta_lazy.u_step = NULL;
		ta_lazy.u_backtrace = NULL;
#if TA_ARCH_UNW_GETCONTEXT_CALL
		ta_lazy.u_getcontext = NULL;
#endif
		ta_warn("cannot open libunwind.so.8 (%s): crashes are recorded without their "
			"backtrace, caught exceptions without their frames",
			h ? "a function is missing" : dlerror());
	} else {
		/* libunwind's first use may allocate: done here rather than
		 * in a crash handler. */
		unw_context_t ctx;
		unw_cursor_t cursor;

#if TA_ARCH_UNW_GETCONTEXT_CALL
		ta_lazy.u_getcontext(&ctx);
#else
		unw_getcontext(&ctx); /* inline code, no library call */
#endif
		ta_lazy.u_init_local(&cursor, &ctx);
		/* Release: the pointers above before the flag (pairs with
		 * the acquire in ta_lazy_unw_on). */
		__atomic_store_n(&unw_on, 1, __ATOMIC_RELEASE);
	}
	return 0;
}

int ta_lazy_unw_on(void)
{
	return __atomic_load_n(&unw_on, __ATOMIC_ACQUIRE);
}

int ta_lazy_unw_settled(void)
{
	return __atomic_load_n(&unw_done, __ATOMIC_ACQUIRE);
}

void ta_lazy_unw_request(void)
{
	/* Relaxed: the flusher's futex wake that follows orders nothing it
	 * must see but this flag, which it reads again each pass. */
	__atomic_store_n(&unw_want, 1, __ATOMIC_RELAXED);
}

int ta_lazy_unw_wanted(void)
{
	return __atomic_load_n(&unw_want, __ATOMIC_RELAXED);
}

void ta_lazy_open(void)
{
	open_until_tried(&unw_done, open_unwind);
}
