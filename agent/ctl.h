/* SPDX-License-Identifier: MIT */
/*
 * ctl.h - the control socket's agent side (control.c): the thread that
 * answers `traceagent ctl PID COMMAND` (format/control.h: where, and the
 * protocol).
 */
#ifndef TA_CTL_H
#define TA_CTL_H

#include "compiler.h"

/* After the flusher started (a new process, a forked child, an exec'ed
 * image): listens on the control socket unless TRACEAGENT_CONTROL=off;
 * one line on stderr when it cannot, and tracing goes on. */
void ta_control_start(void) TA_HIDDEN;
/* At shutdown, before the last chunks: no more commands; the socket is
 * closed and unlinked, the thread joined. */
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
