/* SPDX-License-Identifier: MIT */
/*
 * got.h - pointing the modules' GOT entries for __cyg_profile_func_enter
 * and _exit at hooks of the agent's choice (got.c): `traceagent attach`
 * puts the agent's hooks in place of glibc's empty ones (attach.c), the
 * filters put their filtering hooks in place of the plain ones (filter.c).
 * Not the hot path; the callers serialise the calls on one struct ta_got.
 */
#ifndef TA_GOT_H
#define TA_GOT_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* A GOT entry pointed at a hook, and what it held. */
struct ta_got_slot {
	uintptr_t *at;
	uintptr_t old;
	int relro;	/* read-only but while we write */
	uintptr_t base; /* its module's load bias, and */
	uint32_t name;	/* a hash of its path: another module mapped there since is not it */
};

struct ta_got {
	uintptr_t enter, exit; /* the hooks the entries are to point at */
	struct ta_got_slot *slots;
	size_t n, cap;
};

/* Points the entries of every module loaded now (the agent's own left
 * alone) at g's hooks; an entry seen before keeps its first old value and
 * is pointed again if the loader wrote over it.  0, or -ENOMEM (the
 * entries done so far stay done and known). */
int ta_got_redirect(struct ta_got *g) TA_HIDDEN;
/* Forgets the entries of modules no longer loaded. */
void ta_got_prune(struct ta_got *g) TA_HIDDEN;
/* Every known entry as it was (the modules gone first forgotten); g then
 * knows none. */
void ta_got_restore(struct ta_got *g) TA_HIDDEN;

/*
 * Binds every module's JUMP_SLOT entries for the two hooks that lazy
 * binding has not bound yet (they still point into their module's PLT) to
 * what the loader would bind them to (the global scope's definitions: the
 * preloaded agent's hooks), so that no instrumented function's first call
 * pays for the binder (0.4 to 7 us, against 10 ns).  Entries bound already,
 * or pointed elsewhere (filter.c), are left as they are.  At the start and
 * after each dlopen (interpose.c).
 */
void ta_got_bind_hooks(void) TA_HIDDEN;

/*
 * Any other imported functions (`traceagent attach`): the manual API's weak
 * references (include/traceagent.h) and the library calls' entries,
 * pointed at the agent's definitions.  An entry is taken only when it
 * holds what the program would call without the agent: `real` (libc's
 * function; 0 for a weak reference the loader left null), or, for a
 * JUMP_SLOT not bound yet (lazy binding: it points into its own module's
 * PLT), when the global scope's definition is `real` (lazy set).  Anything
 * else (a definition of the program's own, another allocator) is left as
 * it is.  An entry already holding `to` is taken as done.
 */
struct ta_got_sym {
	const char *name;
	uintptr_t to;	/* the agent's definition */
	uintptr_t real; /* what a taken entry holds (0: null) */
	int lazy;	/* a JUMP_SLOT not bound yet is taken (see above) */
};

struct ta_gotset {
	const struct ta_got_sym *syms;
	size_t nsyms;
	int skip_system;   /* libc and the dynamic loader left alone */
	struct ta_got got; /* the entries taken (got.enter, exit unused) */
};

/* Points the entries of every module loaded now (the agent's own left
 * alone) at their syms' `to`, as above; a rescan takes only new ones.
 * 0, or -ENOMEM (those done stay done and known). */
int ta_gotset_redirect(struct ta_gotset *s) TA_HIDDEN;
/* Every entry taken, of modules still loaded, as it was; s then knows
 * none. */
void ta_gotset_restore(struct ta_gotset *s) TA_HIDDEN;

#endif
