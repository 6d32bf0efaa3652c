/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the agent's life (agent.c): its state, start and shutdown,
 * exec, the END chunk, the switch of the library-call recording, and the
 * small services its files share (ta_warn, ta_lock_bounded, ta_grow).
 * Nothing here is exported from the library.
 */
#ifndef TA_AGENT_H
#define TA_AGENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* ---- lifecycle ----------------------------------------------------------------- */

enum ta_state {
	TA_S_UNINIT = 0, /* nothing done yet: the first hook starts the agent */
	TA_S_STARTING,   /* one thread is setting up */
	TA_S_RUNNING,
	TA_S_STOPPED,    /* finished, or could not start: hooks only return */
	TA_S_FORKED,     /* a forked child: the first hook restarts the agent */
	TA_S_DETACHED,   /* an attach window ended: hooks only return; the
			    next `traceagent attach` restarts it (ta_agent_reattach) */
};

extern uint32_t ta_state TA_HIDDEN; /* enum ta_state, atomic */

/* Starts the agent if nobody has; returns 1 when it is running. */
int ta_agent_ensure_started(void) TA_HIDDEN;
/* An attach window ends (attach.c): the dump is finished (END) and closed,
 * the flusher stopped, the rings' memory returned; the state DETACHED.
 * 0, or -1 when the agent was not running. */
int ta_agent_detach(void) TA_HIDDEN;
/* The next window (from DETACHED): settings read again (the attach's),
 * a new dump, clock, module map and flusher.  0 or a negative errno (said
 * on stderr; the agent stays DETACHED). */
int ta_agent_reattach(void) TA_HIDDEN;
/* Final flush: stops the flusher, drains every ring, writes the end of
 * the dump.  Idempotent; safe from exit paths. */
void ta_agent_shutdown(void) TA_HIDDEN;
/* One line on stderr, prefixed "traceagent: ", without stdio buffering
 * that could mix with the program's. */
void ta_warn(const char *fmt, ...) TA_HIDDEN __attribute__((format(printf, 1, 2)));
/* libc's pthread_create, past our interposer. */
int ta_real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			   void *arg) TA_HIDDEN;
/* The pid the agent records for; 0 before it started. */
extern uint32_t ta_pid TA_HIDDEN;

/* Before an exec: writes everything recorded so far, and returns the
 * environment for the new image: envp, or (when it preloads the agent) a
 * malloc'd copy that hands the dump over to the new image's agent. */
char **ta_agent_before_exec(char *const envp[]) TA_HIDDEN;
/* The exec failed: takes the handover back (env is what
 * ta_agent_before_exec returned for envp). */
void ta_agent_exec_failed(char **env, char *const envp[]) TA_HIDDEN;
/* The END chunk with the totals so far. */
void ta_agent_write_end(uint64_t flags) TA_HIDDEN;
/* The signal the process dies of, for the END (TA_END_F_SIGNAL). */
void ta_agent_end_signal(uint32_t sig) TA_HIDDEN;
/* A signal handler's bounded wait for an exit that is writing the END on
 * another thread (async-signal-safe). */
void ta_agent_wait_shutdown(unsigned ms) TA_HIDDEN;
/* Tries a lock for up to ~200 ms (signal handlers: never wait forever on
 * a lock whose holder may be the interrupted code); 0 if taken. */
int ta_lock_bounded(pthread_mutex_t *m) TA_HIDDEN;
/* The agent's growable arrays: when *cap elements of size bytes are all in
 * use, p reallocated to twice as many (first, the first time) and *cap
 * updated; else p as it is.  NULL when out of memory, *cap unchanged (p
 * still valid, to be kept). */
void *ta_grow(void *p, size_t n, size_t *cap, size_t size, size_t first) TA_HIDDEN;
/* The executable's path (/proc/self/exe) in out, NUL-terminated ("" when
 * it cannot be read); its length.  Read once: it changes only with an
 * exec, which starts the agent anew. */
size_t ta_exe_path(char *out, size_t size) TA_HIDDEN;

/* ---- library calls (the interposers: libcalls.c) ------------------------------- */

/* The TA_LC_* classes the interposers record right now: the settings'
 * classes while the agent runs, else 0 (relaxed atomic; the interposers
 * read it once a call). */
extern uint32_t ta_lc_on TA_HIDDEN;
/* The classes TRACEAGENT_LIBCALLS names explicitly (libcalls.c sets it
 * in its constructor): before the agent runs, ta_lc_on holds them, so
 * that the first such call starts the agent as a hook would. */
extern uint32_t ta_lc_asked TA_HIDDEN;
/* Turns recording on for the settings' classes (the agent is running)
 * or off. */
void ta_libcalls_enable(int on) TA_HIDDEN;

#endif
