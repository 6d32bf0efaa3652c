/* SPDX-License-Identifier: MIT */
/*
 * apimem.h - what the views keep of the manual API's memory, lock-name
 * and fiber events (format.h's TA_EXT_POOL_ALLOC ... TA_EXT_FIBER_LEAVE):
 * the pools and their live blocks, the locks' names, and the fiber each
 * thread runs.
 *
 * Fibers: a thread runs a fiber from its FIBER_ENTER to its FIBER_LEAVE
 * (or the next ENTER, or the thread's end).  The agent's shadow stack is
 * the thread's: a call is the fiber's when it began and ended inside one
 * run of the fiber (on one thread, between an ENTER and the LEAVE after
 * it); a call open across a switch (one the fiber was switched out of)
 * stays the thread's, and when the fiber resumes on another thread that
 * call's exit there is an exit never entered.
 */
#ifndef TA_APIMEM_H
#define TA_APIMEM_H

#include <stddef.h>
#include <stdint.h>

#include "apiev.h"
#include "htab.h"
#include "session.h"

/* Names interned per process: pools and fibers. */
struct ta_pname {
	uint32_t pid;
	char *name;
	uint64_t hash;
	/* A pool's live bytes and blocks, and its frees of pointers it did
	 * not hold (the exports'); a fiber's runs. */
	uint64_t live, blocks, unknown, runs;
};

struct ta_pnames {
	struct ta_pname *r;
	size_t n, cap;
	struct ta_htab idx;
};

/* The index of (pid, name), added when new; -1 without memory. */
long ta_pnames_get(struct ta_pnames *t, uint32_t pid, const char *name);
void ta_pnames_free(struct ta_pnames *t);

/* ---- pools: live blocks (the exports' counter tracks) ---- */

struct ta_pblock {
	uint64_t pid_pool; /* pid, pool index + 1 above bit 32; 0: a free row */
	uint64_t ptr, size;
};

struct ta_pools {
	struct ta_pnames names;
	struct ta_pblock *b;
	size_t nb, cap, held, free_row;
	struct ta_htab idx;
	int nomem;
};

/* Applies a POOL_ALLOC or POOL_FREE of process pid: the pool's index
 * (names.r[i] has its live bytes after it), or -1 for another event or
 * without memory (nomem set).  An allocation of a pointer the pool holds
 * replaces the block; a free of one it does not hold is counted. */
long ta_pools_take(struct ta_pools *ps, uint32_t pid, const struct ta_apiev *e);
void ta_pools_free(struct ta_pools *ps);

/* ---- lock names ---- */

struct ta_lockname {
	uint64_t pid, addr;
	char *name;
};

struct ta_locknames {
	struct ta_lockname *r;
	size_t n, cap;
	struct ta_htab idx;
};

/* The name of the lock at addr of process pid from now on (the latest
 * one holds).  0, or -1 without memory. */
int ta_locknames_set(struct ta_locknames *ln, uint64_t pid, uint64_t addr, const char *name);
/* Its name, or NULL. */
const char *ta_locknames_get(const struct ta_locknames *ln, uint64_t pid, uint64_t addr);
/* Its row (r[i]: a lock named once has one row whatever it was renamed),
 * or -1 when it has no name. */
long ta_locknames_index(const struct ta_locknames *ln, uint64_t pid, uint64_t addr);
void ta_locknames_free(struct ta_locknames *ln);
/*
 * Whether a view of the session's calls needs the names before it walks
 * the events: a process that both named locks (a TA_LOCK_NAME site) and
 * recorded the lock calls.
 */
int ta_locknames_wanted(struct ta_session *s);
/*
 * Reads every TA_LOCK_NAME of the dump at path into ln (its EXT events
 * only; quiet: the view's own pass tells what is wrong with the file), so
 * that a view streaming the calls names the waits made before the name
 * was given.  0, or -1 without memory.
 */
int ta_locknames_read(struct ta_locknames *ln, const char *path);

/* ---- fibers ---- */

struct ta_fibers {
	struct ta_pnames names; /* the fibers, by process */
	struct {
		long fiber;	/* index in names, -1: none */
		uint64_t since; /* ticks of its ENTER */
	} * th;			/* by ta_sess_thread.index */
	size_t nth;
	int nomem;
};

/* Takes an API event of thread t: a FIBER_ENTER or FIBER_LEAVE changes
 * what t runs (1), any other event is left (0); -1 without memory. */
int ta_fibers_take(struct ta_fibers *fs, const struct ta_sess_thread *t, const struct ta_apiev *e);
/* The fiber t runs now (its index), or -1. */
long ta_fibers_now(const struct ta_fibers *fs, const struct ta_sess_thread *t);
/* The fiber a call of t entered at ticks enter and not left before now
 * belongs to: the one t runs, if its run began at or before enter; -1. */
long ta_fibers_owner(const struct ta_fibers *fs, const struct ta_sess_thread *t, uint64_t enter);
void ta_fibers_free(struct ta_fibers *fs);

#endif
