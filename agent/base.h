/* SPDX-License-Identifier: MIT */
/*
 * base.h - what every file of the agent uses (base.c): the agent's state
 * word, pid and re-entry guard, warnings on stderr, bounded locks, the
 * executable's path; and format's growable arrays and byte buffers
 * (format/grow.h), which the agent's slow paths grow their memory with.
 * The bottom of the agent's layers (docs/ARCHITECTURE.md): base.c calls
 * no other file of the agent.  Nothing here is exported from the library.
 */
#ifndef TA_BASE_H
#define TA_BASE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "grow.h"

enum ta_state {
	TA_S_UNINIT = 0, /* nothing done yet: the first hook starts the agent */
	TA_S_STARTING,	 /* one thread is setting up */
	TA_S_RUNNING,
	TA_S_STOPPED,  /* finished, or could not start: hooks only return */
	TA_S_FORKED,   /* a forked child: the first hook restarts the agent */
	TA_S_DETACHED, /* an attach window ended: hooks only return; the
			  next `traceagent attach` restarts it (ta_agent_reattach) */
};

extern uint32_t ta_state TA_HIDDEN; /* enum ta_state, atomic */

/* The pid the agent records for; 0 before it started. */
extern uint32_t ta_pid TA_HIDDEN;
/* One line on stderr, prefixed "traceagent: ", without stdio buffering
 * that could mix with the program's. */
void ta_warn(const char *fmt, ...) TA_HIDDEN __attribute__((format(printf, 1, 2)));
/* Tries a lock for up to ~200 ms (signal handlers: never wait forever on
 * a lock whose holder may be the interrupted code); 0 if taken. */
int ta_lock_bounded(pthread_mutex_t *m) TA_HIDDEN;
/* The executable's path (/proc/self/exe) in out, NUL-terminated ("" when
 * it cannot be read); its length.  Read once: it changes only with an
 * exec, which starts the agent anew. */
size_t ta_exe_path(char *out, size_t size) TA_HIDDEN;

/* Nonzero while the agent itself runs on this thread (its slow paths, its
 * wrappers' own work, the flusher thread, a thread after its registration
 * ended): the interposers then only call the real function, so nothing the
 * agent does is recorded and nothing recurses.  Initial-exec TLS like
 * ta_cur; counts, so that nested agent code keeps it set. */
extern __thread uint32_t ta_guard __attribute__((tls_model("initial-exec"))) TA_HIDDEN;
#define TA_GUARD_ENTER() (ta_guard++)
#define TA_GUARD_LEAVE() (ta_guard--)

#endif
