/* SPDX-License-Identifier: MIT */
/*
 * nextsym.h - the definition dlsym(RTLD_NEXT, name) would give the agent,
 * found without dlsym: by the interposers, for the real functions they
 * call.
 *
 * dlsym costs about 1,000 instructions a name, takes the loader's lock and
 * may allocate: resolving the ~75 interposed functions with it in a
 * constructor was most of what the agent cost a process that never
 * records (a shell, a compiler a traced build spawns), and resolving at
 * the first call instead is not safe from a signal handler.  Here one
 * pass over the loaded objects (dl_iterate_phdr, once) keeps, for each
 * object after the agent in the search order, its dynamic symbol table;
 * a lookup is then a GNU-hash probe per object, with no lock, no
 * allocation and no libc call: safe in a signal handler, cheap enough to
 * do at each interposer's first call.
 */
#ifndef TA_NEXTSYM_H
#define TA_NEXTSYM_H

#include <pthread.h>

#include "compiler.h"

/* The address of name's default-version definition in the first object
 * after the agent that defines it, as dlsym(RTLD_NEXT) gives it; NULL
 * when the objects kept here cannot say (not defined in them, an IFUNC,
 * the agent not loaded at start-up...): then ask dlsym (ta_next_fn).
 * Async-signal-safe once ta_next_ready(); the first call builds the list
 * of objects (not async-signal-safe: a constructor makes it first). */
void *ta_next_sym(const char *name) TA_HIDDEN;

/* ta_next_sym, else dlsym(RTLD_NEXT, name) (not async-signal-safe). */
void *ta_next_fn(const char *name) TA_HIDDEN;

/* Builds the list when not yet built; whether ta_next_sym can answer
 * (1), or every lookup goes to dlsym (0: the agent was not found before
 * the dynamic loader in the list of objects, as when `traceagent attach`
 * loads it with dlopen). */
int ta_next_ready(void) TA_HIDDEN;

/* libc's pthread_create, past our interposer. */
int ta_real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			   void *arg) TA_HIDDEN;

#endif
