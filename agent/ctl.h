/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the control socket's agent side (control.c): the thread that
 * answers `traceagent ctl PID COMMAND` (format/ctlsock.h: where, and the
 * protocol).
 */
#ifndef TA_CTL_H
#define TA_CTL_H

#include "compiler.h"

/* After the flusher started (a new process, a forked child, an exec'ed
 * image): listens on the control socket unless TRACEAGENT_CONTROL=off;
 * one line on stderr when it cannot, and tracing goes on.  The socket is
 * there when this returns (a client may connect at once); the thread that
 * answers starts now if thread_now, else when the flusher calls
 * ta_control_start_thread (20 ms into the run: a short process never pays
 * for it, and a client waits for its answer until then). */
void ta_control_start(int thread_now) TA_HIDDEN;
/* From the flusher: starts the control thread for the socket, if there is
 * one and it has none.  0 when done (or nothing to do), -1 to be asked
 * again later (the exit or a fork holds the lock). */
int ta_control_start_thread(void) TA_HIDDEN;
/* At shutdown, before the last chunks: no more commands; the socket is
 * closed and unlinked, the thread (if started) joined. */
void ta_control_stop(void) TA_HIDDEN;
/* After the last chunk: a stream's reader gets what is queued (bounded
 * wait), then everything is closed. */
void ta_control_finish(void) TA_HIDDEN;
/* In a forked child (one thread, no control thread): the parent's socket
 * and reader are the parent's. */
void ta_control_fork_child(void) TA_HIDDEN;
/* The attach window ended for this process (a child forked in it):
 * the control thread detaches it as a `detach` command would, soon (the
 * flusher, which asks, cannot: the detach stops it). */
void ta_control_detach_soon(void) TA_HIDDEN;

#endif
