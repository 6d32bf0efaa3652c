/* SPDX-License-Identifier: MIT */
/*
 * lazylib.h - the libraries the agent needs only once it records (LZ4 for
 * the chunks, libunwind for crashes and caught exceptions), opened with
 * dlopen rather than linked: a process that never records (the shell, the
 * build tool and the compilers a traced build spawns, which inherit
 * LD_PRELOAD) loads neither, nor liblzma under libunwind.  One that does
 * opens them on the flusher thread, not the program's: libunwind (with
 * liblzma, ~150k instructions) some time after the start, so that a short
 * run (a traced `fib 1`) neither loads it nor waits at its exit for the
 * flusher to finish loading it; a crash before that asks the flusher for
 * it and waits a bounded time (crash.c), a caught exception opens it at
 * once (ctlflow.c).
 */
#ifndef TA_LAZYLIB_H
#define TA_LAZYLIB_H

#ifndef UNW_LOCAL_ONLY
#define UNW_LOCAL_ONLY /* the _UL names: this process's own stack */
#endif
#include <libunwind.h>

#include "arch.h"
#include "compiler.h"

struct ta_lazy {
	/* Valid once ta_lazy_lz4_on(); before or without liblz4 the chunks
	 * are stored raw. */
	int (*lz4_bound)(int size);
	int (*lz4_compress)(const char *src, char *dst, int len, int cap);
	/* NULL when libunwind could not be opened: no backtraces. */
	int (*u_init_local)(unw_cursor_t *, unw_context_t *);
	int (*u_init_local2)(unw_cursor_t *, unw_context_t *, int);
	int (*u_get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*u_set_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t);
	int (*u_step)(unw_cursor_t *);
	int (*u_backtrace)(void **, int);
#if TA_ARCH_UNW_GETCONTEXT_CALL
	int (*u_getcontext)(unw_context_t *);
#endif
};

/* The LZ4 pointers are written once by ta_lazy_open_lz4 and the libunwind
 * ones by ta_lazy_open, each published by its flag (ta_lazy_lz4_on,
 * ta_lazy_unw_on): read them only after the flag says so. */
extern struct ta_lazy ta_lazy TA_HIDDEN;

/* Opens libunwind (once; later calls return at once; a try the gate
 * put off leaves it to the next call), saying in one line
 * if it could not and what is lost with it.  Never from a signal handler;
 * once the agent runs, through ta_flusher_open_unwind, which keeps a fork
 * from copying a load half done (an attach's start calls it directly). */
void ta_lazy_open(void) TA_HIDDEN;

/* 1 once ta_lazy's libunwind functions may be called (acquire). */
int ta_lazy_unw_on(void) TA_HIDDEN;

/* 1 once ta_lazy_open has finished, whether or not it could open it
 * (acquire). */
int ta_lazy_unw_settled(void) TA_HIDDEN;

/* Asks the flusher to open libunwind at its next pass rather than later
 * (a crash handler, which kicks it after); async-signal-safe. */
void ta_lazy_unw_request(void) TA_HIDDEN;
int ta_lazy_unw_wanted(void) TA_HIDDEN;

/* dlopen for the agent's own libraries, never while a program thread is
 * inside dl_iterate_phdr (lazylib.c says why).  It waits up to 100 ms for
 * the walks under way to end; then, with later, it returns NULL and sets
 * *later (the caller tries again at another time); without (NULL: a
 * program thread's load, capstone's), it loads anyway. */
void *ta_lazy_dlopen(const char *name, int mode, int *later) TA_HIDDEN;

/* Around a program's dl_iterate_phdr (interpose.c): counts the walk,
 * after any of the agent's dlopens under way.  Nested walks count once. */
void ta_lazy_walk_enter(void) TA_HIDDEN;
void ta_lazy_walk_leave(void) TA_HIDDEN;

/* In a forked child: the gate's counts and the open lock as this thread
 * alone left them. */
void ta_lazy_fork_child(void) TA_HIDDEN;

/* Around the agent's own walks of the loaded objects (in its guard) and
 * its loads: a fork waits for them (ta_lazy_fork_prepare, at most 1 s)
 * and none begins during one (lazylib.c says why). */
void ta_lazy_own_enter(void) TA_HIDDEN;
void ta_lazy_own_leave(void) TA_HIDDEN;
void ta_lazy_fork_prepare(void) TA_HIDDEN;
void ta_lazy_fork_parent(void) TA_HIDDEN;

/* Opens liblz4 (once), the same way.  Only the flusher thread calls it,
 * at its first chunk of events big enough to be worth compressing
 * (flusher_drain.c): a short run writes its few small chunks uncompressed
 * without loading it, and no signal handler ever runs dlopen. */
void ta_lazy_open_lz4(void) TA_HIDDEN;

/* 1 once ta_lazy's LZ4 functions may be called (acquire), 0 before or
 * when it could not be opened: the chunks are stored raw. */
int ta_lazy_lz4_on(void) TA_HIDDEN;
/* 1 once the flusher tried to open liblz4, whether it could or not. */
int ta_lazy_lz4_settled(void) TA_HIDDEN;

#endif
