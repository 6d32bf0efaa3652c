/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the agent's life (agent.c): its state, start and shutdown,
 * exec, the END chunk.  It is the agent's conductor, the top of its
 * layers (docs/ARCHITECTURE.md); the services every file shares are in base.h.
 * Nothing here is exported from the library.
 */
#ifndef TA_AGENT_H
#define TA_AGENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "compiler.h"

/* ---- lifecycle ----------------------------------------------------------------- */

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

#endif
